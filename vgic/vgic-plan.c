/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-plan.c - save and restore plans for the KVM vGICv3.
 *
 * Theory of operation
 *
 * QEMU 10.0 saves the vGIC with kvm_arm_gicv3_get() and restores it with
 * kvm_arm_gicv3_put(), one KVM_{GET,SET}_DEVICE_ATTR per register.  vgicd
 * produces exactly the same accesses, in the same order, as lists that can be
 * executed in one batch.  Two things keep a list from being fixed in advance:
 *
 *  - GICR_TYPER.PLPIS (set by KVM when the VM has an ITS) decides whether the
 *    LPI tables' PROPBASER/PENDBASER are part of the state;
 *  - ICC_CTLR_EL1.PRIbits decides how many active-priority registers
 *    (AP0Rn/AP1Rn) each vCPU has: 4 for 7 bits, 2 for 6, else 1.
 *
 * A save therefore runs in two rounds: everything value-independent (which
 * includes the TYPER and every ICC_CTLR_EL1), then the bases and the APRs.
 * A restore reads the destination's TYPERs (as QEMU's put does), then writes.
 *
 * The write round is written once, as a walk with a source for its values
 * (restore_walk()): vgicd plans a restore by taking each value from a
 * state, and checks QEMU's own restore by taking each from QEMU's list of
 * writes (vgic_plan_check_restore()), so what vgicd plans and what it
 * accepts cannot come to differ.
 *
 * Restore ordering rules.  Each comes from the kernel, from the same code on
 * Linux 6.1, 6.12 and 7.3, the bases vgicd supports (the functions named are
 * those of all three); where the kernel does not need an order the plan
 * keeps, the rule says so.  tests/planner asserts R0-R5 on the generated
 * plan; R6 is the caller's.  Most follow from one fact: KVM puts an
 * interrupt on a vCPU's list (the ap_list the list registers are filled
 * from) only in vgic_queue_irq_unlock(), called by the write that makes it
 * deliverable, and only if vgic_target_oracle() then names a vCPU; a later
 * write that removes the obstacle (the distributor's enable, the
 * configuration, the route) does not look again.  A restore writes to a VM
 * that has not run, where nothing is pending or active until the restore
 * makes it so.
 *
 *  R0 GICD_CTLR (EnableGrp1) before every write that can queue an interrupt:
 *     ISENABLER, IGROUPR (it queues every IRQ of the word, set or clear),
 *     LEVEL_INFO with bits set, ISPENDR, ISACTIVER, GICR_CTLR.EnableLPIs
 *     (vgic_enable_lpis()) and the ITS's RESTORE_TABLES (R6).
 *     vgic_target_oracle() names no vCPU for a pending, non-active interrupt
 *     while the distributor is disabled, and the user-space GICD_CTLR write
 *     (vgic_mmio_uaccess_write_v3_misc()) only sets dist->enabled.  An
 *     enabled, pending interrupt whose state is written before GICD_CTLR is
 *     not delivered until something queues it again, and for a level IRQ
 *     whose line stays high nothing will: the device's next injection is
 *     dropped (vgic_validate_injection() sees no change of level).
 *  R1 Each vCPU's PROPBASER/PENDBASER before its own GICR_CTLR:
 *     vgic_mmio_write_propbase() and vgic_mmio_write_pendbase() drop the
 *     write once that vCPU's EnableLPIs is set (vgic_lpis_enabled()).  The
 *     plan writes every vCPU's bases before the first GICR_CTLR.
 *  R2 An SPI's configuration (GICD_ICFGR) before its line level and its
 *     pending state.  What is stored does not depend on the order
 *     (vgic_write_irq_line_level_info() sets the line whatever the
 *     configuration), but queueing does: irq_is_pending() counts the line
 *     of a level IRQ only, SPIs start edge-triggered (kvm_vgic_dist_init()
 *     zero-fills them, and VGIC_CONFIG_EDGE is 0), and
 *     vgic_mmio_write_config() queues nothing.  So a level SPI whose line
 *     is high and latch clear, written before its ICFGR, is never queued.
 *     vgic_mmio_write_config() ignores the IRQs below 32 (SGIs stay edge,
 *     PPIs level), so GICR_ICFGR1 before the private line levels and
 *     pending state is QEMU's order only, not something the kernel needs.
 *  R3 IROUTER before every write that can queue an SPI (its line level,
 *     pending and active state), the routes QEMU misses (below) included.
 *     vgic_mmio_write_irouter() only changes target_vcpu; an SPI queued
 *     before it sits on the list of vCPU 0 (the route after init): an
 *     active one until it is deactivated (vgic_target_oracle() keeps an
 *     active IRQ where it is), a pending one until vCPU 0's next exit
 *     moves it (vgic_prune_ap_list()).  GICD_ISENABLER and GICD_IGROUPR come
 *     before the routes in QEMU's order; with nothing pending or active yet
 *     they queue nothing.
 *  R4 Each vCPU's ICC_CTLR_EL1 before its APRs and before its ICC_BPR1_EL1.
 *     The APRs: set_gic_ap0r()/set_gic_ap1r() judge the index against
 *     num_pri_bits (vgic_v3_max_apr_idx(), whose comment says it can be
 *     relied on even if ICC_CTLR_EL1 was not restored first), which
 *     vgic_init() sets to the hardware's.  So the kernel accepts either
 *     order where the destination's PRIbits are at least the saved ones,
 *     and refuses both where they were already shrunk below them
 *     (set_gic_ctlr() lowers PRIbits and never raises them until
 *     vgic_init()); CTLR first makes the refusal come from the CTLR, which
 *     names the cause, and the destination guard (vgic-validate.c) refuses
 *     such a destination before the first write anyway.  ICC_BPR1_EL1:
 *     set_gic_bpr1() ignores the write while VMCR.CBPR is set, so a BPR1
 *     written before a CTLR that clears CBPR is lost on a destination whose
 *     CBPR was set (a fresh vCPU's VMCR is 0).  With CBPR set in the saved
 *     state BPR1 is ignored in either order, as it should be
 *     (get_gic_bpr1() then reads BPR0 + 1).  The icc_regs[] order carries
 *     this.
 *  R5 Set/clear pairs: enable, pending and active are written as "clear all"
 *     (ICxxx = ~0) and then "set" (ISxxx = value), because writes act on set
 *     bits only.  ISPENDR replaces the latch in uaccess, so pending needs no
 *     clear: QEMU 10.0 clears it first all the same, and so does vgicd's
 *     own restore; QEMU 10.2's put sets it only (VGIC_PUT_SET_PENDING), and
 *     a list of QEMU's in that order is checked in it.
 *  R6 The whole vGIC before the ITS tables are restored (the ITS's
 *     KVM_DEV_ARM_ITS_RESTORE_TABLES): that is the caller's business (the
 *     GIC section loads before the ITS section in QEMU).  GICD_CTLR (R0)
 *     and the bases (R1) must be in place for the LPIs it creates to be
 *     queued and to find their configuration and pending bits
 *     (vgic_v3_lpi_sync_pending_status()), and each GICR_CTLR.EnableLPIs
 *     must come before it too: enabling LPIs runs
 *     its_sync_lpi_pending_table(), which sets every LPI's latch from the
 *     pending table, whose bits RESTORE_TABLES has just consumed and
 *     cleared in guest memory.
 *
 * One order only 7.3 has is not vgicd's: GICD_TYPER2.nASSGIcap is writable
 * there until vgic_init() (-EBUSY after), and GICD_CTLR.nASSGIreq sticks
 * only if nASSGIcap is set; 6.1 and 6.12 refuse a TYPER2 that differs
 * (-EINVAL).  It exists on GICv4.1 hardware only, and vgicd, like QEMU,
 * does not restore GICD_TYPER2.
 *
 * A QEMU quirk carried on purpose: QEMU addresses GICD_IROUTER<n> at
 * 0x6000 + 4n (lo) and 0x6000 + 4n + 4 (hi) instead of 0x6000 + 8n.  KVM
 * decodes those offsets as other IRQs' routes (or as RAZ/WI words), so QEMU
 * round-trips the routes of SPIs below nr_irqs/2 only.  vgicd makes the same
 * accesses so that its state matches QEMU's access for access; fixing it is
 * QEMU's call, and would change both sides of the migration stream.  The
 * offsets overlap (the "hi" word of IRQ n is the "lo" word of IRQ n + 1), so
 * a save reads S - 1 offsets twice; the state keeps one value for each (see
 * vgic_values_from_reads()) and a restore writes it twice, as QEMU does.
 *
 * What the quirk loses is recovered only where the state is vgicd's own:
 * the record.  A save whose state goes into a record also reads IROUTER<m>
 * at 0x6000 + 8m for every SPI m above nr_irqs/2 (vgic_plan_save_routes()),
 * in the same step as round 1, and a restore from a record that carries
 * them writes them right after QEMU's IROUTER writes (R3 holds for them
 * too).  None of QEMU's offsets 0x6000 + 4k (k = 32..nr_irqs) is one of
 * those, so the two sets never overlap, and QEMU's fields stay QEMU's.
 */
#include "vgic-plan.h"
#include "vgic-regs.h"
#include "vgicd/vgic-entry.h"

#define add vgic_list_add

/* The clear-all value written before a set register (rule R5). */
#define CLEAR_ALL 0xffffffffu

#define DIST(off) vgic_attr (0, (off))
#define REDIST(shape, cpu, off) vgic_attr ((shape)->mpidrs[cpu], (off))
#define SYSREG(shape, cpu, enc) vgic_attr ((shape)->mpidrs[cpu], (enc))

/*
 * Walk - one pass along a save's or a restore's accesses, with a source
 * for their values.  The orders below are written once, as walks, and each
 * access is taken from the walk:
 *  - planning (@plan): appended to @plan, with its value from @state, or
 *    0 for a read (@state NULL);
 *  - checking (@writes): it must be QEMU's write at the cursor @at, whose
 *    value it takes (take_write(), "Checking QEMU's restore" below).
 * @value is the value of the access just taken: a restore's walk goes on
 * from it where the order depends on a value (each vCPU's APR count on its
 * ICC_CTLR_EL1), so planning and checking decide alike.
 */
typedef struct {
  const VgicShape *shape;
  VgicList *plan;	/* planning */
  const VgicValues *state;
  const VgicEntry *writes;	/* checking */
  gsize n, at;
  uint64_t *ctlrs;	/* checking: each vCPU's ICC_CTLR_EL1, as taken */
  uint64_t value;
  VgicPutOrder order;	/* a restore's: which of QEMU's put orders */
  GError **error;
} Walk;

/* A walk that plans reads into @plan (every value 0; it cannot fail). */
static inline Walk
reads_into (VgicList *plan, const VgicShape *shape)
{
  return (Walk) { .shape = shape, .plan = plan };
}

static gboolean take_write (Walk *w, uint32_t group, uint64_t attr, gboolean clear);

/* The walk's next access, (@group, @attr). */
static inline gboolean
take (Walk *w, uint32_t group, uint64_t attr)
{
  if (w->writes)
    return take_write (w, group, attr, FALSE);
  w->value = 0;
  if (w->state && !vgic_values_get (w->state, group, attr, &w->value, w->error))
    return FALSE;
  add (w->plan, group, attr, w->value);
  return TRUE;
}

/* The walk's next access is a clear-all (rule R5): ~0, whatever the state. */
static inline gboolean
take_clear (Walk *w, uint32_t group, uint64_t attr)
{
  if (w->writes)
    return take_write (w, group, attr, TRUE);
  w->value = CLEAR_ALL;
  add (w->plan, group, attr, CLEAR_ALL);
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* Register lists shared by save and restore                          */
/* ------------------------------------------------------------------ */

/* The TYPER checks both kvm_arm_gicv3_get and _put start with. */
static void
add_typer_reads (VgicList *plan, const VgicShape *shape)
{
  add (plan, VGIC_GRP_DIST, DIST (GICD_TYPER), 0);
  add (plan, VGIC_GRP_REDIST, REDIST (shape, 0, GICR_TYPER), 0);
  add (plan, VGIC_GRP_REDIST, REDIST (shape, 0, GICR_TYPER + 4), 0);
}

static gboolean
walk_lpi_bases (Walk *w)
{
  static const uint32_t regs[] = {
    GICR_PROPBASER, GICR_PROPBASER + 4, GICR_PENDBASER, GICR_PENDBASER + 4,
  };

  for (uint32_t cpu = 0; cpu < w->shape->nr_vcpus; cpu++)
    for (guint i = 0; i < G_N_ELEMENTS (regs); i++)
      if (!take (w, VGIC_GRP_REDIST, REDIST (w->shape, cpu, regs[i])))
        return FALSE;
  return TRUE;
}

/* AP0R[n-1..0] then AP1R[n-1..0], highest first as QEMU's fall-through. */
static gboolean
walk_aprs (Walk *w, uint32_t cpu, guint n)
{
  for (guint i = n; i-- > 0;)
    if (!take (w, VGIC_GRP_SYSREG, SYSREG (w->shape, cpu, ICC_AP0R_EL1 (i))))
      return FALSE;
  for (guint i = n; i-- > 0;)
    if (!take (w, VGIC_GRP_SYSREG, SYSREG (w->shape, cpu, ICC_AP1R_EL1 (i))))
      return FALSE;
  return TRUE;
}

/* The ICC registers up to the APRs, in QEMU's order, which a restore relies
 * on: ICC_CTLR_EL1 before ICC_BPR1_EL1, whose write the kernel ignores while
 * CTLR.CBPR is set (rule R4). */
static const uint32_t icc_regs[] = {
  ICC_SRE_EL1, ICC_CTLR_EL1, ICC_IGRPEN0_EL1, ICC_IGRPEN1_EL1,
  ICC_PMR_EL1, ICC_BPR0_EL1, ICC_BPR1_EL1,
};

static gboolean
icc_ctlr_of (const VgicShape *shape, uint32_t cpu, const VgicValues *values,
             uint64_t *ctlr, GError **error)
{
  return vgic_values_get (values, VGIC_GRP_SYSREG, SYSREG (shape, cpu, ICC_CTLR_EL1),
                          ctlr, error);
}

static gboolean
plpis_of (const VgicShape *shape, const VgicValues *values, gboolean *plpis,
          GError **error)
{
  uint64_t lo;

  if (!vgic_values_get (values, VGIC_GRP_REDIST, REDIST (shape, 0, GICR_TYPER), &lo, error))
    return FALSE;
  *plpis = (lo & GICR_TYPER_PLPIS) != 0;
  return TRUE;
}

/* Offsets of IROUTER<irq> as QEMU 10.0 computes them (see the quirk above). */
static inline uint32_t
qemu_irouter_lo (uint32_t irq)
{
  return GICD_IROUTER + (uint32_t) sizeof (uint32_t) * irq;
}

/* The first SPI whose route QEMU's offsets miss: its lower word, at
 * 0x6000 + 8m, is past QEMU's last offset 0x6000 + 4 * nr_irqs. */
static inline uint32_t
first_lost_route (const VgicShape *shape)
{
  return shape->nr_irqs / 2 + 1;
}

guint
vgic_plan_route_count (const VgicShape *shape)
{
  return shape->nr_irqs - first_lost_route (shape);
}

gboolean
vgic_plan_is_route (const VgicShape *shape, uint32_t group, uint64_t attr)
{
  const uint64_t lo = GICD_IROUTER + 8 * (uint64_t) first_lost_route (shape);
  const uint64_t end = GICD_IROUTER + 8 * (uint64_t) shape->nr_irqs;

  return group == VGIC_GRP_DIST && attr >= lo && attr < end && attr % 8 == 0;
}

/* The routes QEMU misses. */
static gboolean
walk_lost_routes (Walk *w)
{
  for (uint32_t irq = first_lost_route (w->shape); irq < w->shape->nr_irqs; irq++)
    if (!take (w, VGIC_GRP_DIST, DIST (GICD_IROUTER + 8 * irq)))
      return FALSE;
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* Save                                                               */
/* ------------------------------------------------------------------ */

VgicList *
vgic_plan_save_routes (const VgicShape *shape)
{
  VgicList *plan = vgic_list_new (vgic_plan_route_count (shape));
  Walk w = reads_into (plan, shape);

  walk_lost_routes (&w);
  return plan;
}

VgicList *
vgic_plan_save_first (const VgicShape *shape)
{
  VgicList *plan = vgic_list_new (vgic_plan_save_count (shape, TRUE, 4));
  uint32_t n = shape->nr_irqs;

  add_typer_reads (plan, shape);
  add (plan, VGIC_GRP_DIST, DIST (GICD_CTLR), 0);

  for (uint32_t cpu = 0; cpu < shape->nr_vcpus; cpu++)
    {
      add (plan, VGIC_GRP_REDIST, REDIST (shape, cpu, GICR_CTLR), 0);
      add (plan, VGIC_GRP_REDIST, REDIST (shape, cpu, GICR_STATUSR), 0);
      add (plan, VGIC_GRP_REDIST, REDIST (shape, cpu, GICR_WAKER), 0);
      add (plan, VGIC_GRP_REDIST, REDIST (shape, cpu, GICR_IGROUPR0), 0);
      add (plan, VGIC_GRP_REDIST, REDIST (shape, cpu, GICR_ISENABLER0), 0);
      add (plan, VGIC_GRP_REDIST, REDIST (shape, cpu, GICR_ICFGR1), 0);
      add (plan, VGIC_GRP_LEVEL, vgic_attr_level (shape->mpidrs[cpu], 0), 0);
      add (plan, VGIC_GRP_REDIST, REDIST (shape, cpu, GICR_ISPENDR0), 0);
      add (plan, VGIC_GRP_REDIST, REDIST (shape, cpu, GICR_ISACTIVER0), 0);
      for (uint32_t i = 0; i < GIC_INTERNAL; i += 4)
        add (plan, VGIC_GRP_REDIST, REDIST (shape, cpu, GICR_IPRIORITYR + i), 0);
    }

  /* (QEMU reads the LPI bases here when PLPIS: round 2.) */

  add (plan, VGIC_GRP_DIST, DIST (GICD_STATUSR), 0);
  /* The first word of each bitmap covers the private IRQs, which live in the
   * redistributors: QEMU skips it, and so do we. */
  for (uint32_t irq = GIC_INTERNAL; irq < n; irq += 32)
    add (plan, VGIC_GRP_DIST, DIST (GICD_IGROUPR + irq / 8), 0);
  for (uint32_t irq = GIC_INTERNAL; irq < n; irq += 32)
    add (plan, VGIC_GRP_DIST, DIST (GICD_ISENABLER + irq / 8), 0);
  for (uint32_t irq = GIC_INTERNAL; irq < n; irq += 32)
    add (plan, VGIC_GRP_LEVEL, vgic_attr_level (shape->mpidrs[0], irq), 0);
  for (uint32_t irq = GIC_INTERNAL; irq < n; irq += 32)
    add (plan, VGIC_GRP_DIST, DIST (GICD_ISPENDR + irq / 8), 0);
  for (uint32_t irq = GIC_INTERNAL; irq < n; irq += 32)
    add (plan, VGIC_GRP_DIST, DIST (GICD_ISACTIVER + irq / 8), 0);
  for (uint32_t irq = GIC_INTERNAL; irq < n; irq += 16)
    add (plan, VGIC_GRP_DIST, DIST (GICD_ICFGR + irq / 4), 0);
  for (uint32_t irq = GIC_INTERNAL; irq < n; irq += 4)
    add (plan, VGIC_GRP_DIST, DIST (GICD_IPRIORITYR + irq), 0);
  for (uint32_t irq = GIC_INTERNAL; irq < n; irq++)
    {
      add (plan, VGIC_GRP_DIST, DIST (qemu_irouter_lo (irq)), 0);
      add (plan, VGIC_GRP_DIST, DIST (qemu_irouter_lo (irq) + 4), 0);
    }

  for (uint32_t cpu = 0; cpu < shape->nr_vcpus; cpu++)
    for (guint i = 0; i < G_N_ELEMENTS (icc_regs); i++)
      add (plan, VGIC_GRP_SYSREG, SYSREG (shape, cpu, icc_regs[i]), 0);
  /* (QEMU reads the APRs of each vCPU here: round 2.) */

  return plan;
}

VgicList *
vgic_plan_save_second (const VgicShape *shape, const VgicValues *first,
                       GError **error)
{
  g_autoptr (VgicList) plan = vgic_list_new (shape->nr_vcpus * 12);
  Walk w = reads_into (plan, shape);
  gboolean plpis;

  if (!plpis_of (shape, first, &plpis, error))
    return NULL;
  if (plpis)
    walk_lpi_bases (&w);
  for (uint32_t cpu = 0; cpu < shape->nr_vcpus; cpu++)
    {
      uint64_t ctlr;

      if (!icc_ctlr_of (shape, cpu, first, &ctlr, error))
        return NULL;
      walk_aprs (&w, cpu, vgic_icc_ctlr_apr_count (ctlr));
    }
  return g_steal_pointer (&plan);
}

/* Append the entries of @second in group @group (and, for the CPU
 * interface, of the vCPU of @sysreg_attr's affinity), in their order. */
static void
append_second (VgicList *out, const VgicList *second, uint32_t group, uint64_t sysreg_attr)
{
  for (guint i = 0; i < second->len; i++)
    if (second->entries[i].group == group &&
        (group != VGIC_GRP_SYSREG ||
         vgic_attr_mpidr (second->entries[i].attr) == vgic_attr_mpidr (sysreg_attr)))
      vgic_list_append (out, &second->entries[i], 1);
}

VgicList *
vgic_plan_save_qemu_order (const VgicList *first, const VgicList *second)
{
  VgicList *out = vgic_list_new (first->len + second->len);
  const VgicEntry *e = first->entries;

  for (guint i = 0; i < first->len; i++)
    {
      /* The bases come after the redistributor loop, before GICD_STATUSR
       * (vgic_plan_save_first()'s two marks). */
      if (e[i].group == VGIC_GRP_DIST && e[i].attr == DIST (GICD_STATUSR))
        append_second (out, second, VGIC_GRP_REDIST, 0);
      vgic_list_append (out, &e[i], 1);
      /* A vCPU's APRs right after its last ICC register. */
      if (e[i].group == VGIC_GRP_SYSREG &&
          (i + 1 == first->len || e[i + 1].group != VGIC_GRP_SYSREG ||
           vgic_attr_mpidr (e[i + 1].attr) != vgic_attr_mpidr (e[i].attr)))
        append_second (out, second, VGIC_GRP_SYSREG, e[i].attr);
    }
  g_assert (out->len == first->len + second->len);
  return out;
}

VgicList *
vgic_plan_save_guess (const VgicShape *shape, gboolean plpis, guint apr)
{
  VgicList *plan = vgic_list_new (shape->nr_vcpus * (4 + 2 * apr));
  Walk w = reads_into (plan, shape);

  if (plpis)
    walk_lpi_bases (&w);
  for (uint32_t cpu = 0; cpu < shape->nr_vcpus; cpu++)
    walk_aprs (&w, cpu, apr);
  return plan;
}

/* The PRIbits field values, from the lowest, that give @apr AP registers
 * per group, as one range [*lo, *hi] of field values; FALSE if none does. */
static gboolean
pribits_giving (guint apr, guint64 *lo, guint64 *hi)
{
  const guint64 top = ICC_CTLR_EL1_PRIBITS_MASK >> ICC_CTLR_EL1_PRIBITS_SHIFT;
  guint64 f = 0;

  while (f <= top && vgic_icc_ctlr_apr_count (f << ICC_CTLR_EL1_PRIBITS_SHIFT) != apr)
    f++;
  if (f > top)
    return FALSE;
  *lo = f;
  while (f < top && vgic_icc_ctlr_apr_count ((f + 1) << ICC_CTLR_EL1_PRIBITS_SHIFT) == apr)
    f++;
  *hi = f;
  return TRUE;
}

VgicSaveCheck *
vgic_plan_save_checks (const VgicShape *shape, const VgicList *first, const VgicList *guess,
                       guint *n)
{
  const guint nr = shape->nr_vcpus;
  g_autofree VgicSaveCheck *checks = g_new0 (VgicSaveCheck, nr + 1);
  g_autofree guint *aprs = g_new0 (guint, nr);
  g_autoptr (VgicList) again = vgic_list_new (guess->len);
  Walk w = reads_into (again, shape);
  const uint64_t typer = REDIST (shape, 0, GICR_TYPER);
  gboolean plpis;
  guint at = 0, ctlrs = 0, typers = 0;

  /* What @guess assumes, read off its layout (the LPI bases of every
   * vCPU, then each vCPU's AP0Rs and AP1Rs), then confirmed by laying
   * that assumption out again: a list of any other form gets no checks. */
  plpis = guess->len > 0 && guess->entries[0].group == VGIC_GRP_REDIST &&
          guess->entries[0].attr == REDIST (shape, 0, GICR_PROPBASER);
  if (plpis)
    at = 4 * nr;
  for (guint cpu = 0; cpu < nr; cpu++)
    {
      guint k = at;

      while (k < guess->len && guess->entries[k].group == VGIC_GRP_SYSREG &&
             vgic_attr_mpidr (guess->entries[k].attr) == shape->mpidrs[cpu])
        k++;
      aprs[cpu] = (k - at) / 2;
      at = k;
    }
  if (plpis)
    walk_lpi_bases (&w);
  for (guint cpu = 0; cpu < nr; cpu++)
    walk_aprs (&w, cpu, aprs[cpu]);
  if (!vgic_list_same_accesses (again, guess))
    return NULL;

  checks[0] = (VgicSaveCheck) { .mask = GICR_TYPER_PLPIS,
                                .min = plpis ? GICR_TYPER_PLPIS : 0,
                                .max = plpis ? GICR_TYPER_PLPIS : 0 };
  for (guint i = 0; i < first->len; i++)
    {
      const VgicEntry *e = &first->entries[i];

      if (e->group == VGIC_GRP_REDIST && e->attr == typer)
        {
          checks[0].index = i;
          typers++;
        }
      else if (e->group == VGIC_GRP_SYSREG && vgic_attr_low (e->attr) == ICC_CTLR_EL1)
        {
          VgicSaveCheck *c = &checks[1 + ctlrs];
          guint64 lo, hi;

          /* Round 1 reads the vCPUs' ICC registers in vCPU order, each
           * once: the next one must be the next vCPU's. */
          if (ctlrs == nr || e->attr != SYSREG (shape, ctlrs, ICC_CTLR_EL1) ||
              !pribits_giving (aprs[ctlrs], &lo, &hi))
            return NULL;
          *c = (VgicSaveCheck) { .index = i, .mask = ICC_CTLR_EL1_PRIBITS_MASK,
                                 .min = lo << ICC_CTLR_EL1_PRIBITS_SHIFT,
                                 .max = hi << ICC_CTLR_EL1_PRIBITS_SHIFT };
          ctlrs++;
        }
    }
  if (typers != 1 || ctlrs != nr)
    return NULL;
  *n = nr + 1;
  return g_steal_pointer (&checks);
}

gboolean
vgic_plan_save_shape (const VgicShape *shape, const VgicValues *first,
                      gboolean *plpis, guint *apr, GError **error)
{
  uint64_t ctlr;

  if (!plpis_of (shape, first, plpis, error) ||
      !icc_ctlr_of (shape, 0, first, &ctlr, error))
    return FALSE;
  *apr = vgic_icc_ctlr_apr_count (ctlr);
  return TRUE;
}

VgicValues *
vgic_plan_save_inputs (const VgicShape *shape, const VgicEntry *reads, gsize n,
                       GError **error)
{
  g_autoptr (VgicList) picked = vgic_list_new (shape->nr_vcpus + 1);
  const uint64_t typer = REDIST (shape, 0, GICR_TYPER);

  for (gsize i = 0; i < n; i++)
    if ((reads[i].group == VGIC_GRP_REDIST && reads[i].attr == typer) ||
        (reads[i].group == VGIC_GRP_SYSREG && vgic_attr_low (reads[i].attr) == ICC_CTLR_EL1))
      vgic_list_append (picked, &reads[i], 1);
  return vgic_values_from_reads (picked->entries, picked->len, error);
}

gboolean
vgic_plan_read_may_repeat (const VgicEntry *e)
{
  /* The other groups' attrs include a distinct MPIDR per vCPU, and only
   * QEMU's IROUTER words overlap (see the quirk above). */
  return e->group == VGIC_GRP_DIST && e->attr < 0x10000;
}

VgicList *
vgic_plan_save_registers (const VgicShape *shape, const VgicValues *values,
                          const VgicList *first, gboolean routes, GError **error)
{
  g_autoptr (VgicList) second = vgic_plan_save_second (shape, values, error);
  g_autofree guint64 *seen = NULL;
  VgicList *all;
  guint out = 0;

  if (!second)
    return NULL;
  if (first)
    {
      all = vgic_list_new (first->len + vgic_plan_route_count (shape) + second->len);
      vgic_list_append (all, first->entries, first->len);
    }
  else
    all = vgic_plan_save_first (shape);
  if (routes)
    {
      Walk w = reads_into (all, shape);

      walk_lost_routes (&w);
    }
  vgic_list_append (all, second->entries, second->len);
  /* A bitmap of the DIST offsets below 64 KiB finds the repeats without
   * hashing 7,000 keys. */
  seen = g_new0 (guint64, 0x10000 / 64);
  for (guint i = 0; i < all->len; i++)
    {
      const VgicEntry *e = &all->entries[i];

      if (vgic_plan_read_may_repeat (e))
        {
          guint64 bit = 1ULL << (e->attr % 64);

          if (seen[e->attr / 64] & bit)
            continue;
          seen[e->attr / 64] |= bit;
        }
      all->entries[out++] = *e;
    }
  vgic_list_truncate (all, out);
  return all;
}

/* ------------------------------------------------------------------ */
/* Restore                                                            */
/* ------------------------------------------------------------------ */

VgicList *
vgic_plan_restore_check (const VgicShape *shape)
{
  VgicList *plan = vgic_list_new (3);

  add_typer_reads (plan, shape);
  return plan;
}

/* Write the SPI words of a bitmap register, with a clear-all first if
 * @clr_base (rule R5).  Word 0 (private IRQs) is skipped as in QEMU. */
static gboolean
walk_dist_bitmap (Walk *w, uint32_t set_base, uint32_t clr_base)
{
  for (uint32_t irq = GIC_INTERNAL; irq < w->shape->nr_irqs; irq += 32)
    {
      if (clr_base && !take_clear (w, VGIC_GRP_DIST, DIST (clr_base + irq / 8)))
        return FALSE;
      if (!take (w, VGIC_GRP_DIST, DIST (set_base + irq / 8)))
        return FALSE;
    }
  return TRUE;
}

static gboolean sre_refused (Walk *w, uint32_t cpu);

/* A pending register's clear-all, in the put orders that have it (R5). */
static gboolean
take_pending_clear (Walk *w, uint32_t group, uint64_t attr)
{
  return w->order != VGIC_PUT_SET_PENDING ? take_clear (w, group, attr) : TRUE;
}

/* The write round, in kvm_arm_gicv3_put's order (w->order says which
 * QEMU's): the one definition of it, which vgicd plans and QEMU's list is
 * checked against.  @plpis: the LPI bases are written. */
static gboolean
restore_walk (Walk *w, gboolean plpis, gboolean routes)
{
  const VgicShape *shape = w->shape;
  uint32_t n = shape->nr_irqs;

  /* R0: the distributor's enable first, so that every write below that
   * makes an interrupt pending queues it. */
  if (!take (w, VGIC_GRP_DIST, DIST (GICD_CTLR)))
    return FALSE;

  /* R1: every vCPU's bases before any GICR_CTLR can enable LPIs. */
  if (plpis && !walk_lpi_bases (w))
    return FALSE;

  for (uint32_t cpu = 0; cpu < shape->nr_vcpus; cpu++)
    {
      const uint32_t m = shape->mpidrs[cpu];

      if (!take (w, VGIC_GRP_REDIST, vgic_attr (m, GICR_CTLR)) ||
          !take (w, VGIC_GRP_REDIST, vgic_attr (m, GICR_STATUSR)) ||
          !take (w, VGIC_GRP_REDIST, vgic_attr (m, GICR_WAKER)) ||
          !take (w, VGIC_GRP_REDIST, vgic_attr (m, GICR_IGROUPR0)) ||
          !take_clear (w, VGIC_GRP_REDIST, vgic_attr (m, GICR_ICENABLER0)) ||
          !take (w, VGIC_GRP_REDIST, vgic_attr (m, GICR_ISENABLER0)) ||
          /* QEMU's order; the kernel ignores ICFGR for IRQs below 32, so
           * R2 does not apply here. */
          !take (w, VGIC_GRP_REDIST, vgic_attr (m, GICR_ICFGR1)) ||
          !take (w, VGIC_GRP_LEVEL, vgic_attr_level (m, 0)) ||
          !take_pending_clear (w, VGIC_GRP_REDIST, vgic_attr (m, GICR_ICPENDR0)) ||
          !take (w, VGIC_GRP_REDIST, vgic_attr (m, GICR_ISPENDR0)) ||
          !take_clear (w, VGIC_GRP_REDIST, vgic_attr (m, GICR_ICACTIVER0)) ||
          !take (w, VGIC_GRP_REDIST, vgic_attr (m, GICR_ISACTIVER0)))
        return FALSE;
      for (uint32_t i = 0; i < GIC_INTERNAL; i += 4)
        if (!take (w, VGIC_GRP_REDIST, vgic_attr (m, GICR_IPRIORITYR + i)))
          return FALSE;
    }

  if (!take (w, VGIC_GRP_DIST, DIST (GICD_STATUSR)) ||
      !walk_dist_bitmap (w, GICD_ISENABLER, GICD_ICENABLER) ||
      !walk_dist_bitmap (w, GICD_IGROUPR, 0))
    return FALSE;
  /* R3: routes before the SPIs' line level, pending and active state. */
  for (uint32_t irq = GIC_INTERNAL; irq < n; irq++)
    if (!take (w, VGIC_GRP_DIST, DIST (qemu_irouter_lo (irq))) ||
        !take (w, VGIC_GRP_DIST, DIST (qemu_irouter_lo (irq) + 4)))
      return FALSE;
  /* The routes QEMU's offsets miss, when the state is a record that has
   * them: after QEMU's, so that they win over nothing (no offset is in both
   * sets), and before line level, pending and active all the same (R3). */
  if (routes && !walk_lost_routes (w))
    return FALSE;
  /* R2: configuration before line level and pending. */
  for (uint32_t irq = GIC_INTERNAL; irq < n; irq += 16)
    if (!take (w, VGIC_GRP_DIST, DIST (GICD_ICFGR + irq / 4)))
      return FALSE;
  for (uint32_t irq = GIC_INTERNAL; irq < n; irq += 32)
    if (!take (w, VGIC_GRP_LEVEL, vgic_attr_level (shape->mpidrs[0], irq)))
      return FALSE;
  if (!walk_dist_bitmap (w, GICD_ISPENDR,
                         w->order != VGIC_PUT_SET_PENDING ? GICD_ICPENDR : 0) ||
      !walk_dist_bitmap (w, GICD_ISACTIVER, GICD_ICACTIVER))
    return FALSE;
  for (uint32_t irq = GIC_INTERNAL; irq < n; irq += 4)
    if (!take (w, VGIC_GRP_DIST, DIST (GICD_IPRIORITYR + irq)))
      return FALSE;

  for (uint32_t cpu = 0; cpu < shape->nr_vcpus; cpu++)
    {
      uint64_t ctlr = 0;

      /* R4: icc_regs[] puts ICC_CTLR_EL1 (CBPR) before ICC_BPR1_EL1. */
      for (guint i = 0; i < G_N_ELEMENTS (icc_regs); i++)
        {
          if (!take (w, VGIC_GRP_SYSREG, SYSREG (shape, cpu, icc_regs[i])))
            return FALSE;
          if (icc_regs[i] == ICC_CTLR_EL1)
            ctlr = w->value;
          /* A value the kernel refuses on any destination (set_gic_sre()):
           * a record's was judged before it is planned (vgic-validate.c),
           * QEMU's list is judged here, before anything is written. */
          else if (icc_regs[i] == ICC_SRE_EL1 && w->writes && !(w->value & ICC_SRE_EL1_SRE))
            return sre_refused (w, cpu);
        }
      if (w->ctlrs)
        w->ctlrs[cpu] = ctlr;
      /* R4: the APR count follows the CTLR just written, as in QEMU. */
      if (!walk_aprs (w, cpu, vgic_icc_ctlr_apr_count (ctlr)))
        return FALSE;
    }
  return TRUE;
}

VgicList *
vgic_plan_restore_write_in (const VgicShape *shape, const VgicValues *state,
                            gboolean routes, VgicPutOrder order, GError **error)
{
  g_autoptr (VgicList) plan = vgic_list_new (vgic_plan_restore_count (shape, TRUE, 4) +
                                             vgic_plan_route_count (shape));
  Walk w = { .shape = shape, .plan = plan, .state = state, .order = order, .error = error };
  gboolean plpis;

  /* QEMU writes the bases when the destination has LPIs; the destination
   * check (vgic_validate_destination()) made sure it has them exactly when
   * the source had. */
  if (!plpis_of (shape, state, &plpis, error) || !restore_walk (&w, plpis, routes))
    return NULL;
  return g_steal_pointer (&plan);
}

VgicList *
vgic_plan_restore_write (const VgicShape *shape, const VgicValues *state,
                         gboolean routes, GError **error)
{
  return vgic_plan_restore_write_in (shape, state, routes, VGIC_PUT_CLEAR_PENDING, error);
}

/* ------------------------------------------------------------------ */
/* Checking QEMU's restore                                            */
/* ------------------------------------------------------------------ */

/*
 * QEMU's put hands vgicd its list of writes (LoadList), which vgicd runs
 * only if it is exactly the restore vgicd plans for the values it writes.
 * Rather than turn the list into values, plan them and compare (an index
 * of every register, and a second list as long as the first), the check
 * walks the restore order above once, with the list as the source of the
 * values: what the list writes at each step is, by definition, the value
 * the plan would take from the state there.  So a step holds when QEMU's
 * write at the cursor is
 *  - the walk's access, group and attr;
 *  - with a value that fits the register;
 *  - ~0, for a clear-all (the planner writes its own, whatever the state);
 *  - for a register just written (QEMU's overlapping IROUTER words, the one
 *    register a restore writes twice, back to back), the value written
 *    there: one register, one value, as one state has;
 * and the list ends where the walk does.  What the walk decides on comes
 * from the list as the plan would take it from the state: the LPI bases
 * are written exactly when write 1 is vCPU 0's PROPBASER (they come right
 * after GICD_CTLR, R1), each vCPU's APR count follows the ICC_CTLR_EL1
 * just checked, and the put order (pending cleared first or not, R5) is
 * the one whose vCPU 0 GICR_ICPENDR0 the list has or lacks, for the whole
 * list: a list that clears some pending registers and not others fails.
 * A list that passes is the plan of its own values, access for access and
 * value for value, with no value taken from anywhere else: it can be laid
 * out as it is.
 *
 * The check says why it stops, briefly; vgic-validate.c words a refusal
 * for the operator.
 */

/* Checking: say why the walk stops at @what (group, attr) and write @at. */
static gboolean
check_failed (Walk *w, uint32_t group, uint64_t attr, const char *why)
{
  g_autofree char *want = NULL;
  g_autofree char *got = NULL;

  if (!w->error)
    return FALSE;	/* no one to tell: vgic-validate.c words its own refusal */
  want = vgic_reg_describe (group, attr);
  if (w->at == w->n)
    {
      g_set_error (w->error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET,
                   "QEMU's restore ends after %" G_GSIZE_FORMAT " writes, where the "
                   "restore goes on with %s", w->n, want);
      return FALSE;
    }
  got = vgic_reg_describe (w->writes[w->at].group, w->writes[w->at].attr);
  g_set_error (w->error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET,
               "QEMU's restore, write %" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT ": %s = 0x%"
               G_GINT64_MODIFIER "x %s, where the restore writes %s", w->at, w->n, got,
               (guint64) w->writes[w->at].value, why, want);
  return FALSE;
}

/* Checking: the walk's next access, (@group, @attr), is QEMU's next write. */
static gboolean
take_write (Walk *w, uint32_t group, uint64_t attr, gboolean clear)
{
  const VgicEntry *e;

  if (w->at == w->n)
    return check_failed (w, group, attr, "");
  e = &w->writes[w->at];
  if (e->group != group || e->attr != attr)
    return check_failed (w, group, attr, "is another access");
  if (!vgic_entry_value_fits (group, e->value))
    return check_failed (w, group, attr, "does not fit its register");
  if (clear && e->value != CLEAR_ALL)
    return check_failed (w, group, attr, "is a clear-all that does not clear all");
  if (w->at > 0 && e[-1].group == group && e[-1].attr == attr && e[-1].value != e->value)
    return check_failed (w, group, attr, "writes the register just written another value");
  w->value = e->value;
  w->at++;
  return TRUE;
}

/* Checking: vCPU @cpu's ICC_SRE_EL1, just taken, lacks SRE. */
static gboolean
sre_refused (Walk *w, uint32_t cpu)
{
  g_set_error (w->error, VGICD_ERROR, VGICD_ERROR_BAD_RECORD,
               "QEMU's restore, write %" G_GSIZE_FORMAT ": vCPU %u's ICC_SRE_EL1 is 0x%"
               G_GINT64_MODIFIER "x, without SRE, which the kernel refuses", w->at - 1, cpu,
               (guint64) w->value);
  return FALSE;
}

/* QEMU's list writes the LPI bases: its write 1 is vCPU 0's PROPBASER
 * (they come right after GICD_CTLR, R1). */
static gboolean
writes_bases (const VgicShape *shape, const VgicEntry *writes, gsize n)
{
  return n > 1 && writes[1].group == VGIC_GRP_REDIST &&
         writes[1].attr == REDIST (shape, 0, GICR_PROPBASER);
}

VgicPutOrder
vgic_plan_put_order (const VgicShape *shape, const VgicEntry *writes, gsize n)
{
  /* Where QEMU 10.0's order has vCPU 0's GICR_ICPENDR0: after GICD_CTLR,
   * the four base words of every vCPU when written, and eight writes of
   * vCPU 0's own.  A list of the other order has vCPU 0's GICR_ISPENDR0
   * there; any other list fails the walk of either. */
  const gsize at = 1 + (writes_bases (shape, writes, n) ? 4 * (gsize) shape->nr_vcpus : 0) + 8;

  return at < n && writes[at].group == VGIC_GRP_REDIST &&
         writes[at].attr == REDIST (shape, 0, GICR_ICPENDR0)
         ? VGIC_PUT_CLEAR_PENDING : VGIC_PUT_SET_PENDING;
}

VgicValues *
vgic_plan_check_restore (const VgicShape *shape, const VgicEntry *writes, gsize n,
                         GError **error)
{
  g_autofree uint64_t *ctlrs = g_new0 (uint64_t, shape->nr_vcpus);
  g_autoptr (VgicList) kept = NULL;
  Walk w = { .shape = shape, .writes = writes, .n = n, .ctlrs = ctlrs, .error = error };
  const gboolean plpis = writes_bases (shape, writes, n);

  w.order = vgic_plan_put_order (shape, writes, n);
  if (!restore_walk (&w, plpis, FALSE))
    return NULL;
  if (w.at != n)
    {
      g_autofree char *what = vgic_reg_describe (writes[w.at].group, writes[w.at].attr);

      g_set_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET,
                   "QEMU's restore goes on after the restore's %" G_GSIZE_FORMAT " writes, "
                   "with %s", w.at, what);
      return NULL;
    }
  /* What a restore needs of the values beyond the writes: whether the VM
   * has LPIs, as a save's GICR_TYPER says it, and each vCPU's ICC_CTLR_EL1
   * (the guards, and the shape of the VM's next save). */
  kept = vgic_list_new (shape->nr_vcpus + 1);
  add (kept, VGIC_GRP_REDIST, REDIST (shape, 0, GICR_TYPER), plpis ? GICR_TYPER_PLPIS : 0);
  for (uint32_t cpu = 0; cpu < shape->nr_vcpus; cpu++)
    add (kept, VGIC_GRP_SYSREG, SYSREG (shape, cpu, ICC_CTLR_EL1), ctlrs[cpu]);
  return vgic_values_new (kept->entries, kept->len, error);
}

/* ------------------------------------------------------------------ */
/* Closed forms (docs/kernel-interface.md, "What QEMU 10.0 does")     */
/* ------------------------------------------------------------------ */

/* QEMU's get and put differ only in the clear-all writes: 3 more per
 * distributor bitmap word (enable, pending, active) and per vCPU. */
static guint
closed_form (const VgicShape *shape, gboolean plpis, guint apr, guint per_w1, guint per_cpu)
{
  guint s = shape->nr_irqs - 32;
  guint w1 = vgic_shape_spi_words (shape, 1);
  guint w2 = vgic_shape_spi_words (shape, 2);
  guint w8 = vgic_shape_spi_words (shape, 8);

  return 5 + per_w1 * w1 + w2 + w8 + 2 * s +
         shape->nr_vcpus * (per_cpu + 2 * apr + 4 * (plpis ? 1 : 0));
}

guint
vgic_plan_save_count (const VgicShape *shape, gboolean plpis, guint apr)
{
  return closed_form (shape, plpis, apr, 5, 24);
}

guint
vgic_plan_restore_count (const VgicShape *shape, gboolean plpis, guint apr)
{
  return closed_form (shape, plpis, apr, 8, 27);
}
