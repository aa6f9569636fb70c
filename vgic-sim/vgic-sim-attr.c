/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-sim-attr.c - KVM_{GET,SET,HAS}_DEVICE_ATTR on the model: group
 * dispatch, the locking KVM does around every register access, and the
 * error codes (Linux 6.1 vgic-kvm-device.c: vgic_v3_{set,get,has}_attr,
 * vgic_v3_attr_regs_access, vgic_{set,get}_common_attr).
 *
 * The cost shape is the point: every single access resolves its mpidr by a
 * linear scan over the vCPUs (kvm_mpidr_to_vcpu), takes kvm->lock, then
 * trylocks every vCPU mutex (lock_all_vcpus) and unlocks them all after -
 * O(vCPUs) per access, so a one-by-one save is O(vCPUs^2).
 */
#include <errno.h>
#include <linux/kvm.h>

#include "vgic-regs.h"
#include "vgic-sim-shm.h"

/* Not in 6.1's uapi for x86 hosts: KVM_VGIC_V3_ADDR_TYPE_REDIST_REGION. */
#define ADDR_TYPE_REDIST_REGION 5

int
vgic_sim_find_vcpu (VgicSimShm *m, guint32 mpidr)
{
  for (guint32 i = 0; i < m->nr_vcpus; i++)
    {
      vgic_sim_count (m, mpidr_scan_steps, 1);
      if (vgic_sim_slot (m, i)->s.mpidr == mpidr)
        return (int) i;
    }
  return -1;
}

static void
unlock_vcpus (VgicSimShm *m, guint32 n)
{
  while (n-- > 0)
    pthread_mutex_unlock (&vgic_sim_slot (m, n)->mutex);
}

/* kvm->lock, then lock_all_vcpus(): a trylock per vCPU, -EBUSY at the first
 * one held (a running vCPU holds its mutex in KVM_RUN). */
int
vgic_sim_lock_all (VgicSimShm *m)
{
  pthread_mutex_lock (&m->vm_lock);
  vgic_sim_count (m, lock_rounds, 1);
  for (guint32 i = 0; i < m->nr_vcpus; i++)
    {
      VgicSimVcpuSlot *slot = vgic_sim_slot (m, i);

      vgic_sim_count (m, vcpu_locks, 1);
      if (pthread_mutex_trylock (&slot->mutex) != 0)
        {
          unlock_vcpus (m, i);
          pthread_mutex_unlock (&m->vm_lock);
          return -EBUSY;
        }
      /* A vCPU marked running counts as holding its mutex. */
      if (__atomic_load_n (&slot->running, __ATOMIC_ACQUIRE))
        {
          unlock_vcpus (m, i + 1);
          pthread_mutex_unlock (&m->vm_lock);
          return -EBUSY;
        }
    }
  return 0;
}

void
vgic_sim_unlock_all (VgicSimShm *m)
{
  unlock_vcpus (m, m->nr_vcpus);
  pthread_mutex_unlock (&m->vm_lock);
}

/* Count one access against an armed vgic_sim_fail_at(); return its error
 * when this is the access it names (locks held). */
int
vgic_sim_single_injected (VgicSimShm *m)
{
  if (!m->fail_armed)
    return 0;
  if (m->fail_seen++ < m->fail_index)
    return 0;
  m->fail_armed = 0;
  return m->fail_err;
}

/* vgic_v3_parse_attr(): DIST always uses vCPU 0 ("attr might not hold
 * MPIDR"), the other groups look the mpidr up; no match is -EINVAL. */
static int
parse_vcpu (VgicSimShm *m, const struct kvm_device_attr *attr)
{
  int idx;

  if (attr->group == KVM_DEV_ARM_VGIC_GRP_DIST_REGS)
    return 0;
  idx = vgic_sim_find_vcpu (m, vgic_attr_mpidr (attr->attr));
  return idx < 0 ? -EINVAL : idx;
}

/* vgic_v3_attr_regs_access() */
static int
regs_access (VgicSimShm *m, const struct kvm_device_attr *attr, gboolean write,
             const VgicSimUser *user)
{
  gboolean uaccess = attr->group != KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS;
  guint32 offset = vgic_attr_low (attr->attr), val = 0;
  guint64 val64 = 0;
  int idx, ret;

  idx = parse_vcpu (m, attr);
  if (idx < 0)
    return idx;

  /* The u32 value is fetched before any lock; sysregs fetch their u64
   * inside the sysreg code, under the locks. */
  if (uaccess && write && user->read (user->ctx, attr->addr, &val, sizeof val))
    return -EFAULT;

  ret = vgic_sim_lock_all (m);
  if (ret)
    return ret;

  if (!m->initialized)
    {
      ret = -EBUSY;
      goto out;
    }
  ret = vgic_sim_single_injected (m);
  if (ret)
    goto out;

  switch (attr->group)
    {
    case KVM_DEV_ARM_VGIC_GRP_DIST_REGS:
      ret = vgic_sim_dist_uaccess (m, write, offset, &val);
      break;
    case KVM_DEV_ARM_VGIC_GRP_REDIST_REGS:
      ret = vgic_sim_redist_uaccess (m, (guint32) idx, write, offset, &val);
      break;
    case KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS:
      /* kvm_sys_reg_{set,get}_user(): SET reads the u64 first (-EFAULT),
       * then an unknown register is -ENOENT; GET writes a u64 back. */
      if (write && user->read (user->ctx, attr->addr, &val64, sizeof val64))
        ret = -EFAULT;
      else if (!vgic_sim_sysreg_known (attr->attr))
        ret = -ENOENT;
      else
        ret = vgic_sim_sysreg_access (m, (guint32) idx, write, attr->attr, &val64);
      if (!ret && !write &&
          user->write (user->ctx, attr->addr, &val64, sizeof val64))
        ret = -EFAULT;
      break;
    case KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO:
      {
        guint64 info = (attr->attr & KVM_DEV_ARM_VGIC_LINE_LEVEL_INFO_MASK) >>
                       KVM_DEV_ARM_VGIC_LINE_LEVEL_INFO_SHIFT;
        guint32 intid = attr->attr & KVM_DEV_ARM_VGIC_LINE_LEVEL_INTID_MASK;

        /* Checked under the locks in 6.1, hence after -EBUSY. */
        if (info != VGIC_LEVEL_INFO_LINE_LEVEL || intid % 32)
          ret = -EINVAL;
        else
          vgic_sim_line_level (m, (guint32) idx, write, intid, &val);
        break;
      }
    default:
      ret = -EINVAL;
      break;
    }

out:
  vgic_sim_unlock_all (m);

  /* DIST, REDIST and LEVEL_INFO put a u32: exactly 4 bytes. */
  if (!ret && uaccess && !write &&
      user->write (user->ctx, attr->addr, &val, sizeof val))
    ret = -EFAULT;
  return ret;
}

/* vgic_set_common_attr() for what the model supports */
static int
set_common (VgicSimShm *m, const struct kvm_device_attr *attr,
            const VgicSimUser *user)
{
  guint32 val;
  int ret;

  switch (attr->group)
    {
    case KVM_DEV_ARM_VGIC_GRP_NR_IRQS:
      if (user->read (user->ctx, attr->addr, &val, sizeof val))
        return -EFAULT;
      if (val < 64 || val > 1024 || (val & 31))
        return -EINVAL;
      /* The sim's nr_irqs is fixed at creation, as if userspace had set
       * it already: KVM then says -EBUSY. */
      return -EBUSY;
    case KVM_DEV_ARM_VGIC_GRP_CTRL:
      switch (attr->attr)
        {
        case KVM_DEV_ARM_VGIC_CTRL_INIT:
          pthread_mutex_lock (&m->vm_lock);
          vgic_sim_shm_vgic_init (m);
          pthread_mutex_unlock (&m->vm_lock);
          return 0;
        case KVM_DEV_ARM_VGIC_SAVE_PENDING_TABLES:
          /* Takes every vCPU lock; with no LPIs modelled there is nothing
           * to write to guest memory. */
          ret = vgic_sim_lock_all (m);
          if (!ret)
            vgic_sim_unlock_all (m);
          return ret;
        }
      return -ENXIO;
    default:
      /* ADDR is not modelled (see docs/vgic-sim.md); the rest is unknown. */
      return -ENXIO;
    }
}

static int
get_common (VgicSimShm *m, const struct kvm_device_attr *attr,
            const VgicSimUser *user)
{
  guint32 val;

  if (attr->group != KVM_DEV_ARM_VGIC_GRP_NR_IRQS)
    return -ENXIO;
  val = m->nr_irqs;
  return user->write (user->ctx, attr->addr, &val, sizeof val) ? -EFAULT : 0;
}

/* vgic_v3_has_attr() */
static int
has_attr (VgicSimShm *m, const struct kvm_device_attr *attr)
{
  int idx;

  switch (attr->group)
    {
    case KVM_DEV_ARM_VGIC_GRP_ADDR:
      return attr->attr == KVM_VGIC_V3_ADDR_TYPE_DIST ||
             attr->attr == KVM_VGIC_V3_ADDR_TYPE_REDIST ||
             attr->attr == ADDR_TYPE_REDIST_REGION ? 0 : -ENXIO;
    case KVM_DEV_ARM_VGIC_GRP_DIST_REGS:
    case KVM_DEV_ARM_VGIC_GRP_REDIST_REGS:
    case KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS:
      /* vgic_v3_has_attr_regs(): the mpidr is checked (-EINVAL) first. */
      idx = parse_vcpu (m, attr);
      if (idx < 0)
        return idx;
      if (attr->group == KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS)
        return vgic_sim_sysreg_known (attr->attr) ? 0 : -ENXIO;
      return vgic_sim_regs_has (m, attr->group == KVM_DEV_ARM_VGIC_GRP_REDIST_REGS,
                                vgic_attr_low (attr->attr));
    case KVM_DEV_ARM_VGIC_GRP_NR_IRQS:
      return 0;
    case KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO:
      /* Only the info field is checked: no mpidr, no intid alignment. */
      return ((attr->attr & KVM_DEV_ARM_VGIC_LINE_LEVEL_INFO_MASK) >>
              KVM_DEV_ARM_VGIC_LINE_LEVEL_INFO_SHIFT) == VGIC_LEVEL_INFO_LINE_LEVEL
             ? 0 : -ENXIO;
    case KVM_DEV_ARM_VGIC_GRP_CTRL:
      return attr->attr == KVM_DEV_ARM_VGIC_CTRL_INIT ||
             attr->attr == KVM_DEV_ARM_VGIC_SAVE_PENDING_TABLES ? 0 : -ENXIO;
    case KVM_DEV_ARM_VGIC_GRP_BATCH_REGS:
      /* kernel-patch/: attr 0 only (the foreign model too, so that only
       * the probe's batch can tell it apart). */
      return m->batch != VGIC_SIM_BATCH_NONE && attr->attr == 0 ? 0 : -ENXIO;
    default:
      return -ENXIO;
    }
}

int
vgic_sim_device_ioctl (VgicSimShm *m, unsigned int request, guint64 arg,
                       const VgicSimUser *user)
{
  struct kvm_device_attr attr;
  gboolean write = request == KVM_SET_DEVICE_ATTR;

  /* vgic_sim_stall_at(): this call waits until the test releases it (the
   * test meanwhile kills a peer, say), then runs as usual. */
  if (request != KVM_HAS_DEVICE_ATTR && __atomic_load_n (&m->stall_left, __ATOMIC_ACQUIRE) &&
      __atomic_sub_fetch (&m->stall_left, 1, __ATOMIC_ACQ_REL) == 0)
    {
      __atomic_store_n (&m->stall_state, 1u, __ATOMIC_RELEASE);
      while (__atomic_load_n (&m->stall_state, __ATOMIC_ACQUIRE) == 1)
        g_usleep (100);
    }
  /* vgic_sim_fault_next(): as if @arg pointed nowhere. */
  if (__atomic_exchange_n (&m->fault_next, 0, __ATOMIC_ACQ_REL))
    return -EFAULT;
  /* kvm_device_ioctl_attr(): copy_from_user of the attr itself. */
  if (user->read (user->ctx, arg, &attr, sizeof attr))
    return -EFAULT;

  vgic_sim_count (m, group_calls[MIN (attr.group, VGIC_SIM_NR_GROUPS - 1)], 1);

  if (request == KVM_HAS_DEVICE_ATTR)
    {
      vgic_sim_count (m, has, 1);
      return has_attr (m, &attr);
    }

  if (attr.group == KVM_DEV_ARM_VGIC_GRP_BATCH_REGS && m->batch != VGIC_SIM_BATCH_NONE)
    {
      if (attr.attr != 0)
        return -ENXIO;
      if (m->batch == VGIC_SIM_BATCH_FOREIGN)
        return vgic_sim_batch_foreign (m, write, attr.addr, user);
      vgic_sim_count (m, batch_calls, 1);
      return vgic_sim_batch (m, write, attr.addr, user);
    }

  if (write)
    vgic_sim_count (m, single_set, 1);
  else
    vgic_sim_count (m, single_get, 1);

  switch (attr.group)
    {
    case KVM_DEV_ARM_VGIC_GRP_DIST_REGS:
    case KVM_DEV_ARM_VGIC_GRP_REDIST_REGS:
    case KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS:
    case KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO:
      return regs_access (m, &attr, write, user);
    default:
      return write ? set_common (m, &attr, user) : get_common (m, &attr, user);
    }
}
