/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-history.c - what vgicd keeps of operations (daemon/vgicd-history.c):
 * the per-VM rings and their bounds, and the one-by-one estimate from the
 * start-up calibration and from a measured one-by-one operation.
 */
#include "vgicd-history.h"

static VgicdOp
op (const char *direction, const char *path, guint registers, guint vcpus, guint64 kernel_ns)
{
  return (VgicdOp) { .when_usec = g_get_real_time (), .direction = direction, .path = path,
                     .stream = "record", .outcome = VGICD_OUTCOME_OK,
                     .duration_ns = kernel_ns + 1000, .kernel_ns = kernel_ns,
                     .ioctls = g_str_equal (path, "single") ? registers : 2,
                     .registers = registers, .vcpus = vcpus };
}

/* Nothing measured: no estimate, and no figure is made up. */
static void
test_unknown (void)
{
  g_autoptr (VgicdHistory) h = vgicd_history_new (4, 4);
  VgicdOp o = op ("save", "batch", 7175, 160, 1000000);
  double base, per;
  const char *source;

  vgicd_history_estimate (h, &o);
  g_assert_cmpuint (o.single_ns, ==, 0);
  g_assert_false (o.single_estimated);
  g_assert_false (vgicd_history_single_cost (h, "save", &base, &per, &source));
}

/* The calibration's line: registers × (base + vCPUs × per vCPU), for
 * both directions; a failed operation gets none. */
static void
test_calibrated (void)
{
  g_autoptr (VgicdHistory) h = vgicd_history_new (4, 4);
  VgicdOp save = op ("save", "batch", 7175, 160, 1000000);
  VgicdOp load = op ("load", "batch", 7745, 160, 2000000);
  VgicdOp failed = op ("save", "batch", 7175, 160, 1000000);
  double base, per;
  const char *source;

  vgicd_history_calibrated (h, 1000, 100);
  vgicd_history_estimate (h, &save);
  g_assert_cmpuint (save.single_ns, ==, 7175 * (1000 + 160 * 100));
  g_assert_true (save.single_estimated);
  vgicd_history_estimate (h, &load);
  g_assert_cmpuint (load.single_ns, ==, 7745 * (1000 + 160 * 100));
  failed.outcome = VGICD_OUTCOME_FAILED;
  vgicd_history_estimate (h, &failed);
  g_assert_cmpuint (failed.single_ns, ==, 0);
  g_assert_true (vgicd_history_single_cost (h, "load", &base, &per, &source));
  g_assert_cmpfloat (base, ==, 1000);
  g_assert_cmpfloat (per, ==, 100);
  g_assert_cmpstr (source, ==, "calibration");
}

/* A one-by-one save is its own measured figure, and pins its direction's
 * line through what it measured, keeping the calibrated slope; the other
 * direction keeps the calibration.  Without a calibration, the cost is
 * taken as proportional to the vCPUs. */
static void
test_pinned_by_an_operation (void)
{
  g_autoptr (VgicdHistory) h = vgicd_history_new (4, 4);
  g_autoptr (VgicdHistory) u = vgicd_history_new (4, 4);
  /* 7175 reads at 160 vCPUs, 30,000 ns each */
  VgicdOp single = op ("save", "single", 7175, 160, 7175ull * 30000);
  VgicdOp batch = op ("save", "batch", 4295, 64, 800000);
  VgicdOp load = op ("load", "batch", 100, 64, 800000);
  double base, per;
  const char *source;

  vgicd_history_calibrated (h, 1000, 100);
  vgicd_history_estimate (h, &single);
  g_assert_cmpuint (single.single_ns, ==, 7175ull * 30000);
  g_assert_false (single.single_estimated);
  g_assert_true (vgicd_history_single_cost (h, "save", &base, &per, &source));
  g_assert_cmpfloat (per, ==, 100);
  g_assert_cmpfloat (base, ==, 30000 - 160 * 100);
  g_assert_cmpstr (source, ==, "operation");
  vgicd_history_estimate (h, &batch);
  g_assert_cmpuint (batch.single_ns, ==, 4295ull * (14000 + 64 * 100));
  vgicd_history_estimate (h, &load);
  g_assert_cmpuint (load.single_ns, ==, 100ull * (1000 + 64 * 100));

  single = op ("save", "single", 7175, 160, 7175ull * 32000);
  batch = op ("save", "batch", 4295, 64, 800000);
  vgicd_history_estimate (u, &single);
  vgicd_history_estimate (u, &batch);
  g_assert_cmpuint (batch.single_ns, ==, 4295ull * 200 * 64);
  g_assert_true (vgicd_history_single_cost (u, "save", &base, &per, &source));
  g_assert_cmpfloat (base, ==, 0);
}

static guint
count (VgicdHistory *h, const char *vm)
{
  g_autoptr (GVariant) v = vgicd_history_describe (h, vm, 0);

  return g_variant_n_children (v);
}

/* History= per VM, HistoryVMs= VMs (the least recently active goes), a
 * reload that shrinks both keeps the newest; a failure's message is cut
 * to 256 bytes. */
static void
test_bounds (void)
{
  g_autoptr (VgicdHistory) h = vgicd_history_new (3, 2);
  g_autofree char *long_message = g_strnfill (10000, 'x');
  g_autoptr (GVariant) newest = NULL, entry = NULL;
  VgicdOp o = op ("save", "batch", 10, 4, 1000);
  const char *message = NULL;

  for (guint i = 0; i < 5; i++)
    {
      o.when_usec = i + 1;
      vgicd_history_add (h, "uuid-a", "a", &o, NULL);
    }
  g_assert_cmpuint (count (h, "a"), ==, 3);
  o.when_usec = 10;
  vgicd_history_add (h, "uuid-b", "b", &o, NULL);
  o.when_usec = 11;
  vgicd_history_add (h, "uuid-a", "a", &o, NULL);	/* a is the most recent again */
  o.when_usec = 12;
  o.outcome = VGICD_OUTCOME_FAILED;
  vgicd_history_add (h, "uuid-c", "c", &o, long_message);	/* b goes */
  g_assert_cmpuint (count (h, "b"), ==, 0);
  g_assert_cmpuint (count (h, "uuid-a"), ==, 3);
  g_assert_cmpuint (count (h, ""), ==, 4);
  newest = vgicd_history_describe (h, "", 1);
  entry = g_variant_get_child_value (newest, 0);
  g_assert_true (g_variant_lookup (entry, "message", "&s", &message));
  g_assert_cmpuint (strlen (message), ==, 256);
  vgicd_history_resize (h, 1, 1);
  g_assert_cmpuint (count (h, ""), ==, 1);
  g_assert_cmpuint (count (h, "c"), ==, 1);
  vgicd_history_resize (h, 0, 1);
  o.outcome = VGICD_OUTCOME_OK;
  vgicd_history_add (h, "uuid-d", "d", &o, NULL);
  g_assert_cmpuint (count (h, "d"), ==, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/history/estimate/unknown", test_unknown);
  g_test_add_func ("/history/estimate/calibrated", test_calibrated);
  g_test_add_func ("/history/estimate/pinned-by-an-operation", test_pinned_by_an_operation);
  g_test_add_func ("/history/bounds", test_bounds);
  return g_test_run ();
}
