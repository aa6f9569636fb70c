/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-config.c - vgicd's configuration file (load, defaults, errors a
 * person can act on, the key table's ranges, saving the mode without
 * losing the rest), the mode names and the start-up probe's answers where
 * no vGIC can exist.
 */
#include <sys/stat.h>

#include "vgicd-config.h"
#include "vgicd-probe.h"

static char *tmpdir;

static char *
write_config (const char *name, const char *text)
{
  char *path = g_build_filename (tmpdir, name, NULL);
  g_autoptr (GError) error = NULL;

  g_file_set_contents (path, text, -1, &error);
  g_assert_no_error (error);
  return path;
}

static void
test_mode_names (void)
{
  g_autoptr (GError) error = NULL;
  VgicdMode mode;

  for (VgicdMode m = VGICD_MODE_AUTO; m <= VGICD_MODE_OFF; m++)
    {
      g_assert_true (vgicd_mode_from_string (vgicd_mode_to_string (m), &mode, NULL));
      g_assert_cmpint (mode, ==, m);
    }
  g_assert_cmpstr (vgicd_mode_to_string (VGICD_MODE_SINGLE), ==, "single");
  g_assert_false (vgicd_mode_from_string ("Auto", &mode, &error));
  g_assert_nonnull (strstr (error->message, "auto, single, off"));
  g_assert_nonnull (strstr (error->message, "\"Auto\""));
}

static void
test_missing_file_gives_defaults (void)
{
  g_autofree char *path = g_build_filename (tmpdir, "absent.conf", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdConfig) c = vgicd_config_load (path, &error);

  g_assert_no_error (error);
  g_assert_cmpstr (c->path, ==, path);
  g_assert_cmpint (c->mode, ==, VGICD_MODE_AUTO);
  g_assert_cmpstr (c->socket_path, ==, VGICD_DEFAULT_SOCKET);
  g_assert_cmpstr (c->socket_group, ==, "kvm");
  g_assert_false (c->socket_group_set);
  g_assert_cmpuint (g_strv_length (c->allow_users), ==, 2);
  g_assert_cmpstr (c->allow_users[0], ==, "root");
  g_assert_cmpstr (c->allow_users[1], ==, "libvirt-qemu");
  g_assert_true (c->probe);
  g_assert_cmpuint (c->max_vcpus, ==, 512);
  g_assert_cmpuint (c->max_session_memory, ==, 512);
  /* One VM per QEMU: two sessions (one being replaced), two of 512 vCPUs'
   * memory with room, a few history VMs. */
  g_assert_cmpuint (c->max_sessions_per_process, ==, 2);
  g_assert_cmpuint (c->max_session_memory_per_process, ==, 16);
  g_assert_cmpuint (c->history_vms_per_process, ==, 4);
  g_assert_cmpuint (c->max_sessions_per_user, ==, c->max_sessions);
}

static void
test_all_keys (void)
{
  g_autofree char *path = write_config ("all.conf",
    "# comment\n[vgicd]\nMode=off\nSocket=/tmp/x.sock\nSocketGroup= qemu \n"
    "AllowUsers=alice; bob\nProbe=false\nRecord=true\nMaxSessions=10\n"
    "MaxSessionsPerUser= 3\nMaxVcpus=160\nMaxSessionMemory=64\nMaxHandshakes=64\n"
    "MaxHandshakesPerProcess=4\nHandshakeTimeout=700\nHistory=0\nHistoryVMs=9\n"
    "MetricsTextfile= /var/lib/prometheus/node-exporter/vgicd.prom \n");
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdConfig) c = vgicd_config_load (path, &error);

  g_assert_no_error (error);
  g_assert_cmpint (c->mode, ==, VGICD_MODE_OFF);
  g_assert_cmpstr (c->socket_path, ==, "/tmp/x.sock");
  g_assert_cmpstr (c->socket_group, ==, "qemu");
  g_assert_true (c->socket_group_set);
  g_assert_cmpuint (g_strv_length (c->allow_users), ==, 2);
  g_assert_cmpstr (c->allow_users[1], ==, "bob");
  g_assert_false (c->probe);
  g_assert_true (c->record);
  g_assert_cmpuint (c->max_sessions, ==, 10);
  g_assert_cmpuint (c->max_vcpus, ==, 160);
  g_assert_cmpuint (c->max_session_memory, ==, 64);
  g_assert_cmpuint (c->max_handshakes, ==, 64);
  g_assert_cmpuint (c->max_handshakes_per_process, ==, 4);
  g_assert_cmpuint (c->handshake_timeout, ==, 700);
  g_assert_cmpuint (c->max_sessions_per_user, ==, 3);
  g_assert_cmpuint (c->history, ==, 0);
  g_assert_cmpuint (c->history_vms, ==, 9);
  g_assert_cmpstr (c->metrics_textfile, ==, "/var/lib/prometheus/node-exporter/vgicd.prom");
}

/* The history's bounds and the textfile's path are checked like the rest;
 * an empty MetricsTextfile= is none. */
static void
test_history_and_metrics_keys (void)
{
  g_autofree char *p1 = write_config ("hist.conf", "[vgicd]\nHistory=1025\n");
  g_autofree char *p2 = write_config ("histvms.conf", "[vgicd]\nHistoryVMs=0\n");
  g_autofree char *p3 = write_config ("prom-rel.conf", "[vgicd]\nMetricsTextfile=vgicd.prom\n");
  g_autofree char *p4 = write_config ("prom-ext.conf", "[vgicd]\nMetricsTextfile=/tmp/vgicd.txt\n");
  g_autofree char *p5 = write_config ("prom-empty.conf", "[vgicd]\nMetricsTextfile=\n");
  g_autoptr (GError) e1 = NULL, e2 = NULL, e3 = NULL, e4 = NULL, e5 = NULL;
  g_autoptr (VgicdConfig) c = NULL;

  g_assert_null (vgicd_config_load (p1, &e1));
  g_assert_nonnull (strstr (e1->message, "History=1025 is not a number of operations in 0..1024"));
  g_assert_null (vgicd_config_load (p2, &e2));
  g_assert_nonnull (strstr (e2->message, "HistoryVMs=0 is not a number of VMs in 1..65536"));
  g_assert_null (vgicd_config_load (p3, &e3));
  g_assert_nonnull (strstr (e3->message, "MetricsTextfile=vgicd.prom is not an absolute path"));
  g_assert_null (vgicd_config_load (p4, &e4));
  g_assert_nonnull (strstr (e4->message, "ending in .prom"));
  c = vgicd_config_load (p5, &e5);
  g_assert_no_error (e5);
  g_assert_null (c->metrics_textfile);
  g_assert_cmpuint (c->history, ==, 32);
  g_assert_cmpuint (c->history_vms, ==, 256);
}

/* Every number of the key table is refused one past either end of its
 * range, with the range in the message, and taken at both ends. */
static void
test_table_ranges (void)
{
  gsize n;
  const VgicdConfigKey *keys = vgicd_config_keys (&n);

  for (gsize i = 0; i < n; i++)
    {
      const VgicdConfigKey *k = &keys[i];
      guint64 bad[] = { (guint64) k->min - 1, (guint64) k->max + 1 };

      if (k->type != VGICD_CONFIG_UINT)
        continue;
      g_assert_cmpuint (k->min, <=, k->max);
      for (guint b = 0; b < G_N_ELEMENTS (bad); b++)
        {
          g_autofree char *text = NULL, *path = NULL, *want = NULL;
          g_autoptr (GError) error = NULL;

          if (k->min == 0 && b == 0)
            continue;
          text = g_strdup_printf ("[%s]\n%s=%" G_GUINT64_FORMAT "\n", k->group, k->name,
                                  bad[b]);
          path = write_config ("range.conf", text);
          want = g_strdup_printf ("%s=%" G_GUINT64_FORMAT " is not a %s in %u..%u", k->name,
                                  bad[b], k->unit, k->min, k->max);
          g_assert_null (vgicd_config_load (path, &error));
          g_assert_nonnull (strstr (error->message, want));
        }
      for (guint b = 0; b < 2; b++)
        {
          g_autofree char *text = g_strdup_printf ("[%s]\n%s=%u\n", k->group, k->name,
                                                   b ? k->max : k->min);
          g_autofree char *path = write_config ("range.conf", text);
          g_autoptr (GError) error = NULL;
          g_autoptr (VgicdConfig) c = vgicd_config_load (path, &error);

          g_assert_no_error (error);
          g_assert_cmpuint (G_STRUCT_MEMBER (guint, c, k->offset), ==, b ? k->max : k->min);
        }
    }
}

/* The distribution's file with everything commented out is all defaults. */
static void
test_shipped_file (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdConfig) c = vgicd_config_load (g_getenv ("VGICD_CONF"), &error);

  g_assert_no_error (error);
  g_assert_cmpint (c->mode, ==, VGICD_MODE_AUTO);
  g_assert_cmpstr (c->socket_path, ==, VGICD_DEFAULT_SOCKET);
  g_assert_cmpstr (c->socket_group, ==, "kvm");
  g_assert_false (c->socket_group_set);
  g_assert_true (c->probe);
  /* The stream stays QEMU's own unless the operator says otherwise. */
  g_assert_false (c->record);
}

/* What the operator reads in the journal must say which file, which key
 * and what would have been accepted. */
static void
test_bad_mode_names_file_key_values (void)
{
  g_autofree char *path = write_config ("bogus.conf", "[vgicd]\nMode=bogus\n");
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdConfig) c = vgicd_config_load (path, &error);

  g_assert_null (c);
  g_assert_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, path));
  g_assert_nonnull (strstr (error->message, "Mode"));
  g_assert_nonnull (strstr (error->message, "bogus"));
  g_assert_nonnull (strstr (error->message, "auto, single, off"));
}

static void
test_bad_probe_and_syntax (void)
{
  g_autofree char *p1 = write_config ("probe.conf", "[vgicd]\nProbe=maybe\n");
  g_autofree char *p2 = write_config ("syntax.conf", "[vgicd\nMode=auto\n");
  g_autofree char *p3 = write_config ("relsock.conf", "[vgicd]\nSocket=x.sock\n");
  g_autofree char *p4 = write_config ("nogroup.conf", "[vgicd]\nSocketGroup= \n");
  g_autofree char *p5 = write_config ("record.conf", "[vgicd]\nRecord=sometimes\n");
  g_autofree char *p6 = write_config ("sessions.conf", "[vgicd]\nMaxSessions=0\n");
  g_autofree char *p7 = write_config ("vcpus.conf", "[vgicd]\nMaxVcpus=4097\n");
  g_autofree char *p8 = write_config ("memory.conf", "[vgicd]\nMaxSessionMemory=8\n");
  g_autofree char *p9 = write_config ("door.conf", "[vgicd]\nHandshakeTimeout=50\n");
  g_autoptr (GError) e9 = NULL;
  g_autoptr (GError) e8 = NULL;
  g_autoptr (GError) e7 = NULL;
  g_autoptr (GError) e6 = NULL;
  g_autoptr (GError) e5 = NULL;
  g_autoptr (GError) e4 = NULL;
  g_autoptr (GError) e1 = NULL;
  g_autoptr (GError) e2 = NULL;
  g_autoptr (GError) e3 = NULL;

  g_assert_null (vgicd_config_load (p1, &e1));
  g_assert_nonnull (strstr (e1->message, p1));
  g_assert_nonnull (strstr (e1->message, "Probe=maybe"));
  g_assert_nonnull (strstr (e1->message, "true, false"));

  g_assert_null (vgicd_config_load (p2, &e2));
  g_assert_nonnull (strstr (e2->message, p2));

  g_assert_null (vgicd_config_load (p3, &e3));
  g_assert_nonnull (strstr (e3->message, "Socket"));

  g_assert_null (vgicd_config_load (p6, &e6));
  g_assert_nonnull (strstr (e6->message, "MaxSessions=0 is not a number in 1..65536"));
  g_assert_null (vgicd_config_load (p7, &e7));
  g_assert_nonnull (strstr (e7->message, "MaxVcpus=4097 is not a number in 1..4096"));
  g_assert_null (vgicd_config_load (p8, &e8));
  g_assert_nonnull (strstr (e8->message, "MaxSessionMemory=8 is not a number of MiB in 16..65536"));
  g_assert_null (vgicd_config_load (p9, &e9));
  g_assert_nonnull (strstr (e9->message,
                            "HandshakeTimeout=50 is not a number of milliseconds in 100..60000"));

  g_assert_null (vgicd_config_load (p4, &e4));
  g_assert_nonnull (strstr (e4->message, "SocketGroup= is empty"));

  g_assert_null (vgicd_config_load (p5, &e5));
  g_assert_nonnull (strstr (e5->message, "Record=sometimes"));
  g_assert_nonnull (strstr (e5->message, "true, false"));
}

static void
test_save_keeps_comments (void)
{
  static const char text[] =
    "# Top comment\n\n[vgicd]\n# about the mode\nMode=auto\n"
    "# the socket\nSocket=/tmp/s.sock\n\n[other]\nKey=value\n";
  g_autofree char *path = write_config ("keep.conf", text);
  g_autofree char *after = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdConfig) c = NULL;

  g_assert_cmpint (chmod (path, 0640), ==, 0);
  g_assert_true (vgicd_config_save_mode (path, VGICD_MODE_SINGLE, &error));
  g_assert_no_error (error);
  g_file_get_contents (path, &after, NULL, &error);
  g_assert_no_error (error);
  g_test_message ("after save:\n%s", after);
  g_assert_nonnull (strstr (after, "# Top comment\n"));
  g_assert_nonnull (strstr (after, "# about the mode\nMode=single\n"));
  g_assert_nonnull (strstr (after, "# the socket\nSocket=/tmp/s.sock\n"));
  g_assert_nonnull (strstr (after, "[other]\nKey=value\n"));
  g_assert_null (strstr (after, "Mode=auto"));

  /* The replacement kept the permissions of the file it replaced. */
  {
    struct stat st;

    g_assert_cmpint (stat (path, &st), ==, 0);
    g_assert_cmpint (st.st_mode & 07777, ==, 0640);
  }

  c = vgicd_config_load (path, &error);
  g_assert_no_error (error);
  g_assert_cmpint (c->mode, ==, VGICD_MODE_SINGLE);
}

static void
test_save_creates_missing_file (void)
{
  g_autofree char *path = g_build_filename (tmpdir, "new.conf", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdConfig) c = NULL;

  g_assert_true (vgicd_config_save_mode (path, VGICD_MODE_OFF, &error));
  c = vgicd_config_load (path, &error);
  g_assert_no_error (error);
  g_assert_cmpint (c->mode, ==, VGICD_MODE_OFF);
}

/* A file that does not parse is not overwritten with a one-line file. */
static void
test_save_refuses_broken_file (void)
{
  g_autofree char *path = write_config ("broken.conf", "[vgicd\nMode=auto\n");
  g_autofree char *after = NULL;
  g_autoptr (GError) error = NULL;

  g_assert_false (vgicd_config_save_mode (path, VGICD_MODE_OFF, &error));
  g_assert_nonnull (strstr (error->message, path));
  g_file_get_contents (path, &after, NULL, NULL);
  g_assert_cmpstr (after, ==, "[vgicd\nMode=auto\n");
}

static void
test_save_unwritable_dir (void)
{
  g_autofree char *path = g_build_filename (tmpdir, "no-such-dir", "x.conf", NULL);
  g_autoptr (GError) error = NULL;

  g_assert_false (vgicd_config_save_mode (path, VGICD_MODE_OFF, &error));
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, path));
}

static void
test_probe_without_kvm (void)
{
  g_autofree char *path = g_build_filename (tmpdir, "no-kvm", NULL);
  g_autofree char *source = NULL;
  gboolean foreign = TRUE;
  int kb = vgicd_probe_kernel_batch (path, &foreign, &source);

  g_test_message ("%s", source);
  g_assert_cmpint (kb, ==, -1);
  g_assert_false (foreign);
  g_assert_true (g_str_has_prefix (source, "start-up probe: "));
#if defined(__aarch64__)
  g_assert_nonnull (strstr (source, path));
#else
  g_assert_nonnull (strstr (source, "not an arm64 host"));
#endif
}

/* On x86-64 the real device must not even be opened; on arm64 any answer
 * is possible, but it must come with a reason. */
static void
test_probe_real_device (void)
{
  g_autofree char *source = NULL;
  gboolean foreign;
  int kb = vgicd_probe_kernel_batch (VGICD_KVM_DEVICE, &foreign, &source);

  g_test_message ("%d: %s", kb, source);
  g_assert_nonnull (source);
#if !defined(__aarch64__)
  g_assert_cmpint (kb, ==, -1);
#endif
}

int
main (int argc, char **argv)
{
  int ret;

  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("vgicd-config-XXXXXX", NULL);
  g_assert_nonnull (tmpdir);

  g_test_add_func ("/config/mode-names", test_mode_names);
  g_test_add_func ("/config/missing-file-defaults", test_missing_file_gives_defaults);
  g_test_add_func ("/config/all-keys", test_all_keys);
  g_test_add_func ("/config/table-ranges", test_table_ranges);
  g_test_add_func ("/config/shipped-file", test_shipped_file);
  g_test_add_func ("/config/bad-mode", test_bad_mode_names_file_key_values);
  g_test_add_func ("/config/bad-probe-syntax-socket", test_bad_probe_and_syntax);
  g_test_add_func ("/config/history-and-metrics", test_history_and_metrics_keys);
  g_test_add_func ("/config/save-keeps-comments", test_save_keeps_comments);
  g_test_add_func ("/config/save-creates-file", test_save_creates_missing_file);
  g_test_add_func ("/config/save-refuses-broken-file", test_save_refuses_broken_file);
  g_test_add_func ("/config/save-unwritable-dir", test_save_unwritable_dir);
  g_test_add_func ("/probe/without-kvm", test_probe_without_kvm);
  g_test_add_func ("/probe/real-device", test_probe_real_device);
  ret = g_test_run ();

  {
    g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", tmpdir);
    if (system (cmd) != 0)
      g_printerr ("could not remove %s\n", tmpdir);
  }
  g_free (tmpdir);
  return ret;
}
