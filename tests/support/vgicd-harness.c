/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-harness.c - a private vgicd and system bus (see vgicd-harness.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <string.h>
#include <unistd.h>

#include "log-on-failure.h"
#include "test-files.h"
#include "vgicd-harness.h"

/* The system bus configuration: tests/support/system-bus.conf.in, which mirrors
 * Debian's system.conf and includes the project's policy file. */
static char *
bus_config (const char *dir, const char *policy, GError **error)
{
  g_autofree char *template = NULL;
  g_autofree char *socket = g_build_filename (dir, "system_bus_socket", NULL);
  GString *s;

  if (!g_file_get_contents (VGICD_BUS_TEMPLATE, &template, NULL, error))
    return NULL;
  s = g_string_new (template);
  g_string_replace (s, "@SOCKET@", socket, 0);
  g_string_replace (s, "@POLICY@", policy, 0);
  g_string_replace (s, "@EXTRA@", "", 0);
  return g_string_free (s, FALSE);
}

/* Children die with the harness's process, even if it crashes, and keep
 * none of its output pipes open (a test runner waits for those).  Each is
 * a session of its own, as a service is a cgroup of its own under
 * systemd: where the kernel schedules by autogroup, the processes a test
 * or a benchmark starts beside vgicd do not share its group. */
static void
child_setup (gpointer data)
{
  prctl (PR_SET_PDEATHSIG, SIGTERM);
  setsid ();
}

/* A unix socket exists from bind() on, but refuses connections until
 * listen(): /proc/net/unix shows the listening ones (__SO_ACCEPTCON). */
static gboolean
is_listening (const char *path)
{
  g_autofree char *table = NULL;
  g_auto (GStrv) lines = NULL;

  if (!g_file_get_contents ("/proc/net/unix", &table, NULL, NULL))
    return TRUE;	/* cannot tell: the path's existence must do */
  lines = g_strsplit (table, "\n", -1);
  for (guint i = 1; lines[i]; i++)
    {
      g_auto (GStrv) f = g_strsplit_set (lines[i], " ", -1);
      guint n = 0, flags_at = 0, path_at = 0;

      /* Num RefCount Protocol Flags Type St Inode Path */
      for (guint j = 0; f[j]; j++)
        if (*f[j])
          {
            n++;
            if (n == 4)
              flags_at = j;
            if (n == 8)
              path_at = j;
          }
      if (path_at && g_strcmp0 (f[path_at], path) == 0 &&
          (g_ascii_strtoull (f[flags_at], NULL, 16) & 0x10000))
        return TRUE;
    }
  return FALSE;
}

static gboolean
wait_for_path (const char *path, GPid pid, GError **error)
{
  for (int i = 0; i < 500; i++)
    {
      int status;

      if (g_file_test (path, G_FILE_TEST_EXISTS) && is_listening (path))
        return TRUE;
      if (waitpid (pid, &status, WNOHANG) == pid)
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                       "process %d exited (status %d) before creating %s", pid, status, path);
          return FALSE;
        }
      g_usleep (10000);
    }
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT, "%s did not appear in 5 s", path);
  return FALSE;
}

/* spawn_vgicd - start h->vgicd on the harness's files (its stderr into
 * h->log_path: truncated at the start, appended to at a restart) and wait
 * until its socket is there. */
static gboolean
spawn_vgicd (VgicdHarness *h, gboolean activated, int log_flags, GError **error)
{
  g_auto (GStrv) env = NULL;
  int log_fd;

  log_fd = open (h->log_path, O_WRONLY | O_CREAT | O_CLOEXEC | log_flags, 0644);
  env = g_environ_setenv (g_get_environ (), "DBUS_SYSTEM_BUS_ADDRESS", h->bus_address, TRUE);
  {
    const char *direct[] = { h->vgicd, "--config", h->config_path, "--state", h->state_path,
                             "--vms-conf", h->vms_conf, "--vms-dir", h->vms_dir, NULL };
    const char *via_systemd[] = { "systemd-socket-activate", "-l", h->socket_path,
                                  h->vgicd, "--config", h->config_path, "--state", h->state_path,
                                  "--vms-conf", h->vms_conf, "--vms-dir", h->vms_dir, NULL };
    if (!g_spawn_async_with_fds (NULL, (char **) (activated ? via_systemd : direct), env,
                                 G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_SEARCH_PATH,
                                 child_setup, NULL, &h->vgicd_pid, -1, log_fd, log_fd, error))
      {
        close (log_fd);
        return FALSE;
      }
  }
  close (log_fd);
  if (!wait_for_path (h->socket_path, h->vgicd_pid, error))
    {
      g_autofree char *log = NULL;
      g_file_get_contents (h->log_path, &log, NULL, NULL);
      g_prefix_error (error, "vgicd did not start (%s): ", log ? g_strstrip (log) : "");
      return FALSE;
    }
  return TRUE;
}

static VgicdHarness *
harness_start (const char *vgicd, const char *policy, const char *config,
               gboolean activated, GError **error)
{
  g_autoptr (VgicdHarness) h = g_new0 (VgicdHarness, 1);
  g_autofree char *bus_conf_path = NULL;
  g_autofree char *bus_conf = NULL;
  g_autofree char *bus_socket = NULL;
  g_autofree char *conf = NULL;
  g_autofree char *abs_policy = g_canonicalize_filename (policy, NULL);

  h->log_watch = -1;
  h->dir = g_dir_make_tmp ("vgicd-XXXXXX", error);
  if (!h->dir)
    return NULL;
  chmod (h->dir, 0755);	/* unprivileged test peers reach the sockets */

  bus_conf_path = g_build_filename (h->dir, "system.conf", NULL);
  bus_conf = bus_config (h->dir, abs_policy, error);
  if (!bus_conf || !g_file_set_contents (bus_conf_path, bus_conf, -1, error))
    return NULL;
  {
    const char *argv[] = { "dbus-daemon", "--nofork", "--nopidfile", "--config-file",
                           bus_conf_path, NULL };
    g_autofree char *bus_log = g_build_filename (h->dir, "dbus-daemon.log", NULL);
    int bus_log_fd = open (bus_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    gboolean ok = g_spawn_async_with_fds (NULL, (char **) argv, NULL,
                                          G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD,
                                          child_setup, NULL, &h->dbus_pid, -1, bus_log_fd,
                                          bus_log_fd, error);
    close (bus_log_fd);
    if (!ok)
      return NULL;
  }
  bus_socket = g_build_filename (h->dir, "system_bus_socket", NULL);
  if (!wait_for_path (bus_socket, h->dbus_pid, error))
    return NULL;
  h->bus_address = g_strdup_printf ("unix:path=%s", bus_socket);

  h->socket_path = g_build_filename (h->dir, "vgicd.sock", NULL);
  h->address = g_strdup_printf ("unix:path=%s", h->socket_path);
  h->config_path = g_build_filename (h->dir, "vgicd.conf", NULL);
  /* The tests' QEMUs are all the test's own process (or a few children):
   * the per-process shares that fit one VM per QEMU would refuse most of
   * them, and leave out of the log lines the tests look for.  A test's
   * own config comes after, and a key in it wins. */
  conf = g_strdup_printf ("# written by the test harness\n[vgicd]\nSocket=%s\nProbe=false\n"
                          "MaxSessionsPerProcess=65536\nMaxSessionMemoryPerProcess=65536\n"
                          "HistoryVMsPerProcess=65536\nLogLinesPerProcess=65536\n%s",
                          h->socket_path, config ? config : "");
  if (!g_file_set_contents (h->config_path, conf, -1, error))
    return NULL;

  /* vgicd's other files, kept in the folder too, so that a test never
   * reads or writes the host's. */
  h->state_path = g_build_filename (h->dir, "state.conf", NULL);
  h->vms_conf = g_build_filename (h->dir, "vms.conf", NULL);
  h->vms_dir = g_build_filename (h->dir, "vms", NULL);
  mkdir (h->vms_dir, 0755);

  h->log_path = g_build_filename (h->dir, "vgicd.log", NULL);
  h->log_watch = log_on_failure_watch (h->log_path);
  h->vgicd = g_strdup (vgicd);
  if (!spawn_vgicd (h, activated, O_TRUNC, error))
    return NULL;
  return g_steal_pointer (&h);
}

static void
stop_pid (GPid *pid, int sig)
{
  if (*pid <= 0)
    return;
  kill (*pid, sig);
  waitpid (*pid, NULL, 0);
  g_spawn_close_pid (*pid);
  *pid = 0;
}

static gboolean wait_for_manager (VgicdHarness *h, GError **error);

VgicdHarness *
vgicd_harness_start (const char *vgicd, const char *policy, const char *config,
                     GError **error)
{
  g_autoptr (VgicdHarness) h = harness_start (vgicd, policy, config, FALSE, error);

  /* vgicd listens on its socket before it owns its name (and Manager1
   * starts on a thread of its own): a test that asks GetStats at once
   * would otherwise find no one there. */
  if (!h || !wait_for_manager (h, error))
    return NULL;
  return g_steal_pointer (&h);
}

VgicdHarness *
vgicd_harness_start_activated (const char *vgicd, const char *policy, const char *config,
                               GError **error)
{
  return harness_start (vgicd, policy, config, TRUE, error);
}

/* A new client connection to the harness's private system bus. */
static GDBusConnection *
private_bus (VgicdHarness *h, GError **error)
{
  return g_dbus_connection_new_for_address_sync (h->bus_address,
                                                 G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                                 G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                                                 NULL, NULL, error);
}

gboolean
vgicd_harness_set_mode (VgicdHarness *h, const char *mode, GError **error)
{
  g_autoptr (GDBusConnection) bus = NULL;
  g_autoptr (GVariant) reply = NULL;

  bus = private_bus (h, error);
  if (bus)
    reply = g_dbus_connection_call_sync (bus, "org.vgicd.Manager1", "/org/vgicd/Manager1",
                                         "org.vgicd.Manager1", "SetMode",
                                         g_variant_new ("(sb)", mode, FALSE), NULL,
                                         G_DBUS_CALL_FLAGS_NONE, 5000, NULL, error);
  return reply != NULL;
}

guint64
vgicd_harness_stat (VgicdHarness *h, const char *key)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GDBusConnection) bus = NULL;
  g_autoptr (GVariant) reply = NULL;
  g_autoptr (GVariant) stats = NULL;
  guint64 value = 0;

  bus = private_bus (h, &error);
  g_assert_no_error (error);
  reply = g_dbus_connection_call_sync (bus, "org.vgicd.Manager1", "/org/vgicd/Manager1",
                                       "org.vgicd.Manager1", "GetStats", NULL,
                                       G_VARIANT_TYPE ("(a{sv})"), G_DBUS_CALL_FLAGS_NONE,
                                       5000, NULL, &error);
  g_assert_no_error (error);
  g_variant_get (reply, "(@a{sv})", &stats);
  {
    g_autoptr (GVariant) v = g_variant_lookup_value (stats, key, NULL);

    g_assert_nonnull (v);
    /* counters are t; "sessions" (attached now) is u */
    value = g_variant_is_of_type (v, G_VARIANT_TYPE_UINT32) ? g_variant_get_uint32 (v)
                                                            : g_variant_get_uint64 (v);
  }
  return value;
}

GVariant *
vgicd_harness_manager_call (VgicdHarness *h, const char *method, GVariant *params,
                            const char *reply_type)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GDBusConnection) bus = private_bus (h, &error);
  GVariant *reply;

  g_assert_no_error (error);
  reply = g_dbus_connection_call_sync (bus, "org.vgicd.Manager1", "/org/vgicd/Manager1",
                                       "org.vgicd.Manager1", method, params,
                                       G_VARIANT_TYPE (reply_type), G_DBUS_CALL_FLAGS_NONE,
                                       5000, NULL, &error);
  g_assert_no_error (error);
  return reply;
}

guint
vgicd_harness_count (const char *haystack, const char *needle)
{
  guint n = 0;

  for (const char *at = haystack; (at = strstr (at, needle)); at += strlen (needle))
    n++;
  return n;
}

char *
vgicd_harness_wait_log (VgicdHarness *h, const char *needle, guint timeout_ms)
{
  gint64 end = g_get_monotonic_time () + (gint64) timeout_ms * 1000;
  char *log = vgicd_harness_read_log (h);

  while (!strstr (log, needle) && g_get_monotonic_time () < end)
    {
      g_usleep (20 * 1000);
      g_free (log);
      log = vgicd_harness_read_log (h);
    }
  return log;
}

char *
vgicd_harness_read_log (VgicdHarness *h)
{
  g_autoptr (GDBusConnection) bus = private_bus (h, NULL);
  char *log = NULL;

  /* An operation's end marks Manager1's figures stale before its answer
   * goes out, and GetStats then waits for the main thread to publish
   * them, which it does after writing the record (vgicd-steps.c,
   * op_outcome()).  Properties or Peer.Ping are answered on other
   * threads, and would prove nothing. */
  if (bus)
    {
      GVariant *reply = g_dbus_connection_call_sync (
        bus, "org.vgicd.Manager1", "/org/vgicd/Manager1", "org.vgicd.Manager1", "GetStats",
        NULL, NULL, G_DBUS_CALL_FLAGS_NO_AUTO_START, 5000, NULL, NULL);

      if (reply)
        g_variant_unref (reply);
    }
  if (!g_file_get_contents (h->log_path, &log, NULL, NULL))
    log = g_strdup ("");
  return log;
}

char *
vgicd_harness_property (VgicdHarness *h, const char *name)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GDBusConnection) bus = private_bus (h, &error);
  g_autoptr (GVariant) reply = NULL, value = NULL;

  g_assert_no_error (error);
  reply = g_dbus_connection_call_sync (bus, "org.vgicd.Manager1", "/org/vgicd/Manager1",
                                       "org.freedesktop.DBus.Properties", "Get",
                                       g_variant_new ("(ss)", "org.vgicd.Manager1", name),
                                       G_VARIANT_TYPE ("(v)"), G_DBUS_CALL_FLAGS_NONE, 5000,
                                       NULL, &error);
  g_assert_no_error (error);
  g_variant_get (reply, "(v)", &value);
  return g_variant_dup_string (value, NULL);
}

guint64
vgicd_harness_status_kib (VgicdHarness *h, const char *key)
{
  g_autofree char *path = g_strdup_printf ("/proc/%d/status", (int) h->vgicd_pid);
  g_autofree char *text = NULL;
  const char *line;

  if (!g_file_get_contents (path, &text, NULL, NULL) || !(line = strstr (text, key)))
    return 0;
  return g_ascii_strtoull (line + strlen (key), NULL, 10);
}

guint
vgicd_harness_open_fds (VgicdHarness *h)
{
  return vgicd_count_fds (h->vgicd_pid, NULL);
}

guint
vgicd_count_fds (GPid pid, GError **error)
{
  g_autofree char *path = g_strdup_printf ("/proc/%d/fd", (int) pid);
  g_autoptr (GDir) dir = g_dir_open (path, 0, error);
  guint n = 0;

  while (dir && g_dir_read_name (dir))
    n++;
  return n;
}

void
vgicd_harness_kill_vgicd (VgicdHarness *h)
{
  stop_pid (&h->vgicd_pid, SIGKILL);
}

/* Wait until vgicd owns its name on the private bus (it may listen on its
 * socket first): up to 30 s (an ASan build on a busy machine). */
static gboolean
wait_for_manager (VgicdHarness *h, GError **error)
{
  g_autoptr (GDBusConnection) bus = private_bus (h, error);

  for (int i = 0; bus && i < 3000; i++)
    {
      g_autoptr (GVariant) r =
        g_dbus_connection_call_sync (bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                     "org.freedesktop.DBus", "NameHasOwner",
                                     g_variant_new ("(s)", "org.vgicd.Manager1"),
                                     G_VARIANT_TYPE ("(b)"), G_DBUS_CALL_FLAGS_NONE, 1000,
                                     NULL, error);
      gboolean owned = FALSE;

      if (!r)
        return FALSE;
      g_variant_get (r, "(b)", &owned);
      if (owned)
        return TRUE;
      g_usleep (10 * 1000);
    }
  if (bus)
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                 "vgicd did not take org.vgicd.Manager1 within 30 s");
  return FALSE;
}

gboolean
vgicd_harness_restart_vgicd (VgicdHarness *h, GError **error)
{
  stop_pid (&h->vgicd_pid, SIGTERM);
  /* The stopped vgicd's socket file may be left: wait for the new one's. */
  unlink (h->socket_path);
  return spawn_vgicd (h, FALSE, O_APPEND, error) && wait_for_manager (h, error);
}

void
vgicd_harness_stop (VgicdHarness *h)
{
  if (!h)
    return;
  gboolean keep = g_getenv ("VGICD_HARNESS_KEEP") != NULL;

  stop_pid (&h->vgicd_pid, SIGTERM);
  stop_pid (&h->dbus_pid, SIGTERM);
  /* A test that failed without aborting (g_test_fail()) gets here: vgicd's
   * log, for CI's record, and the folder kept. */
  if (g_test_initialized () && g_test_failed ())
    {
      log_on_failure_print (h->log_watch);
      keep = TRUE;
    }
  log_on_failure_forget (h->log_watch);
  /* vgicd is a process of its own: in a sanitizer build, what ASan, LSan
   * or UBSan found in it at exit is in its log, and fails the test. */
  if (h->log_path)
    {
      g_autofree char *log = NULL;

      if (g_file_get_contents (h->log_path, &log, NULL, NULL) &&
          (strstr (log, "ERROR: AddressSanitizer") || strstr (log, "ERROR: LeakSanitizer") ||
           strstr (log, "runtime error:")))
        g_error ("vgicd reported a sanitizer error:\n%s", log);
    }
  /* VGICD_HARNESS_KEEP=1 keeps the logs and configuration for a look. */
  if (h->dir && !keep)
    test_remove_tree (h->dir);
  else if (h->dir)
    g_printerr ("vgicd harness: kept %s\n", h->dir);
  g_free (h->dir);
  g_free (h->bus_address);
  g_free (h->config_path);
  g_free (h->socket_path);
  g_free (h->address);
  g_free (h->log_path);
  g_free (h->state_path);
  g_free (h->vms_conf);
  g_free (h->vms_dir);
  g_free (h->vgicd);
  g_free (h);
}
