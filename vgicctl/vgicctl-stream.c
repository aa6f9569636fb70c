/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicctl-stream.c - the arm_gicv3 section of a QEMU migration stream (see
 * vgicctl-stream.h).
 *
 * Theory of operation: a stream is QEMU's savevm format (magic "QEVM",
 * version 3): a configuration section naming the machine type, then the
 * iterable sections (guest RAM, gigabytes of it) and the devices' sections,
 * each "full" section a header (type 0x04, section id, its name, instance
 * and version), the device's fields, its subsections (0x05, name, version,
 * fields) and, on every machine type since QEMU 2.x, a footer (0x7e and
 * the section id again).  The RAM sections cannot be skipped without
 * decoding them, which depends on the migration's capabilities; a device
 * section cannot be skipped without its layout.  So the GIC's section is
 * found by its header's bytes instead, and accepted only when its fields,
 * parsed with QEMU 10.0's layout of arm_gicv3 (vgic-qemu-fields.h), end
 * exactly at a footer with its own section id.  Guest memory that held
 * those bytes by chance would have to hold a whole well-formed section;
 * the last section that parses is taken, since QEMU writes the devices'
 * sections after the RAM (its last pages included).
 *
 * Trying a candidate header reads up to MAX_CPUS vCPUs' worth of the bytes
 * after it (up to a megabyte) before it fails, and the guest chooses its
 * memory's bytes: one that filled its RAM with headers, one every 64
 * bytes, made trying them all take 17 s for 6.4 MB of it, most of an hour
 * for a gigabyte.  So the candidates are tried from the last back, the
 * first that parses being the last: only the last CANDIDATES_MAX are kept
 * while the stream is scanned (what comes after the GIC's section is a few
 * devices' state), which bounds the work at about that many megabytes
 * whatever the stream holds.
 *
 * The number of vCPUs is not in the section (QEMU takes it from the
 * destination's configuration): the per-vCPU structs are read one by one
 * until what follows is the section's tail (its subsections and footer).
 * A libvirt save image is libvirt's header and the domain's XML followed
 * by the stream; a compressed one (save_image_format) is refused.
 */
#define _GNU_SOURCE	/* memmem(3) */
#include "vgicctl-stream.h"

#include <string.h>

#include "vgic-error.h"

#define QEVM_MAGIC "QEVM\0\0\0\3"	/* QEMU_VM_FILE_MAGIC, QEMU_VM_FILE_VERSION */
#define QEMU_VM_SECTION_FULL 0x04
#define QEMU_VM_SUBSECTION 0x05
#define QEMU_VM_CONFIGURATION 0x07
#define QEMU_VM_SECTION_FOOTER 0x7e
#define GIC_NAME "arm_gicv3"
/* A CPU struct's fields, and the most vCPUs a stream is read for (KVM's
 * limit on arm64 is 512; a larger count means the parse went astray). */
#define CPU_FIELDS_SIZE 272
#define MAX_CPUS 4096
/* The candidate headers tried, the last ones of the stream. */
#define CANDIDATES_MAX 64
/* libvirt's save image header (virQEMUSaveHeader): its magics, and the
 * "compressed" word after version, data_len and was_running. */
#define LIBVIRT_MAGIC "LibvirtQemudSave"
#define LIBVIRT_MAGIC_PARTIAL "LibvirtQemudPart"

typedef struct {
  const guint8 *p, *end;
} Cursor;

static gboolean
take (Cursor *c, gsize n, const guint8 **out)
{
  if ((gsize) (c->end - c->p) < n)
    return FALSE;
  if (out)
    *out = c->p;
  c->p += n;
  return TRUE;
}

static gboolean
be32 (Cursor *c, guint32 *v)
{
  const guint8 *b;

  if (!take (c, 4, &b))
    return FALSE;
  *v = (guint32) b[0] << 24 | (guint32) b[1] << 16 | (guint32) b[2] << 8 | b[3];
  return TRUE;
}

static gboolean
be64 (Cursor *c, guint64 *v)
{
  guint32 hi, lo;

  if (!be32 (c, &hi) || !be32 (c, &lo))
    return FALSE;
  *v = (guint64) hi << 32 | lo;
  return TRUE;
}

static gboolean
u32s (Cursor *c, guint32 *v, guint n)
{
  for (guint i = 0; i < n; i++)
    if (!be32 (c, &v[i]))
      return FALSE;
  return TRUE;
}

static gboolean
u64s (Cursor *c, guint64 *v, guint n)
{
  for (guint i = 0; i < n; i++)
    if (!be64 (c, &v[i]))
      return FALSE;
  return TRUE;
}

static gboolean
bytes (Cursor *c, guint8 *v, gsize n)
{
  const guint8 *b;

  if (!take (c, n, &b))
    return FALSE;
  memcpy (v, b, n);
  return TRUE;
}

/* A subsection header whose name starts with @prefix: its name (not
 * NUL-terminated, @name_len long); the cursor moves past its version only
 * when it is one. */
static gboolean
subsection (Cursor *c, const char *prefix, const char **name, guint *name_len,
            guint32 *version)
{
  Cursor t = *c;
  const guint8 *type, *len, *n;

  if (!take (&t, 1, &type) || *type != QEMU_VM_SUBSECTION || !take (&t, 1, &len) ||
      !take (&t, *len, &n) || *len < strlen (prefix) ||
      memcmp (n, prefix, strlen (prefix)) != 0 || !be32 (&t, version))
    return FALSE;
  *name = (const char *) n;
  *name_len = *len;
  *c = t;
  return TRUE;
}

static gboolean
named (const char *name, guint len, const char *want)
{
  return len == strlen (want) && memcmp (name, want, len) == 0;
}

/* One vCPU's struct and its subsections (QEMU 10.0's vmstate_gicv3_cpu). */
static gboolean
read_cpu (Cursor *c, VgicQemuCpu *cpu, GError **error)
{
  const char *name;
  guint len;
  guint32 version;
  guint64 skip[30];

  if (!be32 (c, &cpu->level) || !be32 (c, &cpu->gicr_ctlr) || !u32s (c, cpu->gicr_statusr, 2) ||
      !be32 (c, &cpu->gicr_waker) || !be64 (c, &cpu->gicr_propbaser) ||
      !be64 (c, &cpu->gicr_pendbaser) || !be32 (c, &cpu->gicr_igroupr0) ||
      !be32 (c, &cpu->gicr_ienabler0) || !be32 (c, &cpu->gicr_ipendr0) ||
      !be32 (c, &cpu->gicr_iactiver0) || !be32 (c, &cpu->edge_trigger) ||
      !be32 (c, &cpu->gicr_igrpmodr0) || !be32 (c, &cpu->gicr_nsacr) ||
      !bytes (c, cpu->gicr_ipriorityr, 32) || !u64s (c, cpu->icc_ctlr_el1, 2) ||
      !be64 (c, &cpu->icc_pmr_el1) || !u64s (c, cpu->icc_bpr, 3) ||
      !u64s (c, &cpu->icc_apr[0][0], 12) || !u64s (c, cpu->icc_igrpen, 3) ||
      !be64 (c, &cpu->icc_ctlr_el3))
    return FALSE;
  /* QEMU sends ICC_SRE_EL1 only when it is not its reset value. */
  cpu->icc_sre_el1 = 0x7;
  while (subsection (c, GIC_NAME "_cpu/", &name, &len, &version))
    {
      gboolean ok;

      if (version != 1)
        {
          g_set_error (error, VGICD_ERROR, VGICD_ERROR_UNSUPPORTED,
                       "subsection %.*s is version %u; this vgicctl reads version 1",
                       (int) len, name, version);
          return FALSE;
        }
      if (named (name, len, GIC_NAME "_cpu/sre_el1"))
        ok = be64 (c, &cpu->icc_sre_el1);
      else if (named (name, len, GIC_NAME "_cpu/virt"))	/* ICH_*: EL2 state */
        ok = u64s (c, skip, 30);	/* ich_apr[3][4], ich_hcr_el2, ich_lr_el2[16], ich_vmcr_el2 */
      else if (named (name, len, GIC_NAME "_cpu/gicv4"))
        ok = u64s (c, skip, 2);
      else if (named (name, len, GIC_NAME "_cpu/nmi"))
        ok = take (c, 4, NULL);
      else
        {
          g_set_error (error, VGICD_ERROR, VGICD_ERROR_UNSUPPORTED,
                       "unknown subsection %.*s (from a QEMU newer than this vgicctl)",
                       (int) len, name);
          return FALSE;
        }
      if (!ok)
        return FALSE;
    }
  return TRUE;
}

/* The section's tail: its subsections, then the footer.  FALSE (no error)
 * when @c is not at one. */
static gboolean
read_tail (Cursor *c, guint32 section_id, VgicctlStream *out, GError **error)
{
  Cursor t = *c;
  const char *name;
  guint len;
  guint32 version, footer_id, record_len;
  const guint8 *b;

  out->record = NULL;
  out->record_len = 0;
  while (subsection (&t, GIC_NAME "/", &name, &len, &version))
    {
      if (named (name, len, GIC_NAME "/gicd_no_migration_shift_bug"))
        {
          if (!take (&t, 1, NULL))
            return FALSE;
        }
      else if (named (name, len, GIC_NAME "/gicd_nmi"))
        {
          if (!take (&t, 4 * VGIC_QEMU_BMP_WORDS, NULL))
            return FALSE;
        }
      else if (named (name, len, GIC_NAME "/vgicd"))
        {
          /* The patched QEMU's subsection: vgicd's state record. */
          if (!be32 (&t, &record_len) || !take (&t, record_len, &b))
            return FALSE;
          out->record = b;
          out->record_len = record_len;
        }
      else
        {
          g_set_error (error, VGICD_ERROR, VGICD_ERROR_UNSUPPORTED,
                       "unknown subsection %.*s (from a QEMU newer than this vgicctl)",
                       (int) len, name);
          return FALSE;
        }
    }
  if (!take (&t, 1, &b) || *b != QEMU_VM_SECTION_FOOTER || !be32 (&t, &footer_id) ||
      footer_id != section_id)
    return FALSE;
  *c = t;
  return TRUE;
}

/* The section whose header's name (its length byte) is at @at: TRUE when it parses to its
 * footer, with @out filled. */
static gboolean
read_section (const guint8 *data, const guint8 *end, const guint8 *at, VgicctlStream *out,
              GError **error)
{
  g_autoptr (VgicQemuGic) gic = g_new0 (VgicQemuGic, 1);
  g_autoptr (GArray) cpus = g_array_new (FALSE, TRUE, sizeof (VgicQemuCpu));
  Cursor h = { at - 5, end }, c;
  const guint8 *type;
  guint32 section_id, instance, version;

  if (at - data < 5 || !take (&h, 1, &type) || *type != QEMU_VM_SECTION_FULL ||
      !be32 (&h, &section_id) || !take (&h, 1 + strlen (GIC_NAME), NULL) ||
      !be32 (&h, &instance) || !be32 (&h, &version))
    return FALSE;
  if (version != 1)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_UNSUPPORTED,
                   "the arm_gicv3 section is version %u; this vgicctl reads version 1 "
                   "(QEMU 10.0)", version);
      return FALSE;
    }
  c = h;
  if (!be32 (&c, &gic->gicd_ctlr) || !u32s (&c, gic->gicd_statusr, 2) ||
      !u32s (&c, gic->group, VGIC_QEMU_BMP_WORDS) || !u32s (&c, gic->grpmod, VGIC_QEMU_BMP_WORDS) ||
      !u32s (&c, gic->enabled, VGIC_QEMU_BMP_WORDS) ||
      !u32s (&c, gic->pending, VGIC_QEMU_BMP_WORDS) ||
      !u32s (&c, gic->active, VGIC_QEMU_BMP_WORDS) || !u32s (&c, gic->level, VGIC_QEMU_BMP_WORDS) ||
      !u32s (&c, gic->edge_trigger, VGIC_QEMU_BMP_WORDS) ||
      !bytes (&c, gic->gicd_ipriority, VGIC_QEMU_MAXIRQ) ||
      !u64s (&c, gic->gicd_irouter, VGIC_QEMU_MAXIRQ) ||
      !u32s (&c, gic->gicd_nsacr, VGIC_QEMU_NSACR_WORDS))
    return FALSE;
  /* At least one vCPU; then, after each, the tail or another vCPU. */
  for (guint n = 1; n <= MAX_CPUS && (gsize) (c.end - c.p) >= CPU_FIELDS_SIZE; n++)
    {
      VgicQemuCpu cpu = { 0 };

      if (!read_cpu (&c, &cpu, error))
        return FALSE;
      g_array_append_val (cpus, cpu);
      if (read_tail (&c, section_id, out, error))
        {
          gic->nr_cpus = cpus->len;
          gic->cpus = (VgicQemuCpu *) g_array_free (g_steal_pointer (&cpus), FALSE);
          out->gic = g_steal_pointer (&gic);
          out->section_id = section_id;
          out->offset = (gsize) (at - 5 - data);
          return TRUE;
        }
      if (error && *error)
        return FALSE;
    }
  return FALSE;
}

gboolean
vgicctl_stream_detect (const guint8 *data, gsize len)
{
  return (len >= 8 && memcmp (data, QEVM_MAGIC, 8) == 0) ||
         (len >= 16 && (memcmp (data, LIBVIRT_MAGIC, 16) == 0 ||
                        memcmp (data, LIBVIRT_MAGIC_PARTIAL, 16) == 0));
}

/* libvirt's header: where QEMU's stream starts in @data, or NULL. */
static const guint8 *
libvirt_stream (const guint8 *data, gsize len, GError **error)
{
  guint32 version, compressed;
  const guint8 *qevm;

  if (len < 16 + 16)
    {
      g_set_error_literal (error, VGICD_ERROR, VGICD_ERROR_BAD_RECORD,
                           "a libvirt save image cut short in its header");
      return NULL;
    }
  /* Written in the saving host's byte order; the version tells which. */
  memcpy (&version, data + 16, 4);
  memcpy (&compressed, data + 28, 4);
  if (version > 0xffff)
    compressed = GUINT32_SWAP_LE_BE (compressed);
  if (compressed != 0)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_UNSUPPORTED,
                   "a compressed libvirt save image (format %u, libvirt's "
                   "save_image_format): save it uncompressed, or decompress its stream",
                   compressed);
      return NULL;
    }
  /* The domain's XML (no NUL in it) comes before the stream. */
  qevm = memmem (data + 16, MIN (len - 16, (gsize) 64 << 20), QEVM_MAGIC, 8);
  if (!qevm)
    g_set_error_literal (error, VGICD_ERROR, VGICD_ERROR_BAD_RECORD,
                         "a libvirt save image without QEMU's stream after its header");
  return qevm;
}

gboolean
vgicctl_stream_read (const guint8 *data, gsize len, VgicctlStream *out, GError **error)
{
  g_autoptr (GError) why = NULL;
  const guint8 *end = data + len, *start, *at;
  const guint8 *last[CANDIDATES_MAX];
  guint64 seen = 0;
  Cursor c;
  const guint8 *b, *name;
  guint32 name_len;

  memset (out, 0, sizeof *out);
  if (len >= 16 && memcmp (data, "LibvirtQemud", 12) == 0)
    {
      out->container = "libvirt save image";
      if (!(start = libvirt_stream (data, len, error)))
        return FALSE;
    }
  else if (len >= 8 && memcmp (data, QEVM_MAGIC, 8) == 0)
    {
      out->container = "QEMU migration stream";
      start = data;
    }
  else
    {
      g_set_error_literal (error, VGICD_ERROR, VGICD_ERROR_BAD_RECORD,
                           "not a QEMU migration stream (no QEVM magic, version 3) "
                           "nor a libvirt save image");
      return FALSE;
    }

  c = (Cursor) { start + 8, end };
  if (take (&c, 1, &b) && *b == QEMU_VM_CONFIGURATION && be32 (&c, &name_len) &&
      name_len < 256 && take (&c, name_len, &name))
    out->machine = g_strndup ((const char *) name, name_len);

  /* The last CANDIDATES_MAX candidate headers, in a ring; then from the
   * last back, the first that parses (see the top). */
  for (at = start; (at = memmem (at, end - at, "\x09" GIC_NAME, 1 + strlen (GIC_NAME)));
       at++)
    last[seen++ % CANDIDATES_MAX] = at;
  for (guint i = 0; i < MIN (seen, CANDIDATES_MAX) && !out->gic; i++)
    {
      VgicctlStream found = { 0 };
      g_autoptr (GError) e = NULL;

      if (read_section (data, end, last[(seen - 1 - i) % CANDIDATES_MAX], &found, &e))
        {
          out->gic = found.gic;
          out->section_id = found.section_id;
          out->offset = found.offset;
          out->record = found.record;
          out->record_len = found.record_len;
        }
      else if (e && !why)
        why = g_steal_pointer (&e);
    }
  if (out->gic)
    return TRUE;
  if (seen > CANDIDATES_MAX && !why)
    g_set_error (error, VGICD_ERROR, VGICD_ERROR_BAD_RECORD,
                 "no arm_gicv3 section that ends where it should among the last %u of "
                 "the %" G_GUINT64_FORMAT " places that begin like one (guest memory "
                 "can hold such bytes; the GIC's own section comes after it)",
                 CANDIDATES_MAX, seen);
  else if (why)
    g_propagate_prefixed_error (error, g_steal_pointer (&why), "its arm_gicv3 section: ");
  else
    g_set_error_literal (error, VGICD_ERROR, VGICD_ERROR_BAD_RECORD,
                         "no arm_gicv3 section that ends where it should: not a VM with "
                         "a GICv3, a stream cut short, or one from a QEMU whose GIC "
                         "layout this vgicctl does not know");
  return FALSE;
}

void
vgicctl_stream_clear (VgicctlStream *s)
{
  g_clear_pointer (&s->machine, g_free);
  g_clear_pointer (&s->gic, vgic_qemu_gic_free);
}
