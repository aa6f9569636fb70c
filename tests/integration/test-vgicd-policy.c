/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-vgicd-policy.c - the host's mode and each VM's own: mode off,
 * a domain's choice and the host's per-VM policy, reloaded; Record=.
 */
#include <signal.h>
#include <unistd.h>

#include "vgicd-test.h"

/* Mode off: saves are declined (QEMU keeps its own path); loads still serve. */
static void
test_mode_off (void)
{
  g_autoptr (VgicdHarness) on = harness ("auto");
  g_autoptr (VgicdHarness) off = harness ("off");
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) src = make_sim (s, TRUE);
  g_autoptr (VgicSim) dst = make_sim (s, TRUE);
  g_autoptr (VgicdClient) c_on = NULL, c_off = NULL, c_dst = NULL;
  g_autoptr (GBytes) record = NULL, none = NULL;
  g_autoptr (GError) error = NULL;

  vgic_sim_randomize (src, 5);
  c_on = attach (on, src, s, "src");
  c_off = attach (off, src, s, "src");
  g_assert_false (vgicd_client_save (c_off, &none, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DECLINED);
  g_assert_null (none);
  g_clear_error (&error);

  g_assert_true (vgicd_client_save (c_on, &record, &error));
  c_dst = attach (off, dst, s, "dst");
  g_assert_true (vgicd_client_load (c_dst, g_bytes_get_data (record, NULL),
                                    g_bytes_get_size (record), &error));
  g_assert_no_error (error);
}

/* Per-VM policy: a domain's own choice (the hook's file, by UUID) and the
 * host's static policy (by UUID or name), each applied to its VM only,
 * the stricter of them and the host's mode winning; read again on reload. */
static void
test_per_vm_policy (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[0];
  g_autoptr (VgicSim) sim = make_sim (s, TRUE);
  g_autoptr (VgicdClient) off = NULL, plain = NULL, single = NULL, later = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *choice = g_build_filename (h->vms_dir,
                                              "11111111-0000-4000-8000-000000000001.conf", NULL);
  g_autofree char *log = NULL;
  VgicdClientStats stats;

  g_assert_true (g_file_set_contents (choice, "[vm]\nName=off-vm\nChoice=off\n", -1, &error));
  g_assert_true (g_file_set_contents (h->vms_conf, "[name single-vm]\nMode=single\n"
                                      "[uuid 33333333-0000-4000-8000-000000000003]\nMode=off\n",
                                      -1, &error));
  off = attach_uuid (h, sim, s, "off-vm", "11111111-0000-4000-8000-000000000001");
  plain = attach_uuid (h, sim, s, "plain-vm", "22222222-0000-4000-8000-000000000002");
  single = attach_uuid (h, sim, s, "single-vm", "44444444-0000-4000-8000-000000000004");
  g_assert_cmpstr (vgicd_client_get_mode (off), ==, "off");
  g_assert_cmpstr (vgicd_client_get_mode (plain), ==, "auto");
  g_assert_cmpstr (vgicd_client_get_mode (single), ==, "single");

  g_assert_false (vgicd_client_save (off, &record, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DECLINED);
  g_clear_error (&error);
  g_assert_true (vgicd_client_save (plain, &record, &error));
  vgicd_client_get_stats (plain, &stats);
  g_assert_true (stats.batched);
  g_clear_pointer (&record, g_bytes_unref);
  g_assert_true (vgicd_client_save (single, &record, &error));
  vgicd_client_get_stats (single, &stats);
  g_assert_false (stats.batched);
  g_clear_pointer (&record, g_bytes_unref);

  /* The domain changes its mind; a reload applies it to the attached VM. */
  g_assert_cmpint (unlink (choice), ==, 0);
  kill (h->vgicd_pid, SIGHUP);
  for (int i = 0; i < VGICD_TEST_PATIENCE_MS / 20; i++)
    {
      g_clear_error (&error);
      g_clear_pointer (&record, g_bytes_unref);
      if (vgicd_client_save (off, &record, &error))
        break;
      g_usleep (20000);
    }
  g_assert_no_error (error);

  /* By UUID in the static policy. */
  later = attach_uuid (h, sim, s, "any-name", "33333333-0000-4000-8000-000000000003");
  g_assert_cmpstr (vgicd_client_get_mode (later), ==, "off");

  log = vgicd_harness_read_log (h);
  g_assert_nonnull (strstr (log, "save declined: mode is off (domain metadata)"));
}

/* Record=true (the host's, or a VM's in vms.conf) is what the attach says. */
static void
test_record_setting (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdHarness) h = vgicd_harness_start (vgicd_test_bin, vgicd_test_policy,
                                                    "AllowUsers=root\nRecord=false\n", &error);
  const Shape *s = &shapes[0];
  g_autoptr (VgicSim) a = make_sim (s, TRUE);
  g_autoptr (VgicSim) b = make_sim (s, TRUE);
  g_autoptr (VgicdClient) ca = NULL, cb = NULL;

  g_assert_no_error (error);
  g_assert_true (g_file_set_contents (h->vms_conf, "[name db-rec]\nRecord=true\n", -1, NULL));
  ca = attach (h, a, s, "plain");
  cb = attach (h, b, s, "db-rec");
  g_assert_false (vgicd_client_wants_record (ca));
  g_assert_true (vgicd_client_wants_record (cb));
}

int
main (int argc, char **argv)
{
  vgicd_test_init (&argc, &argv);
  g_test_add_func ("/vgicd/mode-off-declines-save-serves-load", test_mode_off);
  g_test_add_func ("/vgicd/record-setting", test_record_setting);
  g_test_add_func ("/vgicd/per-vm-policy", test_per_vm_policy);
  return g_test_run ();
}
