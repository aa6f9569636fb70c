/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * qemu-fields.h - the patched QEMU's get and put on the fields path (the
 * default: the stream carries QEMU's own GIC fields, vgicd runs the
 * accesses), played against a real vgicd through libvgicd, as the demo and
 * the benchmark measure it.  Each call is timed in two parts: the libvgicd
 * call (libvgicd, the transport, vgicd and the kernel's calls) and QEMU's
 * own loop around it (the lookups of its get, the collection of its put's
 * writes), which a user's QEMU runs too.
 */
#pragma once

#include "libvgicd.h"
#include "vgic-list.h"
#include "vgic-shape.h"

typedef struct {
  double call_ms;	/* the vgicd_client_* call */
  double qemu_ms;	/* QEMU's own loop around it */
  guint missed;		/* get: reads vgicd did not have (QEMU reads them itself) */
} QemuFieldsTimes;

/**
 * qemu_fields_get_order() - the reads of QEMU 10.0's kvm_arm_gicv3_get(),
 * in its order, from vgic_direct_save()'s list (round 1, then round 2)
 */
VgicList *qemu_fields_get_order (const VgicShape *shape, const VgicList *save);

/**
 * qemu_fields_get() - SaveFields, then every read of @get (in @get's
 * order, qemu_fields_get_order()) looked up in what vgicd read, as
 * kvm_arm_gicv3_get() does; @get's accesses with their values into @reads
 *
 * Return: FALSE with @error set when the save failed or vgicd did not read
 * a register of @get (the patched QEMU would read it itself; a player
 * expects vgicd to have read all).
 */
gboolean qemu_fields_get (VgicdClient *c, const VgicList *get, VgicList **reads,
                          QemuFieldsTimes *t, GError **error);

/**
 * qemu_fields_put() - kvm_arm_gicv3_put()'s writes, collected into the array
 * handed to libvgicd, then LoadList
 * @put: the writes, in kvm_arm_gicv3_put()'s order, with the values of
 *	QEMU's fields (vgic_plan_restore_write (shape, state, FALSE)): made
 *	beforehand, as QEMU has its fields; only their collection, the loop
 *	QEMU runs, is timed as QEMU's
 */
gboolean qemu_fields_put (VgicdClient *c, const VgicList *put, QemuFieldsTimes *t,
                          GError **error);
