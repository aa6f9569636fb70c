/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-reaper.c - the last close of every socket a peer could have put a
 * file descriptor in, on a thread of its own (see vgicd-reaper.h).
 *
 * Theory of operation.  The last close of a file runs the file's release
 * in the thread that closes it (fput() leaves it to that thread's return
 * to user space), and a peer that passes a descriptor chooses what that
 * release does: a TCP socket with SO_LINGER set and data its own peer
 * never takes waits out its linger time, which may be forever; a unix
 * socket releases the descriptors still queued in it, which may be such
 * sockets again.  That last close happens where vgicd drops the file:
 *   - a read with no room for descriptors drops those that came with the
 *     bytes (scm_recv(): the reader releases them);
 *   - closing a socket releases the descriptors still queued in it;
 *   - closing a descriptor vgicd received.
 * vgicd's protocol passes no descriptor to vgicd, so the readers of peers'
 * sockets (the relay, the step channel) peek first, with no room for any,
 * and never read past bytes that carry some: a peek leaves them queued
 * and only tells (MSG_CTRUNC), and the peer is closed.  Every socket a peer
 * could have written to is then closed here, never on a thread that serves
 * anyone: the main loop, the relay thread, GDBus's worker, Manager1's
 * thread; and so is every descriptor a caller's message to Manager1
 * carries (the system bus passes them; Manager1 takes none).
 *
 * Here a socket is defused before its close: SO_LINGER cleared (a TCP
 * socket then closes at once, its FIN sent by the kernel later); a unix
 * socket shut for reading (its peer can add nothing more), and the
 * descriptors queued in it defused in turn, through the copies a walk of
 * peeks installs (SO_PEEK_OFF), DEFUSE_DEPTH deep and DEFUSE_FDS in all;
 * a listening one's pending connections accepted and defused the same
 * way.  The queue itself stays: the socket's last close finds it as the
 * peer left it, and the peer sees what any close with bytes unread gives
 * it (a connection reset, which libvgicd reads as "closed by vgicd").
 * One read takes in at most FDS_PER_READ descriptors, and never the last
 * KEEP_FREE ones RLIMIT_NOFILE leaves, which stay vgicd's own: so the
 * copies never make vgicd run out where GLib needs one.  What still waits
 * (a file whose release waits on something else, a FUSE file, a tty
 * draining) holds this thread only, and a close that took SLOW_US or more
 * is logged.  vgicd_reaper_pending() counts the descriptors waiting here,
 * which the door charges to the peers, so a stuck or outpaced reaper is
 * met by refused connections, then by connections left in the kernel's
 * backlog, never by vgicd running out of descriptors.  Most sockets carry
 * no descriptor, and cost the walk a peek and no count of the room.
 *
 * From Linux 6.16 the kernel can refuse the descriptors at the sender
 * instead (SO_PASSRIGHTS off on the receiving socket: sendmsg() fails with
 * EPERM, and a listening socket's connections inherit the setting), which
 * ends what defusing cannot reach (a FUSE file's release, more descriptors
 * than the walk's bounds).  vgicd turns it off on its listening socket, on
 * each connection it accepts (one queued before vgicd set the listener,
 * under socket activation, kept the listener's setting of then) and on its
 * ends of the step channels (vgicd_refuse_fds()); all of the above stays,
 * for the kernels without it (trixie's 6.12) and for what such a queued
 * peer sent before its connection was accepted.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vgicd-fds.h"
#include "vgicd-reaper.h"
#include "vgicd/so-passrights.h"

#define DEFUSE_DEPTH 4			/* unix sockets inside unix sockets */
#define DEFUSE_FDS 65536		/* descriptors defused for one socket, in all */
#define DEFUSE_BYTES (16 << 20)		/* bytes walked for one socket, in all */
#define FDS_PER_READ 253		/* SCM_MAX_FD: the most one message carries */
#define KEEP_FREE 32			/* descriptors a read leaves free: vgicd's own */
#define SLOW_US G_USEC_PER_SEC

static GAsyncQueue *queue;	/* of GINT_TO_POINTER (fd + 1); NULL: no thread */
static int inert = -1;		/* what vgicd_reaper_take_over() leaves behind */
static gint pending;

typedef struct {
  guint fds;	/* descriptors defused so far */
  gsize bytes;	/* bytes walked so far */
} Budget;

static void defuse (int fd, guint depth, Budget *b);

static void
close_timed (int fd)
{
  gint64 t0 = g_get_monotonic_time ();
  gint64 took;

  close (fd);
  took = g_get_monotonic_time () - t0;
  if (took >= SLOW_US)
    g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING,
                      "MESSAGE", "closing a peer's socket, or a descriptor a peer sent, took "
                      "%.1f s (on vgicd's reaper thread: nothing else waited)",
                      (double) took / G_USEC_PER_SEC);
}

/* A descriptor that came out of a socket being defused. */
static void
defuse_inner (int fd, guint depth, Budget *b)
{
  if (b->fds < DEFUSE_FDS)
    {
      b->fds++;
      defuse (fd, depth, b);
    }
  close_timed (fd);
}

/* How many descriptors one read may take in: what RLIMIT_NOFILE leaves
 * free, less KEEP_FREE, at most FDS_PER_READ (see the theory). */
static guint
read_room (void)
{
  guint free_fds = vgicd_fds_free (KEEP_FREE + FDS_PER_READ);

  return free_fds <= KEEP_FREE ? 0 : MIN (free_fds - KEEP_FREE, FDS_PER_READ);
}

/* Defuse the descriptors queued in unix socket @fd, @depth deep (see the
 * theory).  Walked with peeks (SO_PEEK_OFF), which install copies of a
 * message's descriptors and leave the message queued: so the socket's
 * last close still finds its queue as the peer left it (a peer sees a
 * connection reset, as from any close with bytes unread), and closing a
 * copy is never a last close.  Where the kernel cannot walk a queue with
 * peeks, the messages are taken instead. */
static void
defuse_queue (int fd, int type, guint depth, Budget *b)
{
  g_autofree guint8 *buf = g_malloc (64 * 1024);
  g_autofree char *control = g_malloc (CMSG_SPACE (FDS_PER_READ * sizeof (int)));
  int zero = 0, peek = MSG_PEEK;

  if (setsockopt (fd, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof zero) < 0)
    peek = 0;
  while (b->bytes < DEFUSE_BYTES && b->fds < DEFUSE_FDS)
    {
      struct iovec iov = { buf, 64 * 1024 };
      struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control };
      gboolean fds = FALSE;
      gint64 t0;
      guint room;
      ssize_t n;

      /* Most sockets carry no descriptor (none at all where the kernel
       * refuses them, SO_PASSRIGHTS), and near the limit counting the
       * room scans the descriptor table (vgicd-fds.c): with thousands of
       * sockets waiting, a count for each made this thread the door's
       * bottleneck.  So a peek with no room first: no MSG_CTRUNC, nothing
       * to defuse in those bytes, the walk goes on; else the peek offset
       * goes back, and the same message is read again with room. */
      if (peek)
        {
          int at = 0;
          socklen_t at_len = sizeof at;

          if (getsockopt (fd, SOL_SOCKET, SO_PEEK_OFF, &at, &at_len) < 0)
            break;
          mh.msg_controllen = 0;
          n = recvmsg (fd, &mh, MSG_PEEK | MSG_DONTWAIT);
          if (n < 0 && errno == EINTR)
            continue;
          if (n < 0)
            break;
          if (!(mh.msg_flags & MSG_CTRUNC))
            {
              b->bytes += (gsize) n;
              if (n == 0)
                break;	/* the end (shut for reading), or an empty datagram */
              continue;
            }
          if (setsockopt (fd, SOL_SOCKET, SO_PEEK_OFF, &at, sizeof at) < 0)
            break;
        }
      room = read_room ();
      if (room == 0)
        break;	/* no descriptor to spare: the close takes the rest */
      mh.msg_controllen = CMSG_SPACE (room * sizeof (int));
      mh.msg_flags = 0;
      t0 = g_get_monotonic_time ();
      n = recvmsg (fd, &mh, peek | MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        break;
      /* A read (not a peek) dropped the descriptors past the room. */
      if ((mh.msg_flags & MSG_CTRUNC) && g_get_monotonic_time () - t0 >= SLOW_US)
        g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING,
                          "MESSAGE", "descriptors a peer sent, dropped by the kernel on "
                          "vgicd's reaper thread, took %.1f s to close (nothing else waited)",
                          (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC);
      b->bytes += (gsize) n;
      for (struct cmsghdr *cm = CMSG_FIRSTHDR (&mh); cm; cm = CMSG_NXTHDR (&mh, cm))
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
          {
            guint count = (guint) ((cm->cmsg_len - CMSG_LEN (0)) / sizeof (int));

            for (guint i = 0; i < count; i++)
              {
                int inner;

                memcpy (&inner, CMSG_DATA (cm) + i * sizeof (int), sizeof inner);
                defuse_inner (inner, depth + 1, b);
                fds = TRUE;
              }
          }
      /* The end of the queue (shut for reading: no more comes); a
       * datagram of no bytes and no descriptors. */
      if (n == 0 && (type == SOCK_STREAM || !fds))
        break;
    }
}

static void
defuse (int fd, guint depth, Budget *b)
{
  struct linger off = { 0, 0 };
  int type = 0, domain = 0, listening = 0;
  socklen_t len = sizeof type;

  if (getsockopt (fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
    return;	/* not a socket */
  setsockopt (fd, SOL_SOCKET, SO_LINGER, &off, sizeof off);
  len = sizeof domain;
  if (getsockopt (fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 || domain != AF_UNIX ||
      depth >= DEFUSE_DEPTH)
    return;
  len = sizeof listening;
  if (getsockopt (fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening)
    {
      int c;

      while (b->fds < DEFUSE_FDS &&
             (c = accept4 (fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0)
        defuse_inner (c, depth + 1, b);
      return;
    }
  shutdown (fd, SHUT_RD);
  defuse_queue (fd, type, depth, b);
}

static void
defuse_and_close (int fd)
{
  Budget b = { 0 };

  defuse (fd, 0, &b);
  close_timed (fd);
}

static gpointer
reaper_thread (gpointer data)
{
  GAsyncQueue *q = data;

  for (;;)
    {
      int fd = GPOINTER_TO_INT (g_async_queue_pop (q)) - 1;

      defuse_and_close (fd);
      g_atomic_int_add (&pending, -1);
    }
  return NULL;
}

/* The thread, started at the first use (and kept); FALSE when it cannot
 * start, which is tried again the next time. */
static gboolean
reaper_started (void)
{
  static GMutex lock;
  gboolean ok;

  g_mutex_lock (&lock);
  if (!queue)
    {
      g_autoptr (GError) error = NULL;
      GAsyncQueue *q = g_async_queue_new ();
      GThread *thread = g_thread_try_new ("vgicd-reaper", reaper_thread, q, &error);

      if (thread)
        {
          g_thread_unref (thread);
          queue = q;
        }
      else
        {
          g_async_queue_unref (q);
          g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING,
                            "MESSAGE", "cannot start the reaper thread (%s): a peer's socket "
                            "is closed on the thread that serves it", error->message);
        }
    }
  if (inert < 0)
    inert = socket (AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ok = queue != NULL;
  g_mutex_unlock (&lock);
  return ok;
}

void
vgicd_reaper_close (int fd)
{
  if (fd < 0)
    return;
  if (!reaper_started ())
    {
      defuse_and_close (fd);
      return;
    }
  g_atomic_int_inc (&pending);
  g_async_queue_push (queue, GINT_TO_POINTER (fd + 1));
}

int
vgicd_reaper_steal (int fd)
{
  int keep;

  reaper_started ();
  keep = fcntl (fd, F_DUPFD_CLOEXEC, 3);
  if (keep >= 0 && (inert < 0 || dup3 (inert, fd, O_CLOEXEC) < 0))
    {
      int e = inert < 0 ? EBADF : errno;

      close (keep);	/* not the last: @fd still has the file */
      errno = e;
      return -1;
    }
  return keep;
}

/* At most one line every HANDOVER_LOG_US: a failure to hand over is a
 * lack of descriptors, which comes with a flood of connections. */
#define HANDOVER_LOG_US (10 * G_USEC_PER_SEC)
static void
log_no_handover (int e)
{
  static GMutex lock;
  static gint64 logged_us;
  static guint unlogged;
  gint64 now = g_get_monotonic_time ();
  guint more;

  g_mutex_lock (&lock);
  if (logged_us && now - logged_us < HANDOVER_LOG_US)
    {
      unlogged++;
      g_mutex_unlock (&lock);
      return;
    }
  more = unlogged;
  logged_us = now;
  unlogged = 0;
  g_mutex_unlock (&lock);
  g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING,
                    "MESSAGE", "cannot hand a peer's socket to the reaper thread (%s): it is "
                    "defused and closed on the thread that serves it (and %u more since the "
                    "last such line, not logged)", g_strerror (e), more);
}

void
vgicd_reaper_take_over (int fd)
{
  Budget b = { 0 };
  int keep;

  if (fd < 0)
    return;
  keep = vgicd_reaper_steal (fd);
  if (keep >= 0)
    {
      vgicd_reaper_close (keep);
      return;
    }
  log_no_handover (errno);
  defuse (fd, 0, &b);
}

void
vgicd_reaper_start (void)
{
  reaper_started ();
}

gssize
vgicd_recv_no_fds (int fd, void *buf, gsize len, int flags, gboolean *fds)
{
  struct iovec iov = { buf, len };
  struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
  ssize_t n = recvmsg (fd, &mh, MSG_PEEK | MSG_DONTWAIT | flags);

  *fds = n >= 0 && (mh.msg_flags & MSG_CTRUNC);
  if (n <= 0 || *fds)
    return n;
  /* MIN: with MSG_TRUNC, n is a packet's whole length. */
  if (recv (fd, buf, MIN ((gsize) n, len), MSG_DONTWAIT | flags) != n)
    {
      errno = EIO;
      return -1;
    }
  return n;
}

guint
vgicd_reaper_pending (void)
{
  return (guint) MAX (g_atomic_int_get (&pending), 0);
}

gboolean
vgicd_refuse_fds (int fd, char **why)
{
#ifdef SO_PASSRIGHTS
  const int off = 0;
  int e;

  if (g_getenv ("VGICD_TEST_ACCEPT_FDS"))
    {
      if (why)
        *why = g_strdup ("VGICD_TEST_ACCEPT_FDS is set");
      return FALSE;
    }
  if (setsockopt (fd, SOL_SOCKET, SO_PASSRIGHTS, &off, sizeof off) == 0)
    return TRUE;
  e = errno;
  if (why)
    *why = e == ENOPROTOOPT ? g_strdup ("this kernel has no SO_PASSRIGHTS")
                            : g_strdup_printf ("SO_PASSRIGHTS: %s", g_strerror (e));
  return FALSE;
#else
  (void) fd;
  if (why)
    *why = g_strdup ("SO_PASSRIGHTS has no number known on this architecture");
  return FALSE;
#endif
}
