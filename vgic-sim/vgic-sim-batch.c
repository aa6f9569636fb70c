/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-sim-batch.c - the batch group (KVM_DEV_ARM_VGIC_GRP_BATCH_REGS, the
 * project's kernel UAPI, docs/kernel-interface.md) as the kernel patch
 * implements it, and a group 10 of another layout for the probe's tests.
 *
 * In the order the kernel does it: read the header (flags, reserved,
 * count) and the entries; take ONE acquisition of kvm->lock and the vCPU
 * mutexes (-EBUSY when a vCPU runs or the vGIC is not initialized); check
 * every entry as KVM_HAS_DEVICE_ATTR would, a failure applying nothing
 * (nr_done 0); apply them in array order, each doing exactly what the
 * single GET/SET of its group does, stopping at the first failure without
 * rollback (nr_done = its index).  Once the header has been read, nr_done
 * is written back on every return, before anything else; only a GET copies
 * entries back, the completed ones; a fault on that copy is -EFAULT only
 * when the batch itself succeeded.
 */
#include <errno.h>

#include "vgic-regs.h"
#include "vgic-sim-shm.h"

/* The kernel's implementation limit (at least VGICD_BATCH_CHUNK). */
#define SIM_BATCH_LIMIT 4096u

/* The last affinity looked up, and its vCPU: the sim's stand-in for KVM's
 * MPIDR table, which kernel-patch/ builds before the first run, so that
 * the scan counter shows one scan per distinct vCPU rather than per entry. */
typedef struct {
  gboolean valid;
  guint32 mpidr;
  int idx;
} MpidrCache;

static int
find_vcpu (VgicSimShm *m, guint32 mpidr, MpidrCache *cache)
{
  if (!cache->valid || cache->mpidr != mpidr)
    *cache = (MpidrCache) { TRUE, mpidr, vgic_sim_find_vcpu (m, mpidr) };
  return cache->idx;
}

/* Check one entry as KVM_HAS_DEVICE_ATTR would, with the locks held:
 * 0 or -errno, and the vCPU it targets. */
static int
decode (VgicSimShm *m, gboolean write, const struct kvm_vgic_batch_entry *e,
        MpidrCache *cache, guint32 *vcpu)
{
  int idx;

  if (e->reserved)
    return -EINVAL;
  if (!vgic_entry_group_is_data (e->group))
    return -EINVAL;
  if (write && !vgic_entry_value_fits (e->group, e->value))
    return -EINVAL;

  if (e->group == KVM_DEV_ARM_VGIC_GRP_DIST_REGS)
    idx = 0;
  else if ((idx = find_vcpu (m, vgic_attr_mpidr (e->attr), cache)) < 0)
    return -EINVAL;
  *vcpu = (guint32) idx;

  switch (e->group)
    {
    case KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS:
      return vgic_sim_sysreg_known (e->attr) ? 0 : -ENXIO;
    case KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO:
      return ((e->attr & KVM_DEV_ARM_VGIC_LINE_LEVEL_INFO_MASK) >>
              KVM_DEV_ARM_VGIC_LINE_LEVEL_INFO_SHIFT) == VGIC_LEVEL_INFO_LINE_LEVEL &&
             (e->attr & KVM_DEV_ARM_VGIC_LINE_LEVEL_INTID_MASK) % 32 == 0 ? 0 : -EINVAL;
    default:
      return vgic_sim_regs_has (m, e->group == KVM_DEV_ARM_VGIC_GRP_REDIST_REGS,
                                vgic_attr_low (e->attr));
    }
}

/* Apply one decoded entry with the locks held, like its single GET/SET. */
static int
apply (VgicSimShm *m, gboolean write, struct kvm_vgic_batch_entry *e,
       guint32 vcpu)
{
  guint32 val = (guint32) e->value;
  int ret;

  switch (e->group)
    {
    case KVM_DEV_ARM_VGIC_GRP_DIST_REGS:
      ret = vgic_sim_dist_uaccess (m, write, vgic_attr_low (e->attr), &val);
      break;
    case KVM_DEV_ARM_VGIC_GRP_REDIST_REGS:
      ret = vgic_sim_redist_uaccess (m, vcpu, write, vgic_attr_low (e->attr), &val);
      break;
    case KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS:
      {
        guint64 v64 = e->value;

        ret = vgic_sim_sysreg_access (m, vcpu, write, e->attr, &v64);
        if (!ret && !write)
          e->value = v64;
        return ret;
      }
    default:
      vgic_sim_line_level (m, vcpu, write,
                           e->attr & KVM_DEV_ARM_VGIC_LINE_LEVEL_INTID_MASK, &val);
      ret = 0;
      break;
    }
  if (!ret && !write)
    e->value = val;
  return ret;
}

/* nr_done first, then a GET's completed entries; the batch's own error
 * wins over a fault here. */
static int
finish (const VgicSimUser *user, guint64 addr, const struct kvm_vgic_batch *b,
        const struct kvm_vgic_batch_entry *e, gboolean write, guint32 done, int ret)
{
  int fault = user->write (user->ctx, addr + G_STRUCT_OFFSET (struct kvm_vgic_batch, nr_done),
                           &done, sizeof done);

  if (!fault && !write && e && done)
    fault = user->write (user->ctx, b->entries, e, (gsize) done * sizeof *e);
  return ret ? ret : fault ? -EFAULT : 0;
}

int
vgic_sim_batch (VgicSimShm *m, gboolean write, guint64 addr,
                const VgicSimUser *user)
{
  struct kvm_vgic_batch b;
  g_autofree struct kvm_vgic_batch_entry *e = NULL;
  g_autofree guint32 *vcpu = NULL;
  MpidrCache cache = { FALSE, 0, -1 };
  guint32 done = 0;
  int ret = 0;

  if (user->read (user->ctx, addr, &b, sizeof b))
    return -EFAULT;
  if (b.flags || b.reserved || b.nr_entries == 0)
    return finish (user, addr, &b, NULL, write, 0, -EINVAL);
  if (b.nr_entries > SIM_BATCH_LIMIT)
    return finish (user, addr, &b, NULL, write, 0, -E2BIG);

  e = g_new (struct kvm_vgic_batch_entry, b.nr_entries);
  vcpu = g_new (guint32, b.nr_entries);
  if (user->read (user->ctx, b.entries, e, (gsize) b.nr_entries * sizeof *e))
    return finish (user, addr, &b, NULL, write, 0, -EFAULT);
  vgic_sim_count (m, batch_entries, b.nr_entries);

  /* The locks first: the checks below resolve vCPUs, which must not
   * change under them. */
  ret = vgic_sim_lock_all (m);
  if (ret)
    return finish (user, addr, &b, NULL, write, 0, ret);
  if (!m->initialized)
    {
      vgic_sim_unlock_all (m);
      return finish (user, addr, &b, NULL, write, 0, -EBUSY);
    }

  /* Every entry checked before any is applied. */
  for (guint32 i = 0; i < b.nr_entries && !ret; i++)
    ret = decode (m, write, &e[i], &cache, &vcpu[i]);

  for (guint32 i = 0; i < b.nr_entries && !ret; i++)
    {
      /* vgic_sim_fail_at() counts accesses, batched or not. */
      ret = vgic_sim_single_injected (m);
      if (ret == 0)
        ret = apply (m, write, &e[i], vcpu[i]);
      if (ret == 0)
        done++;
    }
  vgic_sim_unlock_all (m);

  return finish (user, addr, &b, e, write, done, ret);
}

/* A group 10 of another layout (vgic_sim_set_foreign_batch()): the same
 * header, but each entry carries a pointer to its value, as struct
 * kvm_device_attr does, where this UAPI has the value itself.  A modelled
 * layout, not any posted series' code.  It works: each access is made and
 * its value read from or written to the entry's pointer. */
struct foreign_entry {
  guint32 group;
  guint32 flags;
  guint64 attr;
  guint64 addr;		/* user pointer to the value */
};

int
vgic_sim_batch_foreign (VgicSimShm *m, gboolean write, guint64 addr,
                        const VgicSimUser *user)
{
  struct kvm_vgic_batch b;
  struct foreign_entry fe;
  MpidrCache cache = { FALSE, 0, -1 };
  guint32 done = 0;
  int ret = 0;

  vgic_sim_count (m, foreign_calls, 1);
  if (user->read (user->ctx, addr, &b, sizeof b))
    return -EFAULT;
  if (b.nr_entries == 0 || b.nr_entries > SIM_BATCH_LIMIT)
    return -EINVAL;
  ret = vgic_sim_lock_all (m);
  if (ret)
    return ret;
  for (guint32 i = 0; i < b.nr_entries && !ret; i++)
    {
      struct kvm_vgic_batch_entry e;
      guint32 vcpu = 0;

      if (user->read (user->ctx, b.entries + (guint64) i * sizeof fe, &fe, sizeof fe))
        {
          ret = -EFAULT;
          break;
        }
      e = (struct kvm_vgic_batch_entry) { .group = fe.group, .attr = fe.attr };
      if (write && user->read (user->ctx, fe.addr, &e.value, sizeof (guint32)))
        ret = -EFAULT;
      if (!ret)
        ret = decode (m, write, &e, &cache, &vcpu);
      if (!ret)
        ret = apply (m, write, &e, vcpu);
      if (!ret && !write && user->write (user->ctx, fe.addr, &e.value, sizeof (guint32)))
        ret = -EFAULT;
      if (!ret)
        done++;
    }
  vgic_sim_unlock_all (m);
  if (user->write (user->ctx, addr + G_STRUCT_OFFSET (struct kvm_vgic_batch, nr_done), &done,
                   sizeof done))
    return -EFAULT;
  return ret;
}
