/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-session-dbus.c - org.vgicd.Session1 on the peer's connection: the
 * generated skeleton's handlers, each a call into the state machine
 * (vgicd-steps.c) whose step becomes the reply.
 */
#include "vgicd-session-private.h"

static gboolean
on_save (VgicdDbusSession1 *skel, GDBusMethodInvocation *inv, gpointer data)
{
  vgicd_dbus_session1_complete_save (skel, inv, vgicd_steps_save (data));
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
on_load (VgicdDbusSession1 *skel, GDBusMethodInvocation *inv, GVariant *record,
         gpointer data)
{
  gsize len = 0;
  const guint8 *bytes = g_variant_get_fixed_array (record, &len, 1);

  vgicd_dbus_session1_complete_load (skel, inv, vgicd_steps_load (data, bytes, len));
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
on_load_window (VgicdDbusSession1 *skel, GDBusMethodInvocation *inv, guint size,
                gpointer data)
{
  vgicd_dbus_session1_complete_load_window (skel, inv, vgicd_steps_load_window (data, size));
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
on_save_fields (VgicdDbusSession1 *skel, GDBusMethodInvocation *inv, gpointer data)
{
  vgicd_dbus_session1_complete_save_fields (skel, inv, vgicd_steps_save_fields (data));
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
on_load_list (VgicdDbusSession1 *skel, GDBusMethodInvocation *inv, guint count,
              gpointer data)
{
  vgicd_dbus_session1_complete_load_list (skel, inv, vgicd_steps_load_list (data, count));
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
on_next (VgicdDbusSession1 *skel, GDBusMethodInvocation *inv, GVariant *report,
         gpointer data)
{
  vgicd_dbus_session1_complete_next (skel, inv, vgicd_steps_next (data, report));
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

gboolean
vgicd_session_dbus_export (VgicdSession *s, GError **error)
{
  s->skeleton = vgicd_dbus_session1_skeleton_new ();
  g_signal_connect (s->skeleton, "handle-save", G_CALLBACK (on_save), s);
  g_signal_connect (s->skeleton, "handle-load", G_CALLBACK (on_load), s);
  g_signal_connect (s->skeleton, "handle-load-window", G_CALLBACK (on_load_window), s);
  g_signal_connect (s->skeleton, "handle-save-fields", G_CALLBACK (on_save_fields), s);
  g_signal_connect (s->skeleton, "handle-load-list", G_CALLBACK (on_load_list), s);
  g_signal_connect (s->skeleton, "handle-next", G_CALLBACK (on_next), s);
  return g_dbus_interface_skeleton_export (G_DBUS_INTERFACE_SKELETON (s->skeleton),
                                           s->connection, s->path, error);
}

void
vgicd_session_dbus_unexport (VgicdSession *s)
{
  if (!s->skeleton)
    return;
  g_dbus_interface_skeleton_unexport (G_DBUS_INTERFACE_SKELETON (s->skeleton));
  g_clear_object (&s->skeleton);
}
