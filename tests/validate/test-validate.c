/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-validate.c - vgic/vgic-validate.c on its own: the record entry
 * point with and without the VM's round-1 plan, the destination's guards
 * against vgicd's own destination check (they must always agree), QEMU's
 * own restore as a list of writes (the walk that checks it against the one
 * comparison it replaced, on thousands of damaged lists), and the check of
 * what an executor hands back.
 */
#include <string.h>

#include "fake-save.h"
#include "vgic-plan.h"
#include "vgic-record.h"
#include "vgic-regs.h"
#include "vgic-validate.h"

#define GRP_DIST KVM_DEV_ARM_VGIC_GRP_DIST_REGS
#define GRP_REDIST KVM_DEV_ARM_VGIC_GRP_REDIST_REGS

static VgicShape *
shape_new (guint vcpus, guint irqs)
{
  g_autoptr (GError) error = NULL;
  VgicShape *shape = vgic_shape_new (irqs, vcpus, NULL, &error);

  g_assert_no_error (error);
  return shape;
}

static GBytes *
record_of (const VgicShape *shape, gboolean plpis, guint pri_bits, guint32 seed)
{
  g_autoptr (VgicList) reads = fake_save (shape, plpis, pri_bits, seed, NULL);
  g_autoptr (GError) error = NULL;
  GBytes *bytes = vgic_record_encode (shape, reads->entries, reads->len, &error);

  g_assert_no_error (error);
  return bytes;
}

static VgicRecord *
parse (GBytes *bytes)
{
  g_autoptr (GError) error = NULL;
  VgicRecord *r = vgic_record_parse (g_bytes_get_data (bytes, NULL),
                                     g_bytes_get_size (bytes), &error);

  g_assert_no_error (error);
  g_assert_null (r->values);	/* not judged yet */
  return r;
}

/* The session passes the VM's round-1 plan, the decoder does not: the
 * verdict and the values are the same. */
static void
test_record_with_and_without_plan (void)
{
  g_autoptr (VgicShape) shape = shape_new (8, 288);
  g_autoptr (VgicList) first = vgic_plan_save_first (shape);
  g_autoptr (GBytes) bytes = record_of (shape, TRUE, 6, 5);
  g_autoptr (VgicRecord) a = parse (bytes);
  g_autoptr (VgicRecord) b = parse (bytes);
  g_autoptr (GError) error = NULL;

  g_assert_true (vgic_validate_record (a, shape, NULL, &error));
  g_assert_no_error (error);
  g_assert_true (vgic_validate_record (b, shape, first, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (vgic_values_size (a->values), ==, vgic_values_size (b->values));
  for (gsize i = 0; i < vgic_values_size (a->values); i++)
    g_assert_cmpmem (vgic_values_at (a->values, i), sizeof (VgicEntry),
                     vgic_values_at (b->values, i), sizeof (VgicEntry));
}

/* A record for another VM is refused as such, before its registers are
 * looked at, and leaves the record unjudged. */
static void
test_record_other_vm (void)
{
  g_autoptr (VgicShape) vm = shape_new (8, 288);
  g_autoptr (VgicShape) other = shape_new (4, 288);
  g_autoptr (VgicList) first = vgic_plan_save_first (vm);
  g_autoptr (GBytes) bytes = record_of (other, TRUE, 5, 1);
  g_autoptr (VgicRecord) r = parse (bytes);
  g_autoptr (GError) error = NULL;

  g_assert_false (vgic_validate_record (r, vm, first, &error));
  g_assert_error (error, VGICD_ERROR, VGICD_ERROR_SHAPE_MISMATCH);
  g_assert_nonnull (strstr (error->message, "the record is for 4 vCPUs but this VM has 8"));
  g_assert_null (r->values);
  g_clear_error (&error);
  /* On its own terms it is a fine record. */
  g_assert_true (vgic_validate_record (r, NULL, NULL, &error));
  g_assert_no_error (error);
}

/* The destination's answers, one case each: room for the IRQs or not,
 * LPIs on the same side or not. */
typedef struct {
  guint itlines;	/* GICD_TYPER[4:0] */
  gboolean plpis;	/* GICR_TYPER.PLPIS */
  gboolean has_ctlr;	/* else every vCPU's ICC_CTLR_EL1 is the state's */
  guint64 ctlr;		/* every vCPU's ICC_CTLR_EL1 */
} Destination;

/* The destination's answers to the guards' reads for @state. */
static VgicValues *
destination (const VgicShape *shape, const VgicValues *state, const Destination *d,
             guint64 noise)
{
  g_autoptr (VgicList) check = vgic_validate_guards (shape, state);
  g_autoptr (GError) error = NULL;
  VgicValues *values;

  for (guint i = 0; i < check->len; i++)
    {
      VgicEntry *e = &check->entries[i];

      /* Bits the guards must ignore, set on purpose. */
      e->value = noise & 0xffffffe0u;
      if (e->group == GRP_DIST)
        e->value |= d->itlines;
      else if (e->group == KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS && d->has_ctlr)
        e->value = d->ctlr;
      else if (e->group == KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS)
        {
          uint64_t v = 0;

          g_assert_true (vgic_values_lookup (state, e->group, e->attr, &v));
          e->value = v;
        }
      else if (vgic_attr_low (e->attr) == GICR_TYPER)
        e->value = (e->value & ~GICR_TYPER_PLPIS) | (d->plpis ? GICR_TYPER_PLPIS : 0);
    }
  values = vgic_values_new (check->entries, check->len, &error);
  g_assert_no_error (error);
  return values;
}

/* What a guard-checking peer decides from the guards. */
static gboolean
guards_hold (const VgicList *guards, const VgicValues *read)
{
  g_assert_cmpuint (guards->n_guards, ==, guards->len);
  for (guint i = 0; i < guards->n_guards; i++)
    {
      uint64_t v;

      g_assert_true (vgic_values_lookup (read, guards->entries[i].group,
                                         guards->entries[i].attr, &v));
      v &= guards->guards[i].mask;
      if (v < guards->guards[i].min || v > guards->guards[i].max)
        return FALSE;
    }
  return TRUE;
}

static void
test_guards_agree_with_destination_check (void)
{
  static const guint irqs[] = { 64, 288, 992 };
  guint cases = 0, refused = 0;

  for (guint q = 0; q < G_N_ELEMENTS (irqs); q++)
    for (int src_lpis = 0; src_lpis <= 1; src_lpis++)
      for (guint itlines = 0; itlines <= 31; itlines += 3)
        for (int dst_lpis = 0; dst_lpis <= 1; dst_lpis++)
          {
            g_autoptr (VgicShape) shape = shape_new (2, irqs[q]);
            g_autoptr (VgicList) reads = fake_save (shape, src_lpis, 5, q, NULL);
            g_autoptr (VgicValues) state = vgic_values_from_reads (reads->entries, reads->len, NULL);
            g_autoptr (VgicList) guards = vgic_validate_guards (shape, state);
            Destination d = { itlines, dst_lpis, FALSE, 0 };
            g_autoptr (VgicValues) read = destination (shape, state, &d,
                                                       0x5a5a5a5a00ull * (itlines + 1));
            g_autoptr (GError) error = NULL;
            gboolean fits = vgic_validate_destination (shape, state, read, &error);
            gboolean expect = (itlines + 1) * 32 >= irqs[q] && src_lpis == dst_lpis;

            g_assert_cmpint (guards_hold (guards, read), ==, fits);
            g_assert_cmpint (fits, ==, expect);
            if (!fits)
              {
                g_assert_nonnull (error);
                refused++;
              }
            cases++;
          }
  g_test_message ("%u destinations, %u refused", cases, refused);
  g_assert_cmpuint (refused, >, 0);
  g_assert_cmpuint (refused, <, cases);
}

/* set_gic_ctlr() of Linux 6.12 (arch/arm64/kvm/vgic-sys-reg-v3.c): does a
 * vCPU whose ICC_CTLR_EL1 reads @dst take a write of @rec?  Its PRIbits
 * and IDbits may not be larger, SEIS and A3V must be the host's. */
static gboolean
kernel_takes_ctlr (guint64 rec, guint64 dst)
{
  const guint64 pri = ICC_CTLR_EL1_PRIBITS_MASK, id = ICC_CTLR_EL1_IDBITS_MASK;
  const guint64 host = ICC_CTLR_EL1_SEIS | ICC_CTLR_EL1_A3V;

  return (rec & pri) <= (dst & pri) && (rec & id) <= (dst & id) &&
         (rec & host) == (dst & host);
}

static guint64
ctlr_of (guint pri_bits, guint id_bits, gboolean seis, gboolean a3v, guint64 noise)
{
  /* CBPR, EOImode, PMHE and the bits above A3V: what the guard ignores */
  return (noise & 0xf00c3) | (guint64) (pri_bits - 1) << ICC_CTLR_EL1_PRIBITS_SHIFT |
         (guint64) id_bits << ICC_CTLR_EL1_IDBITS_SHIFT |
         (seis ? ICC_CTLR_EL1_SEIS : 0) | (a3v ? ICC_CTLR_EL1_A3V : 0);
}

/* Row 8: every ICC_CTLR_EL1 pair the architecture allows (PRIbits+1 of 5
 * to 7, IDbits of 16 or 24 bits, SEIS and A3V either way), as record and
 * as destination: the guards a peer checks, vgicd's own check and the
 * kernel's rule agree on each, and a refusal names the field. */
static void
test_ctlr_guards_agree_with_kernel (void)
{
  g_autoptr (VgicShape) shape = shape_new (2, 64);
  guint cases = 0, refused = 0;

  for (guint rc = 0; rc < 3 * 2 * 4; rc++)
    for (guint dc = 0; dc < 3 * 2 * 4; dc++)
      {
        const guint64 rec = ctlr_of (5 + rc % 3, rc / 3 % 2, rc / 6 & 1, rc / 12 & 1, rc * 0x3f0c3u);
        const guint64 dst = ctlr_of (5 + dc % 3, dc / 3 % 2, dc / 6 & 1, dc / 12 & 1, dc * 0x5a0c3u);
        g_autoptr (VgicList) reads = fake_save (shape, TRUE, 5 + rc % 3, rc, NULL);
        g_autoptr (VgicValues) state = NULL;
        g_autoptr (VgicList) guards = NULL;
        g_autoptr (VgicValues) read = NULL;
        g_autoptr (GError) error = NULL;
        Destination d = { 31, TRUE, TRUE, dst };
        gboolean fits;

        /* vCPU 1 carries @rec; vCPU 0 the destination's own value. */
        for (guint i = 0; i < reads->len; i++)
          if (reads->entries[i].group == KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS &&
              vgic_attr_low (reads->entries[i].attr) == ICC_CTLR_EL1)
            reads->entries[i].value = vgic_attr_mpidr (reads->entries[i].attr) ? rec : dst;
        state = vgic_values_from_reads (reads->entries, reads->len, NULL);
        guards = vgic_validate_guards (shape, state);
        read = destination (shape, state, &d, 0);
        fits = vgic_validate_destination (shape, state, read, &error);
        g_assert_cmpint (guards_hold (guards, read), ==, fits);
        g_assert_cmpint (fits, ==, kernel_takes_ctlr (rec, dst));
        cases++;
        if (fits)
          continue;
        refused++;
        g_assert_error (error, VGICD_ERROR, VGICD_ERROR_KERNEL);
        g_assert_nonnull (strstr (error->message, "vCPU 1's ICC_CTLR_EL1"));
        g_assert_true (strstr (error->message, "(PRIbits)") || strstr (error->message, "(IDbits") ||
                       strstr (error->message, "(SEIS)") || strstr (error->message, "(A3V)"));
      }
  g_test_message ("%u pairs, %u refused", cases, refused);
  g_assert_cmpuint (refused, >, 0);
  g_assert_cmpuint (refused, <, cases);
}

/* Row 8's other half: a state whose ICC_SRE_EL1 lacks SRE, which set_gic_sre()
 * refuses on every kernel, is refused against a VM before any write. */
static void
test_sre_refused (void)
{
  g_autoptr (VgicShape) shape = shape_new (2, 64);
  g_autoptr (VgicList) reads = fake_save (shape, TRUE, 5, 3, NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicRecord) record = NULL;
  g_autoptr (GBytes) bytes = NULL;

  for (guint i = 0; i < reads->len; i++)
    if (reads->entries[i].group == KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS &&
        vgic_attr_low (reads->entries[i].attr) == ICC_SRE_EL1 &&
        vgic_attr_mpidr (reads->entries[i].attr))
      reads->entries[i].value = 0x6;
  bytes = vgic_record_encode (shape, reads->entries, reads->len, &error);
  g_assert_no_error (error);
  /* On its own terms (vgicctl dump) the record is fine... */
  record = vgic_record_parse (g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes), &error);
  g_assert_no_error (error);
  g_assert_true (vgic_validate_record (record, NULL, NULL, &error));
  /* ... but not for a VM. */
  g_assert_false (vgic_validate_record (record, shape, NULL, &error));
  g_assert_error (error, VGICD_ERROR, VGICD_ERROR_BAD_RECORD);
  g_assert_nonnull (strstr (error->message, "vCPU 1's ICC_SRE_EL1 is 0x6, without SRE"));
}

/* Entries a record's sender chose so that all of them start their probe
 * in the register index's first slot (the hash is public: attr is the
 * multiplier's inverse times k).  Building the index was quadratic in
 * them; now a set that collides beyond MAX_PROBE is refused, early. */
static void
test_colliding_entries (void)
{
  const guint64 mul = G_GUINT64_CONSTANT (0x9E3779B97F4A7C15);
  const guint32 group = KVM_DEV_ARM_VGIC_GRP_REDIST_REGS;
  const guint n = 16384;
  g_autofree VgicEntry *e = g_new0 (VgicEntry, n);
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicValues) values = NULL;
  guint64 inv = mul;

  for (int i = 0; i < 6; i++)	/* Newton: the inverse modulo 2^64 */
    inv *= 2 - mul * inv;
  g_assert_cmpuint (inv * mul, ==, 1);
  for (guint k = 0; k < n; k++)
    e[k] = (VgicEntry) { .group = group, .attr = ((k + 1) * inv) ^ ((guint64) group << 59) };
  values = vgic_values_new (e, n, &error);
  g_assert_null (values);
  g_assert_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET);
  g_assert_nonnull (strstr (error->message, "entry 256 "));
  g_assert_nonnull (strstr (error->message, "a crafted set"));
}

static void
test_results (void)
{
  g_autoptr (VgicShape) shape = shape_new (2, 64);
  g_autoptr (VgicList) sent = vgic_plan_save_first (shape);
  g_autoptr (VgicList) got = vgic_list_new_from (sent->entries, sent->len);
  g_autoptr (GError) error = NULL;
  guint sysreg = 0;

  /* Values may change, and the reserved field (nothing reads it back). */
  for (guint i = 0; i < got->len; i++)
    {
      got->entries[i].value = i;
      got->entries[i].reserved = 7;
      if (got->entries[i].group == KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS)
        sysreg = i;
    }
  g_assert_true (vgic_validate_results (sent, got->entries, got->len, &error));
  g_assert_no_error (error);
  /* A 64-bit value where it fits (an ICC register). */
  got->entries[sysreg].value = 1ull << 40;
  g_assert_true (vgic_validate_results (sent, got->entries, got->len, &error));

  /* ...and where it does not. */
  got->entries[3].value = 1ull << 40;
  g_assert_false (vgic_validate_results (sent, got->entries, got->len, &error));
  g_assert_error (error, VGICD_ERROR, VGICD_ERROR_FAILED);
  g_assert_nonnull (strstr (error->message, "64-bit value for the 32-bit"));
  g_clear_error (&error);
  got->entries[3].value = 3;
  /* Only the first n are looked at. */
  got->entries[5].attr ^= 4;
  g_assert_true (vgic_validate_results (sent, got->entries, 5, &error));
  g_assert_false (vgic_validate_results (sent, got->entries, 6, &error));
  g_assert_error (error, VGICD_ERROR, VGICD_ERROR_FAILED);
  g_assert_nonnull (strstr (error->message, "changed entry 5"));
}

static void
test_width (void)
{
  VgicEntry e = { .group = GRP_DIST, .attr = vgic_attr (0, GICD_CTLR), .value = G_MAXUINT32 };
  g_autoptr (GError) error = NULL;

  g_assert_true (vgic_reg_check_width (&e, &error));
  e.value++;
  g_assert_false (vgic_reg_check_width (&e, &error));
  g_assert_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET);
  g_assert_nonnull (strstr (error->message, "GICD_CTLR is a 32-bit register but carries 0x100000000"));
  g_clear_error (&error);
  e.group = KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS;
  e.attr = vgic_attr (0, ICC_CTLR_EL1);
  g_assert_true (vgic_reg_check_width (&e, &error));
}

/* The restore vgicd plans for a save's values, handed back as QEMU's list
 * of writes, gives the same values back (with and without LPIs, every APR
 * count); each kind of difference is refused, naming the write. */
static VgicList *
restore_of (const VgicShape *shape, gboolean plpis, guint pri_bits, guint32 seed,
            VgicValues **values)
{
  g_autoptr (VgicList) reads = fake_save (shape, plpis, pri_bits, seed, NULL);
  g_autoptr (GError) error = NULL;
  VgicList *plan;

  *values = vgic_values_from_reads (reads->entries, reads->len, &error);
  g_assert_no_error (error);
  plan = vgic_plan_restore_write (shape, *values, FALSE, &error);
  g_assert_no_error (error);
  return plan;
}

/* What vgic_validate_restore_list() keeps, @kept, is what the whole state
 * @state says for it: vCPU 0's GICR_TYPER and every ICC_CTLR_EL1. */
static void
assert_kept_agrees (const VgicShape *shape, const VgicValues *kept, const VgicValues *state)
{
  uint64_t a, b;

  g_assert_nonnull (kept);
  g_assert_cmpuint (vgic_values_size (kept), ==, shape->nr_vcpus + 1);
  for (gsize i = 0; i < vgic_values_size (kept); i++)
    {
      const VgicEntry *e = vgic_values_at (kept, i);

      g_assert_true (vgic_values_lookup (kept, e->group, e->attr, &a));
      g_assert_true (vgic_values_lookup (state, e->group, e->attr, &b));
      g_assert_cmphex (a, ==, b);
    }
  g_assert_true (vgic_values_lookup (kept, GRP_REDIST, vgic_attr (shape->mpidrs[0], GICR_TYPER),
                                     &a));
  for (guint cpu = 0; cpu < shape->nr_vcpus; cpu++)
    g_assert_true (vgic_values_lookup (kept, KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS,
                                       vgic_attr (shape->mpidrs[cpu], ICC_CTLR_EL1), &a));
}

static void
test_writes_round_trip (void)
{
  g_autoptr (VgicShape) shape = shape_new (4, 160);

  for (int plpis = 0; plpis < 2; plpis++)
    for (guint pri = 5; pri <= 7; pri++)
      {
        g_autoptr (VgicValues) saved = NULL;
        g_autoptr (VgicList) writes = restore_of (shape, plpis, pri, 7 + pri, &saved);
        g_autoptr (GError) error = NULL;
        g_autoptr (VgicList) plan = NULL;
        g_autoptr (VgicValues) got = vgic_validate_writes (shape, writes->entries,
                                                           writes->len, &plan, &error);
        g_autoptr (VgicList) again = NULL;

        g_assert_no_error (error);
        g_assert_nonnull (got);
        again = vgic_plan_restore_write (shape, got, FALSE, &error);
        g_assert_no_error (error);
        g_assert_cmpuint (again->len, ==, writes->len);
        g_assert_cmpmem (again->entries, again->len * sizeof (VgicEntry), writes->entries,
                         writes->len * sizeof (VgicEntry));
        /* The plan handed back, which the restore lays out, is the list. */
        g_assert_nonnull (plan);
        g_assert_cmpmem (plan->entries, plan->len * sizeof (VgicEntry), writes->entries,
                         writes->len * sizeof (VgicEntry));
        /* The guards see the LPIs the list writes bases for. */
        {
          uint64_t typer = 0;

          g_assert_true (vgic_values_lookup (got, GRP_REDIST,
                                             vgic_attr (shape->mpidrs[0], GICR_TYPER), &typer));
          g_assert_cmpuint ((typer & GICR_TYPER_PLPIS) != 0, ==, plpis);
        }
        /* vgicd's own: the list itself, and the values the restore needs,
         * as the whole state has them. */
        {
          g_autoptr (VgicList) own = vgic_list_new_from (writes->entries, writes->len);
          g_autoptr (VgicValues) kept = vgic_validate_restore_list (shape, own, &error);

          g_assert_no_error (error);
          g_assert_cmpmem (own->entries, own->len * sizeof (VgicEntry), writes->entries,
                           writes->len * sizeof (VgicEntry));
          assert_kept_agrees (shape, kept, got);
        }
      }
}

/* Entry @k's reserved field is not 0: the comparison never looked at it,
 * so the list is accepted as before, and the plan vgicd lays out has 0
 * there, as a planned one (an executor refuses a list where it is not). */
static void
test_writes_reserved (void)
{
  g_autoptr (VgicShape) shape = shape_new (2, 96);
  g_autoptr (VgicValues) saved = NULL;
  g_autoptr (VgicList) writes = restore_of (shape, TRUE, 7, 5, &saved);
  g_autoptr (VgicList) own = vgic_list_new_from (writes->entries, writes->len);
  g_autoptr (VgicList) plan = NULL;
  g_autoptr (VgicValues) got = NULL;
  g_autoptr (VgicValues) kept = NULL;
  g_autoptr (GError) error = NULL;

  own->entries[3].reserved = 1;
  own->entries[own->len - 1].reserved = 0xffffffffu;
  got = vgic_validate_writes (shape, own->entries, own->len, &plan, &error);
  g_assert_no_error (error);
  g_assert_cmpmem (plan->entries, plan->len * sizeof (VgicEntry), writes->entries,
                   writes->len * sizeof (VgicEntry));
  kept = vgic_validate_restore_list (shape, own, &error);
  g_assert_no_error (error);
  g_assert_cmpmem (own->entries, own->len * sizeof (VgicEntry), writes->entries,
                   writes->len * sizeof (VgicEntry));
}

typedef enum {
  SWAP, VALUE, VALUE_AGAIN, CLEAR, SHORT, LONG, GROUP, WIDE, APART, IN_A_ROW, UNSAVED,
  BASES_LOST, BASES_LATE, BASES_ADDED, SRE,
} Damage;

/* Insert @e before write @k of @writes. */
static void
insert_write (VgicList *writes, guint k, VgicEntry e)
{
  vgic_list_append (writes, &e, 1);
  memmove (&writes->entries[k + 1], &writes->entries[k],
           (writes->len - 1 - k) * sizeof (VgicEntry));
  writes->entries[k] = e;
}

/* The position of the first write to (@group, @attr). */
static guint
find_write (const VgicList *writes, guint32 group, guint64 attr)
{
  for (guint k = 0; k < writes->len; k++)
    if (writes->entries[k].group == group && writes->entries[k].attr == attr)
      return k;
  g_assert_not_reached ();
}

/* What the refusal of a list whose write @k is @got where the plan has
 * @want says, word for word. */
static char *
differs_at (guint k, guint n, const VgicEntry *got, const VgicEntry *want)
{
  g_autofree char *g = vgic_reg_describe (got->group, got->attr);
  g_autofree char *w = vgic_reg_describe (want->group, want->attr);

  return g_strdup_printf ("QEMU's restore differs from the one vgicd plans at write %u of %u: "
                          "QEMU writes %s = 0x%" G_GINT64_MODIFIER "x, vgicd would write %s = "
                          "0x%" G_GINT64_MODIFIER "x; nothing written", k, n, g,
                          (guint64) got->value, w, (guint64) want->value);
}

static void
test_writes_refused (gconstpointer data)
{
  Damage how = GPOINTER_TO_INT (data);
  g_autoptr (VgicShape) shape = shape_new (4, 160);
  g_autoptr (VgicValues) saved = NULL;
  g_autoptr (VgicList) writes = restore_of (shape, how != BASES_ADDED, 6, 3, &saved);
  g_autoptr (GError) error = NULL;
  g_autoptr (GError) by_values = NULL;
  g_autoptr (VgicValues) got = NULL;
  g_autoptr (VgicValues) old = NULL;
  g_autoptr (VgicList) plan = NULL;
  g_autoptr (VgicList) planned = vgic_list_new_from (writes->entries, writes->len);
  g_autofree char *exact = NULL;
  VgicEntry *e = writes->entries;
  guint n = writes->len, k = n / 2;
  const char *want = "differs from the one vgicd plans";
  const guint64 irouter_33 = vgic_attr (0, GICD_IROUTER + 4 * 33);
  const guint64 propbaser_0 = vgic_attr (shape->mpidrs[0], GICR_PROPBASER);
  gint code = VGICD_ERROR_REGISTER_SET;

  switch (how)
    {
    case SWAP:	/* two writes out of order (an ordering rule broken) */
      while (e[k].group == e[k + 1].group && e[k].attr == e[k + 1].attr)
        k++;	/* (IROUTER's overlapping words repeat an access) */
      {
        VgicEntry t = e[k];
        e[k] = e[k + 1];
        e[k + 1] = t;
      }
      break;
    case VALUE:	/* a repeated register written two ways (IROUTER's overlap) */
      k = find_write (writes, GRP_DIST, irouter_33);
      e[k].value ^= 1;
      break;
    case VALUE_AGAIN:	/* ...the second of the two writes the one that differs */
      k = find_write (writes, GRP_DIST, irouter_33) + 1;
      g_assert_cmphex (e[k].attr, ==, irouter_33);
      e[k].value ^= 1;
      exact = differs_at (k, n, &e[k], &planned->entries[k]);
      break;
    case CLEAR:	/* a clear-all that clears less */
      for (k = 0; k < n; k++)
        if (e[k].group == GRP_REDIST && e[k].attr == vgic_attr (shape->mpidrs[1], GICR_ICENABLER0))
          break;
      g_assert_cmpuint (k, <, n);
      e[k].value = 1;
      break;
    case SHORT:	/* the last write missing */
      n--;
      want = "does not write a whole vGIC of this VM (missing register: ICC_AP1R0_EL1";
      break;
    case LONG:	/* one write more than a restore makes */
      {
        VgicEntry extra = e[0];
        vgic_list_append (writes, &extra, 1);
        e = writes->entries;
        n++;
      }
      break;
    case GROUP:	/* a write to the CTRL group */
      e[k].group = KVM_DEV_ARM_VGIC_GRP_CTRL;
      want = "is not a vGIC register group";
      break;
    case WIDE:	/* a 32-bit register given 64 bits */
      e[1].value |= 1ULL << 40;
      want = "is a 32-bit register";
      break;
    case APART:	/* a register written again, with its value, further on */
      insert_write (writes, k, e[0]);
      e = writes->entries;
      n++;
      exact = differs_at (k, n, &e[k], &planned->entries[k]);
      break;
    case IN_A_ROW:	/* written twice in a row, where the plan writes it once */
      insert_write (writes, 1, e[0]);
      e = writes->entries;
      n++;
      exact = differs_at (1, n, &e[1], &planned->entries[1]);
      break;
    case UNSAVED:	/* a register no save reads: a route QEMU misses */
      {
        VgicEntry route = { .group = GRP_DIST, .attr = vgic_attr (0, GICD_IROUTER + 8 * 150),
                            .value = 1 };

        g_assert_true (vgic_plan_is_route (shape, route.group, route.attr));
        insert_write (writes, k, route);
        e = writes->entries;
        n++;
        exact = differs_at (k, n, &e[k], &planned->entries[k]);
      }
      break;
    case BASES_LOST:	/* the LPI bases written, but vCPU 0's PROPBASER not */
      g_assert_cmphex (e[1].attr, ==, propbaser_0);
      memmove (&e[1], &e[2], (n - 2) * sizeof (VgicEntry));
      n--;
      exact = differs_at (1, n, &e[1], &planned->entries[1 + 4 * shape->nr_vcpus]);
      break;
    case BASES_LATE:	/* vCPU 0's bases after the others' (R1 holds, QEMU's order not) */
      {
        VgicEntry first4[4];

        memcpy (first4, &e[1], sizeof first4);
        memmove (&e[1], &e[5], 4 * (shape->nr_vcpus - 1) * sizeof (VgicEntry));
        memcpy (&e[1 + 4 * (shape->nr_vcpus - 1)], first4, sizeof first4);
        exact = differs_at (1, n, &e[1], &planned->entries[1]);
      }
      break;
    case BASES_ADDED:	/* a VM without LPIs, and vCPU 0's PROPBASER written */
      {
        VgicEntry base = { .group = GRP_REDIST, .attr = propbaser_0, .value = 0x1000 };

        insert_write (writes, 1, base);
        e = writes->entries;
        n++;
        want = "does not write a whole vGIC of this VM (missing register: ";
      }
      break;
    case SRE:	/* an ICC_SRE_EL1 the kernel refuses */
      k = find_write (writes, KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS,
                      vgic_attr (shape->mpidrs[2], ICC_SRE_EL1));
      e[k].value = 0x6;
      code = VGICD_ERROR_BAD_RECORD;
      exact = g_strdup ("QEMU's restore: vCPU 2's ICC_SRE_EL1 is 0x6, without SRE, which the "
                        "kernel refuses (a GICv3 guest's CPU interface always has it); "
                        "nothing written");
      break;
    }
  got = vgic_validate_writes (shape, e, n, &plan, &error);
  g_assert_null (got);
  g_assert_null (plan);
  g_assert_error (error, VGICD_ERROR, code);
  if (!strstr (error->message, want) && !exact)
    g_error ("\"%s\" not in: %s", want, error->message);
  g_assert_nonnull (strstr (error->message, "nothing written"));
  if (exact)
    g_assert_cmpstr (error->message, ==, exact);
  /* The walk refuses it, and the words are those of the comparison it
   * replaced, word for word. */
  g_assert_null (vgic_plan_check_restore (shape, e, n, NULL));
  old = vgic_validate_writes_by_values (shape, e, n, NULL, &by_values);
  g_assert_null (old);
  g_assert_error (by_values, error->domain, error->code);
  g_assert_cmpstr (error->message, ==, by_values->message);
}

/* The kinds of damage test_writes_walk_agrees() does to a list. */
enum {
  D_SWAP, D_FLIP, D_INSERT_COPY, D_DELETE, D_OVERWRITE, D_INSERT_SAVED, D_REPEAT,
  D_GICR_TYPER, D_DIST_OFFSET, D_TRUNCATE, D_DROP_PAIR_HALF, D_PAIR_DIFFERS, D_CLEAR_LESS,
  D_PRIBITS, D_SRE, D_GROUP, D_WIDE, D_BASES, D_RESERVED, D_NONE, N_DAMAGE
};

/* Damage @w the way @how says, at places drawn from @r (some draws leave
 * the list as it was: a swap of a write with itself, a pair not found). */
static void
damage (GRand *r, const VgicShape *shape, const VgicList *first, VgicList *w, guint how)
{
  const guint n = w->len;
  const guint k = g_rand_int_range (r, 0, n), j = g_rand_int_range (r, 0, n);
  VgicEntry *e = w->entries, x;

  switch (how)
    {
    case D_SWAP:
      x = e[k], e[k] = e[j], e[j] = x;
      break;
    case D_FLIP:
      e[k].value ^= 1u << g_rand_int_range (r, 0, 32);
      break;
    case D_INSERT_COPY:
      insert_write (w, k, e[j]);
      break;
    case D_DELETE:
      memmove (&e[k], &e[k + 1], (n - 1 - k) * sizeof x);
      vgic_list_truncate (w, n - 1);
      break;
    case D_OVERWRITE:
      e[k] = e[j];
      break;
    case D_INSERT_SAVED:	/* a register a save reads, with some value */
      x = first->entries[g_rand_int_range (r, 0, first->len)];
      x.value = g_rand_int (r) & 0xff;
      insert_write (w, k, x);
      break;
    case D_REPEAT:	/* a write repeated right after itself, maybe with another value */
      x = e[k];
      x.value ^= g_rand_boolean (r);
      insert_write (w, k + 1, x);
      break;
    case D_GICR_TYPER:	/* QEMU writing what only a save reads */
      e[k] = (VgicEntry) { .group = GRP_REDIST, .attr = vgic_attr (shape->mpidrs[0], GICR_TYPER) };
      break;
    case D_DIST_OFFSET:
      e[k] = (VgicEntry) { .group = GRP_DIST,
                           .attr = vgic_attr (0, g_rand_int_range (r, 0, 0x10000) & ~3u) };
      break;
    case D_TRUNCATE:
      vgic_list_truncate (w, k + 1);
      break;
    case D_DROP_PAIR_HALF:	/* one of QEMU's overlapping IROUTER words */
    case D_PAIR_DIFFERS:	/* ...or its second write another value */
      for (guint i = k; i + 1 < n; i++)
        if (e[i].group == e[i + 1].group && e[i].attr == e[i + 1].attr)
          {
            if (how == D_PAIR_DIFFERS)
              e[i + 1].value ^= 2;
            else
              {
                memmove (&e[i], &e[i + 1], (n - 1 - i) * sizeof x);
                vgic_list_truncate (w, n - 1);
              }
            break;
          }
      break;
    case D_CLEAR_LESS:	/* a clear-all that clears less */
      for (guint i = k; i < n; i++)
        if (e[i].value == 0xffffffffu)
          {
            e[i].value = g_rand_int (r) >> 1;
            break;
          }
      break;
    case D_PRIBITS:	/* a vCPU's ICC_CTLR_EL1 asking for other APRs */
    case D_SRE:	/* ...or its ICC_SRE_EL1 without SRE */
      {
        const uint32_t cpu = g_rand_int_range (r, 0, shape->nr_vcpus);
        const uint64_t attr = vgic_attr (shape->mpidrs[cpu],
                                         how == D_SRE ? ICC_SRE_EL1 : ICC_CTLR_EL1);

        for (guint i = 0; i < n; i++)
          if (e[i].group == KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS && e[i].attr == attr)
            {
              if (how == D_SRE)
                e[i].value &= ~ICC_SRE_EL1_SRE;
              else
                e[i].value ^= (uint64_t) g_rand_int_range (r, 1, 8) << ICC_CTLR_EL1_PRIBITS_SHIFT;
              break;
            }
      }
      break;
    case D_GROUP:
      e[k].group = g_rand_int_range (r, 0, 12);
      break;
    case D_WIDE:
      e[k].value |= 1ULL << g_rand_int_range (r, 32, 64);
      break;
    case D_BASES:	/* vCPU 0's PROPBASER added where there are none, or taken away */
      if (e[1].group == GRP_REDIST && e[1].attr == vgic_attr (shape->mpidrs[0], GICR_PROPBASER))
        {
          x = e[1];
          memmove (&e[1], &e[2], (n - 2) * sizeof x);
          if (g_rand_boolean (r))
            e[n - 1] = x;	/* moved to the end */
          else
            vgic_list_truncate (w, n - 1);
        }
      else
        insert_write (w, 1, (VgicEntry) { .group = GRP_REDIST, .value = 0x1000,
                                          .attr = vgic_attr (shape->mpidrs[0], GICR_PROPBASER) });
      break;
    case D_RESERVED:	/* not looked at: the list is still the restore */
      e[k].reserved = g_rand_int (r) | 1;
      break;
    }
}

/* The walk against the comparison it replaced (vgic_validate_writes_by_values()),
 * on lists damaged at random, every kind of damage a few hundred times, on
 * VMs with and without LPIs, with each APR count, in both of QEMU's put
 * orders (VgicPutOrder): the same verdict
 * always; for a refusal, the same error, word for word; for a list
 * accepted, the same plan and values, and the list is exactly the restore
 * the planner makes of those values. */
static void
test_writes_walk_agrees (void)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (20261205);
  guint lists = 0, accepted = 0, refused_by[N_DAMAGE] = { 0 };

  for (guint vcpus = 1; vcpus <= 8; vcpus *= 2)
    for (int plpis = 0; plpis < 2; plpis++)
      for (guint pri = 5; pri <= 7; pri++)
        for (VgicPutOrder order = VGIC_PUT_CLEAR_PENDING; order <= VGIC_PUT_SET_PENDING; order++)
          {
            g_autoptr (VgicShape) shape = shape_new (vcpus, 96 + 32 * vcpus);
            g_autoptr (VgicValues) saved = NULL;
            g_autoptr (VgicList) put10 = restore_of (shape, plpis, pri, vcpus * 7 + pri, &saved);
            g_autoptr (VgicList) put = vgic_plan_restore_write_in (shape, saved, FALSE, order, NULL);
            g_autoptr (VgicList) first = vgic_plan_save_first (shape);

            /* QEMU 10.0's order is vgicd's own plan. */
            if (order == VGIC_PUT_CLEAR_PENDING)
              g_assert_cmpmem (put->entries, put->len * sizeof (VgicEntry), put10->entries,
                               put10->len * sizeof (VgicEntry));

            for (guint t = 0; t < 300; t++)
              {
                const guint how = t < N_DAMAGE * 10 ? t % N_DAMAGE
                                                    : (guint) g_rand_int_range (r, 0, N_DAMAGE);
                g_autoptr (VgicList) w = vgic_list_new_from (put->entries, put->len);
                g_autoptr (GError) e_old = NULL;
                g_autoptr (GError) e_new = NULL;
                g_autoptr (VgicList) p_old = NULL;
                g_autoptr (VgicList) p_new = NULL;
                g_autoptr (VgicValues) v_old = NULL;
                g_autoptr (VgicValues) v_new = NULL;
                g_autoptr (VgicValues) walked = NULL;

                damage (r, shape, first, w, how);
                walked = vgic_plan_check_restore (shape, w->entries, w->len, NULL);
                v_old = vgic_validate_writes_by_values (shape, w->entries, w->len, &p_old, &e_old);
                v_new = vgic_validate_writes (shape, w->entries, w->len, &p_new, &e_new);
                lists++;
                if (!v_old != !walked || !v_old != !v_new)
                  g_error ("damage %u: the comparison %s, the walk %s: %s", how,
                           v_old ? "accepts" : "refuses", walked ? "accepts" : "refuses",
                           e_old ? e_old->message : e_new ? e_new->message : "");
                if (!v_old)
                  {
                    g_assert_error (e_new, e_old->domain, e_old->code);
                    g_assert_cmpstr (e_new->message, ==, e_old->message);
                    refused_by[how]++;
                    continue;
                  }
                accepted++;
                g_assert_no_error (e_new);
                g_assert_cmpuint (p_new->len, ==, w->len);
                g_assert_cmpmem (p_new->entries, p_new->len * sizeof (VgicEntry), p_old->entries,
                                 p_old->len * sizeof (VgicEntry));
                g_assert_cmpuint (vgic_values_size (v_new), ==, vgic_values_size (v_old));
                for (gsize i = 0; i < vgic_values_size (v_new); i++)
                  g_assert_cmpmem (vgic_values_at (v_new, i), sizeof (VgicEntry),
                                   vgic_values_at (v_old, i), sizeof (VgicEntry));
                assert_kept_agrees (shape, walked, v_old);
                {
                  g_autoptr (GError) error = NULL;
                  g_autoptr (VgicList) again =
                    vgic_plan_restore_write_in (shape, v_new, FALSE,
                                                vgic_plan_put_order (shape, w->entries, w->len),
                                                &error);

                  g_assert_no_error (error);
                  g_assert_cmpmem (again->entries, again->len * sizeof (VgicEntry),
                                   p_new->entries, p_new->len * sizeof (VgicEntry));
                }
              }
          }
  g_test_message ("%u damaged lists: the same verdict and words; %u accepted", lists, accepted);
  /* Every kind of damage but the harmless ones was refused somewhere. */
  for (guint how = 0; how < N_DAMAGE; how++)
    if (how != D_RESERVED && how != D_NONE)
      g_assert_cmpuint (refused_by[how], >, 0);
  g_assert_cmpuint (refused_by[D_RESERVED] + refused_by[D_NONE], ==, 0);
  g_assert_cmpuint (accepted, >, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/validate/record/with-and-without-plan", test_record_with_and_without_plan);
  g_test_add_func ("/validate/record/other-vm", test_record_other_vm);
  g_test_add_func ("/validate/guards-agree-with-destination-check",
                   test_guards_agree_with_destination_check);
  g_test_add_func ("/validate/ctlr-guards-agree-with-kernel", test_ctlr_guards_agree_with_kernel);
  g_test_add_func ("/validate/sre-refused", test_sre_refused);
  g_test_add_func ("/validate/results", test_results);
  g_test_add_func ("/validate/colliding-entries", test_colliding_entries);
  g_test_add_func ("/validate/writes/round-trip", test_writes_round_trip);
  g_test_add_data_func ("/validate/writes/out-of-order", GINT_TO_POINTER (SWAP), test_writes_refused);
  g_test_add_data_func ("/validate/writes/irouter-overlap-disagrees", GINT_TO_POINTER (VALUE),
                        test_writes_refused);
  g_test_add_data_func ("/validate/writes/clear-all-clears-less", GINT_TO_POINTER (CLEAR),
                        test_writes_refused);
  g_test_add_data_func ("/validate/writes/one-short", GINT_TO_POINTER (SHORT), test_writes_refused);
  g_test_add_data_func ("/validate/writes/one-more", GINT_TO_POINTER (LONG), test_writes_refused);
  g_test_add_data_func ("/validate/writes/ctrl-group", GINT_TO_POINTER (GROUP), test_writes_refused);
  g_test_add_data_func ("/validate/writes/wide-value", GINT_TO_POINTER (WIDE), test_writes_refused);
  g_test_add_data_func ("/validate/writes/irouter-overlap-repeat-differs",
                        GINT_TO_POINTER (VALUE_AGAIN), test_writes_refused);
  g_test_add_data_func ("/validate/writes/register-again-apart", GINT_TO_POINTER (APART),
                        test_writes_refused);
  g_test_add_data_func ("/validate/writes/register-twice-in-a-row", GINT_TO_POINTER (IN_A_ROW),
                        test_writes_refused);
  g_test_add_data_func ("/validate/writes/register-no-save-reads", GINT_TO_POINTER (UNSAVED),
                        test_writes_refused);
  g_test_add_data_func ("/validate/writes/bases-without-vcpu0-propbaser",
                        GINT_TO_POINTER (BASES_LOST), test_writes_refused);
  g_test_add_data_func ("/validate/writes/vcpu0-bases-last", GINT_TO_POINTER (BASES_LATE),
                        test_writes_refused);
  g_test_add_data_func ("/validate/writes/propbaser-without-lpis", GINT_TO_POINTER (BASES_ADDED),
                        test_writes_refused);
  g_test_add_data_func ("/validate/writes/sre-clear", GINT_TO_POINTER (SRE), test_writes_refused);
  g_test_add_func ("/validate/writes/reserved-field", test_writes_reserved);
  g_test_add_func ("/validate/writes/walk-agrees-with-comparison", test_writes_walk_agrees);
  g_test_add_func ("/validate/width", test_width);
  return g_test_run ();
}
