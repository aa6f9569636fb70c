/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-sim-queue.c - the rules of docs/kernel-interface.md ("Ordering rules
 * the kernel enforces") that are about the kernel's queueing, which no
 * register read-back shows: R0 (GICD_CTLR first), R2 (an SPI's ICFGR before
 * its line level and pending state) and R3 (IROUTER before anything that
 * queues an SPI).  The sim's queueing model (vgic-sim.h) says which vCPU's
 * list each interrupt is on; after the planner's restore into a fresh sim
 * every interrupt must be where vgic_sim_check_queued() says.  Each rule
 * then gets a negative control: the planner's plan with one block moved
 * against the rule writes the same registers, and breaks the property.
 */
#include "sim-util.h"
#include "sim-vm.h"
#include "vgic-plan.h"

typedef struct {
  guint32 vcpus, irqs;
  gboolean its;
  guint pri_bits;
} Shape;

static const Shape shapes[] = {
  { 1, 64, FALSE, 5 },
  { 2, 128, FALSE, 5 },
  { 4, 128, TRUE, 7 },
  { 7, 288, TRUE, 6 },
  { 16, 96, FALSE, 7 },
};

/* ------------------------------------------------------------------ */
/* Helpers                                                            */
/* ------------------------------------------------------------------ */

static void
run_writes (VgicSim *sim, VgicList *plan, gboolean batch)
{
  int fd = vgic_sim_get_fd (sim);

  g_assert_cmpint (batch ? sim_run_batch (fd, TRUE, plan) : sim_run_single (fd, TRUE, plan),
                   ==, 0);
}

/* The planner's restore of what @src holds. */
static VgicList *
restore_plan (VgicSim *src, const VgicShape *shape, gboolean routes)
{
  g_autoptr (VgicList) saved = sim_plan_save (src, shape, TRUE, routes);
  g_autoptr (VgicValues) state = NULL;
  g_autoptr (GError) error = NULL;
  VgicList *writes;

  state = vgic_values_from_reads (saved->entries, saved->len, &error);
  g_assert_no_error (error);
  writes = vgic_plan_restore_write (shape, state, routes, &error);
  g_assert_no_error (error);
  return writes;
}

/* The property, failing the test with the list of offenders. */
static void
assert_queued_right (VgicSim *sim)
{
  g_autoptr (GString) diff = g_string_new (NULL);

  if (!vgic_sim_check_queued (sim, diff))
    g_error ("queueing property broken:\n%s", diff->str);
}

static guint
count_queued (VgicSim *sim, guint32 vcpus, guint32 irqs)
{
  guint n = 0;

  for (guint32 v = 0; v < vcpus; v++)
    for (guint32 i = 0; i < 32; i++)
      n += vgic_sim_irq_queued_on (sim, v, i) >= 0;
  for (guint32 i = 32; i < irqs; i++)
    n += vgic_sim_irq_queued_on (sim, 0, i) >= 0;
  return n;
}

/* ------------------------------------------------------------------ */
/* The model itself, call site by call site                           */
/* ------------------------------------------------------------------ */

#define D(off) vgic_attr (0, (off))
#define WORD(intid) (((intid) / 32) * 4)
#define BIT(intid) (1u << ((intid) % 32))
#define CTLR_ON (GICD_CTLR_ARE_NS | GICD_CTLR_DS | GICD_CTLR_ENABLE_G1)

static void
test_fresh (void)
{
  g_autoptr (VgicSim) sim = sim_new (3, 96, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);

  g_assert_cmpuint (count_queued (sim, 3, 96), ==, 0);
  for (guint v = 0; v < 3; v++)
    for (guint32 i = 0; i < 32; i++)
      g_assert_cmpint (vgic_sim_irq_target (sim, v, i), ==, (int) v);
  for (guint32 i = 32; i < 96; i++)
    g_assert_cmpint (vgic_sim_irq_target (sim, 0, i), ==, 0);
  g_assert_cmpint (vgic_sim_irq_queued_on (sim, 0, 96), ==, -2);
  g_assert_cmpint (vgic_sim_irq_target (sim, 0, 96), ==, -2);
  /* kvm_vgic_dist_init() leaves irq->config zero: VGIC_CONFIG_EDGE. */
  for (guint32 i = 32; i < 96; i += 16)
    g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_ICFGR + i / 4)), ==, 0xaaaaaaaa);
  assert_queued_right (sim);
}

/* A pending enabled SPI written while the distributor is disabled stays
 * off every list; enabling the distributor does not look again, nor does a
 * configuration or priority write; the next IGROUPR write to its word
 * does. */
static void
test_distributor_disabled (void)
{
  g_autoptr (VgicSim) sim = sim_new (2, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);

  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ISENABLER + WORD (40)), BIT (40)), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ISPENDR + WORD (40)), BIT (40)), ==, 0);
  g_assert_cmpint (vgic_sim_irq_queued_on (sim, 0, 40), ==, -1);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_CTLR), CTLR_ON), ==, 0);
  g_assert_cmpint (vgic_sim_irq_queued_on (sim, 0, 40), ==, -1);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ICFGR + 40 / 4), 0xaaaaaaaa), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_IPRIORITYR + 40), 0x80808080), ==, 0);
  g_assert_cmpint (vgic_sim_irq_queued_on (sim, 0, 40), ==, -1);
  g_assert_false (vgic_sim_check_queued (sim, NULL));
  /* Every IRQ of the word, whatever bit is written. */
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_IGROUPR + WORD (40)), 0), ==, 0);
  g_assert_cmpint (vgic_sim_irq_queued_on (sim, 0, 40), ==, 0);
  assert_queued_right (sim);
}

/* ISENABLER and ISPENDR queue on their set bits; a queued SPI does not
 * move when IROUTER changes its target, nor leave when it is disabled or
 * its latch cleared. */
static void
test_enable_pending_route (void)
{
  g_autoptr (VgicSim) sim = sim_new (2, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  guint32 aff1 = vgic_sim_get_mpidr (sim, 1);

  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_CTLR), CTLR_ON), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ISPENDR + WORD (33)), BIT (33) | BIT (34)),
                   ==, 0);
  g_assert_cmpint (vgic_sim_irq_queued_on (sim, 0, 33), ==, -1);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_IROUTER + 8 * 34), aff1), ==, 0);
  g_assert_cmpint (vgic_sim_irq_target (sim, 0, 34), ==, 1);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ISENABLER + WORD (33)), BIT (33) | BIT (34)),
                   ==, 0);
  g_assert_cmpint (vgic_sim_irq_queued_on (sim, 0, 33), ==, 0);
  g_assert_cmpint (vgic_sim_irq_queued_on (sim, 0, 34), ==, 1);
  g_assert_cmpint (vgic_sim_irq_queued_on (sim, 0, 35), ==, -1);
  assert_queued_right (sim);

  /* Re-routing a queued SPI changes its target, not its list. */
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_IROUTER + 8 * 33), aff1), ==, 0);
  g_assert_cmpint (vgic_sim_irq_target (sim, 0, 33), ==, 1);
  g_assert_cmpint (vgic_sim_irq_queued_on (sim, 0, 33), ==, 0);
  g_assert_false (vgic_sim_check_queued (sim, NULL));
  /* Nor does a write that queues: it is on a list already. */
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ISPENDR + WORD (33)), BIT (33) | BIT (34)),
                   ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ISACTIVER + WORD (33)), BIT (33)), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_IGROUPR + WORD (33)), ~0u), ==, 0);
  g_assert_cmpint (vgic_sim_irq_queued_on (sim, 0, 33), ==, 0);
  /* The upper word is WI: no target change. */
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_IROUTER + 8 * 33 + 4), 0), ==, 0);
  g_assert_cmpint (vgic_sim_irq_target (sim, 0, 33), ==, 1);
  /* Nothing takes an IRQ off a list while the VM does not run. */
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ICENABLER + WORD (34)), BIT (34)), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ISPENDR + WORD (34)), 0), ==, 0);
  g_assert_cmpint (vgic_sim_irq_queued_on (sim, 0, 34), ==, 1);
}

/* An active IRQ is queued on its target even with the distributor
 * disabled; a route naming no vCPU leaves it on none. */
static void
test_active (void)
{
  g_autoptr (VgicSim) sim = sim_new (2, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  guint32 aff1 = vgic_sim_get_mpidr (sim, 1);

  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_IROUTER + 8 * 36), aff1), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_IROUTER + 8 * 37), 0xabcdef), ==, 0);
  g_assert_cmpint (vgic_sim_irq_target (sim, 0, 37), ==, -1);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ISACTIVER + WORD (36)), BIT (36) | BIT (37)),
                   ==, 0);
  g_assert_cmpint (vgic_sim_irq_queued_on (sim, 0, 36), ==, 1);
  g_assert_cmpint (vgic_sim_irq_queued_on (sim, 0, 37), ==, -1);
  assert_queued_right (sim);

  /* Private: vCPU 1's PPI 20, on vCPU 1. */
  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, vgic_attr (aff1, GICR_ISACTIVER0), BIT (20)), ==, 0);
  g_assert_cmpint (vgic_sim_irq_queued_on (sim, 1, 20), ==, 1);
  g_assert_cmpint (vgic_sim_irq_queued_on (sim, 0, 20), ==, -1);
  assert_queued_right (sim);
}

/* LEVEL_INFO queues a level IRQ whose line it raises; an edge one's line
 * makes it pending to nobody. */
static void
test_line_level (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  guint64 spis = vgic_attr_level (vgic_sim_get_mpidr (sim, 0), 32);
  guint64 ppis = vgic_attr_level (vgic_sim_get_mpidr (sim, 0), 0);

  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_CTLR), CTLR_ON), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ISENABLER + 4), 0x3), ==, 0);
  /* SPI 32 level, SPI 33 edge. */
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ICFGR + 8), 0x8), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_LEVEL, spis, 0x3), ==, 0);
  g_assert_cmpint (vgic_sim_irq_queued_on (sim, 0, 32), ==, 0);
  g_assert_cmpint (vgic_sim_irq_queued_on (sim, 0, 33), ==, -1);
  /* PPIs are level: PPI 27, enabled, its line raised. */
  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, vgic_attr (vgic_sim_get_mpidr (sim, 0),
                                                         GICR_ISENABLER0), BIT (27)), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_LEVEL, ppis, BIT (27)), ==, 0);
  g_assert_cmpint (vgic_sim_irq_queued_on (sim, 0, 27), ==, 0);
  assert_queued_right (sim);
}

/* The model is invisible: a batch and the same writes one by one leave the
 * same lists, and the counters are those of the writes alone. */
static void
test_invisible (void)
{
  g_autoptr (VgicSim) a = sim_new (4, 128, TRUE, 7);
  g_autoptr (VgicSim) b = sim_new (4, 128, TRUE, 7);
  g_autoptr (VgicShape) shape = sim_vm_shape (a, 4, 128);
  g_autoptr (VgicList) plan = NULL;
  VgicSimCounters ca, cb;

  {
    g_autoptr (VgicSim) src = sim_new (4, 128, TRUE, 7);

    vgic_sim_randomize (src, 4242);
    plan = restore_plan (src, shape, TRUE);
  }
  vgic_sim_counters_reset (a);
  vgic_sim_counters_reset (b);
  run_writes (a, plan, TRUE);
  run_writes (b, plan, FALSE);
  vgic_sim_counters_get (a, &ca);
  vgic_sim_counters_get (b, &cb);
  g_assert_cmpuint (ca.batch_entries, ==, plan->len);
  g_assert_cmpuint (cb.single_set, ==, plan->len);
  g_assert_cmpuint (ca.mpidr_scan_steps, >, 0);
  for (guint v = 0; v < 4; v++)
    for (guint32 i = 0; i < 128; i++)
      g_assert_cmpint (vgic_sim_irq_queued_on (a, v, i), ==, vgic_sim_irq_queued_on (b, v, i));
}

/* ------------------------------------------------------------------ */
/* The property after the planner's restore, over random states        */
/* ------------------------------------------------------------------ */

static void
restore_random (const Shape *s, gboolean batch)
{
  g_autoptr (VgicSim) probe = sim_new (s->vcpus, s->irqs, s->its, s->pri_bits);
  g_autoptr (VgicShape) shape = sim_vm_shape (probe, s->vcpus, s->irqs);
  guint queued = 0;

  for (guint32 seed = 1; seed <= 6; seed++)
    for (int routes = 0; routes < 2; routes++)
      {
        g_autoptr (VgicSim) src = sim_new (s->vcpus, s->irqs, s->its, s->pri_bits);
        g_autoptr (VgicSim) dst = sim_new (s->vcpus, s->irqs, s->its, s->pri_bits);
        g_autoptr (VgicList) plan = NULL;

        vgic_sim_randomize (src, seed * 7919 + s->irqs);
        plan = restore_plan (src, shape, routes);
        run_writes (dst, plan, batch);
        assert_queued_right (dst);
        queued += count_queued (dst, s->vcpus, s->irqs);
      }
  /* Not vacuous: random states leave interrupts active and pending. */
  g_assert_cmpuint (queued, >, 0);
}

static void
test_random_batch (gconstpointer data)
{
  restore_random (data, TRUE);
}

static void
test_random_single (gconstpointer data)
{
  restore_random (data, FALSE);
}

/* ------------------------------------------------------------------ */
/* R0, R2, R3: negative controls on one crafted state                  */
/* ------------------------------------------------------------------ */

#define CRAFT_VCPUS 2
#define CRAFT_IRQS 128

/* GICD_CTLR = ARE|DS|EnableGrp1 (0x52); SPI 40 edge, enabled, pending,
 * routed to vCPU 0; SPI 41 level, enabled, line high, latch clear; SPI 42
 * active, routed to vCPU 1.  The rest as a fresh VM has it. */
static VgicSim *
crafted_source (void)
{
  VgicSim *src = sim_new (CRAFT_VCPUS, CRAFT_IRQS, FALSE, 5);
  g_autoptr (VgicSimState) s = vgic_sim_state_get (src);
  g_autoptr (GError) error = NULL;
  VgicSimIrq *spi40 = &s->spis[40 - 32], *spi41 = &s->spis[41 - 32], *spi42 = &s->spis[42 - 32];

  s->enabled = TRUE;
  *spi40 = (VgicSimIrq) { .group = 1, .enabled = 1, .pending = 1, .edge = 1,
                          .route = vgic_sim_get_mpidr (src, 0) };
  *spi41 = (VgicSimIrq) { .group = 1, .enabled = 1, .edge = 0, .level = 1,
                          .route = vgic_sim_get_mpidr (src, 0) };
  *spi42 = (VgicSimIrq) { .group = 1, .active = 1, .edge = 1,
                          .route = vgic_sim_get_mpidr (src, 1) & 0xffffff };
  g_assert_true (vgic_sim_state_set (src, s, &error));
  g_assert_no_error (error);
  g_assert_cmphex (sim_read32 (vgic_sim_get_fd (src), GRP_DIST, D (GICD_CTLR)), ==, 0x52);
  /* LEVEL_INFO at intid 32, bit 9, is SPI 41's line. */
  g_assert_cmphex (sim_read32 (vgic_sim_get_fd (src), GRP_LEVEL,
                               vgic_attr_level (vgic_sim_get_mpidr (src, 0), 32)), ==, BIT (41));
  return src;
}

typedef gboolean (*EntryPred) (const VgicEntry *e);

static gboolean
dist_in (const VgicEntry *e, guint32 lo, guint32 hi)
{
  return e->group == VGIC_GRP_DIST && vgic_attr_low (e->attr) >= lo &&
         vgic_attr_low (e->attr) < hi;
}

static gboolean
is_gicd_ctlr (const VgicEntry *e)
{
  return dist_in (e, GICD_CTLR, GICD_CTLR + 4);
}

/* The SPIs' ICFGR words (the first two are the private IRQs'). */
static gboolean
is_spi_icfgr (const VgicEntry *e)
{
  return dist_in (e, GICD_ICFGR + 8, GICD_ICFGR + 0x100);
}

static gboolean
is_level_info (const VgicEntry *e)
{
  return e->group == VGIC_GRP_LEVEL;
}

static gboolean
is_irouter (const VgicEntry *e)
{
  return dist_in (e, GICD_IROUTER, GICD_IROUTER + 0x2000);
}

static gboolean
is_isactiver (const VgicEntry *e)
{
  return dist_in (e, GICD_ISACTIVER, GICD_ISACTIVER + 0x80);
}

/* @plan with every entry @moved picks taken out and put back, in order,
 * right after the last entry @anchor picks (NULL: at the end).  Asserts
 * that this does reorder: some moved entry came before that anchor. */
static VgicList *
permute (const VgicList *plan, EntryPred moved, EntryPred anchor)
{
  g_autoptr (VgicList) kept = vgic_list_new (plan->len);
  g_autoptr (VgicList) block = vgic_list_new (plan->len);
  VgicList *out = vgic_list_new (plan->len);
  guint first_moved = G_MAXUINT, last_anchor = 0, at;

  for (guint i = 0; i < plan->len; i++)
    {
      const VgicEntry *e = &plan->entries[i];

      if (moved (e))
        {
          first_moved = MIN (first_moved, i);
          vgic_list_append (block, e, 1);
        }
      else
        {
          if (!anchor || anchor (e))
            last_anchor = i;
          vgic_list_append (kept, e, 1);
        }
    }
  g_assert_cmpuint (block->len, >, 0);
  g_assert_cmpuint (first_moved, <, last_anchor);
  /* Where the anchor landed in @kept. */
  at = kept->len;
  if (anchor)
    for (guint i = kept->len; i-- > 0;)
      if (anchor (&kept->entries[i]))
        {
          at = i + 1;
          break;
        }
  vgic_list_append (out, kept->entries, at);
  vgic_list_append (out, block->entries, block->len);
  vgic_list_append (out, kept->entries + at, kept->len - at);
  g_assert_cmpuint (out->len, ==, plan->len);
  return out;
}

typedef struct {
  const char *rule;
  EntryPred moved, anchor;
  guint32 spi;	/* the SPI the rule protects */
  int wrong;	/* where it ends up: a vCPU, or -1 for no list */
} Control;

static const Control controls[] = {
  { "R0", is_gicd_ctlr, NULL, 40, -1 },
  { "R2", is_spi_icfgr, is_level_info, 41, -1 },
  { "R3", is_irouter, is_isactiver, 42, 0 },
};

/* The planner's own plan on the crafted state: each SPI where it belongs. */
static void
test_crafted_planner (gconstpointer data)
{
  gboolean batch = GPOINTER_TO_INT (data);
  g_autoptr (VgicSim) src = crafted_source ();
  g_autoptr (VgicSim) dst = sim_new (CRAFT_VCPUS, CRAFT_IRQS, FALSE, 5);
  g_autoptr (VgicShape) shape = sim_vm_shape (src, CRAFT_VCPUS, CRAFT_IRQS);
  g_autoptr (VgicList) plan = restore_plan (src, shape, TRUE);

  run_writes (dst, plan, batch);
  assert_queued_right (dst);
  g_assert_cmpint (vgic_sim_irq_queued_on (dst, 0, 40), ==, 0);
  g_assert_cmpint (vgic_sim_irq_queued_on (dst, 0, 41), ==, 0);
  g_assert_cmpint (vgic_sim_irq_queued_on (dst, 0, 42), ==, 1);
  g_assert_cmpuint (count_queued (dst, CRAFT_VCPUS, CRAFT_IRQS), ==, 3);
}

static void
run_control (const Control *c, gboolean batch)
{
  g_autoptr (VgicSim) src = crafted_source ();
  g_autoptr (VgicSim) good = sim_new (CRAFT_VCPUS, CRAFT_IRQS, FALSE, 5);
  g_autoptr (VgicSim) bad = sim_new (CRAFT_VCPUS, CRAFT_IRQS, FALSE, 5);
  g_autoptr (VgicShape) shape = sim_vm_shape (src, CRAFT_VCPUS, CRAFT_IRQS);
  g_autoptr (VgicList) plan = restore_plan (src, shape, TRUE);
  g_autoptr (VgicList) permuted = permute (plan, c->moved, c->anchor);
  g_autoptr (VgicList) good_regs = NULL, bad_regs = NULL;
  g_autoptr (GString) diff = g_string_new (NULL);

  run_writes (good, plan, batch);
  run_writes (bad, permuted, batch);

  /* No register tells them apart... */
  good_regs = sim_plan_save (good, shape, TRUE, TRUE);
  bad_regs = sim_plan_save (bad, shape, TRUE, TRUE);
  sim_assert_same_values (good_regs, bad_regs);

  /* ...but the lists do. */
  assert_queued_right (good);
  g_assert_false (vgic_sim_check_queued (bad, diff));
  g_test_message ("%s broken (%s): %s", c->rule, batch ? "batch" : "one by one", diff->str);
  g_assert_cmpint (vgic_sim_irq_queued_on (bad, 0, c->spi), ==, c->wrong);
  g_assert_cmpint (vgic_sim_irq_queued_on (good, 0, c->spi), ==,
                   vgic_sim_irq_target (good, 0, c->spi));
  g_assert_cmpint (vgic_sim_irq_target (bad, 0, c->spi), ==,
                   vgic_sim_irq_target (good, 0, c->spi));
}

static void
test_control_batch (gconstpointer data)
{
  run_control (data, TRUE);
}

static void
test_control_single (gconstpointer data)
{
  run_control (data, FALSE);
}

int
main (int argc, char **argv)
{
  sim_test_init (&argc, &argv);

  g_test_add_func ("/sim/queue/model/fresh", test_fresh);
  g_test_add_func ("/sim/queue/model/distributor-disabled", test_distributor_disabled);
  g_test_add_func ("/sim/queue/model/enable-pending-route", test_enable_pending_route);
  g_test_add_func ("/sim/queue/model/active", test_active);
  g_test_add_func ("/sim/queue/model/line-level", test_line_level);
  g_test_add_func ("/sim/queue/model/batch-equals-single", test_invisible);

  for (guint i = 0; i < G_N_ELEMENTS (shapes); i++)
    {
      const Shape *s = &shapes[i];
      g_autofree char *tag = g_strdup_printf ("%uvcpu-%uirq-%s-pri%u", s->vcpus, s->irqs,
                                              s->its ? "its" : "noits", s->pri_bits);
      g_autofree char *p1 = g_strdup_printf ("/sim/queue/restore-random/batch/%s", tag);
      g_autofree char *p2 = g_strdup_printf ("/sim/queue/restore-random/single/%s", tag);

      g_test_add_data_func (p1, s, test_random_batch);
      g_test_add_data_func (p2, s, test_random_single);
    }

  g_test_add_data_func ("/sim/queue/crafted/planner/batch", GINT_TO_POINTER (TRUE),
                        test_crafted_planner);
  g_test_add_data_func ("/sim/queue/crafted/planner/single", GINT_TO_POINTER (FALSE),
                        test_crafted_planner);
  for (guint i = 0; i < G_N_ELEMENTS (controls); i++)
    {
      g_autofree char *p1 = g_strdup_printf ("/sim/queue/crafted/%s-moved/batch", controls[i].rule);
      g_autofree char *p2 = g_strdup_printf ("/sim/queue/crafted/%s-moved/single", controls[i].rule);

      g_test_add_data_func (p1, &controls[i], test_control_batch);
      g_test_add_data_func (p2, &controls[i], test_control_single);
    }
  return g_test_run ();
}
