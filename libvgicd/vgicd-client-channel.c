/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-client-channel.c - the step channel, libvgicd's end (see
 * vgicd-client-channel.h).
 *
 * Why it exists: each D-Bus call to vgicd is a round trip through both
 * processes' D-Bus threads, which under emulation costs more than the
 * kernel's work on a whole batch.  The channel carries every Session1 call
 * but Load with the same GVariants, one SOCK_SEQPACKET packet each way, on
 * the calling thread.
 *
 * Theory of operation: waiting for an answer.  A call's answer comes from
 * vgicd within tens to hundreds of microseconds (at 160 vCPUs, measured in
 * vgicd: 40 to 60 µs for a SaveFields, 70 to 95 for a save's Next, 105 to
 * 130 for a LoadList).  A thread that sleeps in ppoll(2) for it is then
 * woken by the scheduler, which on a VM host is an interrupt to an idle
 * CPU; in the benchmark's guest, the caller saw 200 to 490 µs for the
 * SaveFields vgicd answered in 40 to 60.  So the caller first polls the
 * socket without sleeping, for up to SPIN_US, and sleeps only when the
 * answer takes longer: a CPU spent for at most that long per call, only
 * while QEMU saves or restores the vGIC, which is inside the migration's
 * downtime when the VM's vCPUs are stopped anyway.  It is what KVM's
 * halt polling does for a vCPU.  The kernel may have put vgicd on this
 * very CPU (a Unix socket's wakeup tells the scheduler that the sender
 * will sleep), so each poll that finds nothing yields the CPU; and on a
 * host with one CPU online the poll would only delay vgicd's answer, so
 * there it sleeps at once.  Measured
 * (bench-scaling, the fields path alone, 160 vCPUs): vgicd's own share
 * 0.59 / 0.44 to 0.58 ms save / restore sleeping, 0.40 / 0.36 to 0.39 ms
 * polling first.
 */
#define _GNU_SOURCE /* ppoll */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "libvgicd.h"
#include "vgicd-client-channel.h"

/* How long a call polls for its answer before it sleeps (see the top). */
#define SPIN_US 300

struct _VgicdClientChannel {
  int fd;		/* -1 once lost */
  int timeout_ms;
  gint64 spin_us;	/* SPIN_US, or 0 on a host with one CPU online */
  gboolean deferred;	/* an answer is due that the caller did not wait for */
};

VgicdClientChannel *
vgicd_client_channel_new (int fd, int timeout_ms)
{
  VgicdClientChannel *ch = g_new0 (VgicdClientChannel, 1);

  ch->fd = fd;
  ch->timeout_ms = timeout_ms;
  ch->spin_us = sysconf (_SC_NPROCESSORS_ONLN) > 1 ? SPIN_US : 0;
  return ch;
}

gboolean
vgicd_client_channel_lost (VgicdClientChannel *ch)
{
  return ch->fd < 0;
}

/* The packet's method of each call (include/vgicd/protocol.h), or 0 for
 * one the channel does not carry. */
static VgicdChannelMethod
packet_method (VgicdCall method)
{
  switch (method)
    {
    case VGICD_CALL_SAVE: return VGICD_CHANNEL_SAVE;
    case VGICD_CALL_LOAD_WINDOW: return VGICD_CHANNEL_LOAD_WINDOW;
    case VGICD_CALL_NEXT: return VGICD_CHANNEL_NEXT;
    case VGICD_CALL_SAVE_FIELDS: return VGICD_CHANNEL_SAVE_FIELDS;
    case VGICD_CALL_LOAD_LIST: return VGICD_CHANNEL_LOAD_LIST;
    case VGICD_CALL_LOAD:
    default: return 0;
    }
}

gboolean
vgicd_client_channel_carries (VgicdCall method)
{
  return packet_method (method) != 0;
}

/* The channel failed part-way through a call: an answer could still arrive
 * and be taken for the next call's, so it is closed for good. */
static gboolean
lose (VgicdClientChannel *ch, GError **error, const char *format, ...) G_GNUC_PRINTF (3, 4);
static gboolean
lose (VgicdClientChannel *ch, GError **error, const char *format, ...)
{
  g_autofree char *msg = NULL;
  va_list ap;

  va_start (ap, format);
  msg = g_strdup_vprintf (format, ap);
  va_end (ap);
  if (ch->fd >= 0)
    close (ch->fd);
  ch->fd = -1;
  ch->deferred = FALSE;
  g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_UNREACHABLE, "vgicd %s", msg);
  return FALSE;
}

static gboolean
send_call (VgicdClientChannel *ch, VgicdCall method, GVariant *args, GError **error)
{
  g_autoptr (GVariant) sunk = g_variant_ref_sink (args ? args : g_variant_new ("()"));
  VgicdChannelHeader h = { .method = packet_method (method) };
  gsize size = g_variant_get_size (sunk);
  g_autofree guint8 *buf = NULL;

  g_return_val_if_fail (h.method != 0, FALSE);
  if (ch->fd < 0)
    return lose (ch, error, "went away (the step channel was lost)");
  if (sizeof h + size > VGICD_CHANNEL_MAX)
    {
      g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_INVALID,
                   "a call of %" G_GSIZE_FORMAT " bytes does not fit the step channel", size);
      return FALSE;
    }
  buf = g_malloc (sizeof h + size);
  memcpy (buf, &h, sizeof h);
  g_variant_store (sunk, buf + sizeof h);
  if (send (ch->fd, buf, sizeof h + size, MSG_NOSIGNAL) < 0)
    return lose (ch, error, "went away (%s)", g_strerror (errno));
  return TRUE;
}

/* Wait for vgicd's answer.  With @budget_us, within what is left of the
 * caller's budget for the whole save or load, and what was spent waiting
 * is taken off it; without, within the channel's timeout. */
static GVariant *
receive (VgicdClientChannel *ch, gint64 *budget_us, GError **error)
{
  g_autofree guint8 *buf = g_malloc (VGICD_CHANNEL_MAX);
  g_autoptr (GVariant) reply = NULL;
  gint64 start = g_get_monotonic_time ();
  gint64 deadline = start + (budget_us ? *budget_us : (gint64) ch->timeout_ms * 1000);
  gint64 spin_until = MIN (start + ch->spin_us, deadline);
  GVariant *step;
  ssize_t n;

  /* Poll first, without sleeping (see the top). */
  do
    {
      n = recv (ch->fd, buf, VGICD_CHANNEL_MAX, MSG_TRUNC | MSG_DONTWAIT);
      if (n >= 0 || (errno != EAGAIN && errno != EINTR))
        goto answered;
      /* vgicd may have been woken on this very CPU (a socket's wakeup
       * hints that the sender is about to sleep): let it run. */
      sched_yield ();
    }
  while (g_get_monotonic_time () < spin_until);
  for (;;)
    {
      struct pollfd p = { .fd = ch->fd, .events = POLLIN };
      gint64 now = g_get_monotonic_time ();
      gint64 left = deadline - now;
      int r;

      if (left <= 0)
        {
          if (budget_us)
            *budget_us = 0;
          lose (ch, error, "did not answer within %d ms%s", ch->timeout_ms,
                budget_us ? " (the bound on a whole save or load)" : "");
          return NULL;
        }
      struct timespec ts = { .tv_sec = left / G_USEC_PER_SEC,
                             .tv_nsec = (left % G_USEC_PER_SEC) * 1000 };

      /* ppoll: to the microsecond, where poll's milliseconds would
       * overshoot the bound by up to one. */
      r = ppoll (&p, 1, &ts, NULL);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        {
          lose (ch, error, "cannot be waited for (%s)", g_strerror (errno));
          return NULL;
        }
      if (r == 0)
        continue;
      n = recv (ch->fd, buf, VGICD_CHANNEL_MAX, MSG_TRUNC | MSG_DONTWAIT);
      if (n < 0 && (errno == EINTR || errno == EAGAIN))
        continue;
      break;
    }
answered:
  if (budget_us)
    *budget_us = MAX (0, *budget_us - (g_get_monotonic_time () - start));
  if (n == 0)
    lose (ch, error, "closed the connection");
  else if (n < 0)
    lose (ch, error, "went away (%s)", g_strerror (errno));
  else if (n > VGICD_CHANNEL_MAX)
    lose (ch, error, "sent an answer larger than the channel allows");
  if (n <= 0 || n > VGICD_CHANNEL_MAX)
    return NULL;
  {
    g_autoptr (GBytes) bytes = g_bytes_new_take (g_steal_pointer (&buf), (gsize) n);
    reply = g_variant_ref_sink (g_variant_new_from_bytes (G_VARIANT_TYPE (VGICD_CHANNEL_ANSWER_TYPE),
                                                          bytes, FALSE));
  }
  g_variant_get (reply, "(@a{sv})", &step);
  return step;
}

gboolean
vgicd_client_channel_settle (VgicdClientChannel *ch, gint64 *budget_us, GError **error)
{
  g_autoptr (GVariant) step = NULL;

  if (!ch->deferred)
    return TRUE;
  ch->deferred = FALSE;
  /* Every write was applied, so the load succeeded whatever the answer;
   * were it not done, vgicd found fault with the report alone, and has
   * logged and counted that itself. */
  step = receive (ch, budget_us, error);
  return step != NULL;
}

/* Send a call, once an answer still due has been taken (@args is
 * consumed either way). */
static gboolean
settle_and_send (VgicdClientChannel *ch, VgicdCall method, GVariant *args,
                 gint64 *budget_us, GError **error)
{
  if (!vgicd_client_channel_settle (ch, budget_us, error))
    {
      if (args)
        g_variant_unref (g_variant_ref_sink (args));
      return FALSE;
    }
  return send_call (ch, method, args, error);
}

GVariant *
vgicd_client_channel_call (VgicdClientChannel *ch, VgicdCall method, GVariant *args,
                           gint64 *budget_us, GError **error)
{
  if (!settle_and_send (ch, method, args, budget_us, error))
    return NULL;
  return receive (ch, budget_us, error);
}

gboolean
vgicd_client_channel_call_deferred (VgicdClientChannel *ch, VgicdCall method,
                                    GVariant *args, gint64 *budget_us, GError **error)
{
  if (!settle_and_send (ch, method, args, budget_us, error))
    return FALSE;
  ch->deferred = TRUE;
  return TRUE;
}

void
vgicd_client_channel_free (VgicdClientChannel *ch)
{
  if (!ch)
    return;
  /* Take a deferred answer, so that vgicd does not find the channel closed
   * when it sends it (and log a failed send). */
  vgicd_client_channel_settle (ch, NULL, NULL);
  if (ch->fd >= 0)
    close (ch->fd);
  g_free (ch);
}
