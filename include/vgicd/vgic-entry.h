/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-entry.h - the rules about one vGIC access that both vgicd and the
 * executor inside QEMU apply to every entry they take from the other side:
 * which device-attr groups carry vGIC state, and how wide their values are.
 *
 * Each side checks for itself (neither trusts the other's memory), but the
 * rules are written once, here, so that the two cannot drift apart.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "vgicd/kvm-vgic-batch.h"

/**
 * vgic_entry_group_is_data() - true for the four groups that carry vGIC
 * state and may appear in a plan, a window or a record: DIST_REGS,
 * REDIST_REGS, CPU_SYSREGS, LEVEL_INFO.  Never CTRL, ADDR, NR_IRQS, ITS_REGS
 * or the batch group itself.
 */
static inline bool
vgic_entry_group_is_data (uint32_t group)
{
  return group == KVM_DEV_ARM_VGIC_GRP_DIST_REGS ||
         group == KVM_DEV_ARM_VGIC_GRP_REDIST_REGS ||
         group == KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS ||
         group == KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO;
}

/**
 * vgic_entry_group_is_wide() - true when the kernel copies a u64 for the
 * group's value (CPU_SYSREGS), false when it copies a u32 (DIST_REGS,
 * REDIST_REGS, LEVEL_INFO: their 64-bit registers take two accesses)
 */
static inline bool
vgic_entry_group_is_wide (uint32_t group)
{
  return group == KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS;
}

/**
 * vgic_entry_value_fits() - does @value fit the user buffer of @group?  A
 * value above 32 bits in a 32-bit group would be truncated by a single
 * access and refused by the batch group: it is never a register's value.
 */
static inline bool
vgic_entry_value_fits (uint32_t group, uint64_t value)
{
  return vgic_entry_group_is_wide (group) || value <= UINT32_MAX;
}
