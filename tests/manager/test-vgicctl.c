/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-vgicctl.c - the operator API end to end, with real processes: a
 * private dbus-daemon configured like the system bus with the project's
 * policy file (tests/support/system-bus.conf.in), the manager in a stand-in for vgicd (or
 * vgicd itself), and the real vgicctl binary, run as root and as an
 * unprivileged user.
 *
 * Environment (set by meson): VGICCTL, STANDIN, VGICD, POLICY, BUS_TEMPLATE,
 * RECORD (a valid state record).
 */
#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "test-files.h"

#define TEST_USER "vgicd-test"

static const char config_text[] =
  "# vgicd test configuration\n"
  "# (comments must survive `vgicctl mode`)\n"
  "\n"
  "[vgicd]\n"
  "# the mode\n"
  "Mode=auto\n"
  "Probe=false\n";

static char *tmpdir;
static char *bus_address;	/* the main test bus */
static GSubprocess *bus_proc;
static GDBusConnection *conn;	/* the test's own connection, as root */
static gboolean have_user;	/* TEST_USER exists and we can become it */

typedef struct {
  int status;
  char *out;
  char *err;
} Run;

static void
run_free (Run *r)
{
  g_free (r->out);
  g_free (r->err);
  g_free (r);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC (Run, run_free)

/* Children die with the test, so a failed assertion leaves no bus behind. */
static void
child_setup (gpointer data)
{
  prctl (PR_SET_PDEATHSIG, SIGTERM);
  if (data)
    umask (0);
}

static GSubprocessLauncher *
launcher_for (const char *address, GSubprocessFlags flags)
{
  GSubprocessLauncher *l = g_subprocess_launcher_new (flags);

  if (address)
    g_subprocess_launcher_setenv (l, "DBUS_SYSTEM_BUS_ADDRESS", address, TRUE);
  g_subprocess_launcher_set_child_setup (l, child_setup, NULL, NULL);
  return l;
}

/* argv for running @args as @user (NULL: as ourselves) */
static GPtrArray *
command_as (const char *user, const char *const *args)
{
  GPtrArray *argv = g_ptr_array_new_with_free_func (g_free);

  if (user)
    {
      g_ptr_array_add (argv, g_strdup ("setpriv"));
      g_ptr_array_add (argv, g_strdup_printf ("--reuid=%s", user));
      g_ptr_array_add (argv, g_strdup_printf ("--regid=%s", user));
      g_ptr_array_add (argv, g_strdup ("--clear-groups"));
      g_ptr_array_add (argv, g_strdup ("--"));
    }
  for (; *args; args++)
    g_ptr_array_add (argv, g_strdup (*args));
  g_ptr_array_add (argv, NULL);
  return argv;
}

/* bytes_to_string() - @b as a string ("" for nothing) */
static char *
bytes_to_string (GBytes *b)
{
  gsize len = 0;
  const char *data = g_bytes_get_data (b, &len);

  return len ? g_strndup (data, len) : g_strdup ("");
}

/* run_full() - run a program to completion, with @input on its stdin */
static Run *
run_full (const char *address, const char *user, GBytes *input,
          const char *const *args)
{
  g_autoptr (GPtrArray) argv = command_as (user, args);
  g_autoptr (GSubprocessLauncher) l =
    launcher_for (address, (input ? G_SUBPROCESS_FLAGS_STDIN_PIPE : 0) |
                  G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
  g_autoptr (GSubprocess) p = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) out = NULL;
  g_autoptr (GBytes) err = NULL;
  Run *r = g_new0 (Run, 1);

  p = g_subprocess_launcher_spawnv (l, (const char *const *) argv->pdata, &error);
  g_assert_no_error (error);
  g_subprocess_communicate (p, input, NULL, &out, &err, &error);
  g_assert_no_error (error);
  r->out = bytes_to_string (out);
  r->err = bytes_to_string (err);
  g_assert_true (g_subprocess_get_if_exited (p));
  r->status = g_subprocess_get_exit_status (p);
  g_test_message ("%s%s%s -> %d\nstdout:\n%s\nstderr:\n%s", user ? user : "",
                  user ? ": " : "", args[1] ? args[1] : args[0], r->status,
                  r->out, r->err);
  /* LeakSanitizer keeps the exit status of a program that fails anyway,
   * so a leak on an error path would pass unseen where a test expects
   * the failure: look for the report itself. */
  if (strstr (r->err, "Sanitizer"))
    g_error ("%s reported a sanitizer error:\n%s", args[0], r->err);
  return r;
}

/* vgicctl() - run vgicctl ARGS... on the main test bus as @user */
#define vgicctl(user, ...) \
  run_full (bus_address, user, NULL, \
            (const char *const[]) { g_getenv ("VGICCTL"), __VA_ARGS__, NULL })

static void
assert_contains (const char *haystack, const char *needle)
{
  if (!strstr (haystack, needle))
    g_error ("expected \"%s\" in:\n%s", needle, haystack);
}

/* The JSON helpers, below with the tests of --json. */
static JsonNode *parse_json (const char *text);
static JsonNode *json_at (JsonNode *root, const char *path);
static gint64 json_int (JsonNode *root, const char *path);
static const char *json_str (JsonNode *root, const char *path);
static JsonNode *json_find (JsonNode *root, const char *key, const char *value);

/* start_bus() - a dbus-daemon with tests/support/system-bus.conf.in; @extra goes in as is */
static GSubprocess *
start_bus (const char *name, const char *extra, char **address)
{
  g_autofree char *template = NULL;
  g_autofree char *socket = g_strdup_printf ("%s/%s.sock", tmpdir, name);
  g_autofree char *conf_path = g_strdup_printf ("%s/%s.conf", tmpdir, name);
  g_autofree char *conf = NULL;
  g_autofree char *config_arg = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocessLauncher) l = NULL;
  g_autoptr (GDataInputStream) in = NULL;
  GSubprocess *p;
  GString *s;

  g_file_get_contents (g_getenv ("BUS_TEMPLATE"), &template, NULL, &error);
  g_assert_no_error (error);
  s = g_string_new (template);
  g_string_replace (s, "@SOCKET@", socket, 0);
  g_string_replace (s, "@POLICY@", g_getenv ("POLICY"), 0);
  g_string_replace (s, "@EXTRA@", extra ? extra : "", 0);
  conf = g_string_free (s, FALSE);
  g_file_set_contents (conf_path, conf, -1, &error);
  g_assert_no_error (error);

  l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE);
  /* umask 0: the socket must be connectable by the unprivileged user, as
   * the real system bus socket is. */
  g_subprocess_launcher_set_child_setup (l, child_setup, GINT_TO_POINTER (1), NULL);
  config_arg = g_strdup_printf ("--config-file=%s", conf_path);
  p = g_subprocess_launcher_spawn (l, &error, "dbus-daemon", config_arg,
                                   "--nofork", "--print-address", NULL);
  g_assert_no_error (error);
  in = g_data_input_stream_new (g_subprocess_get_stdout_pipe (p));
  *address = g_data_input_stream_read_line (in, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (*address);
  return p;
}

static void
stop (GSubprocess *p)
{
  g_autoptr (GError) error = NULL;

  g_subprocess_send_signal (p, SIGTERM);
  g_subprocess_wait (p, NULL, &error);
  g_assert_no_error (error);
}

static gboolean
name_has_owner (GDBusConnection *c)
{
  g_autoptr (GVariant) r = NULL;
  gboolean owned = FALSE;

  r = g_dbus_connection_call_sync (c, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                   "org.freedesktop.DBus", "NameHasOwner",
                                   g_variant_new ("(s)", "org.vgicd.Manager1"),
                                   G_VARIANT_TYPE ("(b)"), 0, -1, NULL, NULL);
  if (r)
    g_variant_get (r, "(b)", &owned);
  return owned;
}

/* start_daemon() - run @args (the stand-in or vgicd) on the bus at
 * @address, and wait until it owns org.vgicd.Manager1 */
static GSubprocess *
start_daemon (const char *address, const char *const *args)
{
  g_autoptr (GSubprocessLauncher) l = launcher_for (address, G_SUBPROCESS_FLAGS_NONE);
  g_autoptr (GDBusConnection) c = NULL;
  g_autoptr (GError) error = NULL;
  GSubprocess *p;
  gint64 deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;

  c = g_dbus_connection_new_for_address_sync (address,
        G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
        G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION, NULL, NULL, &error);
  g_assert_no_error (error);
  p = g_subprocess_launcher_spawnv (l, args, &error);
  g_assert_no_error (error);
  while (!name_has_owner (c))
    {
      if (g_subprocess_get_identifier (p) == NULL)
        g_error ("%s exited before owning the name", args[0]);
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_usleep (10000);
    }
  return p;
}

/* stop_daemon() - SIGTERM; it must exit cleanly (ASan checks leaks then) */
static void
stop_daemon (GSubprocess *p)
{
  stop (p);
  g_assert_true (g_subprocess_get_if_exited (p));
  g_assert_cmpint (g_subprocess_get_exit_status (p), ==, 0);
  /* The name goes with the connection; the next test needs it free. */
  while (name_has_owner (conn))
    g_usleep (5000);
}

typedef struct {
  char *config;
  GSubprocess *daemon;
} Fixture;

static char *
new_config (const char *text)
{
  static int n;
  char *path = g_strdup_printf ("%s/vgicd-%d.conf", tmpdir, ++n);

  if (text)
    {
      g_autoptr (GError) error = NULL;

      g_file_set_contents (path, text, -1, &error);
      g_assert_no_error (error);
      /* readable by the unprivileged user's stand-in */
      chmod (path, 0644);
    }
  return path;
}

static GSubprocess *
start_standin (const char *address, const char *config, const char *sessions)
{
  /* The state file (what `vgicctl mode` saves) sits next to the config. */
  g_autofree char *state = g_strconcat (config, ".state", NULL);
  const char *args[] = { g_getenv ("STANDIN"), "--config", config, "--state", state,
                         "--sessions", sessions ? sessions : "0", NULL };

  return start_daemon (address, args);
}

static void
fixture_setup (Fixture *f, gconstpointer data)
{
  f->config = new_config (config_text);
  f->daemon = start_standin (bus_address, f->config, data);
}

static void
fixture_teardown (Fixture *f, gconstpointer data)
{
  stop_daemon (f->daemon);
  g_object_unref (f->daemon);
  g_free (f->config);
}

static char *
read_file (const char *path)
{
  g_autoptr (GError) error = NULL;
  char *text = NULL;

  g_file_get_contents (path, &text, NULL, &error);
  g_assert_no_error (error);
  return text;
}

static void
test_usage (void)
{
  const char *vgicctl_path = g_getenv ("VGICCTL");
  g_autoptr (Run) none = run_full (bus_address, NULL, NULL,
                                   (const char *const[]) { vgicctl_path, NULL });
  g_autoptr (Run) help = vgicctl (NULL, "--help");
  g_autoptr (Run) version = vgicctl (NULL, "--version");
  g_autoptr (Run) unknown = vgicctl (NULL, "frobnicate");
  g_autoptr (Run) extra = vgicctl (NULL, "status", "now");
  g_autoptr (Run) badopt = vgicctl (NULL, "stats", "--yaml");
  g_autoptr (Run) cmdhelp = vgicctl (NULL, "mode", "--help");
  g_autoptr (Run) nodump = vgicctl (NULL, "dump");

  g_assert_cmpint (none->status, ==, 1);
  assert_contains (none->err, "Usage: vgicctl");
  g_assert_cmpint (help->status, ==, 0);
  assert_contains (help->out, "mode [auto|single|off [--runtime]]");
  /* The usage is written from the command table: every flag is there. */
  assert_contains (help->out, "enable DOMAIN [--required] [--allow-tcg] [--connect URI]");
  g_assert_cmpint (version->status, ==, 0);
  g_assert_cmpstr (version->out, ==, "vgicctl " PACKAGE_VERSION "\n");
  g_assert_cmpint (unknown->status, ==, 1);
  assert_contains (unknown->err, "unknown command \"frobnicate\"");
  g_assert_cmpint (extra->status, ==, 1);
  g_assert_cmpint (badopt->status, ==, 1);
  assert_contains (badopt->err, "--yaml");
  /* a command's mistake prints that command's usage, not vgicctl's */
  assert_contains (badopt->err, "Usage: vgicctl stats [--json[=short|pretty]] [-q] [--no-pager]\n");
  g_assert_null (strstr (badopt->err, "Commands:"));
  g_assert_cmpint (cmdhelp->status, ==, 0);
  assert_contains (cmdhelp->out, "vgicctl mode [OPTION");
  assert_contains (cmdhelp->out, "--runtime");
  assert_contains (cmdhelp->out, "--json=short|pretty");
  assert_contains (cmdhelp->out, "-q, --quiet");
  assert_contains (cmdhelp->out, "--no-pager");
  g_assert_cmpint (nodump->status, ==, 1);
  assert_contains (nodump->err, "vgicctl: dump: which record?");
  assert_contains (nodump->err, "Usage: vgicctl dump [--all-irqs] [--irqs N] FILE|-");
  /* the options of every command, in the usage */
  assert_contains (help->out, "Options of every command:\n");
  assert_contains (help->out, "  --json[=short|pretty]  ");
  {
    g_autoptr (Run) badjson = vgicctl (NULL, "status", "--json=xml");
    g_autoptr (Run) twomodes = vgicctl (NULL, "mode", "auto", "single");
    g_autoptr (Run) notdisable = vgicctl (NULL, "disable", "vm", "--required");
    g_autoptr (Run) nodomain = vgicctl (NULL, "enable", "--connect", "test:///default");
    g_autoptr (Run) noarg = vgicctl (NULL, "enable", "vm", "--connect");
    g_autoptr (Run) runtime = vgicctl (NULL, "mode", "--runtime");

    g_assert_cmpint (badjson->status, ==, 1);
    assert_contains (badjson->err, "--json takes short or pretty, not \"xml\"");
    g_assert_cmpint (twomodes->status, ==, 1);
    assert_contains (twomodes->err, "vgicctl: mode: unexpected argument \"single\"\n"
                     "Usage: vgicctl mode [auto|single|off [--runtime]] ");
    g_assert_cmpint (notdisable->status, ==, 1);
    assert_contains (notdisable->err, "--required");
    assert_contains (notdisable->err, "Usage: vgicctl disable DOMAIN [--connect URI] ");
    /* --connect took its value from the next argument, so no domain is left */
    g_assert_cmpint (nodomain->status, ==, 1);
    assert_contains (nodomain->err, "which domain?");
    g_assert_cmpint (noarg->status, ==, 1);
    assert_contains (noarg->err, "--connect");
    g_assert_cmpint (runtime->status, ==, 1);
    assert_contains (runtime->err, "--runtime needs a mode to set");
  }
}

/* The options every command takes, and GLib's conventions: -- ends the
 * options, options go before or after the arguments, --json alone never
 * swallows the next argument. */
static void
test_options (Fixture *f, gconstpointer data)
{
  g_autoptr (Run) dashdash = vgicctl (NULL, "history", "--", "--json");
  g_autoptr (Run) vm_after = vgicctl (NULL, "history", "--json", "gone-vm");
  g_autoptr (Run) vm_before = vgicctl (NULL, "history", "gone-vm", "--json=pretty");
  g_autoptr (Run) nopager = vgicctl (NULL, "stats", "--no-pager");
  g_autoptr (Run) quiet_status = vgicctl (NULL, "status", "-q");
  g_autoptr (Run) quiet_mode = vgicctl (NULL, "mode", "--quiet");
  g_autoptr (Run) quiet_history = vgicctl (NULL, "history", "-q", "no-such-vm");
  g_autoptr (Run) mode_json = vgicctl (NULL, "mode", "--json");
  g_autoptr (Run) set_quiet = vgicctl (NULL, "mode", "single", "-q", "--runtime");
  g_autoptr (Run) set_json = vgicctl (NULL, "mode", "--json=pretty", "off", "--runtime");
  g_autoptr (JsonNode) after = NULL, before = NULL, m = NULL, s = NULL;

  g_assert_cmpint (dashdash->status, ==, 0);
  g_assert_cmpstr (dashdash->out, ==, "vgicd has no operation of --json.\n");
  g_assert_cmpint (vm_after->status, ==, 0);
  after = parse_json (vm_after->out);
  g_assert_cmpuint (json_array_get_length (json_node_get_array (after)), ==, 2);
  g_assert_cmpstr (json_str (after, "0/vm"), ==, "gone-vm");
  g_assert_cmpint (vm_before->status, ==, 0);
  before = parse_json (vm_before->out);
  g_assert_true (json_node_equal (after, before));
  /* pretty: indented, one member a line */
  assert_contains (vm_before->out, "[\n  {\n");
  g_assert_cmpint (nopager->status, ==, 0);
  assert_contains (nopager->out, "saves:           7\n");
  g_assert_cmpint (quiet_status->status, ==, 0);
  g_assert_cmpstr (quiet_status->out, ==, "");
  /* the mode is the answer, not information: -q keeps it */
  g_assert_cmpstr (quiet_mode->out, ==, "auto\n");
  g_assert_cmpint (quiet_history->status, ==, 0);
  g_assert_cmpstr (quiet_history->out, ==, "");
  g_assert_cmpint (mode_json->status, ==, 0);
  m = parse_json (mode_json->out);
  g_assert_cmpstr (json_str (m, "mode"), ==, "auto");
  g_assert_cmpint (set_quiet->status, ==, 0);
  g_assert_cmpstr (set_quiet->out, ==, "");
  g_assert_cmpint (set_json->status, ==, 0);
  s = parse_json (set_json->out);
  g_assert_cmpstr (json_str (s, "mode"), ==, "off");
  g_assert_false (json_node_get_boolean (json_at (s, "saved")));
}

/* status's one readiness answer: ok, then degraded once the mode is off,
 * the human line and the JSON saying the same */
static void
test_status_state (Fixture *f, gconstpointer data)
{
  g_autoptr (Run) ok = vgicctl (NULL, "status");
  g_autoptr (Run) ok_json = vgicctl (NULL, "status", "--json");
  g_autoptr (Run) off = vgicctl (NULL, "mode", "off", "--runtime");
  g_autoptr (Run) deg = vgicctl (NULL, "status");
  g_autoptr (Run) deg_json = vgicctl (NULL, "status", "--json=pretty");
  g_autoptr (JsonNode) a = NULL, b = NULL;

  g_assert_cmpint (ok->status, ==, 0);
  g_assert_true (g_str_has_prefix (ok->out, "State:         ok (vgicd answers, mode auto, "
                                            "kernel batch unknown)\n"));
  a = parse_json (ok_json->out);
  g_assert_cmpstr (json_str (a, "state"), ==, "ok");
  /* root may ask for the configuration check: none of the stand-in's */
  g_assert_cmpint (json_int (a, "config-errors"), ==, 0);
  g_assert_cmpint (off->status, ==, 0);
  g_assert_cmpint (deg->status, ==, 0);
  g_assert_true (g_str_has_prefix (deg->out, "State:         degraded (mode off: vgicd "
                                             "declines saves"));
  b = parse_json (deg_json->out);
  g_assert_cmpstr (json_str (b, "state"), ==, "degraded");
  assert_contains (deg->out, json_str (b, "reason"));
  g_assert_cmpstr (json_str (b, "properties/Mode"), ==, "off");
}

/* Every command answers --json=pretty with JSON (enable and disable need a
 * libvirt, tests/libvirt's tier) */
static void
test_every_json (Fixture *f, gconstpointer data)
{
  static const char *const commands[][3] = {
    { "status" }, { "mode" }, { "sessions" }, { "stats" }, { "history" },
    { "metrics" }, { "check" }, { "dump", "RECORD" },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    {
      const char *arg = commands[i][1] ? g_getenv (commands[i][1]) : NULL;
      g_autoptr (Run) r = arg ? vgicctl (NULL, commands[i][0], "--json=pretty", arg)
                              : vgicctl (NULL, commands[i][0], "--json=pretty");
      g_autoptr (JsonNode) n = NULL;

      g_assert_cmpint (r->status, ==, 0);
      n = parse_json (r->out);
      g_assert_true (JSON_NODE_HOLDS_OBJECT (n) || JSON_NODE_HOLDS_ARRAY (n));
    }
  {
    g_autoptr (Run) d = vgicctl (NULL, "dump", "--json", g_getenv ("RECORD"));
    g_autoptr (JsonNode) n = parse_json (d->out);

    g_assert_cmpint (json_int (n, "nr-irqs"), ==, 64);
    g_assert_cmpuint (json_array_get_length (json_node_get_array (json_at (n, "vcpus"))), ==, 2);
    g_assert_true (g_str_has_prefix (json_str (n, "registers/0/attr"), "0x"));
  }
}

static void
test_status (Fixture *f, gconstpointer data)
{
  g_autoptr (Run) r = vgicctl (NULL, "status");
  g_autofree char *config_line = g_strdup_printf ("Config file:   %s\n", f->config);

  g_assert_cmpint (r->status, ==, 0);
  g_assert_cmpstr (r->err, ==, "");
  assert_contains (r->out, "Mode:          auto\n");
  assert_contains (r->out, "Kernel batch:  unknown (test stand-in)\n");
  assert_contains (r->out, "Version:       " PACKAGE_VERSION "\n");
  assert_contains (r->out, "Socket:        /run/vgicd/vgicd.sock\n");
  assert_contains (r->out, config_line);
  assert_contains (r->out, "Sessions:      0 attached, 9 since start, 3 peers refused\n");
  assert_contains (r->out, "Totals:        7 saves, 5 loads, 1 declined, "
                   "2 fallbacks, 1 failures\n");
}

static void
test_mode_print (Fixture *f, gconstpointer data)
{
  g_autoptr (Run) r = vgicctl (NULL, "mode");

  g_assert_cmpint (r->status, ==, 0);
  g_assert_cmpstr (r->out, ==, "auto\n");
}

static void
test_mode_persist (Fixture *f, gconstpointer data)
{
  g_autoptr (Run) set = vgicctl (NULL, "mode", "single");
  g_autoptr (Run) now = vgicctl (NULL, "mode");
  g_autofree char *after = read_file (f->config);
  g_autofree char *state_path = g_strconcat (f->config, ".state", NULL);
  g_autofree char *state = read_file (state_path);

  g_assert_cmpint (set->status, ==, 0);
  assert_contains (set->out, "single");
  g_assert_cmpstr (now->out, ==, "single\n");
  /* The configuration file is the operator's: vgicd saves in its own. */
  g_assert_cmpstr (after, ==, config_text);
  assert_contains (state, "Mode=single\n");
}

static void
test_mode_runtime (Fixture *f, gconstpointer data)
{
  g_autoptr (Run) set = vgicctl (NULL, "mode", "off", "--runtime");
  g_autoptr (Run) now = vgicctl (NULL, "mode");
  g_autofree char *after = read_file (f->config);

  g_assert_cmpint (set->status, ==, 0);
  g_assert_cmpstr (now->out, ==, "off\n");
  g_assert_cmpstr (after, ==, config_text);
}

static void
test_mode_unknown (Fixture *f, gconstpointer data)
{
  g_autoptr (Run) set = vgicctl (NULL, "mode", "bogus");
  g_autoptr (Run) now = vgicctl (NULL, "mode");
  g_autoptr (GError) error = NULL;
  g_autoptr (GVariant) reply = NULL;
  g_autofree char *after = read_file (f->config);

  g_assert_cmpint (set->status, ==, 1);
  assert_contains (set->err, "bogus");
  assert_contains (set->err, "auto, single, off");
  g_assert_cmpstr (now->out, ==, "auto\n");
  g_assert_cmpstr (after, ==, config_text);

  /* vgicd checks too, for clients other than vgicctl. */
  reply = g_dbus_connection_call_sync (conn, "org.vgicd.Manager1", "/org/vgicd/Manager1",
                                       "org.vgicd.Manager1", "SetMode",
                                       g_variant_new ("(sb)", "bogus", TRUE), NULL,
                                       0, -1, NULL, &error);
  g_assert_null (reply);
  g_assert_error (error, G_DBUS_ERROR, G_DBUS_ERROR_INVALID_ARGS);
  assert_contains (error->message, "auto, single, off");
}

/* When the file cannot be written the mode does not change either. */
static void
test_mode_persist_fails (void)
{
  g_autofree char *config = g_strdup_printf ("%s/no-such-dir/vgicd.conf", tmpdir);
  g_autoptr (GSubprocess) d = start_standin (bus_address, config, NULL);
  g_autoptr (Run) set = vgicctl (NULL, "mode", "single");
  g_autoptr (Run) now = vgicctl (NULL, "mode");
  g_autoptr (Run) rt = vgicctl (NULL, "mode", "single", "--runtime");
  g_autoptr (Run) now2 = vgicctl (NULL, "mode");

  g_assert_cmpint (set->status, ==, 2);
  assert_contains (set->err, "cannot save the mode in");
  assert_contains (set->err, config);
  g_assert_cmpstr (now->out, ==, "auto\n");
  g_assert_cmpint (rt->status, ==, 0);
  g_assert_cmpstr (now2->out, ==, "single\n");
  stop_daemon (d);
}

static void
assert_valid_json (const char *text)
{
  g_autoptr (GBytes) input = g_bytes_new (text, strlen (text));
  g_autoptr (Run) r = run_full (NULL, NULL, input, (const char *const[]) {
                                  "/usr/bin/python3", "-m", "json.tool", NULL });

  g_assert_cmpint (r->status, ==, 0);
}

/* parse_json() - vgicctl's --json output, parsed with json-glib (and checked
 * by python3's parser too: two readers, not vgicctl's own writer) */
static JsonNode *
parse_json (const char *text)
{
  g_autoptr (JsonParser) p = json_parser_new ();
  g_autoptr (GError) error = NULL;

  assert_valid_json (text);
  json_parser_load_from_data (p, text, -1, &error);
  g_assert_no_error (error);
  return json_node_copy (json_parser_get_root (p));
}

/* json_at() - the node at @path below @root: members and array indices
 * separated by '/' ("stats/saves", "0/name"); a missing one fails */
static JsonNode *
json_at (JsonNode *root, const char *path)
{
  g_auto (GStrv) parts = g_strsplit (path, "/", -1);
  JsonNode *n = root;

  for (guint i = 0; parts[i]; i++)
    {
      if (JSON_NODE_HOLDS_OBJECT (n) && json_object_has_member (json_node_get_object (n), parts[i]))
        n = json_object_get_member (json_node_get_object (n), parts[i]);
      else if (JSON_NODE_HOLDS_ARRAY (n) &&
               strtoul (parts[i], NULL, 10) < json_array_get_length (json_node_get_array (n)))
        n = json_array_get_element (json_node_get_array (n), strtoul (parts[i], NULL, 10));
      else
        g_error ("no %s in the JSON (at %s)", path, parts[i]);
    }
  return n;
}

static gint64
json_int (JsonNode *root, const char *path)
{
  JsonNode *n = json_at (root, path);

  g_assert_true (JSON_NODE_HOLDS_VALUE (n) && json_node_get_value_type (n) == G_TYPE_INT64);
  return json_node_get_int (n);
}

static const char *
json_str (JsonNode *root, const char *path)
{
  JsonNode *n = json_at (root, path);

  g_assert_true (JSON_NODE_HOLDS_VALUE (n) && json_node_get_value_type (n) == G_TYPE_STRING);
  return json_node_get_string (n);
}

/* json_find() - the first element of the array @root whose @key is the
 * string @value, or NULL */
static JsonNode *
json_find (JsonNode *root, const char *key, const char *value)
{
  JsonArray *a = json_node_get_array (root);

  for (guint i = 0; i < json_array_get_length (a); i++)
    {
      JsonObject *o = json_array_get_object_element (a, i);

      if (json_object_has_member (o, key) &&
          g_strcmp0 (json_object_get_string_member (o, key), value) == 0)
        return json_array_get_element (a, i);
    }
  return NULL;
}

static void
test_stats (Fixture *f, gconstpointer data)
{
  g_autoptr (Run) json = vgicctl (NULL, "stats", "--json");
  g_autoptr (Run) text = vgicctl (NULL, "stats");

  g_autoptr (JsonNode) n = NULL;

  g_assert_cmpint (json->status, ==, 0);
  n = parse_json (json->out);
  g_assert_cmpint (json_int (n, "saves"), ==, 7);
  g_assert_cmpint (json_int (n, "bytes-saved"), ==, 123456);
  g_assert_cmpint (json_int (n, "sessions"), ==, 0);
  g_assert_cmpint (json_int (n, "uptime-usec"), >=, 0);
  /* --json alone is one line */
  g_assert_true (strchr (json->out, '\n') == json->out + strlen (json->out) - 1);
  g_assert_cmpint (text->status, ==, 0);
  assert_contains (text->out, "saves:           7\n");
  assert_contains (text->out, "refused:         3\n");
}

/* The history outlives the sessions: the stand-in holds a VM that is gone
 * (a one-by-one save, then a batched one with its estimate) and a refused
 * load, the way real operations leave them. */
static void
test_history (Fixture *f, gconstpointer data)
{
  g_autoptr (Run) r = vgicctl (NULL, "history");
  g_autoptr (Run) json = vgicctl (NULL, "history", "--json");
  g_autoptr (Run) one = vgicctl (NULL, "history", "gone-vm");
  g_autoptr (Run) by_uuid = vgicctl (NULL, "history", "00000000-0000-4000-8000-000000000000");
  g_autoptr (Run) none = vgicctl (NULL, "history", "no-such-vm");
  g_autoptr (Run) two = vgicctl (NULL, "history", "a", "b");

  g_assert_cmpint (r->status, ==, 0);
  assert_contains (r->out, "WHEN");
  assert_contains (r->out, "1-BY-1 MS");
  /* the single save: measured; the batched one: estimated from it */
  assert_contains (r->out, " gone-vm              save single record ok         182.000   7175   7175   134896        180.0\n");
  assert_contains (r->out, " gone-vm              save batch  record ok           3.100      2   7175   134896       ~180.0\n");
  assert_contains (r->out, "load -      record refused ");
  assert_contains (r->out, "\n    record refused, nothing written: the record is for 4 vCPUs but "
                           "this VM has 8\n");
  /* oldest first */
  g_assert_true (strstr (r->out, "single") < strstr (r->out, "refused"));
  g_assert_cmpint (json->status, ==, 0);
  {
    g_autoptr (JsonNode) n = parse_json (json->out);
    JsonNode *gone = json_find (n, "vm", "gone-vm");
    JsonNode *quoted = json_find (n, "vm", "vm-0 \"q\\t\"");

    g_assert_nonnull (gone);
    g_assert_cmpint (json_int (gone, "single-ns"), ==, 180000000);
    g_assert_nonnull (quoted);
    g_assert_cmpstr (json_str (quoted, "outcome"), ==, "refused");
    gboolean estimated = FALSE;

    for (guint i = 0; i < json_array_get_length (json_node_get_array (n)); i++)
      {
        JsonObject *o = json_array_get_object_element (json_node_get_array (n), i);

        estimated |= json_object_get_boolean_member_with_default (o, "single-estimated", FALSE);
      }
    g_assert_true (estimated);
  }
  g_assert_cmpint (one->status, ==, 0);
  g_assert_null (strstr (one->out, "refused"));
  assert_contains (one->out, "batch");
  g_assert_cmpint (by_uuid->status, ==, 0);
  g_assert_null (strstr (by_uuid->out, "gone-vm"));
  assert_contains (by_uuid->out, "refused");
  g_assert_cmpint (none->status, ==, 0);
  g_assert_cmpstr (none->out, ==, "vgicd has no operation of no-such-vm.\n");
  g_assert_cmpint (two->status, !=, 0);
}

/* The Prometheus text: the stand-in's totals and its two successful saves'
 * histograms; status --json carries the same figures. */
static void
test_metrics (Fixture *f, gconstpointer data)
{
  g_autoptr (Run) r = vgicctl (NULL, "metrics");
  g_autoptr (Run) st = vgicctl (NULL, "status", "--json");

  g_assert_cmpint (r->status, ==, 0);
  assert_contains (r->out, "# TYPE vgicd_operations_total counter\n");
  assert_contains (r->out, "vgicd_operations_total{direction=\"save\",outcome=\"ok\"} 7\n");
  assert_contains (r->out, "vgicd_operations_total{direction=\"load\",outcome=\"refused\"} 1\n");
  /* every series from the start, zeros too */
  assert_contains (r->out, "vgicd_operations_total{direction=\"load\",outcome=\"failed\"} 0\n");
  assert_contains (r->out, "vgicd_record_bytes_total{direction=\"save\"} 123456\n");
  assert_contains (r->out, "vgicd_peers_refused_total 3\n");
  assert_contains (r->out, "vgicd_sessions_attached 2\n");
  g_assert_true (g_regex_match_simple ("^vgicd_start_time_seconds [0-9]+(\\.[0-9]{6})?$", r->out,
                                       G_REGEX_MULTILINE, 0));
  /* the names before 0.4.0, for one release, each saying what replaces it */
  assert_contains (r->out, "# TYPE vgicd_saves_total counter\nvgicd_saves_total 7\n");
  assert_contains (r->out, "# HELP vgicd_failures_total Deprecated, removed in the next release: "
                           "vgicd_operations_total{outcome=~\"failed|refused\"}.\n");
  assert_contains (r->out, "vgicd_failures_total 1\n");
  assert_contains (r->out, "vgicd_sessions 2\n");
  assert_contains (r->out, "vgicd_operation_duration_seconds_bucket{direction=\"save\","
                           "path=\"batch\",le=\"0.002\"} 0\n");
  assert_contains (r->out, "vgicd_operation_duration_seconds_bucket{direction=\"save\","
                           "path=\"batch\",le=\"0.005\"} 1\n");
  assert_contains (r->out, "vgicd_operation_duration_seconds_bucket{direction=\"save\","
                           "path=\"single\",le=\"+Inf\"} 1\n");
  assert_contains (r->out, "vgicd_operation_duration_seconds_sum{direction=\"save\","
                           "path=\"single\"} 0.182000000\n");
  /* A refused load is no duration. */
  g_assert_null (strstr (r->out, "vgicd_operation_duration_seconds_count{direction=\"load\""));
  g_assert_cmpint (st->status, ==, 0);
  {
    g_autoptr (JsonNode) n = parse_json (st->out);
    JsonArray *le;

    g_assert_cmpstr (json_str (n, "state"), ==, "ok");
    g_assert_cmpstr (json_str (n, "properties/Mode"), ==, "auto");
    g_assert_cmpint (json_int (n, "stats/saves"), ==, 7);
    g_assert_true (JSON_NODE_HOLDS_ARRAY (json_at (n, "stats/histograms")));
    /* the histogram's +Inf bound: JSON has no word for it */
    le = json_node_get_array (json_at (n, "stats/histograms/0/le-seconds"));

    g_assert_cmpuint (json_array_get_length (le), >, 1);
    g_assert_true (JSON_NODE_HOLDS_NULL (json_array_get_element (le, json_array_get_length (le) - 1)));
  }
  {
    /* metrics --json: the exposition parsed, families in the text's order */
    g_autoptr (Run) mj = vgicctl (NULL, "metrics", "--json=pretty");
    g_autoptr (JsonNode) n = NULL;
    JsonNode *saves, *hist, *sample;

    g_assert_cmpint (mj->status, ==, 0);
    n = parse_json (mj->out);
    saves = json_find (n, "name", "vgicd_saves_total");
    g_assert_nonnull (saves);
    g_assert_cmpstr (json_str (saves, "type"), ==, "counter");
    g_assert_cmpstr (json_str (saves, "help"), !=, "");
    g_assert_cmpint (json_int (saves, "samples/0/value"), ==, 7);
    hist = json_find (n, "name", "vgicd_operation_duration_seconds");
    g_assert_nonnull (hist);
    g_assert_cmpstr (json_str (hist, "type"), ==, "histogram");
    /* its _bucket, _sum and _count series are its samples */
    sample = json_find (json_at (hist, "samples"), "name",
                        "vgicd_operation_duration_seconds_sum");
    g_assert_nonnull (sample);
    g_assert_cmpstr (json_str (sample, "labels/direction"), ==, "save");
    g_assert_null (json_find (n, "name", "vgicd_operation_duration_seconds_bucket"));
  }
}

static void
test_sessions_none (Fixture *f, gconstpointer data)
{
  g_autoptr (Run) r = vgicctl (NULL, "sessions");
  g_autoptr (Run) json = vgicctl (NULL, "sessions", "--json");

  g_assert_cmpint (r->status, ==, 0);
  g_assert_cmpstr (r->out, ==, "No VM is attached to vgicd.\n");
  g_assert_cmpint (json->status, ==, 0);
  g_assert_cmpstr (json->out, ==, "[]\n");
}

static void
test_sessions_two (Fixture *f, gconstpointer data)
{
  g_autoptr (Run) r = vgicctl (NULL, "sessions");
  g_autoptr (Run) json = vgicctl (NULL, "sessions", "--json");
  g_autoptr (Run) st = vgicctl (NULL, "status");

  g_assert_cmpint (r->status, ==, 0);
  assert_contains (r->out, "NAME");
  assert_contains (r->out, "vm-0 \"q\\t\"");
  assert_contains (r->out, "00000000-0000-4000-8000-000000000001");
  assert_contains (r->out, "1.235 ms/3/batch");
  assert_contains (r->out, "MODE");
  /* Only the VM whose mode is not the host's gets a line saying why. */
  assert_contains (r->out, ": mode off, set by /etc/vgicd/vms.conf [name vm-1]");
  g_assert_null (strstr (r->out, "set by host"));
  g_assert_cmpint (json->status, ==, 0);
  {
    g_autoptr (JsonNode) n = parse_json (json->out);
    /* the quote and the backslash came through */
    JsonNode *vm1 = json_find (n, "name", "vm-1 \"q\\t\"");

    g_assert_nonnull (vm1);
    g_assert_cmpint (json_int (vm1, "vcpus"), ==, 8);
    g_assert_true (json_node_get_boolean (json_at (vm1, "kernel-batch")));
  }
  assert_contains (st->out, "Sessions:      2 attached");
}

typedef struct {
  GMainLoop *loop;
  char *key;
  char *value;
} Wait;

static void
on_properties_changed (GDBusConnection *c, const char *sender, const char *path,
                       const char *iface, const char *signal, GVariant *params,
                       gpointer data)
{
  Wait *w = data;
  g_autoptr (GVariant) changed = g_variant_get_child_value (params, 1);
  const char *v;

  if (g_variant_lookup (changed, w->key, "&s", &v) && g_str_equal (v, w->value))
    g_main_loop_quit (w->loop);
}

static gboolean
on_timeout (gpointer data)
{
  g_error ("no PropertiesChanged for %s", ((Wait *) data)->key);
  return G_SOURCE_REMOVE;
}

/* Wait for PropertiesChanged(@key = @value) after @trigger ran. */
static void
expect_change (const char *key, const char *value, void (*trigger) (gpointer),
               gpointer trigger_data)
{
  Wait w = { g_main_loop_new (NULL, FALSE), (char *) key, (char *) value };
  guint id, timeout;

  id = g_dbus_connection_signal_subscribe (conn, "org.vgicd.Manager1",
                                           "org.freedesktop.DBus.Properties",
                                           "PropertiesChanged", "/org/vgicd/Manager1",
                                           "org.vgicd.Manager1", 0,
                                           on_properties_changed, &w, NULL);
  /* The match rule must be in place before the change. */
  g_dbus_connection_call_sync (conn, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                               "org.freedesktop.DBus.Peer", "Ping", NULL, NULL, 0,
                               -1, NULL, NULL);
  trigger (trigger_data);
  timeout = g_timeout_add_seconds (20, on_timeout, &w);
  g_main_loop_run (w.loop);
  g_source_remove (timeout);
  g_dbus_connection_signal_unsubscribe (conn, id);
  g_main_loop_unref (w.loop);
}

static void
set_off_runtime (gpointer data)
{
  g_autoptr (Run) r = vgicctl (NULL, "mode", "off", "--runtime");

  g_assert_cmpint (r->status, ==, 0);
}

static void
send_usr1 (gpointer data)
{
  g_subprocess_send_signal (data, SIGUSR1);
}

static void
test_properties_changed (Fixture *f, gconstpointer data)
{
  g_autoptr (Run) st = NULL;

  expect_change ("Mode", "off", set_off_runtime, NULL);
  expect_change ("KernelBatch", "yes", send_usr1, f->daemon);
  st = vgicctl (NULL, "status");
  assert_contains (st->out, "Kernel batch:  yes (executor of VM vm-0)\n");
  assert_contains (st->out, "Mode:          off\n");
}

#define NEED_USER() \
  do { if (!have_user) { g_test_skip ("needs root and user " TEST_USER); return; } } while (0)

static void
test_user_reads (Fixture *f, gconstpointer data)
{
  NEED_USER ();
  {
    g_autoptr (Run) st = vgicctl (TEST_USER, "status");
    g_autoptr (Run) stats = vgicctl (TEST_USER, "stats", "--json");
    g_autoptr (Run) sessions = vgicctl (TEST_USER, "sessions");
    g_autoptr (Run) mode = vgicctl (TEST_USER, "mode");

    g_assert_cmpint (st->status, ==, 0);
    assert_contains (st->out, "Mode:          auto\n");
    g_assert_cmpint (stats->status, ==, 0);
    assert_valid_json (stats->out);
    g_assert_cmpint (sessions->status, ==, 0);
    g_assert_cmpint (mode->status, ==, 0);
    g_assert_cmpstr (mode->out, ==, "auto\n");
  }
}

/* The policy file stops a non-root SetMode before it reaches vgicd. */
static void
test_user_set_mode_policy (Fixture *f, gconstpointer data)
{
  NEED_USER ();
  {
    g_autoptr (Run) set = vgicctl (TEST_USER, "mode", "single");
    g_autoptr (Run) now = vgicctl (NULL, "mode");
    g_autofree char *after = read_file (f->config);

    g_assert_cmpint (set->status, ==, 4);
    assert_contains (set->err, "permission denied");
    assert_contains (set->err, "as root");
    /* the bus's refusal, not vgicd's */
    assert_contains (set->err, "system bus policy");
    g_assert_cmpstr (now->out, ==, "auto\n");
    g_assert_cmpstr (after, ==, config_text);
  }
}

/* With the policy loosened, vgicd itself still refuses a non-root caller. */
static void
test_user_set_mode_daemon (void)
{
  NEED_USER ();
  {
    g_autofree char *address = NULL;
    g_autoptr (GSubprocess) bus = start_bus ("loose",
      "<policy context=\"mandatory\">"
      "<allow send_destination=\"org.vgicd.Manager1\"/></policy>", &address);
    g_autofree char *config = new_config (config_text);
    g_autoptr (GSubprocess) d = start_standin (address, config, NULL);
    g_autoptr (Run) set = run_full (address, TEST_USER, NULL, (const char *const[]) {
                                      g_getenv ("VGICCTL"), "mode", "single", NULL });
    g_autoptr (Run) now = run_full (address, NULL, NULL, (const char *const[]) {
                                      g_getenv ("VGICCTL"), "mode", NULL });
    g_autofree char *after = read_file (config);

    g_assert_cmpint (set->status, ==, 4);
    assert_contains (set->err, "only root may change");
    assert_contains (set->err, "as root");
    g_assert_cmpstr (now->out, ==, "auto\n");
    g_assert_cmpstr (after, ==, config_text);
    stop (d);
    g_assert_cmpint (g_subprocess_get_exit_status (d), ==, 0);
    stop (bus);
  }
}

/* The history and the metrics are for root, vgicd and group vgicd: the bus
 * refuses anyone else, and vgicctl says how to be let in. */
static void
test_user_history_denied (Fixture *f, gconstpointer data)
{
  NEED_USER ();
  {
    g_autoptr (Run) history = vgicctl (TEST_USER, "history");
    g_autoptr (Run) metrics = vgicctl (TEST_USER, "metrics");
    g_autoptr (Run) stats = vgicctl (TEST_USER, "stats");

    g_assert_cmpint (history->status, ==, 4);
    assert_contains (history->err, "permission denied");
    assert_contains (history->err, "group vgicd");
    assert_contains (history->err, "adduser");
    g_assert_cmpstr (history->out, ==, "");
    g_assert_cmpint (metrics->status, ==, 4);
    assert_contains (metrics->err, "group vgicd");
    /* the cheap figures stay open to all */
    g_assert_cmpint (stats->status, ==, 0);
  }
}

static guint
history_len (GDBusConnection *c, guint32 limit)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GVariant) r = NULL;
  g_autoptr (GVariant) list = NULL;

  r = g_dbus_connection_call_sync (c, "org.vgicd.Manager1", "/org/vgicd/Manager1",
                                   "org.vgicd.Manager1", "GetHistory",
                                   g_variant_new ("(su)", "", limit),
                                   G_VARIANT_TYPE ("(aa{sv})"), 0, 300 * 1000, NULL, &error);
  g_assert_no_error (error);
  list = g_variant_get_child_value (r, 0);
  /* far below the bus's 32 MiB limit on a message */
  g_assert_cmpuint (g_variant_get_size (r), <, 8 * 1024 * 1024);
  return g_variant_n_children (list);
}

/* N12: with History= and HistoryVMs= at their maxima and a history fuller
 * than one bus message can carry, GetHistory("", 0) is answered (the
 * newest 256) and vgicd keeps its name; a larger limit gets 4096 at most. */
static void
test_history_bounded (void)
{
  g_autofree char *config = new_config ("[vgicd]\nProbe=false\nHistory=1024\n"
                                        "HistoryVMs=65536\n");
  g_autofree char *state = g_strconcat (config, ".state", NULL);
  const char *args[] = { g_getenv ("STANDIN"), "--config", config, "--state", state,
                         "--fill-history", "65536", NULL };
  g_autoptr (GSubprocess) d = start_daemon (bus_address, args);

  g_assert_cmpuint (history_len (conn, 0), ==, 256);
  g_assert_true (name_has_owner (conn));
  g_assert_cmpuint (history_len (conn, G_MAXUINT32), ==, 4096);
  g_assert_cmpuint (history_len (conn, 10), ==, 10);
  g_assert_true (name_has_owner (conn));
  stop_daemon (d);
}

static guint64 stats_u64 (const char *key);

/* Calls whose caller has left are not computed: a caller queues 20 large
 * GetHistory calls (each a different query, so none is answered from the
 * last answer) and disconnects; vgicd drops what it had not answered yet
 * and counts it. */
static void
test_history_caller_gone (void)
{
  g_autofree char *config = new_config ("[vgicd]\nProbe=false\nHistory=1024\n"
                                        "HistoryVMs=65536\n");
  g_autofree char *state = g_strconcat (config, ".state", NULL);
  const char *args[] = { g_getenv ("STANDIN"), "--config", config, "--state", state,
                         "--fill-history", "65536", NULL };
  g_autoptr (GSubprocess) d = start_daemon (bus_address, args);
  g_autoptr (GDBusConnection) c = NULL;
  g_autoptr (GError) error = NULL;
  gint64 deadline = g_get_monotonic_time () + 120 * G_USEC_PER_SEC;

  c = g_dbus_connection_new_for_address_sync (bus_address,
        G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
        G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION, NULL, NULL, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < 20; i++)
    g_dbus_connection_call (c, "org.vgicd.Manager1", "/org/vgicd/Manager1",
                            "org.vgicd.Manager1", "GetHistory",
                            g_variant_new ("(su)", "", 4096 - i), NULL, 0, -1, NULL,
                            NULL, NULL);
  g_dbus_connection_flush_sync (c, NULL, &error);
  g_assert_no_error (error);
  g_dbus_connection_close_sync (c, NULL, &error);
  g_assert_no_error (error);
  while (stats_u64 ("manager-dropped") == 0)
    {
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_usleep (100000);
    }
  g_test_message ("%" G_GUINT64_FORMAT " dropped", stats_u64 ("manager-dropped"));
  g_assert_true (name_has_owner (conn));
  stop_daemon (d);
}

typedef struct {
  guint ok, limited, other, pending;
  char *message;
} Flood;

static void
flood_done (GObject *source, GAsyncResult *result, gpointer data)
{
  Flood *fl = data;
  g_autoptr (GError) error = NULL;
  g_autoptr (GVariant) r = g_dbus_connection_call_finish (G_DBUS_CONNECTION (source),
                                                          result, &error);
  g_autofree char *name = error ? g_dbus_error_get_remote_error (error) : NULL;

  if (r)
    fl->ok++;
  else if (g_strcmp0 (name, "org.freedesktop.DBus.Error.LimitsExceeded") == 0 &&
           strstr (error->message, "vgicd"))
    {
      fl->limited++;
      if (!fl->message)
        fl->message = g_strdup (error->message);
    }
  else
    {
      g_test_message ("unexpected: %s", error->message);
      fl->other++;
    }
  fl->pending--;
}

static guint64
stats_u64 (const char *key)
{
  g_autoptr (GVariant) r = NULL;
  g_autoptr (GVariant) dict = NULL;
  g_autoptr (GError) error = NULL;
  guint64 v = G_MAXUINT64;

  r = g_dbus_connection_call_sync (conn, "org.vgicd.Manager1", "/org/vgicd/Manager1",
                                   "org.vgicd.Manager1", "GetStats", NULL,
                                   G_VARIANT_TYPE ("(a{sv})"), 0, -1, NULL, &error);
  g_assert_no_error (error);
  dict = g_variant_get_child_value (r, 0);
  g_assert_true (g_variant_lookup (dict, key, "t", &v));
  return v;
}

static gboolean
tick (gpointer data)
{
  return G_SOURCE_CONTINUE;
}

/* One caller's calls beyond its token bucket are dropped before any work
 * and counted; the first of them is answered LimitsExceeded, the others
 * are not answered at all (they hold the caller's own quota of pending
 * calls at the bus); other callers are served meanwhile; a second later
 * the caller is served again. */
static void
test_rate_limit (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GDBusConnection) c = NULL;
  g_autoptr (GVariant) again = NULL;
  Flood fl = { 0 };
  const guint n = 100;		/* in flight at once: the bus refuses a connection's 129th */
  /* Long enough for a slow machine; the loops end as soon as they can. */
  gint64 until = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;
  guint wake = g_timeout_add (50, tick, NULL);

  c = g_dbus_connection_new_for_address_sync (bus_address,
        G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
        G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (stats_u64 ("manager-refused"), ==, 0);
  for (guint i = 0; i < n; i++)
    {
      fl.pending++;
      g_dbus_connection_call (c, "org.vgicd.Manager1", "/org/vgicd/Manager1",
                              "org.vgicd.Manager1", "GetStats", NULL,
                              G_VARIANT_TYPE ("(a{sv})"), 0, 120 * 1000, NULL,
                              flood_done, &fl);
    }
  /* The answers there will be, and the refusals counted: then nothing
   * more comes. */
  while (g_get_monotonic_time () < until && (fl.ok < 32 || fl.limited < 1))
    g_main_context_iteration (NULL, TRUE);
  /* (conn has a bucket too: asked every 100 ms, not at each event) */
  while (g_get_monotonic_time () < until && stats_u64 ("manager-refused") < n - fl.ok)
    g_usleep (G_USEC_PER_SEC / 10);
  g_test_message ("%u answered, %u refused with an error, %u not answered", fl.ok,
                  fl.limited, fl.pending);
  g_assert_cmpuint (fl.other, ==, 0);
  g_assert_cmpuint (fl.ok, >=, 32);
  g_assert_cmpuint (fl.ok, <, n);
  /* One error a second: the burst arrives well within one, on any
   * machine, but not necessarily within the same second boundary. */
  g_assert_cmpuint (fl.limited, >=, 1);
  g_assert_cmpuint (fl.limited, <=, 2);
  assert_contains (fl.message, "too many calls");
  /* counted, each of them; and another caller (conn) is served meanwhile */
  g_assert_cmpuint (stats_u64 ("manager-refused"), ==, n - fl.ok);
  g_assert_cmpuint (fl.pending, ==, n - fl.ok - fl.limited);
  /* The bucket refills: a second later, this caller is answered again. */
  g_usleep (G_USEC_PER_SEC + G_USEC_PER_SEC / 10);
  again = g_dbus_connection_call_sync (c, "org.vgicd.Manager1", "/org/vgicd/Manager1",
                                       "org.vgicd.Manager1", "GetStats", NULL,
                                       G_VARIANT_TYPE ("(a{sv})"), 0, 10 * 1000, NULL, &error);
  g_assert_no_error (error);
  g_source_remove (wake);
  /* The unanswered calls stay with the connection; closing it ends them. */
  g_dbus_connection_close_sync (c, NULL, NULL);
  while (fl.pending)
    g_main_context_iteration (NULL, TRUE);
  g_free (fl.message);
}

static void
test_user_cannot_own (void)
{
  NEED_USER ();
  {
    g_autofree char *config = new_config (config_text);
    g_autoptr (Run) r = run_full (bus_address, TEST_USER, NULL, (const char *const[]) {
                                    g_getenv ("STANDIN"), "--config", config, NULL });

    g_assert_cmpint (r->status, ==, 1);
    assert_contains (r->err, "does not let this user own org.vgicd.Manager1");
    g_assert_false (name_has_owner (conn));
  }
}

static void
test_name_taken (Fixture *f, gconstpointer data)
{
  g_autoptr (Run) r = run_full (bus_address, NULL, NULL, (const char *const[]) {
                                  g_getenv ("STANDIN"), "--config", f->config, NULL });

  g_assert_cmpint (r->status, ==, 1);
  assert_contains (r->err, "already owned");
  assert_contains (r->err, "another vgicd is running");
}

static void
test_unreachable (void)
{
  g_autoptr (Run) noname = vgicctl (NULL, "status");
  g_autoptr (Run) nobus = run_full ("unix:path=/nonexistent/bus", NULL, NULL,
                                    (const char *const[]) { g_getenv ("VGICCTL"),
                                                            "stats", NULL });
  g_autoptr (Run) setmode = vgicctl (NULL, "mode", "off");

  g_assert_cmpint (noname->status, ==, 2);
  assert_contains (noname->err, "is vgicd running? systemctl status vgicd");
  g_assert_cmpint (nobus->status, ==, 2);
  /* The bus is the cause, not vgicd: said so. */
  assert_contains (nobus->err, "vgicctl: stats: the system bus is not running (");
  assert_contains (nobus->err, "systemctl status dbus\n");
  g_assert_cmpint (setmode->status, ==, 2);
  {
    /* down: the state is still printed, with the usual exit status */
    g_autoptr (Run) json = vgicctl (NULL, "status", "--json");
    g_autoptr (Run) text = vgicctl (NULL, "status");
    g_autoptr (JsonNode) n = NULL;

    g_assert_cmpint (json->status, ==, 2);
    n = parse_json (json->out);
    g_assert_cmpstr (json_str (n, "state"), ==, "down");
    assert_contains (json_str (n, "reason"), "cannot reach vgicd");
    g_assert_true (JSON_NODE_HOLDS_NULL (json_at (n, "properties")));
    g_assert_cmpint (text->status, ==, 2);
    g_assert_true (g_str_has_prefix (text->out, "State:         down (cannot reach vgicd"));
  }
}

static void
test_dump (void)
{
  g_autofree char *garbage = new_config ("not a record\n");
  g_autoptr (GBytes) record = NULL;
  g_autoptr (Run) bad = vgicctl (NULL, "dump", garbage);
  g_autoptr (Run) missing = vgicctl (NULL, "dump", "/nonexistent/record");
  g_autoptr (Run) good = vgicctl (NULL, "dump", g_getenv ("RECORD"));
  g_autoptr (Run) piped = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GMappedFile) file = g_mapped_file_new (g_getenv ("RECORD"), FALSE, &error);

  g_assert_no_error (error);
  record = g_mapped_file_get_bytes (file);
  piped = run_full (NULL, NULL, record, (const char *const[]) {
                      g_getenv ("VGICCTL"), "dump", "-", NULL });

  g_assert_cmpint (bad->status, ==, 3);
  assert_contains (bad->err, "is not a valid vGIC state record");
  assert_contains (bad->err, "magic");
  g_assert_cmpint (missing->status, ==, 3);
  assert_contains (missing->err, "/nonexistent/record");
  g_assert_cmpint (good->status, ==, 0);
  g_assert_cmpuint (strlen (good->out), >, 100);
  g_assert_cmpint (piped->status, ==, 0);
  g_assert_cmpstr (piped->out, ==, good->out);
}

/* The real daemon (vgicd-main.c) serving Manager1. */
static void
test_real_vgicd (void)
{
  const char *vgicd = g_getenv ("VGICD");
  g_autofree char *config = NULL;
  g_autofree char *socket = NULL;
  g_autofree char *state = NULL;
  g_autofree char *vms = NULL;
  g_autoptr (GSubprocess) d = NULL;

  if (!vgicd || !*vgicd)
    {
      g_test_skip ("vgicd is not built");
      return;
    }
  config = new_config ("[vgicd]\nMode=single\nProbe=false\n");
  socket = g_strdup_printf ("%s/vgicd.sock", tmpdir);
  state = g_strdup_printf ("%s/vgicd-state.conf", tmpdir);
  vms = g_strdup_printf ("%s/vms", tmpdir);
  /* Never the host's state or per-VM policy. */
  d = start_daemon (bus_address, (const char *const[]) {
                      vgicd, "--config", config, "--socket", socket, "--state", state,
                      "--vms-conf", vms, "--vms-dir", vms, NULL });
  {
    g_autoptr (Run) st = vgicctl (NULL, "status");
    g_autoptr (Run) set = vgicctl (NULL, "mode", "off", "--runtime");
    g_autoptr (Run) now = vgicctl (NULL, "mode");
    g_autoptr (Run) json = vgicctl (NULL, "stats", "--json");
    g_autoptr (Run) sessions = vgicctl (NULL, "sessions");

    g_assert_cmpint (st->status, ==, 0);
    assert_contains (st->out, "Mode:          single\n");
    assert_contains (st->out, "Version:       " PACKAGE_VERSION "\n");
    g_assert_cmpint (set->status, ==, 0);
    g_assert_cmpstr (now->out, ==, "off\n");
    g_assert_cmpint (json->status, ==, 0);
    assert_valid_json (json->out);
    g_assert_cmpstr (sessions->out, ==, "No VM is attached to vgicd.\n");
  }
  {
    /* every command that asks vgicd answers --json=pretty with JSON from
     * the real daemon too (its metrics text parsed, its state judged) */
    static const char *const commands[] = {
      "status", "mode", "sessions", "stats", "history", "metrics", "check",
    };

    for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
      {
        g_autoptr (Run) r = vgicctl (NULL, commands[i], "--json=pretty");
        g_autoptr (JsonNode) n = NULL;

        g_assert_cmpint (r->status, ==, 0);
        n = parse_json (r->out);
        if (g_str_equal (commands[i], "status"))
          {
            /* mode off (set above): degraded, and says why */
            g_assert_cmpstr (json_str (n, "state"), ==, "degraded");
            assert_contains (json_str (n, "reason"), "mode off");
          }
        if (g_str_equal (commands[i], "metrics"))
          g_assert_nonnull (json_find (n, "name", "vgicd_saves_total"));
      }
  }
  {
    /* check: the files this vgicd loads, read again now (a drop-in added
     * after it started), as vgicd --check-config prints them. */
    g_autoptr (Run) clean = vgicctl (NULL, "check");
    g_autofree char *dir = g_strconcat (config, ".d", NULL);
    g_autofree char *dropin = g_build_filename (dir, "50-bad.conf", NULL);
    g_autofree char *want = g_strdup_printf ("%s:3: error: [vgicd] Mode=fast is not a mode",
                                             dropin);
    g_autoptr (GError) error = NULL;

    g_assert_cmpint (clean->status, ==, 0);
    g_assert_cmpstr (clean->out, ==, "");
    g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
    g_file_set_contents (dropin, "[vgicd]\nMdoe=off\nMode=fast\n", -1, &error);
    g_assert_no_error (error);
    chmod (dropin, 0644);
    {
      g_autoptr (Run) bad = vgicctl (NULL, "check");
      g_autoptr (Run) json = vgicctl (NULL, "check", "--json");

      g_assert_cmpint (bad->status, ==, 3);
      assert_contains (bad->out, want);
      assert_contains (bad->out, ":2: warning: unknown key [vgicd] Mdoe ignored; did you mean Mode?");
      g_assert_cmpint (json->status, ==, 3);
      {
        g_autoptr (JsonNode) n = parse_json (json->out);
        JsonNode *e = json_find (n, "level", "error");

        g_assert_nonnull (e);
        g_assert_cmpint (json_int (e, "line"), ==, 3);
        g_assert_cmpstr (json_str (e, "file"), ==, dropin);
      }
      {
        /* status: the same error makes vgicd degraded, for root */
        g_autoptr (Run) st = vgicctl (NULL, "status", "--json");
        g_autoptr (JsonNode) n = parse_json (st->out);

        g_assert_cmpint (st->status, ==, 0);
        g_assert_cmpstr (json_str (n, "state"), ==, "degraded");
        assert_contains (json_str (n, "reason"), "the configuration has 1 error (vgicctl check)");
        g_assert_cmpint (json_int (n, "config-errors"), ==, 1);
      }
    }
    if (have_user)
      {
        g_autoptr (Run) denied = vgicctl (TEST_USER, "check");

        g_assert_cmpint (denied->status, ==, 4);
      }
  }
  stop_daemon (d);
}

static gboolean
ensure_test_user (void)
{
  if (getuid () != 0)
    return FALSE;
  if (!getpwnam (TEST_USER))
    {
      g_autoptr (Run) r = run_full (NULL, NULL, NULL, (const char *const[]) {
                                      "useradd", "--system", "--no-create-home",
                                      "--shell", "/usr/sbin/nologin", TEST_USER, NULL });
      if (r->status != 0)
        return FALSE;
    }
  return getpwnam (TEST_USER) != NULL;
}

#define ADD(name, fn, data) \
  g_test_add ("/vgicctl/" name, Fixture, data, fixture_setup, fn, fixture_teardown)

int
main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  int ret;

  g_test_init (&argc, &argv, NULL);
  if (!g_getenv ("VGICCTL") || !g_getenv ("STANDIN") || !g_getenv ("POLICY") ||
      !g_getenv ("BUS_TEMPLATE") || !g_getenv ("RECORD"))
    g_error ("run me through meson test (VGICCTL, STANDIN, POLICY, "
             "BUS_TEMPLATE, RECORD are not set)");

  tmpdir = g_dir_make_tmp ("vgicd-manager-XXXXXX", &error);
  g_assert_no_error (error);
  /* The unprivileged user must reach the bus socket and the config. */
  chmod (tmpdir, 0755);
  have_user = ensure_test_user ();

  bus_proc = start_bus ("system", NULL, &bus_address);
  conn = g_dbus_connection_new_for_address_sync (bus_address,
           G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
           G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION, NULL, NULL, &error);
  g_assert_no_error (error);

  g_test_add_func ("/vgicctl/usage", test_usage);
  ADD ("status", test_status, NULL);
  ADD ("status/state", test_status_state, NULL);
  ADD ("options", test_options, "2");
  ADD ("every-json", test_every_json, "2");
  ADD ("mode/print", test_mode_print, NULL);
  ADD ("mode/persist", test_mode_persist, NULL);
  ADD ("mode/runtime", test_mode_runtime, NULL);
  ADD ("mode/unknown", test_mode_unknown, NULL);
  g_test_add_func ("/vgicctl/mode/persist-fails", test_mode_persist_fails);
  ADD ("stats", test_stats, NULL);
  ADD ("sessions/none", test_sessions_none, NULL);
  ADD ("sessions/two", test_sessions_two, "2");
  ADD ("history", test_history, "2");
  ADD ("metrics", test_metrics, "2");
  ADD ("properties-changed", test_properties_changed, NULL);
  ADD ("user/reads", test_user_reads, NULL);
  ADD ("user/set-mode-refused-by-policy", test_user_set_mode_policy, NULL);
  g_test_add_func ("/vgicctl/user/set-mode-refused-by-vgicd", test_user_set_mode_daemon);
  g_test_add_func ("/vgicctl/user/cannot-own-name", test_user_cannot_own);
  ADD ("user/history-refused-by-policy", test_user_history_denied, "2");
  g_test_add_func ("/vgicctl/history/bounded", test_history_bounded);
  ADD ("rate-limit", test_rate_limit, NULL);
  g_test_add_func ("/vgicctl/history/caller-gone", test_history_caller_gone);
  ADD ("name-taken", test_name_taken, NULL);
  g_test_add_func ("/vgicctl/unreachable", test_unreachable);
  g_test_add_func ("/vgicctl/dump", test_dump);
  g_test_add_func ("/vgicctl/real-vgicd", test_real_vgicd);
  ret = g_test_run ();

  g_dbus_connection_close_sync (conn, NULL, NULL);
  g_object_unref (conn);
  stop (bus_proc);
  g_object_unref (bus_proc);
  g_free (bus_address);
  test_remove_tree (tmpdir);
  g_free (tmpdir);
  return ret;
}
