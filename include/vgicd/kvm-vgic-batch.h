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
 * Each entry behaves exactly like one GET/SET of @group.  Entries run in
 * array order under one acquisition of the VM's locks.  Decode errors (bad
 * group, mpidr, sysreg, encoding, high value bits on SET) fail the whole call
 * before any entry is applied; apply stops at the first handler error, sets
 * that entry's @error, and @nr_done counts the entries completed before it.
 *
 * The probe is KVM_GET_DEVICE_ATTR(group 10, KVM_VGIC_BATCH_ATTR_ABI) into a
 * zeroed struct kvm_vgic_batch_abi, every field compared with the values
 * below (vgic_batch_abi_is_ours() in vgic-entry.h).  KVM_HAS_DEVICE_ATTR
 * alone is not enough: another batch series for this device, posted with
 * the same macro name and the obvious group number, has a different layout,
 * and a kernel of it would accept the old probe.
 *
 * Theory of operation of the guard below: these definitions are never
 * skipped quietly.  A system header (the installed <asm/kvm.h>) that
 * defines KVM_DEV_ARM_VGIC_GRP_BATCH_REGS either is this project's UAPI
 * (a kernel built with kernel-patch/ exported its headers), and then says
 * so with the same KVM_VGIC_BATCH_ABI_MAGIC and version, whose structures
 * are checked against the sizes below; or it is some other batch UAPI, and
 * the build stops with an error that says which.
 */
#define VGICD_BATCH_ABI_MAGIC		0x52424756u	/* "VGBR" in memory */
#define VGICD_BATCH_ABI_VERSION		1u
#define VGICD_BATCH_ENTRY_SIZE		24u
#define VGICD_BATCH_HEADER_SIZE		24u

#ifdef KVM_DEV_ARM_VGIC_GRP_BATCH_REGS
#if !defined(KVM_VGIC_BATCH_ABI_MAGIC) || !defined(KVM_VGIC_BATCH_ABI_VERSION)
#error "a system header defines KVM_DEV_ARM_VGIC_GRP_BATCH_REGS without this project's KVM_VGIC_BATCH_ABI_MAGIC: another batch UAPI, which vgicd does not speak (include this header before it, or build against headers without it)"
#elif KVM_VGIC_BATCH_ABI_MAGIC != VGICD_BATCH_ABI_MAGIC || KVM_VGIC_BATCH_ABI_VERSION != VGICD_BATCH_ABI_VERSION || KVM_DEV_ARM_VGIC_GRP_BATCH_REGS != 10
#error "the system's KVM_DEV_ARM_VGIC_GRP_BATCH_REGS UAPI is another version of the batch ABI than this header's"
#endif
#else
#define KVM_DEV_ARM_VGIC_GRP_BATCH_REGS		10
#define KVM_VGIC_BATCH_ATTR_REGS		0	/* a batch */
#define KVM_VGIC_BATCH_ATTR_ABI			1	/* GET: struct kvm_vgic_batch_abi */
#define KVM_VGIC_BATCH_MAX_ENTRIES		4096
#define KVM_VGIC_BATCH_ABI_MAGIC		VGICD_BATCH_ABI_MAGIC
#define KVM_VGIC_BATCH_ABI_VERSION		VGICD_BATCH_ABI_VERSION

struct kvm_vgic_batch_entry {
	__u32 group;	/* DIST_REGS, REDIST_REGS, CPU_SYSREGS or LEVEL_INFO */
	__s32 error;	/* out: 0 or -errno for this entry */
	__u64 attr;	/* encoded as kvm_device_attr.attr for @group */
	__u64 value;	/* in (SET) / out (GET); [63:32] zero except CPU_SYSREGS */
};

struct kvm_vgic_batch {		/* kvm_device_attr.attr = ATTR_REGS, .addr = &batch */
	__u32 nr_entries;	/* 1..KVM_VGIC_BATCH_MAX_ENTRIES */
	__u32 flags;		/* must be 0 */
	__u32 nr_done;		/* out: entries completed */
	__u32 reserved;		/* must be 0 */
	__u64 entries;		/* user pointer to the entry array */
};

struct kvm_vgic_batch_abi {	/* GET, kvm_device_attr.attr = ATTR_ABI */
	__u32 magic;		/* KVM_VGIC_BATCH_ABI_MAGIC */
	__u32 version;		/* KVM_VGIC_BATCH_ABI_VERSION */
	__u32 batch_size;	/* sizeof (struct kvm_vgic_batch) */
	__u32 entry_size;	/* sizeof (struct kvm_vgic_batch_entry) */
	__u32 max_entries;	/* KVM_VGIC_BATCH_MAX_ENTRIES */
	__u32 reserved[3];	/* 0 */
};
#endif

_Static_assert (sizeof (struct kvm_vgic_batch_entry) == VGICD_BATCH_ENTRY_SIZE,
		"struct kvm_vgic_batch_entry is not the layout vgicd speaks");
_Static_assert (sizeof (struct kvm_vgic_batch) == VGICD_BATCH_HEADER_SIZE,
		"struct kvm_vgic_batch is not the layout vgicd speaks");
_Static_assert (sizeof (struct kvm_vgic_batch_abi) == 32,
		"struct kvm_vgic_batch_abi is not the layout vgicd speaks");
