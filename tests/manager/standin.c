/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * standin.c - a stand-in for vgicd in tests/manager: the real config loader
 * and Manager1 on the (test) system bus, with fake sessions and totals that
 * the real daemon could only have after real migrations.
 *
 *   manager-standin --config FILE [--sessions N] [--fill-history N]
 *
 * SIGUSR1 plays an executor's report (kernel batch becomes "yes"); SIGTERM
 * stops it cleanly (so ASan sees every allocation freed).  Exit status 1
 * with the error on stderr when the config or the name cannot be had.
 */
#include <glib-unix.h>
#include <signal.h>

#include "vgicd-history.h"
#include "vgicd-manager.h"

/* The session a real vgicd keeps; here only what describe() shows. */
struct _VgicdSession {
  char *name;
  char *uuid;
  guint vcpus;
};

static void
session_free (gpointer p)
{
  VgicdSession *s = p;

  g_free (s->name);
  g_free (s->uuid);
  g_free (s);
}

/* vgicd_session_describe() - the stub of vgicd-session.c's */
GVariant *
vgicd_session_describe (VgicdSession *s)
{
  GVariantDict d;

  g_variant_dict_init (&d, NULL);
  g_variant_dict_insert (&d, "name", "s", s->name);
  g_variant_dict_insert (&d, "uuid", "s", s->uuid);
  g_variant_dict_insert (&d, "vcpus", "u", s->vcpus);
  g_variant_dict_insert (&d, "nr-irqs", "u", 96);
  g_variant_dict_insert (&d, "kernel-batch", "b", TRUE);
  /* The 8-vCPU VM is set apart by the host's per-VM policy. */
  g_variant_dict_insert (&d, "mode", "s", s->vcpus == 8 ? "off" : "auto");
  g_variant_dict_insert (&d, "mode-source", "s",
                         s->vcpus == 8 ? "/etc/vgicd/vms.conf [name vm-1]" : "host");
  g_variant_dict_insert (&d, "saves", "t", (guint64) 2);
  g_variant_dict_insert (&d, "loads", "t", (guint64) 0);
  g_variant_dict_insert (&d, "last-save-ns", "t", (guint64) 1234567);
  g_variant_dict_insert (&d, "last-save-ioctls", "u", 3);
  g_variant_dict_insert (&d, "last-save-via", "s", "batch");
  g_variant_dict_insert (&d, "last-load-ns", "t", (guint64) 0);
  g_variant_dict_insert (&d, "last-load-ioctls", "u", 0);
  g_variant_dict_insert (&d, "last-load-via", "s", "");
  g_variant_dict_insert (&d, "attached-usec", "t", (guint64) g_get_real_time ());
  return g_variant_dict_end (&d);
}

static gboolean
on_sigterm (gpointer loop)
{
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

static gboolean
on_sigusr1 (gpointer data)
{
  VgicdDaemon *d = data;

  d->kernel_batch = 1;
  g_free (d->kernel_batch_source);
  d->kernel_batch_source = g_strdup ("executor of VM vm-0");
  vgicd_daemon_changed (d);
  return G_SOURCE_CONTINUE;
}

int
main (int argc, char **argv)
{
  g_autofree char *config_path = NULL;
  g_autofree char *state_path = NULL;
  g_autoptr (GOptionContext) ctx = g_option_context_new (NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (GDBusConnection) bus = NULL;
  g_autoptr (GMainLoop) loop = NULL;
  VgicdManager *manager;
  VgicdDaemon d = { 0 };
  int nr_sessions = 0, fill_history = 0;
  GOptionEntry entries[] = {
    { "config", 0, 0, G_OPTION_ARG_FILENAME, &config_path, "config file", "FILE" },
    { "state", 0, 0, G_OPTION_ARG_FILENAME, &state_path, "state file", "FILE" },
    { "sessions", 0, 0, G_OPTION_ARG_INT, &nr_sessions, "fake sessions", "N" },
    { "fill-history", 0, 0, G_OPTION_ARG_INT, &fill_history,
      "fill a history of the configured History= and HistoryVMs= with N operations, "
      "History= per VM, each with a message of the longest kept", "N" },
    { NULL }
  };

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    {
      g_printerr ("standin: %s\n", error->message);
      return 2;
    }

  d.config = vgicd_config_load (config_path, &error);
  if (d.config && !vgicd_config_load_state (d.config, state_path, &error))
    g_clear_pointer (&d.config, vgicd_config_free);
  if (!d.config)
    {
      g_printerr ("standin: %s\n", error->message);
      return 1;
    }
  d.mode = d.config->mode;
  d.kernel_batch = -1;
  d.kernel_batch_source = g_strdup ("test stand-in");
  d.start_usec = g_get_monotonic_time ();
  d.start_real_usec = g_get_real_time ();
  d.sessions = g_ptr_array_new_with_free_func (session_free);
  for (int i = 0; i < nr_sessions; i++)
    {
      VgicdSession *s = g_new0 (VgicdSession, 1);

      /* A quote and a backslash, so that --json has something to escape. */
      s->name = g_strdup_printf ("vm-%d \"q\\t\"", i);
      s->uuid = g_strdup_printf ("00000000-0000-4000-8000-%012d", i);
      s->vcpus = 4 << i;
      g_ptr_array_add (d.sessions, s);
    }
  /* A history as real migrations leave it: a VM gone since (its batched
   * save, estimated from the one-by-one save before it), and a refused
   * load of the first fake session's VM. */
  d.history = fill_history ? vgicd_history_new (d.config->history, d.config->history_vms)
                           : vgicd_history_new (4, 8);
  for (int i = 0; i < fill_history; i++)
    {
      g_autofree char *uuid = g_strdup_printf ("00000000-0000-4000-8000-%012u",
                                               i / MAX (d.config->history, 1));
      g_autofree char *name = g_strdup_printf ("filler-%064u", i / MAX (d.config->history, 1));
      g_autofree char *message = g_strnfill (300, 'm');
      VgicdOp op = { .when_usec = 1764763200000000 + i, .direction = "save", .path = "batch",
                     .stream = "record", .outcome = VGICD_OUTCOME_FAILED,
                     .duration_ns = 3100000, .kernel_ns = 1200000, .ioctls = 2,
                     .registers = 7175, .bytes = 134896, .vcpus = 160 };

      vgicd_history_add (d.history, uuid, name, &op, message);
    }
  if (nr_sessions)
    {
      VgicdOp single = { .when_usec = 1764763200000000, .direction = "save", .path = "single",
                         .stream = "record", .outcome = VGICD_OUTCOME_OK,
                         .duration_ns = 182000000, .kernel_ns = 180000000, .ioctls = 7175,
                         .registers = 7175, .bytes = 134896, .vcpus = 160 };
      VgicdOp batch = single, refused = single;

      vgicd_history_estimate (d.history, &single);
      vgicd_history_add (d.history, "00000000-0000-4000-8000-00000000gone", "gone-vm", &single,
                         NULL);
      batch.when_usec += 60 * G_USEC_PER_SEC;
      batch.path = "batch";
      batch.duration_ns = 3100000;
      batch.kernel_ns = 1200000;
      batch.ioctls = 2;
      vgicd_history_estimate (d.history, &batch);
      vgicd_history_add (d.history, "00000000-0000-4000-8000-00000000gone", "gone-vm", &batch,
                         NULL);
      refused.when_usec += 120 * G_USEC_PER_SEC;
      refused.direction = "load";
      refused.path = "-";
      refused.outcome = VGICD_OUTCOME_REFUSED;
      refused.ioctls = refused.registers = 0;
      refused.bytes = 0;
      refused.duration_ns = 400000;
      refused.kernel_ns = 0;
      vgicd_history_estimate (d.history, &refused);
      vgicd_history_add (d.history, "00000000-0000-4000-8000-000000000000", "vm-0 \"q\\t\"",
                         &refused, "record refused, nothing written: the record is for 4 vCPUs "
                         "but this VM has 8");
    }
  d.totals = (VgicdTotals) {
    .saves = 7, .loads = 5, .declined = 1, .fallbacks = 2, .failures = 1,
    .bytes_saved = 123456, .bytes_loaded = 65432, .sessions_total = 9,
    .refused = 3,
    .operations = {
      [VGICD_DIRECTION_SAVE] = { [VGICD_COUNT_OK] = 7, [VGICD_COUNT_DECLINED] = 1 },
      [VGICD_DIRECTION_LOAD] = { [VGICD_COUNT_OK] = 5, [VGICD_COUNT_REFUSED] = 1 },
    },
  };

  bus = g_bus_get_sync (G_BUS_TYPE_SYSTEM, NULL, &error);
  manager = bus ? vgicd_manager_new (&d, bus, &error) : NULL;
  if (!manager)
    {
      g_printerr ("standin: %s\n", error->message);
      g_ptr_array_unref (d.sessions);
      g_free (d.kernel_batch_source);
      vgicd_history_free (d.history);
      vgicd_config_free (d.config);
      return 1;
    }

  loop = g_main_loop_new (NULL, FALSE);
  g_unix_signal_add (SIGTERM, on_sigterm, loop);
  g_unix_signal_add (SIGUSR1, on_sigusr1, &d);
  g_main_loop_run (loop);

  vgicd_manager_free (manager);
  g_dbus_connection_flush_sync (bus, NULL, NULL);
  g_ptr_array_unref (d.sessions);
  g_free (d.kernel_batch_source);
  vgicd_history_free (d.history);
  vgicd_config_free (d.config);
  return 0;
}
