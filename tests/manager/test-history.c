/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-history.c - what vgicd keeps of operations (daemon/vgicd-history.c):
 * the per-VM rings and their bounds, whose they are (UUID and process),
 * and the one-by-one estimate from the start-up calibration and from a
 * measured one-by-one operation, within bounds whatever a peer reports.
 */
#include <math.h>

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

/* A peer's figures: its kernel time is taken only as far as vgicd's
 * clock saw the operation last, and the cost per register stays within a
 * factor of 8 of the calibrated line; uncalibrated, under 1 ms + 100 µs ×
 * vCPUs.  No input makes a conversion undefined (the sanitizer build
 * checks): 2^64-1 ns, a line of 1e300, NaN. */
static void
test_forged (void)
{
  g_autoptr (VgicdHistory) h = vgicd_history_new (4, 4);
  g_autoptr (VgicdHistory) u = vgicd_history_new (4, 4);
  g_autoptr (VgicdHistory) wild = vgicd_history_new (4, 4);
  g_autoptr (VgicdHistory) nan = vgicd_history_new (4, 4);
  VgicdOp single = op ("save", "single", 100, 4, G_MAXUINT64);
  VgicdOp batch = op ("save", "batch", 100, 4, 1000);
  double base, per;
  const char *source;

  /* vgicd saw it take 1 ms: that is what it measured. */
  single.duration_ns = 1000000;
  vgicd_history_calibrated (h, 1000, 100);
  vgicd_history_estimate (h, &single);
  g_assert_cmpuint (single.single_ns, ==, 1000000);
  g_assert_true (vgicd_history_single_cost (h, "save", &base, &per, &source));
  g_assert_cmpfloat (base + per * 4, <=, 8 * (1000 + 100 * 4) + 1e-6);
  vgicd_history_estimate (h, &batch);
  g_assert_cmpuint (batch.single_ns, <=, 100 * 8 * (1000 + 100 * 4));

  single = op ("save", "single", 100, 4, G_MAXUINT64);
  single.duration_ns = G_MAXUINT64;
  vgicd_history_estimate (u, &single);
  batch = op ("save", "batch", 100, 4, 1000);
  vgicd_history_estimate (u, &batch);
  g_assert_cmpuint (batch.single_ns, <=, 100 * (1000000 + 100000 * 4));

  vgicd_history_calibrated (wild, 1e300, 1e300);
  batch = op ("save", "batch", 100, 4, 1000);
  vgicd_history_estimate (wild, &batch);
  g_assert_cmpuint (batch.single_ns, ==, (guint64) 1e18);
  vgicd_history_calibrated (nan, NAN, NAN);
  batch = op ("save", "batch", 100, 4, 1000);
  vgicd_history_estimate (nan, &batch);
  g_assert_cmpuint (batch.single_ns, ==, 0);
}

/* The "vm" (newly allocated) and "pid" of the newest entry @vm names. */
static void
newest (VgicdHistory *h, const char *vm, char **name, gint64 *pid)
{
  g_autoptr (GVariant) v = vgicd_history_describe (h, vm, 1);
  g_autoptr (GVariant) e = g_variant_get_child_value (v, 0);

  g_assert_true (g_variant_lookup (e, "vm", "s", name));
  g_assert_true (g_variant_lookup (e, "pid", "x", pid));
}

/* A UUID's operations are kept per process: another process claiming it
 * adds to a history of its own, renaming nothing; an entry keeps the name
 * it ran under, even when its own process attaches again under another. */
static void
test_owners (void)
{
  g_autoptr (VgicdHistory) h = vgicd_history_new (4, 8);
  VgicdOp o = op ("save", "batch", 10, 4, 1000);
  g_autofree char *name = NULL, *other = NULL;
  gint64 pid;

  o.when_usec = 1;
  vgicd_history_add_of (h, "uuid-a", "a", 10, &o, NULL);
  o.when_usec = 2;
  vgicd_history_add_of (h, "uuid-a", "forged", 20, &o, NULL);
  g_assert_cmpuint (count (h, "a"), ==, 1);
  g_assert_cmpuint (count (h, "forged"), ==, 1);
  g_assert_cmpuint (count (h, "uuid-a"), ==, 2);
  newest (h, "a", &name, &pid);
  g_assert_cmpstr (name, ==, "a");
  g_assert_cmpint (pid, ==, 10);
  newest (h, "forged", &other, &pid);
  g_assert_cmpint (pid, ==, 20);
  o.when_usec = 3;
  vgicd_history_add_of (h, "uuid-a", "renamed", 10, &o, NULL);
  g_assert_cmpuint (count (h, "a"), ==, 1);
  g_assert_cmpuint (count (h, "renamed"), ==, 1);
  g_assert_cmpuint (count (h, "uuid-a"), ==, 3);
}

/* HistoryVMsPerProcess=: a process past its share drops its own least
 * recently active VM, never another process's; a lower bound at reload
 * drops what is over it at once. */
static void
test_per_process (void)
{
  g_autoptr (VgicdHistory) h = vgicd_history_new (3, 8);
  VgicdOp o = op ("save", "batch", 10, 4, 1000);

  vgicd_history_set_vms_per_process (h, 2);
  o.when_usec = 1;
  vgicd_history_add_of (h, "uuid-honest", "honest", 1, &o, NULL);
  for (guint i = 0; i < 20; i++)
    {
      g_autofree char *uuid = g_strdup_printf ("uuid-flood-%u", i);

      o.when_usec = 10 + i;
      vgicd_history_add_of (h, uuid, "flood", 2, &o, NULL);
    }
  g_assert_cmpuint (count (h, "honest"), ==, 1);
  g_assert_cmpuint (count (h, "flood"), ==, 2);
  g_assert_cmpuint (count (h, "uuid-flood-19"), ==, 1);
  g_assert_cmpuint (count (h, "uuid-flood-18"), ==, 1);
  vgicd_history_set_vms_per_process (h, 1);
  g_assert_cmpuint (count (h, "flood"), ==, 1);
  g_assert_cmpuint (count (h, "uuid-flood-19"), ==, 1);
  g_assert_cmpuint (count (h, "honest"), ==, 1);
  /* HistoryVMs= still bounds them all, the least recently active first. */
  vgicd_history_resize (h, 3, 1);
  g_assert_cmpuint (count (h, ""), ==, 1);
  g_assert_cmpuint (count (h, "flood"), ==, 1);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/history/estimate/unknown", test_unknown);
  g_test_add_func ("/history/estimate/calibrated", test_calibrated);
  g_test_add_func ("/history/estimate/pinned-by-an-operation", test_pinned_by_an_operation);
  g_test_add_func ("/history/bounds", test_bounds);
  g_test_add_func ("/history/estimate/forged", test_forged);
  g_test_add_func ("/history/owners", test_owners);
  g_test_add_func ("/history/per-process", test_per_process);
  return g_test_run ();
}
