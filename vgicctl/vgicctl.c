/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicctl.c - the operator's command line for vgicd: the command table,
 * from which main() dispatches and the usage is written, and the commands
 * that ask vgicd over org.vgicd.Manager1 on the system bus (status, mode,
 * sessions, stats, history, metrics, check) or need no vgicd at all (dump, a
 * state record decoded locally).  enable|disable, which edit a libvirt
 * domain, are vgicctl-libvirt.c's; the JSON printer is vgicctl-json.c's,
 * status's readiness judgement vgicctl-state.c's.
 *
 * It is meant for shell scripts as much as for people: one exit code per
 * kind of failure, errors on stderr saying what failed and what to do, and
 * the plain answers (`vgicctl mode`, --json) on stdout with nothing else.
 * The command table is the one list of commands: the usage, `vgicctl
 * COMMAND --help` and the docs checks (tests/docs) all read it.  Each
 * command's options are parsed by a GOptionContext made from its own
 * GOptionEntry table and the options every command takes (--json, -q,
 * --no-pager, --help), so --opt=value, --opt value and -- work as they do
 * in every GLib tool, and a mistake prints that command's usage only.
 */
#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <gio/gio.h>
#include <gio/gunixinputstream.h>

#include "vgic-dump.h"
#include "vgic-qemu-fields.h"
#include "vgic-record.h"
#include "vgic-regs.h"
#include "vgicctl-stream.h"
#include "vgicctl-json.h"
#include "vgicctl-state.h"
#include "vgicctl.h"
#include "vgicd-config.h"
#include "vgicd/manager.h"

/* Long enough for a loaded host, short enough that a script does not hang. */
#define CALL_TIMEOUT_MS 15000

#define HINT_RUNNING "is vgicd running? systemctl status vgicd"

/* One command: what `vgicctl --help` lists (synopsis, summary), what
 * `vgicctl COMMAND --help` prints (GOptionContext's help: params, help and
 * the options) and what runs it. */
typedef struct {
  const char *name;
  const char *synopsis;	/* its own options and arguments, for the usage */
  const char *params;	/* its arguments, for --help's Usage: line */
  const char *summary;	/* a line or two for the usage; "\n" breaks a line */
  const char *help;
  const GOptionEntry *options;	/* its own (NULL: none); the common ones follow */
  guint max_args;	/* positional arguments it takes at most */
  int (*run) (const VgicctlCall *call);
} Command;

/* What every command also takes, as the usage and usage errors say it. */
#define COMMON_SYNOPSIS "[--json[=short|pretty]] [-q] [--no-pager]"

static const char *usage (void);

/* The command being run, once main() has found it: its usage errors print
 * its own synopsis rather than the whole usage. */
static const Command *current;

int
usage_error (const char *fmt, ...)
{
  g_autofree char *msg = NULL;
  va_list ap;

  va_start (ap, fmt);
  msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  if (!current)
    {
      fprintf (stderr, "vgicctl: %s\n\n%s", msg, usage ());
      return EXIT_USAGE;
    }
  fprintf (stderr, "vgicctl: %s: %s\nUsage: vgicctl %s " COMMON_SYNOPSIS "\n"
           "'vgicctl %s --help' describes it.\n", current->name, msg, current->synopsis,
           current->name);
  return EXIT_USAGE;
}

/* What the last failed call to vgicd said, in a few words, for status's
 * "reason" when vgicd is down (the full message went to stderr). */
static char *last_failure;

static void
note_failure (const char *fmt, ...) G_GNUC_PRINTF (1, 2);

static void
note_failure (const char *fmt, ...)
{
  va_list ap;

  va_start (ap, fmt);
  g_free (last_failure);
  last_failure = g_strdup_vprintf (fmt, ap);
  va_end (ap);
}

/* dbus_failure() - report a failed call with the exit status its kind has */
static int
dbus_failure (const char *what, GError *error)
{
  g_dbus_error_strip_remote_error (error);
  note_failure ("%s", error->message);

  if (g_error_matches (error, G_DBUS_ERROR, G_DBUS_ERROR_ACCESS_DENIED))
    {
      /* The bus's own refusal is a dump of the message header; say what it
       * means instead. */
      gboolean by_bus = g_str_has_prefix (error->message, "Rejected send message");

      /* The history and the metrics are also for group vgicd (the bus
       * policy, data/org.vgicd.Manager1.conf). */
      gboolean for_group = g_str_equal (what, "history") || g_str_equal (what, "metrics") ||
                           g_str_equal (what, "check");

      if (by_bus && for_group)
        fprintf (stderr, "vgicctl: %s: permission denied: the system bus policy lets "
                 "only root, user vgicd and members of group vgicd %s vgicd's %s.\n"
                 "Run it as root (for example with sudo), or add the user to group "
                 "vgicd (adduser USER vgicd) and log in again.\n", what,
                 g_str_equal (what, "check") ? "ask for" : "read",
                 g_str_equal (what, "check") ? "configuration check" : what);
      else
        fprintf (stderr, "vgicctl: %s: permission denied: %s\n"
                 "Run it as root (for example with sudo).\n", what,
                 by_bus ? "the system bus policy lets only root do this"
                        : error->message);
      return EXIT_DENIED;
    }
  if (g_error_matches (error, G_DBUS_ERROR, G_DBUS_ERROR_LIMITS_EXCEEDED))
    {
      /* vgicd's rate limit on one caller: its message says the rate. */
      fprintf (stderr, "vgicctl: %s: vgicd refused the call: %s\n", what, error->message);
      return EXIT_DBUS;
    }
  if (g_error_matches (error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS))
    {
      fprintf (stderr, "vgicctl: %s: %s\n", what, error->message);
      return EXIT_INPUT;
    }
  if (error->domain == G_IO_ERROR ||
      g_error_matches (error, G_DBUS_ERROR, G_DBUS_ERROR_SERVICE_UNKNOWN) ||
      g_error_matches (error, G_DBUS_ERROR, G_DBUS_ERROR_NAME_HAS_NO_OWNER) ||
      g_error_matches (error, G_DBUS_ERROR, G_DBUS_ERROR_NO_REPLY) ||
      g_error_matches (error, G_DBUS_ERROR, G_DBUS_ERROR_TIMEOUT) ||
      g_error_matches (error, G_DBUS_ERROR, G_DBUS_ERROR_DISCONNECTED) ||
      g_error_matches (error, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_OBJECT) ||
      g_error_matches (error, G_DBUS_ERROR, G_DBUS_ERROR_NO_SERVER))
    {
      fprintf (stderr, "vgicctl: %s: cannot reach vgicd (%s): %s\n", what,
               error->message, HINT_RUNNING);
      note_failure ("cannot reach vgicd: %s", error->message);
      return EXIT_DBUS;
    }
  /* Anything else is vgicd's own answer (a failed save, say): its message
   * already says what went wrong. */
  fprintf (stderr, "vgicctl: %s: %s\n", what, error->message);
  return EXIT_DBUS;
}

static GDBusConnection *
system_bus (const char *what, int *status)
{
  g_autoptr (GError) error = NULL;
  GDBusConnection *bus = g_bus_get_sync (G_BUS_TYPE_SYSTEM, NULL, &error);

  if (!bus)
    {
      /* No socket, or nobody listening on it: the bus is down, not vgicd
       * (which the bus would start). */
      if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND) ||
          g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CONNECTION_REFUSED))
        {
          fprintf (stderr, "vgicctl: %s: the system bus is not running (%s); "
                   "systemctl status dbus\n", what, error->message);
          note_failure ("the system bus is not running: %s", error->message);
        }
      else
        {
          fprintf (stderr, "vgicctl: %s: cannot connect to the system bus: %s; "
                   HINT_RUNNING "\n", what, error->message);
          note_failure ("cannot connect to the system bus: %s", error->message);
        }
      *status = EXIT_DBUS;
    }
  return bus;
}

/* call() - one method call to vgicd; on failure the error is reported and
 * *status set */
static GVariant *
call (const char *what, const char *iface, const char *method, GVariant *params,
      const char *reply_type, int *status)
{
  g_autoptr (GDBusConnection) bus = system_bus (what, status);
  g_autoptr (GError) error = NULL;
  GVariant *reply;

  if (!bus)
    {
      if (params)
        g_variant_unref (g_variant_ref_sink (params));
      return NULL;
    }
  /* The bus may start vgicd for the call (D-Bus activation: it has
   * systemd start vgicd.service, data/org.vgicd.Manager1.service), so
   * vgicctl answers on a host where no QEMU has connected yet. */
  reply = g_dbus_connection_call_sync (bus, VGICD_MANAGER_NAME, VGICD_MANAGER_PATH, iface,
                                       method, params, G_VARIANT_TYPE (reply_type),
                                       G_DBUS_CALL_FLAGS_NONE, CALL_TIMEOUT_MS, NULL, &error);
  if (!reply)
    *status = dbus_failure (what, error);
  return reply;
}

/*
 * call_list() - a Manager1 method that answers one aa{sv}; with @json it is
 * printed as a JSON array here.  Returns the list for the caller to print,
 * or NULL when there is nothing more to do: *status then says why (EXIT_OK
 * once the JSON is printed).
 */
static GVariant *
call_list (const char *what, const char *method, GVariant *params, VgicctlJson json,
           int *status)
{
  g_autoptr (GVariant) reply = call (what, VGICD_MANAGER_INTERFACE, method, params, "(aa{sv})",
                                     status);
  g_autoptr (GVariant) list = NULL;
  g_autoptr (JsonNode) node = NULL;

  if (!reply)
    return NULL;
  list = g_variant_get_child_value (reply, 0);
  if (!json)
    return g_steal_pointer (&list);
  node = vgicctl_json_from_variant (list);
  vgicctl_json_print (node, json);
  *status = EXIT_OK;
  return NULL;
}

/* get_all() - every Manager1 property, as an a{sv} dictionary */
static GVariantDict *
get_all (const char *what, int *status)
{
  g_autoptr (GVariant) reply = NULL;
  g_autoptr (GVariant) props = NULL;

  reply = call (what, "org.freedesktop.DBus.Properties", "GetAll",
                g_variant_new ("(s)", VGICD_MANAGER_INTERFACE), "(a{sv})", status);
  if (!reply)
    return NULL;
  props = g_variant_get_child_value (reply, 0);
  return g_variant_dict_new (props);
}

static GVariantDict *
get_stats (const char *what, int *status)
{
  g_autoptr (GVariant) reply = NULL;
  g_autoptr (GVariant) stats = NULL;

  reply = call (what, VGICD_MANAGER_INTERFACE, "GetStats", NULL, "(a{sv})", status);
  if (!reply)
    return NULL;
  stats = g_variant_get_child_value (reply, 0);
  return g_variant_dict_new (stats);
}

static const char *
dict_str (GVariantDict *d, const char *key)
{
  const char *s = NULL;

  if (!g_variant_dict_lookup (d, key, "&s", &s))
    return "?";
  return s;
}

static guint64
dict_u64 (GVariantDict *d, const char *key)
{
  guint64 v = 0;

  g_variant_dict_lookup (d, key, "t", &v);
  return v;
}

static guint32
dict_u32 (GVariantDict *d, const char *key)
{
  guint32 v = 0;

  g_variant_dict_lookup (d, key, "u", &v);
  return v;
}

static char *
format_duration_usec (guint64 usec)
{
  guint64 s = usec / G_USEC_PER_SEC;

  if (s >= 86400)
    return g_strdup_printf ("%" G_GUINT64_FORMAT "d %uh %um", s / 86400,
                            (guint) (s % 86400 / 3600), (guint) (s % 3600 / 60));
  if (s >= 3600)
    return g_strdup_printf ("%uh %um %us", (guint) (s / 3600),
                            (guint) (s % 3600 / 60), (guint) (s % 60));
  if (s >= 60)
    return g_strdup_printf ("%um %us", (guint) (s / 60), (guint) (s % 60));
  return g_strdup_printf ("%us", (guint) s);
}

/* config_errors() - the errors CheckConfig finds in the files vgicd loads,
 * or -1 when vgicctl may not ask (the bus policy lets root and group vgicd
 * only) or vgicd did not answer: status works for everyone, and says
 * nothing of a check it could not make (stderr stays quiet about it). */
static int
config_errors (void)
{
  g_autoptr (GDBusConnection) bus = g_bus_get_sync (G_BUS_TYPE_SYSTEM, NULL, NULL);
  g_autoptr (GVariant) reply = NULL;
  g_autoptr (GVariant) list = NULL;
  GVariantIter it;
  const char *level;
  int n = 0;

  if (bus)
    reply = g_dbus_connection_call_sync (bus, VGICD_MANAGER_NAME, VGICD_MANAGER_PATH,
                                         VGICD_MANAGER_INTERFACE, "CheckConfig", NULL,
                                         G_VARIANT_TYPE ("(a(ssusss))"),
                                         G_DBUS_CALL_FLAGS_NONE, CALL_TIMEOUT_MS, NULL, NULL);
  if (!reply)
    return -1;
  list = g_variant_get_child_value (reply, 0);
  g_variant_iter_init (&it, list);
  while (g_variant_iter_next (&it, "(&ssusss)", &level, NULL, NULL, NULL, NULL, NULL))
    n += g_str_equal (level, "error");
  return n;
}

static void
add_dict_member (JsonBuilder *b, const char *name, GVariantDict *d)
{
  json_builder_set_member_name (b, name);
  if (d)
    {
      g_autoptr (GVariant) v = g_variant_ref_sink (g_variant_dict_end (d));

      json_builder_add_value (b, vgicctl_json_from_variant (v));
    }
  else
    json_builder_add_null_value (b);
}

/* cmd_status() - the state line (ok, degraded, down: vgicctl-state.c) and
 * what vgicd says of itself; down still prints the state (and the JSON)
 * and exits with the failed call's status */
static int
cmd_status (const VgicctlCall *c)
{
  g_autoptr (GVariantDict) props = NULL;
  g_autoptr (GVariantDict) stats = NULL;
  g_autofree char *uptime = NULL;
  g_autofree char *reason = NULL;
  const char *state = "down";
  const char *source;
  int status = EXIT_OK, errors = -1;

  if ((props = get_all ("status", &status)) && (stats = get_stats ("status", &status)))
    {
      errors = config_errors ();
      state = vgicctl_state_judge (props, errors, &reason);
    }
  else
    reason = g_strdup (last_failure ? last_failure : "vgicd did not answer");

  if (c->json)
    {
      g_autoptr (JsonBuilder) b = json_builder_new ();

      json_builder_begin_object (b);
      json_builder_set_member_name (b, "state");
      json_builder_add_string_value (b, state);
      json_builder_set_member_name (b, "reason");
      json_builder_add_string_value (b, reason);
      json_builder_set_member_name (b, "config-errors");
      if (errors >= 0)
        json_builder_add_int_value (b, errors);
      else
        json_builder_add_null_value (b);
      add_dict_member (b, "properties", props);
      add_dict_member (b, "stats", stats);
      json_builder_end_object (b);
      vgicctl_json_print_builder (b, c->json);
      return status;
    }
  /* -q: the exit status is the answer (0: vgicd answers). */
  if (c->quiet)
    return status;
  printf ("State:         %s (%s)\n", state, reason);
  if (!stats)
    return status;

  source = dict_str (props, "KernelBatchSource");
  uptime = format_duration_usec (dict_u64 (stats, "uptime-usec"));
  printf ("Mode:          %s\n", dict_str (props, "Mode"));
  printf ("Kernel batch:  %s%s%s%s\n", dict_str (props, "KernelBatch"),
          *source ? " (" : "", source, *source ? ")" : "");
  printf ("Version:       %s\n", dict_str (props, "Version"));
  printf ("Socket:        %s\n", dict_str (props, "Socket"));
  printf ("Config file:   %s\n", dict_str (props, "ConfigFile"));
  printf ("Uptime:        %s\n", uptime);
  printf ("Sessions:      %u attached, %" G_GUINT64_FORMAT " since start, %"
          G_GUINT64_FORMAT " peers refused\n", dict_u32 (stats, "sessions"),
          dict_u64 (stats, "sessions-total"), dict_u64 (stats, "refused"));
  printf ("Totals:        %" G_GUINT64_FORMAT " saves, %" G_GUINT64_FORMAT
          " loads, %" G_GUINT64_FORMAT " declined, %" G_GUINT64_FORMAT
          " fallbacks, %" G_GUINT64_FORMAT " failures\n",
          dict_u64 (stats, "saves"), dict_u64 (stats, "loads"),
          dict_u64 (stats, "declined"), dict_u64 (stats, "fallbacks"),
          dict_u64 (stats, "failures"));
  printf ("Stream:        %" G_GUINT64_FORMAT " saves and %" G_GUINT64_FORMAT
          " loads as a state record, the rest as QEMU's own fields\n",
          dict_u64 (stats, "record-saves"), dict_u64 (stats, "record-loads"));
  return EXIT_OK;
}

/* mode's own option */
static gboolean opt_runtime;
static const GOptionEntry mode_options[] = {
  { "runtime", 0, 0, G_OPTION_ARG_NONE, &opt_runtime,
    "Change the mode until vgicd restarts or reloads, not in its state file", NULL },
  { NULL }
};

/* print_mode_json() - {"mode": MODE} and, for a change, "saved" */
static void
print_mode_json (VgicctlJson json, const char *mode, gboolean changed, gboolean saved)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();

  json_builder_begin_object (b);
  json_builder_set_member_name (b, "mode");
  json_builder_add_string_value (b, mode);
  if (changed)
    {
      json_builder_set_member_name (b, "saved");
      json_builder_add_boolean_value (b, saved);
    }
  json_builder_end_object (b);
  vgicctl_json_print_builder (b, json);
}

static int
cmd_mode (const VgicctlCall *c)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GVariant) reply = NULL;
  VgicdMode mode;
  int status;

  if (c->n_args == 0)
    {
      g_autoptr (GVariantDict) props = NULL;

      if (opt_runtime)
        return usage_error ("--runtime needs a mode to set");
      if (!(props = get_all ("mode", &status)))
        return status;
      /* The mode is the answer: printed with -q too. */
      if (c->json)
        print_mode_json (c->json, dict_str (props, "Mode"), FALSE, FALSE);
      else
        printf ("%s\n", dict_str (props, "Mode"));
      return EXIT_OK;
    }

  /* Checked here too, so a typo is a usage error even when vgicd is down. */
  if (!vgicd_mode_from_string (c->args[0], &mode, &error))
    return usage_error ("%s", error->message);

  reply = call ("mode", VGICD_MANAGER_INTERFACE, "SetMode",
                g_variant_new ("(sb)", vgicd_mode_to_string (mode), !opt_runtime),
                "()", &status);
  if (!reply)
    return status;

  if (c->json)
    print_mode_json (c->json, vgicd_mode_to_string (mode), TRUE, !opt_runtime);
  else if (c->quiet)
    ;
  else if (opt_runtime)
    printf ("Mode is now %s, until vgicd restarts or reloads.\n", vgicd_mode_to_string (mode));
  else
    printf ("Mode is now %s, saved in vgicd's state file.\n",
            vgicd_mode_to_string (mode));
  return EXIT_OK;
}

/* "12.345 ms/3/batch/fields", or "-" for an operation never run */
static char *
format_last (GVariantDict *s, const char *op, guint64 count)
{
  g_autofree char *ns_key = g_strdup_printf ("last-%s-ns", op);
  g_autofree char *ioctls_key = g_strdup_printf ("last-%s-ioctls", op);
  g_autofree char *via_key = g_strdup_printf ("last-%s-via", op);
  g_autofree char *stream_key = g_strdup_printf ("last-%s-stream", op);
  guint64 ns = dict_u64 (s, ns_key);

  if (count == 0 && ns == 0)
    return g_strdup ("-");
  return g_strdup_printf ("%.3f ms/%u/%s/%s", ns / 1e6, dict_u32 (s, ioctls_key),
                          dict_str (s, via_key), dict_str (s, stream_key));
}

static int
cmd_sessions (const VgicctlCall *c)
{
  g_autoptr (GVariant) list = NULL;
  int status;
  gsize n;

  if (!(list = call_list ("sessions", "ListSessions", NULL, c->json, &status)))
    return status;
  n = g_variant_n_children (list);

  if (n == 0)
    {
      if (!c->quiet)
        printf ("No VM is attached to vgicd.\n");
      return EXIT_OK;
    }

  printf ("%-20s %-36s %5s %-6s %11s  %-32s %-32s\n", "NAME", "UUID", "VCPUS", "MODE",
          "SAVES/LOADS", "LAST SAVE (ms/ioctls/via/stream)",
          "LAST LOAD (ms/ioctls/via/stream)");
  for (gsize i = 0; i < n; i++)
    {
      g_autoptr (GVariant) entry = g_variant_get_child_value (list, i);
      g_autoptr (GVariantDict) s = g_variant_dict_new (entry);
      guint64 saves = dict_u64 (s, "saves"), loads = dict_u64 (s, "loads");
      g_autofree char *last_save = format_last (s, "save", saves);
      g_autofree char *last_load = format_last (s, "load", loads);
      g_autofree char *counts = g_strdup_printf ("%" G_GUINT64_FORMAT "/%"
                                                 G_GUINT64_FORMAT, saves, loads);

      printf ("%-20s %-36s %5u %-6s %11s  %-32s %-32s\n", dict_str (s, "name"),
              dict_str (s, "uuid"), dict_u32 (s, "vcpus"), dict_str (s, "mode"), counts,
              last_save, last_load);
    }
  /* Where a VM's mode is not the host's, say what set it. */
  for (gsize i = 0; i < n; i++)
    {
      g_autoptr (GVariant) entry = g_variant_get_child_value (list, i);
      g_autoptr (GVariantDict) s = g_variant_dict_new (entry);
      const char *source = NULL;

      if (g_variant_dict_lookup (s, "mode-source", "&s", &source) &&
          strcmp (source, "host") != 0)
        printf ("  %s: mode %s, set by %s\n", dict_str (s, "name"), dict_str (s, "mode"),
                source);
    }
  return EXIT_OK;
}

/* print_stat() - one host total of GetStats as `vgicctl stats` shows it;
 * nothing for a value that is no number (--json alone shows those) */
static void
print_stat (const char *name, GVariant *v)
{
  g_autofree char *key = g_strconcat (name, ":", NULL);

  if (g_variant_is_of_type (v, G_VARIANT_TYPE_UINT64))
    printf ("%-16s %" G_GUINT64_FORMAT "\n", key, g_variant_get_uint64 (v));
  else if (g_variant_is_of_type (v, G_VARIANT_TYPE_UINT32))
    printf ("%-16s %u\n", key, g_variant_get_uint32 (v));
}

static int
cmd_stats (const VgicctlCall *c)
{
  /* The order people read them in; a number vgicd sends that is not here
   * follows them, so that a new total is never left out.  --json prints
   * whatever vgicd sends. */
  static const char *const keys[] = {
    "saves", "loads", "record-saves", "record-loads", "declined", "fallbacks",
    "foreign-batch", "second-rounds", "failures", "bytes-saved",
    "bytes-loaded", "sessions", "sessions-total", "refused", "accept-pauses", "peers-closed",
    "log-suppressed", "manager-refused", "manager-dropped", "uptime-usec", NULL
  };
  g_autoptr (GVariant) reply = NULL;
  g_autoptr (GVariant) stats = NULL;
  GVariantIter iter;
  const char *name;
  GVariant *v;
  int status;

  if (!(reply = call ("stats", VGICD_MANAGER_INTERFACE, "GetStats", NULL, "(a{sv})", &status)))
    return status;
  stats = g_variant_get_child_value (reply, 0);

  if (c->json)
    {
      g_autoptr (JsonNode) node = vgicctl_json_from_variant (stats);

      vgicctl_json_print (node, c->json);
      return EXIT_OK;
    }

  for (gsize i = 0; keys[i]; i++)
    {
      g_autoptr (GVariant) value = g_variant_lookup_value (stats, keys[i], NULL);

      if (value)
        print_stat (keys[i], value);
    }
  g_variant_iter_init (&iter, stats);
  while (g_variant_iter_next (&iter, "{&sv}", &name, &v))
    {
      if (!g_strv_contains (keys, name))
        print_stat (name, v);
      g_variant_unref (v);
    }
  return EXIT_OK;
}

/* "2026-12-03 11:52:07.123456" in local time, from CLOCK_REALTIME µs */
static char *
format_when (guint64 usec)
{
  g_autoptr (GDateTime) s = g_date_time_new_from_unix_local ((gint64) (usec / G_USEC_PER_SEC));
  g_autoptr (GDateTime) t = s ? g_date_time_add (s, (GTimeSpan) (usec % G_USEC_PER_SEC)) : NULL;

  return t ? g_date_time_format (t, "%Y-%m-%d %H:%M:%S.%f") : g_strdup ("?");
}

static int
cmd_history (const VgicctlCall *c)
{
  const char *vm = c->args[0];
  g_autoptr (GVariant) list = NULL;
  int status;
  gsize n;

  if (!(list = call_list ("history", "GetHistory",
                          g_variant_new ("(su)", vm ? vm : "", 0), c->json, &status)))
    return status;
  n = g_variant_n_children (list);
  if (n == 0)
    {
      if (!c->quiet)
        printf (vm ? "vgicd has no operation of %s.\n"
                   : "vgicd has no operation kept%s (it keeps them from its start).\n",
                vm ? vm : "");
      return EXIT_OK;
    }
  printf ("%-26s %-20s %-4s %-6s %-6s %-8s %9s %6s %6s %8s %12s\n", "WHEN", "VM", "OP",
          "PATH", "STREAM", "OUTCOME", "MS", "IOCTLS", "REGS", "BYTES", "1-BY-1 MS");
  for (gsize i = 0; i < n; i++)
    {
      g_autoptr (GVariant) entry = g_variant_get_child_value (list, i);
      g_autoptr (GVariantDict) d = g_variant_dict_new (entry);
      g_autofree char *when = format_when (dict_u64 (d, "when-usec"));
      g_autofree char *single = NULL;
      guint64 single_ns = dict_u64 (d, "single-ns");
      gboolean estimated = FALSE;
      const char *message = NULL;

      g_variant_dict_lookup (d, "single-estimated", "b", &estimated);
      single = single_ns ? g_strdup_printf ("%s%.1f", estimated ? "~" : "", single_ns / 1e6)
                         : g_strdup ("-");
      printf ("%-26s %-20s %-4s %-6s %-6s %-8s %9.3f %6u %6u %8" G_GUINT64_FORMAT " %12s\n",
              when, dict_str (d, "vm"), dict_str (d, "direction"), dict_str (d, "path"),
              dict_str (d, "stream"), dict_str (d, "outcome"),
              dict_u64 (d, "duration-ns") / 1e6, dict_u32 (d, "ioctls"),
              dict_u32 (d, "registers"), dict_u64 (d, "bytes"), single);
      if (g_variant_dict_lookup (d, "message", "&s", &message))
        printf ("    %s\n", message);
    }
  if (!c->quiet)
    printf ("(1-BY-1 MS: what the same operation costs one register per ioctl; \"~\" marks\n"
            " an estimate from this host's measured one-by-one cost, \"-\" not measured yet)\n");
  return EXIT_OK;
}

static int
cmd_metrics (const VgicctlCall *c)
{
  g_autoptr (GVariant) reply = NULL;
  g_autoptr (JsonNode) node = NULL;
  g_autoptr (GError) error = NULL;
  const char *text;
  int status;

  if (!(reply = call ("metrics", VGICD_MANAGER_INTERFACE, "GetMetrics", NULL, "(s)", &status)))
    return status;
  g_variant_get (reply, "(&s)", &text);
  if (!c->json)
    {
      fputs (text, stdout);
      return EXIT_OK;
    }
  if (!(node = vgicctl_json_from_exposition (text, &error)))
    {
      fprintf (stderr, "vgicctl: metrics: %s\n", error->message);
      return EXIT_DBUS;
    }
  vgicctl_json_print (node, c->json);
  return EXIT_OK;
}

/* cmd_check() - the configuration's problems, as the running vgicd finds
 * them in the files it loads (Manager1.CheckConfig), one a line as
 * `vgicd --check-config` prints them; status 3 when one is an error */
static int
cmd_check (const VgicctlCall *c)
{
  g_autoptr (GVariant) reply = NULL;
  g_autoptr (GVariant) list = NULL;
  GVariantBuilder b;
  GVariantIter it;
  const char *level, *file, *group, *key, *message;
  guint line, errors = 0;
  int status;

  if (!(reply = call ("check", VGICD_MANAGER_INTERFACE, "CheckConfig", NULL, "(a(ssusss))",
                      &status)))
    return status;
  list = g_variant_get_child_value (reply, 0);
  g_variant_builder_init (&b, G_VARIANT_TYPE ("aa{sv}"));
  g_variant_iter_init (&it, list);
  while (g_variant_iter_next (&it, "(&s&su&s&s&s)", &level, &file, &line, &group, &key,
                              &message))
    {
      errors += g_str_equal (level, "error");
      if (c->json)
        {
          GVariantBuilder o;

          g_variant_builder_init (&o, G_VARIANT_TYPE_VARDICT);
          g_variant_builder_add (&o, "{sv}", "level", g_variant_new_string (level));
          g_variant_builder_add (&o, "{sv}", "file", g_variant_new_string (file));
          g_variant_builder_add (&o, "{sv}", "line", g_variant_new_uint32 (line));
          g_variant_builder_add (&o, "{sv}", "group", g_variant_new_string (group));
          g_variant_builder_add (&o, "{sv}", "key", g_variant_new_string (key));
          g_variant_builder_add (&o, "{sv}", "message", g_variant_new_string (message));
          g_variant_builder_add_value (&b, g_variant_builder_end (&o));
        }
      else if (line)
        printf ("%s:%u: %s: %s\n", file, line, level, message);
      else
        printf ("%s: %s: %s\n", file, level, message);
    }
  if (c->json)
    {
      g_autoptr (GVariant) all = g_variant_ref_sink (g_variant_builder_end (&b));
      g_autoptr (JsonNode) node = vgicctl_json_from_variant (all);

      vgicctl_json_print (node, c->json);
    }
  else
    g_variant_builder_clear (&b);
  return errors ? EXIT_INPUT : EXIT_OK;
}

/* read_all() - the whole of @path, or of stdin for "-".  A file is
 * mapped, not read: a `virsh save` image is the guest's RAM, gigabytes,
 * of which the stream reader touches the pages it scans. */
static GBytes *
read_all (const char *path, GError **error)
{
  g_autoptr (GInputStream) in = NULL;
  g_autoptr (GOutputStream) out = NULL;

  if (!g_str_equal (path, "-"))
    {
      g_autoptr (GMappedFile) map = g_mapped_file_new (path, FALSE, NULL);
      char *data;
      gsize len;

      if (map)
        return g_mapped_file_get_bytes (map);
      /* Not mappable (a pipe, a device): read it. */
      if (!g_file_get_contents (path, &data, &len, error))
        return NULL;
      return g_bytes_new_take (data, len);
    }
  in = g_unix_input_stream_new (STDIN_FILENO, FALSE);
  out = g_memory_output_stream_new_resizable ();
  if (g_output_stream_splice (out, in, G_OUTPUT_STREAM_SPLICE_CLOSE_TARGET,
                              NULL, error) < 0)
    return NULL;
  return g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (out));
}

/* What a dump shows, from a record or from a stream's fields. */
typedef struct {
  const char *source;		/* "record" or "qemu-fields" */
  guint version;		/* the record's format version; 0 for fields */
  gboolean routes;
  const VgicShape *shape;
  const VgicValues *values;
  const VgicctlStream *stream;	/* where it was found, or NULL (a bare record) */
} DumpWhat;

/* dump_json() - the decoded state for scripts: where it comes from, its
 * shape and every register it holds.  Attrs and values are hex strings,
 * since they are 64-bit and a JSON number is exact to 2^53 only in most
 * readers; the per-IRQ table stays the text's (vgic-dump.c). */
static void
dump_json (const DumpWhat *w, VgicctlJson json)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();

  json_builder_begin_object (b);
  json_builder_set_member_name (b, "source");
  json_builder_add_string_value (b, w->source);
  json_builder_set_member_name (b, "stream");
  if (!w->stream)
    json_builder_add_null_value (b);
  else
    {
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "container");
      json_builder_add_string_value (b, w->stream->container);
      json_builder_set_member_name (b, "machine");
      if (w->stream->machine)
        json_builder_add_string_value (b, w->stream->machine);
      else
        json_builder_add_null_value (b);
      json_builder_set_member_name (b, "section-id");
      json_builder_add_int_value (b, w->stream->section_id);
      json_builder_set_member_name (b, "offset");
      json_builder_add_int_value (b, (gint64) w->stream->offset);
      json_builder_end_object (b);
    }
  json_builder_set_member_name (b, "version");
  json_builder_add_int_value (b, w->version);
  json_builder_set_member_name (b, "routes");
  json_builder_add_boolean_value (b, w->routes);
  json_builder_set_member_name (b, "nr-irqs");
  json_builder_add_int_value (b, w->shape->nr_irqs);
  json_builder_set_member_name (b, "vcpus");
  json_builder_begin_array (b);
  for (guint i = 0; i < w->shape->nr_vcpus; i++)
    {
      g_autofree char *mpidr = g_strdup_printf ("0x%08x", w->shape->mpidrs[i]);

      json_builder_begin_object (b);
      json_builder_set_member_name (b, "index");
      json_builder_add_int_value (b, i);
      json_builder_set_member_name (b, "affinity");
      json_builder_add_string_value (b, mpidr);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_set_member_name (b, "registers");
  json_builder_begin_array (b);
  for (gsize i = 0; i < vgic_values_size (w->values); i++)
    {
      const VgicEntry *e = vgic_values_at (w->values, i);
      g_autofree char *attr = g_strdup_printf ("0x%016" G_GINT64_MODIFIER "x", (guint64) e->attr);
      g_autofree char *value = g_strdup_printf ("0x%016" G_GINT64_MODIFIER "x",
                                                (guint64) e->value);

      json_builder_begin_object (b);
      json_builder_set_member_name (b, "group");
      json_builder_add_string_value (b, vgic_group_name (e->group));
      json_builder_set_member_name (b, "attr");
      json_builder_add_string_value (b, attr);
      json_builder_set_member_name (b, "value");
      json_builder_add_string_value (b, value);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_end_object (b);
  vgicctl_json_print_builder (b, json);
}

/* dump's own options */
static gboolean opt_all_irqs;
static gint opt_irqs;
static const GOptionEntry dump_options[] = {
  { "all-irqs", 0, 0, G_OPTION_ARG_NONE, &opt_all_irqs,
    "One row per SPI, the quiet ones too (the table only)", NULL },
  { "irqs", 0, 0, G_OPTION_ARG_INT, &opt_irqs,
    "The VM's IRQ count, for QEMU's fields in a stream of another machine than virt", "N" },
  { NULL }
};

/* dump_show() - the table, or the JSON */
static int
dump_show (const DumpWhat *w, const char *title, VgicDumpFlags flags, VgicctlJson json)
{
  g_autofree char *text = NULL;

  if (json)
    {
      dump_json (w, json);
      return EXIT_OK;
    }
  text = vgic_dump_state (w->shape, w->values, w->routes, title, flags);
  fputs (text, stdout);
  return EXIT_OK;
}

/* The IRQ count of a stream's VM: the stream does not carry it (QEMU takes
 * it from the destination's configuration).  QEMU's virt machine has 256
 * SPIs at every version; any other needs --irqs. */
#define VIRT_NR_IRQS (256 + 32)

/* dump_stream() - `vgicctl dump` of a migration stream: vgicd's record when
 * the stream carries one, QEMU's own fields otherwise, each in a record
 * dump's form, under a line that says where they come from. */
static int
dump_stream (const char *name, const guint8 *data, gsize len, guint nr_irqs,
             VgicDumpFlags flags, VgicctlJson json)
{
  g_auto (VgicctlStream) s = { 0 };
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicRecord) record = NULL;
  g_autoptr (VgicShape) shape = NULL;
  g_autoptr (VgicValues) values = NULL;
  g_autofree char *title = NULL;
  DumpWhat w = { .stream = &s };

  if (!vgicctl_stream_read (data, len, &s, &error))
    {
      fprintf (stderr, "vgicctl: dump: %s: %s\n", name, error->message);
      return EXIT_INPUT;
    }
  if (!json)
    printf ("%s, %s%s%s: arm_gicv3 section %u at byte %" G_GSIZE_FORMAT ", %u vCPUs, %s\n\n",
          name, s.container, s.machine ? ", machine " : "", s.machine ? s.machine : "",
          s.section_id, s.offset, s.gic->nr_cpus,
          s.record ? "with vgicd's state record (Record=true)"
                   : "QEMU's own fields (no vgicd record)");
  if (s.record)
    {
      record = vgic_record_decode (s.record, s.record_len, &error);
      if (!record)
        {
          fprintf (stderr, "vgicctl: dump: %s: its vgicd record is not valid: %s\n", name,
                   error->message);
          return EXIT_INPUT;
        }
      title = g_strdup_printf ("vGIC state record, format version %u", record->version);
      w = (DumpWhat) { "record", record->version, record->routes, record->shape, record->values,
                       &s };
      return dump_show (&w, title, flags, json);
    }
  if (!nr_irqs)
    {
      if (!s.machine || !g_str_has_prefix (s.machine, "virt"))
        {
          fprintf (stderr, "vgicctl: dump: %s: the stream does not say how many IRQs the "
                   "VM has (machine %s): give --irqs N\n", name, s.machine ? s.machine : "unknown");
          return EXIT_USAGE;
        }
      nr_irqs = VIRT_NR_IRQS;
    }
  if (!(shape = vgic_shape_new (nr_irqs, s.gic->nr_cpus, NULL, &error)) ||
      !(values = vgic_qemu_fields_values (s.gic, shape, &error)))
    {
      fprintf (stderr, "vgicctl: dump: %s: %s\n", name, error->message);
      return EXIT_INPUT;
    }
  title = g_strdup_printf ("vGIC state from QEMU's own fields, as its load writes them "
                           "(%u IRQs%s; vCPU affinities KVM's default)", nr_irqs,
                           s.machine && g_str_has_prefix (s.machine, "virt") && nr_irqs == VIRT_NR_IRQS
                           ? ", the virt machine's" : "");
  w = (DumpWhat) { "qemu-fields", 0, FALSE, shape, values, &s };
  return dump_show (&w, title, flags | VGIC_DUMP_QEMU_FIELDS, json);
}

static int
cmd_dump (const VgicctlCall *c)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) bytes = NULL;
  g_autoptr (VgicRecord) record = NULL;
  g_autofree char *text = NULL;
  const char *path = c->args[0];
  const char *name;
  gsize len;

  if (!path)
    return usage_error ("which record? Give a file, or - for standard input");
  name = g_str_equal (path, "-") ? "standard input" : path;

  if (!(bytes = read_all (path, &error)))
    {
      fprintf (stderr, "vgicctl: dump: cannot read %s: %s\n", name, error->message);
      return EXIT_INPUT;
    }
  if (opt_irqs < 0)
    return usage_error ("--irqs %d: a number of IRQs, 64 to 1020", opt_irqs);
  if (vgicctl_stream_detect (g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes)))
    return dump_stream (name, g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes),
                        (guint) opt_irqs, opt_all_irqs ? VGIC_DUMP_ALL_IRQS : VGIC_DUMP_NONE,
                        c->json);
  record = vgic_record_decode (g_bytes_get_data (bytes, &len),
                               g_bytes_get_size (bytes), &error);
  if (!record)
    {
      fprintf (stderr, "vgicctl: dump: %s is not a valid vGIC state record: %s\n",
               name, error->message);
      return EXIT_INPUT;
    }
  {
    DumpWhat w = { "record", record->version, record->routes, record->shape, record->values,
                   NULL };

    text = g_strdup_printf ("vGIC state record, format version %u", record->version);
    return dump_show (&w, text, opt_all_irqs ? VGIC_DUMP_ALL_IRQS : VGIC_DUMP_NONE, c->json);
  }
}

static const Command commands[] = {
  { "status", "status", NULL,
    "vgicd's state (ok, degraded, down), mode, kernel\n"
    "batch support, sessions, totals",
    "Show whether vgicd is ok, degraded or down, and why; its mode, whether\n"
    "the kernel has the vGIC batch group (and how that is known), its\n"
    "version, socket and configuration file, the number of attached VMs and\n"
    "short host totals.  Degraded: mode off, mode auto on a kernel without\n"
    "the batch group, or errors in the files vgicd loads (checked when the\n"
    "caller may ask: root, group vgicd).  Down: vgicd cannot be reached\n"
    "(exit status 2, the state still printed).  --json prints one object:\n"
    "state, reason, config-errors, properties (Manager1's) and stats (as\n"
    "stats --json).  -q prints nothing: the exit status says whether vgicd\n"
    "answers.\n",
    NULL, 0, cmd_status },
  { "mode", "mode [auto|single|off [--runtime]]", "[auto|single|off]",
    "print the mode (auto, single or off), or change it\n"
    "(root only): saved in vgicd's state file unless\n"
    "--runtime",
    "Without an argument, print the mode.  With one, change it (root only):\n"
    "  auto    batch when the kernel has it, else one register per ioctl\n"
    "  single  never batch\n"
    "  off     decline saves (QEMU uses its own path); loads are still served\n"
    "The new mode is saved in vgicd's state file (/var/lib/vgicd/state.conf),\n"
    "where it wins over Mode= of vgicd.conf, unless --runtime is given, in\n"
    "which case it lasts until vgicd restarts or reloads.  --json prints\n"
    "{\"mode\"}, and \"saved\" for a change; -q leaves out the confirmation.\n",
    mode_options, 1, cmd_mode },
  { "sessions", "sessions", NULL,
    "the VMs attached to vgicd",
    "List the attached VMs: name, uuid, vCPUs, saves/loads, and the last save\n"
    "and load (milliseconds, ioctls, batch or single).  --json prints every\n"
    "key vgicd sends, as an array.\n",
    NULL, 0, cmd_sessions },
  { "stats", "stats", NULL,
    "host totals since vgicd started",
    "Print the host totals since vgicd started: saves, loads, declined saves,\n"
    "fallbacks to one-by-one, failures, bytes, sessions, refused and closed\n"
    "peers, and uptime, one per line.  --json prints every key vgicd sends\n"
    "as one JSON object, the duration histograms included.\n",
    NULL, 0, cmd_stats },
  { "history", "history [VM]", "[VM]",
    "the last saves and loads, also of VMs gone",
    "The last saves and loads vgicd ran, oldest first, also of VMs whose QEMU\n"
    "has gone (a migration source's, once its migration completed): when,\n"
    "VM, direction, path, stream, outcome, milliseconds, ioctls, registers,\n"
    "record bytes, and what the same operation costs one register per ioctl\n"
    "(measured, or estimated from this host's one-by-one operations).  VM: a\n"
    "UUID or a name.  vgicd keeps History= operations of HistoryVMs= VMs, in\n"
    "memory (vgicd.conf(5)).  --json prints a JSON array.\n",
    NULL, 1, cmd_history },
  { "metrics", "metrics", NULL,
    "the figures in Prometheus text format",
    "Print vgicd's counters and duration histograms in the Prometheus text\n"
    "format: what MetricsTextfile= writes for node_exporter.  --json prints\n"
    "them parsed: an array of families (name, type, help, samples), each\n"
    "sample a name, its labels and its value.\n",
    NULL, 0, cmd_metrics },
  { "check", "check", NULL,
    "check the configuration vgicd loads (group vgicd)",
    "Ask the running vgicd to check the files it loads (vgicd.conf, its\n"
    "drop-ins in vgicd.conf.d, its state file and vms.conf), read again now,\n"
    "and print each problem as FILE:LINE: error|warning: MESSAGE, as\n"
    "vgicd --check-config does; nothing when there is none.  Exit status 3\n"
    "when one is an error (vgicd would not load the file, or a VM runs with\n"
    "vgicd off).  --json prints a JSON array of objects: level, file, line,\n"
    "group, key, message.  Root, user vgicd and group vgicd only.\n",
    NULL, 0, cmd_check },
  { "dump", "dump [--all-irqs] [--irqs N] FILE|-", "FILE|-",
    "decode a vGIC state record, or the GIC's state in\n"
    "a saved migration stream, into a table",
    "Decode a vGIC state record (from FILE, or standard input for -) into a\n"
    "table of every IRQ and vCPU.  Quiet SPIs are summarised unless\n"
    "--all-irqs is given.  FILE may also be a saved migration stream (a virsh\n"
    "save image, or a migration to a file): its GIC section is shown, from\n"
    "vgicd's record when the stream carries one, else from QEMU's own fields,\n"
    "as the registers QEMU's load writes; the stream does not say how many\n"
    "IRQs the VM has: 288 for the virt machine, else give --irqs N.  --json\n"
    "prints source (record or qemu-fields), stream (where it was found),\n"
    "version, routes, nr-irqs, vcpus and every register (group, attr, value).\n"
    "Does not need vgicd.  Exit status 3 if the file is neither a valid\n"
    "record nor a stream this vgicctl can read.\n",
    dump_options, 1, cmd_dump },
  { "enable", "enable DOMAIN [--required] [--allow-tcg] [--connect URI]", "DOMAIN",
    "a libvirt domain uses vgicd where the host has it\n"
    "(--required: it does not start or migrate where\n"
    "vgicd is down)",
    "A patched QEMU uses the host's vgicd with no argument: every domain does\n"
    "by default.  enable records that this domain wants it, in vgicd's metadata\n"
    "of its persistent definition (through the libvirt API; from its next\n"
    "start), and of its live definition when it runs (so that its next\n"
    "migration carries the choice; on this host vgicd applies it at the next\n"
    "start, migration or reload).  With --required the domain does not start,\n"
    "and is not migrated in, where vgicd is not reachable; without it, it runs\n"
    "without vgicd there.  The argument -global kvm-arm-gicv3.vgicd=... that\n"
    "earlier versions added is removed.  Only aarch64 KVM domains are accepted\n"
    "(--allow-tcg also accepts aarch64 type='qemu' domains, for tests).  Warns\n"
    "when this host's QEMU has no vgicd property.  --connect URI: a libvirt URI\n"
    "(default: libvirt's default, qemu:///system for root).  --json prints\n"
    "what was done: domain, choice, previous, changed, active, argument-removed.\n",
    vgicctl_enable_options, 1, vgicctl_enable },
  { "disable", "disable DOMAIN [--connect URI]", "DOMAIN",
    "a libvirt domain never uses vgicd",
    "Record in a libvirt domain's metadata (persistent, and live when it runs)\n"
    "that it never uses vgicd: its saves take QEMU's own path.  The argument\n"
    "earlier versions added is removed.  --json prints what was done, as\n"
    "enable's.\n",
    vgicctl_disable_options, 1, vgicctl_disable },
};

/* The options every command takes: parsed into these, then handed to the
 * command in its VgicctlCall. */
static VgicctlJson opt_json;
static gboolean opt_quiet;
static gboolean opt_no_pager;	/* taken and ignored: vgicctl never pages */
static gboolean opt_help;
static char **opt_args;		/* the positional arguments */

static gboolean
parse_json (const char *name, const char *value, gpointer data, GError **error)
{
  if (!value || g_str_equal (value, "short"))
    opt_json = VGICCTL_JSON_SHORT;
  else if (g_str_equal (value, "pretty"))
    opt_json = VGICCTL_JSON_PRETTY;
  else
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "--json takes short or pretty, not \"%s\"", value);
      return FALSE;
    }
  return TRUE;
}

static const GOptionEntry common_options[] = {
  { "json", 0, G_OPTION_FLAG_OPTIONAL_ARG, G_OPTION_ARG_CALLBACK, parse_json,
    "JSON output: short (one line, the default) or pretty", "short|pretty" },
  { "quiet", 'q', 0, G_OPTION_ARG_NONE, &opt_quiet,
    "Answers and errors only, no informative lines", NULL },
  { "no-pager", 0, 0, G_OPTION_ARG_NONE, &opt_no_pager,
    "Accepted, as systemctl's; vgicctl never pages", NULL },
  { "help", 'h', 0, G_OPTION_ARG_NONE, &opt_help, "Show this help", NULL },
  { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &opt_args, NULL, NULL },
  { NULL }
};

static const Command *
find_command (const char *name)
{
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    if (g_str_equal (commands[i].name, name))
      return &commands[i];
  return NULL;
}

/* usage() - vgicctl's usage, written from the command table once */
static const char *
usage (void)
{
  /* Where a summary starts: a synopsis longer than this gets a line of its
   * own. */
  enum { COLUMN = 29 };
  static char *text;
  GString *out;

  if (text)
    return text;
  out = g_string_new ("Usage: vgicctl [--help] [--version] COMMAND [OPTIONS] [ARGS]\n\n"
                      "Commands:\n");
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    {
      g_auto (GStrv) lines = g_strsplit (commands[i].summary, "\n", -1);

      if (strlen (commands[i].synopsis) + 3 <= COLUMN)
        g_string_append_printf (out, "  %-*s", COLUMN - 2, commands[i].synopsis);
      else
        g_string_append_printf (out, "  %s\n%*s", commands[i].synopsis, COLUMN, "");
      for (guint k = 0; lines[k]; k++)
        g_string_append_printf (out, "%*s%s\n", k ? COLUMN : 0, "", lines[k]);
    }
  /* From the same table the parser uses. */
  g_string_append (out, "\nOptions of every command:\n");
  for (const GOptionEntry *e = common_options; e->long_name; e++)
    {
      g_autofree char *flag = NULL;

      if (!*e->long_name)
        continue;	/* G_OPTION_REMAINING */
      flag = g_strdup_printf ("%s%c%s--%s%s%s%s", e->short_name ? "-" : "",
                              e->short_name ? e->short_name : ' ', e->short_name ? ", " : "",
                              e->long_name, e->arg_description ? "[=" : "",
                              e->arg_description ? e->arg_description : "",
                              e->arg_description ? "]" : "");
      g_string_append_printf (out, "  %-*s%s\n", COLUMN - 2,
                              g_strstrip (flag), e->description);
    }
  g_string_append (out,
                   "\n"
                   "'vgicctl COMMAND --help' describes a command.\n"
                   "\n"
                   "Exit status: 0 success, 1 usage error, 2 vgicd (or libvirt) not reachable\n"
                   "or D-Bus error, 3 bad input, 4 permission denied.\n");
  text = g_string_free (out, FALSE);
  return text;
}

/* run_command() - parse @cmd's options (@argv[0] is its name) and run it */
static int
run_command (const Command *cmd, int argc, char **argv)
{
  g_autoptr (GOptionContext) ctx = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) args = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *prgname = g_strconcat ("vgicctl ", cmd->name, NULL);
  g_autofree char *summary = g_strchomp (g_strdup (cmd->help));
  g_auto (GStrv) strv = NULL;
  static char *no_args[] = { NULL };
  VgicctlCall call = { cmd->name, no_args, 0, VGICCTL_JSON_NONE, FALSE };
  gboolean options_end = FALSE;
  int status;

  /* A bare --json is the short form, and never takes the next argument
   * as its format (GLib's optional argument would: `history --json VM`
   * must mean the VM); the format is given as --json=FORMAT. */
  for (int i = 0; i < argc; i++)
    {
      gboolean bare = !options_end && g_str_equal (argv[i], "--json");

      options_end = options_end || g_str_equal (argv[i], "--");
      g_ptr_array_add (args, g_strdup (bare ? "--json=short" : argv[i]));
    }
  g_ptr_array_add (args, NULL);
  strv = (GStrv) g_ptr_array_steal (args, NULL);

  /* "Usage: vgicctl mode [OPTION…] [auto|single|off]" in the help */
  g_set_prgname (prgname);
  ctx = g_option_context_new (cmd->params);
  /* --help is ours, so that it returns here (GLib's exits). */
  g_option_context_set_help_enabled (ctx, FALSE);
  g_option_context_set_summary (ctx, summary);
  if (cmd->options)
    g_option_context_add_main_entries (ctx, cmd->options, NULL);
  g_option_context_add_main_entries (ctx, common_options, NULL);
  if (!g_option_context_parse_strv (ctx, &strv, &error))
    return usage_error ("%s", error->message);
  if (opt_help)
    {
      g_autofree char *help = g_option_context_get_help (ctx, TRUE, NULL);

      fputs (help, stdout);
      return EXIT_OK;
    }
  if (opt_args)
    {
      call.args = opt_args;
      call.n_args = g_strv_length (opt_args);
    }
  if (call.n_args > cmd->max_args)
    return usage_error ("unexpected argument \"%s\"", call.args[cmd->max_args]);
  call.json = opt_json;
  call.quiet = opt_quiet;
  status = cmd->run (&call);
  g_clear_pointer (&opt_args, g_strfreev);
  return status;
}

int
main (int argc, char **argv)
{
  int status;

  setlocale (LC_ALL, "");

  if (argc < 2)
    return usage_error ("which command?");
  if (g_str_equal (argv[1], "--help") || g_str_equal (argv[1], "-h") ||
      g_str_equal (argv[1], "help"))
    {
      fputs (usage (), stdout);
      return EXIT_OK;
    }
  if (g_str_equal (argv[1], "--version"))
    {
      printf ("vgicctl %s\n", PACKAGE_VERSION);
      return EXIT_OK;
    }
  if (argv[1][0] == '-')
    return usage_error ("unknown option %s", argv[1]);

  current = find_command (argv[1]);
  if (!current)
    return usage_error ("unknown command \"%s\"", argv[1]);
  status = run_command (current, argc - 1, argv + 1);
  g_free (last_failure);
  return status;
}
