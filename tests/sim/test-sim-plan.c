/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-sim-plan.c - the end-to-end property the project rests on, on the
 * sim: the planner's save executed as batches reads exactly what it reads
 * one access at a time (u32 for DIST/REDIST/LEVEL_INFO, u64 for
 * CPU_SYSREGS), and a restore written into a fresh sim reproduces
 * everything a save can see.
 */
#include "sim-util.h"
#include "sim-vm.h"
#include "vgic-plan.h"
#include "vgic-validate.h"

typedef struct {
  guint32 vcpus, irqs;
  gboolean its;
  guint pri_bits;
} Shape;

static const Shape shapes[] = {
  { 1, 64, FALSE, 5 },
  { 4, 128, TRUE, 7 },
  { 7, 288, TRUE, 6 },
  { 16, 96, FALSE, 7 },
};

static void
test_batch_equals_single (gconstpointer data)
{
  const Shape *s = data;
  g_autoptr (VgicSim) sim = sim_new (s->vcpus, s->irqs, s->its, s->pri_bits);
  g_autoptr (VgicShape) shape = sim_vm_shape (sim, s->vcpus, s->irqs);
  g_autoptr (VgicList) one = NULL, many = NULL;
  VgicSimCounters c;

  vgic_sim_randomize (sim, s->vcpus * 1000 + s->irqs);
  vgic_sim_counters_reset (sim);
  one = sim_plan_save (sim, shape, FALSE, FALSE);
  vgic_sim_counters_get (sim, &c);
  g_assert_cmpuint (c.lock_rounds, ==, one->len);
  g_assert_cmpuint (c.vcpu_locks, ==, (guint64) one->len * s->vcpus);

  vgic_sim_counters_reset (sim);
  many = sim_plan_save (sim, shape, TRUE, FALSE);
  vgic_sim_counters_get (sim, &c);
  g_assert_cmpuint (c.lock_rounds, ==, c.batch_calls);
  g_assert_cmpuint (c.batch_calls, <=, 2 + many->len / VGICD_BATCH_CHUNK);
  sim_assert_same_values (one, many);
}

static void
restore_and_compare (const Shape *s, gboolean batch)
{
  g_autoptr (VgicSim) src = sim_new (s->vcpus, s->irqs, s->its, s->pri_bits);
  g_autoptr (VgicSim) dst = sim_new (s->vcpus, s->irqs, s->its, s->pri_bits);
  g_autoptr (VgicShape) shape = sim_vm_shape (src, s->vcpus, s->irqs);
  g_autoptr (VgicList) saved = NULL, check = NULL, writes = NULL, resaved = NULL;
  g_autoptr (VgicValues) state = NULL, check_values = NULL;
  g_autoptr (GError) error = NULL;
  int fd = vgic_sim_get_fd (dst);

  vgic_sim_randomize (src, 7 + s->irqs);
  saved = sim_plan_save (src, shape, TRUE, FALSE);
  state = vgic_values_from_reads (saved->entries, saved->len, &error);
  g_assert_no_error (error);

  {
    /* The reads vgicd's restore makes before it writes (the guards'). */
    g_autoptr (VgicList) guards = vgic_validate_guards (shape, state);

    check = vgic_list_new_from (guards->entries, guards->len);
  }
  g_assert_cmpint (sim_run_batch (fd, FALSE, check), ==, 0);
  check_values = vgic_values_new (check->entries, check->len, &error);
  g_assert_no_error (error);
  g_assert_true (vgic_validate_destination (shape, state, check_values, &error));
  writes = vgic_plan_restore_write (shape, state, FALSE, &error);
  g_assert_no_error (error);
  g_assert_cmpint (batch ? sim_run_batch (fd, TRUE, writes) : sim_run_single (fd, TRUE, writes),
                   ==, 0);

  resaved = sim_plan_save (dst, shape, TRUE, FALSE);
  sim_assert_same_values (saved, resaved);
}

static void
test_restore_batch (gconstpointer data)
{
  restore_and_compare (data, TRUE);
}

static void
test_restore_single (gconstpointer data)
{
  restore_and_compare (data, FALSE);
}

int
main (int argc, char **argv)
{
  sim_test_init (&argc, &argv);

  for (guint i = 0; i < G_N_ELEMENTS (shapes); i++)
    {
      const Shape *s = &shapes[i];
      g_autofree char *tag = g_strdup_printf ("%uvcpu-%uirq-%s-pri%u", s->vcpus, s->irqs,
                                              s->its ? "its" : "noits", s->pri_bits);
      g_autofree char *p1 = g_strdup_printf ("/sim/plan/save-batch-equals-single/%s", tag);
      g_autofree char *p2 = g_strdup_printf ("/sim/plan/restore-batch-reproduces-save/%s", tag);
      g_autofree char *p3 = g_strdup_printf ("/sim/plan/restore-single-reproduces-save/%s", tag);

      g_test_add_data_func (p1, s, test_batch_equals_single);
      g_test_add_data_func (p2, s, test_restore_batch);
      g_test_add_data_func (p3, s, test_restore_single);
    }
  return g_test_run ();
}
