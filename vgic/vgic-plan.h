/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-plan.h - the planner: which vGIC accesses make up a save and a
 * restore, and in what order.
 *
 * A plan is a GArray of struct kvm_vgic_batch_entry, ready to hand to the
 * kernel's batch group as it is (or to run one access at a time).  Each
 * function returns one round: all reads, or all writes.
 *
 *   save:    vgic_plan_save_first()   (reads)
 *            vgic_plan_save_second()  (reads; depends on the first's values)
 *   restore: vgic_plan_restore_check() (reads: the TYPER checks)
 *            vgic_plan_restore_write() (writes, from a validated record)
 *
 * The accesses are exactly those of QEMU 10.0's kvm_arm_gicv3_get/put
 * (hw/intc/arm_gicv3_kvm.c), so that a VM saved by vgicd and one saved by
 * QEMU hold the same state.
 */
#pragma once

#include <glib.h>

#include "vgic-shape.h"
#include "vgic-values.h"

/**
 * vgic_plan_save_first() - round 1 of a save: every read whose presence does
 * not depend on a value (GICD_TYPER, GICR_TYPER of vCPU 0, the redistributor,
 * distributor and ICC state including every ICC_CTLR_EL1)
 * Return: a new array of reads.
 */
GArray *vgic_plan_save_first (const VgicShape *shape);

/**
 * vgic_plan_save_second() - round 2 of a save: PROPBASER/PENDBASER of every
 * vCPU when GICR_TYPER.PLPIS, and the AP0R/AP1R registers per vCPU as its
 * ICC_CTLR_EL1.PRIbits asks
 * @shape: the VM
 * @first: the values round 1 read
 * @error: set when a value the round depends on is missing
 *
 * Return: a new array of reads (possibly empty), or NULL with @error set.
 */
GArray *vgic_plan_save_second (const VgicShape *shape, const VgicValues *first,
                               GError **error);

/**
 * vgic_plan_save_inputs() - the values round 2 depends on (GICR_TYPER of
 * vCPU 0, every ICC_CTLR_EL1), picked out of round 1's reads
 * @reads: round 1's reads (or a whole save), with values
 * @n: their number
 * @error: set if two reads of one of them disagree
 *
 * Indexing only these few is much cheaper than indexing every read, which
 * matters on a slow host: vgicd calls this on each save.
 *
 * Return: the values, for vgic_plan_save_second(), or NULL with @error set.
 */
VgicValues *vgic_plan_save_inputs (const VgicShape *shape,
                                   const struct kvm_vgic_batch_entry *reads,
                                   gsize n, GError **error);

/**
 * vgic_plan_save_guess() - round 2 of a save for a VM assumed to have
 * GICR_TYPER.PLPIS = @plpis and @apr AP registers per group on every vCPU
 *
 * vgicd runs it in the same list as round 1, after it, so a save takes one
 * round when the assumption holds (it is a property of the host and of the
 * VM's configuration, so the last save's shape is a good guess).  The reads
 * of round 1 then say whether it held: compare with vgic_plan_save_second().
 *
 * Return: a new array of reads.
 */
GArray *vgic_plan_save_guess (const VgicShape *shape, gboolean plpis, guint apr);

/**
 * vgic_plan_save_shape() - what round 1's values say round 2 reads:
 * GICR_TYPER.PLPIS, and the AP registers per group of vCPU 0
 * Return: FALSE with @error set when a value is missing.
 */
gboolean vgic_plan_save_shape (const VgicShape *shape, const VgicValues *first,
                               gboolean *plpis, guint *apr, GError **error);

/**
 * vgic_plan_restore_check() - the read round of a restore: GICD_TYPER and
 * GICR_TYPER (lo, hi) of vCPU 0, as QEMU's put reads them
 */
GArray *vgic_plan_restore_check (const VgicShape *shape);

/**
 * vgic_plan_restore_write() - the write round of a restore
 * @shape: the VM
 * @state: the saved values (a record that vgic_plan_check_saved() accepted)
 * @check: the values vgic_plan_restore_check() read from the destination
 * @error: set when the destination cannot take this state (fewer IRQs than
 *	the VM, or LPI support on one side only); nothing has been written then
 *
 * Return: a new array of writes, or NULL with @error set.
 */
GArray *vgic_plan_restore_write (const VgicShape *shape, const VgicValues *state,
                                 const VgicValues *check, GError **error);

/**
 * VgicGuard - a condition on one value read from the destination before a
 * restore writes anything: min <= (value & mask) <= max.
 */
typedef struct {
  guint64 mask, min, max;
} VgicGuard;

/**
 * vgic_plan_restore_guards() - vgic_plan_restore_check()'s reads, with the
 * conditions vgic_plan_restore_write() would check on their values
 * @shape: the VM
 * @state: the saved values (a validated record)
 * @guards: (out): a new array of VgicGuard, one per read
 *
 * A peer that can check them runs these reads and, only when every
 * condition holds, the writes of vgic_plan_restore_guarded(): a restore in
 * one round.  When one does not hold, pass what was read to
 * vgic_plan_restore_write(), which names the mismatch.
 *
 * Return: a new array of reads.
 */
GArray *vgic_plan_restore_guards (const VgicShape *shape, const VgicValues *state,
                                  GArray **guards);

/**
 * vgic_plan_restore_guarded() - the writes of a restore into a destination
 * that passed vgic_plan_restore_guards()
 * Return: a new array of writes, or NULL with @error set.
 */
GArray *vgic_plan_restore_guarded (const VgicShape *shape, const VgicValues *state,
                                   GError **error);

/**
 * vgic_plan_check_saved() - check that @state holds exactly the registers a
 * save of @shape reads: none missing, none unexpected (duplicates were
 * already refused by vgic_values_new())
 */
gboolean vgic_plan_check_saved (const VgicShape *shape, const VgicValues *state,
                                GError **error);

/**
 * vgic_plan_save_count() / vgic_plan_restore_count() - accesses in a whole
 * save or restore for a uniform VM (@plpis: GICR_TYPER.PLPIS, @apr: AP
 * registers per group), from the closed forms of KVM-VGIC-FACTS.md §3.
 * The planner does not use these; the tests and the demo compare with them.
 */
guint vgic_plan_save_count (const VgicShape *shape, gboolean plpis, guint apr);
guint vgic_plan_restore_count (const VgicShape *shape, gboolean plpis, guint apr);
