/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-sim-state.c - direct access to a sim's register file, for tests:
 * copy it out and in, fill it with random but architecturally valid state,
 * and describe how two register files differ.
 */
#include <string.h>

#include "vgic-sim-private.h"

static VgicSimState *
state_alloc (guint32 nr_vcpus, guint32 nr_irqs)
{
  VgicSimState *s = g_new0 (VgicSimState, 1);

  s->nr_vcpus = nr_vcpus;
  s->nr_irqs = nr_irqs;
  s->spis = g_new0 (VgicSimIrq, nr_irqs - 32);
  s->cpus = g_new0 (VgicSimCpu, nr_vcpus);
  return s;
}

void
vgic_sim_state_free (VgicSimState *state)
{
  if (!state)
    return;
  g_free (state->spis);
  g_free (state->cpus);
  g_free (state);
}

VgicSimState *
vgic_sim_state_get (VgicSim *sim)
{
  VgicSimShm *m = sim->m;
  VgicSimState *s = state_alloc (m->nr_vcpus, m->nr_irqs);

  pthread_mutex_lock (&m->vm_lock);
  s->has_its = m->has_its;
  s->enabled = m->enabled;
  s->nassgireq = m->nassgireq;
  s->implementation_rev = m->implementation_rev;
  s->propbaser = m->propbaser;
  memcpy (s->spis, vgic_sim_spis (m), (m->nr_irqs - 32) * sizeof *s->spis);
  for (guint32 i = 0; i < m->nr_vcpus; i++)
    s->cpus[i] = vgic_sim_slot (m, i)->s;
  pthread_mutex_unlock (&m->vm_lock);
  return s;
}

gboolean
vgic_sim_state_set (VgicSim *sim, const VgicSimState *s, GError **error)
{
  VgicSimShm *m = sim->m;

  if (s->nr_vcpus != m->nr_vcpus || s->nr_irqs != m->nr_irqs)
    {
      g_set_error (error, VGIC_SIM_ERROR, 0,
                   "state for %u vCPUs / %u IRQs does not fit a sim of %u / %u",
                   s->nr_vcpus, s->nr_irqs, m->nr_vcpus, m->nr_irqs);
      return FALSE;
    }
  pthread_mutex_lock (&m->vm_lock);
  m->enabled = !!s->enabled;
  m->nassgireq = !!s->nassgireq;
  m->implementation_rev = s->implementation_rev;
  m->propbaser = s->propbaser;
  memcpy (vgic_sim_spis (m), s->spis, (m->nr_irqs - 32) * sizeof *s->spis);
  for (guint32 i = 0; i < m->nr_vcpus; i++)
    {
      VgicSimCpu *c = &vgic_sim_slot (m, i)->s;
      guint32 mpidr = c->mpidr;	/* identity, not state */

      *c = s->cpus[i];
      c->mpidr = mpidr;
    }
  pthread_mutex_unlock (&m->vm_lock);
  return TRUE;
}

static guint8
rbit (GRand *r)
{
  return (guint8) g_rand_int_range (r, 0, 2);
}

/* Random values for the state a migration carries.  "Valid" means what a
 * real vGIC can hold: priorities keep bits [7:3]; SGIs are edge and PPIs
 * level (read-only configuration); an edge IRQ carries no line level;
 * routes name existing vCPUs; PRIbits/IDbits within the host's; APRs only
 * up to the last one PRIbits allows; ABPR zero while CBPR aliases it; LPI
 * state only with an ITS, and the bases as the kernel sanitises them. */
static void
random_irq (GRand *r, VgicSimIrq *irq, guint32 intid, VgicSimShm *m)
{
  irq->group = rbit (r);
  irq->enabled = rbit (r);
  irq->pending = rbit (r);
  irq->active = rbit (r);
  irq->priority = (guint8) (g_rand_int (r) & 0xf8);
  if (intid < 16)
    irq->edge = 1;
  else if (intid < 32)
    irq->edge = 0;
  else
    irq->edge = rbit (r);
  irq->level = intid >= 16 && !irq->edge ? rbit (r) : 0;
  irq->route = intid >= 32
    ? vgic_sim_slot (m, (guint32) g_rand_int_range (r, 0, (gint32) m->nr_vcpus))->s.mpidr & 0xffffff
    : 0;
}

void
vgic_sim_randomize (VgicSim *sim, guint32 seed)
{
  VgicSimShm *m = sim->m;
  g_autoptr (GRand) r = g_rand_new_with_seed (seed);
  g_autoptr (VgicSimState) s = vgic_sim_state_get (sim);

  s->enabled = rbit (r);
  s->nassgireq = m->gicv4_1 ? rbit (r) : 0;
  s->implementation_rev = 3;
  if (m->has_its)
    s->propbaser = vgic_sim_sanitise_propbaser (((guint64) g_rand_int (r) << 32) |
                                                g_rand_int (r));
  for (guint32 irq = 32; irq < m->nr_irqs; irq++)
    random_irq (r, &s->spis[irq - 32], irq, m);
  for (guint32 i = 0; i < m->nr_vcpus; i++)
    {
      VgicSimCpu *c = &s->cpus[i];
      guint max_apr;

      for (guint32 irq = 0; irq < 32; irq++)
        random_irq (r, &c->priv[irq], irq, m);
      c->pri_bits = (guint8) g_rand_int_range (r, 5, (gint32) m->host_pri_bits + 1);
      c->id_bits = (guint8) g_rand_int_range (r, 0, VGIC_SIM_HOST_ID_BITS + 1);
      c->cbpr = rbit (r);
      c->eoimode = rbit (r);
      c->grpen0 = rbit (r);
      c->grpen1 = rbit (r);
      c->pmr = (guint8) g_rand_int_range (r, 0, 256);
      c->bpr0 = (guint8) g_rand_int_range (r, 0, 8);
      c->bpr1 = c->cbpr ? 0 : (guint8) g_rand_int_range (r, 0, 8);
      max_apr = c->pri_bits == 7 ? 3 : c->pri_bits == 6 ? 1 : 0;
      for (guint k = 0; k < 4; k++)
        {
          c->ap0r[k] = k <= max_apr ? g_rand_int (r) : 0;
          c->ap1r[k] = k <= max_apr ? g_rand_int (r) : 0;
        }
      if (m->has_its)
        {
          c->lpis_enabled = rbit (r);
          c->pendbaser = vgic_sim_sanitise_pendbaser (((guint64) g_rand_int (r) << 32) |
                                                      g_rand_int (r)) & ~(1ULL << 62);
        }
    }
  vgic_sim_state_set (sim, s, NULL);
}

#define DIFF(cond, ...) \
  G_STMT_START { \
    if (cond) { equal = FALSE; if (diff) g_string_append_printf (diff, __VA_ARGS__); } \
  } G_STMT_END

static gboolean
irq_equal (const VgicSimIrq *a, const VgicSimIrq *b, const char *where,
           guint32 intid, GString *diff)
{
  gboolean equal = TRUE;

#define F(f) DIFF (a->f != b->f, "%s IRQ %u: " #f " %u != %u\n", where, intid, \
                   (guint) a->f, (guint) b->f)
  F (group); F (enabled); F (pending); F (active); F (edge); F (level);
  F (priority);
  DIFF (a->route != b->route, "%s IRQ %u: route 0x%x != 0x%x\n", where, intid,
        a->route, b->route);
#undef F
  return equal;
}

gboolean
vgic_sim_state_equal (const VgicSimState *a, const VgicSimState *b,
                      GString *diff)
{
  gboolean equal = TRUE;

  if (a->nr_vcpus != b->nr_vcpus || a->nr_irqs != b->nr_irqs)
    {
      if (diff)
        g_string_append_printf (diff, "shape: %u vCPUs/%u IRQs != %u/%u\n",
                                a->nr_vcpus, a->nr_irqs, b->nr_vcpus, b->nr_irqs);
      return FALSE;
    }
  DIFF (!a->enabled != !b->enabled, "GICD_CTLR.Enable %d != %d\n", !!a->enabled, !!b->enabled);
  DIFF (!a->nassgireq != !b->nassgireq, "GICD_CTLR.nASSGIreq %d != %d\n",
        !!a->nassgireq, !!b->nassgireq);
  DIFF (a->implementation_rev != b->implementation_rev, "IIDR revision %u != %u\n",
        a->implementation_rev, b->implementation_rev);
  DIFF (a->propbaser != b->propbaser, "PROPBASER 0x%" G_GINT64_MODIFIER "x != 0x%"
        G_GINT64_MODIFIER "x\n", a->propbaser, b->propbaser);
  for (guint32 irq = 32; irq < a->nr_irqs; irq++)
    equal &= irq_equal (&a->spis[irq - 32], &b->spis[irq - 32], "dist", irq, diff);

  for (guint32 i = 0; i < a->nr_vcpus; i++)
    {
      const VgicSimCpu *x = &a->cpus[i], *y = &b->cpus[i];
      g_autofree char *where = g_strdup_printf ("vCPU %u", i);

#define C(f) DIFF (x->f != y->f, "%s: " #f " 0x%" G_GINT64_MODIFIER "x != 0x%" \
                   G_GINT64_MODIFIER "x\n", where, (guint64) x->f, (guint64) y->f)
      C (mpidr); C (lpis_enabled); C (pri_bits); C (id_bits); C (cbpr);
      C (eoimode); C (grpen0); C (grpen1); C (pmr); C (bpr0); C (bpr1);
      C (pendbaser);
#undef C
      for (guint k = 0; k < 4; k++)
        {
          DIFF (x->ap0r[k] != y->ap0r[k], "%s: ap0r%u 0x%x != 0x%x\n", where, k,
                x->ap0r[k], y->ap0r[k]);
          DIFF (x->ap1r[k] != y->ap1r[k], "%s: ap1r%u 0x%x != 0x%x\n", where, k,
                x->ap1r[k], y->ap1r[k]);
        }
      for (guint32 irq = 0; irq < 32; irq++)
        equal &= irq_equal (&x->priv[irq], &y->priv[irq], where, irq, diff);
    }
  return equal;
}
