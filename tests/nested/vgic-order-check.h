/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-order-check.h - the nested tier's check of a restore's *order*: is
 * every interrupt the restored state makes deliverable queued on the vCPU
 * list the kernel's rules say (docs/kernel-interface.md, "Ordering rules the
 * kernel enforces")?  Register read-backs cannot see this; KVM's debugfs
 * file vgic-state (arch/arm64/kvm/vgic/vgic-debug.c) can.  Also the
 * negative control: the same state written with raw single writes in an
 * order that breaks R3, R0 or R2, which the check must catch.
 */
#pragma once

#include <glib.h>

#include "vgic-shape.h"
#include "vgic-values.h"

/* VgicOrderResult - what one check found.  "Deliverable": the IRQs
 * vgic_target_oracle() names a vCPU for, given the VM's registers. */
typedef struct {
  guint deliverable;		/* private and shared */
  guint spis;			/* deliverable SPIs */
  guint spi_edge, spi_level;	/* not active: edge with its latch set; level, line high, latch clear */
  guint spi_active;		/* active (queued whatever else holds) */
  guint off0_edge, off0_level, off0_active;	/* the same, routed to a vCPU other than 0 */
  guint misplaced;		/* deliverable, on another vCPU's list */
  guint unqueued;		/* deliverable, on no list */
  guint stray;			/* on a list though not deliverable (reported only) */
  guint disagree;		/* IRQs whose vgic-state flags differ from the registers */
} VgicOrderResult;

/* Which rule vgic_order_restore_broken() breaks. */
typedef enum {
  VGIC_ORDER_BREAK_R3,	/* every GICD_IROUTER write last */
  VGIC_ORDER_BREAK_R0,	/* GICD_CTLR last */
  VGIC_ORDER_BREAK_R2,	/* every GICD_ICFGR write last */
} VgicOrderBreak;

/**
 * vgic_order_state_path() - /sys/kernel/debug/kvm/PID-VMFD/vgic-state of the
 * VM @vm_fd that this process created (kvm_create_vm_debugfs() names the
 * folder after the creator's pid and the VM's fd number)
 */
char *vgic_order_state_path (int vm_fd);

/**
 * vgic_order_check() - compare where the kernel queued each IRQ of the VM
 * @vm_fd with where the rules say it must be
 * @shape: the VM (its vCPUs' affinities, in index order)
 * @state: the VM's own registers, read back one by one with every route
 * @result: filled in, also when it returns FALSE for misplaced IRQs
 * @error: G_FILE_ERROR_NOENT when there is no vgic-state (no debugfs);
 *	G_IO_ERROR_FAILED when an IRQ is misplaced or unqueued, or when the
 *	file's flags disagree with @state (a misread, or another VM's file)
 *
 * Return: TRUE when every deliverable IRQ is on its target's list.
 */
gboolean vgic_order_check (int vm_fd, const VgicShape *shape, const VgicValues *state,
                           VgicOrderResult *result, GError **error);

/**
 * vgic_order_fresh() - the vgic-state of @vm_fd shows a VM nothing was
 * written to: distributor disabled, no IRQ on any list.  KVM refuses a
 * second debugfs folder of one name, so a VM created while an earlier one
 * with the same fd number is still alive (vgicd may still hold its vGIC
 * fd) has no file of its own, and the path shows the old VM.
 * @error: G_FILE_ERROR_NOENT as vgic_order_check(); G_IO_ERROR_EXISTS when
 *	the file is not a fresh VM's
 */
gboolean vgic_order_fresh (int vm_fd, const VgicShape *shape, GError **error);

/**
 * vgic_order_restore_broken() - write @state into the fresh vGIC @gic_fd one
 * KVM_SET_DEVICE_ATTR per register, in the planner's order (routes
 * included) but for the writes @brk moves to the end
 * @writes: how many writes were made
 */
gboolean vgic_order_restore_broken (int gic_fd, const VgicShape *shape,
                                    const VgicValues *state, VgicOrderBreak brk,
                                    guint *writes, GError **error);

/**
 * vgic_order_write() - write @list into the vGIC @gic_fd as it is, one
 * KVM_SET_DEVICE_ATTR per entry, stopping at the first the kernel refuses
 * @writes: how many writes were made
 */
gboolean vgic_order_write (int gic_fd, const VgicList *list, guint *writes, GError **error);
