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

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

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

/**
 * vgic_batch_abi_is_ours() - is the description a kernel returned for
 * KVM_GET_DEVICE_ATTR(KVM_DEV_ARM_VGIC_GRP_BATCH_REGS, KVM_VGIC_BATCH_ATTR_ABI)
 * exactly the batch ABI this build speaks?  Every field is compared: a
 * kernel whose group 10 is another layout, answering into the zeroed
 * buffer in its own way (or not at all), must never be given a batch.
 */
static inline bool
vgic_batch_abi_is_ours (const struct kvm_vgic_batch_abi *abi)
{
  return abi->magic == KVM_VGIC_BATCH_ABI_MAGIC &&
         abi->version == KVM_VGIC_BATCH_ABI_VERSION &&
         abi->batch_size == sizeof (struct kvm_vgic_batch) &&
         abi->entry_size == sizeof (struct kvm_vgic_batch_entry) &&
         abi->max_entries == KVM_VGIC_BATCH_MAX_ENTRIES &&
         abi->reserved[0] == 0 && abi->reserved[1] == 0 && abi->reserved[2] == 0;
}

/* What a probe of the batch group found (vgic_batch_probe()). */
typedef enum {
  VGIC_BATCH_PROBE_ABSENT = 0,	/* no group 10: an unpatched kernel */
  VGIC_BATCH_PROBE_OURS = 1,	/* this project's ABI */
  VGIC_BATCH_PROBE_FOREIGN = 2,	/* a group 10 that is not this ABI */
} VgicBatchProbe;

/**
 * vgic_batch_probe() - the handshake both sides run on a vGICv3 device fd
 * @dev_fd: the vGICv3 device fd
 * @abi: receives what the kernel answered (zeroed first), for the log
 *
 * KVM_HAS_DEVICE_ATTR(10, KVM_VGIC_BATCH_ATTR_REGS) == -ENXIO means no group
 * 10; otherwise the ABI attribute is read into a zeroed buffer larger than
 * the structure (a foreign layout that reads a bigger header finds zeros,
 * no entry and no pointer, so the read cannot make it touch anything) and
 * compared field by field.
 * Return: a VgicBatchProbe, or a negative errno for an answer that fits
 * neither (HAS failing with another errno).
 */
static inline int
vgic_batch_probe (int dev_fd, struct kvm_vgic_batch_abi *abi)
{
  union {
    struct kvm_vgic_batch_abi abi;
    uint64_t room[16];	/* 128 zero bytes */
  } buf = { .room = { 0 } };
  struct kvm_device_attr has = {
    .group = KVM_DEV_ARM_VGIC_GRP_BATCH_REGS,
    .attr = KVM_VGIC_BATCH_ATTR_REGS,
  };
  struct kvm_device_attr get = {
    .group = KVM_DEV_ARM_VGIC_GRP_BATCH_REGS,
    .attr = KVM_VGIC_BATCH_ATTR_ABI,
    .addr = (uint64_t) (uintptr_t) &buf,
  };
  int err;

  *abi = buf.abi;
  if (ioctl (dev_fd, KVM_HAS_DEVICE_ATTR, &has) < 0)
    {
      err = errno;
      return err == ENXIO ? VGIC_BATCH_PROBE_ABSENT : -err;
    }
  /* Any failure of the read is a group 10 that does not speak this ABI
   * (the kernel with this ABI always answers it). */
  if (ioctl (dev_fd, KVM_GET_DEVICE_ATTR, &get) < 0)
    return VGIC_BATCH_PROBE_FOREIGN;
  *abi = buf.abi;
  return vgic_batch_abi_is_ours (abi) ? VGIC_BATCH_PROBE_OURS : VGIC_BATCH_PROBE_FOREIGN;
}

/**
 * vgic_batch_probe_describe() - @probe (a vgic_batch_probe() result) and
 * what the kernel answered, in words, for logs and vgicctl, into @buf
 * (VGIC_BATCH_PROBE_DESCRIBE_MAX bytes are always enough)
 * Return: @buf
 */
#define VGIC_BATCH_PROBE_DESCRIBE_MAX 256
static inline char *
vgic_batch_probe_describe (int probe, const struct kvm_vgic_batch_abi *abi,
                           char *buf, size_t size)
{
  switch (probe)
    {
    case VGIC_BATCH_PROBE_OURS:
      snprintf (buf, size, "the kernel has the vGIC batch group (ABI %u)", abi->version);
      break;
    case VGIC_BATCH_PROBE_ABSENT:
      snprintf (buf, size, "the kernel has no vGIC batch group");
      break;
    case VGIC_BATCH_PROBE_FOREIGN:
      snprintf (buf, size, "the kernel's device-attr group %u is not this batch ABI "
                "(it answered magic 0x%08x version %u sizes %u/%u; expected 0x%08x "
                "version %u sizes %zu/%zu): not used",
                KVM_DEV_ARM_VGIC_GRP_BATCH_REGS, abi->magic, abi->version,
                abi->batch_size, abi->entry_size, KVM_VGIC_BATCH_ABI_MAGIC,
                KVM_VGIC_BATCH_ABI_VERSION, sizeof (struct kvm_vgic_batch),
                sizeof (struct kvm_vgic_batch_entry));
      break;
    default:
      snprintf (buf, size, "probing the vGIC batch group failed: %s", strerror (-probe));
      break;
    }
  return buf;
}
