/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-validate.h - the rules that decide whether a saved vGIC state may be
 * written to a VM: every check between "these bytes came from another host"
 * and "vgicd lays out a write", in one place.
 *
 *   a record, on its own and against the attached VM: vgic_validate_record()
 *   the destination's answers to the restore's first reads (room for every
 *   IRQ, LPIs on both sides or neither, a CPU interface that takes the
 *   state's ICC_CTLR_EL1), as guards a peer checks before it
 *   writes, and as a check vgicd makes itself: vgic_validate_guards(),
 *   vgic_validate_destination()
 *   QEMU's own restore, as a list of writes: vgic_validate_restore_list(),
 *   vgic_validate_writes()
 *   what an executor hands back: vgic_validate_results()
 *
 * The record's byte format (magic, version, lengths, checksum) is the
 * decoder's business (vgic-record.c); what the bytes say is decided here.
 */
#pragma once

#include <glib.h>

#include "vgic-list.h"
#include "vgic-record.h"
#include "vgic-shape.h"
#include "vgic-values.h"

/**
 * vgic_validate_record() - may @record's state be written to @vm?
 * @record: a record as vgic_record_parse() read it (its bytes are sound and
 *	its checksum right); on success its @values are set
 * @vm: the attached VM, or NULL to judge the record on its own terms
 * @first: vgic_plan_save_first (@vm) when the caller keeps it planned
 *	(vgicd's session plans it at attach), else NULL
 * @error: VGICD_ERROR_INVALID_SHAPE, VGICD_ERROR_SHAPE_MISMATCH,
 *	VGICD_ERROR_REGISTER_SET or VGICD_ERROR_BAD_RECORD, naming what is wrong
 *
 * The one entry point for a record: vgic_record_decode() calls it with no
 * VM, vgicd's session with the VM it serves.  Each check runs only once the
 * ones before it held:
 *  1. the shape the record was saved from is a possible KVM vGICv3;
 *  2. it is @vm's: vCPU count, nr_irqs, every affinity in order (before the
 *     registers, so that a record for another VM is reported as such);
 *  3. every entry is in one of the four state groups, no register appears
 *     twice, and every value fits its register;
 *  4. the entries are exactly the registers a save of the shape reads, in
 *     plan order (vgic_plan_save_registers()), with the routes QEMU misses
 *     in a version 2 record and without them in a version 1 one; a version
 *     2 record has one of those routes not 0 (else it would be a version
 *     1 record: the encoding is canonical);
 *  5. with @vm, no value is one the kernel refuses on any destination
 *     (ICC_SRE_EL1 without SRE); those only the destination can judge are
 *     guards (vgic_validate_guards()).
 */
gboolean vgic_validate_record (VgicRecord *record, const VgicShape *vm,
                               const VgicList *first, GError **error);

/**
 * vgic_validate_saved() - check 4 of vgic_validate_record() on a value set:
 * @state holds exactly the registers a save of @shape reads (with the
 * routes QEMU misses if @routes), none missing, none unexpected (naming the
 * first of either)
 */
gboolean vgic_validate_saved (const VgicShape *shape, const VgicValues *state,
                              gboolean routes, GError **error);

/**
 * vgic_validate_guards() - the reads a restore makes before it writes
 * (vgic_plan_restore_check(), QEMU's, then every vCPU's ICC_CTLR_EL1, in
 * vCPU order), each with the condition the destination's value must meet
 * for @state to be written there
 * @shape: the VM
 * @state: the saved values (a validated record's)
 *
 * A peer that checks guards runs these reads and then the writes only if
 * every condition holds: a restore in one round.  The conditions are those
 * vgic_validate_destination() checks, so the two always agree.
 *
 * Return: a new list whose every entry is a guard.
 */
VgicList *vgic_validate_guards (const VgicShape *shape, const VgicValues *state);

/**
 * vgic_validate_destination() - can the destination that answered @check
 * (the values of vgic_validate_guards()'s reads) take @state?
 * @error: VGICD_ERROR_KERNEL (fewer IRQs than the VM, or a CPU interface
 *	the destination's kernel would refuse: ICC_CTLR_EL1's PRIbits, IDbits,
 *	SEIS or A3V) or
 *	VGICD_ERROR_SHAPE_MISMATCH (LPI support on one side only), or
 *	VGICD_ERROR_REGISTER_SET when @check or @state lacks a register;
 *	nothing has been written then
 */
gboolean vgic_validate_destination (const VgicShape *shape, const VgicValues *state,
                                    const VgicValues *check, GError **error);

/**
 * vgic_validate_writes() - may @writes, the list QEMU's own restore makes
 * (kvm_arm_gicv3_put's writes, in its order, with its values), run on @shape?
 * @plan: (out) (optional): a copy of @writes, which are the restore vgicd
 *	plans for those values, access for access: the writes to lay out, not
 *	planned again
 * @error: VGICD_ERROR_REGISTER_SET naming the first write that is not a vGIC
 *	register, does not fit its register, or differs from the restore vgicd
 *	plans, or VGICD_ERROR_BAD_RECORD for an ICC_SRE_EL1 the kernel refuses;
 *	nothing has been written then
 *
 * The list must be exactly vgic_plan_restore_write() of the values it
 * writes: the same accesses, in the same order, with the same values.
 *
 * Return: those values, each register once (the clear-alls' ~0 among them,
 * which no plan reads), with GICR_TYPER.PLPIS of vCPU 0 set as the list's
 * LPI base writes say, for vgic_validate_guards() and the restore, or NULL
 * with @error set.
 */
VgicValues *vgic_validate_writes (const VgicShape *shape, const VgicEntry *writes, gsize n,
                                  VgicList **plan, GError **error);

/**
 * vgic_validate_restore_list() - vgic_validate_writes() for the restore
 * vgicd runs: may @writes run on @shape as they are?
 * @writes: vgicd's private copy of QEMU's list; when it may, it is the
 *	restore to lay out, checked access for access against the restore
 *	order (vgic_plan_check_restore()), with each entry's reserved field
 *	set to 0 as in a plan
 * @error: as vgic_validate_writes() sets it, word for word
 *
 * Return: what the restore needs of the values beyond the writes: GICR_TYPER
 * of vCPU 0 (PLPIS as the list writes the LPI bases) and every vCPU's
 * ICC_CTLR_EL1, for vgic_validate_guards(), vgic_validate_destination()
 * and the VM's next save; or NULL with @error set.
 */
VgicValues *vgic_validate_restore_list (const VgicShape *shape, VgicList *writes,
                                        GError **error);

/**
 * vgic_validate_writes_by_values() - vgic_validate_writes() as it was first
 * made (for the tests, and to word a refusal): the list turned back into
 * values, those planned, the two lists compared; the verdict is the same,
 * the cost far higher
 */
VgicValues *vgic_validate_writes_by_values (const VgicShape *shape, const VgicEntry *writes,
                                            gsize n, VgicList **plan, GError **error);

/**
 * vgic_validate_results() - what an executor handed back for @sent: the
 * first @n entries access the same registers in the same order (it may
 * change values and errors only), and every value fits its register
 * @got: the entries, already copied out of shared memory
 * @error: VGICD_ERROR_FAILED, naming the entry
 */
gboolean vgic_validate_results (const VgicList *sent, const VgicEntry *got, guint n,
                                GError **error);
