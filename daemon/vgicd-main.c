/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-main.c - the vgicd daemon: configuration, the QEMU-facing socket,
 * the operator API on the system bus, signals and systemd notification.
 */
#include <errno.h>
#include <glib-unix.h>
#include <locale.h>
#include <malloc.h>
#include <pwd.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>

#include "vgic-shape.h"
#include "vgicd-calibrate.h"
#include "vgicd-catalog.h"
#include "vgicd-config.h"
#include "vgicd-daemon.h"
#include "vgicd-history.h"
#include "vgicd-manager.h"
#include "vgicd-metrics.h"
#include "vgicd-probe.h"
#include "vgicd-server.h"
#include "vgicd-session.h"
#include "vgicd-vms.h"


typedef struct {
  VgicdDaemon daemon;
  VgicdServer *server;
  VgicdManager *manager;
  GMainLoop *loop;
  char *config_path;
  char *state_path;
  char *vms_conf;
  char *vms_dir;
  char *socket_override;
  void (*manager_changed) (gpointer);
  gpointer manager_changed_data;
  gint64 status_sent_us;	/* when STATUS= was last sent */
  guint status_timeout;		/* a STATUS= pending */
} Vgicd;

static void
notify_status_now (Vgicd *v)
{
  VgicdDaemon *d = &v->daemon;
  g_autofree char *status = g_strdup_printf (
    "STATUS=mode %s, kernel batch %s, %u session(s), %" G_GUINT64_FORMAT " saves, %"
    G_GUINT64_FORMAT " loads", vgicd_mode_to_string (d->mode),
    d->kernel_batch < 0 ? "unknown" : d->kernel_batch ? "yes" : "no", d->sessions->len,
    d->totals.saves, d->totals.loads);

  sd_notify (0, status);
  v->status_sent_us = g_get_monotonic_time ();
}

static gboolean
notify_status_due (gpointer data)
{
  Vgicd *v = data;

  v->status_timeout = 0;
  notify_status_now (v);
  return G_SOURCE_REMOVE;
}

/* STATUS= at most once a second, the last change always sent.  A peer
 * can make vgicd's totals change thousands of times a second (a load
 * refused costs it tens of µs), and every notification is a datagram that
 * PID 1, which serves every unit on the host, reads and parses; worse,
 * sd_notify() blocks while PID 1's queue is full (net.unix.max_dgram_qlen:
 * systemd sets 512, the kernel's default is 10), and a notification per
 * change stopped vgicd's main loop, every VM's saves and loads with it,
 * whenever PID 1 fell that far behind. */
static void
notify_status (Vgicd *v)
{
  gint64 wait_us = v->status_sent_us + G_USEC_PER_SEC - g_get_monotonic_time ();

  if (v->status_timeout)
    return;
  if (!v->status_sent_us || wait_us <= 0)
    notify_status_now (v);
  else
    v->status_timeout = g_timeout_add ((guint) (wait_us / 1000) + 1, notify_status_due, v);
}

/* The daemon's change hook: keep systemd's STATUS current, have the
 * metrics textfile written, then let the operator API emit its signals.
 * It runs with or without the operator API (no system bus). */
static void
on_changed (gpointer data)
{
  Vgicd *v = data;

  notify_status (v);
  vgicd_metrics_changed (&v->daemon);
  if (v->manager_changed)
    v->manager_changed (v->manager_changed_data);
}

/* Resolve AllowUsers to uids; a user that does not exist on this host
 * (libvirt-qemu without libvirt) is skipped with a note. */
static void
apply_allow_list (Vgicd *v)
{
  g_autoptr (GArray) uids = g_array_new (FALSE, FALSE, sizeof (uid_t));
  char **users = v->daemon.config->allow_users;

  for (guint i = 0; users && users[i]; i++)
    {
      struct passwd *pw = getpwnam (users[i]);
      if (!pw)
        {
          g_message ("AllowUsers: no user %s on this host; skipped", users[i]);
          continue;
        }
      g_array_append_val (uids, pw->pw_uid);
    }
  vgicd_server_set_allowed (v->server, (uid_t *) (void *) uids->data, uids->len);
}

static gboolean
on_sigterm (gpointer data)
{
  Vgicd *v = data;

  sd_notify (0, "STOPPING=1");
  g_message ("stopping on signal");
  g_main_loop_quit (v->loop);
  return G_SOURCE_CONTINUE;
}

/* vms.conf in full, at start and at each reload: what a VM's attach
 * would find wrong in its group is said now, group by group (a bad group
 * costs only its own VM, and the lookup at attach still applies it). */
static void
log_vms_conf (Vgicd *v)
{
  g_autoptr (VgicdDiags) diags = vgicd_diags_new ();

  vgicd_vms_check (v->vms_conf, diags);
  vgicd_diags_log (diags);
}

/* check_config() - vgicd --check-config [FILE...]: the configuration's
 * problems on stderr, one a line, as `sshd -t` does; exit status 1 when one
 * is an error.  Without FILEs, what vgicd would load: the configuration
 * file, its drop-ins, the state file and vms.conf.  A FILE named vms.conf
 * is checked as vms.conf, any other as vgicd.conf (or a drop-in of it). */
static int
check_config (Vgicd *v, char **files)
{
  g_autoptr (VgicdDiags) diags = vgicd_diags_new ();

  if (files && files[0])
    for (guint i = 0; files[i]; i++)
      {
        g_autofree char *base = g_path_get_basename (files[i]);

        if (g_str_equal (base, "vms.conf"))
          vgicd_vms_check (files[i], diags);
        else
          vgicd_config_check_file (files[i], diags);	/* alone, not its drop-ins */
      }
  else
    {
      /* Only its problems are wanted here, not the configuration. */
      vgicd_config_free (vgicd_config_check (v->config_path, diags));
      vgicd_config_check_state (v->state_path, diags);
      vgicd_vms_check (v->vms_conf, diags);
    }
  vgicd_diags_sort (diags);
  for (guint i = 0; i < diags->items->len; i++)
    {
      g_autofree char *line = vgicd_diag_to_string (diags->items->pdata[i]);

      g_printerr ("%s\n", line);
    }
  return diags->errors ? 1 : 0;
}

/* SIGHUP: re-read the configuration.  The mode and the allow-list change;
 * the socket stays (changing it needs a restart). */
static gboolean
on_sighup (gpointer data)
{
  Vgicd *v = data;
  g_autoptr (GError) error = NULL;
  VgicdConfig *config;

  sd_notify (0, "RELOADING=1");
  config = vgicd_config_load (v->config_path, &error);
  if (config && !vgicd_config_load_state (config, v->state_path, &error))
    g_clear_pointer (&config, vgicd_config_free);
  if (!config)
    {
      g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING,
                        "MESSAGE_ID", VGICD_MESSAGE_RELOAD_FAILED,
                        "MESSAGE", "reload failed, keeping the previous configuration: %s",
                        error->message);
      sd_notify (0, "READY=1");
      return G_SOURCE_CONTINUE;
    }
  if (v->socket_override)
    {
      /* The socket does not change on reload. */
      g_free (config->socket_path);
      config->socket_path = g_strdup (v->socket_override);
    }
  vgicd_config_free (v->daemon.config);
  v->daemon.config = config;
  v->daemon.mode = config->mode;
  vgicd_history_resize (v->daemon.history, config->history, config->history_vms);
  vgicd_history_set_vms_per_process (v->daemon.history, config->history_vms_per_process);
  vgicd_log_shares_set_per_minute (v->daemon.log_shares, config->log_lines_per_process);
  vgicd_metrics_stop (&v->daemon);
  vgicd_metrics_write_now (&v->daemon);
  apply_allow_list (v);
  log_vms_conf (v);
  for (guint i = 0; i < v->daemon.sessions->len; i++)
    vgicd_session_refresh_policy (v->daemon.sessions->pdata[i]);
  g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE,
                    "VGICD_MODE", vgicd_mode_to_string (config->mode),
                    "MESSAGE", "configuration reloaded from %s: mode %s%s", v->config_path,
                    vgicd_mode_to_string (config->mode),
                    config->mode_from_state ? " (saved by vgicctl mode in the state file)" : "");
  sd_notify (0, "READY=1");
  vgicd_daemon_changed (&v->daemon);
  return G_SOURCE_CONTINUE;
}

/* Everything main() set up; each field may still be unset.  Start-up
 * errors leave through here too, so a sanitizer run stays clean. */
static void
vgicd_clear (Vgicd *v)
{
  g_clear_pointer (&v->server, vgicd_server_free);
  g_clear_pointer (&v->manager, vgicd_manager_free);
  g_clear_pointer (&v->loop, g_main_loop_unref);
  g_clear_pointer (&v->daemon.sessions, g_ptr_array_unref);
  vgicd_metrics_stop (&v->daemon);
  g_clear_handle_id (&v->status_timeout, g_source_remove);
  g_clear_pointer (&v->daemon.history, vgicd_history_free);
  g_clear_pointer (&v->daemon.log_shares, vgicd_log_shares_free);
  g_clear_pointer (&v->daemon.config, vgicd_config_free);
  g_clear_pointer (&v->daemon.kernel_batch_source, g_free);
  g_clear_pointer (&v->daemon.kernel_batch_unprobed, g_free);
  g_clear_pointer (&v->config_path, g_free);
  g_clear_pointer (&v->state_path, g_free);
  g_clear_pointer (&v->vms_conf, g_free);
  g_clear_pointer (&v->vms_dir, g_free);
  g_clear_pointer (&v->socket_override, g_free);
}

static void
on_bus_closed (GDBusConnection *bus, gboolean remote_peer_vanished, GError *error,
               gpointer data)
{
  g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING,
                    "MESSAGE", "lost the system bus (%s): the operator API (vgicctl) is "
                    "unavailable until vgicd restarts; QEMUs are still served",
                    error ? error->message : "closed");
}

int
main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GOptionContext) ctx = NULL;
  g_autoptr (GDBusConnection) bus = NULL;
  gboolean no_system_bus = FALSE, version = FALSE, check = FALSE;
  g_auto (GStrv) files = NULL;
  Vgicd v = { 0 };
  GOptionEntry entries[] = {
    { "config", 'c', 0, G_OPTION_ARG_FILENAME, &v.config_path,
      "Configuration file (" VGICD_DEFAULT_CONFIG ")", "FILE" },
    { "state", 0, 0, G_OPTION_ARG_FILENAME, &v.state_path,
      "State file: the mode vgicctl mode saved (" VGICD_DEFAULT_STATE ")", "FILE" },
    { "vms-conf", 0, 0, G_OPTION_ARG_FILENAME, &v.vms_conf,
      "Per-VM policy (" VGICD_DEFAULT_VMS_CONF ")", "FILE" },
    { "vms-dir", 0, 0, G_OPTION_ARG_FILENAME, &v.vms_dir,
      "Domains' own choices, by UUID (" VGICD_DEFAULT_VMS_DIR ")", "DIR" },
    { "socket", 's', 0, G_OPTION_ARG_FILENAME, &v.socket_override,
      "Socket to listen on when not socket-activated (overrides Socket=)", "PATH" },
    { "no-system-bus", 0, 0, G_OPTION_ARG_NONE, &no_system_bus,
      "Do not offer org.vgicd.Manager1 on the system bus", NULL },
    { "check-config", 0, 0, G_OPTION_ARG_NONE, &check,
      "Check the configuration (or the FILEs), print its problems, and exit: "
      "status 1 on errors", NULL },
    { "version", 0, 0, G_OPTION_ARG_NONE, &version, "Print the version", NULL },
    { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &files, NULL, "[FILE...]" },
    { NULL }
  };
  int kb;
  g_autofree char *kb_source = NULL;

  setlocale (LC_ALL, "");
  /* A save or restore of a large VM allocates a few arrays of ~200 KB and
   * frees them.  By default glibc gives such memory back to the kernel
   * (mmap, trim) and takes it again at the next operation, page fault by
   * page fault, inside the migration's downtime; under emulation that was
   * milliseconds per operation.  Keep it: vgicd's peak stays its size. */
  mallopt (M_MMAP_THRESHOLD, 16 * 1024 * 1024);
  mallopt (M_TRIM_THRESHOLD, 64 * 1024 * 1024);
  /* GLib polls and never select()s, so the soft descriptor limit can be
   * the hard one, as systemd advises such programs: started from a shell
   * (soft 1024), vgicd has room for the sessions a host needs.  Under
   * vgicd.service both are LimitNOFILE=, and nothing changes. */
  {
    struct rlimit r;

    if (getrlimit (RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max)
      {
        r.rlim_cur = r.rlim_max;
        setrlimit (RLIMIT_NOFILE, &r);
      }
  }
  ctx = g_option_context_new ("- vGIC state helper for QEMU migrations");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    {
      g_printerr ("vgicd: %s\n", error->message);
      vgicd_clear (&v);
      return 2;
    }
  if (version)
    {
      g_print ("vgicd %s\n", PACKAGE_VERSION);
      vgicd_clear (&v);
      return 0;
    }
  if (!v.config_path)
    v.config_path = g_strdup (VGICD_DEFAULT_CONFIG);
  if (!v.state_path)
    v.state_path = g_strdup (VGICD_DEFAULT_STATE);
  if (!v.vms_conf)
    v.vms_conf = g_strdup (VGICD_DEFAULT_VMS_CONF);
  if (!v.vms_dir)
    v.vms_dir = g_strdup (VGICD_DEFAULT_VMS_DIR);
  if (files && !check)
    {
      g_printerr ("vgicd: unexpected argument \"%s\" (FILEs go with --check-config)\n",
                  files[0]);
      vgicd_clear (&v);
      return 2;
    }
  if (check)
    {
      int status = check_config (&v, files);

      vgicd_clear (&v);
      return status;
    }
  v.daemon.vms_conf = v.vms_conf;
  v.daemon.vms_dir = v.vms_dir;

  v.daemon.config = vgicd_config_load (v.config_path, &error);
  if (v.daemon.config && !vgicd_config_load_state (v.daemon.config, v.state_path, &error))
    g_clear_pointer (&v.daemon.config, vgicd_config_free);
  if (!v.daemon.config)
    {
      g_printerr ("vgicd: %s\n", error->message);
      vgicd_clear (&v);
      return 1;
    }
  v.daemon.mode = v.daemon.config->mode;
  v.daemon.sessions = g_ptr_array_new ();
  v.daemon.history = vgicd_history_new (v.daemon.config->history,
                                        v.daemon.config->history_vms);
  vgicd_history_set_vms_per_process (v.daemon.history,
                                     v.daemon.config->history_vms_per_process);
  v.daemon.log_shares = vgicd_log_shares_new (v.daemon.config->log_lines_per_process);
  /* Until a save says otherwise: an ITS, and 5 priority bits (one AP
   * register per group), what KVM hosts commonly give a VM. */
  v.daemon.guess_plpis = TRUE;
  v.daemon.guess_apr = 1;
  v.daemon.start_usec = g_get_monotonic_time ();
  v.daemon.start_real_usec = g_get_real_time ();
  v.daemon.kernel_batch = -1;
  v.daemon.kernel_batch_source = g_strdup ("no probe (Probe=false) and no VM attached yet");
  v.daemon.kernel_batch_unprobed = g_strdup ("no probe (Probe=false)");

  if (v.daemon.config->probe)
    {
      kb = vgicd_probe_kernel_batch (VGICD_KVM_DEVICE, &v.daemon.kernel_batch_foreign,
                                     &kb_source);
      v.daemon.kernel_batch = kb;
      v.daemon.kernel_batch_probed = kb >= 0;
      g_free (v.daemon.kernel_batch_source);
      v.daemon.kernel_batch_source = g_strdup (kb_source);
      g_free (v.daemon.kernel_batch_unprobed);
      v.daemon.kernel_batch_unprobed = g_steal_pointer (&kb_source);
      g_message ("kernel batch group: %s (%s)",
                 kb < 0 ? "unknown" : kb ? "yes" : "no", v.daemon.kernel_batch_source);
      /* What one register per ioctl costs here, so that each batched
       * operation can say what it replaced (vgicd-calibrate.c). */
      if (kb >= 0)
        {
          g_autofree char *cal_source = NULL;
          double base, per_vcpu;

          if (vgicd_calibrate_single (VGICD_KVM_DEVICE, &base, &per_vcpu, &cal_source))
            vgicd_history_calibrated (v.daemon.history, base, per_vcpu);
          g_message ("%s", cal_source);
        }
    }

  if (v.socket_override)
    {
      g_free (v.daemon.config->socket_path);
      v.daemon.config->socket_path = g_strdup (v.socket_override);
    }
  v.server = vgicd_server_new (&v.daemon, v.daemon.config->socket_path, &error);
  if (!v.server)
    {
      g_printerr ("vgicd: %s\n", error->message);
      vgicd_clear (&v);
      return 1;
    }
  apply_allow_list (&v);
  log_vms_conf (&v);

  if (!no_system_bus)
    {
      bus = g_bus_get_sync (G_BUS_TYPE_SYSTEM, NULL, &error);
      if (bus)
        {
          /* GDBus exits the process when its bus connection closes: the
           * bus restarting, or dropping vgicd for a message over its
           * limits, would end every VM's session on the host.  The QEMUs
           * do not use the bus; only the operator API goes with it. */
          g_dbus_connection_set_exit_on_close (bus, FALSE);
          g_signal_connect (bus, "closed", G_CALLBACK (on_bus_closed), NULL);
          v.manager = vgicd_manager_new (&v.daemon, bus, &error);
        }
      if (!v.manager)
        {
          /* QEMUs are still served; only the operator API is missing. */
          g_warning ("operator API unavailable (vgicctl will not work): %s", error->message);
          g_clear_error (&error);
        }
    }
  /* The manager installed its change hook; chain it behind ours. */
  v.manager_changed = v.daemon.changed;
  v.manager_changed_data = v.daemon.changed_data;
  v.daemon.changed = on_changed;
  v.daemon.changed_data = &v;

  v.loop = g_main_loop_new (NULL, FALSE);
  g_unix_signal_add (SIGTERM, on_sigterm, &v);
  g_unix_signal_add (SIGINT, on_sigterm, &v);
  g_unix_signal_add (SIGHUP, on_sighup, &v);

  g_message ("vgicd %s listening on %s, mode %s; descriptors peers send: %s", PACKAGE_VERSION,
             vgicd_server_describe (v.server), vgicd_mode_to_string (v.daemon.mode),
             vgicd_server_describe_fds (v.server));
  sd_notify (0, "READY=1");
  notify_status (&v);
  /* The textfile is there from the start (all zeros), and ends with the
   * last figures. */
  vgicd_metrics_write_now (&v.daemon);
  g_main_loop_run (v.loop);
  vgicd_metrics_stop (&v.daemon);
  vgicd_metrics_write_now (&v.daemon);

  vgicd_clear (&v);
  return 0;
}
