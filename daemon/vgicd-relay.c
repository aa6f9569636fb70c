/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-relay.c - vgicd's own reader of each peer's D-Bus byte stream: it
 * sits between the peer's socket and GDBus, so that what a peer sends is
 * bounded before GDBus takes it.
 *
 * Theory of operation.  GDBus reads its socket with recvmsg() and a
 * control buffer, so it takes every SCM_RIGHTS descriptor that comes with
 * any byte, and it buffers each message whole before any filter sees it.
 * A peer that never finishes a message could so make vgicd hold
 * descriptors up to LimitNOFILE= (and abort at the next one GLib needs),
 * or memory up to MemoryMax= (a message may declare 128 MiB).  So GDBus
 * no longer reads a peer: it runs on one end of a socketpair, and the
 * relay, on a thread of its own, moves the bytes:
 *
 *   peer -> vgicd: peeked first, with no control buffer.  The kernel then
 *     installs no descriptor and leaves those that came with the bytes
 *     queued, but flags the peek MSG_CTRUNC (scm_recv(), include/net/scm.h),
 *     which is how the relay knows a peer sent some and closes it; only
 *     bytes that carry none are then read for real.  A read would drop
 *     them (scm_destroy(), fput() of each) on the relay thread, and the
 *     last close of a descriptor a peer sent takes as long as the peer
 *     chose (a lingering TCP socket: forever), so the relay never makes
 *     it: the peer's socket, with what is still queued in it, is closed
 *     by the reaper (vgicd-reaper.c).  (SO_PASSCRED, SO_PASSSEC and
 *     SO_PASSPIDFD, the other things that set MSG_CTRUNC on such a read,
 *     are turned off on the socket.)  Descriptors waiting in the socket
 *     are the kernel's, charged to the sender.  Each
 *     message's fixed 16-byte header (endianness, body length, header
 *     fields' length) says its whole length; a peer declaring more than
 *     the cap (vgicd_relay_message_max()) is closed at that header, before
 *     GDBus has buffered any of the message.  So what GDBus buffers for
 *     one peer is below the cap.
 *   vgicd -> peer: vgicd does pass descriptors (Attach's reply carries the
 *     window and the step channel), so GDBus's end is a GUnixConnection
 *     that agrees UNIX fd passing.  The relay reads it one message at a
 *     time (the header, then at most the rest of that message), with a
 *     control buffer: GDBus attaches a message's descriptors to its first
 *     byte, so what one read brings belongs to the message it reads, and
 *     the relay sends them with the first bytes of that message, which the
 *     peer's GDBus attaches to that message in turn.
 *   Each way the relay holds at most RELAY_QUEUE_MAX bytes; when a queue is
 *     full it stops reading its source, so a slow side holds back the
 *     other (through the kernel's socket buffers) instead of growing
 *     vgicd.  What GDBus queues beyond, answers the peer does not read,
 *     is peer_filter()'s to bound (vgicd-server.c), with
 *     vgicd_relay_unread().
 *
 * Authentication: the relay ends the SASL exchange on both sides, so that
 * the message streams line up and an older libvgicd needs nothing new.
 * Towards the peer it is the server: a NUL byte, then EXTERNAL only
 * (with the identity in AUTH's initial response, or empty, or in DATA),
 * the claimed uid must be the socket's SO_PEERCRED uid; NEGOTIATE_UNIX_FD
 * is agreed; OK carries the server's GUID.  Lines are at most
 * SASL_LINE_MAX bytes and SASL_COMMANDS_MAX commands.  Towards GDBus
 * (g_dbus_connection_new() as the server) it is the client, with vgicd's
 * own uid, which the socketpair's SO_PEERCRED vouches for: "\0AUTH
 * EXTERNAL <uid>" at once, and when the peer sends BEGIN, its
 * NEGOTIATE_UNIX_FD if it asked, then BEGIN.  Those last two go only
 * after GDBus answered OK: until then GDBus reads through a buffered
 * stream that would swallow them (gdbusauth.c reads the lines after OK a
 * byte at a time, so they may go together).  GDBus's handshake therefore
 * ends when the peer's does, and the door's bounds on handshakes
 * (vgicd-server.c) keep applying to the peer's.
 *
 * Threading: one thread serves every relay (its own GMainContext), with
 * non-blocking sockets only, so no peer stalls another, the main loop
 * never waits on a peer, and GDBus's threads only ever read and write the
 * socketpair.  A relay closes both sides at the first error, end of file
 * or misbehaviour of either.
 */
#include <errno.h>
#include <glib-unix.h>
#include <gio/gunixconnection.h>
#include <linux/sockios.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vgic-plan.h"
#include "vgic-record.h"
#include "vgic-shape.h"
#include "vgicd-reaper.h"
#include "vgicd-relay.h"

#define RELAY_QUEUE_MAX (64 * 1024)	/* bytes held each way, per peer */
#define SASL_LINE_MAX 256		/* "AUTH EXTERNAL " and a hex uid: 34 */
#define SASL_COMMANDS_MAX 16		/* a conforming client needs 4 */
#define DBUS_HEADER_LEN 16		/* the fixed part of a message's header */
#define FDS_PER_READ 253		/* SCM_MAX_FD: the most one message carries */
#define PUMP_ROUNDS 16			/* then let the other relays run */

/* Where one direction's message framing is: a header being read, or the
 * rest of a message passing. */
typedef struct {
  guint8 head[DBUS_HEADER_LEN];
  guint head_len;
  guint64 left;		/* bytes of the current message after its header */
} Framing;

/* Bytes for the peer, with the descriptors its first byte carries. */
typedef struct {
  guint8 *data;
  gsize len, off;
  int *fds;
  guint nfds;
} Chunk;

typedef enum {
  PEER_NUL,	/* the NUL byte */
  PEER_AUTH,	/* AUTH */
  PEER_DATA,	/* DATA, after AUTH EXTERNAL without an initial response */
  PEER_BEGIN,	/* OK sent: NEGOTIATE_UNIX_FD or BEGIN */
  PEER_MESSAGES,
} PeerState;

typedef enum {
  BUS_OK,	/* AUTH sent: OK from GDBus */
  BUS_WAIT,	/* OK received: waiting for the peer's BEGIN */
  BUS_AGREE,	/* NEGOTIATE_UNIX_FD and BEGIN sent: AGREE_UNIX_FD */
  BUS_MESSAGES,
} BusState;

struct _VgicdRelay {
  gatomicrefcount ref;
  GMutex lock;		/* the descriptors' closing, the failure */
  int peer_fd, bus_fd;	/* -1 once closed */
  GSource *source;	/* on the relay thread's context */
  gpointer peer_tag, bus_tag;
  uid_t uid;
  pid_t pid;
  char *guid;
  gsize message_max;
  VgicdDaemon *daemon;	/* counts the peers closed (vgicd_daemon_count_closed()) */
  char *failure;	/* why the peer was closed: the first reason claimed */
  gboolean failure_logged;	/* and whoever claimed it logged and counted it */

  PeerState peer_state;
  guint sasl_commands;
  gboolean unix_fd;	/* the peer negotiated descriptors */
  GByteArray *peer_in;	/* the peer's handshake bytes not yet taken */
  Framing peer_framing;
  GByteArray *to_bus;	/* bytes for GDBus */

  BusState bus_state;
  Framing bus_framing;
  GQueue to_peer;	/* Chunk *: bytes for the peer */
  gint to_peer_bytes;	/* their total, atomic (vgicd_relay_unread()) */
};

typedef struct {
  GSource source;
  VgicdRelay *relay;
} RelaySource;

static void
chunk_free (Chunk *c)
{
  for (guint i = 0; i < c->nfds; i++)
    close (c->fds[i]);
  g_free (c->fds);
  g_free (c->data);
  g_free (c);
}

gsize
vgicd_relay_record_max (guint max_vcpus)
{
  VgicShape counts = { .nr_irqs = VGIC_MAX_IRQS, .nr_vcpus = max_vcpus, .mpidrs = NULL };
  gsize entries = vgic_plan_save_count (&counts, TRUE, 4) + vgic_plan_route_count (&counts);

  return vgic_record_encoded_size (&counts, entries);
}

gsize
vgicd_relay_message_max (guint max_vcpus)
{
  return MAX (VGICD_RELAY_MESSAGE_MIN, 2 * vgicd_relay_record_max (max_vcpus));
}

/* ------------------------------------------------------------------ */
/* The relay thread                                                   */
/* ------------------------------------------------------------------ */

static gpointer
relay_thread (gpointer data)
{
  GMainContext *context = data;

  g_main_context_push_thread_default (context);
  for (;;)
    g_main_context_iteration (context, TRUE);
  return NULL;
}

/* The relays' context, its thread started at the first relay (and kept,
 * as GDBus keeps its worker thread); NULL with @error if it cannot start. */
static GMainContext *
relay_context (GError **error)
{
  static GMutex lock;
  static GMainContext *context;
  GMainContext *c;

  g_mutex_lock (&lock);
  if (!context)
    {
      GMainContext *fresh = g_main_context_new ();
      GThread *thread = g_thread_try_new ("vgicd-relay", relay_thread, fresh, error);

      if (thread)
        {
          g_thread_unref (thread);
          context = fresh;
        }
      else
        g_main_context_unref (fresh);
    }
  c = context;
  g_mutex_unlock (&lock);
  return c;
}

/* ------------------------------------------------------------------ */
/* Closing                                                            */
/* ------------------------------------------------------------------ */

/* Close both sides (relay thread).  The first @why (a peer's fault) is
 * kept; @log: log it and count the peer as closed. */
/* The first reason given for closing the peer wins (the lock held). */
static gboolean
claim_failure_locked (VgicdRelay *r, const char *why, gboolean logged)
{
  if (r->failure)
    return FALSE;
  r->failure = g_strdup (why);
  r->failure_logged = logged;
  return TRUE;
}

static void
relay_close (VgicdRelay *r, const char *why, gboolean log)
{
  g_mutex_lock (&r->lock);
  /* The bus filter may have closed the peer already, for a message the
   * relay passed before this fault, and counted it then. */
  if (!why || !claim_failure_locked (r, why, log))
    log = FALSE;
  /* Counted before the peer can see its socket close. */
  if (log)
    {
      vgicd_log_peer_line (r->daemon->log_shares, r->pid, G_LOG_LEVEL_WARNING,
                           "closed the connection of a peer (pid %d): %s", (int) r->pid, why);
      vgicd_daemon_count_closed (r->daemon);
    }
  vgicd_reaper_close (r->peer_fd);	/* the theory: never the last close here */
  if (r->bus_fd >= 0)
    close (r->bus_fd);
  r->peer_fd = r->bus_fd = -1;
  g_mutex_unlock (&r->lock);
  if (r->source)
    {
      g_source_destroy (r->source);	/* its finalize drops its reference */
      r->source = NULL;
    }
  g_queue_clear_full (&r->to_peer, (GDestroyNotify) chunk_free);
  g_atomic_int_set (&r->to_peer_bytes, 0);
  g_byte_array_set_size (r->to_bus, 0);
  g_byte_array_set_size (r->peer_in, 0);
}

/* A peer's fault after its handshake: logged and counted. */
static void
peer_misbehaves (VgicdRelay *r, const char *why)
{
  relay_close (r, why, TRUE);
}

/* A peer's failed handshake: left to the door's log (the server's). */
static void
handshake_fails (VgicdRelay *r, const char *why)
{
  relay_close (r, why, FALSE);
}

static gboolean
relay_closed (VgicdRelay *r)
{
  return r->peer_fd < 0;	/* written on this thread only */
}

/* ------------------------------------------------------------------ */
/* Framing                                                            */
/* ------------------------------------------------------------------ */

static guint32
header_u32 (const guint8 *head, guint offset)
{
  guint32 v;

  memcpy (&v, head + offset, sizeof v);
  return head[0] == 'l' ? GUINT32_FROM_LE (v) : GUINT32_FROM_BE (v);
}

/* A whole fixed header: the message's length, or 0 and @why. */
static guint64
message_length (const guint8 *head, gsize max, char **why)
{
  guint64 total;

  if (head[0] != 'l' && head[0] != 'B')
    {
      *why = g_strdup_printf ("it sent a D-Bus message with endianness byte 0x%02x", head[0]);
      return 0;
    }
  if (head[3] != 1)
    {
      *why = g_strdup_printf ("it sent a D-Bus message of protocol version %u", head[3]);
      return 0;
    }
  /* The header fields' array starts at 12 with its length; the body
   * starts at the next multiple of 8 after it. */
  total = DBUS_HEADER_LEN + (((guint64) header_u32 (head, 12) + 7) & ~(guint64) 7) +
          header_u32 (head, 4);
  if (total > max)
    {
      *why = g_strdup_printf ("it declared a D-Bus message of %" G_GUINT64_FORMAT " bytes, "
                              "above the %" G_GSIZE_FORMAT " bytes vgicd's largest may take",
                              total, max);
      return 0;
    }
  return total;
}

/* Pass @n bytes through @f's framing; FALSE with @why at a bad header. */
static gboolean
framing_feed (Framing *f, const guint8 *data, gsize n, gsize max, char **why)
{
  while (n > 0)
    {
      gsize k;

      if (f->left > 0)
        {
          k = (gsize) MIN ((guint64) n, f->left);
          f->left -= k;
        }
      else
        {
          k = MIN (n, DBUS_HEADER_LEN - f->head_len);
          memcpy (f->head + f->head_len, data, k);
          f->head_len += k;
          if (f->head_len == DBUS_HEADER_LEN)
            {
              guint64 total = message_length (f->head, max, why);

              if (!total)
                return FALSE;
              f->left = total - DBUS_HEADER_LEN;
              f->head_len = 0;
            }
        }
      data += k;
      n -= k;
    }
  return TRUE;
}

/* How many bytes a read may take without crossing the message's end. */
static gsize
framing_want (const Framing *f)
{
  return f->left > 0 ? (gsize) MIN (f->left, (guint64) G_MAXSIZE)
                     : DBUS_HEADER_LEN - f->head_len;
}

/* ------------------------------------------------------------------ */
/* Queues                                                             */
/* ------------------------------------------------------------------ */

static void
to_peer_push (VgicdRelay *r, const void *data, gsize len, int *fds, guint nfds)
{
  Chunk *c = g_new0 (Chunk, 1);

  c->data = g_memdup2 (data, len);
  c->len = len;
  c->fds = fds;
  c->nfds = nfds;
  g_queue_push_tail (&r->to_peer, c);
  g_atomic_int_add (&r->to_peer_bytes, (gint) len);
}

static void
to_peer_line (VgicdRelay *r, const char *line)
{
  to_peer_push (r, line, strlen (line), NULL, 0);
}

/* Write what waits for the peer; TRUE if something went. */
static gboolean
write_peer (VgicdRelay *r)
{
  Chunk *c = g_queue_peek_head (&r->to_peer);
  struct iovec iov;
  struct msghdr mh = { 0 };
  g_autofree guint8 *cbuf = NULL;
  ssize_t n;

  if (!c)
    return FALSE;
  iov = (struct iovec) { c->data + c->off, c->len - c->off };
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  if (c->nfds)
    {
      struct cmsghdr *cm;

      mh.msg_controllen = CMSG_SPACE (c->nfds * sizeof (int));
      mh.msg_control = cbuf = g_malloc0 (mh.msg_controllen);
      cm = CMSG_FIRSTHDR (&mh);
      cm->cmsg_level = SOL_SOCKET;
      cm->cmsg_type = SCM_RIGHTS;
      cm->cmsg_len = CMSG_LEN (c->nfds * sizeof (int));
      memcpy (CMSG_DATA (cm), c->fds, c->nfds * sizeof (int));
    }
  n = sendmsg (r->peer_fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n < 0)
    {
      if (errno != EAGAIN && errno != EINTR)
        relay_close (r, NULL, FALSE);	/* the peer went */
      return FALSE;
    }
  /* The peer holds its copies now. */
  for (guint i = 0; i < c->nfds; i++)
    close (c->fds[i]);
  c->nfds = 0;
  c->off += (gsize) n;
  g_atomic_int_add (&r->to_peer_bytes, -(gint) n);
  if (c->off == c->len)
    chunk_free (g_queue_pop_head (&r->to_peer));
  return TRUE;
}

static gboolean
write_bus (VgicdRelay *r)
{
  ssize_t n;

  if (r->to_bus->len == 0)
    return FALSE;
  n = send (r->bus_fd, r->to_bus->data, r->to_bus->len, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n < 0)
    {
      if (errno != EAGAIN && errno != EINTR)
        relay_close (r, NULL, FALSE);	/* GDBus's end closed */
      return FALSE;
    }
  g_byte_array_remove_range (r->to_bus, 0, (guint) n);
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* The peer's handshake (the relay is the server)                     */
/* ------------------------------------------------------------------ */

/* Does @hex (the hex of a decimal uid, or empty) name the peer's uid? */
static gboolean
claims_peer_uid (VgicdRelay *r, const char *hex)
{
  gsize len = strlen (hex);
  char digits[SASL_LINE_MAX / 2 + 1];
  guint64 uid;
  char *end;

  if (len == 0)
    return TRUE;	/* empty: the identity the credentials say (RFC 4422 A.1) */
  if (len % 2 || len / 2 >= sizeof digits)
    return FALSE;
  for (gsize i = 0; i < len / 2; i++)
    {
      int hi = g_ascii_xdigit_value (hex[2 * i]), lo = g_ascii_xdigit_value (hex[2 * i + 1]);

      if (hi < 0 || lo < 0)
        return FALSE;
      digits[i] = (char) (hi * 16 + lo);
      if (!g_ascii_isdigit (digits[i]))
        return FALSE;
    }
  digits[len / 2] = 0;
  errno = 0;
  uid = g_ascii_strtoull (digits, &end, 10);
  return *end == 0 && errno != ERANGE && uid == (guint64) r->uid;
}

/* The identity @hex was claimed: OK or REJECTED. */
static void
peer_identity (VgicdRelay *r, const char *hex)
{
  if (claims_peer_uid (r, hex))
    {
      g_autofree char *ok = g_strdup_printf ("OK %s\r\n", r->guid);

      to_peer_line (r, ok);
      r->peer_state = PEER_BEGIN;
    }
  else
    {
      to_peer_line (r, "REJECTED EXTERNAL\r\n");
      r->peer_state = PEER_AUTH;
    }
}

/* The bus side's BEGIN, once both GDBus said OK and the peer said BEGIN;
 * the peer's bytes after its BEGIN follow it. */
static void
bus_begin (VgicdRelay *r)
{
  static const char negotiate[] = "NEGOTIATE_UNIX_FD\r\n";
  static const char begin[] = "BEGIN\r\n";

  if (r->bus_state != BUS_WAIT || r->peer_state != PEER_MESSAGES)
    return;
  if (r->unix_fd)
    g_byte_array_append (r->to_bus, (const guint8 *) negotiate, sizeof negotiate - 1);
  g_byte_array_append (r->to_bus, (const guint8 *) begin, sizeof begin - 1);
  g_byte_array_append (r->to_bus, r->peer_in->data, r->peer_in->len);
  g_byte_array_set_size (r->peer_in, 0);
  r->bus_state = r->unix_fd ? BUS_AGREE : BUS_MESSAGES;
}

/* One command of the peer's; FALSE if the relay closed. */
static gboolean
peer_command (VgicdRelay *r, const char *line)
{
  if (++r->sasl_commands > SASL_COMMANDS_MAX)
    {
      handshake_fails (r, "it sent more than " G_STRINGIFY (SASL_COMMANDS_MAX)
                          " commands in its D-Bus handshake");
      return FALSE;
    }
  if (g_str_equal (line, "CANCEL") || g_str_has_prefix (line, "ERROR"))
    {
      to_peer_line (r, "REJECTED EXTERNAL\r\n");
      r->peer_state = PEER_AUTH;
      return TRUE;
    }
  switch (r->peer_state)
    {
    case PEER_AUTH:
      if (g_str_equal (line, "AUTH EXTERNAL"))
        {
          to_peer_line (r, "DATA\r\n");
          r->peer_state = PEER_DATA;
        }
      else if (g_str_has_prefix (line, "AUTH EXTERNAL "))
        peer_identity (r, line + strlen ("AUTH EXTERNAL "));
      else if (g_str_equal (line, "AUTH") || g_str_has_prefix (line, "AUTH "))
        to_peer_line (r, "REJECTED EXTERNAL\r\n");
      else
        to_peer_line (r, "ERROR \"expected AUTH\"\r\n");
      break;
    case PEER_DATA:
      if (g_str_equal (line, "DATA"))
        peer_identity (r, "");
      else if (g_str_has_prefix (line, "DATA "))
        peer_identity (r, line + strlen ("DATA "));
      else
        to_peer_line (r, "ERROR \"expected DATA\"\r\n");
      break;
    case PEER_BEGIN:
      if (g_str_equal (line, "NEGOTIATE_UNIX_FD"))
        {
          r->unix_fd = TRUE;
          to_peer_line (r, "AGREE_UNIX_FD\r\n");
        }
      else if (g_str_equal (line, "BEGIN"))
        r->peer_state = PEER_MESSAGES;
      else
        to_peer_line (r, "ERROR \"expected BEGIN\"\r\n");
      break;
    default:
      g_assert_not_reached ();
    }
  return TRUE;
}

/* Take the peer's handshake from peer_in; what follows BEGIN (the first
 * messages) stays there until GDBus's side is ready for it. */
static void
peer_handshake (VgicdRelay *r)
{
  guint taken = 0;

  if (r->peer_state == PEER_NUL && r->peer_in->len > 0)
    {
      if (r->peer_in->data[0] != 0)
        {
          handshake_fails (r, "its D-Bus handshake did not start with a NUL byte");
          return;
        }
      taken = 1;
      r->peer_state = PEER_AUTH;
    }
  while (r->peer_state != PEER_NUL && r->peer_state != PEER_MESSAGES)
    {
      const char *start = (const char *) r->peer_in->data + taken;
      gsize avail = r->peer_in->len - taken;
      const char *crlf = memchr (start, '\n', MIN (avail, (gsize) SASL_LINE_MAX));
      g_autofree char *line = NULL;

      if (!crlf)
        {
          if (avail >= SASL_LINE_MAX)
            handshake_fails (r, "it sent a line longer than " G_STRINGIFY (SASL_LINE_MAX)
                                " bytes in its D-Bus handshake");
          break;
        }
      if (crlf == start || crlf[-1] != '\r')
        {
          handshake_fails (r, "it sent a line not ended by CR LF in its D-Bus handshake");
          return;
        }
      line = g_strndup (start, (gsize) (crlf - 1 - start));
      for (const char *c = line; *c; c++)
        if (!g_ascii_isprint (*c))
          {
            handshake_fails (r, "it sent a control character in its D-Bus handshake");
            return;
          }
      if (strlen (line) != (gsize) (crlf - 1 - start))
        {
          handshake_fails (r, "it sent a NUL byte in its D-Bus handshake");
          return;
        }
      taken += (guint) (crlf + 1 - start);
      if (!peer_command (r, line))
        return;
    }
  g_byte_array_remove_range (r->peer_in, 0, taken);
}

/* ------------------------------------------------------------------ */
/* Reading                                                            */
/* ------------------------------------------------------------------ */

static gsize
to_bus_room (VgicdRelay *r)
{
  gsize held = r->to_bus->len + r->peer_in->len;

  return held < RELAY_QUEUE_MAX ? RELAY_QUEUE_MAX - held : 0;
}

/* Read what the peer sent, never past bytes that carry descriptors (see
 * the theory). */
static gboolean
read_peer (VgicdRelay *r)
{
  gsize room = to_bus_room (r);
  g_autofree guint8 *buf = NULL;
  g_autofree char *why = NULL;
  gboolean fds;
  ssize_t n;

  if (room == 0)
    return FALSE;
  buf = g_malloc (room);
  /* With descriptors in them, the bytes stay queued: the peer is closed
   * below. */
  n = vgicd_recv_no_fds (r->peer_fd, buf, room, 0, &fds);
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return FALSE;
  if (n <= 0)
    {
      relay_close (r, NULL, FALSE);	/* the peer went */
      return FALSE;
    }
  if (r->peer_state != PEER_MESSAGES)
    {
      g_byte_array_append (r->peer_in, buf, (guint) n);
      peer_handshake (r);
      if (relay_closed (r))
        return FALSE;
      /* Descriptors come with the read's last bytes: a message's, if the
       * handshake ended in this read. */
      if (fds)
        {
          if (r->peer_state == PEER_MESSAGES)
            peer_misbehaves (r, "it sent file descriptors, which vgicd's protocol never passes");
          else
            handshake_fails (r, "it sent file descriptors in its D-Bus handshake");
          return FALSE;
        }
      if (r->peer_state != PEER_MESSAGES)
        return TRUE;
      /* The handshake ended: what followed BEGIN is messages. */
      if (!framing_feed (&r->peer_framing, r->peer_in->data, r->peer_in->len,
                         r->message_max, &why))
        {
          peer_misbehaves (r, why);
          return FALSE;
        }
      bus_begin (r);
      return TRUE;
    }
  if (fds)
    {
      peer_misbehaves (r, "it sent file descriptors, which vgicd's protocol never passes");
      return FALSE;
    }
  if (!framing_feed (&r->peer_framing, buf, (gsize) n, r->message_max, &why))
    {
      peer_misbehaves (r, why);
      return FALSE;
    }
  if (r->bus_state == BUS_OK || r->bus_state == BUS_WAIT)
    g_byte_array_append (r->peer_in, buf, (guint) n);	/* held until GDBus's OK */
  else
    g_byte_array_append (r->to_bus, buf, (guint) n);
  return TRUE;
}

/* One handshake line from GDBus (peeked, then read to its end), or NULL. */
static char *
read_bus_line (VgicdRelay *r)
{
  char buf[SASL_LINE_MAX];
  ssize_t n = recv (r->bus_fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
  char *crlf;

  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return NULL;
  if (n <= 0)
    {
      relay_close (r, NULL, FALSE);	/* GDBus gave up (cancelled, or the deadline) */
      return NULL;
    }
  crlf = memchr (buf, '\n', (gsize) n);
  if (!crlf)
    {
      if (n == sizeof buf)
        handshake_fails (r, "vgicd's own D-Bus end sent a line too long");
      return NULL;
    }
  n = recv (r->bus_fd, buf, (gsize) (crlf + 1 - buf), MSG_DONTWAIT);
  if (n != crlf + 1 - buf || crlf == buf || crlf[-1] != '\r')
    {
      handshake_fails (r, "vgicd's own D-Bus end sent an unexpected handshake line");
      return NULL;
    }
  return g_strndup (buf, (gsize) (crlf - 1 - buf));
}

/* GDBus's answers to the relay's handshake. */
static gboolean
bus_handshake (VgicdRelay *r)
{
  g_autofree char *line = read_bus_line (r);

  if (!line)
    return FALSE;
  if (r->bus_state == BUS_OK && g_str_has_prefix (line, "OK "))
    {
      r->bus_state = BUS_WAIT;
      bus_begin (r);	/* if the peer finished first */
      return TRUE;
    }
  if (r->bus_state == BUS_AGREE && g_str_equal (line, "AGREE_UNIX_FD"))
    {
      r->bus_state = BUS_MESSAGES;
      return TRUE;
    }
  {
    g_autofree char *why =
      g_strdup_printf ("vgicd's own D-Bus end answered \"%s\" in the handshake", line);

    handshake_fails (r, why);
  }
  return FALSE;
}

/* Read one message's bytes from GDBus, at most to its end, with the
 * descriptors that come with them. */
static gboolean
read_bus (VgicdRelay *r)
{
  gsize queued = (gsize) g_atomic_int_get (&r->to_peer_bytes);
  gsize want = framing_want (&r->bus_framing);
  g_autofree guint8 *buf = NULL;
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE (FDS_PER_READ * sizeof (int))];
  } control;
  struct iovec iov;
  struct msghdr mh = { 0 };
  g_autofree char *why = NULL;
  int *fds = NULL;
  guint nfds = 0;
  ssize_t n;

  if (queued >= RELAY_QUEUE_MAX)
    return FALSE;
  want = MIN (want, RELAY_QUEUE_MAX - queued);
  buf = g_malloc (want);
  iov = (struct iovec) { buf, want };
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control.buf;
  mh.msg_controllen = sizeof control.buf;
  n = recvmsg (r->bus_fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return FALSE;
  for (struct cmsghdr *cm = CMSG_FIRSTHDR (&mh); n >= 0 && cm; cm = CMSG_NXTHDR (&mh, cm))
    if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
      {
        guint k = (guint) ((cm->cmsg_len - CMSG_LEN (0)) / sizeof (int));

        fds = g_renew (int, fds, nfds + k);
        memcpy (fds + nfds, CMSG_DATA (cm), k * sizeof (int));
        nfds += k;
      }
  if (n <= 0 || (mh.msg_flags & MSG_CTRUNC))
    {
      for (guint i = 0; i < nfds; i++)
        close (fds[i]);
      g_free (fds);
      relay_close (r, n > 0 ? "vgicd sent more descriptors in one message than it can relay"
                            : NULL, FALSE);
      return FALSE;
    }
  /* vgicd's own messages: framed for the descriptors, not capped. */
  if (!framing_feed (&r->bus_framing, buf, (gsize) n, G_MAXUINT64, &why))
    {
      for (guint i = 0; i < nfds; i++)
        close (fds[i]);
      g_free (fds);
      relay_close (r, why, FALSE);
      return FALSE;
    }
  to_peer_push (r, buf, (gsize) n, fds, nfds);
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* The pump                                                           */
/* ------------------------------------------------------------------ */

static void
relay_pump (VgicdRelay *r)
{
  for (guint round = 0; round < PUMP_ROUNDS && !relay_closed (r); round++)
    {
      gboolean moved = FALSE;

      moved |= write_peer (r);
      if (relay_closed (r))
        return;
      moved |= write_bus (r);
      if (relay_closed (r))
        return;
      moved |= read_peer (r);
      if (relay_closed (r))
        return;
      if (r->bus_state == BUS_OK || r->bus_state == BUS_AGREE)
        moved |= bus_handshake (r);
      else if (r->bus_state == BUS_MESSAGES)
        moved |= read_bus (r);
      if (!moved)
        break;
    }
  if (relay_closed (r))
    return;
  /* Read a side only while its destination has room; write while
   * something waits. */
  g_source_modify_unix_fd (r->source, r->peer_tag,
                           (to_bus_room (r) > 0 ? G_IO_IN : 0) |
                           (g_queue_is_empty (&r->to_peer) ? 0 : G_IO_OUT));
  g_source_modify_unix_fd (r->source, r->bus_tag,
                           (r->bus_state != BUS_WAIT &&
                            (gsize) g_atomic_int_get (&r->to_peer_bytes) < RELAY_QUEUE_MAX
                              ? G_IO_IN : 0) |
                           (r->to_bus->len ? G_IO_OUT : 0));
}

static gboolean
relay_dispatch (GSource *source, GSourceFunc callback, gpointer data)
{
  VgicdRelay *r = ((RelaySource *) source)->relay;

  if (relay_closed (r))
    return G_SOURCE_CONTINUE;
  /* A side that hung up is gone for good (a unix socket reports it once
   * its other end is closed): what is still queued for it or from it
   * goes nowhere, and waiting would spin on the hang-up. */
  if ((g_source_query_unix_fd (source, r->peer_tag) | g_source_query_unix_fd (source, r->bus_tag)) &
      (G_IO_HUP | G_IO_ERR))
    relay_close (r, NULL, FALSE);
  else
    relay_pump (r);
  return G_SOURCE_CONTINUE;
}

static void
relay_source_finalize (GSource *source)
{
  vgicd_relay_unref (((RelaySource *) source)->relay);
}

static GSourceFuncs relay_source_funcs = {
  .dispatch = relay_dispatch,
  .finalize = relay_source_finalize,
};

/* ------------------------------------------------------------------ */
/* The API                                                            */
/* ------------------------------------------------------------------ */

VgicdRelay *
vgicd_relay_ref (VgicdRelay *relay)
{
  g_atomic_ref_count_inc (&relay->ref);
  return relay;
}

void
vgicd_relay_unref (VgicdRelay *r)
{
  if (!r || !g_atomic_ref_count_dec (&r->ref))
    return;
  vgicd_reaper_close (r->peer_fd);
  if (r->bus_fd >= 0)
    close (r->bus_fd);
  g_queue_clear_full (&r->to_peer, (GDestroyNotify) chunk_free);
  g_byte_array_unref (r->to_bus);
  g_byte_array_unref (r->peer_in);
  g_mutex_clear (&r->lock);
  g_free (r->failure);
  g_free (r->guid);
  g_free (r);
}

VgicdRelay *
vgicd_relay_of_stream (GIOStream *stream)
{
  return g_object_get_data (G_OBJECT (stream), "vgicd-relay");
}

GIOStream *
vgicd_relay_new (int peer_fd, uid_t uid, pid_t pid, const char *guid, gsize message_max,
                 VgicdDaemon *daemon, GError **error)
{
  g_autoptr (VgicdRelay) r = NULL;
  g_autoptr (GSocket) sock = NULL;
  g_autoptr (GSocketConnection) stream = NULL;
  g_autofree char *hello = NULL;
  g_autoptr (GString) uid_hex = g_string_new (NULL);
  g_autofree char *own_uid = g_strdup_printf ("%u", (guint) getuid ());
  GMainContext *context = relay_context (error);
  GSource *source;
  int pair[2], off = 0;

  if (!context)
    {
      vgicd_reaper_close (peer_fd);
      return NULL;
    }
  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) < 0)
    {
      int e = errno;

      vgicd_reaper_close (peer_fd);
      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e),
                   "cannot make the relay's socket pair: %s", g_strerror (e));
      return NULL;
    }
  r = g_new0 (VgicdRelay, 1);
  g_atomic_ref_count_init (&r->ref);
  g_mutex_init (&r->lock);
  r->peer_fd = peer_fd;
  r->bus_fd = pair[0];
  r->uid = uid;
  r->pid = pid;
  r->guid = g_strdup (guid);
  r->message_max = message_max;
  r->daemon = daemon;
  r->peer_in = g_byte_array_new ();
  r->to_bus = g_byte_array_new ();
  g_queue_init (&r->to_peer);
  /* Nothing may block the relay thread; and a socket activation's
   * PassCredentials=, PassSecurity= or PassPIDFD= would set MSG_CTRUNC on
   * every read (the theory): off, whatever the listening socket had. */
  g_unix_set_fd_nonblocking (peer_fd, TRUE, NULL);
  setsockopt (peer_fd, SOL_SOCKET, SO_PASSCRED, &off, sizeof off);
  setsockopt (peer_fd, SOL_SOCKET, SO_PASSSEC, &off, sizeof off);
#ifdef SO_PASSPIDFD
  setsockopt (peer_fd, SOL_SOCKET, SO_PASSPIDFD, &off, sizeof off);
#endif

  /* On failure GLib has closed pair[1] already (its finalize does): a
   * second close here could close another thread's new descriptor. */
  sock = g_socket_new_from_fd (pair[1], error);
  if (!sock)
    return NULL;
  stream = g_socket_connection_factory_create_connection (sock);
  g_assert (G_IS_UNIX_CONNECTION (stream));

  /* The relay's side of GDBus's handshake, as far as it goes without the
   * peer (the theory): the NUL byte (the kernel attaches the sender's
   * credentials; GDBus reads the socketpair's SO_PEERCRED, vgicd's own)
   * and EXTERNAL with vgicd's own uid. */
  for (const char *c = own_uid; *c; c++)
    g_string_append_printf (uid_hex, "%02x", (guint) (guchar) *c);
  hello = g_strdup_printf ("AUTH EXTERNAL %s\r\n", uid_hex->str);
  g_byte_array_append (r->to_bus, (const guint8 *) "", 1);
  g_byte_array_append (r->to_bus, (const guint8 *) hello, (guint) strlen (hello));
  r->bus_state = BUS_OK;
  r->peer_state = PEER_NUL;

  r->source = g_source_new (&relay_source_funcs, sizeof (RelaySource));
  ((RelaySource *) r->source)->relay = vgicd_relay_ref (r);
  source = r->source;
  g_source_set_static_name (source, "vgicd-relay");
  r->peer_tag = g_source_add_unix_fd (r->source, r->peer_fd, G_IO_IN);
  r->bus_tag = g_source_add_unix_fd (r->source, r->bus_fd, G_IO_OUT);
  g_object_set_data_full (G_OBJECT (stream), "vgicd-relay", vgicd_relay_ref (r),
                          (GDestroyNotify) vgicd_relay_unref);
  /* From here the relay thread owns the relay's state. */
  g_source_attach (source, context);
  g_source_unref (source);	/* the context holds it until destroyed */
  return G_IO_STREAM (g_steal_pointer (&stream));
}

gsize
vgicd_relay_unread (VgicdRelay *r)
{
  gsize n = (gsize) MAX (g_atomic_int_get (&r->to_peer_bytes), 0);
  int queued = 0;

  g_mutex_lock (&r->lock);
  if (r->peer_fd >= 0 && ioctl (r->peer_fd, SIOCOUTQ, &queued) == 0 && queued > 0)
    n += (gsize) queued;
  g_mutex_unlock (&r->lock);
  return n;
}

char *
vgicd_relay_dup_failure (VgicdRelay *r, gboolean *logged)
{
  char *why;

  g_mutex_lock (&r->lock);
  why = g_strdup (r->failure);
  *logged = r->failure_logged;
  g_mutex_unlock (&r->lock);
  return why;
}

gboolean
vgicd_relay_is_closed (VgicdRelay *r)
{
  gboolean closed;

  g_mutex_lock (&r->lock);
  closed = r->peer_fd < 0 || r->failure != NULL;
  g_mutex_unlock (&r->lock);
  return closed;
}

gboolean
vgicd_relay_claim_failure (VgicdRelay *r, const char *why)
{
  gboolean first;

  g_mutex_lock (&r->lock);
  first = claim_failure_locked (r, why, TRUE);
  g_mutex_unlock (&r->lock);
  return first;
}
