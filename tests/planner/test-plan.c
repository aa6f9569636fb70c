/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-plan.c - the planner against the access-count formulas of
 * docs/kernel-interface.md over a grid of shapes, the restore ordering
 * rules asserted on the generated plans, and the save's fast paths (the
 * guessed round 2, the shape round 1 says, the record's register list).
 */
#include "fake-save.h"
#include "vgic-plan.h"
#include "vgic-regs.h"
#include "vgic-validate.h"

#define GRP_DIST KVM_DEV_ARM_VGIC_GRP_DIST_REGS
#define GRP_REDIST KVM_DEV_ARM_VGIC_GRP_REDIST_REGS
#define GRP_SYSREG KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS
#define GRP_LEVEL KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO

typedef VgicEntry Entry;

static const guint grid_vcpus[] = { 1, 2, 4, 64, 160, 512 };
static const guint grid_irqs[] = { 64, 288, 992 };
static const guint grid_pribits[] = { 5, 6, 7 };

static guint
apr_for_pribits (guint pri_bits)
{
  return pri_bits == 7 ? 4 : pri_bits == 6 ? 2 : 1;
}

typedef struct {
  VgicList *reads;	/* round 1, then round 2 */
  guint n_first;	/* reads of round 1 */
  VgicValues *state;
} Saved;

static void
saved_clear (Saved *s)
{
  g_clear_pointer (&s->reads, vgic_list_unref);
  g_clear_pointer (&s->state, vgic_values_free);
}

static guint
n_second (const Saved *s)
{
  return s->reads->len - s->n_first;
}

/* A save of @shape as vgicd would run it, with made-up values. */
static void
make_save (const VgicShape *shape, gboolean plpis, guint pri_bits, guint32 seed,
           Saved *out)
{
  g_autoptr (GError) error = NULL;

  out->reads = fake_save (shape, plpis, pri_bits, seed, &out->n_first);
  out->state = vgic_values_from_reads (out->reads->entries,
                                       out->reads->len, &error);
  g_assert_no_error (error);
}

static VgicShape *
grid_shape (guint vcpus, guint irqs)
{
  g_autoptr (GError) error = NULL;
  VgicShape *shape = vgic_shape_new (irqs, vcpus, NULL, &error);

  g_assert_no_error (error);
  return shape;
}

/* The destination's answers to the restore's guard reads, for @state:
 * its CPU interfaces are the source's (the same host). */
static VgicValues *
make_check (const VgicShape *shape, const VgicValues *state, gboolean plpis, guint itlines)
{
  g_autoptr (VgicList) check = vgic_validate_guards (shape, state);
  g_autoptr (GError) error = NULL;
  VgicValues *values;

  for (guint i = 0; i < check->len; i++)
    {
      Entry *e = &check->entries[i];
      if (e->group == GRP_DIST)
        e->value = itlines;
      else if (e->group == GRP_SYSREG)
        {
          uint64_t v = 0;

          g_assert_true (vgic_values_lookup (state, e->group, e->attr, &v));
          e->value = v;
        }
      else if (vgic_attr_low (e->attr) == GICR_TYPER)
        e->value = plpis ? GICR_TYPER_PLPIS : 0;
    }
  values = vgic_values_new (check->entries, check->len, &error);
  g_assert_no_error (error);
  return values;
}

static VgicList *
make_restore (const VgicShape *shape, const Saved *saved, gboolean plpis)
{
  g_autoptr (VgicValues) check = make_check (shape, saved->state, plpis, 31);
  g_autoptr (GError) error = NULL;
  VgicList *write;

  g_assert_true (vgic_validate_destination (shape, saved->state, check, &error));
  write = vgic_plan_restore_write (shape, saved->state, FALSE, &error);
  g_assert_no_error (error);
  return write;
}

/* ------------------------------------------------------------------ */

static void
test_counts_grid (void)
{
  guint shapes = 0;

  for (guint a = 0; a < G_N_ELEMENTS (grid_vcpus); a++)
    for (guint b = 0; b < G_N_ELEMENTS (grid_irqs); b++)
      for (int plpis = 0; plpis <= 1; plpis++)
        for (guint c = 0; c < G_N_ELEMENTS (grid_pribits); c++)
          {
            g_autoptr (VgicShape) shape = grid_shape (grid_vcpus[a], grid_irqs[b]);
            g_autoptr (VgicList) check = vgic_plan_restore_check (shape);
            g_autoptr (VgicList) write = NULL;
            Saved saved = { 0 };
            guint apr = apr_for_pribits (grid_pribits[c]);

            make_save (shape, plpis, grid_pribits[c], a * 100 + b * 10 + c, &saved);
            g_assert_cmpuint (saved.reads->len, ==,
                              vgic_plan_save_count (shape, plpis, apr));
            /* Round 2 holds exactly the bases and the APRs. */
            g_assert_cmpuint (n_second (&saved), ==,
                              shape->nr_vcpus * (2 * apr + 4 * plpis));

            write = make_restore (shape, &saved, plpis);
            g_assert_cmpuint (check->len, ==, 3);
            g_assert_cmpuint (check->len + write->len, ==,
                              vgic_plan_restore_count (shape, plpis, apr));
            saved_clear (&saved);
            shapes++;
          }
  g_assert_cmpuint (shapes, ==, 6 * 3 * 2 * 3);
}

/* What vgic_plan_check_restore() keeps of @write must be what @state
 * holds: vCPU 0's GICR_TYPER.PLPIS and every vCPU's ICC_CTLR_EL1. */
static void
assert_kept (const VgicShape *shape, const VgicValues *kept, const VgicValues *state)
{
  uint64_t got, want;

  g_assert_cmpuint (vgic_values_size (kept), ==, shape->nr_vcpus + 1);
  g_assert_true (vgic_values_lookup (kept, GRP_REDIST, vgic_attr (shape->mpidrs[0], GICR_TYPER),
                                     &got));
  g_assert_true (vgic_values_lookup (state, GRP_REDIST,
                                     vgic_attr (shape->mpidrs[0], GICR_TYPER), &want));
  g_assert_cmphex (got, ==, want & GICR_TYPER_PLPIS);
  for (guint cpu = 0; cpu < shape->nr_vcpus; cpu++)
    {
      const uint64_t attr = vgic_attr (shape->mpidrs[cpu], ICC_CTLR_EL1);

      g_assert_true (vgic_values_lookup (kept, GRP_SYSREG, attr, &got));
      g_assert_true (vgic_values_lookup (state, GRP_SYSREG, attr, &want));
      g_assert_cmphex (got, ==, want);
    }
}

/* The check of QEMU's restore walks the planner's own order: every restore
 * the planner writes over the grid passes it as it is, and it keeps the
 * values the restore is judged by; one write fewer or one more does not
 * pass. */
static void
test_restore_check_walks_the_plan (void)
{
  for (guint a = 0; a < G_N_ELEMENTS (grid_vcpus); a++)
    for (guint b = 0; b < G_N_ELEMENTS (grid_irqs); b++)
      for (int plpis = 0; plpis <= 1; plpis++)
        for (guint c = 0; c < G_N_ELEMENTS (grid_pribits); c++)
          {
            g_autoptr (VgicShape) shape = grid_shape (grid_vcpus[a], grid_irqs[b]);
            g_autoptr (VgicList) write = NULL;
            g_autoptr (VgicList) longer = NULL;
            g_autoptr (VgicValues) kept = NULL;
            g_autoptr (GError) error = NULL;
            Saved saved = { 0 };

            make_save (shape, plpis, grid_pribits[c], a * 100 + b * 10 + c, &saved);
            write = make_restore (shape, &saved, plpis);
            kept = vgic_plan_check_restore (shape, write->entries, write->len, &error);
            g_assert_no_error (error);
            assert_kept (shape, kept, saved.state);
            g_clear_pointer (&kept, vgic_values_free);

            g_assert_null (vgic_plan_check_restore (shape, write->entries, write->len - 1,
                                                    &error));
            g_assert_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET);
            g_clear_error (&error);
            longer = vgic_list_new_from (write->entries, write->len);
            vgic_list_append (longer, &write->entries[0], 1);
            g_assert_null (vgic_plan_check_restore (shape, longer->entries, longer->len,
                                                    &error));
            g_assert_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET);
            saved_clear (&saved);
          }
}

/* Is @e one of a restore's pending clear-alls (rule R5)? */
static gboolean
is_pending_clear (const Entry *e)
{
  if (e->group == GRP_DIST)
    return vgic_attr_low (e->attr) >= GICD_ICPENDR &&
           vgic_attr_low (e->attr) < GICD_ICPENDR + 0x80;
  /* Every redistributor write is one of the VM's vCPUs'. */
  return e->group == GRP_REDIST && vgic_attr_low (e->attr) == GICR_ICPENDR0;
}

/* @write without the pending clear-alls that @keep refuses (every one when
 * @keep is NULL): QEMU 10.2's put leaves them all out. */
static VgicList *
without_pending_clears (const VgicShape *shape, const VgicList *write,
                        gboolean (*keep) (const VgicShape *shape, const Entry *e))
{
  VgicList *out = vgic_list_new (write->len);

  for (guint i = 0; i < write->len; i++)
    if (!is_pending_clear (&write->entries[i]) ||
        (keep && keep (shape, &write->entries[i])))
      vgic_list_append (out, &write->entries[i], 1);
  return out;
}

static gboolean
keep_dist (const VgicShape *shape, const Entry *e)
{
  return e->group == GRP_DIST;
}

static gboolean
keep_vcpu0 (const VgicShape *shape, const Entry *e)
{
  return e->attr == vgic_attr (shape->mpidrs[0], GICR_ICPENDR0);
}

static gboolean
keep_not_vcpu0 (const VgicShape *shape, const Entry *e)
{
  return e->group == GRP_DIST || !keep_vcpu0 (shape, e);
}

/* QEMU 10.2's put order: QEMU 10.0's without a clear-all before any
 * pending register.  The planner's list of that order is QEMU 10.0's with
 * those writes taken out; the check takes it, keeping the same values, and
 * says which order each list has; a list that leaves out some of the
 * clears (the distributor's, vCPU 0's, or every vCPU's but vCPU 0's) is
 * neither order and is refused. */
static void
test_restore_check_put_orders (void)
{
  for (guint a = 0; a < G_N_ELEMENTS (grid_vcpus); a++)
    for (guint b = 0; b < G_N_ELEMENTS (grid_irqs); b++)
      for (int plpis = 0; plpis <= 1; plpis++)
        {
          g_autoptr (VgicShape) shape = grid_shape (grid_vcpus[a], grid_irqs[b]);
          g_autoptr (VgicList) write = NULL;
          g_autoptr (VgicList) set_only = NULL;
          g_autoptr (VgicList) planned = NULL;
          g_autoptr (VgicValues) kept = NULL;
          g_autoptr (GError) error = NULL;
          gboolean (*mixed[]) (const VgicShape *, const Entry *) = {
            keep_dist, keep_vcpu0, keep_not_vcpu0,
          };
          Saved saved = { 0 };

          make_save (shape, plpis, 5, a * 10 + b, &saved);
          write = make_restore (shape, &saved, plpis);
          set_only = without_pending_clears (shape, write, NULL);
          g_assert_cmpuint (set_only->len, ==,
                            write->len - shape->nr_vcpus - vgic_shape_spi_words (shape, 1));
          planned = vgic_plan_restore_write_in (shape, saved.state, FALSE,
                                                VGIC_PUT_SET_PENDING, &error);
          g_assert_no_error (error);
          g_assert_cmpmem (planned->entries, planned->len * sizeof (Entry),
                           set_only->entries, set_only->len * sizeof (Entry));
          g_assert_cmpint (vgic_plan_put_order (shape, write->entries, write->len), ==,
                           VGIC_PUT_CLEAR_PENDING);
          g_assert_cmpint (vgic_plan_put_order (shape, set_only->entries, set_only->len), ==,
                           VGIC_PUT_SET_PENDING);
          kept = vgic_plan_check_restore (shape, set_only->entries, set_only->len, &error);
          g_assert_no_error (error);
          assert_kept (shape, kept, saved.state);

          for (guint m = 0; m < G_N_ELEMENTS (mixed); m++)
            {
              g_autoptr (VgicList) bad = without_pending_clears (shape, write, mixed[m]);

              g_assert_cmpuint (bad->len, <, write->len);
              g_assert_cmpuint (bad->len, >, set_only->len);
              g_assert_null (vgic_plan_check_restore (shape, bad->entries, bad->len, &error));
              g_assert_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET);
              g_clear_error (&error);
            }
          saved_clear (&saved);
        }
}

/* Each vCPU's APRs as its own ICC_CTLR_EL1 says, in the check as in the
 * plan: a vCPU's CTLR that asks for other APRs than its list writes is
 * refused, in both directions. */
static void
test_restore_check_apr_per_vcpu (void)
{
  g_autoptr (VgicShape) shape = grid_shape (3, 64);
  g_autoptr (VgicList) reads = vgic_plan_save_first (shape);
  g_autoptr (VgicList) second = NULL;
  g_autoptr (VgicValues) first = NULL;
  g_autoptr (VgicValues) state = NULL;
  g_autoptr (VgicList) write = NULL;
  g_autoptr (VgicValues) kept = NULL;
  g_autoptr (GError) error = NULL;
  static const guint bits[] = { 7, 5, 6 };

  fake_save_fill (reads, 9, TRUE, 5);
  for (guint i = 0; i < reads->len; i++)
    {
      Entry *e = &reads->entries[i];

      if (e->group == GRP_SYSREG && vgic_attr_low (e->attr) == ICC_CTLR_EL1)
        for (guint c = 0; c < 3; c++)
          if (vgic_attr_mpidr (e->attr) == shape->mpidrs[c])
            e->value = (e->value & ~ICC_CTLR_EL1_PRIBITS_MASK) |
                       (uint64_t) (bits[c] - 1) << ICC_CTLR_EL1_PRIBITS_SHIFT;
    }
  first = vgic_values_from_reads (reads->entries, reads->len, &error);
  g_assert_no_error (error);
  second = vgic_plan_save_second (shape, first, &error);
  g_assert_no_error (error);
  fake_save_fill (second, 9, TRUE, 5);
  vgic_list_append (reads, second->entries, second->len);
  state = vgic_values_from_reads (reads->entries, reads->len, &error);
  g_assert_no_error (error);
  write = vgic_plan_restore_write (shape, state, FALSE, &error);
  g_assert_no_error (error);
  kept = vgic_plan_check_restore (shape, write->entries, write->len, &error);
  g_assert_no_error (error);
  assert_kept (shape, kept, state);

  /* vCPU 1's CTLR asks for 4 APRs, or vCPU 0's for 1, where the list
   * writes its own count. */
  for (guint c = 0; c < 2; c++)
    {
      g_autoptr (VgicList) bad = vgic_list_new_from (write->entries, write->len);
      const uint64_t attr = vgic_attr (shape->mpidrs[c], ICC_CTLR_EL1);
      guint k;

      for (k = 0; k < bad->len; k++)
        if (bad->entries[k].group == GRP_SYSREG && bad->entries[k].attr == attr)
          break;
      g_assert_cmpuint (k, <, bad->len);
      bad->entries[k].value = (bad->entries[k].value & ~ICC_CTLR_EL1_PRIBITS_MASK) |
                              (uint64_t) (c == 0 ? 4 : 6) << ICC_CTLR_EL1_PRIBITS_SHIFT;
      g_assert_null (vgic_plan_check_restore (shape, bad->entries, bad->len, &error));
      g_assert_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET);
      g_clear_error (&error);
    }
}

/* The closed forms themselves, against the literal totals of the facts
 * table (a planner bug and a formula bug would otherwise cancel out). */
static void
test_counts_facts_table (void)
{
  static const struct { guint vcpus, irqs, apr, put, get; } table[] = {
    { 160, 992, 1, 7745, 7175 },
    { 160, 992, 4, 8705, 8135 },
    { 160, 288, 1, 5941, 5437 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (table); i++)
    {
      g_autoptr (VgicShape) shape = grid_shape (table[i].vcpus, table[i].irqs);
      guint pri_bits = table[i].apr == 4 ? 7 : 5;
      Saved saved = { 0 };
      g_autoptr (VgicList) write = NULL;

      make_save (shape, TRUE, pri_bits, i, &saved);
      write = make_restore (shape, &saved, TRUE);
      g_assert_cmpuint (saved.reads->len, ==, table[i].get);
      g_assert_cmpuint (3 + write->len, ==, table[i].put);
      g_test_message ("%u vCPUs, N=%u, P=1, A=%u: put %u, get %u", table[i].vcpus,
                      table[i].irqs, table[i].apr, 3 + write->len,
                      saved.reads->len);
      saved_clear (&saved);
    }
}

/* ------------------------------------------------------------------ */
/* Save rounds                                                        */
/* ------------------------------------------------------------------ */

static gboolean
is_apr (const Entry *e)
{
  uint32_t low = vgic_attr_low (e->attr);

  if (e->group != GRP_SYSREG)
    return FALSE;
  for (guint n = 0; n < 4; n++)
    if (low == ICC_AP0R_EL1 (n) || low == ICC_AP1R_EL1 (n))
      return TRUE;
  return FALSE;
}

static gboolean
is_base (const Entry *e)
{
  uint32_t low = vgic_attr_low (e->attr);

  return e->group == GRP_REDIST && low >= GICR_PROPBASER && low < GICR_PENDBASER + 8;
}

static void
test_save_rounds (void)
{
  g_autoptr (VgicShape) shape = grid_shape (64, 288);
  Saved saved = { 0 };
  guint ctlrs = 0, typers = 0;

  make_save (shape, TRUE, 6, 7, &saved);
  for (guint i = 0; i < saved.n_first; i++)
    {
      const Entry *e = &saved.reads->entries[i];

      /* Round 1 never depends on a value... */
      g_assert_false (is_apr (e));
      g_assert_false (is_base (e));
      /* ...and reads what round 2 depends on. */
      if (e->group == GRP_SYSREG && vgic_attr_low (e->attr) == ICC_CTLR_EL1)
        ctlrs++;
      if ((e->group == GRP_DIST && vgic_attr_low (e->attr) == GICD_TYPER) ||
          (e->group == GRP_REDIST && (vgic_attr_low (e->attr) & ~4u) == GICR_TYPER))
        typers++;
    }
  g_assert_cmpuint (ctlrs, ==, shape->nr_vcpus);
  g_assert_cmpuint (typers, ==, 3);
  for (guint i = saved.n_first; i < saved.reads->len; i++)
    {
      const Entry *e = &saved.reads->entries[i];
      g_assert_true (is_apr (e) || is_base (e));
    }
  saved_clear (&saved);
}

/* Mixed PRIbits across vCPUs: each vCPU gets the APRs of its own CTLR. */
static void
test_save_apr_per_vcpu (void)
{
  g_autoptr (VgicShape) shape = grid_shape (3, 64);
  g_autoptr (VgicList) first = vgic_plan_save_first (shape);
  g_autoptr (VgicList) second = NULL;
  g_autoptr (VgicValues) values = NULL;
  g_autoptr (GError) error = NULL;
  static const guint bits[] = { 5, 6, 7 };
  guint per_cpu[3] = { 0 };

  for (guint i = 0; i < first->len; i++)
    {
      Entry *e = &first->entries[i];
      if (e->group == GRP_SYSREG && vgic_attr_low (e->attr) == ICC_CTLR_EL1)
        for (guint c = 0; c < 3; c++)
          if (vgic_attr_mpidr (e->attr) == shape->mpidrs[c])
            e->value = (uint64_t) (bits[c] - 1) << ICC_CTLR_EL1_PRIBITS_SHIFT;
    }
  values = vgic_values_from_reads (first->entries, first->len, &error);
  g_assert_no_error (error);
  second = vgic_plan_save_second (shape, values, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < second->len; i++)
    {
      const Entry *e = &second->entries[i];
      for (guint c = 0; c < 3; c++)
        if (vgic_attr_mpidr (e->attr) == shape->mpidrs[c])
          per_cpu[c]++;
    }
  /* GICR_TYPER read 0: no PLPIS, so APRs only. */
  g_assert_cmpuint (per_cpu[0], ==, 2);
  g_assert_cmpuint (per_cpu[1], ==, 4);
  g_assert_cmpuint (per_cpu[2], ==, 8);
}

/* QEMU's get order (vgic_plan_save_qemu_order()): every read of both
 * rounds once, the LPI bases right before GICD_STATUSR (after the last
 * redistributor register), each vCPU's APRs right after its ICC_BPR1_EL1
 * (before the next vCPU's ICC_SRE_EL1), and round 1's order kept. */
static void
test_save_qemu_order (void)
{
  static const guint vcpus[] = { 1, 4, 160 };

  for (guint v = 0; v < G_N_ELEMENTS (vcpus); v++)
    for (guint plpis = 0; plpis < 2; plpis++)
      for (guint pri = 5; pri <= 7; pri += 2)
        {
          g_autoptr (VgicShape) shape = grid_shape (vcpus[v], 288);
          Saved saved = { 0 };
          g_autoptr (VgicList) first = NULL;
          g_autoptr (VgicList) second = NULL;
          g_autoptr (VgicList) q = NULL;
          guint statusr = G_MAXUINT, in_first = 0, bases = 0, aprs = 0;

          make_save (shape, plpis, pri, 7 + v, &saved);
          first = vgic_list_new_from (saved.reads->entries, saved.n_first);
          second = vgic_list_new_from (saved.reads->entries + saved.n_first, n_second (&saved));
          q = vgic_plan_save_qemu_order (first, second);
          g_assert_cmpuint (q->len, ==, saved.reads->len);
          for (guint i = 0; i < q->len; i++)
            {
              const Entry *e = &q->entries[i];
              uint32_t reg = vgic_attr_low (e->attr);

              if (e->group == GRP_DIST && e->attr == GICD_STATUSR)
                statusr = i;
              if (e->group == GRP_REDIST &&
                  (reg == GICR_PROPBASER || reg == GICR_PENDBASER ||
                   reg == GICR_PROPBASER + 4 || reg == GICR_PENDBASER + 4))
                {
                  /* Between the redistributors and the distributor. */
                  g_assert_cmpuint (statusr, ==, G_MAXUINT);
                  g_assert_true (i > 0 && (q->entries[i - 1].group == GRP_REDIST ||
                                           q->entries[i - 1].group == GRP_LEVEL));
                  bases++;
                  continue;
                }
              if (is_apr (e))
                {
                  /* After this vCPU's ICC_BPR1_EL1, or another of its APRs. */
                  const Entry *prev = &q->entries[i - 1];
                  uint32_t prev_reg = vgic_attr_low (prev->attr);

                  g_assert_cmpuint (prev->group, ==, GRP_SYSREG);
                  g_assert_cmpuint (vgic_attr_mpidr (prev->attr), ==, vgic_attr_mpidr (e->attr));
                  g_assert_true (prev_reg == ICC_BPR1_EL1 || is_apr (prev));
                  g_assert_true (i + 1 == q->len ||
                                 vgic_attr_low (q->entries[i + 1].attr) == ICC_SRE_EL1 ||
                                 vgic_attr_mpidr (q->entries[i + 1].attr) == vgic_attr_mpidr (e->attr));
                  aprs++;
                  continue;
                }
              /* Round 1's reads keep their order. */
              g_assert_cmpuint (e->group, ==, first->entries[in_first].group);
              g_assert_cmpuint (e->attr, ==, first->entries[in_first].attr);
              in_first++;
            }
          g_assert_cmpuint (in_first, ==, first->len);
          g_assert_cmpuint (bases + aprs, ==, second->len);
          g_assert_cmpuint (bases, ==, plpis ? 4 * vcpus[v] : 0);
          g_assert_cmpuint (statusr, <, q->len);
          saved_clear (&saved);
        }
}

static void
test_save_second_needs_first (void)
{
  g_autoptr (VgicShape) shape = grid_shape (2, 64);
  Entry only_gicd = { .group = GRP_DIST, .attr = vgic_attr (0, GICD_TYPER) };
  g_autoptr (VgicValues) values = vgic_values_new (&only_gicd, 1, NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicList) second = vgic_plan_save_second (shape, values, &error);

  g_assert_null (second);
  g_assert_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET);
  g_assert_nonnull (strstr (error->message, "GICR_TYPER lo"));
}

/* ------------------------------------------------------------------ */
/* Restore ordering rules, asserted on generated plans                */
/* ------------------------------------------------------------------ */

/* Position of the first/last access matching (group, attr) in @plan. */
static int
find_first (VgicList *plan, uint32_t group, uint64_t attr)
{
  for (guint i = 0; i < plan->len; i++)
    {
      const Entry *e = &plan->entries[i];
      if (e->group == group && e->attr == attr)
        return (int) i;
    }
  return -1;
}

typedef struct {
  VgicShape *shape;
  Saved saved;
  VgicList *write;
} RestoreFixture;

static void
restore_setup (RestoreFixture *f, gconstpointer data)
{
  guint pri_bits = GPOINTER_TO_UINT (data);

  f->shape = grid_shape (8, 288);
  make_save (f->shape, TRUE, pri_bits, 42, &f->saved);
  f->write = make_restore (f->shape, &f->saved, TRUE);
}

static void
restore_teardown (RestoreFixture *f, gconstpointer data)
{
  saved_clear (&f->saved);
  vgic_list_unref (f->write);
  vgic_shape_free (f->shape);
}

/* Whether @e is a write that can queue an interrupt on a vCPU (rule R0):
 * the set-enable, group, set-pending and set-active words of the distributor
 * and of each redistributor, every line level (whatever its value, which is
 * stricter than the rule) and each GICR_CTLR (EnableLPIs). */
static gboolean
is_queueing_write (const Entry *e)
{
  uint32_t low = vgic_attr_low (e->attr);

  switch (e->group)
    {
    case GRP_DIST:
      return (low >= GICD_IGROUPR && low < GICD_IGROUPR + 0x80) ||
             (low >= GICD_ISENABLER && low < GICD_ISENABLER + 0x80) ||
             (low >= GICD_ISPENDR && low < GICD_ISPENDR + 0x80) ||
             (low >= GICD_ISACTIVER && low < GICD_ISACTIVER + 0x80);
    case GRP_REDIST:
      return low == GICR_IGROUPR0 || low == GICR_ISENABLER0 || low == GICR_ISPENDR0 ||
             low == GICR_ISACTIVER0 || low == GICR_CTLR;
    case GRP_LEVEL:
      return TRUE;
    default:
      return FALSE;
    }
}

/* R0: GICD_CTLR is the first write, written once, and so precedes every
 * write that can queue an interrupt and every GICR_CTLR: KVM does not queue
 * a pending interrupt while the distributor is disabled, and enabling it
 * from user space queues nothing. */
static void
test_rule_gicd_ctlr_first (RestoreFixture *f, gconstpointer data)
{
  const VgicShape *s = f->shape;
  const uint64_t ctlr_attr = vgic_attr (0, GICD_CTLR);
  int ctlr = find_first (f->write, GRP_DIST, ctlr_attr);
  guint ctlrs = 0, queueing = 0;

  g_assert_cmpint (ctlr, ==, 0);
  for (guint i = 0; i < f->write->len; i++)
    {
      const Entry *e = &f->write->entries[i];

      if (e->group == GRP_DIST && e->attr == ctlr_attr)
        ctlrs++;
      if (is_queueing_write (e))
        {
          g_assert_cmpint ((int) i, >, ctlr);
          queueing++;
        }
    }
  g_assert_cmpuint (ctlrs, ==, 1);
  /* Four distributor words and the SPI line level per 32 SPIs; per vCPU
   * its five private words and its GICR_CTLR. */
  g_assert_cmpuint (queueing, ==, 5 * vgic_shape_spi_words (s, 1) + 6 * s->nr_vcpus);
}

/* R1, as the plan does it (QEMU's order, stricter than the kernel needs):
 * every LPI base write precedes every GICR_CTLR write. */
static void
test_rule_bases_before_gicr_ctlr (RestoreFixture *f, gconstpointer data)
{
  int last_base = -1, first_ctlr = G_MAXINT, bases = 0;

  for (guint i = 0; i < f->write->len; i++)
    {
      const Entry *e = &f->write->entries[i];
      if (is_base (e))
        last_base = (int) i, bases++;
      if (e->group == GRP_REDIST && vgic_attr_low (e->attr) == GICR_CTLR)
        first_ctlr = MIN (first_ctlr, (int) i);
    }
  g_assert_cmpint (bases, ==, 4 * f->shape->nr_vcpus);
  g_assert_cmpint (last_base, <, first_ctlr);
}

/* R1, as the kernel needs it: each vCPU's four base words precede its own
 * GICR_CTLR (a base write through a redistributor whose EnableLPIs is set
 * is dropped). */
static void
test_rule_each_vcpu_bases_before_its_gicr_ctlr (RestoreFixture *f, gconstpointer data)
{
  static const uint32_t words[] = {
    GICR_PROPBASER, GICR_PROPBASER + 4, GICR_PENDBASER, GICR_PENDBASER + 4,
  };

  for (uint32_t cpu = 0; cpu < f->shape->nr_vcpus; cpu++)
    {
      uint32_t m = f->shape->mpidrs[cpu];
      int ctlr = find_first (f->write, GRP_REDIST, vgic_attr (m, GICR_CTLR));

      g_assert_cmpint (ctlr, >=, 0);
      for (guint w = 0; w < G_N_ELEMENTS (words); w++)
        {
          int base = find_first (f->write, GRP_REDIST, vgic_attr (m, words[w]));

          g_assert_cmpint (base, >=, 0);
          g_assert_cmpint (base, <, ctlr);
        }
    }
}

/* R2: each SPI's configuration is written before its line level and its
 * pending state (a level SPI whose line is high is queued only if it is
 * level-configured when its line is written).  Then each vCPU's ICFGR1
 * before its private line levels and pending state: QEMU's order, which
 * the plan keeps, but not R2: the kernel ignores ICFGR writes for IRQs
 * below 32 (vgic_mmio_write_config()). */
static void
test_rule_config_before_level_and_pending (RestoreFixture *f, gconstpointer data)
{
  const VgicShape *s = f->shape;

  for (uint32_t irq = GIC_INTERNAL; irq < s->nr_irqs; irq++)
    {
      int cfg = find_first (f->write, GRP_DIST, vgic_attr (0, GICD_ICFGR + irq / 16 * 4));
      int lvl = find_first (f->write, GRP_LEVEL, vgic_attr_level (s->mpidrs[0], irq / 32 * 32));
      int clrpend = find_first (f->write, GRP_DIST, vgic_attr (0, GICD_ICPENDR + irq / 32 * 4));
      int setpend = find_first (f->write, GRP_DIST, vgic_attr (0, GICD_ISPENDR + irq / 32 * 4));

      g_assert_cmpint (cfg, >=, 0);
      g_assert_cmpint (cfg, <, lvl);
      g_assert_cmpint (cfg, <, clrpend);
      g_assert_cmpint (cfg, <, setpend);
    }
  /* Not enforced by the kernel (see above): QEMU's order. */
  for (uint32_t cpu = 0; cpu < s->nr_vcpus; cpu++)
    {
      uint32_t m = s->mpidrs[cpu];
      int cfg = find_first (f->write, GRP_REDIST, vgic_attr (m, GICR_ICFGR1));
      int lvl = find_first (f->write, GRP_LEVEL, vgic_attr_level (m, 0));
      int setpend = find_first (f->write, GRP_REDIST, vgic_attr (m, GICR_ISPENDR0));

      g_assert_cmpint (cfg, >=, 0);
      g_assert_cmpint (cfg, <, lvl);
      g_assert_cmpint (lvl, <, setpend);
    }
}

/* R3: every IROUTER write precedes every distributor pending/active write. */
static void
test_rule_irouter_before_pending_active (RestoreFixture *f, gconstpointer data)
{
  int last_route = -1, first_state = G_MAXINT, routes = 0;

  for (guint i = 0; i < f->write->len; i++)
    {
      const Entry *e = &f->write->entries[i];
      uint32_t low = vgic_attr_low (e->attr);

      if (e->group != GRP_DIST)
        continue;
      if (low >= GICD_IROUTER && low < GICD_IROUTER + 0x2000)
        last_route = (int) i, routes++;
      if (low >= GICD_ISPENDR && low < GICD_ICACTIVER + 0x80)
        first_state = MIN (first_state, (int) i);
    }
  g_assert_cmpint (routes, ==, 2 * (f->shape->nr_irqs - 32));
  g_assert_cmpint (last_route, <, first_state);
}

/* R3 in full: every route written, QEMU's words and (from a record that has
 * them, routes = TRUE) the routes QEMU misses, precedes every write that
 * can queue an SPI: its line level (LEVEL_INFO at intid 32 and up), pending
 * and active state.  The enable and group words come before the routes in
 * QEMU's order; with nothing pending or active yet, they queue nothing. */
static void
test_rule_irouter_before_spi_queueing (RestoreFixture *f, gconstpointer data)
{
  const VgicShape *s = f->shape;
  g_autoptr (VgicList) reads = fake_save_routes (s, TRUE, GPOINTER_TO_UINT (data), 42, FALSE);
  g_autoptr (VgicValues) state = NULL, check = NULL;
  g_autoptr (GError) error = NULL;

  state = vgic_values_from_reads (reads->entries, reads->len, &error);
  g_assert_no_error (error);
  check = make_check (s, state, TRUE, 31);
  g_assert_true (vgic_validate_destination (s, state, check, &error));
  g_assert_no_error (error);
  for (int routes = 0; routes <= 1; routes++)
    {
      g_autoptr (VgicList) write = vgic_plan_restore_write (s, state, routes, &error);
      int last_route = -1, first_queue = G_MAXINT;
      guint n_routes = 0, n_lost = 0, n_levels = 0, n_state = 0;

      g_assert_no_error (error);
      for (guint i = 0; i < write->len; i++)
        {
          const Entry *e = &write->entries[i];
          uint32_t low = vgic_attr_low (e->attr);

          if (e->group == GRP_DIST && low >= GICD_IROUTER && low < GICD_IROUTER + 0x2000)
            {
              last_route = (int) i, n_routes++;
              if (vgic_plan_is_route (s, e->group, e->attr))
                n_lost++;
            }
          if (e->group == GRP_LEVEL &&
              (low & KVM_DEV_ARM_VGIC_LINE_LEVEL_INTID_MASK) >= GIC_INTERNAL)
            first_queue = MIN (first_queue, (int) i), n_levels++;
          if (e->group == GRP_DIST &&
              ((low >= GICD_ISPENDR && low < GICD_ISPENDR + 0x80) ||
               (low >= GICD_ISACTIVER && low < GICD_ISACTIVER + 0x80)))
            first_queue = MIN (first_queue, (int) i), n_state++;
        }
      g_assert_cmpuint (n_lost, ==, routes ? vgic_plan_route_count (s) : 0);
      g_assert_cmpuint (n_routes, ==, 2 * (s->nr_irqs - 32) + n_lost);
      g_assert_cmpuint (n_levels, ==, vgic_shape_spi_words (s, 1));
      g_assert_cmpuint (n_state, ==, 2 * vgic_shape_spi_words (s, 1));
      g_assert_cmpint (last_route, <, first_queue);
    }
}

/* R4: each vCPU's ICC_CTLR_EL1 precedes its APRs, and the APR count is the
 * one its saved CTLR's PRIbits asks for (so that the PRIbits the kernel
 * judges the APR indices against are the saved ones). */
static void
test_rule_icc_ctlr_before_aprs (RestoreFixture *f, gconstpointer data)
{
  guint want = apr_for_pribits (GPOINTER_TO_UINT (data));

  for (uint32_t cpu = 0; cpu < f->shape->nr_vcpus; cpu++)
    {
      uint32_t m = f->shape->mpidrs[cpu];
      int ctlr = find_first (f->write, GRP_SYSREG, vgic_attr (m, ICC_CTLR_EL1));
      guint aprs = 0;

      g_assert_cmpint (ctlr, >=, 0);
      for (guint i = 0; i < f->write->len; i++)
        {
          const Entry *e = &f->write->entries[i];
          if (is_apr (e) && vgic_attr_mpidr (e->attr) == m)
            {
              g_assert_cmpint ((int) i, >, ctlr);
              aprs++;
            }
        }
      g_assert_cmpuint (aprs, ==, 2 * want);
    }
}

/* R4: each vCPU's ICC_CTLR_EL1 precedes its ICC_BPR1_EL1: the kernel
 * ignores a BPR1 write while CTLR.CBPR is set, so the CTLR must have set
 * CBPR to its saved value first. */
static void
test_rule_icc_ctlr_before_bpr1 (RestoreFixture *f, gconstpointer data)
{
  for (uint32_t cpu = 0; cpu < f->shape->nr_vcpus; cpu++)
    {
      uint32_t m = f->shape->mpidrs[cpu];
      int ctlr = find_first (f->write, GRP_SYSREG, vgic_attr (m, ICC_CTLR_EL1));
      int bpr1 = find_first (f->write, GRP_SYSREG, vgic_attr (m, ICC_BPR1_EL1));

      g_assert_cmpint (ctlr, >=, 0);
      g_assert_cmpint (bpr1, >=, 0);
      g_assert_cmpint (ctlr, <, bpr1);
    }
}

/* R5: every set-register write of enable, pending and active state follows
 * a clear-all of the same word, and every clear-all is followed by its set
 * register. */
static void
test_rule_clear_then_set (RestoreFixture *f, gconstpointer data)
{
  static const struct { uint32_t set, clr; } dist_pairs[] = {
    { GICD_ISENABLER, GICD_ICENABLER },
    { GICD_ISPENDR, GICD_ICPENDR },
    { GICD_ISACTIVER, GICD_ICACTIVER },
  };
  static const struct { uint32_t set, clr; } redist_pairs[] = {
    { GICR_ISENABLER0, GICR_ICENABLER0 },
    { GICR_ISPENDR0, GICR_ICPENDR0 },
    { GICR_ISACTIVER0, GICR_ICACTIVER0 },
  };
  guint pairs = 0, clears = 0;

  for (guint i = 0; i < f->write->len; i++)
    {
      const Entry *e = &f->write->entries[i];
      uint32_t low = vgic_attr_low (e->attr);

      for (guint p = 0; p < 3; p++)
        {
          gboolean dist_set = e->group == GRP_DIST && low >= dist_pairs[p].set &&
                              low < dist_pairs[p].set + 0x80;
          gboolean redist_set = e->group == GRP_REDIST && low == redist_pairs[p].set;
          gboolean dist_clr = e->group == GRP_DIST && low >= dist_pairs[p].clr &&
                              low < dist_pairs[p].clr + 0x80;
          gboolean redist_clr = e->group == GRP_REDIST && low == redist_pairs[p].clr;

          if (dist_clr || redist_clr)
            {
              g_assert_cmpuint (e->value, ==, 0xffffffffu);
              clears++;
            }
          if (!dist_set && !redist_set)
            continue;
          g_assert_cmpuint (i, >, 0);
          const Entry *prev = e - 1;
          uint32_t want = dist_set ? low - dist_pairs[p].set + dist_pairs[p].clr
                                   : redist_pairs[p].clr;
          g_assert_cmpuint (prev->group, ==, e->group);
          g_assert_cmpuint (prev->attr, ==, (e->attr & ~0xffffffffULL) | want);
          g_assert_cmpuint (prev->value, ==, 0xffffffffu);
          pairs++;
        }
    }
  g_assert_cmpuint (pairs, ==, clears);
  g_assert_cmpuint (pairs, ==, 3 * vgic_shape_spi_words (f->shape, 1) +
                               3 * f->shape->nr_vcpus);
}

/* Every saved register is written with its saved value (the overlapping
 * IROUTER words twice, as QEMU does); nothing else is written but the
 * clear-alls, and the TYPERs are only read. */
static void
test_restore_writes_saved_values (RestoreFixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicValues) written = NULL;
  g_autoptr (VgicList) sets = vgic_list_new (0);
  guint typers = 0;

  for (guint i = 0; i < f->write->len; i++)
    {
      const Entry *e = &f->write->entries[i];
      uint32_t low = vgic_attr_low (e->attr);
      gboolean clear = (e->group == GRP_DIST &&
                        ((low >= GICD_ICENABLER && low < GICD_ICENABLER + 0x80) ||
                         (low >= GICD_ICPENDR && low < GICD_ICPENDR + 0x80) ||
                         (low >= GICD_ICACTIVER && low < GICD_ICACTIVER + 0x80))) ||
                       (e->group == GRP_REDIST &&
                        (low == GICR_ICENABLER0 || low == GICR_ICPENDR0 ||
                         low == GICR_ICACTIVER0));
      if (!clear)
        vgic_list_append (sets, e, 1);
    }
  written = vgic_values_from_reads (sets->entries, sets->len, &error);
  g_assert_no_error (error);	/* a register written twice gets one value */
  /* 2S IROUTER writes land on S + 1 distinct words. */
  g_assert_cmpuint (sets->len - vgic_values_size (written), ==, f->shape->nr_irqs - 32 - 1);
  for (gsize i = 0; i < vgic_values_size (f->saved.state); i++)
    {
      const Entry *s = vgic_values_index (f->saved.state, i);
      uint64_t v;
      gboolean is_typer = (s->group == GRP_DIST && vgic_attr_low (s->attr) == GICD_TYPER) ||
                          (s->group == GRP_REDIST &&
                           (vgic_attr_low (s->attr) & ~4u) == GICR_TYPER);
      if (is_typer)
        {
          g_assert_false (vgic_values_lookup (written, s->group, s->attr, &v));
          typers++;
          continue;
        }
      g_assert_true (vgic_values_lookup (written, s->group, s->attr, &v));
      g_assert_cmpuint (v, ==, s->value);
    }
  g_assert_cmpuint (typers, ==, 3);
  g_assert_cmpuint (vgic_values_size (written), ==, vgic_values_size (f->saved.state) - 3);
}

/* ------------------------------------------------------------------ */
/* Restore refusals                                                   */
/* ------------------------------------------------------------------ */

static void
test_restore_refuses_small_destination (void)
{
  g_autoptr (VgicShape) shape = grid_shape (2, 288);
  g_autoptr (VgicValues) check = NULL;
  g_autoptr (GError) error = NULL;
  Saved saved = { 0 };

  make_save (shape, TRUE, 5, 1, &saved);
  check = make_check (shape, saved.state, TRUE, 4);	/* 160 IRQs */
  g_assert_false (vgic_validate_destination (shape, saved.state, check, &error));
  g_assert_error (error, VGICD_ERROR, VGICD_ERROR_KERNEL);
  g_assert_nonnull (strstr (error->message, "supports 160 IRQs but the VM has 288"));
  saved_clear (&saved);
}

static void
test_restore_refuses_lpi_mismatch (void)
{
  g_autoptr (VgicShape) shape = grid_shape (2, 64);

  for (int src = 0; src <= 1; src++)
    {
      g_autoptr (VgicValues) check = NULL;
      g_autoptr (GError) error = NULL;
      Saved saved = { 0 };

      make_save (shape, src, 5, 1, &saved);
      check = make_check (shape, saved.state, !src, 31);
      g_assert_false (vgic_validate_destination (shape, saved.state, check, &error));
      g_assert_error (error, VGICD_ERROR, VGICD_ERROR_SHAPE_MISMATCH);
      g_assert_nonnull (strstr (error->message, "ITS"));
      saved_clear (&saved);
    }
}

/* ------------------------------------------------------------------ */
/* The saved-set check used by the record decoder                     */
/* ------------------------------------------------------------------ */

static void
test_check_saved (void)
{
  g_autoptr (VgicShape) shape = grid_shape (4, 64);
  g_autoptr (GError) error = NULL;
  Saved saved = { 0 };
  g_autoptr (VgicList) all = NULL;
  g_autoptr (VgicValues) fewer = NULL, extra = NULL;
  Entry stray = { .group = GRP_REDIST, .attr = vgic_attr (shape->mpidrs[1], GICR_NSACR) };

  make_save (shape, TRUE, 7, 3, &saved);
  g_assert_true (vgic_validate_saved (shape, saved.state, FALSE, &error));
  g_assert_no_error (error);

  all = vgic_list_new_from (saved.reads->entries, saved.reads->len);

  /* Drop one register: missing, and named. */
  fewer = vgic_values_from_reads (all->entries + 1, all->len - 1, NULL);
  g_assert_false (vgic_validate_saved (shape, fewer, FALSE, &error));
  g_assert_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET);
  g_assert_nonnull (strstr (error->message, "missing register: GICD_TYPER"));
  g_clear_error (&error);

  /* Add one the save never reads: unexpected, and named. */
  vgic_list_append (all, &stray, 1);
  extra = vgic_values_from_reads (all->entries, all->len, NULL);
  g_assert_false (vgic_validate_saved (shape, extra, FALSE, &error));
  g_assert_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET);
  g_assert_nonnull (strstr (error->message, "unexpected register: GICR_NSACR of vCPU 0.0.0.1"));
  g_clear_error (&error);

  /* Twice the same register: a record (strict indexing) refuses it. */
  vgic_list_append (all, &all->entries[5], 1);
  g_assert_null (vgic_values_new (all->entries, all->len, &error));
  g_assert_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET);
  g_assert_nonnull (strstr (error->message, "duplicate register"));
  saved_clear (&saved);
}

/* ------------------------------------------------------------------ */
/* The save's fast paths: the guessed round 2, the shape round 1 says  */
/* ------------------------------------------------------------------ */

/* A guess of the shape a save finds is exactly the round 2 that save
 * plans; a guess of any other shape is not. */
static void
test_save_guess (void)
{
  for (guint v = 0; v < G_N_ELEMENTS (grid_vcpus); v++)
    for (guint q = 0; q < G_N_ELEMENTS (grid_irqs); q++)
      for (guint b = 0; b < G_N_ELEMENTS (grid_pribits); b++)
        for (int plpis = 0; plpis <= 1; plpis++)
          {
            g_autoptr (VgicShape) shape = grid_shape (grid_vcpus[v], grid_irqs[q]);
            guint apr = apr_for_pribits (grid_pribits[b]);
            g_autoptr (GError) error = NULL;
            g_autoptr (VgicList) second = NULL;
            g_autoptr (VgicList) right = vgic_plan_save_guess (shape, plpis, apr);
            g_autoptr (VgicList) other_lpis = vgic_plan_save_guess (shape, !plpis, apr);
            g_autoptr (VgicList) other_apr = vgic_plan_save_guess (shape, plpis, apr == 4 ? 1 : 4);
            Saved saved = { 0 };

            if (grid_vcpus[v] > 64 && grid_irqs[q] != 992)
              continue;	/* the large shapes once is enough */
            make_save (shape, plpis, grid_pribits[b], v * 7 + q, &saved);
            second = vgic_plan_save_second (shape, saved.state, &error);
            g_assert_no_error (error);
            g_assert_true (vgic_list_same_accesses (right, second));
            g_assert_false (vgic_list_same_accesses (other_lpis, second));
            g_assert_false (vgic_list_same_accesses (other_apr, second));
            /* The guess reads, it does not carry values. */
            for (guint i = 0; i < right->len; i++)
              g_assert_cmphex (right->entries[i].value, ==, 0);
            saved_clear (&saved);
          }
}

/* Round 1's reads of @shape with vCPU 0's GICR_TYPER.PLPIS = @plpis and
 * each vCPU's ICC_CTLR_EL1.PRIbits field from @fields (other bits set too,
 * as a GIC has them). */
static VgicList *
round1_with (const VgicShape *shape, gboolean plpis, const guint64 *fields)
{
  VgicList *first = vgic_plan_save_first (shape);
  guint cpu = 0;

  for (guint i = 0; i < first->len; i++)
    {
      VgicEntry *e = &first->entries[i];

      if (e->group == VGIC_GRP_REDIST && e->attr == vgic_attr (shape->mpidrs[0], GICR_TYPER))
        e->value = 0x1100 | (plpis ? GICR_TYPER_PLPIS : 0);
      else if (e->group == VGIC_GRP_SYSREG && vgic_attr_low (e->attr) == ICC_CTLR_EL1)
        e->value = 0xc801 | (fields[cpu++] << ICC_CTLR_EL1_PRIBITS_SHIFT);
    }
  g_assert_cmpuint (cpu, ==, shape->nr_vcpus);
  return first;
}

static gboolean
checks_hold (const VgicSaveCheck *c, guint n, const VgicList *reads)
{
  for (guint i = 0; i < n; i++)
    {
      guint64 v;

      g_assert_cmpuint (c[i].index, <, reads->len);
      v = reads->entries[c[i].index].value & c[i].mask;
      if (v < c[i].min || v > c[i].max)
        return FALSE;
    }
  return TRUE;
}

/* The checks a save's first step carries for its guessed round 2 are
 * sound: whenever round 1's values satisfy them, round 2 for those values
 * is the guess (every PLPIS and every PRIbits field value of vCPU 0 and of
 * the last vCPU, the others as vCPU 0, against each guess); and they hold
 * for a GIC of the guessed shape (PRIbits 5, 6 or 7 bits).  A round 2 that
 * differs per vCPU (an earlier save's) gets its own checks; a list that is
 * no round 2 gets none. */
static void
test_save_checks (void)
{
  static const guint vcpus[] = { 1, 2, 3 };

  for (guint v = 0; v < G_N_ELEMENTS (vcpus); v++)
    {
      g_autoptr (VgicShape) shape = grid_shape (vcpus[v], 288);
      g_autoptr (VgicList) first = vgic_plan_save_first (shape);
      const guint nr = vcpus[v];
      g_autofree guint64 *fields = g_new0 (guint64, nr);
      guint held = 0, tried = 0;

      for (int plpis = 0; plpis <= 1; plpis++)
        for (guint b = 0; b < G_N_ELEMENTS (grid_pribits); b++)
          {
            const guint apr = apr_for_pribits (grid_pribits[b]);
            g_autoptr (VgicList) guess = vgic_plan_save_guess (shape, plpis, apr);
            guint n = 0;
            g_autofree VgicSaveCheck *checks = vgic_plan_save_checks (shape, first, guess, &n);

            g_assert_nonnull (checks);
            g_assert_cmpuint (n, ==, nr + 1);
            for (int bit = 0; bit <= 1; bit++)
              for (guint64 f0 = 0; f0 < 8; f0++)
                for (guint64 fl = 0; fl < 8; fl++)
                  {
                    g_autoptr (VgicList) r1 = NULL;
                    g_autoptr (VgicValues) in = NULL;
                    g_autoptr (VgicList) second = NULL;
                    g_autoptr (GError) error = NULL;

                    for (guint c = 0; c < nr; c++)
                      fields[c] = f0;
                    fields[nr - 1] = nr > 1 ? fl : f0;
                    r1 = round1_with (shape, bit, fields);
                    in = vgic_plan_save_inputs (shape, r1->entries, r1->len, &error);
                    g_assert_no_error (error);
                    second = vgic_plan_save_second (shape, in, &error);
                    g_assert_no_error (error);
                    tried++;
                    if (checks_hold (checks, n, r1))
                      {
                        held++;
                        g_assert_true (vgic_list_same_accesses (second, guess));
                      }
                    /* A GIC of the guessed shape passes. */
                    if (bit == plpis && f0 == grid_pribits[b] - 1 &&
                        (nr == 1 || fl == f0))
                      g_assert_true (checks_hold (checks, n, r1));
                  }
          }
      g_test_message ("%u vCPUs: checks held for %u of %u round 1s, each time on the "
                      "guessed round 2", nr, held, tried);
      g_assert_cmpuint (held, >, 0);

      /* A round 2 an earlier save found, with 4 APRs on the last vCPU and
       * 1 on the others. */
      {
        g_autoptr (VgicList) r1 = NULL, other = NULL, last = NULL, cut = NULL;
        g_autoptr (VgicValues) in = NULL;
        g_autoptr (GError) error = NULL;
        g_autofree VgicSaveCheck *checks = NULL;
        guint n = 0;

        for (guint c = 0; c < nr; c++)
          fields[c] = 4;
        fields[nr - 1] = 6;
        r1 = round1_with (shape, TRUE, fields);
        in = vgic_plan_save_inputs (shape, r1->entries, r1->len, &error);
        last = vgic_plan_save_second (shape, in, &error);
        g_assert_no_error (error);
        checks = vgic_plan_save_checks (shape, first, last, &n);
        g_assert_nonnull (checks);
        g_assert_true (checks_hold (checks, n, r1));
        fields[nr - 1] = 4;
        other = round1_with (shape, TRUE, fields);
        g_assert_false (checks_hold (checks, n, other));

        /* No round 2 at all: a guess cut short, or none. */
        cut = vgic_list_new_from (last->entries, last->len - 1);
        g_assert_null (vgic_plan_save_checks (shape, first, cut, &n));
        g_clear_pointer (&cut, vgic_list_unref);
        cut = vgic_list_new (1);
        g_assert_null (vgic_plan_save_checks (shape, first, cut, &n));
      }
    }
}

static void
test_save_shape (void)
{
  g_autoptr (VgicShape) shape = grid_shape (4, 288);
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicList) first = vgic_plan_save_first (shape);
  g_autoptr (VgicValues) some = NULL;

  for (guint b = 0; b < G_N_ELEMENTS (grid_pribits); b++)
    for (int plpis = 0; plpis <= 1; plpis++)
      {
        Saved saved = { 0 };
        gboolean got_plpis = !plpis;
        guint got_apr = 0;

        make_save (shape, plpis, grid_pribits[b], 3, &saved);
        g_assert_true (vgic_plan_save_shape (shape, saved.state, &got_plpis, &got_apr, &error));
        g_assert_no_error (error);
        g_assert_cmpint (got_plpis, ==, plpis);
        g_assert_cmpuint (got_apr, ==, apr_for_pribits (grid_pribits[b]));
        saved_clear (&saved);
      }

  /* Round 1 without GICR_TYPER (the first three reads are the TYPERs):
   * named, not guessed. */
  some = vgic_values_from_reads (first->entries + 3, first->len - 3, &error);
  g_assert_no_error (error);
  {
    gboolean plpis;
    guint apr;

    g_assert_false (vgic_plan_save_shape (shape, some, &plpis, &apr, &error));
    g_assert_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET);
    g_assert_nonnull (strstr (error->message, "missing register: GICR_TYPER lo"));
  }
}

/* The record's register list: round 1 then round 2, each register once,
 * where it is first read; the same whether round 1 is passed or planned. */
static void
test_save_registers (void)
{
  for (guint v = 0; v < 4; v++)
    for (guint q = 0; q < G_N_ELEMENTS (grid_irqs); q++)
      {
        g_autoptr (VgicShape) shape = grid_shape (grid_vcpus[v], grid_irqs[q]);
        g_autoptr (VgicList) first = vgic_plan_save_first (shape);
        g_autoptr (VgicList) regs = NULL, again = NULL;
        g_autoptr (VgicValues) unique = NULL;
        g_autoptr (GError) error = NULL;
        Saved saved = { 0 };
        guint spis = grid_irqs[q] - 32, j = 0;

        make_save (shape, TRUE, 6, q, &saved);
        regs = vgic_plan_save_registers (shape, saved.state, NULL, FALSE, &error);
        g_assert_no_error (error);
        again = vgic_plan_save_registers (shape, saved.state, first, FALSE, &error);
        g_assert_no_error (error);
        g_assert_true (vgic_list_same_accesses (regs, again));
        /* QEMU's S - 1 overlapping IROUTER words are kept once. */
        g_assert_cmpuint (regs->len, ==, saved.reads->len - (spis - 1));
        unique = vgic_values_new (regs->entries, regs->len, &error);
        g_assert_no_error (error);
        /* In the order of first reads. */
        for (guint i = 0; i < saved.reads->len && j < regs->len; i++)
          if (saved.reads->entries[i].group == regs->entries[j].group &&
              saved.reads->entries[i].attr == regs->entries[j].attr)
            j++;
        g_assert_cmpuint (j, ==, regs->len);
        saved_clear (&saved);
      }
}

/* The routes QEMU misses (SPIs above nr_irqs / 2): a save for a record
 * reads each once at 0x6000 + 8m, after round 1; a restore from a record
 * that has them writes each once with its value, after QEMU's IROUTER
 * writes and before any pending/active write (R3); without them, neither
 * touches those words. */
static void
test_lost_routes (void)
{
  for (guint q = 0; q < G_N_ELEMENTS (grid_irqs); q++)
    {
      g_autoptr (VgicShape) shape = grid_shape (5, grid_irqs[q]);
      const guint n = shape->nr_irqs, lost = n / 2 - 1;
      g_autoptr (VgicList) routes = vgic_plan_save_routes (shape);
      g_autoptr (VgicList) reads = fake_save_routes (shape, TRUE, 5, q, FALSE);
      g_autoptr (VgicValues) state = NULL, check = NULL;
      g_autoptr (VgicList) with = NULL, without = NULL, regs = NULL;
      g_autoptr (GError) error = NULL;
      int last_route = -1, first_state = G_MAXINT;
      guint written = 0;

      g_assert_cmpuint (vgic_plan_route_count (shape), ==, lost);
      g_assert_cmpuint (routes->len, ==, lost);
      for (guint i = 0; i < routes->len; i++)
        {
          g_assert_cmpuint (routes->entries[i].group, ==, GRP_DIST);
          g_assert_cmphex (vgic_attr_low (routes->entries[i].attr), ==,
                           GICD_IROUTER + 8 * (n / 2 + 1 + i));
          g_assert_true (vgic_plan_is_route (shape, GRP_DIST, routes->entries[i].attr));
        }
      /* QEMU's words are not routes QEMU misses, nor the odd words. */
      g_assert_false (vgic_plan_is_route (shape, GRP_DIST, GICD_IROUTER + 8 * (n / 2)));
      g_assert_false (vgic_plan_is_route (shape, GRP_DIST, GICD_IROUTER + 8 * (n / 2 + 1) + 4));
      g_assert_false (vgic_plan_is_route (shape, GRP_DIST, GICD_IROUTER + 8 * n));

      state = vgic_values_from_reads (reads->entries, reads->len, &error);
      g_assert_no_error (error);
      /* The record's register list places them after round 1. */
      regs = vgic_plan_save_registers (shape, state, NULL, TRUE, &error);
      g_assert_no_error (error);
      {
        g_autoptr (VgicList) first = vgic_plan_save_first (shape);
        guint first_unique = 0;
        g_autoptr (VgicValues) u = vgic_values_from_reads (first->entries, first->len, &error);

        g_assert_no_error (error);
        first_unique = (guint) vgic_values_size (u);
        for (guint i = 0; i < lost; i++)
          g_assert_cmpuint (regs->entries[first_unique + i].attr, ==, routes->entries[i].attr);
      }

      check = make_check (shape, state, TRUE, 31);
      g_assert_true (vgic_validate_destination (shape, state, check, &error));
      with = vgic_plan_restore_write (shape, state, TRUE, &error);
      g_assert_no_error (error);
      without = vgic_plan_restore_write (shape, state, FALSE, &error);
      g_assert_no_error (error);
      g_assert_cmpuint (with->len, ==, without->len + lost);
      for (guint i = 0; i < with->len; i++)
        {
          const Entry *e = &with->entries[i];
          uint32_t low = vgic_attr_low (e->attr);
          uint64_t v = ~0ull;

          if (e->group != GRP_DIST)
            continue;
          if (low >= GICD_IROUTER && low < GICD_IROUTER + 0x2000)
            last_route = (int) i;
          if (low >= GICD_ISPENDR && low < GICD_ICACTIVER + 0x80)
            first_state = MIN (first_state, (int) i);
          if (vgic_plan_is_route (shape, e->group, e->attr))
            {
              g_assert_true (vgic_values_lookup (state, e->group, e->attr, &v));
              g_assert_cmphex (e->value, ==, v);
              written++;
            }
        }
      g_assert_cmpuint (written, ==, lost);
      g_assert_cmpint (last_route, <, first_state);
      for (guint i = 0; i < without->len; i++)
        g_assert_false (vgic_plan_is_route (shape, without->entries[i].group,
                                            without->entries[i].attr));
      /* A state without them cannot be written with them. */
      {
        g_autoptr (VgicList) plain = fake_save (shape, TRUE, 5, q, NULL);
        g_autoptr (VgicValues) v1 = vgic_values_from_reads (plain->entries, plain->len, &error);
        g_autoptr (VgicList) w = NULL;

        g_assert_no_error (error);
        w = vgic_plan_restore_write (shape, v1, TRUE, &error);
        g_assert_null (w);
        g_assert_nonnull (error);
      }
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/planner/counts/grid", test_counts_grid);
  g_test_add_func ("/planner/counts/facts-table", test_counts_facts_table);
  g_test_add_func ("/planner/save/rounds", test_save_rounds);
  g_test_add_func ("/planner/save/apr-per-vcpu", test_save_apr_per_vcpu);
  g_test_add_func ("/planner/save/second-needs-first", test_save_second_needs_first);
  g_test_add_func ("/planner/save/qemu-order", test_save_qemu_order);
  g_test_add_func ("/planner/save/guess", test_save_guess);
  g_test_add_func ("/planner/save/checks", test_save_checks);
  g_test_add_func ("/planner/save/shape", test_save_shape);
  g_test_add_func ("/planner/save/registers", test_save_registers);
  for (guint i = 0; i < G_N_ELEMENTS (grid_pribits); i++)
    {
      gconstpointer bits = GUINT_TO_POINTER (grid_pribits[i]);
      g_autofree char *p0 = g_strdup_printf ("/planner/restore/pribits-%u/R0-gicd-ctlr-first", grid_pribits[i]);
      g_autofree char *p1 = g_strdup_printf ("/planner/restore/pribits-%u/R1-bases-before-gicr-ctlr", grid_pribits[i]);
      g_autofree char *p1v = g_strdup_printf ("/planner/restore/pribits-%u/R1-each-vcpu-bases-before-its-gicr-ctlr", grid_pribits[i]);
      g_autofree char *p2 = g_strdup_printf ("/planner/restore/pribits-%u/R2-config-before-level-and-pending", grid_pribits[i]);
      g_autofree char *p3 = g_strdup_printf ("/planner/restore/pribits-%u/R3-irouter-before-pending-active", grid_pribits[i]);
      g_autofree char *p3q = g_strdup_printf ("/planner/restore/pribits-%u/R3-irouter-before-spi-queueing", grid_pribits[i]);
      g_autofree char *p4 = g_strdup_printf ("/planner/restore/pribits-%u/R4-icc-ctlr-before-aprs", grid_pribits[i]);
      g_autofree char *p4b = g_strdup_printf ("/planner/restore/pribits-%u/R4-icc-ctlr-before-bpr1", grid_pribits[i]);
      g_autofree char *p5 = g_strdup_printf ("/planner/restore/pribits-%u/R5-clear-then-set", grid_pribits[i]);
      g_autofree char *p6 = g_strdup_printf ("/planner/restore/pribits-%u/writes-saved-values", grid_pribits[i]);

      g_test_add (p0, RestoreFixture, bits, restore_setup, test_rule_gicd_ctlr_first, restore_teardown);
      g_test_add (p1, RestoreFixture, bits, restore_setup, test_rule_bases_before_gicr_ctlr, restore_teardown);
      g_test_add (p1v, RestoreFixture, bits, restore_setup, test_rule_each_vcpu_bases_before_its_gicr_ctlr, restore_teardown);
      g_test_add (p2, RestoreFixture, bits, restore_setup, test_rule_config_before_level_and_pending, restore_teardown);
      g_test_add (p3, RestoreFixture, bits, restore_setup, test_rule_irouter_before_pending_active, restore_teardown);
      g_test_add (p3q, RestoreFixture, bits, restore_setup, test_rule_irouter_before_spi_queueing, restore_teardown);
      g_test_add (p4, RestoreFixture, bits, restore_setup, test_rule_icc_ctlr_before_aprs, restore_teardown);
      g_test_add (p4b, RestoreFixture, bits, restore_setup, test_rule_icc_ctlr_before_bpr1, restore_teardown);
      g_test_add (p5, RestoreFixture, bits, restore_setup, test_rule_clear_then_set, restore_teardown);
      g_test_add (p6, RestoreFixture, bits, restore_setup, test_restore_writes_saved_values, restore_teardown);
    }
  g_test_add_func ("/planner/restore/check-walks-the-plan", test_restore_check_walks_the_plan);
  g_test_add_func ("/planner/restore/check-apr-per-vcpu", test_restore_check_apr_per_vcpu);
  g_test_add_func ("/planner/restore/check-put-orders", test_restore_check_put_orders);
  g_test_add_func ("/planner/restore/refuses-small-destination", test_restore_refuses_small_destination);
  g_test_add_func ("/planner/restore/refuses-lpi-mismatch", test_restore_refuses_lpi_mismatch);
  g_test_add_func ("/planner/check-saved", test_check_saved);
  g_test_add_func ("/planner/lost-routes", test_lost_routes);

  return g_test_run ();
}
