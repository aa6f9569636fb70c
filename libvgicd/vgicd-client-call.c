/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-client-call.c - which transport carries a Session1 call
 * (vgicd-client-call.h).
 *
 * Each D-Bus call to vgicd is a round trip through both processes' D-Bus
 * threads, which under emulation costs more than the kernel's work.  So
 * every call the step channel carries (all but Load: a record does not fit
 * a packet) goes through it when vgicd gives one (include/vgicd/protocol.h):
 * one packet each way, on this thread (vgicd-client-channel.c).  The rest,
 * and every call of a vgicd without a channel, go by D-Bus
 * (vgicd-client-dbus.c).
 */
#include "vgicd-client-private.h"

GVariant *
vgicd_client_call (VgicdClient *c, VgicdCall method, GVariant *args, GError **error)
{
  if (c->channel && vgicd_client_channel_lost (c->channel))
    {
      g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_UNREACHABLE,
                   "vgicd: the session was lost when an earlier call failed; attach again");
      if (args)
        g_variant_unref (g_variant_ref_sink (args));
      return NULL;
    }
  if (c->channel)
    {
      if (vgicd_client_channel_carries (method))
        return vgicd_client_channel_call (c->channel, method, args, &c->wait_budget_us, error);
      /* A D-Bus call (Load): the answer still due on the channel first. */
      if (!vgicd_client_channel_settle (c->channel, &c->wait_budget_us, error))
        {
          if (args)
            g_variant_unref (g_variant_ref_sink (args));
          return NULL;
        }
    }
  /* Over D-Bus (no step channel, or Load), the same budget bounds the call. */
  return vgicd_client_dbus_call (c, method, args, error);
}
