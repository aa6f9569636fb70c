/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-server.c - accepts QEMUs on the unix socket and speaks
 * peer-to-peer D-Bus with each.
 *
 * Why not GDBusServer: under systemd the listening socket arrives already
 * bound (socket activation), and GDBusServer only listens on addresses it
 * binds itself.  So vgicd accepts with a GSocketService and runs the D-Bus
 * server-side handshake on each accepted stream.
 *
 * Theory of operation: the door.  Every peer is possibly hostile (any
 * QEMU may be compromised), and what runs before a peer is known must not
 * let it hold a thread, an fd or memory beyond a small bound:
 *
 *   1. At accept(), the kernel's word on who connected (SO_PEERCRED) is
 *      read, before any byte.  A uid not on AllowUsers is closed at once:
 *      no handshake, no thread.  The refusal is counted, and logged at
 *      most once per uid every REFUSAL_LOG_US (with how many were not
 *      logged), so a peer that reconnects in a loop cannot flood the
 *      journal.  AllowUsers is checked again at Attach (a reload may have
 *      changed it since).
 *   2. An admitted connection is "pending" until its D-Bus handshake ends:
 *      at most MaxHandshakes= on the host and MaxHandshakesPerProcess=
 *      per process (128 and 32 by default),
 *      so one QEMU's silent connections cannot take the places of
 *      another's; over the bound, it is closed and counted.
 *   3. Each pending connection has HandshakeTimeout= (5 s) to finish its
 *      handshake
 *      (GDBus runs it on a worker thread, with no timeout of its own): at
 *      the deadline it is cancelled and the connection closed.
 *
 *
 * Each admitted peer's bytes pass through a relay of vgicd's own
 * (vgicd-relay.c) before GDBus sees them: GDBus runs on one end of a
 * socketpair, and the relay reads the peer's socket with no control
 * buffer, so that no descriptor a peer sends ever enters vgicd, and
 * closes a peer that declares a message longer than any vgicd takes
 * (vgicd_relay_message_max(): 1 MiB at MaxVcpus=512), at its header,
 * before GDBus buffers any of it.  The relay also runs the peer's side of
 * the D-Bus handshake (EXTERNAL, the uid SO_PEERCRED gave at step 1), and
 * GDBus's ends when the peer's does, so steps 2 and 3 bound it.
 *
 * After the handshake each connection is independent: a slow or stuck peer
 * holds nothing that another needs (all D-Bus I/O is asynchronous, the
 * relay's too, and a session's work is bounded planning and encoding).
 * What an admitted peer can still make vgicd keep is bounded by the relay
 * (at most one unfinished message of bounded length; its queues, 64 KiB
 * each way) and by a filter on its connection (peer_filter(), run by
 * GDBus's worker thread on each whole message, before it is queued for
 * the main loop).  A peer is closed when it sends
 *   - file descriptors: the protocol passes none to vgicd (the relay
 *     closes a peer whose bytes carried some; the filter one whose message
 *     says it has some);
 *   - anything but a method call that wants a reply: the protocol has no
 *     signals and no one-way calls, and vgicd never calls a peer;
 *   - a call while CALLS_IN_FLIGHT_MAX of its calls are unanswered (a
 *     conforming peer waits for each answer);
 *   - a call while OUTQ_MAX bytes of answers wait unread, in the relay's
 *     queue, the peer's socket and the socketpair: a peer that sends and
 *     does not read would otherwise have GDBus queue its answers in
 *     vgicd's memory without end.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "vgic-shape.h"
#include "vgicd-dbus.h"
#include "vgicd-relay.h"
#include "vgicd-server.h"
#include "vgicd-session.h"
#include "vgicd/protocol.h"


/* The door's bounds are configuration keys (the theory above). */
#define REFUSAL_LOG_US (10 * G_USEC_PER_SEC)
#define REFUSAL_UIDS_MAX 256	/* uids whose last refusal is remembered */
/* An admitted peer's bounds (the theory above). */
#define CALLS_IN_FLIGHT_MAX 16
#define OUTQ_MAX (64 * 1024)

struct _VgicdServer {
  VgicdDaemon *daemon;
  GSocketService *service;
  GDBusAuthObserver *observer;
  char *guid;
  char *description;
  char *bound_path;	/* unlinked at exit when vgicd bound it */
  GArray *allowed;	/* uid_t */
  GPtrArray *pending;	/* Pending *: admitted, handshake not finished */
  GPtrArray *peers;	/* Peer * */
  GHashTable *refusals;	/* uid -> Refusal *: the door's log limit */
};

typedef struct {
  gint64 logged_us;	/* when this uid's refusal was last logged */
  guint unlogged;	/* refusals since, not logged */
} Refusal;

typedef struct {
  VgicdServer *server;
  GDBusConnection *connection;
  VgicdDbusHelper1 *helper;
  VgicdSession *session;
  uid_t uid;
  pid_t pid;
  gulong closed_id;
} Peer;

/*
 * What peer_filter() knows of one connection.  It runs on GDBus's worker
 * thread (incoming messages) and on whichever thread sends (outgoing), so
 * its counters are atomic; the connection owns it (the filter's user data),
 * and the socket's fd lives as long as the connection does.
 */
typedef struct {
  int fd;		/* GDBus's end of the relay's socketpair */
  VgicdRelay *relay;
  pid_t pid;
  gint in_flight;	/* calls received and not yet answered */
  gint closing;		/* set once: the filter has closed the connection */
  gint *closed_count;	/* the daemon's totals.peers_closed */
} PeerGuard;

/* Close @connection for @why (once), from the filter's thread. */
static GDBusMessage *
guard_close (PeerGuard *g, GDBusConnection *connection, GDBusMessage *message,
             const char *why)
{
  if (g_atomic_int_compare_and_exchange (&g->closing, 0, 1))
    {
      g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING,
                        "MESSAGE", "closed the connection of a peer (pid %d): %s",
                        (int) g->pid, why);
      g_atomic_int_inc (g->closed_count);
      g_dbus_connection_close (connection, NULL, NULL, NULL);
    }
  g_object_unref (message);
  return NULL;
}

static GDBusMessage *
peer_filter (GDBusConnection *connection, GDBusMessage *message, gboolean incoming,
             gpointer data)
{
  PeerGuard *g = data;
  int unread = 0;

  if (!incoming)
    {
      GDBusMessageType t = g_dbus_message_get_message_type (message);

      if (t == G_DBUS_MESSAGE_TYPE_METHOD_RETURN || t == G_DBUS_MESSAGE_TYPE_ERROR)
        g_atomic_int_dec_and_test (&g->in_flight);
      return message;
    }
  if (g_atomic_int_get (&g->closing))
    {
      g_object_unref (message);
      return NULL;
    }
  if (g_dbus_message_get_unix_fd_list (message) || g_dbus_message_get_num_unix_fds (message))
    return guard_close (g, connection, message,
                        "it sent file descriptors, which vgicd's protocol never passes");
  if (g_dbus_message_get_message_type (message) != G_DBUS_MESSAGE_TYPE_METHOD_CALL ||
      (g_dbus_message_get_flags (message) & G_DBUS_MESSAGE_FLAGS_NO_REPLY_EXPECTED))
    return guard_close (g, connection, message,
                        "it sent a message that is not a call awaiting an answer");
  if (g_atomic_int_get (&g->in_flight) >= CALLS_IN_FLIGHT_MAX)
    return guard_close (g, connection, message,
                        "it sent a call with " G_STRINGIFY (CALLS_IN_FLIGHT_MAX)
                        " of its calls unanswered");
  /* What is really unread: what the relay has not yet taken from GDBus's
   * end, what it holds, what waits in the peer's socket. */
  if (ioctl (g->fd, SIOCOUTQ, &unread) < 0)
    unread = 0;
  if ((gsize) unread + vgicd_relay_unread (g->relay) >= OUTQ_MAX)
    {
      g_autofree char *why =
        g_strdup_printf ("it sends calls and does not read the answers (%" G_GSIZE_FORMAT
                         " bytes unread)", (gsize) unread + vgicd_relay_unread (g->relay));
      return guard_close (g, connection, message, why);
    }
  g_atomic_int_inc (&g->in_flight);
  return message;
}

static void
guard_free (PeerGuard *g)
{
  vgicd_relay_unref (g->relay);
  g_free (g);
}

static void
peer_free (Peer *p)
{
  vgicd_session_free (p->session);
  if (p->helper)
    {
      g_dbus_interface_skeleton_unexport (G_DBUS_INTERFACE_SKELETON (p->helper));
      g_object_unref (p->helper);
    }
  if (p->closed_id)
    g_signal_handler_disconnect (p->connection, p->closed_id);
  g_clear_object (&p->connection);
  g_free (p);
}

static gboolean
uid_allowed (VgicdServer *server, uid_t uid)
{
  for (guint i = 0; i < server->allowed->len; i++)
    if (g_array_index (server->allowed, uid_t, i) == uid)
      return TRUE;
  return FALSE;
}

static char *
user_name (uid_t uid)
{
  struct passwd *pw = getpwuid (uid);

  return pw ? g_strdup (pw->pw_name) : g_strdup_printf ("%u", (guint) uid);
}

/* The sessions this process's descriptor limit (RLIMIT_NOFILE, the unit's
 * LimitNOFILE=) has room for: each holds FDS_PER_SESSION (its relay's
 * three sockets: the peer's and the socketpair's two ends; its window, its
 * step channel; and the copies of those two that Attach's reply holds in
 * the relay until the peer's socket takes them), the door's pending
 * connections (at most MaxHandshakes=, as configured now) FDS_PER_HANDSHAKE
 * each (a relay's three sockets), and FDS_OTHER (the bus, the listening
 * socket, the journal, the configuration files, the threads' wake-ups)
 * keep theirs.  Descriptors a peer sends never enter vgicd (the relay).
 * So a MaxSessions= above what the limit allows is met by a refused
 * attach, not by an accept() failing for lack of descriptors.  (Reserving
 * for the largest MaxHandshakes= there could be, 1024, left a vgicd started
 * outside systemd, with the usual soft limit of 1024, room for one
 * session.) */
#define FDS_PER_SESSION 7
#define FDS_PER_HANDSHAKE 3
#define FDS_OTHER 64

static guint
sessions_fd_room (guint handshakes)
{
  struct rlimit r;
  rlim_t reserved = (rlim_t) handshakes * FDS_PER_HANDSHAKE + FDS_OTHER;

  if (getrlimit (RLIMIT_NOFILE, &r) < 0 || r.rlim_cur == RLIM_INFINITY)
    return G_MAXUINT;
  if (r.rlim_cur <= reserved + FDS_PER_SESSION)
    return 1;
  return (guint) MIN ((r.rlim_cur - reserved) / FDS_PER_SESSION, G_MAXUINT);
}

/* MaxSessionsPerProcess=, MaxSessions= and MaxSessionsPerUser=: whether
 * one more session of the process @pid (of @uid) fits.  The process's own
 * share is checked first: a QEMU runs one VM, and every libvirt QEMU runs
 * as the same user, so the per-user bound cannot tell one QEMU from the
 * others; the per-process one can, and it refuses the process that holds
 * more than its share, not the VM that attaches after it. */
static gboolean
session_room (VgicdServer *server, uid_t uid, pid_t pid, GError **error)
{
  const VgicdConfig *config = server->daemon->config;
  guint all = 0, mine = 0, process = 0;

  for (guint i = 0; i < server->peers->len; i++)
    {
      const Peer *q = g_ptr_array_index (server->peers, i);

      all += q->session != NULL;
      mine += q->session != NULL && q->uid == uid;
      process += q->session != NULL && q->pid == pid;
    }
  if (process >= config->max_sessions_per_process)
    g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED,
                 "process %d has %u sessions, its limit (MaxSessionsPerProcess=%u); this VM "
                 "saves and loads by QEMU's own path", (int) pid, process,
                 config->max_sessions_per_process);
  else if (all >= config->max_sessions)
    g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED,
                 "vgicd has %u sessions, its limit (MaxSessions=%u); this VM saves "
                 "and loads by QEMU's own path", all, config->max_sessions);
  else if (all >= sessions_fd_room (config->max_handshakes))
    g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED,
                 "vgicd has %u sessions, as many as its file descriptor limit allows "
                 "(LimitNOFILE=); this VM saves and loads by QEMU's own path", all);
  else if (mine >= config->max_sessions_per_user)
    g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED,
                 "uid %u has %u sessions, its limit (MaxSessionsPerUser=%u); this VM saves "
                 "and loads by QEMU's own path", (guint) uid, mine,
                 config->max_sessions_per_user);
  else
    return TRUE;
  return FALSE;
}

/* An attach over one of the host's limits (@error says which): counted,
 * logged, and answered org.vgicd.Error.Limit, which libvgicd reports as
 * denied (QEMU uses its own path). */
static gboolean
over_limit (Peer *p, GDBusMethodInvocation *inv, const GError *error)
{
  p->server->daemon->totals.refused++;
  vgicd_daemon_changed (p->server->daemon);
  g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING,
                    "MESSAGE", "refused an attach (pid %d): %s", (int) p->pid, error->message);
  g_dbus_method_invocation_return_dbus_error (inv, VGICD_DBUS_ERROR_LIMIT, error->message);
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
on_attach (VgicdDbusHelper1 *helper, GDBusMethodInvocation *inv, GUnixFDList *in_fds,
           GVariant *vm, gpointer data)
{
  Peer *p = data;
  VgicdServer *server = p->server;
  g_autoptr (GError) error = NULL;
  g_autoptr (GUnixFDList) fds = NULL;
  int index, channel, channel_index = -1;

  if (!uid_allowed (server, p->uid))
    {
      g_autofree char *who = user_name (p->uid);
      g_autofree char *list = g_strjoinv (", ", server->daemon->config->allow_users);
      g_autofree char *uid = g_strdup_printf ("%u", (guint) p->uid);

      server->daemon->totals.refused++;
      vgicd_daemon_changed (server->daemon);
      /* The operator reads the setting in the log; the peer, possibly
       * hostile, is told only that its own uid is refused, not who else
       * may connect nor where the configuration lives. */
      g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING,
                        "VGICD_PEER_UID", uid,
                        "MESSAGE", "refused a peer: user %s (uid %u, pid %d) is not allowed "
                        "(AllowUsers in %s lists: %s)",
                        who, (guint) p->uid, (int) p->pid, server->daemon->config->path, list);
      g_autofree char *msg =
        g_strdup_printf ("user %s (uid %u) may not use vgicd on this host; vgicd's log "
                         "names the setting that allows it", who, (guint) p->uid);
      g_dbus_method_invocation_return_dbus_error (
        inv, "org.freedesktop.DBus.Error.AccessDenied", msg);
      return G_DBUS_METHOD_INVOCATION_HANDLED;
    }
  if (p->session)
    {
      g_dbus_method_invocation_return_dbus_error (
        inv, VGICD_DBUS_ERROR_ALREADY_ATTACHED,
        "this connection already has a session; open a new connection for another VM");
      return G_DBUS_METHOD_INVOCATION_HANDLED;
    }
  if (!session_room (server, p->uid, p->pid, &error))
    return over_limit (p, inv, error);
  p->session = vgicd_session_new (server->daemon, p->connection, vm, p->uid, p->pid, &error);
  if (!p->session && g_error_matches (error, VGICD_ERROR, VGICD_ERROR_LIMIT))
    return over_limit (p, inv, error);	/* MaxVcpus=, MaxSessionMemory= */
  if (!p->session)
    {
      g_dbus_method_invocation_return_dbus_error (inv, "org.freedesktop.DBus.Error.InvalidArgs",
                                                  error->message);
      return G_DBUS_METHOD_INVOCATION_HANDLED;
    }
  fds = g_unix_fd_list_new ();
  index = g_unix_fd_list_append (fds, vgicd_session_get_window_fd (p->session), &error);
  if (index < 0)
    {
      g_dbus_method_invocation_return_gerror (inv, error);
      return G_DBUS_METHOD_INVOCATION_HANDLED;
    }
  channel = vgicd_session_take_peer_channel (p->session);
  if (channel >= 0)
    {
      channel_index = g_unix_fd_list_append (fds, channel, &error);
      close (channel);
      if (channel_index < 0)
        {
          g_dbus_method_invocation_return_gerror (inv, error);
          return G_DBUS_METHOD_INVOCATION_HANDLED;
        }
    }
  vgicd_dbus_helper1_complete_attach (helper, inv, fds,
                                      vgicd_session_get_path (p->session),
                                      g_variant_new_handle (index),
                                      vgicd_session_get_info (p->session, channel_index));
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static void
on_closed (GDBusConnection *connection, gboolean remote_peer_vanished, GError *error,
           gpointer data)
{
  Peer *p = data;

  /* The session, its window and its object go with the connection. */
  g_ptr_array_remove (p->server->peers, p);
}

/*
 * A connection admitted at the door, until its handshake ends.  The
 * handshake's callback owns it while the handshake runs (handshake_running),
 * so that a server going away cancels it instead of freeing it under the
 * callback.
 */
typedef struct {
  VgicdServer *server;	/* NULL once the server is gone */
  GSocketConnection *stream;
  GSource *first_byte;	/* until the first byte */
  GSource *deadline;	/* HandshakeTimeout= after accept() */
  GCancellable *cancel;	/* the handshake */
  gboolean handshake_running;
  guint timeout_ms;	/* HandshakeTimeout= when it was admitted */
  uid_t uid;
  pid_t pid;
} Pending;

static void
source_clear (GSource **source)
{
  if (*source)
    {
      g_source_destroy (*source);
      g_clear_pointer (source, g_source_unref);
    }
}

static void
pending_free (Pending *p)
{
  source_clear (&p->first_byte);
  source_clear (&p->deadline);
  g_clear_object (&p->cancel);
  g_clear_object (&p->stream);
  g_free (p);
}

/* Out of the pending list; freed now, or by the handshake's callback. */
static void
pending_drop (Pending *p)
{
  if (p->server)
    g_ptr_array_remove_fast (p->server->pending, p);
  p->server = NULL;
  source_clear (&p->first_byte);
  source_clear (&p->deadline);
  if (p->handshake_running)
    g_cancellable_cancel (p->cancel);	/* its callback frees it */
  else
    {
      if (p->stream)
        g_io_stream_close (G_IO_STREAM (p->stream), NULL, NULL);
      pending_free (p);
    }
}

static void
on_connection_ready (GObject *source, GAsyncResult *res, gpointer data)
{
  Pending *pending = data;
  VgicdServer *server = pending->server;
  g_autoptr (GError) error = NULL;
  GDBusConnection *connection = g_dbus_connection_new_finish (res, &error);
  Peer *p;

  pending->handshake_running = FALSE;
  if (server)
    {
      g_ptr_array_remove_fast (server->pending, pending);
      pending->server = NULL;
    }
  if (!connection || !server)
    {
      VgicdRelay *relay = vgicd_relay_of_stream (G_IO_STREAM (pending->stream));
      gboolean logged = FALSE;
      g_autofree char *why = relay ? vgicd_relay_dup_failure (relay, &logged) : NULL;

      /* A cancelled handshake was logged by whoever cancelled it; the
       * relay's reason, when it ended it, says more than GDBus's end of
       * file. */
      if (server && !logged)
        g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE,
                          "MESSAGE", "a peer (pid %d) failed the D-Bus handshake: %s",
                          (int) pending->pid, why ? why : error->message);
      if (connection)
        g_object_unref (connection);
      g_io_stream_close (G_IO_STREAM (pending->stream), NULL, NULL);
      pending_free (pending);
      return;
    }
  p = g_new0 (Peer, 1);
  p->server = server;
  p->connection = connection;
  /* The door's credentials: the same socket's SO_PEERCRED. */
  p->uid = pending->uid;
  p->pid = pending->pid;
  {
    PeerGuard *g = g_new0 (PeerGuard, 1);

    g->fd = g_socket_get_fd (g_socket_connection_get_socket (pending->stream));
    g->relay = vgicd_relay_ref (vgicd_relay_of_stream (G_IO_STREAM (pending->stream)));
    g->pid = pending->pid;
    g->closed_count = &server->daemon->peers_closed;
    /* Before message processing starts, so no message escapes it. */
    g_dbus_connection_add_filter (connection, peer_filter, g, (GDestroyNotify) guard_free);
  }
  pending_free (pending);
  p->helper = vgicd_dbus_helper1_skeleton_new ();
  g_signal_connect (p->helper, "handle-attach", G_CALLBACK (on_attach), p);
  p->closed_id = g_signal_connect (connection, "closed", G_CALLBACK (on_closed), p);
  g_ptr_array_add (server->peers, p);
  if (!g_dbus_interface_skeleton_export (G_DBUS_INTERFACE_SKELETON (p->helper), connection,
                                         VGICD_HELPER_PATH, &error))
    {
      g_warning ("cannot serve a peer: %s", error->message);
      g_ptr_array_remove (server->peers, p);
      return;
    }
  g_dbus_connection_start_message_processing (connection);
}

/*
 * The first byte decides: a D-Bus client sends one (a NUL, then AUTH)
 * before anything else, so a connection closed before it is someone asking
 * whether vgicd is there (libvirt's qemu hook, a health check), not a
 * failed handshake.  It is closed without a word; everything else gets a
 * relay (vgicd-relay.c), and the D-Bus handshake on GDBus's end of it,
 * which stands for the peer's stream from here on.
 */
static gboolean
on_first_byte (GSocket *sock, GIOCondition cond, gpointer data)
{
  Pending *p = data;
  VgicdServer *server = p->server;
  char byte;
  ssize_t n = recv (g_socket_get_fd (sock), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  g_autoptr (GError) error = NULL;
  GIOStream *relayed;
  int fd;

  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return G_SOURCE_CONTINUE;
  g_clear_pointer (&p->first_byte, g_source_unref);	/* removed by returning */
  if (n <= 0)
    {
      g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_DEBUG,
                        "MESSAGE", "a peer connected and closed: a reachability probe");
      pending_drop (p);
      return G_SOURCE_REMOVE;
    }
  /* The relay takes the socket (a duplicate: GSocket keeps its own). */
  fd = dup (g_socket_get_fd (sock));
  if (fd < 0)
    g_set_error (&error, G_IO_ERROR, g_io_error_from_errno (errno), "%s", g_strerror (errno));
  relayed = fd < 0 ? NULL :
    vgicd_relay_new (fd, p->uid, p->pid, server->guid,
                     vgicd_relay_message_max (server->daemon->config->max_vcpus),
                     &server->daemon->peers_closed, &error);
  if (!relayed)
    {
      g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING,
                        "MESSAGE", "cannot serve a peer (pid %d): %s", (int) p->pid,
                        error->message);
      pending_drop (p);
      return G_SOURCE_REMOVE;
    }
  g_io_stream_close (G_IO_STREAM (p->stream), NULL, NULL);
  g_object_unref (p->stream);
  p->stream = G_SOCKET_CONNECTION (relayed);
  p->cancel = g_cancellable_new ();
  p->handshake_running = TRUE;
  g_dbus_connection_new (relayed, server->guid,
                         G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_SERVER |
                         G_DBUS_CONNECTION_FLAGS_DELAY_MESSAGE_PROCESSING,
                         server->observer, p->cancel, on_connection_ready, p);
  return G_SOURCE_REMOVE;
}

static gboolean
on_deadline (gpointer data)
{
  Pending *p = data;

  g_clear_pointer (&p->deadline, g_source_unref);	/* removed by returning */
  g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE,
                    "MESSAGE", "a peer (pid %d) %s within %d ms; closed", (int) p->pid,
                    p->handshake_running ? "did not finish its D-Bus handshake" : "sent nothing",
                    p->timeout_ms);
  pending_drop (p);	/* a running handshake is cancelled */
  return G_SOURCE_REMOVE;
}

/* Step 1's log: at most once per uid every REFUSAL_LOG_US. */
static void
log_refusal (VgicdServer *server, uid_t uid, pid_t pid, const char *why)
{
  gint64 now = g_get_monotonic_time ();
  Refusal *r = g_hash_table_lookup (server->refusals, GUINT_TO_POINTER (uid));
  g_autofree char *who = NULL;
  g_autofree char *uid_s = NULL;
  g_autofree char *list = NULL;

  if (r && now - r->logged_us < REFUSAL_LOG_US)
    {
      r->unlogged++;
      return;
    }
  if (!r)
    {
      /* Forget them all rather than grow: at worst one more line each. */
      if (g_hash_table_size (server->refusals) >= REFUSAL_UIDS_MAX)
        g_hash_table_remove_all (server->refusals);
      r = g_new0 (Refusal, 1);
      g_hash_table_insert (server->refusals, GUINT_TO_POINTER (uid), r);
    }
  who = user_name (uid);
  uid_s = g_strdup_printf ("%u", (guint) uid);
  list = g_strjoinv (", ", server->daemon->config->allow_users);
  g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING,
                    "VGICD_PEER_UID", uid_s,
                    "MESSAGE", "closed a connection from user %s (uid %u, pid %d): %s "
                    "(AllowUsers in %s lists: %s)%s",
                    who, (guint) uid, (int) pid, why, server->daemon->config->path, list,
                    r->unlogged ? "; more refused and not logged, see GetStats' refused" : "");
  r->logged_us = now;
  r->unlogged = 0;
}

static guint
pending_of_pid (VgicdServer *server, pid_t pid)
{
  guint n = 0;

  for (guint i = 0; i < server->pending->len; i++)
    n += ((Pending *) g_ptr_array_index (server->pending, i))->pid == pid;
  return n;
}

static gboolean
on_incoming (GSocketService *service, GSocketConnection *stream, GObject *source,
             gpointer data)
{
  VgicdServer *server = data;
  GSocket *sock = g_socket_connection_get_socket (stream);
  g_autoptr (GCredentials) creds = g_socket_get_credentials (sock, NULL);
  uid_t uid = creds ? g_credentials_get_unix_user (creds, NULL) : (uid_t) -1;
  pid_t pid = creds ? g_credentials_get_unix_pid (creds, NULL) : -1;
  const char *why = NULL;
  Pending *p;

  if (!creds || !uid_allowed (server, uid))
    why = "not allowed";
  else if (server->pending->len >= server->daemon->config->max_handshakes)
    why = "too many connections in their handshake on this host";
  else if (pending_of_pid (server, pid) >= server->daemon->config->max_handshakes_per_process)
    why = "too many connections of this process in their handshake";
  if (why)
    {
      server->daemon->totals.refused++;
      vgicd_daemon_changed (server->daemon);
      log_refusal (server, uid, pid, why);
      g_io_stream_close (G_IO_STREAM (stream), NULL, NULL);
      return TRUE;
    }
  p = g_new0 (Pending, 1);
  p->server = server;
  p->stream = g_object_ref (stream);
  p->uid = uid;
  p->pid = pid;
  p->first_byte = g_socket_create_source (sock, G_IO_IN | G_IO_HUP | G_IO_ERR, NULL);
  g_source_set_callback (p->first_byte, G_SOURCE_FUNC (on_first_byte), p, NULL);
  g_source_attach (p->first_byte, NULL);
  p->timeout_ms = server->daemon->config->handshake_timeout;
  p->deadline = g_timeout_source_new (p->timeout_ms);
  g_source_set_callback (p->deadline, on_deadline, p, NULL);
  g_source_attach (p->deadline, NULL);
  g_ptr_array_add (server->pending, p);
  return TRUE;
}

/* Only EXTERNAL: the kernel vouches for the peer's uid. */
static gboolean
on_allow_mechanism (GDBusAuthObserver *observer, const char *mechanism, gpointer data)
{
  return g_strcmp0 (mechanism, "EXTERNAL") == 0;
}

/*
 * The socket vgicd binds itself gets what vgicd.socket gives systemd's:
 * mode 0660, group SocketGroup= (kvm), owned by vgicd's user (root).  A group that does not
 * exist is an error when the file names it; when it is the default (a host
 * without a kvm group), only root may connect, and a warning says so: any
 * QEMU not run as root then cannot attach and uses its own path, and this
 * line is where the operator learns why (journalctl -p warning shows it).
 */
static gboolean
restrict_socket (const char *path, const char *group, gboolean group_set, GError **error)
{
  struct group gr, *found = NULL;
  char buf[4096];
  int r = getgrnam_r (group, &gr, buf, sizeof buf, &found);

  if (!found && group_set)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED,
                   "SocketGroup=%s: %s", group,
                   r ? g_strerror (r) : "no such group");
      return FALSE;
    }
  if (!found)
    {
      g_warning ("group %s does not exist: only root may connect to %s (mode 0600); "
                 "set SocketGroup= in vgicd.conf to let QEMUs of another user in",
                 group, path);
      if (chmod (path, 0600) < 0)
        goto fail;
      return TRUE;
    }
  if (chown (path, (uid_t) -1, found->gr_gid) < 0 || chmod (path, 0660) < 0)
    goto fail;
  return TRUE;

fail:
  g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED, "cannot set the owner and mode of %s: %s",
               path, g_strerror (errno));
  return FALSE;
}

static GSocket *
bind_socket (const char *path, const char *group, gboolean group_set, GError **error)
{
  g_autoptr (GSocket) sock = NULL;
  g_autoptr (GSocketAddress) addr = NULL;
  g_autofree char *dir = g_path_get_dirname (path);
  struct stat st;

  if (g_mkdir_with_parents (dir, 0755) < 0)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED, "cannot create %s: %s", dir,
                   g_strerror (errno));
      return NULL;
    }
  /* A stale socket from a previous run would make bind fail. */
  if (lstat (path, &st) == 0 && S_ISSOCK (st.st_mode))
    unlink (path);
  sock = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_DEFAULT,
                       error);
  if (!sock)
    return NULL;
  addr = g_unix_socket_address_new (path);
  /* GLib's backlog is 10: a host starting VMs in a burst, while vgicd is
   * busy, would have QEMUs past the tenth refused (EAGAIN) at connect.  As
   * systemd's Backlog= does for vgicd.socket, take the kernel's maximum. */
  g_socket_set_listen_backlog (sock, SOMAXCONN);
  /* Owner and mode are set before listen(): until then nobody connects. */
  if (!g_socket_bind (sock, addr, TRUE, error))
    {
      g_prefix_error (error, "cannot listen on %s: ", path);
      return NULL;
    }
  if (!restrict_socket (path, group, group_set, error) || !g_socket_listen (sock, error))
    {
      g_prefix_error (error, "cannot listen on %s: ", path);
      unlink (path);
      return NULL;
    }
  return g_steal_pointer (&sock);
}

VgicdServer *
vgicd_server_new (VgicdDaemon *daemon, const char *socket_path, GError **error)
{
  VgicdServer *server = g_new0 (VgicdServer, 1);
  g_autoptr (GSocket) sock = NULL;
  int n = sd_listen_fds (TRUE);

  server->daemon = daemon;
  server->guid = g_dbus_generate_guid ();
  server->allowed = g_array_new (FALSE, FALSE, sizeof (uid_t));
  server->peers = g_ptr_array_new_with_free_func ((GDestroyNotify) peer_free);
  server->pending = g_ptr_array_new ();
  server->refusals = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  server->observer = g_dbus_auth_observer_new ();
  {
    guint room = sessions_fd_room (daemon->config->max_handshakes);

    if (room < daemon->config->max_sessions)
      g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING,
                        "MESSAGE", "the file descriptor limit (LimitNOFILE=) leaves room for "
                        "%u sessions, fewer than MaxSessions=%u: attaches beyond are refused",
                        room, daemon->config->max_sessions);
  }
  g_signal_connect (server->observer, "allow-mechanism", G_CALLBACK (on_allow_mechanism), NULL);

  if (n > 1)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED,
                   "systemd passed %d sockets; vgicd.socket should pass one", n);
      vgicd_server_free (server);
      return NULL;
    }
  if (n == 1)
    {
      sock = g_socket_new_from_fd (SD_LISTEN_FDS_START, error);
      server->description = g_strdup ("socket-activated");
    }
  else
    {
      sock = bind_socket (socket_path, daemon->config->socket_group,
                          daemon->config->socket_group_set, error);
      server->bound_path = g_strdup (socket_path);
      server->description = g_strdup (socket_path);
    }
  if (!sock)
    {
      vgicd_server_free (server);
      return NULL;
    }
  if (n == 1)
    {
      g_autoptr (GSocketAddress) local = g_socket_get_local_address (sock, NULL);
      if (local && G_IS_UNIX_SOCKET_ADDRESS (local))
        {
          g_free (server->description);
          server->description = g_strdup_printf (
            "%s (socket-activated)",
            g_unix_socket_address_get_path (G_UNIX_SOCKET_ADDRESS (local)));
        }
    }
  server->service = g_socket_service_new ();
  if (!g_socket_listener_add_socket (G_SOCKET_LISTENER (server->service), sock, NULL, error))
    {
      vgicd_server_free (server);
      return NULL;
    }
  g_signal_connect (server->service, "incoming", G_CALLBACK (on_incoming), server);
  g_socket_service_start (server->service);
  return server;
}

void
vgicd_server_free (VgicdServer *server)
{
  if (!server)
    return;
  if (server->service)
    {
      g_socket_service_stop (server->service);
      g_socket_listener_close (G_SOCKET_LISTENER (server->service));
      g_object_unref (server->service);
    }
  if (server->pending)
    {
      while (server->pending->len)
        pending_drop (g_ptr_array_index (server->pending, 0));
      g_ptr_array_unref (server->pending);
    }
  if (server->refusals)
    g_hash_table_unref (server->refusals);
  if (server->peers)
    g_ptr_array_unref (server->peers);
  if (server->bound_path)
    unlink (server->bound_path);
  g_clear_object (&server->observer);
  g_array_unref (server->allowed);
  g_free (server->bound_path);
  g_free (server->description);
  g_free (server->guid);
  g_free (server);
}

const char *
vgicd_server_describe (VgicdServer *server)
{
  return server->description;
}

void
vgicd_server_set_allowed (VgicdServer *server, const uid_t *uids, guint n)
{
  g_array_set_size (server->allowed, 0);
  g_array_append_vals (server->allowed, uids, n);
}
