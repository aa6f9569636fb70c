/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-record.c - encode and decode the vGIC state record.
 *
 * The record is what QEMU carries in the GIC's migration subsection; the
 * destination's vgicd decodes it and plans the restore from it.  It crosses
 * hosts (and vgicd versions), so it is specified byte for byte in
 * docs/state-record.md and this file follows that document:
 *
 *   header (32 bytes) | MPIDR[nr_vcpus] (u32) | entry[nr_entries] (20 bytes)
 *   | CRC-32C (u32) of everything before it
 *
 * in both versions: version 2 differs from 1 only in its register set (the
 * routes QEMU's IROUTER addressing misses are in it), so the bytes are
 * read the same way, and the version says which set to expect.
 *
 * all little-endian, written and read one byte at a time so the code never
 * depends on host byte order, alignment or struct padding.
 *
 * Decoding is the security boundary: the bytes come from another host via
 * QEMU, and vgicd turns them into kernel writes.  So the parser checks in an
 * order where every step can trust the ones before it:
 *
 *   1. magic, version, header length, flags, reserved  (fixed-size reads)
 *   2. the counts against hard limits, then the exact length they imply
 *      (no allocation has happened yet, none proportional to a count can)
 *   3. the checksum (from here on the bytes are what the source wrote)
 *
 * and then hands what the record says to vgic_validate_record(): the shape,
 * against the VM for a load, every entry's group, and the register set
 * against a save plan.
 * Every rejection names what is wrong, because the operator reading a failed
 * migration's log has nothing else to go on.
 */
#include "vgic-record.h"

#include <string.h>

#include "crc32c.h"
#include "vgic-error.h"
#include "vgic-plan.h"
#include "vgic-regs.h"
#include "vgic-validate.h"
#include "vgicd/vgic-entry.h"

/* "VGICDREC": says "this is a vgicd state record" to a human with hexdump,
 * and is unlikely to be the start of anything else QEMU could carry. */
static const guint8 record_magic[8] = { 'V', 'G', 'I', 'C', 'D', 'R', 'E', 'C' };

/* Offsets of the v1 header fields (docs/state-record.md, "Header"). */
enum {
  OFF_MAGIC = 0,
  OFF_VERSION = 8,
  OFF_HEADER_LEN = 10,
  OFF_FLAGS = 12,
  OFF_NR_IRQS = 16,
  OFF_NR_VCPUS = 20,
  OFF_NR_ENTRIES = 24,
  OFF_RESERVED = 28,
  HEADER_LEN_V1 = 32,
  /* magic + version + header_len: what must be read before anything else in
   * the header can be interpreted. */
  PREFIX_LEN = 12,
  MPIDR_LEN = 4,
  ENTRY_LEN = 20,	/* group u32, attr u64, value u64 */
  CRC_LEN = 4,
};

/* Flags a v1 record may carry: none defined yet. */
#define KNOWN_FLAGS 0u

/* ------------------------------------------------------------------ */
/* Little-endian byte-wise access                                     */
/* ------------------------------------------------------------------ */

static inline void
put_le16 (guint8 *p, guint16 v)
{
  v = GUINT16_TO_LE (v);
  memcpy (p, &v, sizeof v);
}

static inline void
put_le32 (guint8 *p, guint32 v)
{
  v = GUINT32_TO_LE (v);
  memcpy (p, &v, sizeof v);
}

static inline void
put_le64 (guint8 *p, guint64 v)
{
  v = GUINT64_TO_LE (v);
  memcpy (p, &v, sizeof v);
}

static inline guint16
get_le16 (const guint8 *p)
{
  guint16 v;

  memcpy (&v, p, sizeof v);
  return GUINT16_FROM_LE (v);
}

static inline guint32
get_le32 (const guint8 *p)
{
  guint32 v;

  memcpy (&v, p, sizeof v);
  return GUINT32_FROM_LE (v);
}

static inline guint64
get_le64 (const guint8 *p)
{
  guint64 v;

  memcpy (&v, p, sizeof v);
  return GUINT64_FROM_LE (v);
}

/* ------------------------------------------------------------------ */
/* Sizes and limits                                                   */
/* ------------------------------------------------------------------ */

/* In 64 bits so that no declared count can wrap the sum. */
static guint64
record_size (guint32 nr_vcpus, guint64 nr_entries)
{
  return (guint64) HEADER_LEN_V1 + (guint64) MPIDR_LEN * nr_vcpus +
         (guint64) ENTRY_LEN * nr_entries + CRC_LEN;
}

gsize
vgic_record_encoded_size (const VgicShape *shape, gsize n)
{
  return (gsize) record_size (shape->nr_vcpus, n);
}

/* The most entries a save of this many IRQs and vCPUs can read: with LPIs and
 * four APRs per group, and the routes in a version that carries them.  Only
 * the counts are used, not the MPIDRs, so this is safe to call on a header
 * that has not been checked further. */
static guint
max_entries (guint32 nr_irqs, guint32 nr_vcpus, guint16 version)
{
  VgicShape counts = { .nr_irqs = nr_irqs, .nr_vcpus = nr_vcpus, .mpidrs = NULL };

  return vgic_plan_save_count (&counts, TRUE, 4) +
         (version >= VGIC_RECORD_VERSION_ROUTES ? vgic_plan_route_count (&counts) : 0);
}

/* ------------------------------------------------------------------ */
/* Encode                                                             */
/* ------------------------------------------------------------------ */

/* Fill @keys' values from @values.  FALSE if one is missing. */
static gboolean
fill_from (VgicList *keys, const VgicValues *values)
{
  for (guint i = 0; i < keys->len; i++)
    {
      uint64_t value;

      if (!vgic_values_lookup (values, keys->entries[i].group, keys->entries[i].attr, &value))
        return FALSE;
      keys->entries[i].value = value;
    }
  return TRUE;
}

/* @entries less the repeated reads (vgic_plan_read_may_repeat()), or NULL
 * when a repeat disagrees with the first read or a 32-bit register has
 * high bits.  @plan, when given, must match @entries' groups and attrs at
 * every index (else NULL too). */
static VgicList *
dedup_reads (const VgicEntry *entries, gsize n, const VgicList *plan, GError **error)
{
  g_autofree guint32 *first_at = g_new0 (guint32, 0x10000 / 4);
  g_autoptr (VgicList) out = vgic_list_new ((guint) n);
  VgicEntry *o = out->entries;
  guint len = 0;

  for (gsize i = 0; i < n; i++)
    {
      const VgicEntry *e = &entries[i];

      if (plan && (plan->entries[i].group != e->group || plan->entries[i].attr != e->attr))
        return NULL;
      if (!vgic_reg_check_width (e, error))
        return NULL;
      if (vgic_plan_read_may_repeat (e))
        {
          guint32 *slot = &first_at[e->attr / 4];

          if (*slot)
            {
              if (o[*slot - 1].value != e->value)
                {
                  g_autofree char *what = vgic_reg_describe (e->group, e->attr);
                  g_set_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET,
                               "%s read twice with different values (0x%" G_GINT64_MODIFIER
                               "x, 0x%" G_GINT64_MODIFIER "x): was the VM running?", what,
                               (guint64) o[*slot - 1].value, (guint64) e->value);
                  return NULL;
                }
              continue;
            }
          *slot = len + 1;
        }
      o[len++] = *e;
    }
  out->len = len;
  return g_steal_pointer (&out);
}

/* The fast path of vgic_record_encode(): @entries are exactly a save as
 * vgicd runs it (round 1, then round 2, in plan order).  Then the record is
 * those entries less the repeated reads, and no index of all the values is
 * needed.  NULL (no error) when @entries are anything else, or when a
 * repeated read disagrees: the general path then decides and explains. */
static VgicList *
ordered_as_run (const VgicShape *shape, const VgicEntry *entries, gsize n)
{
  g_autoptr (VgicValues) inputs = vgic_plan_save_inputs (shape, entries, n, NULL);
  g_autoptr (VgicList) plan = NULL;
  g_autoptr (VgicList) second = NULL;
  g_autoptr (VgicList) routes = NULL;

  if (!inputs)
    return NULL;
  plan = vgic_plan_save_first (shape);
  second = vgic_plan_save_second (shape, inputs, NULL);
  if (!second)
    return NULL;
  /* With the routes QEMU misses (a save for a record), or without. */
  if (plan->len + vgic_plan_route_count (shape) + second->len == n)
    {
      routes = vgic_plan_save_routes (shape);
      vgic_list_append (plan, routes->entries, routes->len);
    }
  if (plan->len + second->len != n)
    return NULL;
  vgic_list_append (plan, second->entries, second->len);
  return dedup_reads (entries, n, plan, NULL);
}

static GBytes *serialise (const VgicShape *shape, VgicList *ordered);

GBytes *
vgic_record_encode_run (const VgicShape *shape, const VgicEntry *entries, gsize n,
                        GError **error)
{
  static const char prefix[] = "cannot encode the state record: ";
  g_autoptr (VgicList) ordered = NULL;

  if (!vgic_shape_check (shape, error))
    return NULL;
  ordered = dedup_reads (entries, n, NULL, error);
  if (!ordered)
    {
      g_prefix_error (error, "%s", prefix);
      return NULL;
    }
  return serialise (shape, ordered);
}

GBytes *
vgic_record_encode (const VgicShape *shape, const VgicEntry *entries, gsize n,
                    GError **error)
{
  static const char prefix[] = "cannot encode the state record: ";
  g_autoptr (VgicValues) values = NULL;
  g_autoptr (VgicList) ordered = NULL;
  gboolean routes;

  /* vgicd must never emit a record its own decoder (or an older one) would
   * refuse: check exactly what the decoder will check. */
  if (!vgic_shape_check (shape, error))
    return NULL;
  ordered = ordered_as_run (shape, entries, n);
  if (ordered)
    return serialise (shape, ordered);
  values = vgic_values_from_reads (entries, n, error);
  if (!values)
    {
      g_prefix_error (error, "%s", prefix);
      return NULL;
    }
  /* A save for a record reads all the routes QEMU misses, one for QEMU's
   * fields none: any one of them says which the caller ran. */
  routes = FALSE;
  for (gsize i = 0; i < vgic_values_size (values) && !routes; i++)
    routes = vgic_plan_is_route (shape, vgic_values_at (values, i)->group,
                                 vgic_values_at (values, i)->attr);
  /* Plan order rather than the caller's: the bytes then depend only on the
   * state, which makes records comparable and decode → encode an identity.
   * Every planned register found, and no more values than registers (both
   * sides hold each key once), is exactly the save's register set. */
  ordered = vgic_plan_save_registers (shape, values, NULL, routes, NULL);
  if (!ordered || !fill_from (ordered, values) ||
      ordered->len != vgic_values_size (values))
    {
      if (!vgic_validate_saved (shape, values, routes, error))
        g_prefix_error (error, "%s", prefix);
      else
        /* The plan found a difference that its own check does not: a
         * vgicd bug, not a bad save. */
        g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED,
                     "%sinternal error: the save plan and its check disagree", prefix);
      return NULL;
    }
  return serialise (shape, ordered);
}

/* The lowest version that holds @ordered's state (docs/state-record.md,
 * "Versions"): 2 when it has the routes QEMU misses and one of them is not
 * 0; else 1, and the routes, if it has them, are taken out of @ordered
 * (they sit together, so the order of the rest is kept). */
static guint16
lowest_version (const VgicShape *shape, VgicList *ordered)
{
  guint kept = 0;

  for (guint i = 0; i < ordered->len; i++)
    if (ordered->entries[i].value != 0 &&
        vgic_plan_is_route (shape, ordered->entries[i].group, ordered->entries[i].attr))
      return VGIC_RECORD_VERSION_ROUTES;
  for (guint i = 0; i < ordered->len; i++)
    if (!vgic_plan_is_route (shape, ordered->entries[i].group, ordered->entries[i].attr))
      ordered->entries[kept++] = ordered->entries[i];
  vgic_list_truncate (ordered, kept);
  return 1;
}

static GBytes *
serialise (const VgicShape *shape, VgicList *ordered)
{
  guint8 *buf, *p;
  guint16 version = lowest_version (shape, ordered);
  gsize size;

  size = vgic_record_encoded_size (shape, ordered->len);
  buf = g_malloc (size);
  memcpy (buf + OFF_MAGIC, record_magic, sizeof record_magic);
  put_le16 (buf + OFF_VERSION, version);
  put_le16 (buf + OFF_HEADER_LEN, HEADER_LEN_V1);
  put_le32 (buf + OFF_FLAGS, 0);
  put_le32 (buf + OFF_NR_IRQS, shape->nr_irqs);
  put_le32 (buf + OFF_NR_VCPUS, shape->nr_vcpus);
  put_le32 (buf + OFF_NR_ENTRIES, ordered->len);
  put_le32 (buf + OFF_RESERVED, 0);
  p = buf + HEADER_LEN_V1;
  for (guint32 i = 0; i < shape->nr_vcpus; i++, p += MPIDR_LEN)
    put_le32 (p, shape->mpidrs[i]);
  for (guint i = 0; i < ordered->len; i++, p += ENTRY_LEN)
    {
      const VgicEntry *e = &ordered->entries[i];

      put_le32 (p, e->group);
      put_le64 (p + 4, e->attr);
      put_le64 (p + 12, e->value);
    }
  put_le32 (p, crc32c (0, buf, (gsize) (p - buf)));
  g_assert ((gsize) (p + CRC_LEN - buf) == size);
  return g_bytes_new_take (buf, size);
}

/* ------------------------------------------------------------------ */
/* Decode                                                             */
/* ------------------------------------------------------------------ */

void
vgic_record_free (VgicRecord *record)
{
  if (!record)
    return;
  vgic_shape_free (record->shape);
  vgic_list_unref (record->entries);
  vgic_values_free (record->values);
  g_free (record);
}

static gboolean
bad_record (GError **error, const char *format, ...) G_GNUC_PRINTF (2, 3);
static gboolean
bad_record (GError **error, const char *format, ...)
{
  va_list ap;
  g_autofree char *msg = NULL;

  va_start (ap, format);
  msg = g_strdup_vprintf (format, ap);
  va_end (ap);
  g_set_error (error, VGICD_ERROR, VGICD_ERROR_BAD_RECORD,
               "bad state record: %s", msg);
  return FALSE;
}

/* What the header says, once it has been checked against the limits and the
 * buffer's length. */
typedef struct {
  guint16 version;
  guint32 nr_irqs;
  guint32 nr_vcpus;
  guint32 nr_entries;
  const guint8 *mpidrs;	/* nr_vcpus × u32 */
  const guint8 *entries;	/* nr_entries × ENTRY_LEN */
} Layout;

/* Steps 1-3: header, counts, length, checksum.  Allocates nothing. */
static gboolean
check_layout (const guint8 *data, gsize len, Layout *out, GError **error)
{
  guint16 header_len;
  guint32 flags, reserved, stored, computed;
  guint64 size;

  /* A short buffer that starts like a record is "truncated", not "wrong
   * magic"; the length test also keeps memcmp() away from a NULL @data. */
  if (len > 0 && memcmp (data, record_magic, MIN (len, sizeof record_magic)) != 0)
    {
      g_autofree char *seen = NULL;
      GString *hex = g_string_new (NULL);

      for (gsize i = 0; i < MIN (len, sizeof record_magic); i++)
        g_string_append_printf (hex, "%02x", data[i]);
      seen = g_string_free (hex, FALSE);
      return bad_record (error, "wrong magic %s (expected \"VGICDREC\"): "
                         "this is not a vgicd state record", seen);
    }
  if (len < PREFIX_LEN)
    return bad_record (error, "truncated: expected at least %u bytes of "
                       "header, got %" G_GSIZE_FORMAT, HEADER_LEN_V1, len);

  out->version = get_le16 (data + OFF_VERSION);
  if (out->version == 0)
    return bad_record (error, "version 0 is not a valid format version");
  if (out->version > VGIC_RECORD_VERSION)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_UNSUPPORTED,
                   "the state record has format version %u, but this vgicd "
                   "understands versions up to %u: upgrade vgicd on the "
                   "destination host to at least the source's version",
                   out->version, VGIC_RECORD_VERSION);
      return FALSE;
    }

  /* Versions 1 and 2 have the same header, exactly 32 bytes.  A later
   * version that appends header fields will accept both lengths, by
   * version. */
  header_len = get_le16 (data + OFF_HEADER_LEN);
  if (header_len != HEADER_LEN_V1)
    return bad_record (error, "header length %u, but version %u defines %u",
                       header_len, out->version, HEADER_LEN_V1);
  if (len < HEADER_LEN_V1)
    return bad_record (error, "truncated: expected at least %u bytes of "
                       "header, got %" G_GSIZE_FORMAT, HEADER_LEN_V1, len);

  flags = get_le32 (data + OFF_FLAGS);
  if (flags & ~KNOWN_FLAGS)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_UNSUPPORTED,
                   "the state record has unknown flags 0x%08x (this vgicd "
                   "knows 0x%08x): upgrade vgicd on the destination host",
                   flags & ~KNOWN_FLAGS, KNOWN_FLAGS);
      return FALSE;
    }
  reserved = get_le32 (data + OFF_RESERVED);
  if (reserved != 0)
    return bad_record (error, "reserved header field is 0x%08x, must be 0",
                       reserved);

  /* The counts decide how much is read and allocated next, so they are
   * bounded before anything else uses them. */
  out->nr_irqs = get_le32 (data + OFF_NR_IRQS);
  out->nr_vcpus = get_le32 (data + OFF_NR_VCPUS);
  out->nr_entries = get_le32 (data + OFF_NR_ENTRIES);
  if (out->nr_vcpus == 0 || out->nr_vcpus > VGIC_MAX_VCPUS)
    return bad_record (error, "%u vCPUs is out of range (1..%u)",
                       out->nr_vcpus, VGIC_MAX_VCPUS);
  if (out->nr_irqs < VGIC_MIN_IRQS || out->nr_irqs > VGIC_MAX_IRQS)
    return bad_record (error, "nr_irqs %u is out of range (%u..%u)",
                       out->nr_irqs, VGIC_MIN_IRQS, VGIC_MAX_IRQS);
  if (out->nr_entries > max_entries (out->nr_irqs, out->nr_vcpus, out->version))
    return bad_record (error, "%u entries, but a save of %u vCPUs and %u IRQs "
                       "reads at most %u registers", out->nr_entries,
                       out->nr_vcpus, out->nr_irqs,
                       max_entries (out->nr_irqs, out->nr_vcpus, out->version));

  size = record_size (out->nr_vcpus, out->nr_entries);
  if (len < size)
    return bad_record (error, "truncated: %u vCPUs and %u entries need "
                       "%" G_GUINT64_FORMAT " bytes, got %" G_GSIZE_FORMAT,
                       out->nr_vcpus, out->nr_entries, size, len);
  if (len > size)
    return bad_record (error, "%" G_GUINT64_FORMAT " trailing bytes: "
                       "expected %" G_GUINT64_FORMAT " bytes, got %"
                       G_GSIZE_FORMAT, (guint64) len - size, size, len);

  stored = get_le32 (data + size - CRC_LEN);
  computed = crc32c (0, data, (gsize) size - CRC_LEN);
  if (stored != computed)
    return bad_record (error, "checksum mismatch: the record carries CRC-32C "
                       "0x%08x but its bytes give 0x%08x (corrupted in "
                       "transit or storage)", stored, computed);

  out->mpidrs = data + HEADER_LEN_V1;
  out->entries = out->mpidrs + (gsize) MPIDR_LEN * out->nr_vcpus;
  return TRUE;
}

/* The shape the record says it was saved from (vgic_validate_record()
 * judges it). */
static VgicShape *
parse_shape (const Layout *l)
{
  VgicShape *shape = g_new0 (VgicShape, 1);

  shape->nr_irqs = l->nr_irqs;
  shape->nr_vcpus = l->nr_vcpus;
  shape->mpidrs = g_new (uint32_t, l->nr_vcpus);
  for (guint32 i = 0; i < l->nr_vcpus; i++)
    shape->mpidrs[i] = get_le32 (l->mpidrs + (gsize) MPIDR_LEN * i);
  return shape;
}

/* The entries as they are (vgic_validate_record() judges them). */
static VgicList *
parse_entries (const Layout *l)
{
  /* Every field is written below: not zeroed first (a restore decodes
   * inside the downtime). */
  VgicList *list = vgic_list_new (l->nr_entries);
  VgicEntry *entries = list->entries;

  for (guint32 i = 0; i < l->nr_entries; i++)
    {
      const guint8 *p = l->entries + (gsize) ENTRY_LEN * i;

      entries[i].group = get_le32 (p);
      entries[i].reserved = 0;
      entries[i].attr = get_le64 (p + 4);
      entries[i].value = get_le64 (p + 12);
    }
  list->len = l->nr_entries;
  return list;
}

VgicRecord *
vgic_record_parse (const guint8 *data, gsize len, GError **error)
{
  g_autoptr (VgicRecord) record = NULL;
  Layout layout = { 0 };

  g_return_val_if_fail (data != NULL || len == 0, NULL);

  if (!check_layout (data, len, &layout, error))
    return NULL;
  record = g_new0 (VgicRecord, 1);
  record->version = layout.version;
  record->routes = layout.version >= VGIC_RECORD_VERSION_ROUTES;
  record->shape = parse_shape (&layout);
  record->entries = parse_entries (&layout);
  return g_steal_pointer (&record);
}

VgicRecord *
vgic_record_decode (const guint8 *data, gsize len, GError **error)
{
  return vgic_record_load (data, len, NULL, error);
}

VgicRecord *
vgic_record_load (const guint8 *data, gsize len, const VgicShape *vm, GError **error)
{
  g_autoptr (VgicRecord) record = vgic_record_parse (data, len, error);

  if (!record || !vgic_validate_record (record, vm, NULL, error))
    return NULL;
  return g_steal_pointer (&record);
}
