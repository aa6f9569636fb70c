/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-qemu-fields.h - QEMU's own GICv3 state (the fields of its arm_gicv3
 * vmstate, what a migration stream carries without vgicd's record) and the
 * KVM register values they stand for.
 *
 * `vgicctl dump` of a migration stream reads these fields
 * (vgicctl-stream.c) and shows them in the form of a record's dump: as the
 * registers QEMU's load writes into the destination's kernel.  The layout
 * is QEMU 10.0's (hw/intc/arm_gicv3_common.c, section version 1); the
 * mapping is that of its kvm_arm_gicv3_put(), the writes vgic-plan.c
 * already mirrors access for access.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "vgic-shape.h"
#include "vgic-values.h"

/* QEMU's array sizes: GICV3_MAXIRQ IRQs, bitmaps of 32-bit words. */
#define VGIC_QEMU_MAXIRQ	1020
#define VGIC_QEMU_BMP_WORDS	32	/* DIV_ROUND_UP (1020, 32) */
#define VGIC_QEMU_NSACR_WORDS	64	/* DIV_ROUND_UP (1020, 16) */

/* QEMU's indices: icc_bpr, icc_apr, icc_igrpen by group; icc_ctlr_el1 and
 * gicr_statusr by security state. */
enum { VGIC_QEMU_G0 = 0, VGIC_QEMU_G1 = 1, VGIC_QEMU_G1NS = 2 };
enum { VGIC_QEMU_S = 0, VGIC_QEMU_NS = 1 };

/* One vCPU's redistributor and CPU interface (GICv3CPUState's fields). */
typedef struct {
  uint32_t level;
  uint32_t gicr_ctlr, gicr_statusr[2], gicr_waker;
  uint64_t gicr_propbaser, gicr_pendbaser;
  uint32_t gicr_igroupr0, gicr_ienabler0, gicr_ipendr0, gicr_iactiver0;
  uint32_t edge_trigger, gicr_igrpmodr0, gicr_nsacr;
  uint8_t gicr_ipriorityr[32];
  uint64_t icc_ctlr_el1[2], icc_pmr_el1, icc_bpr[3], icc_apr[3][4], icc_igrpen[3];
  uint64_t icc_ctlr_el3;
  uint64_t icc_sre_el1;	/* its subsection's, or QEMU's 0x7 when it is absent */
} VgicQemuCpu;

/* The distributor and every vCPU (GICv3State's migrated fields). */
typedef struct {
  uint32_t gicd_ctlr, gicd_statusr[2];
  uint32_t group[VGIC_QEMU_BMP_WORDS], grpmod[VGIC_QEMU_BMP_WORDS];
  uint32_t enabled[VGIC_QEMU_BMP_WORDS], pending[VGIC_QEMU_BMP_WORDS];
  uint32_t active[VGIC_QEMU_BMP_WORDS], level[VGIC_QEMU_BMP_WORDS];
  uint32_t edge_trigger[VGIC_QEMU_BMP_WORDS];
  uint8_t gicd_ipriority[VGIC_QEMU_MAXIRQ];
  uint64_t gicd_irouter[VGIC_QEMU_MAXIRQ];
  uint32_t gicd_nsacr[VGIC_QEMU_NSACR_WORDS];
  guint nr_cpus;
  VgicQemuCpu *cpus;	/* nr_cpus of them */
} VgicQemuGic;

void vgic_qemu_gic_free (VgicQemuGic *gic);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VgicQemuGic, vgic_qemu_gic_free)

/**
 * vgic_qemu_fields_values() - the KVM register values QEMU's load would
 * write from @gic into a VM of @shape
 * @gic: QEMU's fields, with @shape->nr_vcpus vCPUs
 * @shape: the VM (the stream does not carry its IRQ count or affinities)
 * @error: set when @gic and @shape disagree on the vCPUs
 *
 * One value per register kvm_arm_gicv3_put() writes with a value (the
 * clear-alls left out), keyed as a record's are: the GICD_IROUTER words
 * QEMU 10.0 writes at 0x6000 + 4n, the last write of each overlapping word
 * winning, as in the kernel.  GICR_TYPER and GICD_TYPER are not fields:
 * they are absent.
 *
 * Return: the values, or NULL with @error set.
 */
VgicValues *vgic_qemu_fields_values (const VgicQemuGic *gic, const VgicShape *shape,
                                     GError **error);
