/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR LGPL-2.1-or-later */
/*
 * kvm-vgic-batch.h - the arm64 vGICv3 device-attr UAPI vgicd relies on,
 * plus the batch group this project adds to the kernel.
 *
 * Why this header exists: <linux/kvm.h> on an x86-64 build host carries the
 * generic device-attr ioctls but not arm64's <asm/kvm.h>, so none of the
 * KVM_DEV_ARM_VGIC_* groups exist there.  vgicd (which only plans) builds on
 * any host; libvgicd (which executes) builds on arm64.  Every definition below
 * is guarded so that a system header that already provides it wins, and a
 * mismatch shows up as a redefinition error at build time.
 *
 * Provenance of each block is noted beside it.  "6.1" means Linux 6.1.192 as
 * shipped by Debian 12's linux-source-6.1; the numbers have been stable since
 * the groups were introduced (4.x) and are unchanged in 6.12.
 */
#pragma once

#include <stddef.h>	/* offsetof */
#include <linux/types.h>
#include <linux/kvm.h>	/* struct kvm_device_attr, KVM_{GET,SET,HAS}_DEVICE_ATTR */

/*
 * Device-attr groups of the vGIC.
 * From: arch/arm64/include/uapi/asm/kvm.h (6.1), "Device Control API: ARM VGIC".
 */
#ifndef KVM_DEV_ARM_VGIC_GRP_ADDR
#define KVM_DEV_ARM_VGIC_GRP_ADDR		0
#endif
#ifndef KVM_DEV_ARM_VGIC_GRP_DIST_REGS
#define KVM_DEV_ARM_VGIC_GRP_DIST_REGS		1
#endif
#ifndef KVM_DEV_ARM_VGIC_GRP_CPU_REGS
#define KVM_DEV_ARM_VGIC_GRP_CPU_REGS		2
#endif
#ifndef KVM_DEV_ARM_VGIC_GRP_NR_IRQS
#define KVM_DEV_ARM_VGIC_GRP_NR_IRQS		3
#endif
#ifndef KVM_DEV_ARM_VGIC_GRP_CTRL
#define KVM_DEV_ARM_VGIC_GRP_CTRL		4
#endif
#ifndef KVM_DEV_ARM_VGIC_GRP_REDIST_REGS
#define KVM_DEV_ARM_VGIC_GRP_REDIST_REGS	5
#endif
#ifndef KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS
#define KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS	6
#endif
#ifndef KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO
#define KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO		7
#endif
#ifndef KVM_DEV_ARM_VGIC_GRP_ITS_REGS
#define KVM_DEV_ARM_VGIC_GRP_ITS_REGS		8
#endif
/* Group 9 is KVM_DEV_ARM_VGIC_GRP_MAINT_IRQ upstream (not in 6.1): never reuse. */

/*
 * Attr encodings.  From: arch/arm64/include/uapi/asm/kvm.h (6.1).
 * DIST/REDIST: attr = mpidr[63:32] | offset[31:0].
 * CPU_SYSREGS: attr = mpidr[63:32] | op0:op1:CRn:CRm:op2 in [15:0].
 * LEVEL_INFO:  attr = mpidr[63:32] | info[31:10] | vINTID[9:0].
 */
#ifndef KVM_DEV_ARM_VGIC_V3_MPIDR_SHIFT
#define KVM_DEV_ARM_VGIC_V3_MPIDR_SHIFT		32
#endif
#ifndef KVM_DEV_ARM_VGIC_V3_MPIDR_MASK
#define KVM_DEV_ARM_VGIC_V3_MPIDR_MASK \
	(0xffffffffULL << KVM_DEV_ARM_VGIC_V3_MPIDR_SHIFT)
#endif
#ifndef KVM_DEV_ARM_VGIC_OFFSET_SHIFT
#define KVM_DEV_ARM_VGIC_OFFSET_SHIFT		0
#endif
#ifndef KVM_DEV_ARM_VGIC_OFFSET_MASK
#define KVM_DEV_ARM_VGIC_OFFSET_MASK \
	(0xffffffffULL << KVM_DEV_ARM_VGIC_OFFSET_SHIFT)
#endif
#ifndef KVM_DEV_ARM_VGIC_SYSREG_INSTR_MASK
#define KVM_DEV_ARM_VGIC_SYSREG_INSTR_MASK	(0xffff)
#endif
#ifndef KVM_DEV_ARM_VGIC_LINE_LEVEL_INFO_SHIFT
#define KVM_DEV_ARM_VGIC_LINE_LEVEL_INFO_SHIFT	10
#endif
#ifndef KVM_DEV_ARM_VGIC_LINE_LEVEL_INFO_MASK
#define KVM_DEV_ARM_VGIC_LINE_LEVEL_INFO_MASK \
	(0x3fffffULL << KVM_DEV_ARM_VGIC_LINE_LEVEL_INFO_SHIFT)
#endif
#ifndef KVM_DEV_ARM_VGIC_LINE_LEVEL_INTID_MASK
#define KVM_DEV_ARM_VGIC_LINE_LEVEL_INTID_MASK	0x3ff
#endif
#ifndef VGIC_LEVEL_INFO_LINE_LEVEL
#define VGIC_LEVEL_INFO_LINE_LEVEL		0
#endif

/* CTRL attrs.  From: arch/arm64/include/uapi/asm/kvm.h (6.1). */
#ifndef KVM_DEV_ARM_VGIC_CTRL_INIT
#define KVM_DEV_ARM_VGIC_CTRL_INIT		0
#endif
#ifndef KVM_DEV_ARM_ITS_SAVE_TABLES
#define KVM_DEV_ARM_ITS_SAVE_TABLES		1
#endif
#ifndef KVM_DEV_ARM_ITS_RESTORE_TABLES
#define KVM_DEV_ARM_ITS_RESTORE_TABLES		2
#endif
#ifndef KVM_DEV_ARM_VGIC_SAVE_PENDING_TABLES
#define KVM_DEV_ARM_VGIC_SAVE_PENDING_TABLES	3
#endif

/*
 * Device types for KVM_CREATE_DEVICE.  From: include/uapi/linux/kvm.h (6.1),
 * enum kvm_device_type (present on every arch, so normally already defined).
 */
#ifndef KVM_DEV_TYPE_ARM_VGIC_V3
#define KVM_DEV_TYPE_ARM_VGIC_V3		7
#endif
#ifndef KVM_DEV_TYPE_ARM_VGIC_ITS
#define KVM_DEV_TYPE_ARM_VGIC_ITS		8
#endif

/* vGICv3 address types.  From: arch/arm64/include/uapi/asm/kvm.h (6.1). */
#ifndef KVM_VGIC_V3_ADDR_TYPE_DIST
#define KVM_VGIC_V3_ADDR_TYPE_DIST		2
#endif
#ifndef KVM_VGIC_V3_ADDR_TYPE_REDIST
#define KVM_VGIC_V3_ADDR_TYPE_REDIST		3
#endif
#ifndef KVM_VGIC_ITS_ADDR_TYPE
#define KVM_VGIC_ITS_ADDR_TYPE			4
#endif

/*
 * Sysreg field layout of a CPU_SYSREGS attr.
 * From: arch/arm64/include/uapi/asm/kvm.h (6.1), KVM_REG_ARM64_SYSREG_*.
 */
#ifndef KVM_REG_ARM64_SYSREG_OP0_SHIFT
#define KVM_REG_ARM64_SYSREG_OP0_MASK		0x000000000000c000
#define KVM_REG_ARM64_SYSREG_OP0_SHIFT		14
#define KVM_REG_ARM64_SYSREG_OP1_MASK		0x0000000000003800
#define KVM_REG_ARM64_SYSREG_OP1_SHIFT		11
#define KVM_REG_ARM64_SYSREG_CRN_MASK		0x0000000000000780
#define KVM_REG_ARM64_SYSREG_CRN_SHIFT		7
#define KVM_REG_ARM64_SYSREG_CRM_MASK		0x0000000000000078
#define KVM_REG_ARM64_SYSREG_CRM_SHIFT		3
#define KVM_REG_ARM64_SYSREG_OP2_MASK		0x0000000000000007
#define KVM_REG_ARM64_SYSREG_OP2_SHIFT		0
#endif

/*
 * The batch group: this project's kernel UAPI (docs/kernel-interface.md, and
 * kernel-patch/).  Group 10, because 9 is taken upstream.
 *
 * KVM_{GET,SET}_DEVICE_ATTR with attr 0 and addr pointing to a struct
 * kvm_vgic_batch.  Each entry behaves exactly like one GET/SET of @group.
 * The kernel takes the VM's locks, then checks every entry as
 * KVM_HAS_DEVICE_ATTR would (any failure applies nothing, nr_done 0), then
 * applies them in array order and stops at the first failure: nr_done is
 * the index of the first entry not completed, the return code its error.
 * Only a GET copies entries back (the completed ones).  Discovery is
 * KVM_HAS_DEVICE_ATTR(10, 0); any other attr is -ENXIO; flags extend it.
 * The kernel's limit on nr_entries is an implementation limit (-E2BIG
 * above it), at least VGICD_BATCH_CHUNK.
 *
 * A group 10 is not trusted on HAS alone: another batch series for this
 * device uses the same macro name and number with a layout of its own.
 * vgic-batch-probe.h verifies the group's behaviour before any batch.
 *
 * Theory of operation of the guard below: these definitions are never
 * skipped quietly.  A system header (the installed <asm/kvm.h>) that
 * defines KVM_DEV_ARM_VGIC_GRP_BATCH_REGS provides the two structures, and
 * the assertions at the end check every field's offset and the sizes: a
 * header of another layout does not build (tests/uapi).
 */
#define VGICD_BATCH_ENTRY_SIZE		24u
#define VGICD_BATCH_HEADER_SIZE		24u
/* Entries per batch call: the kernel's documented minimum of its limit. */
#define VGICD_BATCH_CHUNK		4096u

#ifndef KVM_DEV_ARM_VGIC_GRP_BATCH_REGS
#define KVM_DEV_ARM_VGIC_GRP_BATCH_REGS		10

struct kvm_vgic_batch_entry {
	__u32 group;	/* DIST_REGS, REDIST_REGS, CPU_SYSREGS or LEVEL_INFO */
	__u32 reserved;	/* must be 0 */
	__u64 attr;	/* encoded as kvm_device_attr.attr for @group */
	__u64 value;	/* in (SET) / out (GET); [63:32] zero except CPU_SYSREGS */
};

struct kvm_vgic_batch {		/* kvm_device_attr.attr = 0, .addr = &batch */
	__u32 nr_entries;	/* 1..the kernel's limit (at least 4096) */
	__u32 flags;		/* must be 0 */
	__u32 nr_done;		/* out: index of the first entry not completed */
	__u32 reserved;		/* must be 0 */
	__u64 entries;		/* user pointer to the entry array */
};
#endif

#define VGICD_BATCH_LAYOUT(type, field, off) \
  _Static_assert (offsetof (struct type, field) == (off), \
                  #type "." #field " is not the layout vgicd speaks")
VGICD_BATCH_LAYOUT (kvm_vgic_batch_entry, group, 0);
VGICD_BATCH_LAYOUT (kvm_vgic_batch_entry, reserved, 4);
VGICD_BATCH_LAYOUT (kvm_vgic_batch_entry, attr, 8);
VGICD_BATCH_LAYOUT (kvm_vgic_batch_entry, value, 16);
VGICD_BATCH_LAYOUT (kvm_vgic_batch, nr_entries, 0);
VGICD_BATCH_LAYOUT (kvm_vgic_batch, flags, 4);
VGICD_BATCH_LAYOUT (kvm_vgic_batch, nr_done, 8);
VGICD_BATCH_LAYOUT (kvm_vgic_batch, reserved, 12);
VGICD_BATCH_LAYOUT (kvm_vgic_batch, entries, 16);
#undef VGICD_BATCH_LAYOUT
_Static_assert (sizeof (struct kvm_vgic_batch_entry) == VGICD_BATCH_ENTRY_SIZE,
		"struct kvm_vgic_batch_entry is not the layout vgicd speaks");
_Static_assert (sizeof (struct kvm_vgic_batch) == VGICD_BATCH_HEADER_SIZE,
		"struct kvm_vgic_batch is not the layout vgicd speaks");
