/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicctl.c - the operator's command line for vgicd: status, mode, sessions,
 * stats (org.vgicd.Manager1 on the system bus), dump (a state record
 * decoded locally) and enable|disable (a libvirt domain's persistent
 * definition, through the libvirt API).
 *
 * It is meant for shell scripts as much as for people: one exit code per
 * kind of failure, errors on stderr saying what failed and what to do, and
 * the plain answers (`vgicctl mode`, --json) on stdout with nothing else.
 */
#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <gio/gio.h>
#include <gio/gunixinputstream.h>

#include "vgic-dump.h"
#include "vgic-record.h"
#include "vgicctl-json.h"
#include "vgicd-config.h"

#ifdef VGICCTL_LIBVIRT
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "vgicd-domxml.h"
#endif

#define NAME "org.vgicd.Manager1"
#define PATH "/org/vgicd/Manager1"
#define IFACE "org.vgicd.Manager1"
/* Long enough for a loaded host, short enough that a script does not hang. */
#define CALL_TIMEOUT_MS 15000

enum {
  EXIT_OK = 0,
  EXIT_USAGE = 1,
  EXIT_DBUS = 2,	/* vgicd unreachable, or a D-Bus error */
  EXIT_INPUT = 3,	/* bad input (a mode, a record) */
  EXIT_DENIED = 4,	/* permission denied */
};

#define HINT_RUNNING "is vgicd running? systemctl status vgicd"

typedef struct {
  const char *name;
  const char *synopsis;
  const char *help;
  int (*run) (int argc, char **argv);
} Command;


static const char usage_text[] =
  "Usage: vgicctl [--help] [--version] COMMAND [ARGS]\n"
  "\n"
  "Commands:\n"
  "  status                     mode, kernel batch support, sessions, totals\n"
  "  mode                       print the mode (auto, single or off)\n"
  "  mode auto|single|off [--runtime]\n"
  "                             change the mode (root only); it is saved in\n"
  "                             vgicd's configuration file unless --runtime\n"
  "  sessions [--json]          the VMs attached to vgicd\n"
  "  stats [--json]             host totals since vgicd started\n"
  "  dump [--all-irqs] FILE|-   decode a vGIC state record into a table\n"
  "  enable DOMAIN [--required] [--connect URI]\n"
  "                             let a libvirt domain use vgicd (--required: it\n"
  "                             does not start or migrate where vgicd is down)\n"
  "  disable DOMAIN [--connect URI]\n"
  "                             stop a libvirt domain from using vgicd\n"
  "\n"
  "'vgicctl COMMAND --help' describes a command.\n"
  "\n"
  "Exit status: 0 success, 1 usage error, 2 vgicd (or libvirt) not reachable\n"
  "or D-Bus error, 3 bad input, 4 permission denied.\n";

static int
usage_error (const char *fmt, ...) G_GNUC_PRINTF (1, 2);

/* usage_error() - report a mistake on the command line; exit status 1 */
static int
usage_error (const char *fmt, ...)
{
  g_autofree char *msg = NULL;
  va_list ap;

  va_start (ap, fmt);
  msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  fprintf (stderr, "vgicctl: %s\n\n%s", msg, usage_text);
  return EXIT_USAGE;
}

/* dbus_failure() - report a failed call with the exit status its kind has */
static int
dbus_failure (const char *what, GError *error)
{
  g_dbus_error_strip_remote_error (error);

  if (g_error_matches (error, G_DBUS_ERROR, G_DBUS_ERROR_ACCESS_DENIED))
    {
      /* The bus's own refusal is a dump of the message header; say what it
       * means instead. */
      gboolean by_bus = g_str_has_prefix (error->message, "Rejected send message");

      fprintf (stderr, "vgicctl: %s: permission denied: %s\n"
               "Run it as root (for example with sudo).\n", what,
               by_bus ? "the system bus policy lets only root do this"
                      : error->message);
      return EXIT_DENIED;
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
      fprintf (stderr, "vgicctl: %s: cannot connect to the system bus: %s; "
               HINT_RUNNING "\n", what, error->message);
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
  /* NO_AUTO_START: vgicd is started by systemd, never by the bus; asking the
   * bus to start it only turns "not running" into a confusing error. */
  reply = g_dbus_connection_call_sync (bus, NAME, PATH, iface, method, params,
                                       G_VARIANT_TYPE (reply_type),
                                       G_DBUS_CALL_FLAGS_NO_AUTO_START,
                                       CALL_TIMEOUT_MS, NULL, &error);
  if (!reply)
    *status = dbus_failure (what, error);
  return reply;
}

/* get_all() - every Manager1 property, as an a{sv} dictionary */
static GVariantDict *
get_all (const char *what, int *status)
{
  g_autoptr (GVariant) reply = NULL;
  g_autoptr (GVariant) props = NULL;

  reply = call (what, "org.freedesktop.DBus.Properties", "GetAll",
                g_variant_new ("(s)", IFACE), "(a{sv})", status);
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

  reply = call (what, IFACE, "GetStats", NULL, "(a{sv})", status);
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

/* Is the first argument a request for help?  Every command takes --help. */
static gboolean
wants_help (int argc, char **argv)
{
  for (int i = 1; i < argc; i++)
    if (g_str_equal (argv[i], "--help") || g_str_equal (argv[i], "-h"))
      return TRUE;
  return FALSE;
}

/* parse_flags() - accept only the flags in @known (NULL-terminated) and at
 * most @max_args positional arguments */
static int
parse_flags (const char *cmd, int argc, char **argv, const char *const *known,
             gboolean *seen, int max_args, char **args)
{
  int n = 0;

  for (int i = 1; i < argc; i++)
    {
      gboolean matched = FALSE;

      if (argv[i][0] == '-' && argv[i][1] != '\0')
        {
          for (int k = 0; known && known[k]; k++)
            if (g_str_equal (argv[i], known[k]))
              {
                seen[k] = TRUE;
                matched = TRUE;
              }
          if (!matched)
            return usage_error ("%s: unknown option %s", cmd, argv[i]);
          continue;
        }
      if (n == max_args)
        return usage_error ("%s: unexpected argument \"%s\"", cmd, argv[i]);
      args[n++] = argv[i];
    }
  return EXIT_OK;
}

static int
cmd_status (int argc, char **argv)
{
  g_autoptr (GVariantDict) props = NULL;
  g_autoptr (GVariantDict) stats = NULL;
  g_autofree char *uptime = NULL;
  const char *source;
  int status;

  if ((status = parse_flags ("status", argc, argv, NULL, NULL, 0, NULL)))
    return status;
  if (!(props = get_all ("status", &status)) ||
      !(stats = get_stats ("status", &status)))
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
  return EXIT_OK;
}

static int
cmd_mode (int argc, char **argv)
{
  static const char *const flags[] = { "--runtime", NULL };
  gboolean seen[1] = { FALSE };
  g_autoptr (GError) error = NULL;
  g_autoptr (GVariant) reply = NULL;
  char *args[1] = { NULL };
  VgicdMode mode;
  int status;

  if ((status = parse_flags ("mode", argc, argv, flags, seen, 1, args)))
    return status;

  if (!args[0])
    {
      g_autoptr (GVariantDict) props = NULL;

      if (seen[0])
        return usage_error ("mode: --runtime needs a mode to set");
      if (!(props = get_all ("mode", &status)))
        return status;
      printf ("%s\n", dict_str (props, "Mode"));
      return EXIT_OK;
    }

  /* Checked here too, so a typo is a usage error even when vgicd is down. */
  if (!vgicd_mode_from_string (args[0], &mode, &error))
    return usage_error ("mode: %s", error->message);

  reply = call ("mode", IFACE, "SetMode",
                g_variant_new ("(sb)", vgicd_mode_to_string (mode), !seen[0]),
                "()", &status);
  if (!reply)
    return status;

  if (seen[0])
    printf ("Mode is now %s, until vgicd restarts.\n", vgicd_mode_to_string (mode));
  else
    printf ("Mode is now %s, saved in the configuration file.\n",
            vgicd_mode_to_string (mode));
  return EXIT_OK;
}

/* "12.345 ms / 3 ioctls / batch", or "-" for an operation never run */
static char *
format_last (GVariantDict *s, const char *op, guint64 count)
{
  g_autofree char *ns_key = g_strdup_printf ("last-%s-ns", op);
  g_autofree char *ioctls_key = g_strdup_printf ("last-%s-ioctls", op);
  g_autofree char *via_key = g_strdup_printf ("last-%s-via", op);
  guint64 ns = dict_u64 (s, ns_key);

  if (count == 0 && ns == 0)
    return g_strdup ("-");
  return g_strdup_printf ("%.3f ms/%u/%s", ns / 1e6, dict_u32 (s, ioctls_key),
                          dict_str (s, via_key));
}

static int
cmd_sessions (int argc, char **argv)
{
  static const char *const flags[] = { "--json", NULL };
  gboolean seen[1] = { FALSE };
  g_autoptr (GVariant) reply = NULL;
  g_autoptr (GVariant) list = NULL;
  int status;
  gsize n;

  if ((status = parse_flags ("sessions", argc, argv, flags, seen, 0, NULL)))
    return status;
  if (!(reply = call ("sessions", IFACE, "ListSessions", NULL, "(aa{sv})", &status)))
    return status;
  list = g_variant_get_child_value (reply, 0);
  n = g_variant_n_children (list);

  if (seen[0])
    {
      g_autoptr (GString) out = g_string_new (NULL);

      vgicctl_json_append (out, list);
      printf ("%s\n", out->str);
      return EXIT_OK;
    }

  if (n == 0)
    {
      printf ("No VM is attached to vgicd.\n");
      return EXIT_OK;
    }

  printf ("%-20s %-36s %5s %11s  %-28s %-28s\n", "NAME", "UUID", "VCPUS",
          "SAVES/LOADS", "LAST SAVE (ms/ioctls/via)", "LAST LOAD (ms/ioctls/via)");
  for (gsize i = 0; i < n; i++)
    {
      g_autoptr (GVariant) entry = g_variant_get_child_value (list, i);
      g_autoptr (GVariantDict) s = g_variant_dict_new (entry);
      guint64 saves = dict_u64 (s, "saves"), loads = dict_u64 (s, "loads");
      g_autofree char *last_save = format_last (s, "save", saves);
      g_autofree char *last_load = format_last (s, "load", loads);
      g_autofree char *counts = g_strdup_printf ("%" G_GUINT64_FORMAT "/%"
                                                 G_GUINT64_FORMAT, saves, loads);

      printf ("%-20s %-36s %5u %11s  %-28s %-28s\n", dict_str (s, "name"),
              dict_str (s, "uuid"), dict_u32 (s, "vcpus"), counts, last_save,
              last_load);
    }
  return EXIT_OK;
}

static int
cmd_stats (int argc, char **argv)
{
  static const char *const flags[] = { "--json", NULL };
  /* The order people read them in; --json prints whatever vgicd sends. */
  static const char *const keys[] = {
    "saves", "loads", "declined", "fallbacks", "second-rounds", "failures", "bytes-saved",
    "bytes-loaded", "sessions", "sessions-total", "refused", "uptime-usec",
  };
  gboolean seen[1] = { FALSE };
  g_autoptr (GVariant) reply = NULL;
  g_autoptr (GVariant) stats = NULL;
  int status;

  if ((status = parse_flags ("stats", argc, argv, flags, seen, 0, NULL)))
    return status;
  if (!(reply = call ("stats", IFACE, "GetStats", NULL, "(a{sv})", &status)))
    return status;
  stats = g_variant_get_child_value (reply, 0);

  if (seen[0])
    {
      g_autoptr (GString) out = g_string_new (NULL);

      vgicctl_json_append (out, stats);
      printf ("%s\n", out->str);
      return EXIT_OK;
    }

  for (gsize i = 0; i < G_N_ELEMENTS (keys); i++)
    {
      g_autoptr (GVariant) v = g_variant_lookup_value (stats, keys[i], NULL);
      g_autofree char *key = g_strconcat (keys[i], ":", NULL);

      if (!v)
        continue;
      if (g_variant_is_of_type (v, G_VARIANT_TYPE_UINT64))
        printf ("%-16s %" G_GUINT64_FORMAT "\n", key, g_variant_get_uint64 (v));
      else if (g_variant_is_of_type (v, G_VARIANT_TYPE_UINT32))
        printf ("%-16s %u\n", key, g_variant_get_uint32 (v));
    }
  return EXIT_OK;
}

/* read_all() - the whole of @path, or of stdin for "-" */
static GBytes *
read_all (const char *path, GError **error)
{
  g_autoptr (GInputStream) in = NULL;
  g_autoptr (GOutputStream) out = NULL;

  if (!g_str_equal (path, "-"))
    {
      char *data;
      gsize len;

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

static int
cmd_dump (int argc, char **argv)
{
  static const char *const flags[] = { "--all-irqs", NULL };
  gboolean seen[1] = { FALSE };
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) bytes = NULL;
  g_autoptr (VgicRecord) record = NULL;
  g_autofree char *text = NULL;
  char *args[1] = { NULL };
  const char *name;
  gsize len;
  int status;

  if ((status = parse_flags ("dump", argc, argv, flags, seen, 1, args)))
    return status;
  if (!args[0])
    return usage_error ("dump: which record? Give a file, or - for standard input");
  name = g_str_equal (args[0], "-") ? "standard input" : args[0];

  if (!(bytes = read_all (args[0], &error)))
    {
      fprintf (stderr, "vgicctl: dump: cannot read %s: %s\n", name, error->message);
      return EXIT_INPUT;
    }
  record = vgic_record_decode (g_bytes_get_data (bytes, &len),
                               g_bytes_get_size (bytes), &error);
  if (!record)
    {
      fprintf (stderr, "vgicctl: dump: %s is not a valid vGIC state record: %s\n",
               name, error->message);
      return EXIT_INPUT;
    }
  text = vgic_dump_record (record, seen[0] ? VGIC_DUMP_ALL_IRQS : VGIC_DUMP_NONE);
  fputs (text, stdout);
  return EXIT_OK;
}

/*
 * enable|disable: edit a domain's persistent definition through the libvirt
 * API (never the XML files): the vgicd metadata the qemu.d hook acts on, and
 * the QEMU argument that points the GIC at vgicd.  The hook does the same
 * edit to incoming migrations on the destination.
 */
#ifdef VGICCTL_LIBVIRT

/* libvirt prints every error on stderr by default; vgicctl words its own. */
static void
quiet_libvirt (void *data, virErrorPtr err)
{
}

static int
libvirt_failure (const char *what, const char *fallback)
{
  virErrorPtr err = virGetLastError ();
  const char *msg = err && err->message ? err->message : fallback;
  int code = err ? err->code : VIR_ERR_INTERNAL_ERROR;

  switch (code)
    {
    case VIR_ERR_NO_DOMAIN:
    case VIR_ERR_XML_ERROR:
    case VIR_ERR_XML_DETAIL:
    case VIR_ERR_INVALID_ARG:
    case VIR_ERR_CONFIG_UNSUPPORTED:
    case VIR_ERR_NO_SUPPORT:
    case VIR_ERR_INVALID_DOMAIN:
    case VIR_ERR_NO_DOMAIN_METADATA:
      fprintf (stderr, "vgicctl: %s: %s\n", what, msg);
      return EXIT_INPUT;
    case VIR_ERR_AUTH_FAILED:
    case VIR_ERR_AUTH_CANCELLED:
    case VIR_ERR_AUTH_UNAVAILABLE:
    case VIR_ERR_OPERATION_DENIED:
    case VIR_ERR_ACCESS_DENIED:
      fprintf (stderr, "vgicctl: %s: permission denied: %s\n"
               "Run it as root (for example with sudo).\n", what, msg);
      return EXIT_DENIED;
    default:
      fprintf (stderr, "vgicctl: %s: %s\n", what, msg);
      return EXIT_DBUS;
    }
}

/* qemu_has_vgicd() - does @emulator's GIC have the vgicd property?  FALSE
 * with *why when it does not, or cannot be asked. */
static gboolean
qemu_has_vgicd (const char *emulator, char **why)
{
  const char *argv[] = { emulator, "-nodefaults", "-device", "kvm-arm-gicv3,help", NULL };
  g_autofree char *out = NULL;
  g_autofree char *err = NULL;
  g_autoptr (GError) error = NULL;
  int wait_status;

  if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                     &out, &err, &wait_status, &error))
    {
      *why = g_strdup_printf ("cannot run %s: %s", emulator, error->message);
      return FALSE;
    }
  if ((out && strstr (out, VGICD_QEMU_PROPERTY "=")) ||
      (out && strstr (out, "  vgicd=")))
    return TRUE;
  if (err && strstr (err, "not found"))
    *why = g_strdup_printf ("%s has no kvm-arm-gicv3 device (a QEMU without "
                            "KVM for arm64)", emulator);
  else
    *why = g_strdup_printf ("%s's kvm-arm-gicv3 has no vgicd property (a QEMU "
                            "without vgicd's patches)", emulator);
  return FALSE;
}

static int
cmd_enable_disable (int argc, char **argv, gboolean enable)
{
  static const char *const flags[] = { "--required", "--connect", "--allow-tcg", NULL };
  const char *cmd = enable ? "enable" : "disable";
  gboolean seen[3] = { FALSE };
  char *args[2] = { NULL };
  const char *uri = NULL, *dom_name;
  g_autofree char *what = NULL;
  g_autofree char *socket_path = NULL;
  g_autofree char *warning = NULL;
  g_autofree char *xml_out = NULL;
  g_autofree char *type = NULL, *arch = NULL, *emulator = NULL;
  g_autoptr (xmlDoc) doc = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) rest = g_ptr_array_new ();
  virConnectPtr conn = NULL;
  virDomainPtr dom = NULL, defined = NULL;
  char *xml = NULL;
  VgicdOptIn was, want;
  int status, active;

  /* --connect takes a value; parse_flags() only knows switches. */
  g_ptr_array_add (rest, argv[0]);
  for (int i = 1; i < argc; i++)
    {
      if (g_str_equal (argv[i], "--connect") || g_str_equal (argv[i], "-c"))
        {
          if (++i == argc)
            return usage_error ("%s: --connect needs a libvirt URI", cmd);
          uri = argv[i];
          continue;
        }
      if (g_str_has_prefix (argv[i], "--connect="))
        {
          uri = argv[i] + strlen ("--connect=");
          continue;
        }
      g_ptr_array_add (rest, argv[i]);
    }
  if ((status = parse_flags (cmd, rest->len, (char **) rest->pdata, flags, seen,
                             1, args)))
    return status;
  if (!args[0])
    return usage_error ("%s: which domain? Give its libvirt name", cmd);
  if (!enable && (seen[0] || seen[2]))
    return usage_error ("disable: --required and --allow-tcg are for enable");
  dom_name = args[0];
  what = g_strdup_printf ("%s %s", cmd, dom_name);
  want = !enable ? VGICD_OPTIN_NONE
       : seen[0] ? VGICD_OPTIN_REQUIRED : VGICD_OPTIN_WANTED;

  virSetErrorFunc (NULL, quiet_libvirt);
  conn = virConnectOpen (uri);
  if (!conn)
    {
      virErrorPtr err = virGetLastError ();

      if (err && (err->code == VIR_ERR_AUTH_FAILED ||
                  err->code == VIR_ERR_AUTH_UNAVAILABLE ||
                  err->code == VIR_ERR_OPERATION_DENIED))
        return libvirt_failure (what, "permission denied");
      fprintf (stderr, "vgicctl: %s: cannot connect to libvirt%s%s: %s; is "
               "libvirtd running? systemctl status libvirtd\n", what,
               uri ? " at " : "", uri ? uri : "",
               err && err->message ? err->message : "unknown error");
      return EXIT_DBUS;
    }

  if (!(dom = virDomainLookupByName (conn, dom_name)))
    {
      status = libvirt_failure (what, "no such domain");
      goto out;
    }
  /* SECURE: the definition goes back whole, passwords included. */
  if (!(xml = virDomainGetXMLDesc (dom, VIR_DOMAIN_XML_INACTIVE | VIR_DOMAIN_XML_SECURE)))
    {
      status = libvirt_failure (what, "cannot read the definition");
      goto out;
    }
  if (!(doc = vgicd_domxml_parse (xml, strlen (xml), &error)))
    {
      fprintf (stderr, "vgicctl: %s: libvirt's definition: %s\n", what, error->message);
      status = EXIT_DBUS;
      goto out;
    }
  if (!vgicd_domxml_opt_in (doc, &was, &error))
    {
      /* A hand-edited bad value: enable/disable rewrite it anyway. */
      fprintf (stderr, "vgicctl: %s: warning: %s (replaced)\n", what, error->message);
      was = VGICD_OPTIN_WANTED;
    }

  type = vgicd_domxml_attr (doc, "", "type");
  arch = vgicd_domxml_attr (doc, "os/type", "arch");
  emulator = vgicd_domxml_text (doc, "devices/emulator");
  if (enable)
    {
      if (g_strcmp0 (arch, "aarch64") != 0)
        {
          fprintf (stderr, "vgicctl: %s: the domain's architecture is %s, not "
                   "aarch64: vgicd moves the arm64 KVM GICv3 only\n", what,
                   arch ? arch : "unknown (no <os><type arch=...>)");
          status = EXIT_INPUT;
          goto out;
        }
      if (g_strcmp0 (type, "kvm") != 0 && !(seen[2] && g_strcmp0 (type, "qemu") == 0))
        {
          fprintf (stderr, "vgicctl: %s: the domain's type is %s, not kvm: "
                   "vgicd moves the in-kernel (KVM) GICv3 only%s\n", what,
                   type ? type : "unknown",
                   g_strcmp0 (type, "qemu") == 0 ?
                   " (--allow-tcg enables it anyway, for tests)" : "");
          status = EXIT_INPUT;
          goto out;
        }
    }

  socket_path = vgicd_socket_path (&warning);
  if (warning)
    fprintf (stderr, "vgicctl: %s: warning: %s\n", what, warning);
  vgicd_domxml_set_opt_in (doc, want);
  if (enable)
    vgicd_domxml_add_arg (doc, socket_path);
  else
    vgicd_domxml_remove_arg (doc);
  xml_out = vgicd_domxml_format (doc, NULL);

  if (!(defined = virDomainDefineXML (conn, xml_out)))
    {
      status = libvirt_failure (what, "cannot define the edited definition");
      goto out;
    }

  /* A running domain migrates with its live definition: give it the
   * metadata too, so the destination's hook sees the choice.  (QEMU's
   * arguments cannot change while it runs.) */
  active = virDomainIsActive (dom);
  if (active == 1)
    {
      g_autofree char *meta = want == VGICD_OPTIN_NONE ? NULL :
        g_strdup_printf ("<" VGICD_XML_ELEMENT " required=\"%s\"/>",
                         want == VGICD_OPTIN_REQUIRED ? "yes" : "no");

      if (virDomainSetMetadata (dom, VIR_DOMAIN_METADATA_ELEMENT, meta,
                                VGICD_XMLNS_PREFIX, VGICD_XMLNS,
                                VIR_DOMAIN_AFFECT_LIVE) < 0)
        {
          status = libvirt_failure (what, "cannot update the running domain's metadata");
          goto out;
        }
    }

  if (enable)
    {
      g_autofree char *why = NULL;

      printf ("Domain %s: vgicd %s (%s), from its next start%s.\n", dom_name,
              was == VGICD_OPTIN_NONE ? "enabled" : "settings updated",
              want == VGICD_OPTIN_REQUIRED ?
              "required: it does not start or migrate where vgicd is down" :
              "optional: it runs without vgicd where vgicd is down",
              active == 1 ? " or its next migration" : "");
      /* Only meaningful for the local host. */
      if ((!uri || !strstr (uri, "://") || strstr (uri, ":///")) &&
          !qemu_has_vgicd (emulator ? emulator : "qemu-system-aarch64", &why))
        fprintf (stderr, "vgicctl: %s: warning: this host's QEMU cannot use "
                 "vgicd: %s; the domain runs without vgicd here until QEMU "
                 "is updated\n", what, why);
    }
  else
    printf ("Domain %s: vgicd %s, from its next start.\n", dom_name,
            was == VGICD_OPTIN_NONE ? "was not enabled; nothing to do" : "disabled");
  status = EXIT_OK;

out:
  free (xml);
  if (defined)
    virDomainFree (defined);
  if (dom)
    virDomainFree (dom);
  virConnectClose (conn);
  return status;
}

#else

static int
cmd_enable_disable (int argc, char **argv, gboolean enable)
{
  fprintf (stderr, "vgicctl: %s: this vgicctl was built without libvirt; "
           "edit the domain with virsh edit (see the vgicd hook's README)\n",
           enable ? "enable" : "disable");
  return EXIT_USAGE;
}

#endif

static int
cmd_enable (int argc, char **argv)
{
  return cmd_enable_disable (argc, argv, TRUE);
}

static int
cmd_disable (int argc, char **argv)
{
  return cmd_enable_disable (argc, argv, FALSE);
}

static const Command commands[] = {
  { "status", "status",
    "Show vgicd's mode, whether the kernel has the vGIC batch group (and how\n"
    "that is known), its version, socket and configuration file, the number\n"
    "of attached VMs and short host totals.\n",
    cmd_status },
  { "mode", "mode [auto|single|off [--runtime]]",
    "Without an argument, print the mode.  With one, change it (root only):\n"
    "  auto    batch when the kernel has it, else one register per ioctl\n"
    "  single  never batch\n"
    "  off     decline saves (QEMU uses its own path); loads are still served\n"
    "The new mode is saved in vgicd's configuration file unless --runtime is\n"
    "given, in which case it lasts until vgicd restarts.\n",
    cmd_mode },
  { "sessions", "sessions [--json]",
    "List the attached VMs: name, uuid, vCPUs, saves/loads, and the last save\n"
    "and load (milliseconds, ioctls, batch or single).\n",
    cmd_sessions },
  { "stats", "stats [--json]",
    "Print the host totals since vgicd started: saves, loads, declined saves,\n"
    "fallbacks to one-by-one, failures, bytes, sessions, refused peers and\n"
    "uptime.  --json prints one JSON object.\n",
    cmd_stats },
  { "dump", "dump [--all-irqs] FILE|-",
    "Decode a vGIC state record (from FILE, or standard input for -) into a\n"
    "table of every IRQ and vCPU.  Quiet SPIs are summarised unless\n"
    "--all-irqs is given.  Does not need vgicd.  Exit status 3 if the record\n"
    "is not valid.\n",
    cmd_dump },
  { "enable", "enable DOMAIN [--required] [--allow-tcg] [--connect URI]",
    "Let a libvirt domain use vgicd: add vgicd's metadata and the QEMU\n"
    "argument -global kvm-arm-gicv3.vgicd=unix:path=SOCKET to its persistent\n"
    "definition (through the libvirt API; it takes effect at the next start).\n"
    "On a running domain the live metadata changes too, so its next\n"
    "migration gets vgicd on the destination (the vgicd qemu hook adds the\n"
    "argument there).  With --required the domain does not start, and is\n"
    "not migrated in, where vgicd is not reachable; without it, it runs\n"
    "without vgicd there.  Only aarch64 KVM domains are accepted (--allow-tcg\n"
    "also accepts aarch64 type='qemu' domains, for tests).  Warns when this\n"
    "host's QEMU has no vgicd property.  --connect URI: a libvirt URI\n"
    "(default: libvirt's default, qemu:///system for root).\n",
    cmd_enable },
  { "disable", "disable DOMAIN [--connect URI]",
    "Remove vgicd's metadata and QEMU argument from a libvirt domain's\n"
    "persistent definition (and the metadata from a running domain).\n",
    cmd_disable },
};

static const Command *
find_command (const char *name)
{
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    if (g_str_equal (commands[i].name, name))
      return &commands[i];
  return NULL;
}

int
main (int argc, char **argv)
{
  const Command *cmd;

  setlocale (LC_ALL, "");

  if (argc < 2)
    return usage_error ("which command?");
  if (g_str_equal (argv[1], "--help") || g_str_equal (argv[1], "-h") ||
      g_str_equal (argv[1], "help"))
    {
      fputs (usage_text, stdout);
      return EXIT_OK;
    }
  if (g_str_equal (argv[1], "--version"))
    {
      printf ("vgicctl %s\n", PACKAGE_VERSION);
      return EXIT_OK;
    }
  if (argv[1][0] == '-')
    return usage_error ("unknown option %s", argv[1]);

  cmd = find_command (argv[1]);
  if (!cmd)
    return usage_error ("unknown command \"%s\"", argv[1]);
  if (wants_help (argc - 1, argv + 1))
    {
      printf ("Usage: vgicctl %s\n\n%s", cmd->synopsis, cmd->help);
      return EXIT_OK;
    }
  return cmd->run (argc - 1, argv + 1);
}
