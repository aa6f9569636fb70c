/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * with-vgicd.c - run a command beside a real vgicd, for the docs checks
 * that compare the documents with what vgicd and vgicctl really answer.
 *
 *   with-vgicd VGICD POLICY -- COMMAND [ARGS...]
 *
 * starts vgicd on a private system bus carrying the project's policy file
 * (tests/support's harness, as the integration tests do), runs COMMAND with
 * DBUS_SYSTEM_BUS_ADDRESS pointing at that bus, so that a plain `vgicctl`
 * talks to this vgicd, and exits with COMMAND's status.  COMMAND also gets
 * VGICD_GETSTATS: a real GetStats reply's keys, one "KEY TYPE" a line, read
 * here because a check must not learn them from vgicctl, one of the things
 * it checks.
 */
#include <stdio.h>
#include <sys/wait.h>

#include "vgicd-harness.h"
#include "vgicd/manager.h"

/* getstats() - GetStats on @bus, once vgicd owns its name: its socket
 * listens before it takes the name, and the harness returns at the socket.
 * Up to 5 s. */
static GVariant *
getstats (GDBusConnection *bus, GError **error)
{
  for (int i = 0; i < 500; i++)
    {
      g_autoptr (GVariant) owned = NULL;
      gboolean has_owner = FALSE;

      owned = g_dbus_connection_call_sync (bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                           "org.freedesktop.DBus", "NameHasOwner",
                                           g_variant_new ("(s)", VGICD_MANAGER_NAME),
                                           G_VARIANT_TYPE ("(b)"), G_DBUS_CALL_FLAGS_NONE,
                                           1000, NULL, error);
      if (!owned)
        return NULL;
      g_variant_get (owned, "(b)", &has_owner);
      if (has_owner)
        return g_dbus_connection_call_sync (bus, VGICD_MANAGER_NAME, VGICD_MANAGER_PATH,
                                            VGICD_MANAGER_INTERFACE, "GetStats", NULL,
                                            G_VARIANT_TYPE ("(a{sv})"), G_DBUS_CALL_FLAGS_NONE,
                                            5000, NULL, error);
      g_usleep (10 * 1000);
    }
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
               "vgicd did not take " VGICD_MANAGER_NAME " within 5 s");
  return NULL;
}

int
main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdHarness) h = NULL;
  g_autoptr (GDBusConnection) bus = NULL;
  g_autoptr (GVariant) reply = NULL;
  g_autoptr (GVariant) stats = NULL;
  g_autoptr (GString) keys = g_string_new (NULL);
  g_auto (GStrv) env = NULL;
  GVariantIter iter;
  const char *key;
  GVariant *value;
  int status;

  if (argc < 5 || !g_str_equal (argv[3], "--"))
    {
      fprintf (stderr, "Usage: with-vgicd VGICD POLICY -- COMMAND [ARGS...]\n");
      return 2;
    }
  h = vgicd_harness_start (argv[1], argv[2], "", &error);
  if (!h)
    {
      fprintf (stderr, "with-vgicd: cannot start vgicd: %s\n", error->message);
      return 2;
    }

  bus = g_dbus_connection_new_for_address_sync (h->bus_address,
                                                G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                                G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                                                NULL, NULL, &error);
  if (!bus || !(reply = getstats (bus, &error)))
    {
      fprintf (stderr, "with-vgicd: cannot ask vgicd for GetStats: %s\n", error->message);
      return 2;
    }
  stats = g_variant_get_child_value (reply, 0);
  g_variant_iter_init (&iter, stats);
  while (g_variant_iter_next (&iter, "{&sv}", &key, &value))
    {
      g_string_append_printf (keys, "%s %s\n", key, g_variant_get_type_string (value));
      g_variant_unref (value);
    }

  env = g_environ_setenv (g_get_environ (), "DBUS_SYSTEM_BUS_ADDRESS", h->bus_address, TRUE);
  env = g_environ_setenv (env, "VGICD_GETSTATS", keys->str, TRUE);
  if (!g_spawn_sync (NULL, argv + 4, env, G_SPAWN_SEARCH_PATH | G_SPAWN_CHILD_INHERITS_STDIN,
                     NULL, NULL, NULL, NULL, &status, &error))
    {
      fprintf (stderr, "with-vgicd: cannot run %s: %s\n", argv[4], error->message);
      return 2;
    }
  /* The command's own verdict, 0 or its failure. */
  if (WIFEXITED (status))
    return WEXITSTATUS (status);
  fprintf (stderr, "with-vgicd: %s was killed by signal %d\n", argv[4], WTERMSIG (status));
  return 2;
}
