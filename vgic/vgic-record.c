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
 * all little-endian, written and read one byte at a time so the code never
 * depends on host byte order, alignment or struct padding.
 *
 * Decoding is the security boundary: the bytes come from another host via
 * QEMU, and vgicd turns them into kernel writes.  So the decoder checks in an
 * order where every step can trust the ones before it:
 *
 *   1. magic, version, header length, flags, reserved  (fixed-size reads)
 *   2. the counts against hard limits, then the exact length they imply
 *      (no allocation has happened yet, none proportional to a count can)
 *   3. the checksum (from here on the bytes are what the source wrote)
 *   4. the shape on its own (vgic_shape_check), and against the VM for a load
 *   5. every entry's group, then the register set against a save plan of the
 *      shape, then the entries' order
 *
 * Every rejection names what is wrong, because the operator reading a failed
 * migration's log has nothing else to go on.
 */
#include "vgic-record.h"

#include <string.h>

#include "crc32c.h"
#include "vgic-plan.h"
#include "vgic-regs.h"

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
 * four APRs per group.  Only the counts are used, not the MPIDRs, so this is
 * safe to call on a header that has not been checked further. */
static guint
max_entries (guint32 nr_irqs, guint32 nr_vcpus)
{
  VgicShape counts = { .nr_irqs = nr_irqs, .nr_vcpus = nr_vcpus, .mpidrs = NULL };

  return vgic_plan_save_count (&counts, TRUE, 4);
}

/* ------------------------------------------------------------------ */
/* Encode                                                             */
/* ------------------------------------------------------------------ */

/* The registers a save of @shape reads, in plan order (round 1, then round
 * 2 as @values asks), each once, where it is first read; values left 0.
 *
 * QEMU's overlapping IROUTER words are read twice; the second read adds
 * nothing to the state, so the record does not carry it.  Only DIST_REGS
 * offsets can repeat (the other groups' attrs include a distinct MPIDR per
 * vCPU), and a DIST attr is a bare offset below 64 KiB, so a bitmap of
 * offsets finds the repeats without hashing 7,000 keys. */
static GArray *
plan_keys (const VgicShape *shape, const VgicValues *values, const GArray *first,
           GError **error)
{
  g_autoptr (GArray) all = NULL;
  g_autoptr (GArray) second = vgic_plan_save_second (shape, values, error);
  g_autofree guint64 *seen = NULL;
  guint out = 0;

  if (!second)
    return NULL;
  if (first)
    {
      all = g_array_sized_new (FALSE, FALSE, sizeof (struct kvm_vgic_batch_entry),
                               first->len + second->len);
      g_array_append_vals (all, first->data, first->len);
    }
  else
    all = vgic_plan_save_first (shape);
  g_array_append_vals (all, second->data, second->len);
  seen = g_new0 (guint64, 0x10000 / 64);
  for (guint i = 0; i < all->len; i++)
    {
      struct kvm_vgic_batch_entry *base =
        (struct kvm_vgic_batch_entry *) (void *) all->data;
      const struct kvm_vgic_batch_entry *e = &base[i];

      if (e->group == KVM_DEV_ARM_VGIC_GRP_DIST_REGS && e->attr < 0x10000)
        {
          guint64 bit = 1ULL << (e->attr % 64);

          if (seen[e->attr / 64] & bit)
            continue;
          seen[e->attr / 64] |= bit;
        }
      base[out++] = *e;
    }
  g_array_set_size (all, out);
  return g_steal_pointer (&all);
}

/* Fill @keys' values from @values.  FALSE if one is missing. */
static gboolean
fill_from (GArray *keys, const VgicValues *values)
{
  for (guint i = 0; i < keys->len; i++)
    {
      struct kvm_vgic_batch_entry *e =
        &g_array_index (keys, struct kvm_vgic_batch_entry, i);
      uint64_t value;

      if (!vgic_values_lookup (values, e->group, e->attr, &value))
        return FALSE;
      e->value = value;
    }
  return TRUE;
}

/* Name the difference between @values and a save of @shape.  Only called
 * once a fast check has failed, so that the good path builds the plan once
 * rather than also through vgic_plan_check_saved(). */
static void
explain_register_set (const VgicShape *shape, const VgicValues *values,
                      const char *prefix, GError **error)
{
  if (!vgic_plan_check_saved (shape, values, error))
    {
      g_prefix_error (error, "%s", prefix);
      return;
    }
  /* The plan found a difference that the planner's own check does not:
   * the two disagree, which is a vgicd bug, not a bad record. */
  g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED,
               "%sinternal error: the save plan and its check disagree", prefix);
}

/* @entries less the repeated reads (only DIST offsets below 64 KiB repeat,
 * the same rule as plan_keys()), or NULL when a repeat disagrees with the
 * first read or a 32-bit register has high bits.  @plan, when given, must
 * match @entries' groups and attrs at every index (else NULL too). */
static GArray *
dedup_reads (const struct kvm_vgic_batch_entry *entries, gsize n,
             const struct kvm_vgic_batch_entry *plan, GError **error)
{
  g_autofree guint32 *first_at = g_new0 (guint32, 0x10000 / 4);
  g_autoptr (GArray) out = g_array_sized_new (FALSE, FALSE, sizeof (*entries), (guint) n);
  struct kvm_vgic_batch_entry *o;
  guint len = 0;

  g_array_set_size (out, (guint) n);
  o = (struct kvm_vgic_batch_entry *) (void *) out->data;
  for (gsize i = 0; i < n; i++)
    {
      const struct kvm_vgic_batch_entry *e = &entries[i];

      if (plan && (plan[i].group != e->group || plan[i].attr != e->attr))
        return NULL;
      if (e->group != KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS && e->value > G_MAXUINT32)
        {
          g_autofree char *what = vgic_reg_describe (e->group, e->attr);
          g_set_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET,
                       "%s is a 32-bit register but carries 0x%" G_GINT64_MODIFIER "x",
                       what, (guint64) e->value);
          return NULL;
        }
      if (e->group == KVM_DEV_ARM_VGIC_GRP_DIST_REGS && e->attr < 0x10000)
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
  g_array_set_size (out, len);
  return g_steal_pointer (&out);
}

/* The fast path of vgic_record_encode(): @entries are exactly a save as
 * vgicd runs it (round 1, then round 2, in plan order).  Then the record is
 * those entries less the repeated reads, and no index of all the values is
 * needed.  NULL (no error) when @entries are anything else, or when a
 * repeated read disagrees: the general path then decides and explains. */
static GArray *
ordered_as_run (const VgicShape *shape, const struct kvm_vgic_batch_entry *entries,
                gsize n)
{
  g_autoptr (VgicValues) inputs = vgic_plan_save_inputs (shape, entries, n, NULL);
  g_autoptr (GArray) plan = NULL;
  g_autoptr (GArray) second = NULL;

  if (!inputs)
    return NULL;
  plan = vgic_plan_save_first (shape);
  second = vgic_plan_save_second (shape, inputs, NULL);
  if (!second || plan->len + second->len != n)
    return NULL;
  g_array_append_vals (plan, second->data, second->len);
  return dedup_reads (entries, n, (const void *) plan->data, NULL);
}

static GBytes *serialise (const VgicShape *shape, const GArray *ordered);

GBytes *
vgic_record_encode_run (const VgicShape *shape,
                        const struct kvm_vgic_batch_entry *entries, gsize n,
                        GError **error)
{
  static const char prefix[] = "cannot encode the state record: ";
  g_autoptr (GArray) ordered = NULL;

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
vgic_record_encode (const VgicShape *shape,
                    const struct kvm_vgic_batch_entry *entries, gsize n,
                    GError **error)
{
  static const char prefix[] = "cannot encode the state record: ";
  g_autoptr (VgicValues) values = NULL;
  g_autoptr (GArray) ordered = NULL;

  /* vgicd must never emit a record its own decoder (or an older one) would
   * refuse: check exactly what the decoder will check. */
  if (!vgic_shape_check (shape, error))
    return NULL;
  ordered = ordered_as_run (shape, entries, n);
  if (ordered)
    goto serialise;
  values = vgic_values_from_reads (entries, n, error);
  if (!values)
    {
      g_prefix_error (error, "%s", prefix);
      return NULL;
    }
  /* Plan order rather than the caller's: the bytes then depend only on the
   * state, which makes records comparable and decode → encode an identity.
   * Every planned register found, and no more values than registers (both
   * sides hold each key once), is exactly the save's register set. */
  ordered = plan_keys (shape, values, NULL, NULL);
  if (!ordered || !fill_from (ordered, values) ||
      ordered->len != vgic_values_size (values))
    {
      explain_register_set (shape, values, prefix, error);
      return NULL;
    }

serialise:
  return serialise (shape, ordered);
}

static GBytes *
serialise (const VgicShape *shape, const GArray *ordered)
{
  guint8 *buf, *p;
  gsize size;

  size = vgic_record_encoded_size (shape, ordered->len);
  buf = g_malloc (size);
  memcpy (buf + OFF_MAGIC, record_magic, sizeof record_magic);
  put_le16 (buf + OFF_VERSION, VGIC_RECORD_VERSION);
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
      const struct kvm_vgic_batch_entry *e =
        &g_array_index (ordered, struct kvm_vgic_batch_entry, i);

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

  /* Only version 1 exists: its header is exactly 32 bytes.  A later version
   * that appends header fields will accept both lengths, by version. */
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
  if (out->nr_entries > max_entries (out->nr_irqs, out->nr_vcpus))
    return bad_record (error, "%u entries, but a save of %u vCPUs and %u IRQs "
                       "reads at most %u registers", out->nr_entries,
                       out->nr_vcpus, out->nr_irqs,
                       max_entries (out->nr_irqs, out->nr_vcpus));

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

/* Step 4: the shape the record was saved from, checked on its own. */
static VgicShape *
parse_shape (const Layout *l, GError **error)
{
  g_autoptr (VgicShape) shape = g_new0 (VgicShape, 1);

  shape->nr_irqs = l->nr_irqs;
  shape->nr_vcpus = l->nr_vcpus;
  shape->mpidrs = g_new (uint32_t, l->nr_vcpus);
  for (guint32 i = 0; i < l->nr_vcpus; i++)
    shape->mpidrs[i] = get_le32 (l->mpidrs + (gsize) MPIDR_LEN * i);
  if (!vgic_shape_check (shape, error))
    {
      g_prefix_error (error, "the state record's VM shape is impossible: ");
      return NULL;
    }
  return g_steal_pointer (&shape);
}

/* Step 5: the entries must be exactly a save of @shape, in plan order. */
static VgicValues *
parse_entries (const Layout *l, const VgicShape *shape, const GArray *first, GError **error)
{
  static const char prefix[] = "the state record's register set is wrong: ";
  /* Every field is written below: not zeroed first (a restore decodes
   * inside the downtime). */
  g_autofree struct kvm_vgic_batch_entry *entries =
    g_new (struct kvm_vgic_batch_entry, MAX (l->nr_entries, 1));
  g_autoptr (VgicValues) values = NULL;
  g_autoptr (GArray) expected = NULL;

  for (guint32 i = 0; i < l->nr_entries; i++)
    {
      const guint8 *p = l->entries + (gsize) ENTRY_LEN * i;

      entries[i].group = get_le32 (p);
      entries[i].error = 0;
      entries[i].attr = get_le64 (p + 4);
      entries[i].value = get_le64 (p + 12);
      /* Refused here, by index, because vgic_reg_describe() cannot name a
       * register in a group it does not know. */
      if (!vgic_group_is_data (entries[i].group))
        {
          bad_record (error, "entry %u has unknown group %u (not DIST, "
                      "REDIST, CPU_SYSREGS or LEVEL_INFO)", i, entries[i].group);
          return NULL;
        }
    }

  /* Duplicates and high bits in 32-bit registers: named by
   * vgic_values_new().  Strict, not _from_reads(): the encoder stores each
   * register once, so a repeated one in a record is corruption. */
  values = vgic_values_new (entries, l->nr_entries, error);
  if (!values)
    {
      g_prefix_error (error, "%s", prefix);
      return NULL;
    }

  /* The good path: the entries are the plan's registers, in its order.
   * Both lists hold each key once, so the same sequence is the same set. */
  expected = plan_keys (shape, values, first, NULL);
  if (expected && expected->len == l->nr_entries)
    {
      guint32 i;

      for (i = 0; i < l->nr_entries; i++)
        {
          const struct kvm_vgic_batch_entry *w =
            &g_array_index (expected, struct kvm_vgic_batch_entry, i);

          if (w->group != entries[i].group || w->attr != entries[i].attr)
            break;
        }
      if (i == l->nr_entries)
        return g_steal_pointer (&values);
    }

  /* Something differs.  A missing or unexpected register is named by the
   * planner's check; if the set is right, the order is wrong. */
  if (!expected || !vgic_plan_check_saved (shape, values, error))
    {
      if (expected)
        g_prefix_error (error, "%s", prefix);
      else
        explain_register_set (shape, values, prefix, error);
      return NULL;
    }
  for (guint32 i = 0; i < l->nr_entries && i < expected->len; i++)
    {
      const struct kvm_vgic_batch_entry *w =
        &g_array_index (expected, struct kvm_vgic_batch_entry, i);

      if (w->group != entries[i].group || w->attr != entries[i].attr)
        {
          g_autofree char *got = vgic_reg_describe (entries[i].group, entries[i].attr);
          g_autofree char *want = vgic_reg_describe (w->group, w->attr);

          bad_record (error, "entry %u is %s, but a save reads %s there: "
                      "entries are out of plan order", i, got, want);
          return NULL;
        }
    }
  explain_register_set (shape, values, prefix, error);
  return NULL;
}

static VgicRecord *
decode (const guint8 *data, gsize len, const VgicShape *vm, const GArray *first,
        GError **error)
{
  g_autoptr (VgicRecord) record = NULL;
  Layout layout = { 0 };

  g_return_val_if_fail (data != NULL || len == 0, NULL);

  if (!check_layout (data, len, &layout, error))
    return NULL;
  record = g_new0 (VgicRecord, 1);
  record->version = layout.version;
  record->shape = parse_shape (&layout, error);
  if (!record->shape)
    return NULL;
  /* Before the register set: a record for another VM is a mismatch, and
   * should be reported as one rather than as some register's absence. */
  if (vm && !vgic_shape_match (vm, record->shape, error))
    return NULL;
  record->values = parse_entries (&layout, record->shape, first, error);
  if (!record->values)
    return NULL;
  return g_steal_pointer (&record);
}

VgicRecord *
vgic_record_decode (const guint8 *data, gsize len, GError **error)
{
  return decode (data, len, NULL, NULL, error);
}

VgicRecord *
vgic_record_load (const guint8 *data, gsize len, const VgicShape *vm,
                  GError **error)
{
  g_return_val_if_fail (vm != NULL, NULL);

  return decode (data, len, vm, NULL, error);
}

VgicRecord *
vgic_record_load_planned (const guint8 *data, gsize len, const VgicShape *vm,
                          const GArray *first, GError **error)
{
  g_return_val_if_fail (vm != NULL && first != NULL, NULL);

  return decode (data, len, vm, first, error);
}
