/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-exec.h - the executor: runs a list of vGIC accesses on the VM's vGIC
 * device fd, in the calling process (the only one the kernel lets do so).
 *
 * It knows nothing about GIC registers.  It knows the four data groups, the
 * width of each group's user buffer, and the batch group's calling
 * convention.  What to access, and in which order, comes from vgicd.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "vgicd/kvm-vgic-batch.h"

typedef enum {
  VGIC_EXEC_READ,	/* KVM_GET_DEVICE_ATTR: values are filled in */
  VGIC_EXEC_WRITE,	/* KVM_SET_DEVICE_ATTR: values are written */
} VgicExecDir;

typedef enum {
  VGIC_EXEC_BATCH,	/* one ioctl per chunk of <= VGICD_BATCH_CHUNK */
  VGIC_EXEC_SINGLE,	/* one ioctl per entry */
} VgicExecVia;

typedef struct {
  uint32_t done;	/* entries completed */
  int32_t error;	/* 0, or -errno of the entry that failed */
  uint32_t error_index;	/* index of that entry, when error != 0 (a batch
			 * refused as a whole, before any access: its first) */
  uint32_t ioctls;	/* device ioctls issued */
  uint64_t ns;		/* time spent issuing them */
} VgicExecReport;

/**
 * vgic_exec_check() - refuse a list the executor must not run: a group other
 * than DIST_REGS, REDIST_REGS, CPU_SYSREGS and LEVEL_INFO (never CTRL, ADDR,
 * NR_IRQS, ITS or BATCH), or, for a write, a value with bits above 31 in a
 * 32-bit group (the single path would truncate it silently)
 * @entries: the list, already copied out of any shared memory
 * @n: number of entries
 * @dir: read or write
 * @error: names the first offending entry
 */
gboolean vgic_exec_check (const struct kvm_vgic_batch_entry *entries, uint32_t n,
                          VgicExecDir dir, GError **error);

/**
 * vgic_exec_run() - execute @n accesses on @dev_fd
 * @dev_fd: the vGIC device fd
 * @entries: the accesses; must have passed vgic_exec_check().  Reads fill in
 *	.value (of the entries done)
 * @n: number of entries
 * @dir: read or write
 * @via: batched, or one ioctl per entry with a u32 buffer (u64 for
 *	CPU_SYSREGS)
 * @report: filled in whatever happens
 *
 * Stops at the first failing access.  Entries before it are done; that entry
 * and those after it are not (the kernel does not roll back).
 *
 * Return: TRUE when all @n entries completed.
 */
gboolean vgic_exec_run (int dev_fd, struct kvm_vgic_batch_entry *entries,
                        uint32_t n, VgicExecDir dir, VgicExecVia via,
                        VgicExecReport *report);
