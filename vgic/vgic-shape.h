/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-shape.h - the shape of a VM's vGIC: how many IRQs, which vCPUs.
 *
 * The shape is all the planner needs to lay out a save, and what a state
 * record must match before vgicd lets it near a destination VM.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "vgic-error.h"	/* the errors its checks set */

/* KVM arm64 accepts nr_irqs in [64, 1024], a multiple of 32 (vgic-kvm-device.c). */
#define VGIC_MIN_IRQS 64
#define VGIC_MAX_IRQS 1024
/* Far above KVM_MAX_VCPUS on arm64 (512 in 6.1): a bound on what we allocate. */
#define VGIC_MAX_VCPUS 4096

typedef struct {
  uint32_t nr_irqs;
  uint32_t nr_vcpus;
  /* Per vCPU, in vCPU index order: the affinity as KVM's attr[63:32] wants
   * it, packed Aff3.Aff2.Aff1.Aff0 (what QEMU takes from GICR_TYPER[63:32]). */
  uint32_t *mpidrs;
} VgicShape;

/**
 * vgic_shape_new() - build and check a shape
 * @nr_irqs: number of IRQs including the 32 private ones
 * @nr_vcpus: number of vCPUs
 * @mpidrs: @nr_vcpus affinities, or NULL for KVM's default numbering
 * @error: set when the shape cannot be a KVM vGICv3
 *
 * Return: the new shape, or NULL with @error set.
 */
VgicShape *vgic_shape_new (uint32_t nr_irqs, uint32_t nr_vcpus,
                           const uint32_t *mpidrs, GError **error);
VgicShape *vgic_shape_copy (const VgicShape *shape);
void vgic_shape_free (VgicShape *shape);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VgicShape, vgic_shape_free)

/**
 * vgic_shape_check() - check that @shape describes a possible KVM vGICv3
 * (IRQ count range and alignment, vCPU count, distinct affinities)
 */
gboolean vgic_shape_check (const VgicShape *shape, GError **error);

/**
 * vgic_shape_match() - check that a record's shape @got fits the attached VM
 * @want, naming the first difference (vCPU count, nr_irqs, which MPIDR)
 */
gboolean vgic_shape_match (const VgicShape *want, const VgicShape *got,
                           GError **error);

/**
 * vgic_default_mpidr() - the affinity KVM gives vCPU @index at reset
 * (arch/arm64/kvm/sys_regs.c reset_mpidr: Aff0 = id[3:0], Aff1 = id[11:4],
 * Aff2 = id[19:12]), packed as in vgic_attr().
 */
static inline uint32_t
vgic_default_mpidr (uint32_t index)
{
  return (index & 0xf) | (((index >> 4) & 0xff) << 8) |
         (((index >> 12) & 0xff) << 16);
}

/* Number of 32-bit words per bitmap register for the shared IRQs (W1 etc.). */
static inline uint32_t
vgic_shape_spi_words (const VgicShape *shape, uint32_t bits_per_irq)
{
  uint32_t irqs_per_word = 32 / bits_per_irq;
  uint32_t spis = shape->nr_irqs - 32;

  return (spis + irqs_per_word - 1) / irqs_per_word;
}
