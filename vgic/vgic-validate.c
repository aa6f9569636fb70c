/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-validate.c - may this state be written to this VM?  (vgic-validate.h)
 *
 * Theory of operation
 *
 * A state record arrives from another host, through a QEMU that may be
 * compromised, and vgicd turns it into kernel writes on a VM.  The kernel
 * checks little of what it is given in user-space access: an offset it
 * does not implement reads as 0 and ignores writes, a register of another
 * vCPU is just another register.  So a record that does not fit its VM
 * could restore nonsense without a single error.  vgicd therefore accepts a
 * record only when it is exactly a save of exactly this VM, and refuses it
 * before the first write otherwise, with a message that names what differs:
 * the operator reading a failed migration's log has nothing else to go on.
 *
 * "Exactly a save" is the planner's to say (vgic_plan_save_registers():
 * round 1, then round 2 as round 1's values ask), so the record is compared
 * against the plan, entry by entry.  The good path costs one pass; only a
 * record that fails pays for naming the difference.
 *
 * QEMU's own restore arrives as a list instead (kvm_arm_gicv3_put's writes,
 * when the stream carries QEMU's fields rather than a record).  The same
 * rule holds: vgicd runs it only when it is exactly the restore vgicd would
 * plan for the values it writes.  The planner checks that in one walk of
 * its restore order, taking each value from the list
 * (vgic_plan_check_restore()): that carries every ordering rule (R0 to
 * R5), the clear-alls' value and the register set of this shape, and the
 * list that passes is laid out as it is.  A list that fails is worded by
 * the way the check was first made, which names the first difference: the
 * list turned back into values (each register it writes, once), those
 * re-planned, and the two lists compared access for access.
 *
 * The destination's own answers (its GICD_TYPER and GICR_TYPER) decide the
 * rest: room for every IRQ, and LPIs on both sides or neither.  Those rules
 * exist once, as guards (mask, min, max); vgicd hands them to a peer that
 * checks them before it writes, and applies the same list itself to the
 * values of a peer that does not.
 *
 * The kernel also refuses some values outright, and a refusal in the middle
 * of a restore leaves the destination partly written.  So each value the
 * kernel can refuse is judged before the first write.  The list, from
 * Linux 6.12's arch/arm64/kvm/vgic-sys-reg-v3.c and vgic-mmio-v3.c, for the
 * registers a restore writes:
 *  - ICC_SRE_EL1 without SRE (set_gic_sre()): judged in the state itself
 *    (check_kernel_values());
 *  - ICC_CTLR_EL1 whose PRIbits or IDbits exceed the destination vCPU's, or
 *    whose SEIS or A3V differ from the host's (set_gic_ctlr()): only the
 *    destination knows, so the restore reads every vCPU's ICC_CTLR_EL1
 *    first, as a guard (ctlr_guard());
 *  - an AP0R/AP1R index above what PRIbits allows: the state holds the APRs
 *    its own PRIbits asks for (it is exactly a save), and ICC_CTLR_EL1 is
 *    written before them (R4);
 *  - GICD_TYPER2 and GICD_IIDR other than as read: a restore does not write
 *    them;
 *  - a value wider than its register: vgic_reg_check_width().
 * What only a running kernel can say (-EBUSY from a vCPU that runs, -ENOMEM)
 * stays a mid-restore failure, reported as one.
 */
#include "vgic-validate.h"

#include "vgic-error.h"
#include "vgic-plan.h"
#include "vgic-regs.h"
#include "vgicd/vgic-entry.h"


/* ------------------------------------------------------------------ */
/* The register set                                                   */
/* ------------------------------------------------------------------ */

gboolean
vgic_validate_saved (const VgicShape *shape, const VgicValues *state, gboolean routes,
                     GError **error)
{
  g_autoptr (VgicList) want = vgic_plan_save_registers (shape, state, NULL, routes, error);
  const VgicEntry *e = NULL;
  uint64_t value;

  if (!want)
    return FALSE;
  /* The first planned register the state lacks, in plan order; else the
   * first register of the state the plan does not read. */
  for (guint i = 0; i < want->len && !e; i++)
    if (!vgic_values_lookup (state, want->entries[i].group, want->entries[i].attr, &value))
      e = &want->entries[i];
  if (e)
    {
      g_autofree char *what = vgic_reg_describe (e->group, e->attr);
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET,
                   "missing register: %s", what);
      return FALSE;
    }
  if (vgic_values_size (state) == want->len)
    return TRUE;
  {
    g_autoptr (VgicValues) planned = vgic_values_new (want->entries, want->len, NULL);

    for (gsize i = 0; i < vgic_values_size (state); i++)
      {
        e = vgic_values_at (state, i);
        if (!vgic_values_lookup (planned, e->group, e->attr, &value))
          {
            g_autofree char *what = vgic_reg_describe (e->group, e->attr);

            /* A route QEMU misses, where the version has no place for
             * one: say which version does. */
            if (!routes && vgic_plan_is_route (shape, e->group, e->attr))
              g_set_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET,
                           "unexpected register: %s is a route only a version %u "
                           "record carries", what, VGIC_RECORD_VERSION_ROUTES);
            else
              g_set_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET,
                           "unexpected register: %s is not part of this VM's state", what);
            return FALSE;
          }
      }
  }
  /* As many planned registers as values, all found, yet not equal: the
   * plan and its own check disagree, which is a vgicd bug. */
  g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED,
               "internal error: the save plan and its check disagree");
  return FALSE;
}

/* Check 4: @entries (each register once, values indexed in @values) are
 * the save's registers in plan order.  Names the difference. */
static gboolean
check_plan_order (const VgicShape *shape, const VgicList *entries, const VgicValues *values,
                  const VgicList *first, gboolean routes, GError **error)
{
  g_autoptr (VgicList) expected = vgic_plan_save_registers (shape, values, first, routes,
                                                            NULL);
  guint i;

  /* The good path: the same sequence.  Both lists hold each key once, so
   * the same sequence is the same set. */
  if (expected && expected->len == entries->len)
    {
      for (i = 0; i < entries->len; i++)
        if (expected->entries[i].group != entries->entries[i].group ||
            expected->entries[i].attr != entries->entries[i].attr)
          break;
      if (i == entries->len)
        return TRUE;
    }

  /* Something differs.  A missing or unexpected register is named as such;
   * if the set is right, the order is wrong. */
  if (!vgic_validate_saved (shape, values, routes, error))
    return FALSE;
  for (i = 0; expected && i < entries->len && i < expected->len; i++)
    {
      const VgicEntry *w = &expected->entries[i], *got = &entries->entries[i];

      if (w->group != got->group || w->attr != got->attr)
        {
          g_autofree char *g = vgic_reg_describe (got->group, got->attr);
          g_autofree char *want = vgic_reg_describe (w->group, w->attr);

          g_set_error (error, VGICD_ERROR, VGICD_ERROR_BAD_RECORD,
                       "bad state record: entry %u is %s, but a save reads %s there: "
                       "entries are out of plan order", i, g, want);
          return FALSE;
        }
    }
  g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED,
               "internal error: the save plan and its check disagree");
  return FALSE;
}

/* The values of @state the kernel refuses whatever the destination (the
 * list is in the theory above): ICC_SRE_EL1 must keep SRE set.  @what
 * names the state's source in the message. */
static gboolean
check_kernel_values (const VgicShape *shape, const VgicValues *state, const char *what,
                     GError **error)
{
  for (guint cpu = 0; cpu < shape->nr_vcpus; cpu++)
    {
      uint64_t sre;

      if (vgic_values_lookup (state, VGIC_GRP_SYSREG, vgic_attr (shape->mpidrs[cpu], ICC_SRE_EL1),
                              &sre) &&
          !(sre & ICC_SRE_EL1_SRE))
        {
          g_set_error (error, VGICD_ERROR, VGICD_ERROR_BAD_RECORD,
                       "%s: vCPU %u's ICC_SRE_EL1 is 0x%" G_GINT64_MODIFIER "x, without SRE, "
                       "which the kernel refuses (a GICv3 guest's CPU interface always "
                       "has it); nothing written", what, cpu, (guint64) sre);
          return FALSE;
        }
    }
  return TRUE;
}

/* Does one of the routes QEMU misses hold a value (a version 2 record must
 * have one)? */
static gboolean
some_route_set (const VgicShape *shape, const VgicList *entries)
{
  for (guint i = 0; i < entries->len; i++)
    if (entries->entries[i].value != 0 &&
        vgic_plan_is_route (shape, entries->entries[i].group, entries->entries[i].attr))
      return TRUE;
  return FALSE;
}

gboolean
vgic_validate_record (VgicRecord *record, const VgicShape *vm, const VgicList *first,
                      GError **error)
{
  static const char prefix[] = "the state record's register set is wrong: ";
  g_autoptr (VgicValues) values = NULL;

  /* 1. */
  if (!vgic_shape_check (record->shape, error))
    {
      g_prefix_error (error, "the state record's VM shape is impossible: ");
      return FALSE;
    }
  /* 2. */
  if (vm && !vgic_shape_match (vm, record->shape, error))
    return FALSE;
  /* 3.  Refused by index first, because vgic_reg_describe() cannot name a
   * register in a group it does not know. */
  for (guint i = 0; i < record->entries->len; i++)
    if (!vgic_entry_group_is_data (record->entries->entries[i].group))
      {
        g_set_error (error, VGICD_ERROR, VGICD_ERROR_BAD_RECORD,
                     "bad state record: entry %u has unknown group %u (not DIST, "
                     "REDIST, CPU_SYSREGS or LEVEL_INFO)", i, record->entries->entries[i].group);
        return FALSE;
      }
  /* Then strictly (vgic_values_new(), not _from_reads()): the encoder stores
   * each register once, so a repeated one in a record is corruption. */
  values = vgic_values_new (record->entries->entries, record->entries->len, error);
  if (!values)
    {
      g_prefix_error (error, "%s", prefix);
      return FALSE;
    }
  /* 4.  The VM's round 1 serves only a record of the same shape. */
  if (!check_plan_order (record->shape, record->entries, values, vm ? first : NULL,
                         record->routes, error))
    {
      if (g_error_matches (*error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET))
        g_prefix_error (error, "%s", prefix);
      return FALSE;
    }
  if (record->routes && !some_route_set (record->shape, record->entries))
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_BAD_RECORD,
                   "bad state record: format version %u, but every route it adds "
                   "(SPIs %u-%u) is 0, which a writer stores as version 1",
                   record->version,
                   record->shape->nr_irqs - vgic_plan_route_count (record->shape),
                   record->shape->nr_irqs - 1);
      return FALSE;
    }
  /* 5.  Only against a VM: on its own (vgicctl dump) a record may hold
   * anything its format allows. */
  if (vm && !check_kernel_values (record->shape, values, "bad state record", error))
    return FALSE;
  g_clear_pointer (&record->values, vgic_values_free);
  record->values = g_steal_pointer (&values);
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* The destination                                                    */
/* ------------------------------------------------------------------ */

#define CTLR_HOST_BITS (ICC_CTLR_EL1_SEIS | ICC_CTLR_EL1_A3V)

/* The guard on a destination vCPU's ICC_CTLR_EL1 for the value @rec a
 * restore writes there.  set_gic_ctlr() takes @rec only when its PRIbits
 * and IDbits are no larger than the vCPU's and its SEIS and A3V are the
 * host's.  One range on one read says that because of where the fields
 * sit: SEIS and A3V (bits 14, 15) and IDbits (11..13) are fixed in both
 * bounds, so only PRIbits (8..10, below them) may vary, from @rec's up.
 * IDbits is fixed only when @rec's is not 0: 0 (16-bit IDs) fits any
 * destination, and the one other value the architecture defines (1, 24
 * bits) is the largest, so "equal" is "no larger" on every real GIC. */
static VgicGuard
ctlr_guard (uint64_t rec)
{
  const uint64_t fixed = rec & (CTLR_HOST_BITS | ICC_CTLR_EL1_IDBITS_MASK);
  const uint64_t mask = CTLR_HOST_BITS | ICC_CTLR_EL1_PRIBITS_MASK |
                        (rec & ICC_CTLR_EL1_IDBITS_MASK ? ICC_CTLR_EL1_IDBITS_MASK : 0);

  return (VgicGuard) { mask, fixed | (rec & ICC_CTLR_EL1_PRIBITS_MASK),
                       fixed | ICC_CTLR_EL1_PRIBITS_MASK };
}

VgicList *
vgic_validate_guards (const VgicShape *shape, const VgicValues *state)
{
  VgicList *reads = vgic_plan_restore_check (shape);
  const guint n_qemu = reads->len;
  g_autofree VgicGuard *guards = g_new0 (VgicGuard, n_qemu + shape->nr_vcpus);
  const uint64_t gicr_typer = vgic_attr (shape->mpidrs[0], GICR_TYPER);
  uint64_t typer = 0;
  gboolean plpis;

  vgic_values_lookup (state, VGIC_GRP_REDIST, gicr_typer, &typer);
  plpis = (typer & GICR_TYPER_PLPIS) != 0;
  for (guint i = 0; i < n_qemu; i++)
    {
      const VgicEntry *e = &reads->entries[i];

      if (e->group == VGIC_GRP_DIST && e->attr == vgic_attr (0, GICD_TYPER))
        /* ITLinesNumber: room for every IRQ */
        guards[i] = (VgicGuard) { GICD_TYPER_ITLINES_MASK, shape->nr_irqs / 32 - 1,
                                  GICD_TYPER_ITLINES_MASK };
      else if (e->group == VGIC_GRP_REDIST && e->attr == gicr_typer)
        /* LPIs on both sides or on neither */
        guards[i] = (VgicGuard) { GICR_TYPER_PLPIS, plpis ? GICR_TYPER_PLPIS : 0,
                                  plpis ? GICR_TYPER_PLPIS : 0 };
      /* else: read, as QEMU does; no condition */
    }
  /* vgicd's own reads, after QEMU's: each vCPU's ICC_CTLR_EL1. */
  for (guint cpu = 0; cpu < shape->nr_vcpus; cpu++)
    {
      const uint64_t attr = vgic_attr (shape->mpidrs[cpu], ICC_CTLR_EL1);
      uint64_t rec = 0;

      vgic_values_lookup (state, VGIC_GRP_SYSREG, attr, &rec);
      vgic_list_add (reads, VGIC_GRP_SYSREG, attr, 0);
      guards[n_qemu + cpu] = ctlr_guard (rec);
    }
  vgic_list_set_guards (reads, guards, reads->len);
  return reads;
}

/* @rec, the ICC_CTLR_EL1 a restore would write to vCPU @cpu, failed
 * ctlr_guard() on the destination's @dst: say which field, and what it
 * means for the two hosts. */
static void
ctlr_refused (guint cpu, uint64_t rec, uint64_t dst, GError **error)
{
#define FIELD(v, f) ((guint) (((v) & ICC_CTLR_EL1_##f##_MASK) >> ICC_CTLR_EL1_##f##_SHIFT))
  const guint rp = FIELD (rec, PRIBITS) + 1, dp = FIELD (dst, PRIBITS) + 1;
  const guint ri = FIELD (rec, IDBITS), di = FIELD (dst, IDBITS);
#undef FIELD
  g_autofree char *why = NULL;

  if (rp > dp)
    why = g_strdup_printf ("the source's CPU interface implements %u priority bits and "
                           "this one %u (PRIbits)", rp, dp);
  else if (ri != di && (ri > di || ri != 0))
    why = g_strdup_printf ("the source's CPU interface has %u-bit interrupt IDs and this "
                           "one %u-bit (IDbits %u and %u)", ri ? 24 : 16, di ? 24 : 16, ri, di);
  else if ((rec ^ dst) & ICC_CTLR_EL1_SEIS)
    why = g_strdup_printf ("the source's GIC %s SErrors and this one %s (SEIS)",
                           rec & ICC_CTLR_EL1_SEIS ? "generates" : "does not generate",
                           dst & ICC_CTLR_EL1_SEIS ? "does" : "does not");
  else
    why = g_strdup_printf ("the source's GIC %s affinity level 3 and this one %s (A3V)",
                           rec & ICC_CTLR_EL1_A3V ? "supports" : "does not support",
                           dst & ICC_CTLR_EL1_A3V ? "does" : "does not");
  g_set_error (error, VGICD_ERROR, VGICD_ERROR_KERNEL,
               "the destination's kernel would refuse vCPU %u's ICC_CTLR_EL1 = 0x%"
               G_GINT64_MODIFIER "x (it has 0x%" G_GINT64_MODIFIER "x): %s; the two "
               "hosts' GICs differ, and a VM cannot move between them with its "
               "interrupt state", cpu, (guint64) rec, (guint64) dst, why);
}

gboolean
vgic_validate_destination (const VgicShape *shape, const VgicValues *state,
                           const VgicValues *check, GError **error)
{
  g_autoptr (VgicList) guards = vgic_validate_guards (shape, state);
  uint64_t saved_typer;

  /* What the source had decides the LPI guard: a state without it is not
   * a save, whatever the destination says. */
  if (!vgic_values_get (state, VGIC_GRP_REDIST, vgic_attr (shape->mpidrs[0], GICR_TYPER),
                        &saved_typer, error))
    return FALSE;
  for (guint i = 0; i < guards->n_guards; i++)
    {
      const VgicEntry *e = &guards->entries[i];
      const VgicGuard *g = &guards->guards[i];
      uint64_t value, v;

      if (!g->mask)
        continue;
      if (!vgic_values_get (check, e->group, e->attr, &value, error))
        return FALSE;
      v = value & g->mask;
      if (g->min <= v && v <= g->max)
        continue;
      if (e->group == VGIC_GRP_SYSREG)
        {
          uint64_t rec = 0;

          vgic_values_lookup (state, VGIC_GRP_SYSREG, e->attr, &rec);
          /* The last nr_vcpus guards are the vCPUs' ICC_CTLR_EL1, in order. */
          ctlr_refused (i - (guards->n_guards - shape->nr_vcpus), rec, value, error);
        }
      else if (e->group == VGIC_GRP_DIST)
        /* QEMU aborts here. */
        g_set_error (error, VGICD_ERROR, VGICD_ERROR_KERNEL,
                     "the destination vGIC supports %u IRQs but the VM has %u",
                     (guint) ((value & GICD_TYPER_ITLINES_MASK) + 1) * 32, shape->nr_irqs);
      else
        /* QEMU writes the bases when the destination has LPIs, whatever the
         * source had; vgicd refuses a record that cannot fill them, or one
         * whose bases the destination would drop. */
        g_set_error (error, VGICD_ERROR, VGICD_ERROR_SHAPE_MISMATCH,
                     "the record was saved from a VM %s LPIs (an ITS) but the "
                     "destination VM %s; give both VMs the same ITS configuration",
                     (saved_typer & GICR_TYPER_PLPIS) ? "with" : "without",
                     (value & GICR_TYPER_PLPIS) ? "has them" : "has none");
      return FALSE;
    }
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* QEMU's own restore                                                 */
/* ------------------------------------------------------------------ */

/*
 * vgic_plan_check_restore() decides; what follows is the comparison it
 * replaced, kept to word a refusal (and to check the check, in the tests).
 *
 * The list is turned into values as it is: every register it writes, once.
 * The comparison with the re-plan needs no other check beside it: a write
 * to a register no save reads is a write the plan does not make, a
 * clear-all of any value but ~0 differs from the plan's, and a register
 * written twice apart is a restore vgicd never plans (its only repeats are
 * QEMU's overlapping IROUTER words, back to back).  So the values hold the
 * clear-alls too (the planner writes its own ~0 and never looks theirs
 * up), and the second of two writes in a row to one register counts once,
 * when it carries the first one's value.  That is one pass and one index;
 * sets of every register a save can read and of every write seen, with an
 * allocation per key, made this check cost 13.7 M instructions at 160
 * vCPUs, against 2.4 M.
 *
 * A list that fails before the comparison (a register written twice apart,
 * or twice in a row with two values) is worded by writes_refused(), which
 * keeps those sets: only a refused list pays for them, and its message
 * names the first difference from the plan as it always has.
 */

/* Plan the restore of @state, in the put order of @writes, and compare
 * @writes with it, access for access; the plan, if they agree. */
static VgicList *
plan_and_compare (const VgicShape *shape, const VgicValues *state, const VgicEntry *writes,
                  gsize n, GError **error)
{
  g_autoptr (GError) local = NULL;
  g_autoptr (VgicList) plan = vgic_plan_restore_write_in (shape, state, FALSE,
                                                          vgic_plan_put_order (shape, writes, n),
                                                          &local);

  if (!plan)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET,
                   "QEMU's restore does not write a whole vGIC of this VM (%s); "
                   "nothing written", local->message);
      return NULL;
    }
  for (guint i = 0; i < MAX (plan->len, n); i++)
    {
      const VgicEntry *want = i < plan->len ? &plan->entries[i] : NULL;
      const VgicEntry *got = i < n ? &writes[i] : NULL;
      g_autofree char *w = NULL, *g = NULL;

      if (want && got && want->group == got->group && want->attr == got->attr &&
          want->value == got->value)
        continue;
      w = want ? vgic_reg_describe (want->group, want->attr) : g_strdup ("nothing");
      g = got ? vgic_reg_describe (got->group, got->attr) : g_strdup ("nothing");
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET,
                   "QEMU's restore differs from the one vgicd plans at write %u of %"
                   G_GSIZE_FORMAT ": QEMU writes %s = 0x%" G_GINT64_MODIFIER "x, vgicd "
                   "would write %s = 0x%" G_GINT64_MODIFIER "x; nothing written",
                   i, n, g, got ? (guint64) got->value : 0, w,
                   want ? (guint64) want->value : 0);
      return NULL;
    }
  return g_steal_pointer (&plan);
}

/* QEMU's put writes the LPI bases exactly when the destination has LPIs;
 * the state says so the way a save's would, for the planner and the
 * guards. */
static VgicEntry
typer_of (const VgicShape *shape, gboolean lpis)
{
  return (VgicEntry) { .group = VGIC_GRP_REDIST, .attr = vgic_attr (shape->mpidrs[0], GICR_TYPER),
                       .value = lpis ? GICR_TYPER_PLPIS : 0 };
}

typedef struct {
  guint32 group;
  guint64 attr;
} Key;

/* attr is an MPIDR over an offset: g_int64_hash()'s fold of the two
 * halves makes thousands of (vCPU, offset) pairs collide, so mix them. */
static guint
key_hash (gconstpointer p)
{
  const Key *k = p;
  guint64 h = (k->attr ^ ((guint64) k->group << 56)) * G_GUINT64_CONSTANT (0x9E3779B97F4A7C15);

  return (guint) (h >> 32);
}

static gboolean
key_equal (gconstpointer a, gconstpointer b)
{
  const Key *x = a, *y = b;

  return x->group == y->group && x->attr == y->attr;
}

/* Every register a save of @shape can read, whatever its round 2. */
static GHashTable *
any_save_register (const VgicShape *shape)
{
  g_autoptr (VgicList) first = vgic_plan_save_first (shape);
  g_autoptr (VgicList) second = vgic_plan_save_guess (shape, TRUE, 4);
  GHashTable *set = g_hash_table_new_full (key_hash, key_equal, g_free, NULL);
  const VgicList *lists[] = { first, second };

  for (guint l = 0; l < G_N_ELEMENTS (lists); l++)
    for (guint i = 0; i < lists[l]->len; i++)
      {
        Key *k = g_new (Key, 1);

        *k = (Key) { lists[l]->entries[i].group, lists[l]->entries[i].attr };
        g_hash_table_add (set, k);
      }
  return set;
}

/* Say why @writes (each of a vGIC group, each fitting its register) is not
 * the restore vgicd plans, as the first check said it: the values are the
 * first write of each register a save reads, the rest is left to the
 * comparison. */
static void
writes_refused (const VgicShape *shape, const VgicEntry *writes, gsize n, gboolean lpis,
                GError **error)
{
  g_autoptr (GHashTable) saved = any_save_register (shape);
  g_autoptr (GHashTable) seen = g_hash_table_new_full (key_hash, key_equal, g_free, NULL);
  g_autoptr (VgicList) kept = vgic_list_new (n + 1);
  g_autoptr (VgicValues) state = NULL;
  g_autoptr (VgicList) plan = NULL;
  VgicEntry typer = typer_of (shape, lpis);

  for (gsize i = 0; i < n; i++)
    {
      Key k = { writes[i].group, writes[i].attr };

      if (g_hash_table_contains (saved, &k) && !g_hash_table_contains (seen, &k))
        {
          g_hash_table_add (seen, g_memdup2 (&k, sizeof k));
          vgic_list_append (kept, &writes[i], 1);
        }
    }
  vgic_list_append (kept, &typer, 1);
  state = vgic_values_new (kept->entries, kept->len, error);
  if (!state)
    return;
  plan = plan_and_compare (shape, state, writes, n, error);
  if (!plan)
    return;
  /* The check refused what the comparison accepts: a vgicd bug. */
  g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED,
               "internal error: the check of QEMU's restore and its wording disagree");
}

VgicValues *
vgic_validate_writes_by_values (const VgicShape *shape, const VgicEntry *writes, gsize n,
                                VgicList **plan, GError **error)
{
  g_autoptr (VgicList) kept = vgic_list_new (n + 1);
  g_autoptr (VgicValues) state = NULL;
  g_autoptr (VgicList) planned = NULL;
  g_autoptr (GError) local = NULL;
  const guint64 propbaser = vgic_attr (shape->mpidrs[0], GICR_PROPBASER);
  gboolean lpis = FALSE, repeat_differs = FALSE;
  VgicEntry typer;

  for (gsize i = 0; i < n; i++)
    {
      const VgicEntry *e = &writes[i];

      if (!vgic_entry_group_is_data (e->group))
        {
          g_set_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET,
                       "QEMU's restore, write %" G_GSIZE_FORMAT ": group %u is not a vGIC "
                       "register group; nothing written", i, e->group);
          return NULL;
        }
      if (!vgic_reg_check_width (e, &local))
        {
          g_set_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET,
                       "QEMU's restore, write %" G_GSIZE_FORMAT ": %s; nothing written", i,
                       local->message);
          return NULL;
        }
      lpis |= e->group == VGIC_GRP_REDIST && e->attr == propbaser;
      /* A register QEMU writes twice in a row (IROUTER's overlapping
       * words) counts once, and must be written the same both times. */
      if (i > 0 && e->group == writes[i - 1].group && e->attr == writes[i - 1].attr)
        {
          repeat_differs |= e->value != writes[i - 1].value;
          continue;
        }
      vgic_list_append (kept, e, 1);
    }
  typer = typer_of (shape, lpis);
  vgic_list_append (kept, &typer, 1);
  /* A register written twice apart (QEMU's own GICR_TYPER included) fails
   * here. */
  if (!repeat_differs)
    state = vgic_values_new (kept->entries, kept->len, NULL);
  if (!state)
    {
      writes_refused (shape, writes, n, lpis, error);
      return NULL;
    }
  planned = plan_and_compare (shape, state, writes, n, error);
  if (!planned || !check_kernel_values (shape, state, "QEMU's restore", error))
    return NULL;
  if (plan)
    *plan = g_steal_pointer (&planned);
  return g_steal_pointer (&state);
}

/* The walk refused @writes: say why as the comparison always has. */
static void
writes_worded (const VgicShape *shape, const VgicEntry *writes, gsize n, GError **error)
{
  g_autoptr (VgicValues) state = vgic_validate_writes_by_values (shape, writes, n, NULL, error);

  /* The comparison accepts what the walk refused: a vgicd bug, and still
   * a refusal. */
  if (state)
    g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED,
                 "internal error: the check of QEMU's restore and its wording disagree");
}

VgicValues *
vgic_validate_restore_list (const VgicShape *shape, VgicList *writes, GError **error)
{
  VgicValues *kept = vgic_plan_check_restore (shape, writes->entries, writes->len, NULL);

  if (!kept)
    {
      writes_worded (shape, writes->entries, writes->len, error);
      return NULL;
    }
  /* The one field of an entry the check does not read, as the comparison
   * did not: 0, as in a plan (an executor refuses a list where it is not). */
  for (guint i = 0; i < writes->len; i++)
    writes->entries[i].reserved = 0;
  return kept;
}

VgicValues *
vgic_validate_writes (const VgicShape *shape, const VgicEntry *writes, gsize n,
                      VgicList **plan, GError **error)
{
  g_autoptr (VgicList) list = NULL;
  g_autoptr (VgicValues) kept = NULL;
  g_autoptr (VgicList) regs = NULL;
  VgicValues *state;
  uint64_t typer = 0;

  g_return_val_if_fail (n <= G_MAXUINT, NULL);
  list = vgic_list_new_from (writes, (guint) n);
  kept = vgic_validate_restore_list (shape, list, error);
  if (!kept)
    return NULL;
  /* Each register the list writes, once: it writes one twice only back to
   * back, with one value (the check says so), and never GICR_TYPER. */
  regs = vgic_list_new (list->len + 1);
  for (guint i = 0; i < list->len; i++)
    if (i == 0 || list->entries[i].group != list->entries[i - 1].group ||
        list->entries[i].attr != list->entries[i - 1].attr)
      vgic_list_append (regs, &list->entries[i], 1);
  vgic_values_lookup (kept, VGIC_GRP_REDIST, vgic_attr (shape->mpidrs[0], GICR_TYPER), &typer);
  vgic_list_add (regs, VGIC_GRP_REDIST, vgic_attr (shape->mpidrs[0], GICR_TYPER), typer);
  state = vgic_values_new (regs->entries, regs->len, error);
  if (state && plan)
    *plan = g_steal_pointer (&list);
  return state;
}

/* ------------------------------------------------------------------ */
/* An executor's results                                              */
/* ------------------------------------------------------------------ */

gboolean
vgic_validate_results (const VgicList *sent, const VgicEntry *got, guint n, GError **error)
{
  g_return_val_if_fail (n <= sent->len, FALSE);

  for (guint i = 0; i < n; i++)
    {
      if (got[i].group != sent->entries[i].group || got[i].attr != sent->entries[i].attr)
        {
          g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED,
                       "the executor changed entry %u of the window; refusing its results", i);
          return FALSE;
        }
      if (!vgic_entry_value_fits (got[i].group, got[i].value))
        {
          g_autofree char *what = vgic_reg_describe (got[i].group, got[i].attr);
          g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED,
                       "the executor returned a 64-bit value for the 32-bit %s", what);
          return FALSE;
        }
    }
  return TRUE;
}
