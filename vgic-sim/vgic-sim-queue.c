/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-sim-queue.c - the queueing model: which vCPU's list (ap_list) each
 * interrupt is on, as KVM decides it for user-space writes to a VM that
 * does not run (arch/arm64/kvm/vgic/vgic.c: vgic_queue_irq_unlock() and
 * vgic_target_oracle(), the same on 6.1, 6.12 and 7.3).
 *
 * KVM puts an interrupt on a list only in vgic_queue_irq_unlock(), called
 * by the writes that can make it deliverable (vgic-sim-regs.c calls
 * vgic_sim_queue_irq() at the same places), and only if the oracle then
 * names a vCPU; an interrupt already on a list stays where it is until
 * that vCPU runs (vgic_prune_ap_list(), not modelled: nothing here takes an
 * interrupt off a list).  No register shows any of it, so it changes no
 * value, error or counter; tests see it through vgic_sim_irq_queued_on()
 * and vgic_sim_check_queued().
 */
#include "vgic-regs.h"
#include "vgic-sim-private.h"

/* irq_is_pending(): an edge IRQ's pending latch; a level IRQ's latch or
 * its line level. */
static gboolean
irq_is_pending (const VgicSimIrq *irq)
{
  return irq->pending || (!irq->edge && irq->level);
}

/* vgic_target_oracle(): an active IRQ stays on its current vCPU, or goes
 * to its target; an enabled pending one goes to its target while the
 * distributor is enabled; anything else to none. */
static int
target_oracle (const VgicSimShm *m, const VgicSimIrq *irq, const VgicSimQueue *q)
{
  if (irq->active)
    return q->on >= 0 ? q->on : q->target;
  if (irq->enabled && irq_is_pending (irq))
    return m->enabled ? q->target : -1;
  return -1;
}

void
vgic_sim_queue_irq (VgicSimShm *m, guint32 vcpu, guint32 intid)
{
  VgicSimIrq *irq = vgic_sim_irq (m, vcpu, intid);
  VgicSimQueue *q = vgic_sim_queue (m, vcpu, intid);
  int target;

  if (!irq || q->on >= 0)	/* "already on a VCPU's ap_list": no move */
    return;
  target = target_oracle (m, irq, q);
  if (target >= 0)
    q->on = (gint16) target;
}

int
vgic_sim_route_target (VgicSimShm *m, guint32 route)
{
  for (guint32 i = 0; i < m->nr_vcpus; i++)
    if (vgic_sim_slot (m, i)->s.mpidr == route)
      return (int) i;
  return -1;
}

/* ------------------------------------------------------------------ */
/* The test API (vgic-sim.h)                                          */
/* ------------------------------------------------------------------ */

static int
queue_field (VgicSim *sim, guint vcpu, guint32 intid, gboolean target)
{
  VgicSimShm *m = sim->m;
  VgicSimQueue *q;
  int ret;

  g_return_val_if_fail (vcpu < m->nr_vcpus, -2);
  pthread_mutex_lock (&m->vm_lock);
  q = vgic_sim_queue (m, vcpu, intid);
  ret = !q ? -2 : target ? q->target : q->on;
  pthread_mutex_unlock (&m->vm_lock);
  return ret;
}

int
vgic_sim_irq_queued_on (VgicSim *sim, guint vcpu, guint32 intid)
{
  return queue_field (sim, vcpu, intid, FALSE);
}

int
vgic_sim_irq_target (VgicSim *sim, guint vcpu, guint32 intid)
{
  return queue_field (sim, vcpu, intid, TRUE);
}

/* Where the property says @intid (as seen from @vcpu) belongs. */
static int
expected_list (const VgicSimShm *m, const VgicSimIrq *irq, const VgicSimQueue *q)
{
  if (irq->active || (m->enabled && irq->enabled && irq_is_pending (irq)))
    return q->target;
  return -1;
}

static gboolean
check_one (VgicSimShm *m, guint32 vcpu, guint32 intid, GString *diff)
{
  const VgicSimIrq *irq = vgic_sim_irq (m, vcpu, intid);
  const VgicSimQueue *q = vgic_sim_queue (m, vcpu, intid);
  int want = expected_list (m, irq, q);

  if (q->on == want)
    return TRUE;
  if (diff)
    {
      if (intid < GIC_INTERNAL)
        g_string_append_printf (diff, "vCPU %u IRQ %u", vcpu, intid);
      else
        g_string_append_printf (diff, "SPI %u", intid);
      g_string_append_printf (diff, " (%s, enabled %u, latch %u, level %u, active %u, "
                              "distributor %s, target ",
                              irq->edge ? "edge" : "level", irq->enabled, irq->pending,
                              irq->level, irq->active, m->enabled ? "enabled" : "disabled");
      if (q->target >= 0)
        g_string_append_printf (diff, "vCPU %d): ", q->target);
      else
        g_string_append (diff, "none): ");
      if (q->on >= 0)
        g_string_append_printf (diff, "queued on vCPU %d", q->on);
      else
        g_string_append (diff, "on no list");
      if (want >= 0)
        g_string_append_printf (diff, ", should be on vCPU %d\n", want);
      else
        g_string_append (diff, ", should be on none\n");
    }
  return FALSE;
}

gboolean
vgic_sim_check_queued (VgicSim *sim, GString *diff)
{
  VgicSimShm *m = sim->m;
  gboolean ok = TRUE;

  pthread_mutex_lock (&m->vm_lock);
  for (guint32 i = 0; i < m->nr_vcpus; i++)
    for (guint32 intid = 0; intid < GIC_INTERNAL; intid++)
      ok &= check_one (m, i, intid, diff);
  for (guint32 intid = GIC_INTERNAL; intid < m->nr_irqs; intid++)
    ok &= check_one (m, 0, intid, diff);
  pthread_mutex_unlock (&m->vm_lock);
  return ok;
}
