/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-sim-shm.h - the layout of a sim's memfd and the model's internal
 * interface.  The memfd is shared by the test process (direct API) and the
 * supervisor (which may be another process: vgic-sim-run), so it holds
 * only plain data and process-shared mutexes, found by offsets.
 *
 * Layout: VgicSimShm header | nr_vcpus x VgicSimVcpuSlot | nr_irqs-32 x VgicSimIrq
 *         | nr_vcpus x 32 + nr_irqs-32 x VgicSimQueue (private ones first,
 *           vCPU by vCPU, then the SPIs)
 */
#pragma once

#include <pthread.h>
#include <stdint.h>

#include "vgic-sim.h"

#define VGIC_SIM_MAGIC "vgicsim\0"
#define VGIC_SIM_LAYOUT_VERSION 3	/* 2: batch is VGIC_SIM_BATCH_*, foreign_calls;
					 * 3: the queueing model (off_queue) */

/* What group 10 is (VgicSimShm.batch). */
#define VGIC_SIM_BATCH_NONE 0		/* an unpatched kernel */
#define VGIC_SIM_BATCH_OURS 1		/* kernel-patch/ */
#define VGIC_SIM_BATCH_FOREIGN 2	/* another batch ABI on group 10 */
#define VGIC_SIM_MAX_VCPUS 512	/* KVM_MAX_VCPUS on arm64 in 6.1 */

/* Host CPU-interface features (ICH_VTR_EL2) the model assumes: 24-bit
 * INTIDs, no SEI support, Aff3 valid - a typical GICv3 host. */
#define VGIC_SIM_HOST_ID_BITS 1
#define VGIC_SIM_HOST_SEIS 0
#define VGIC_SIM_HOST_A3V 1

typedef struct {
  pthread_mutex_t mutex;	/* vcpu->mutex: trylocked by every access */
  guint32 running;		/* held by a "running" vCPU (fault injection) */
  guint32 pad;
  VgicSimCpu s;
} VgicSimVcpuSlot;

/* What KVM keeps of an interrupt beside its registers, for the queueing
 * model: the vCPU whose ap_list holds it (irq->vcpu) and its target
 * (irq->target_vcpu), as vCPU indexes, -1 for none.  No register shows
 * either; vgic_sim_irq_queued_on() and vgic_sim_check_queued() do. */
typedef struct {
  gint16 on;
  gint16 target;
} VgicSimQueue;

typedef struct {
  char magic[8];
  guint32 version;
  guint32 header_size;		/* sizeof (VgicSimShm) */
  guint64 total_size;
  guint32 slot_size;		/* sizeof (VgicSimVcpuSlot) */
  guint32 nr_vcpus;
  guint32 nr_irqs;
  guint32 has_its;
  guint32 gicv4_1;
  guint32 host_pri_bits;
  guint32 batch;		/* VGIC_SIM_BATCH_*: what group 10 is */
  guint32 initialized;
  guint64 off_vcpus;
  guint64 off_spis;
  guint64 off_queue;		/* VgicSimQueue: nr_vcpus x 32, then the SPIs */

  pthread_mutex_t vm_lock;	/* kvm->lock (and config_lock: same scope here) */

  VgicSimCounters counters;	/* updated with __atomic builtins */

  /* fault injection (under vm_lock) */
  guint32 fault_next;
  guint32 fail_armed;
  guint32 fail_index;
  gint32 fail_err;
  guint32 fail_seen;		/* single GET/SETs seen since arming */
  guint32 pad0;
  /* vgic_sim_stall_at() (atomics): GET/SETs left before the stall, and
   * 0 none, 1 stalled (the call waits), 2 released */
  guint32 stall_left;
  guint32 stall_state;

  /* distributor state */
  guint32 enabled;
  guint32 nassgireq;
  guint32 implementation_rev;	/* 0 until vgic_init */
  guint32 pad1;
  guint64 propbaser;
} VgicSimShm;

static inline VgicSimVcpuSlot *
vgic_sim_slot (VgicSimShm *m, guint32 idx)
{
  return (VgicSimVcpuSlot *) ((char *) m + m->off_vcpus) + idx;
}

static inline VgicSimIrq *
vgic_sim_spis (VgicSimShm *m)
{
  return (VgicSimIrq *) ((char *) m + m->off_spis);
}

/* The interrupt @intid as seen from vCPU @vcpu (private ones are per vCPU),
 * like vgic_get_irq(); NULL at or above nr_irqs. */
static inline VgicSimIrq *
vgic_sim_irq (VgicSimShm *m, guint32 vcpu, guint32 intid)
{
  if (intid < 32)
    return &vgic_sim_slot (m, vcpu)->s.priv[intid];
  if (intid >= m->nr_irqs)
    return NULL;
  return &vgic_sim_spis (m)[intid - 32];
}

/* The queueing state of @intid as seen from vCPU @vcpu; NULL at or above
 * nr_irqs. */
static inline VgicSimQueue *
vgic_sim_queue (VgicSimShm *m, guint32 vcpu, guint32 intid)
{
  VgicSimQueue *q = (VgicSimQueue *) ((char *) m + m->off_queue);

  if (intid < 32)
    return &q[vcpu * 32 + intid];
  if (intid >= m->nr_irqs)
    return NULL;
  return &q[m->nr_vcpus * 32 + intid - 32];
}

#define vgic_sim_count(m, field, n) \
  __atomic_fetch_add (&(m)->counters.field, (n), __ATOMIC_RELAXED)

/* ---- vgic-sim-shm.c ---- */

/* vgic_sim_shm_size() - bytes of a memfd for this shape */
gsize vgic_sim_shm_size (guint32 nr_vcpus, guint32 nr_irqs);

/* vgic_sim_shm_check() - is this mapping of @size bytes a sim of our layout? */
gboolean vgic_sim_shm_check (const VgicSimShm *m, gsize size);

/* vgic_sim_shm_format() - lay out a new model in zeroed memory */
void vgic_sim_shm_format (VgicSimShm *m, const VgicSimConfig *config);

/* vgic_sim_shm_vgic_init() - what vgic_init() does to the state (idempotent) */
void vgic_sim_shm_vgic_init (VgicSimShm *m);

/* ---- vgic-sim-attr.c: the device-attr entry points ---- */

/* How the model reaches the caller's memory: 0 or -EFAULT. */
typedef struct {
  int (*read) (void *ctx, guint64 addr, void *buf, gsize len);
  int (*write) (void *ctx, guint64 addr, const void *buf, gsize len);
  void *ctx;
} VgicSimUser;

/**
 * vgic_sim_device_ioctl() - one KVM_{GET,SET,HAS}_DEVICE_ATTR on the model
 * @request: the ioctl request number
 * @arg: the caller's struct kvm_device_attr pointer
 * Return: 0 or a negative errno, as the ioctl would.
 */
int vgic_sim_device_ioctl (VgicSimShm *m, unsigned int request, guint64 arg,
                           const VgicSimUser *user);

/* Locking shared by single accesses and the batch (vgic-sim-attr.c). */
int vgic_sim_lock_all (VgicSimShm *m);
void vgic_sim_unlock_all (VgicSimShm *m);

/**
 * vgic_sim_find_vcpu() - kvm_mpidr_to_vcpu(): linear scan for the vCPU
 * whose affinity is @mpidr.  Return: its index, or -1.
 */
int vgic_sim_find_vcpu (VgicSimShm *m, guint32 mpidr);

/* ---- vgic-sim-regs.c: DIST and REDIST uaccess ---- */

/* vgic_v3_{dist,redist}_uaccess(): never fails but for handler refusals */
int vgic_sim_dist_uaccess (VgicSimShm *m, gboolean write, guint32 offset,
                           guint32 *val);
int vgic_sim_redist_uaccess (VgicSimShm *m, guint32 vcpu, gboolean write,
                             guint32 offset, guint32 *val);
/* vgic_v3_has_attr_regs() for DIST/REDIST: 0 or -ENXIO */
int vgic_sim_regs_has (VgicSimShm *m, gboolean redist, guint32 offset);
/* LEVEL_INFO access for @intid (already checked: a multiple of 32) */
void vgic_sim_line_level (VgicSimShm *m, guint32 vcpu, gboolean write,
                          guint32 intid, guint32 *val);
/**
 * vgic_sim_queue_irq() - vgic_queue_irq_unlock() for @intid as seen from
 * @vcpu: put it on the list vgic_target_oracle() names, unless it is on
 * one already (then it does not move).  Called only where KVM calls it for
 * a user-space write: ISENABLER, IGROUPR, ISPENDR, ISACTIVER (set bits;
 * every bit for IGROUPR) and LEVEL_INFO (set bits).
 */
void vgic_sim_queue_irq (VgicSimShm *m, guint32 vcpu, guint32 intid);
/**
 * vgic_sim_route_target() - kvm_mpidr_to_vcpu() for an IROUTER value
 * ([23:0], Aff3 zero): the vCPU of that affinity, or -1.  Counts nothing.
 */
int vgic_sim_route_target (VgicSimShm *m, guint32 route);
/* The PROPBASER/PENDBASER sanitisers, shared with the state randomizer */
guint64 vgic_sim_sanitise_propbaser (guint64 reg);
guint64 vgic_sim_sanitise_pendbaser (guint64 reg);

/* ---- vgic-sim-sysregs.c: CPU_SYSREGS ---- */

/* vgic_sim_sysreg_known() - is the attr's op0..op2 one of the ICC registers? */
gboolean vgic_sim_sysreg_known (guint64 attr);
/* get_user/set_user handlers: 0, or -EINVAL when the handler refuses */
int vgic_sim_sysreg_access (VgicSimShm *m, guint32 vcpu, gboolean write,
                            guint64 attr, guint64 *val);

/* ---- vgic-sim-batch.c ---- */
int vgic_sim_batch (VgicSimShm *m, gboolean write, guint64 addr,
                    const VgicSimUser *user);
/* group 10 of another layout (VGIC_SIM_BATCH_FOREIGN) */
int vgic_sim_batch_foreign (VgicSimShm *m, gboolean write, guint64 addr,
                            const VgicSimUser *user);
/* vgic_sim_fault_injected() - consume an armed single-call failure */
int vgic_sim_single_injected (VgicSimShm *m);
