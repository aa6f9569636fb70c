/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-client-dbus.c - Session1 by D-Bus, libvgicd's end: each VgicdCall
 * as its method name, bounded by the wait budget of the save or load, and
 * a D-Bus failure in the caller's terms (VGICD_CLIENT_ERROR).  The step
 * channel's counterpart is vgicd-client-channel.c.
 */
#include <string.h>

#include "vgicd-client-private.h"
#include "vgicd/protocol.h"

void
vgicd_client_dbus_error (GError **error, GError *call_error, const char *what)
{
  g_autofree char *remote = g_dbus_error_get_remote_error (call_error);
  int code = VGICD_CLIENT_ERROR_UNREACHABLE;

  if (remote && (strcmp (remote, "org.freedesktop.DBus.Error.AccessDenied") == 0 ||
                 strcmp (remote, VGICD_DBUS_ERROR_LIMIT) == 0))
    code = VGICD_CLIENT_ERROR_DENIED;
  else if (remote && strcmp (remote, "org.freedesktop.DBus.Error.InvalidArgs") == 0)
    code = VGICD_CLIENT_ERROR_INVALID;
  g_dbus_error_strip_remote_error (call_error);
  g_set_error (error, VGICD_CLIENT_ERROR, code, "vgicd %s: %s", what, call_error->message);
}

/* Session1's method names, by VgicdCall. */
static const char *const dbus_method[] = {
  [VGICD_CALL_SAVE] = "Save",
  [VGICD_CALL_LOAD] = "Load",
  [VGICD_CALL_LOAD_WINDOW] = "LoadWindow",
  [VGICD_CALL_SAVE_FIELDS] = "SaveFields",
  [VGICD_CALL_LOAD_LIST] = "LoadList",
  [VGICD_CALL_NEXT] = "Next",
};
G_STATIC_ASSERT (G_N_ELEMENTS (dbus_method) == VGICD_CALL_NEXT + 1);

GVariant *
vgicd_client_dbus_call (VgicdClient *c, VgicdCall method, GVariant *args, GError **error)
{
  g_autoptr (GError) local = NULL;
  GVariant *reply, *step;
  gint64 start;

  g_return_val_if_fail ((guint) method < G_N_ELEMENTS (dbus_method), NULL);
  if (c->wait_budget_us <= 0)
    {
      g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_UNREACHABLE,
                   "vgicd did not answer within %d ms (the bound on a whole save or load)",
                   c->timeout_ms);
      if (args)
        g_variant_unref (g_variant_ref_sink (args));
      return NULL;
    }
  start = g_get_monotonic_time ();
  reply = g_dbus_connection_call_sync (c->connection, NULL, c->session_path,
                                       VGICD_SESSION_IFACE, dbus_method[method], args,
                                       G_VARIANT_TYPE ("(a{sv})"),
                                       G_DBUS_CALL_FLAGS_NONE,
                                       (int) MAX (1, (c->wait_budget_us + 999) / 1000),
                                       NULL, &local);
  c->wait_budget_us = MAX (0, c->wait_budget_us - (g_get_monotonic_time () - start));
  if (!reply && g_error_matches (local, G_IO_ERROR, G_IO_ERROR_TIMED_OUT))
    {
      g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_UNREACHABLE,
                   "vgicd did not answer within %d ms (the bound on a whole save or load)",
                   c->timeout_ms);
      return NULL;
    }
  if (!reply)
    {
      vgicd_client_dbus_error (error, local, "did not answer");
      return NULL;
    }
  g_variant_get (reply, "(@a{sv})", &step);
  g_variant_unref (reply);
  return step;
}
