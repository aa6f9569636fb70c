/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-plan.h - the planner: which vGIC accesses make up a save and a
 * restore, and in what order.
 *
 * A plan is a VgicList, ready to hand to the kernel's batch group as it is
 * (or to run one access at a time).  Each function returns one round: all
 * reads, or all writes.
 *
 *   save:    vgic_plan_save_first()   (reads)
 *            vgic_plan_save_second()  (reads; depends on the first's values)
 *   restore: vgic_plan_restore_check() (reads: the TYPER checks)
 *            vgic_plan_restore_write() (writes, from a validated record)
 *            vgic_plan_check_restore() (QEMU's own writes: are they that?)
 *
 * The planner says what a save and a restore are; whether a state may be
 * written to a VM is vgic-validate.h's to say.
 *
 * The accesses are exactly those of QEMU 10.0's kvm_arm_gicv3_get/put
 * (hw/intc/arm_gicv3_kvm.c), so that a VM saved by vgicd and one saved by
 * QEMU hold the same state (a put of QEMU 10.2 leaves out the pending
 * clear-alls: VgicPutOrder, below).  The one addition is the routes QEMU's
 * GICD_IROUTER addressing misses (vgic_plan_save_routes()), which only
 * vgicd's own record carries: @routes says whether a save or a restore
 * includes them.
 */
#pragma once

#include <glib.h>

#include "vgic-list.h"
#include "vgic-shape.h"
#include "vgic-values.h"

/**
 * vgic_plan_save_first() - round 1 of a save: every read whose presence does
 * not depend on a value (GICD_TYPER, GICR_TYPER of vCPU 0, the redistributor,
 * distributor and ICC state including every ICC_CTLR_EL1)
 * Return: a new list of reads.
 */
VgicList *vgic_plan_save_first (const VgicShape *shape);

/**
 * vgic_plan_save_routes() - the reads of the SPI routes QEMU 10.0's
 * accesses miss: GICD_IROUTER<m> at its architected offset 0x6000 + 8m, for
 * every SPI m above nr_irqs / 2 (see the quirk in vgic-plan.c)
 *
 * A save whose state goes into vgicd's record reads these after round 1
 * (vgicd lays them out in the same step), so that the record carries the
 * route of every SPI.  QEMU's own fields have no place for them.
 *
 * Return: a new list of vgic_plan_route_count() reads.
 */
VgicList *vgic_plan_save_routes (const VgicShape *shape);

/**
 * vgic_plan_route_count() - how many routes vgic_plan_save_routes() reads:
 * nr_irqs / 2 - 1
 */
guint vgic_plan_route_count (const VgicShape *shape);

/**
 * vgic_plan_is_route() - is (@group, @attr) one of vgic_plan_save_routes()?
 */
gboolean vgic_plan_is_route (const VgicShape *shape, uint32_t group, uint64_t attr);

/**
 * vgic_plan_save_second() - round 2 of a save: PROPBASER/PENDBASER of every
 * vCPU when GICR_TYPER.PLPIS, and the AP0R/AP1R registers per vCPU as its
 * ICC_CTLR_EL1.PRIbits asks
 * @shape: the VM
 * @first: the values round 1 read
 * @error: set when a value the round depends on is missing
 *
 * Return: a new list of reads (possibly empty), or NULL with @error set.
 */
VgicList *vgic_plan_save_second (const VgicShape *shape, const VgicValues *first,
                                 GError **error);

/**
 * vgic_plan_save_qemu_order() - a save's reads in the order of QEMU 10.0's
 * kvm_arm_gicv3_get(): round 1 with round 2 merged in where QEMU reads it
 * (the LPI bases after the redistributors, each vCPU's APRs after its ICC
 * registers)
 * @first: round 1 (vgic_plan_save_first()'s accesses, with or without values)
 * @second: round 2 for those values (vgic_plan_save_second())
 *
 * What QEMU's own get reads, one access after the other: the order in which
 * it looks the values of a SaveFields up.
 *
 * Return: a new list of first->len + second->len accesses.
 */
VgicList *vgic_plan_save_qemu_order (const VgicList *first, const VgicList *second);

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
VgicValues *vgic_plan_save_inputs (const VgicShape *shape, const VgicEntry *reads,
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
 * Return: a new list of reads.
 */
VgicList *vgic_plan_save_guess (const VgicShape *shape, gboolean plpis, guint apr);

/**
 * VgicSaveCheck - a condition on one value a save's first step reads:
 * min <= (value & mask) <= max, the value being the step's @index-th read.
 * The layout is the step channel's (tttt), as a VgicGuard is (ttt).
 */
typedef struct {
  guint64 index, mask, min, max;
} VgicSaveCheck;

/**
 * vgic_plan_save_checks() - what round 1's values must be for @guess to be
 * the round 2 they ask for
 * @shape: the VM
 * @first: round 1 as the step starts with it (vgic_plan_save_first())
 * @guess: the round 2 laid out after it (vgic_plan_save_guess(), or an
 *	earlier save's vgic_plan_save_second())
 * @n: set to the number of checks
 *
 * One check on GICR_TYPER.PLPIS of vCPU 0, and one on each vCPU's
 * ICC_CTLR_EL1.PRIbits.  They are sufficient, not necessary: when all
 * hold, vgic_plan_save_second() of round 1's values has @guess's accesses
 * (a PRIbits outside the range checked but giving the same count, which no
 * GIC has, only fails its check).  So a peer that sees them hold knows the
 * step's reads are the whole save, without asking vgicd.
 *
 * Return: a new array of *@n checks, or NULL when @guess is not a round 2
 * of this shape or @first lacks one of those reads.
 */
VgicSaveCheck *vgic_plan_save_checks (const VgicShape *shape, const VgicList *first,
                                      const VgicList *guess, guint *n);

/**
 * vgic_plan_save_shape() - what round 1's values say round 2 reads:
 * GICR_TYPER.PLPIS, and the AP registers per group of vCPU 0
 * Return: FALSE with @error set when a value is missing.
 */
gboolean vgic_plan_save_shape (const VgicShape *shape, const VgicValues *first,
                               gboolean *plpis, guint *apr, GError **error);

/**
 * vgic_plan_read_may_repeat() - can a save read the register of @e more than
 * once?  Only QEMU's overlapping GICD_IROUTER words repeat (the "hi" word of
 * IRQ n is the "lo" word of IRQ n + 1), and they are DIST offsets below
 * 64 KiB; every other attr names one register of one vCPU once.
 */
gboolean vgic_plan_read_may_repeat (const VgicEntry *e);

/**
 * vgic_plan_save_registers() - the registers a save of @shape reads, each
 * once, in plan order: round 1, then the routes QEMU misses if @routes,
 * then round 2 as @values asks, a repeated read kept where it is first
 * made; values left 0
 * @values: round 1's values (at least vgic_plan_save_inputs()'s)
 * @first: vgic_plan_save_first (@shape) when the caller has it, else NULL
 * @routes: with vgic_plan_save_routes() (a version 2 record)
 *
 * This is the register list of a state record, in the record's order.
 *
 * Return: a new list, or NULL with @error set when @values lacks a value
 * round 2 depends on.
 */
VgicList *vgic_plan_save_registers (const VgicShape *shape, const VgicValues *values,
                                    const VgicList *first, gboolean routes,
                                    GError **error);

/**
 * vgic_plan_restore_check() - the read round of a restore: GICD_TYPER and
 * GICR_TYPER (lo, hi) of vCPU 0, as QEMU's put reads them
 */
VgicList *vgic_plan_restore_check (const VgicShape *shape);

/**
 * vgic_plan_restore_write() - the write round of a restore
 * @shape: the VM
 * @state: the saved values, of a record vgic_validate_record() accepted,
 *	for a destination vgic_validate_destination() accepted
 * @routes: write the routes of vgic_plan_save_routes() too (from a version
 *	2 record), right after QEMU's IROUTER writes (rule R3)
 * @error: set when @state lacks a register (a record that was not validated)
 *
 * Return: a new list of writes, in kvm_arm_gicv3_put's order, or NULL with
 * @error set.
 */
VgicList *vgic_plan_restore_write (const VgicShape *shape, const VgicValues *state,
                                   gboolean routes, GError **error);

/**
 * VgicPutOrder - the orders of kvm_arm_gicv3_put() that vgicd knows
 * @VGIC_PUT_CLEAR_PENDING: QEMU 10.0's: every pending register is cleared
 *	(~0 to GICR_ICPENDR0, to each SPI word's GICD_ICPENDR) right before
 *	it is set, as enable and active are (rule R5)
 * @VGIC_PUT_SET_PENDING: QEMU 10.2's (10.1 not checked): the pending
 *	registers are set only, which the kernel makes the same (a user-space
 *	ISPENDR write replaces the latch, R5); every other access the same
 *
 * vgicd's own restore (from a record) keeps QEMU 10.0's order; a list QEMU
 * hands over is checked against the order it has (vgic_plan_put_order()).
 */
typedef enum {
  VGIC_PUT_CLEAR_PENDING,
  VGIC_PUT_SET_PENDING,
} VgicPutOrder;

/**
 * vgic_plan_restore_write_in() - vgic_plan_restore_write() in @order
 */
VgicList *vgic_plan_restore_write_in (const VgicShape *shape, const VgicValues *state,
                                      gboolean routes, VgicPutOrder order, GError **error);

/**
 * vgic_plan_put_order() - the order of kvm_arm_gicv3_put() that @writes
 * has, if it has one: QEMU 10.0's where vCPU 0's GICR_ICPENDR0 is where
 * that order writes it, else the other.  vgic_plan_check_restore() decides
 * the rest.
 */
VgicPutOrder vgic_plan_put_order (const VgicShape *shape, const VgicEntry *writes, gsize n);

/**
 * vgic_plan_check_restore() - are @writes exactly vgic_plan_restore_write_in()
 * (without routes, in their vgic_plan_put_order()) of the values they write?
 * @shape: the VM
 * @writes: QEMU's own restore, kvm_arm_gicv3_put's writes in its order
 * @n: their number
 * @error: (optional): VGICD_ERROR_REGISTER_SET naming the write where the
 *	list leaves the restore order, or VGICD_ERROR_BAD_RECORD for an
 *	ICC_SRE_EL1 without SRE, which the kernel refuses
 *
 * One pass along the restore order, each value taken from @writes at a
 * cursor: the same access, a value that fits, ~0 for a clear-all, the
 * previous write's value where a register is written twice (QEMU's
 * overlapping IROUTER words), the LPI bases exactly when write 1 is vCPU
 * 0's PROPBASER, each vCPU's APRs as the ICC_CTLR_EL1 it writes asks.  A
 * list that passes is its own plan, to lay out as it is; nothing is
 * allocated per write.  The words of a refusal for the operator are
 * vgic_validate_writes()'s.
 *
 * Return: what a restore needs of the values beyond the writes (GICR_TYPER
 * of vCPU 0, PLPIS as the list writes the bases, and every vCPU's
 * ICC_CTLR_EL1: vgic_validate_guards(), vgic_plan_save_second()), or NULL.
 */
VgicValues *vgic_plan_check_restore (const VgicShape *shape, const VgicEntry *writes,
                                     gsize n, GError **error);

/**
 * vgic_plan_save_count() / vgic_plan_restore_count() - accesses in a whole
 * save or restore for a uniform VM (@plpis: GICR_TYPER.PLPIS, @apr: AP
 * registers per group), from the closed forms of docs/kernel-interface.md.
 * The planner does not use these to plan; the tests and the demo compare
 * with them, and they bound what a list or a record can hold.  Neither
 * counts vgic_plan_route_count(): QEMU makes none of those accesses.
 */
guint vgic_plan_save_count (const VgicShape *shape, gboolean plpis, guint apr);
guint vgic_plan_restore_count (const VgicShape *shape, gboolean plpis, guint apr);
