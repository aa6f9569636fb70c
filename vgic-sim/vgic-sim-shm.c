/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-sim-shm.c - laying out a model in its memfd, checking a mapping is
 * one, and the reset state KVM gives a vGICv3 (kvm_vgic_create,
 * kvm_vgic_vcpu_init, vgic_init and vgic_v3_enable in Linux 6.1).
 */
#include <string.h>

#include "vgic-regs.h"
#include "vgic-shape.h"
#include "vgic-sim-shm.h"

/* INITIAL_PROPBASER_VALUE / INITIAL_PENDBASER_VALUE (vgic-its.c, vgic-v3.c):
 * inner RaWb, outer SameAsInner, InnerShareable. */
#define VGIC_SIM_INITIAL_BASER ((3ULL << 7) | (1ULL << 10))

static gsize
round8 (gsize n)
{
  return (n + 7) & ~(gsize) 7;
}

gsize
vgic_sim_shm_size (guint32 nr_vcpus, guint32 nr_irqs)
{
  return round8 (sizeof (VgicSimShm)) + nr_vcpus * sizeof (VgicSimVcpuSlot) +
         (nr_irqs - GIC_INTERNAL) * sizeof (VgicSimIrq) +
         (nr_vcpus * GIC_INTERNAL + nr_irqs - GIC_INTERNAL) * sizeof (VgicSimQueue);
}

gboolean
vgic_sim_shm_check (const VgicSimShm *m, gsize size)
{
  if (size < sizeof (VgicSimShm) ||
      memcmp (m->magic, VGIC_SIM_MAGIC, sizeof m->magic) != 0 ||
      m->version != VGIC_SIM_LAYOUT_VERSION ||
      m->header_size != sizeof (VgicSimShm) ||
      m->slot_size != sizeof (VgicSimVcpuSlot))
    return FALSE;
  if (m->nr_vcpus == 0 || m->nr_vcpus > VGIC_SIM_MAX_VCPUS ||
      m->nr_irqs < VGIC_MIN_IRQS || m->nr_irqs > VGIC_MAX_IRQS ||
      m->nr_irqs % 32 != 0)
    return FALSE;
  return m->total_size == vgic_sim_shm_size (m->nr_vcpus, m->nr_irqs) &&
         size >= m->total_size;
}

static void
init_pshared_mutex (pthread_mutex_t *mutex)
{
  pthread_mutexattr_t attr;

  pthread_mutexattr_init (&attr);
  pthread_mutexattr_setpshared (&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutex_init (mutex, &attr);
  pthread_mutexattr_destroy (&attr);
}

void
vgic_sim_shm_format (VgicSimShm *m, const VgicSimConfig *config)
{
  memcpy (m->magic, VGIC_SIM_MAGIC, sizeof m->magic);
  m->version = VGIC_SIM_LAYOUT_VERSION;
  m->header_size = sizeof (VgicSimShm);
  m->slot_size = sizeof (VgicSimVcpuSlot);
  m->nr_vcpus = config->nr_vcpus;
  m->nr_irqs = config->nr_irqs;
  m->total_size = vgic_sim_shm_size (m->nr_vcpus, m->nr_irqs);
  m->off_vcpus = round8 (sizeof (VgicSimShm));
  m->off_spis = m->off_vcpus + m->nr_vcpus * sizeof (VgicSimVcpuSlot);
  m->off_queue = m->off_spis + (m->nr_irqs - GIC_INTERNAL) * sizeof (VgicSimIrq);
  m->has_its = config->has_its;
  m->gicv4_1 = config->gicv4_1;
  m->host_pri_bits = config->pri_bits ? config->pri_bits : 5;
  m->batch = config->foreign_batch ? VGIC_SIM_BATCH_FOREIGN
             : config->batch ? VGIC_SIM_BATCH_OURS : VGIC_SIM_BATCH_NONE;
  init_pshared_mutex (&m->vm_lock);

  /* With an ITS, kvm_vgic_its_create() sets the VM-wide PROPBASER. */
  m->propbaser = m->has_its ? VGIC_SIM_INITIAL_BASER : 0;

  for (guint32 i = 0; i < m->nr_vcpus; i++)
    {
      VgicSimVcpuSlot *slot = vgic_sim_slot (m, i);

      init_pshared_mutex (&slot->mutex);
      slot->s.mpidr = config->mpidrs ? config->mpidrs[i] : vgic_default_mpidr (i);
      /* kvm_vgic_vcpu_init(): SGIs enabled and edge, PPIs level. */
      for (guint32 irq = 0; irq < GIC_INTERNAL; irq++)
        {
          VgicSimQueue *q = vgic_sim_queue (m, i, irq);

          slot->s.priv[irq].enabled = irq < 16;
          slot->s.priv[irq].edge = irq < 16;
          /* On no list; a private IRQ's target is its own vCPU. */
          q->on = -1;
          q->target = (gint16) i;
        }
    }
  /* kvm_vgic_dist_init(): SPIs are edge (irq->config is zero-filled and
   * VGIC_CONFIG_EDGE is 0), routed to 0 with vCPU 0 as their target, and on
   * no list (group is set at init). */
  for (guint32 irq = GIC_INTERNAL; irq < m->nr_irqs; irq++)
    {
      VgicSimQueue *q = vgic_sim_queue (m, 0, irq);

      vgic_sim_spis (m)[irq - GIC_INTERNAL].edge = 1;
      q->on = -1;
      q->target = 0;
    }

  if (!config->uninitialized)
    vgic_sim_shm_vgic_init (m);
}

void
vgic_sim_shm_vgic_init (VgicSimShm *m)
{
  if (m->initialized)
    return;
  for (guint32 irq = GIC_INTERNAL; irq < m->nr_irqs; irq++)
    vgic_sim_spis (m)[irq - GIC_INTERNAL].group = 1;
  for (guint32 i = 0; i < m->nr_vcpus; i++)
    {
      VgicSimCpu *c = &vgic_sim_slot (m, i)->s;

      for (guint32 irq = 0; irq < GIC_INTERNAL; irq++)
        c->priv[irq].group = 1;
      /* vgic_v3_enable(): VMCR zero, host PRIbits and IDbits, initial
       * PENDBASER. */
      c->pri_bits = (guint8) m->host_pri_bits;
      c->id_bits = VGIC_SIM_HOST_ID_BITS;
      c->pendbaser = VGIC_SIM_INITIAL_BASER;
    }
  /* "If userspace didn't set the GIC implementation revision, default to
   * the latest" (vgic_init). */
  if (!m->implementation_rev)
    m->implementation_rev = 3;
  m->initialized = 1;
}
