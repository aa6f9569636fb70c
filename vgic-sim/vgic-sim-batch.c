/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-sim-batch.c - the batch group (KVM_DEV_ARM_VGIC_GRP_BATCH_REGS, the
 * project's kernel UAPI, docs/kernel-interface.md) as the kernel patch
 * implements it.
 *
 * Two phases.  Decode checks every entry (group, mpidr, sysreg, LEVEL_INFO
 * encoding, high value bits on SET) before anything is touched: a failure
 * there applies nothing.  Apply then runs the entries in array order under
 * ONE acquisition of kvm->lock and the vCPU mutexes, each entry doing
 * exactly what the single GET/SET of its group does, and stops at the first
 * handler error without rollback.  The mpidr -> vCPU lookup is cached from
 * the previous entry: without that cache a batch would still be quadratic.
 */
#include <errno.h>

#include "vgic-regs.h"
#include "vgic-sim-shm.h"

typedef struct {
  gboolean valid;
  guint32 mpidr;
  int idx;
} MpidrCache;

/* Decode one entry: 0 or -errno, and the vCPU it targets. */
static int
decode (VgicSimShm *m, gboolean write, const struct kvm_vgic_batch_entry *e,
        MpidrCache *cache, guint32 *vcpu)
{
  guint32 mpidr = vgic_attr_mpidr (e->attr);

  if (!vgic_entry_group_is_data (e->group))
    return -EINVAL;
  if (write && e->group != KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS && (e->value >> 32))
    return -EINVAL;

  if (e->group == KVM_DEV_ARM_VGIC_GRP_DIST_REGS)
    *vcpu = 0;
  else
    {
      if (!cache->valid || cache->mpidr != mpidr)
        {
          cache->idx = vgic_sim_find_vcpu (m, mpidr);
          cache->mpidr = mpidr;
          cache->valid = TRUE;
        }
      if (cache->idx < 0)
        return -EINVAL;
      *vcpu = (guint32) cache->idx;
    }

  if (e->group == KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS && !vgic_sim_sysreg_known (e->attr))
    return -ENOENT;
  if (e->group == KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO &&
      (((e->attr & KVM_DEV_ARM_VGIC_LINE_LEVEL_INFO_MASK) >>
        KVM_DEV_ARM_VGIC_LINE_LEVEL_INFO_SHIFT) != VGIC_LEVEL_INFO_LINE_LEVEL ||
       (e->attr & KVM_DEV_ARM_VGIC_LINE_LEVEL_INTID_MASK) % 32))
    return -EINVAL;
  return 0;
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

/* Copy the entries and the header back: GET values, .error, nr_done. */
static int
write_back (const VgicSimUser *user, guint64 addr, struct kvm_vgic_batch *b,
            const struct kvm_vgic_batch_entry *e, int ret)
{
  if (user->write (user->ctx, b->entries, e, (gsize) b->nr_entries * sizeof *e) ||
      user->write (user->ctx, addr, b, sizeof *b))
    return -EFAULT;
  return ret;
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
  int ret;

  if (user->read (user->ctx, addr, &b, sizeof b))
    return -EFAULT;
  if (b.flags || b.reserved || b.nr_entries == 0)
    return -EINVAL;
  if (b.nr_entries > KVM_VGIC_BATCH_MAX_ENTRIES)
    return -E2BIG;

  e = g_new (struct kvm_vgic_batch_entry, b.nr_entries);
  vcpu = g_new (guint32, b.nr_entries);
  if (user->read (user->ctx, b.entries, e, (gsize) b.nr_entries * sizeof *e))
    return -EFAULT;
  vgic_sim_count (m, batch_entries, b.nr_entries);

  /* Phase 1: decode everything; nothing has been touched on failure. */
  for (guint32 i = 0; i < b.nr_entries; i++)
    e[i].error = 0;
  b.nr_done = 0;
  for (guint32 i = 0; i < b.nr_entries; i++)
    {
      ret = decode (m, write, &e[i], &cache, &vcpu[i]);
      if (ret)
        {
          e[i].error = ret;
          return write_back (user, addr, &b, e, ret);
        }
    }

  /* Phase 2: one lock round for the whole batch. */
  ret = vgic_sim_lock_all (m);
  if (ret)
    return write_back (user, addr, &b, e, ret);
  if (!m->initialized)
    {
      vgic_sim_unlock_all (m);
      return write_back (user, addr, &b, e, -EBUSY);
    }
  for (guint32 i = 0; i < b.nr_entries; i++)
    {
      /* vgic_sim_fail_at() counts accesses, batched or not. */
      ret = vgic_sim_single_injected (m);
      if (ret == 0)
        ret = apply (m, write, &e[i], vcpu[i]);
      if (ret)
        {
          e[i].error = ret;
          break;
        }
      done++;
    }
  vgic_sim_unlock_all (m);

  b.nr_done = done;
  return write_back (user, addr, &b, e, ret);
}
