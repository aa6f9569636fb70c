/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-regs.h - GICv3 register offsets, ICC sysreg encodings and attr
 * builders: the vocabulary shared by the planner, the state record, the
 * record dump and vgic-sim.
 *
 * Offsets are the architectural ones (GICv3 spec, and QEMU's
 * hw/intc/gicv3_internal.h, which the planner mirrors access for access).
 * Redistributor SGI-frame registers sit at 64 KiB + offset, as in KVM's
 * REDIST_REGS group.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "vgic-error.h"
#include "vgicd/kvm-vgic-batch.h"
#include "vgicd/vgic-entry.h"	/* which groups carry state, their widths */

/* The four device-attr groups that carry vGIC state, by short names (the
 * UAPI's are long enough to push every access of the planner, the
 * validation and the dump onto two lines). */
#define VGIC_GRP_DIST		KVM_DEV_ARM_VGIC_GRP_DIST_REGS
#define VGIC_GRP_REDIST		KVM_DEV_ARM_VGIC_GRP_REDIST_REGS
#define VGIC_GRP_SYSREG		KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS
#define VGIC_GRP_LEVEL		KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO

/* Distributor */
#define GICD_CTLR		0x0000
#define GICD_TYPER		0x0004
#define GICD_IIDR		0x0008
#define GICD_TYPER2		0x000C
#define GICD_STATUSR		0x0010
#define GICD_IGROUPR		0x0080
#define GICD_ISENABLER		0x0100
#define GICD_ICENABLER		0x0180
#define GICD_ISPENDR		0x0200
#define GICD_ICPENDR		0x0280
#define GICD_ISACTIVER		0x0300
#define GICD_ICACTIVER		0x0380
#define GICD_IPRIORITYR		0x0400
#define GICD_ICFGR		0x0C00
#define GICD_IGRPMODR		0x0D00
#define GICD_NSACR		0x0E00
#define GICD_IROUTER		0x6000
#define GICD_IDREGS		0xFFD0

#define GICD_CTLR_ENABLE_G1	(1U << 1)  /* EnableGrp1NS, with DS=1 "EnableGrp1" */
#define GICD_CTLR_ARE_NS	(1U << 4)
#define GICD_CTLR_DS		(1U << 6)
#define GICD_CTLR_NASSGIREQ	(1U << 8)
/* GICD_TYPER (GICv3 spec 12.9.38); ITLinesNumber is nr_irqs / 32 - 1. */
#define GICD_TYPER_ITLINES_MASK	0x1fu
#define GICD_TYPER_LPIS		(1u << 17)
#define GICD_TYPER_IDBITS_SHIFT	19
#define GICD_TYPER_IDBITS_MASK	0x1fu

/* Redistributor, RD frame */
#define GICR_CTLR		0x0000
#define GICR_IIDR		0x0004
#define GICR_TYPER		0x0008
#define GICR_STATUSR		0x0010
#define GICR_WAKER		0x0014
#define GICR_PROPBASER		0x0070
#define GICR_PENDBASER		0x0078

/* Redistributor, SGI frame */
#define GICR_SGI_OFFSET		0x10000
#define GICR_IGROUPR0		(GICR_SGI_OFFSET + 0x0080)
#define GICR_ISENABLER0		(GICR_SGI_OFFSET + 0x0100)
#define GICR_ICENABLER0		(GICR_SGI_OFFSET + 0x0180)
#define GICR_ISPENDR0		(GICR_SGI_OFFSET + 0x0200)
#define GICR_ICPENDR0		(GICR_SGI_OFFSET + 0x0280)
#define GICR_ISACTIVER0		(GICR_SGI_OFFSET + 0x0300)
#define GICR_ICACTIVER0		(GICR_SGI_OFFSET + 0x0380)
#define GICR_IPRIORITYR		(GICR_SGI_OFFSET + 0x0400)
#define GICR_ICFGR0		(GICR_SGI_OFFSET + 0x0C00)
#define GICR_ICFGR1		(GICR_SGI_OFFSET + 0x0C04)
#define GICR_IGRPMODR0		(GICR_SGI_OFFSET + 0x0D00)
#define GICR_NSACR		(GICR_SGI_OFFSET + 0x0E00)

#define GICR_CTLR_ENABLE_LPIS	(1U << 0)
#define GICR_CTLR_CES		(1U << 1)
#define GICR_CTLR_IR		(1U << 2)
#define GICR_CTLR_RWP		(1U << 3)
#define GICR_TYPER_PLPIS	(1ULL << 0)
#define GICR_TYPER_LAST		(1ULL << 4)

/* Number of private IRQs (SGIs + PPIs), held in the redistributors. */
#define GIC_INTERNAL		32

/* A CPU_SYSREGS attr's low 16 bits, as KVM encodes them (op0..op2). */
#define VGIC_SYSREG(op0, op1, crn, crm, op2)				\
	((((op0) << KVM_REG_ARM64_SYSREG_OP0_SHIFT) & KVM_REG_ARM64_SYSREG_OP0_MASK) | \
	 (((op1) << KVM_REG_ARM64_SYSREG_OP1_SHIFT) & KVM_REG_ARM64_SYSREG_OP1_MASK) | \
	 (((crn) << KVM_REG_ARM64_SYSREG_CRN_SHIFT) & KVM_REG_ARM64_SYSREG_CRN_MASK) | \
	 (((crm) << KVM_REG_ARM64_SYSREG_CRM_SHIFT) & KVM_REG_ARM64_SYSREG_CRM_MASK) | \
	 (((op2) << KVM_REG_ARM64_SYSREG_OP2_SHIFT) & KVM_REG_ARM64_SYSREG_OP2_MASK))

/* The ICC registers QEMU 10.0 saves and restores (hw/intc/arm_gicv3_kvm.c). */
#define ICC_PMR_EL1		VGIC_SYSREG(3, 0, 4, 6, 0)
#define ICC_BPR0_EL1		VGIC_SYSREG(3, 0, 12, 8, 3)
#define ICC_AP0R_EL1(n)		VGIC_SYSREG(3, 0, 12, 8, 4 | (n))
#define ICC_AP1R_EL1(n)		VGIC_SYSREG(3, 0, 12, 9, (n))
#define ICC_BPR1_EL1		VGIC_SYSREG(3, 0, 12, 12, 3)
#define ICC_CTLR_EL1		VGIC_SYSREG(3, 0, 12, 12, 4)
#define ICC_SRE_EL1		VGIC_SYSREG(3, 0, 12, 12, 5)
#define ICC_IGRPEN0_EL1		VGIC_SYSREG(3, 0, 12, 12, 6)
#define ICC_IGRPEN1_EL1		VGIC_SYSREG(3, 0, 12, 12, 7)

#define ICC_CTLR_EL1_CBPR	(1ULL << 0)
#define ICC_CTLR_EL1_EOIMODE	(1ULL << 1)
#define ICC_CTLR_EL1_PMHE	(1ULL << 6)
#define ICC_CTLR_EL1_PRIBITS_SHIFT 8
#define ICC_CTLR_EL1_PRIBITS_MASK (7ULL << ICC_CTLR_EL1_PRIBITS_SHIFT)
#define ICC_CTLR_EL1_IDBITS_SHIFT 11
#define ICC_CTLR_EL1_IDBITS_MASK (7ULL << ICC_CTLR_EL1_IDBITS_SHIFT)
#define ICC_CTLR_EL1_SEIS	(1ULL << 14)
#define ICC_CTLR_EL1_A3V	(1ULL << 15)
#define ICC_SRE_EL1_SRE		(1ULL << 0)

/**
 * vgic_attr() - encode a DIST/REDIST/CPU_SYSREGS attr
 * @mpidr: the vCPU's affinity, packed Aff3.Aff2.Aff1.Aff0 (attr[63:32])
 * @low: register offset, or sysreg encoding
 */
static inline uint64_t
vgic_attr (uint32_t mpidr, uint32_t low)
{
  return ((uint64_t) mpidr << KVM_DEV_ARM_VGIC_V3_MPIDR_SHIFT) | low;
}

/**
 * vgic_attr_level() - encode a LEVEL_INFO attr for the line level of the 32
 * IRQs starting at @intid
 */
static inline uint64_t
vgic_attr_level (uint32_t mpidr, uint32_t intid)
{
  return vgic_attr (mpidr, ((uint32_t) VGIC_LEVEL_INFO_LINE_LEVEL
                            << KVM_DEV_ARM_VGIC_LINE_LEVEL_INFO_SHIFT) | intid);
}

static inline uint32_t
vgic_attr_mpidr (uint64_t attr)
{
  return (uint32_t) (attr >> KVM_DEV_ARM_VGIC_V3_MPIDR_SHIFT);
}

static inline uint32_t
vgic_attr_low (uint64_t attr)
{
  return (uint32_t) attr;
}

/**
 * vgic_icc_ctlr_apr_count() - AP0R/AP1R registers per group for an
 * ICC_CTLR_EL1 value, as QEMU derives it (PRIbits+1 of 7 → 4, 6 → 2, else 1)
 */
static inline guint
vgic_icc_ctlr_apr_count (uint64_t icc_ctlr)
{
  guint pri_bits = (guint) ((icc_ctlr & ICC_CTLR_EL1_PRIBITS_MASK)
                            >> ICC_CTLR_EL1_PRIBITS_SHIFT) + 1;

  return pri_bits == 7 ? 4 : pri_bits == 6 ? 2 : 1;
}

/**
 * vgic_group_name() - short name of a device-attr group ("DIST", "REDIST"...)
 * Return: a static string ("?" for a group vgicd does not know).
 */
const char *vgic_group_name (uint32_t group);

/**
 * vgic_reg_describe() - human name of one access, for errors and dumps
 * @group: device-attr group
 * @attr: device-attr attr
 *
 * Names the register ("GICR_ISPENDR0", "GICD_IROUTER<35> hi",
 * "ICC_AP1R1_EL1", "line level of IRQs 32-63") and the vCPU affinity where the
 * group is per vCPU.
 *
 * Return: a newly allocated string.
 */
char *vgic_reg_describe (uint32_t group, uint64_t attr);

/**
 * vgic_reg_check_width() - @e's value fits its register: 32 bits, but for
 * the ICC system registers (vgic_entry_value_fits()).  Every set of values
 * and every check of a record or a list applies it to each entry.
 * @error: VGICD_ERROR_REGISTER_SET, naming the register and the value
 */
gboolean vgic_reg_check_width (const struct kvm_vgic_batch_entry *e, GError **error);
