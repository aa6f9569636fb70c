/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-channel.c - the step channel, vgicd's end (see vgicd-channel.h).
 *
 * Why it exists: a D-Bus call costs a round trip through both processes'
 * D-Bus threads: the caller hands its message to its connection's worker
 * thread, which writes it; vgicd's worker reads it and hands it to vgicd's
 * main thread; the reply goes back the same way.  Under emulation that is
 * several milliseconds per call, more than the kernel spends on a whole
 * batch.  A peer that asks for it gets a SOCK_SEQPACKET socket for every
 * call but Load (a record does not fit a packet: it goes by the window,
 * LoadWindow): one packet each way, read and answered on vgicd's main
 * thread.  The packets carry the same GVariants as the D-Bus methods.
 *
 * A packet the channel cannot take (a size no method has, an unknown
 * method) closes the channel with a log line; the peer then sees its call
 * fail and attaches again.  The session itself lives as long as the D-Bus
 * connection, not the channel.
 *
 * The protocol passes no descriptor on the channel.  Each packet is peeked
 * first, with no room for any: a peek leaves them queued and flags
 * MSG_CTRUNC, and a packet with some closes the channel, whose socket the
 * reaper closes (vgicd-reaper.c: a read would drop them here, on the main
 * thread, and the last close of a descriptor a peer sent takes as long as
 * the peer chose).
 *
 * Nothing here waits on the peer: vgicd's main thread serves every VM and
 * the operator.  The answer is sent without blocking, and a peer whose
 * socket cannot take it is one that sends requests without reading the
 * answers (a conforming peer has at most one call outstanding, and the
 * socket holds far more than one answer): its channel is closed.  So the
 * answers queued for a peer never exceed its socket's buffer.
 */
#include <errno.h>
#include <glib-unix.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vgicd-channel.h"
#include "vgicd-reaper.h"

struct _VgicdChannel {
  int fd;
  GSource *source;
  VgicdChannelCall call;
  gpointer data;
  const char *name;
};

static void
channel_close (VgicdChannel *c)
{
  if (c->source)
    {
      g_source_destroy (c->source);
      g_clear_pointer (&c->source, g_source_unref);
    }
  if (c->fd >= 0)
    {
      /* The peer sees the end now; the last close, with what the peer
       * queued, is the reaper's. */
      shutdown (c->fd, SHUT_WR);
      vgicd_reaper_close (c->fd);
    }
  c->fd = -1;
}

static void
channel_refuse (VgicdChannel *c, const char *why)
{
  g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING,
                    "VGICD_VM", c->name,
                    "MESSAGE", "VM %s: closing the step channel: %s", c->name, why);
  channel_close (c);
}

static gboolean
on_packet (gint fd, GIOCondition cond, gpointer data)
{
  VgicdChannel *c = data;
  g_autofree guint8 *buf = g_malloc (VGICD_CHANNEL_MAX);
  g_autoptr (GVariant) args = NULL;
  g_autoptr (GVariant) reply = NULL;
  const char *type;
  VgicdChannelHeader h;
  gboolean fds;
  ssize_t n;

  n = vgicd_recv_no_fds (fd, buf, VGICD_CHANNEL_MAX, MSG_TRUNC, &fds);
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return G_SOURCE_CONTINUE;
  if (n < 0 && errno == EIO)
    {
      channel_refuse (c, "a packet that changed between a peek and its read");
      return G_SOURCE_REMOVE;
    }
  if (n <= 0)
    {
      /* The peer closed it (QEMU exited, or gave up on a call); the D-Bus
       * connection's end takes the session. */
      channel_close (c);
      return G_SOURCE_REMOVE;
    }
  if (fds)
    {
      channel_refuse (c, "a packet with file descriptors, which the protocol never passes");
      return G_SOURCE_REMOVE;
    }
  if ((gsize) n < sizeof h || n > VGICD_CHANNEL_MAX)
    {
      channel_refuse (c, "a packet of a size no method has");
      return G_SOURCE_REMOVE;
    }
  memcpy (&h, buf, sizeof h);
  type = vgicd_channel_args_type (h.method);
  if (!type)
    {
      channel_refuse (c, "an unknown method");
      return G_SOURCE_REMOVE;
    }
  {
    /* A GVariant that owns a copy of the arguments. */
    g_autoptr (GBytes) bytes = g_bytes_new (buf + sizeof h, (gsize) n - sizeof h);
    args = g_variant_ref_sink (g_variant_new_from_bytes (G_VARIANT_TYPE (type), bytes, FALSE));
  }
  reply = g_variant_ref_sink (g_variant_new ("(@a{sv})", c->call (c->data, h.method, args)));
  if ((gsize) g_variant_get_size (reply) > VGICD_CHANNEL_MAX)
    {
      channel_refuse (c, "an answer larger than a packet");
      return G_SOURCE_REMOVE;
    }
  if (send (fd, g_variant_get_data (reply), g_variant_get_size (reply),
            MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
    {
      channel_refuse (c, errno == EAGAIN || errno == EWOULDBLOCK
                           ? "the peer sends requests and does not read the answers"
                           : "the answer could not be sent");
      return G_SOURCE_REMOVE;
    }
  return G_SOURCE_CONTINUE;
}

VgicdChannel *
vgicd_channel_new (VgicdChannelCall call, gpointer data, const char *name, int *peer_fd,
                   GError **error)
{
  VgicdChannel *c;
  int sv[2];

  if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
    {
      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno),
                   "cannot make the step channel: %s", g_strerror (errno));
      return NULL;
    }
  /* What a peer sends on it carries no descriptor: where the kernel can,
   * it refuses them (vgicd-reaper.c). */
  vgicd_refuse_fds (sv[0], NULL);
  c = g_new0 (VgicdChannel, 1);
  c->fd = sv[0];
  c->call = call;
  c->data = data;
  c->name = name;
  c->source = g_unix_fd_source_new (sv[0], G_IO_IN | G_IO_HUP | G_IO_ERR);
  g_source_set_callback (c->source, G_SOURCE_FUNC (on_packet), c, NULL);
  g_source_attach (c->source, NULL);
  *peer_fd = sv[1];
  return c;
}

void
vgicd_channel_free (VgicdChannel *c)
{
  if (!c)
    return;
  channel_close (c);
  g_free (c);
}
