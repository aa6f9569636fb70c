/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-session-channel.c - a session's step channel: each packet
 * vgicd-channel.c hands over is a call into the state machine
 * (vgicd-steps.c), whose step becomes the answer.  The channel's
 * counterpart of vgicd-session-dbus.c; vgicd-channel.c itself knows
 * packets, not sessions.
 */
#include <unistd.h>

#include "vgicd-session-private.h"

/* The step channel's calls, into the state machine. */
static GVariant *
channel_call (gpointer data, VgicdChannelMethod method, GVariant *args)
{
  VgicdSession *s = data;

  switch (method)
    {
    case VGICD_CHANNEL_SAVE:
      return vgicd_steps_save (s);
    case VGICD_CHANNEL_SAVE_FIELDS:
      return vgicd_steps_save_fields (s);
    case VGICD_CHANNEL_LOAD_LIST:
      {
        guint32 count;

        g_variant_get (args, "(u)", &count);
        return vgicd_steps_load_list (s, count);
      }
    case VGICD_CHANNEL_LOAD_WINDOW:
      {
        guint32 size;

        g_variant_get (args, "(u)", &size);
        return vgicd_steps_load_window (s, size);
      }
    case VGICD_CHANNEL_NEXT:
    default:
      {
        g_autoptr (GVariant) report = g_variant_get_child_value (args, 0);

        g_assert (method == VGICD_CHANNEL_NEXT);
        return vgicd_steps_next (s, report);
      }
    }
}

int
vgicd_session_take_peer_channel (VgicdSession *s)
{
  int fd = s->peer_channel_fd;

  s->peer_channel_fd = -1;
  return fd;
}

gboolean
vgicd_session_channel_open (VgicdSession *s, GError **error)
{
  s->channel = vgicd_channel_new (channel_call, s, s->name, &s->peer_channel_fd, error);
  return s->channel != NULL;
}

void
vgicd_session_channel_close (VgicdSession *s)
{
  g_clear_pointer (&s->channel, vgicd_channel_free);
  if (s->peer_channel_fd >= 0)
    close (s->peer_channel_fd);
  s->peer_channel_fd = -1;
}
