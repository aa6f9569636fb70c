/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-vgicd-host.c - what vgicd keeps of all its VMs: the host's batch
 * status and round-2 guess (no one peer's), many VMs saving at once, and
 * the history, histograms and metrics of operations whose QEMU is gone.
 */
#include <math.h>
#include <unistd.h>

#include "vgicd-test.h"

/* Row 12, its other half: the host's KernelBatch is never a peer's claim.
 * This vgicd has no probe (Probe=false): VMs whose executors claim the
 * batch group, and one that claims none, attach; the host's status stays
 * "unknown", and its source counts the claims as theirs.  (The old code
 * made the last peer's claim the host's: "yes", then "no".) */
static void
test_kernel_batch_is_not_a_peers (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[0];
  g_autoptr (VgicSim) a = make_sim (s, TRUE);
  g_autoptr (VgicSim) b = make_sim (s, FALSE);
  g_autoptr (VgicdClient) ca = NULL, cb = NULL;
  g_autofree char *batch = NULL, *source = NULL, *batch2 = NULL, *source2 = NULL;

  ca = attach_uuid (h, a, s, "claims-yes", "0f3c1a2e-0000-4000-8000-0000000000b1");
  batch = vgicd_harness_property (h, "KernelBatch");
  source = vgicd_harness_property (h, "KernelBatchSource");
  g_assert_cmpstr (batch, ==, "unknown");
  g_assert_nonnull (strstr (source, "no probe (Probe=false)"));
  g_assert_nonnull (strstr (source, "1 attached VM(s) claim: 1 with the batch group, 0 without"));
  cb = attach_uuid (h, b, s, "claims-no", "0f3c1a2e-0000-4000-8000-0000000000b2");
  batch2 = vgicd_harness_property (h, "KernelBatch");
  source2 = vgicd_harness_property (h, "KernelBatchSource");
  g_assert_cmpstr (batch2, ==, "unknown");
  g_assert_nonnull (strstr (source2, "2 attached VM(s) claim: 1 with the batch group, 1 without"));
  /* Each VM still runs by its own executor's finding. */
  {
    g_autoptr (GBytes) rec = NULL;
    g_autoptr (GError) error = NULL;
    VgicdClientStats st;

    g_assert_true (vgicd_client_save (cb, &rec, &error));
    g_assert_no_error (error);
    vgicd_client_get_stats (cb, &st);
    g_assert_false (st.batched);
  }
}

/* Row 12: the first save of a VM new to the host guesses round 2 from what
 * most attached VMs have, not from whichever peer saved last.  Three VMs
 * with an ITS and 5 priority bits, then one peer whose VM claims neither
 * (no LPIs, 7 priority bits: its values are its own to report): a newcomer
 * of the common shape still saves in one round.  With the old rule (the
 * last save's shape) the newcomer read round 2 again. */
static void
test_save_guess_is_the_hosts (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape common = { 4, 128, TRUE, 5 }, odd = { 4, 128, FALSE, 7 };
  VgicSim *sims[5];
  VgicdClient *clients[5];
  guint64 rounds;

  for (guint i = 0; i < G_N_ELEMENTS (sims); i++)
    {
      const Shape *sh = i == 3 ? &odd : &common;
      g_autofree char *name = g_strdup_printf ("vm%u", i);
      g_autoptr (GBytes) record = NULL;
      g_autoptr (GError) error = NULL;

      sims[i] = make_sim (sh, TRUE);
      clients[i] = attach (h, sims[i], sh, name);
      rounds = vgicd_harness_stat (h, "second-rounds");
      g_assert_true (vgicd_client_save (clients[i], &record, &error));
      g_assert_no_error (error);
      g_test_message ("vm%u (%s): second rounds %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT,
                      i, i == 3 ? "odd" : "common", rounds,
                      vgicd_harness_stat (h, "second-rounds"));
      /* Only the odd VM's own first save misses. */
      g_assert_cmpuint (vgicd_harness_stat (h, "second-rounds"), ==, rounds + (i == 3));
    }
  for (guint i = 0; i < G_N_ELEMENTS (sims); i++)
    {
      vgicd_client_free (clients[i]);
      vgic_sim_free (sims[i]);
    }
}

/* 32 QEMUs save at once, each its own VM: all correct. */
typedef struct {
  VgicdHarness *h;
  guint index;
  gboolean ok;
} Worker;

static gpointer
worker (gpointer data)
{
  Worker *w = data;
  const Shape s = { 8, 256, TRUE, 6 };
  g_autoptr (VgicSim) src = make_sim (&s, TRUE);
  g_autoptr (VgicSim) dst = make_sim (&s, TRUE);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL;
  g_autoptr (GBytes) record = NULL, want = NULL, got = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *name = g_strdup_printf ("vm%02u", w->index);

  vgic_sim_randomize (src, 1000 + w->index);
  cs = attach (w->h, src, &s, name);
  cd = attach (w->h, dst, &s, name);
  for (int round = 0; round < 3; round++)
    {
      g_clear_pointer (&record, g_bytes_unref);
      if (!vgicd_client_save (cs, &record, &error) ||
          !vgicd_client_load (cd, g_bytes_get_data (record, NULL), g_bytes_get_size (record),
                              &error))
        {
          g_printerr ("%s: %s\n", name, error->message);
          return NULL;
        }
    }
  want = visible_state (src, &s);
  got = visible_state (dst, &s);
  w->ok = g_bytes_equal (want, got) && g_bytes_equal (want, record);
  return NULL;
}

static void
test_concurrent_sessions (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  Worker workers[32];
  GThread *threads[32];

  for (guint i = 0; i < 32; i++)
    {
      workers[i] = (Worker) { .h = h, .index = i };
      threads[i] = g_thread_new ("qemu", worker, &workers[i]);
    }
  for (guint i = 0; i < 32; i++)
    {
      g_thread_join (threads[i]);
      g_assert_true (workers[i].ok);
    }
}

/* The line of @text that starts with @prefix, or NULL. */
static char *
metric_line (const char *text, const char *prefix)
{
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);

  for (guint i = 0; lines[i]; i++)
    if (g_str_has_prefix (lines[i], prefix))
      return g_strdup (lines[i]);
  return NULL;
}

/*
 * What vgicd keeps of operations after their QEMU has gone: the history
 * (bounded per VM and in VMs), the one-by-one figure (measured on the
 * single path, then estimated), the histograms, and the same figures in
 * Prometheus form, by GetMetrics and in the textfile.
 */
static void
test_history (void)
{
  g_autofree char *metrics_dir = g_dir_make_tmp ("vgicd-metrics-XXXXXX", NULL);
  g_autofree char *prom = g_build_filename (metrics_dir, "vgicd.prom", NULL);
  g_autofree char *conf = g_strdup_printf ("Mode=auto\nAllowUsers=root\nHistory=3\n"
                                           "HistoryVMs=2\nMetricsTextfile=%s\n", prom);
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdHarness) h = vgicd_harness_start (vgicd_test_bin, vgicd_test_policy, conf, &error);
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) src = make_sim (s, TRUE);
  g_autoptr (VgicSim) dst = make_sim (s, TRUE);
  g_autoptr (VgicSim) third = make_sim (s, TRUE);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL, ct = NULL;
  g_autoptr (GBytes) record = NULL, again = NULL;
  g_autoptr (GPtrArray) all = NULL, by_name = NULL, newest = NULL, gone = NULL;
  g_autoptr (GVariant) reply = NULL, stats = NULL, hists = NULL;
  g_autofree char *text = NULL, *file = NULL, *line = NULL, *want = NULL;
  const char *src_uuid = "0f3c1a2e-0000-4000-8000-0000000000a1";
  const char *dst_uuid = "0f3c1a2e-0000-4000-8000-0000000000a2";
  guint64 single_ns, batch_regs;
  gboolean found = FALSE;

  g_assert_no_error (error);
  vgic_sim_randomize (src, 7);
  cs = attach_uuid (h, src, s, "hist-src", src_uuid);
  cd = attach_uuid (h, dst, s, "hist-dst", dst_uuid);
  g_assert_true (vgicd_client_save (cs, &record, &error));
  g_assert_no_error (error);
  g_assert_true (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                    g_bytes_get_size (record), &error));
  g_assert_no_error (error);

  /* The source's QEMU goes away, as at the end of a migration: its save
   * is still there. */
  g_clear_pointer (&cs, vgicd_client_free);
  wait_sessions (h, 1);
  all = history (h, "", 0);
  g_assert_cmpuint (all->len, ==, 2);
  g_assert_cmpstr (hstr (all, 0, "vm"), ==, "hist-src");
  g_assert_cmpstr (hstr (all, 0, "uuid"), ==, src_uuid);
  g_assert_cmpstr (hstr (all, 0, "direction"), ==, "save");
  g_assert_cmpstr (hstr (all, 0, "path"), ==, "batch");
  g_assert_cmpstr (hstr (all, 0, "stream"), ==, "record");
  g_assert_cmpstr (hstr (all, 0, "outcome"), ==, "ok");
  g_assert_cmpuint (hnum (all, 0, "bytes"), ==, g_bytes_get_size (record));
  g_assert_cmpuint (hnum (all, 0, "vcpus"), ==, s->vcpus);
  g_assert_cmpuint (hnum (all, 0, "ioctls"), <=, 3);
  /* Save, then one Next with round 1 and the guessed round 2: two round
   * trips, three when the guess missed (a second round); the load's
   * record, then its guarded writes: two. */
  g_assert_cmpuint (hnum (all, 0, "calls"), >=, 2);
  g_assert_cmpuint (hnum (all, 0, "calls"), <=, 3);
  g_assert_cmpuint (hnum (all, 0, "duration-ns"), >=, hnum (all, 0, "kernel-ns"));
  g_assert_cmpuint (hnum (all, 0, "when-usec"), <=, (guint64) g_get_real_time ());
  batch_regs = hnum (all, 0, "registers");
  g_assert_cmpuint (batch_regs, >, 0);
  /* Nothing was run one by one on this host yet: no estimate. */
  g_assert_cmpuint (hnum (all, 0, "single-ns"), ==, 0);
  g_assert_cmpstr (hstr (all, 1, "vm"), ==, "hist-dst");
  g_assert_cmpstr (hstr (all, 1, "direction"), ==, "load");
  g_assert_cmpuint (hnum (all, 1, "bytes"), ==, g_bytes_get_size (record));
  g_assert_cmpuint (hnum (all, 1, "calls"), ==, 2);

  /* One save one by one measures the host's cost; the next batched save
   * is given an estimate from it, marked as one. */
  g_assert_true (vgicd_harness_set_mode (h, "single", &error));
  g_assert_true (vgicd_client_save (cd, &again, &error));
  g_assert_no_error (error);
  g_clear_pointer (&again, g_bytes_unref);
  g_assert_true (vgicd_harness_set_mode (h, "auto", &error));
  g_assert_true (vgicd_client_save (cd, &again, &error));
  g_assert_no_error (error);
  by_name = history (h, "hist-dst", 0);
  g_assert_cmpuint (by_name->len, ==, 3);	/* History=3: load, single, batch */
  g_assert_cmpstr (hstr (by_name, 1, "path"), ==, "single");
  single_ns = hnum (by_name, 1, "single-ns");
  g_assert_cmpuint (single_ns, ==, hnum (by_name, 1, "kernel-ns"));
  g_assert_false (hnum (by_name, 1, "single-estimated"));
  g_assert_cmpstr (hstr (by_name, 2, "path"), ==, "batch");
  g_assert_true (hnum (by_name, 2, "single-estimated"));
  /* Same VM, same registers: the estimate is the measured cost (but for
   * the rounding of a cost per ioctl and vCPU). */
  g_assert_cmpfloat (fabs ((double) hnum (by_name, 2, "single-ns") - (double) single_ns), <=,
                     single_ns / 1000.0 + 1);

  /* A refused load is kept with its reason; the oldest of this VM's
   * operations makes room for it. */
  {
    guint8 junk[64] = { 'V', 'G', 'I', 'C' };

    g_assert_false (vgicd_client_load (cd, junk, sizeof junk, &error));
    g_clear_error (&error);
  }
  newest = history (h, dst_uuid, 1);
  g_assert_cmpuint (newest->len, ==, 1);
  g_assert_cmpstr (hstr (newest, 0, "outcome"), ==, "refused");
  g_assert_nonnull (strstr (hstr (newest, 0, "message"), "record refused, nothing written"));
  g_ptr_array_unref (by_name);
  by_name = history (h, dst_uuid, 0);
  g_assert_cmpuint (by_name->len, ==, 3);
  g_assert_cmpstr (hstr (by_name, 0, "path"), ==, "single");

  /* HistoryVMs=2: a third VM's operation drops the VM active longest ago
   * (the source, gone since). */
  ct = attach_uuid (h, third, s, "hist-third", "0f3c1a2e-0000-4000-8000-0000000000a3");
  g_clear_pointer (&again, g_bytes_unref);
  g_assert_true (vgicd_client_save (ct, &again, &error));
  g_assert_no_error (error);
  gone = history (h, src_uuid, 0);
  g_assert_cmpuint (gone->len, ==, 0);

  /* The histograms count the successful operations by direction and
   * path: 3 batched saves (src, dst, third), 1 single save, 1 load. */
  reply = vgicd_harness_manager_call (h, "GetStats", NULL, "(a{sv})");
  g_variant_get (reply, "(@a{sv})", &stats);
  hists = g_variant_lookup_value (stats, "histograms", G_VARIANT_TYPE ("aa{sv}"));
  g_assert_nonnull (hists);
  for (gsize i = 0; i < g_variant_n_children (hists); i++)
    {
      g_autoptr (GVariant) e = g_variant_get_child_value (hists, i);
      g_autoptr (GVariantDict) d = g_variant_dict_new (e);
      g_autoptr (GVariant) b = g_variant_dict_lookup_value (d, "buckets", G_VARIANT_TYPE ("at"));
      const char *dir = NULL, *path = NULL;
      guint64 count = 0;
      gsize n;
      const guint64 *cum = g_variant_get_fixed_array (b, &n, sizeof (guint64));

      g_variant_dict_lookup (d, "direction", "&s", &dir);
      g_variant_dict_lookup (d, "path", "&s", &path);
      g_variant_dict_lookup (d, "count", "t", &count);
      g_assert_cmpuint (cum[n - 1], ==, count);
      for (gsize k = 1; k < n; k++)
        g_assert_cmpuint (cum[k - 1], <=, cum[k]);
      if (g_str_equal (dir, "save") && g_str_equal (path, "batch"))
        {
          g_assert_cmpuint (count, ==, 3);
          found = TRUE;
        }
      else if (g_str_equal (dir, "save"))
        g_assert_cmpuint (count, ==, 1);
      else
        g_assert_cmpuint (count, ==, 1);
    }
  g_assert_true (found);

  /* The Prometheus text, by GetMetrics and in the textfile (written
   * within a second of the change, replaced whole). */
  g_clear_pointer (&reply, g_variant_unref);
  reply = vgicd_harness_manager_call (h, "GetMetrics", NULL, "(s)");
  g_variant_get (reply, "(s)", &text);
  g_assert_nonnull (strstr (text, "# TYPE vgicd_operation_duration_seconds histogram\n"));
  g_assert_nonnull (strstr (text, "vgicd_operation_duration_seconds_bucket{direction=\"save\","
                                  "path=\"batch\",le=\"+Inf\"} 3\n"));
  g_assert_nonnull (strstr (text, "vgicd_operation_duration_seconds_count{direction=\"save\","
                                  "path=\"single\"} 1\n"));
  g_assert_nonnull (strstr (text, "\nvgicd_saves_total 4\n"));
  g_assert_nonnull (strstr (text, "\nvgicd_failures_total 1\n"));
  g_assert_nonnull (strstr (text, "vgicd_info{version=\"" PACKAGE_VERSION "\",mode=\"auto\""));
  want = metric_line (text, "vgicd_saves_total ");
  for (int i = 0; i < VGICD_TEST_PATIENCE_MS / 10; i++)
    {
      g_clear_pointer (&file, g_free);
      g_clear_pointer (&line, g_free);
      if (g_file_get_contents (prom, &file, NULL, NULL) &&
          (line = metric_line (file, "vgicd_saves_total ")) && g_str_equal (line, want))
        break;
      g_usleep (10 * 1000);
    }
  g_assert_cmpstr (line, ==, want);
  g_assert_true (g_str_has_prefix (file, "# HELP vgicd_info "));
  g_assert_true (g_str_has_suffix (file, "\n"));
  {
    /* Nothing but the file itself is left in its folder. */
    g_autoptr (GDir) dir = g_dir_open (metrics_dir, 0, NULL);
    const char *name;
    guint n = 0;

    while ((name = g_dir_read_name (dir)))
      {
        g_assert_cmpstr (name, ==, "vgicd.prom");
        n++;
      }
    g_assert_cmpuint (n, ==, 1);
  }
  unlink (prom);
  rmdir (metrics_dir);
}

int
main (int argc, char **argv)
{
  vgicd_test_init (&argc, &argv);
  g_test_add_func ("/vgicd/save-guess-is-the-hosts", test_save_guess_is_the_hosts);
  g_test_add_func ("/vgicd/kernel-batch-is-not-a-peers", test_kernel_batch_is_not_a_peers);
  g_test_add_func ("/vgicd/concurrent-sessions", test_concurrent_sessions);
  g_test_add_func ("/vgicd/history", test_history);
  return g_test_run ();
}
