/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-direct.h - a whole save or restore run straight on a vGIC fd,
 * without vgicd: QEMU 10.0's own path (one register per ioctl) when run
 * VGIC_EXEC_SINGLE, and a quick way to read back what a VM holds.  The
 * demo and the tests compare vgicd's results with it.
 */
#pragma once

#include "vgic-exec.h"
#include "vgic-plan.h"
#include "vgic-validate.h"

/**
 * vgic_direct_save() - both save rounds on @fd
 * @shape: the VM
 * @fd: its vGIC device fd
 * @via: one ioctl per register, or batched
 * @routes: FALSE: QEMU 10.0's reads exactly; TRUE: also every route QEMU
 *	misses (vgic_plan_save_routes(), after round 1), as vgicd saves for
 *	its record: the VM's whole register file
 * @report: if not NULL, the executor's figures summed over both rounds
 * @error: names the register whose access failed
 *
 * Return: every read, round 1 then round 2, with its value (ready for
 * vgic_record_encode()), or NULL with @error set.
 */
VgicList *vgic_direct_save (const VgicShape *shape, int fd, VgicExecVia via,
                            gboolean routes, VgicExecReport *report, GError **error);

/**
 * vgic_direct_restore() - the TYPER reads, then every write, on @fd, in
 * kvm_arm_gicv3_put's order, once the destination passed
 * vgic_validate_destination() (as QEMU checks it before it writes)
 * @state: the saved values (a decoded record's)
 * @routes: write the routes QEMU misses too (@state has them: a version 2
 *	record's), as vgicd's restore does; FALSE is QEMU's path exactly
 */
gboolean vgic_direct_restore (const VgicShape *shape, int fd, const VgicValues *state,
                              gboolean routes, VgicExecVia via, VgicExecReport *report,
                              GError **error);
