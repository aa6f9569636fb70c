/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-server.c - accepts QEMUs on the unix socket and speaks
 * peer-to-peer D-Bus with each.
 *
 * Why not GDBusServer: under systemd the listening socket arrives already
 * bound (socket activation), and GDBusServer only listens on addresses it
 * binds itself.  So vgicd accepts on the socket itself (step 4 says why
 * not with a GSocketService) and runs the D-Bus server-side handshake on
 * each accepted stream.
 *
 * Theory of operation: the door.  Every peer is possibly hostile (any
 * QEMU may be compromised), and what runs before a peer is known, or
 * before it attaches, must not let it hold a thread, an fd or memory
 * beyond a small bound:
 *
 *   1. At accept(), the kernel's word on who connected (SO_PEERCRED) is
 *      read, before any byte.  A uid not on AllowUsers is closed at once:
 *      no handshake, no thread.  The refusal is counted, and logged at
 *      most once per uid every REFUSAL_LOG_US (with how many were not
 *      logged, and from which processes: REFUSAL_PIDS of them), so a peer
 *      that reconnects in a loop cannot flood the journal, and a QEMU
 *      refused among its refusals is still named.  Those not logged are
 *      said at the end of the REFUSAL_LOG_US (on_log_flush()), in a line
 *      of their own when no refusal came after them: an attack's last
 *      ten seconds are in the journal too.  AllowUsers is checked again at Attach (a reload may have
 *      changed it since).
 *   2. Connections are bounded in every state (in their handshake, not
 *      attached yet, attached): per process (SO_PEERCRED pid),
 *      MaxHandshakesPerProcess= in their handshake (32) and
 *      MaxConnectionsPerProcess= in all (32; a QEMU needs one a VM, two
 *      while it attaches again), and a newcomer over those is closed and
 *      counted; on the host, MaxHandshakes= in their handshake (128),
 *      MaxConnections= in all (1280), and the connections not attached
 *      within the door's share of the descriptors (step 4).  A full host
 *      does not refuse the newcomer: the process holding the most
 *      connections not attached loses its oldest (shed: counted in
 *      refused, logged), and the newcomer is admitted, unless it is of
 *      that process, which is then refused.  So no set of processes can
 *      keep another's connection out, and attached VMs are never shed.
 *   3. Deadlines: FirstByteTimeout= (1 s) for the first byte (a D-Bus
 *      client writes it as soon as it connects), HandshakeTimeout= (5 s)
 *      for the whole handshake (GDBus runs it on a worker thread, with no
 *      timeout of its own: at the deadline it is cancelled), and
 *      AttachTimeout= (5 s) after the handshake for Attach (libvgicd
 *      attaches at once); a connection past one is closed, logged at most
 *      one line a kind every REFUSAL_LOG_US (door_log()), and a peer not
 *      attached in time is counted in peers-closed.
 *   4. Descriptors.  Each connection costs FDS_PER_CONNECTION, one in its
 *      handshake FDS_PER_HANDSHAKE more (the wakeup of the GCancellable
 *      its thread waits on, which GLib creates with g_error() when no
 *      descriptor is left: an abort), a session FDS_PER_SESSION more.
 *      Peers may make vgicd hold at most the limit (RLIMIT_NOFILE, the
 *      unit's LimitNOFILE=) less FDS_RESERVE, which stays vgicd's own;
 *      of that, connections not attached hold at most the door's share
 *      (MaxHandshakes= in their handshake, at most half), and sessions
 *      the rest.  What the door has closed is counted until its
 *      descriptors are gone, and no connection is admitted past the
 *      limit less the reserve: so no peer brings vgicd to call GLib with
 *      no descriptor left.  accept() itself never waits (so GLib makes no
 *      wakeup for it), and a spare descriptor is kept: at EMFILE (the
 *      limit reached by something vgicd does not count) it is closed to
 *      accept and close the connection, then taken again, where
 *      GSocketService would warn and accept again at once, spinning on
 *      the readable socket.  A connection refused at once still holds a
 *      descriptor until the reaper's close: with the budget spent and
 *      ACCEPT_REAPER_MAX of those waiting, vgicd stops accepting for a
 *      while, and new connections wait in the kernel's backlog.  The
 *      door's reading of the table counts what the connections it admitted
 *      still open at their first byte (fds_owed()), and a relay that would
 *      leave its handshake's wakeup no room is not made (on_first_byte()).
 *      The door's work runs below the sessions' on the main loop
 *      (DOOR_PRIORITY), so that a flood of connections does not delay a
 *      save or load inside its downtime.
 *      What a connection holds is said in one place, FDS_PER_CONNECTION.
 *
 * Each admitted peer's bytes pass through a relay of vgicd's own
 * (vgicd-relay.c) before GDBus sees them: GDBus runs on one end of a
 * socketpair, and the relay peeks at the peer's socket with no control
 * buffer, so that no descriptor a peer sends ever reaches a thread that
 * serves anyone (the socket, with them still queued in it, is closed by
 * the reaper, vgicd-reaper.c, as is every peer's socket the door
 * closes), and
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
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <fcntl.h>
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
#include "vgicd-catalog.h"
#include "vgicd-dbus.h"
#include "vgicd-fds.h"
#include "vgicd-reaper.h"
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

/* What each kind of door log line is (door_log()). */
typedef enum {
  DOOR_LOG_SHED,	/* a connection shed for a newcomer */
  DOOR_LOG_FULL,	/* a newcomer refused: no room */
  DOOR_LOG_TIMEOUT,	/* first byte or handshake not in time */
  DOOR_LOG_UNATTACHED,	/* no Attach within AttachTimeout= */
  DOOR_LOG_ACCEPT,	/* accept() failed */
  DOOR_LOG_BACKLOG,	/* not accepting: the descriptor budget is held */
  DOOR_LOG_LIMIT,	/* an attach over a limit (over_limit()) */
  DOOR_LOG_RELAY,	/* no descriptors for a relay at the first byte */
  DOOR_LOG_KINDS
} DoorLogKind;

typedef struct {
  gint64 logged_us;	/* when a line of this kind was last logged */
  guint unlogged;	/* lines since, not logged */
  GLogLevelFlags level;	/* of the last line, logged or not */
} DoorLog;

/* What the lines of each kind are about, for the line that says how many
 * were not logged (on_log_flush()). */
static const char *const door_log_what[] = {
  [DOOR_LOG_SHED] = "connections shed for a newcomer",
  [DOOR_LOG_FULL] = "newcomers refused at the full door",
  [DOOR_LOG_TIMEOUT] = "connections closed for their first byte or handshake not in time",
  [DOOR_LOG_UNATTACHED] = "peers closed for no Attach within AttachTimeout=",
  [DOOR_LOG_ACCEPT] = "connections closed at accept() or accept() failures",
  [DOOR_LOG_BACKLOG] = "pauses in accepting connections",
  [DOOR_LOG_LIMIT] = "attaches refused over a limit",
  [DOOR_LOG_RELAY] = "connections closed at their first byte for want of descriptors",
};
G_STATIC_ASSERT (G_N_ELEMENTS (door_log_what) == DOOR_LOG_KINDS);

struct _VgicdServer {
  VgicdDaemon *daemon;
  GSocket *listener;
  GSource *accept_source;	/* on the listening socket; NULL while backing off */
  GSource *accept_pause;	/* the back-off, when no descriptor was left to shed */
  int spare_fd;		/* closed to accept (and close) a connection at EMFILE */
  guint64 next_seq;	/* arrival order of connections: the oldest is shed first */
  DoorLog logs[DOOR_LOG_KINDS];
  GSource *log_flush;	/* says what the log windows withheld, at their end */
  GDBusAuthObserver *observer;
  char *guid;
  char *description;
  char *bound_path;	/* unlinked at exit when vgicd bound it */
  char *fds;		/* what becomes of the descriptors peers send */
  GArray *allowed;	/* uid_t */
  GPtrArray *pending;	/* Pending *: admitted, handshake not finished */
  GPtrArray *peers;	/* Peer * */
  GHashTable *refusals;	/* uid -> Refusal *: the door's log limit */
};

/* The processes a uid's unlogged refusals came from, named in its next
 * line: every libvirt QEMU is one uid, and a QEMU refused among an
 * attacker's thousands is then still in the log. */
#define REFUSAL_PIDS 8

typedef struct {
  gint64 logged_us;	/* when this uid's refusal was last logged */
  guint unlogged;	/* refusals since, not logged */
  struct {
    pid_t pid;
    guint n;
  } by_pid[REFUSAL_PIDS];	/* of those, by process: the first REFUSAL_PIDS */
  guint n_pids;
  guint others;		/* ... and those of other processes */
} Refusal;

typedef struct {
  VgicdServer *server;
  GDBusConnection *connection;
  VgicdDbusHelper1 *helper;
  VgicdSession *session;
  uid_t uid;
  pid_t pid;
  gulong closed_id;
  guint64 seq;		/* its arrival at the door (Pending's) */
  GSource *attach_deadline;	/* AttachTimeout= after its handshake */
  gboolean closing;	/* closed by the door, until "closed" (and see peer_closing()) */
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
  VgicdDaemon *daemon;	/* counts the peers closed (vgicd_daemon_count_closed()) */
} PeerGuard;

/* Close @connection for @why (once), from the filter's thread. */
static GDBusMessage *
guard_close (PeerGuard *g, GDBusConnection *connection, GDBusMessage *message,
             const char *why)
{
  if (g_atomic_int_compare_and_exchange (&g->closing, 0, 1))
    {
      /* Unless the relay closed it first, for bytes that followed a
       * message GDBus had not yet read: one peer, counted once. */
      if (vgicd_relay_claim_failure (g->relay, why))
        {
          vgicd_log_peer_line (g->daemon->log_shares, g->pid, G_LOG_LEVEL_WARNING,
                               "closed the connection of a peer (pid %d): %s", (int) g->pid, why);
          vgicd_daemon_count_closed (g->daemon);
        }
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
  if (p->attach_deadline)
    {
      g_source_destroy (p->attach_deadline);
      g_source_unref (p->attach_deadline);
    }
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

/*
 * Descriptors (the theory above, step 4).  What each thing a peer makes
 * vgicd hold costs, in descriptors: one constant each.  Descriptors a peer
 * sends enter vgicd only as the reaper's copies, one read's worth at most,
 * which leave the last of the limit free (vgicd-reaper.c); the peers'
 * sockets waiting for the reaper are charged (fds_charged()).
 */
/* One connection, in any state: its relay's three sockets (the peer's,
 * and the two ends of the socketpair GDBus runs on). */
#define FDS_PER_CONNECTION 3
/* A connection in its handshake, besides: the wakeup (an eventfd) of the
 * GCancellable the handshake thread waits on. */
#define FDS_PER_HANDSHAKE 1
/* A session, besides its connection: its window and its step channel, and
 * the copies of those two that Attach's reply holds in the relay until the
 * peer's socket takes them. */
#define FDS_PER_SESSION 4
/* Kept out of the peers' reach: vgicd's own (standard streams, the bus,
 * the listening socket and its spare, GLib's and the relay thread's
 * wakeups, the journal) and what it opens in passing (configuration files,
 * the metrics textfile, an attach's descriptors before they are counted). */
#define FDS_RESERVE 64
/* Fewer free than this in the table itself, and the door admits no one
 * (on_accept()); fewer than half, and it accepts nothing while closes are
 * on their way.  Below the reaper's KEEP_FREE (vgicd-reaper.c): the
 * copies it takes in to defuse never close the door by themselves; with
 * the relays admitted connections still owe (fds_owed()) they can, where
 * the limit is so small that one read of copies (253) is most of it. */
#define FDS_HEADROOM 16
/* The door's own work on the main loop (accepting, a connection's first
 * byte and its relay) runs below the sessions' (their calls, the step
 * channel: G_PRIORITY_DEFAULT and above): a save or load runs inside a
 * migration's downtime, and a flood of connections, each costing the main
 * thread an accept, the door's checks and a relay, took enough of it on 2
 * cores that an honest save ran out of its 250 ms (bench-load's row 16,
 * cold CI).  New connections wait in the backlog meanwhile, which the
 * QEMUs' connect waits on (libvgicd, up to 2 s). */
#define DOOR_PRIORITY G_PRIORITY_DEFAULT_IDLE
/* What a connection admitted at the door still opens at its first byte:
 * its relay's socket pair and its handshake's wakeup (it holds the peer's
 * socket already).  Counted against the table's free descriptors until
 * then (fds_owed()), since the door reads the table when it admits. */
#define FDS_AT_FIRST_BYTE (FDS_PER_CONNECTION - 1 + FDS_PER_HANDSHAKE)

/* The descriptors peers may make vgicd hold: the limit (RLIMIT_NOFILE,
 * the unit's LimitNOFILE=, read each time: an operator may change it)
 * less FDS_RESERVE. */
static guint
fds_budget (void)
{
  struct rlimit r;

  if (getrlimit (RLIMIT_NOFILE, &r) < 0 || r.rlim_cur == RLIM_INFINITY ||
      r.rlim_cur > G_MAXINT)
    return G_MAXINT;
  return r.rlim_cur > FDS_RESERVE ? (guint) r.rlim_cur - FDS_RESERVE : 0;
}

/* What the door keeps of the budget for connections that are not
 * sessions: MaxHandshakes= in their handshake, but never more than half,
 * so that a small limit still leaves sessions room. */
static guint
fds_door (const VgicdConfig *config, guint budget)
{
  return MIN ((guint64) config->max_handshakes * (FDS_PER_CONNECTION + FDS_PER_HANDSHAKE),
              budget / 2);
}

/* The sessions the limit has room for beside the door's share.  So a
 * MaxSessions= above what the limit allows is met by a refused attach,
 * not by a connection refused at the door. */
static guint
sessions_fd_room (const VgicdConfig *config)
{
  guint budget = fds_budget ();
  guint room = (budget - fds_door (config, budget)) / (FDS_PER_CONNECTION + FDS_PER_SESSION);

  return MAX (room, 1);
}

typedef struct _Pending Pending;

/* The descriptors peers make vgicd hold now, by the constants above:
 * every connection at the door (those dropped while their handshake
 * thread winds down too), every peer (those being closed too), and the
 * peers' sockets waiting for their last close (vgicd-reaper.c). */
static guint
fds_charged (VgicdServer *server)
{
  guint n = server->pending->len * (FDS_PER_CONNECTION + FDS_PER_HANDSHAKE) +
            vgicd_reaper_pending ();

  for (guint i = 0; i < server->peers->len; i++)
    {
      const Peer *q = g_ptr_array_index (server->peers, i);

      n += FDS_PER_CONNECTION + (q->session ? FDS_PER_SESSION : 0);
    }
  return n;
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
  else if (all >= sessions_fd_room (config) ||
           fds_charged (server) + FDS_PER_SESSION > fds_budget ())
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

static gboolean on_log_flush (gpointer data);

/* Have on_log_flush() run at @due_us (monotonic), or earlier: a line was
 * withheld whose window ends then.  One source serves every window; when
 * one is already set it stays, and on_log_flush() sets the next. */
static void
log_flush_arm (VgicdServer *server, gint64 due_us)
{
  gint64 wait_ms;

  if (server->log_flush)
    return;
  wait_ms = MAX (0, due_us - g_get_monotonic_time () + 999) / 1000;
  server->log_flush = g_timeout_source_new ((guint) MIN (wait_ms, REFUSAL_LOG_US / 1000));
  g_source_set_priority (server->log_flush, DOOR_PRIORITY);
  g_source_set_callback (server->log_flush, on_log_flush, server, NULL);
  g_source_attach (server->log_flush, NULL);
}

/* The door's log lines other than step 1's: at most one of each kind
 * every REFUSAL_LOG_US on the host, saying how many were not logged, so
 * that a peer that reconnects in a loop cannot flood the journal (the
 * counters have them all). */
static void G_GNUC_PRINTF (4, 5)
door_log (VgicdServer *server, DoorLogKind kind, GLogLevelFlags level, const char *format, ...)
{
  DoorLog *l = &server->logs[kind];
  gint64 now = g_get_monotonic_time ();
  g_autofree char *msg = NULL;
  va_list args;

  l->level = level;
  if (l->logged_us && now - l->logged_us < REFUSAL_LOG_US)
    {
      l->unlogged++;
      log_flush_arm (server, l->logged_us + REFUSAL_LOG_US);
      return;
    }
  va_start (args, format);
  msg = g_strdup_vprintf (format, args);
  va_end (args);
  if (l->unlogged)
    g_log_structured (G_LOG_DOMAIN, level, "MESSAGE", "%s (and %u more like it since the "
                      "last such line, not logged)", msg, l->unlogged);
  else
    g_log_structured (G_LOG_DOMAIN, level, "MESSAGE", "%s", msg);
  l->logged_us = now;
  l->unlogged = 0;
}

/* An attach over one of the host's limits (@error says which): counted,
 * logged, and answered org.vgicd.Error.Limit, which libvgicd reports as
 * denied (QEMU uses its own path). */
static gboolean
over_limit (Peer *p, GDBusMethodInvocation *inv, const GError *error)
{
  p->server->daemon->totals.refused++;
  vgicd_daemon_changed (p->server->daemon);
  /* A process over its share that attaches again in a loop would
   * otherwise write a line each time: the count has them all. */
  door_log (p->server, DOOR_LOG_LIMIT, G_LOG_LEVEL_WARNING, "refused an attach (pid %d): %s",
            (int) p->pid, error->message);
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
                        "MESSAGE_ID", VGICD_MESSAGE_PEER_REFUSED,
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
struct _Pending {
  VgicdServer *server;	/* NULL once the server is gone */
  GSocketConnection *stream;
  GSource *first_byte;	/* until the first byte */
  GSource *deadline;	/* FirstByteTimeout=, then HandshakeTimeout=, after accept() */
  GCancellable *cancel;	/* the handshake */
  gboolean handshake_running;
  gboolean dropped;	/* closed by the door; its handshake thread winds down */
  guint timeout_ms;	/* HandshakeTimeout= when it was admitted */
  guint first_byte_ms;	/* FirstByteTimeout= when it was admitted */
  gint64 accepted_us;
  guint64 seq;		/* arrival order */
  uid_t uid;
  pid_t pid;
};

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

/* Closed by the door: out of the pending list and freed now, or, while
 * its handshake runs, cancelled and left in the list (its descriptors are
 * still held, and counted) until the handshake's callback frees it. */
static void
pending_drop (Pending *p)
{
  source_clear (&p->first_byte);
  source_clear (&p->deadline);
  if (p->handshake_running)
    {
      p->dropped = TRUE;
      g_cancellable_cancel (p->cancel);	/* its callback frees it */
      return;
    }
  if (p->server)
    g_ptr_array_remove_fast (p->server->pending, p);
  p->server = NULL;
  if (p->stream)
    {
      /* Before the relay took it, the stream is the peer's socket: its
       * last close is the reaper's (vgicd-reaper.c). */
      if (!vgicd_relay_of_stream (G_IO_STREAM (p->stream)))
        vgicd_reaper_take_over (g_socket_get_fd (g_socket_connection_get_socket (p->stream)));
      g_io_stream_close (G_IO_STREAM (p->stream), NULL, NULL);
    }
  pending_free (p);
}


/* Whether the peer behind @stream is gone from its relay's side: closed
 * for what it sent, or by the peer (vgicd_relay_is_closed()).  Its
 * descriptors stay charged until GDBus lets go of the stream, which a
 * busy main loop can take seconds to; its process is not held to a
 * connection it already sees closed (a QEMU connecting again at once
 * would be refused at MaxConnectionsPerProcess=). */
static gboolean
stream_gone (GIOStream *stream)
{
  VgicdRelay *relay = vgicd_relay_of_stream (stream);

  return relay && vgicd_relay_is_closed (relay);
}

/* Whether the door counts @p as closing: dropped by the door, or gone. */
static gboolean
pending_closing (const Pending *p)
{
  return p->dropped || stream_gone (G_IO_STREAM (p->stream));
}

/* The door closes an admitted peer: it stays in the list, and counted,
 * until GDBus has closed it ("closed", on_closed()). */
static void
peer_close (Peer *p)
{
  p->closing = TRUE;
  g_dbus_connection_close (p->connection, NULL, NULL, NULL);
}

/* Whether the door counts @p as closing: closed by the door, or gone. */
static gboolean
peer_closing (const Peer *p)
{
  return p->closing || stream_gone (g_dbus_connection_get_stream (p->connection));
}

/* Step 3: a peer that has not attached by AttachTimeout= after its
 * handshake is closed (libvgicd attaches at once). */
static gboolean
on_attach_deadline (gpointer data)
{
  Peer *p = data;
  VgicdServer *server = p->server;
  VgicdRelay *relay = vgicd_relay_of_stream (g_dbus_connection_get_stream (p->connection));

  g_clear_pointer (&p->attach_deadline, g_source_unref);	/* removed by returning */
  if (p->session || p->closing)
    return G_SOURCE_REMOVE;
  /* The relay or the bus filter may have closed the peer already, for
   * what it sent, and counted it then: GDBus's "closed" can come after
   * this deadline on a busy host (seen: 5 s later), and a peer is closed,
   * and counted, once. */
  if (!relay || vgicd_relay_claim_failure (relay, "it did not attach in time"))
    {
      g_atomic_int_inc (&server->daemon->peers_closed);
      vgicd_daemon_changed (server->daemon);
      door_log (server, DOOR_LOG_UNATTACHED, G_LOG_LEVEL_WARNING,
                "closed the connection of a peer (pid %d): it did not attach within %u ms "
                "of its handshake", (int) p->pid, server->daemon->config->attach_timeout);
    }
  peer_close (p);
  return G_SOURCE_REMOVE;
}

/* A peer that finished its handshake: its place in the door's order, and
 * its attach deadline. */
static void
door_watch_peer (VgicdServer *server, Peer *p, guint64 seq)
{
  p->seq = seq;
  p->attach_deadline = g_timeout_source_new (server->daemon->config->attach_timeout);
  g_source_set_callback (p->attach_deadline, on_attach_deadline, p, NULL);
  g_source_attach (p->attach_deadline, NULL);
}

static void
on_connection_ready (GObject *source, GAsyncResult *res, gpointer data)
{
  Pending *pending = data;
  VgicdServer *server = pending->server;
  g_autoptr (GError) error = NULL;
  GDBusConnection *connection = g_dbus_connection_new_finish (res, &error);
  guint64 pending_seq;
  Peer *p;

  pending->handshake_running = FALSE;
  if (server)
    {
      g_ptr_array_remove_fast (server->pending, pending);
      pending->server = NULL;
    }
  if (!connection || !server || pending->dropped)
    {
      VgicdRelay *relay = vgicd_relay_of_stream (G_IO_STREAM (pending->stream));
      gboolean logged = FALSE;
      g_autofree char *why = relay ? vgicd_relay_dup_failure (relay, &logged) : NULL;

      /* A cancelled or dropped handshake was logged by whoever ended it; the
       * relay's reason, when it ended it, says more than GDBus's end of
       * file. */
      if (server && !pending->dropped && !logged)
        vgicd_log_peer_line (server->daemon->log_shares, pending->pid, G_LOG_LEVEL_MESSAGE,
                             "a peer (pid %d) failed the D-Bus handshake: %s",
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
  pending_seq = pending->seq;
  {
    PeerGuard *g = g_new0 (PeerGuard, 1);

    g->fd = g_socket_get_fd (g_socket_connection_get_socket (pending->stream));
    g->relay = vgicd_relay_ref (vgicd_relay_of_stream (G_IO_STREAM (pending->stream)));
    g->pid = pending->pid;
    g->daemon = server->daemon;
    /* Before message processing starts, so no message escapes it. */
    g_dbus_connection_add_filter (connection, peer_filter, g, (GDestroyNotify) guard_free);
  }
  pending_free (pending);
  p->helper = vgicd_dbus_helper1_skeleton_new ();
  g_signal_connect (p->helper, "handle-attach", G_CALLBACK (on_attach), p);
  p->closed_id = g_signal_connect (connection, "closed", G_CALLBACK (on_closed), p);
  g_ptr_array_add (server->peers, p);
  door_watch_peer (server, p, pending_seq);
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
  guint free_fds;
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
  /* The door admitted this connection with its relay counted (fds_owed());
   * what the door cannot count (the reaper's copies, a closed connection's
   * objects GLib has not dropped yet) may still have spent the table.  A
   * relay made with the last few would leave its handshake's thread to
   * make its wakeup with none, where GLib aborts: refused instead. */
  free_fds = vgicd_fds_free (FDS_AT_FIRST_BYTE + FDS_HEADROOM / 2);
  if (free_fds < FDS_AT_FIRST_BYTE + FDS_HEADROOM / 2)
    {
      server->daemon->totals.refused++;
      vgicd_daemon_changed (server->daemon);
      door_log (server, DOOR_LOG_RELAY, G_LOG_LEVEL_WARNING,
                "closed a peer (pid %d) at its first byte: %u descriptors free, and its "
                "relay needs %d of them with %d to spare (LimitNOFILE=)", (int) p->pid,
                free_fds, FDS_AT_FIRST_BYTE, FDS_HEADROOM / 2);
      pending_drop (p);
      return G_SOURCE_REMOVE;
    }
  /* The relay takes the socket, and GSocket is left an inert one to
   * close: the last close of the peer's is the reaper's, after the relay's
   * (vgicd-reaper.c). */
  fd = vgicd_reaper_steal (g_socket_get_fd (sock));
  if (fd < 0)
    g_set_error (&error, G_IO_ERROR, g_io_error_from_errno (errno), "%s", g_strerror (errno));
  relayed = fd < 0 ? NULL :
    vgicd_relay_new (fd, p->uid, p->pid, server->guid,
                     vgicd_relay_message_max (server->daemon->config->max_vcpus),
                     server->daemon, &error);
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

/* Step 3's deadlines: FirstByteTimeout= after accept() for the first
 * byte, HandshakeTimeout= for the whole handshake. */
static gboolean on_deadline (gpointer data);

static void
pending_arm (Pending *p, guint ms)
{
  p->deadline = g_timeout_source_new (ms);
  g_source_set_callback (p->deadline, on_deadline, p, NULL);
  g_source_attach (p->deadline, NULL);
}

static gboolean
on_deadline (gpointer data)
{
  Pending *p = data;
  gint64 end_us = p->accepted_us + (gint64) p->timeout_ms * 1000;
  gint64 now = g_get_monotonic_time ();
  int fd = g_socket_get_fd (g_socket_connection_get_socket (p->stream));
  char byte;

  g_clear_pointer (&p->deadline, g_source_unref);	/* removed by returning */
  /* The first byte's deadline: a connection in its handshake, or whose
   * first byte waits unread (the main loop was busy), keeps the rest of
   * the handshake's. */
  if (now < end_us &&
      (p->handshake_running || recv (fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0))
    {
      pending_arm (p, (guint) ((end_us - now + 999) / 1000));
      return G_SOURCE_REMOVE;
    }
  door_log (p->server, DOOR_LOG_TIMEOUT, G_LOG_LEVEL_MESSAGE,
            "a peer (pid %d) %s within %u ms; closed", (int) p->pid,
            p->handshake_running ? "did not finish its D-Bus handshake" : "sent nothing",
            p->handshake_running ? p->timeout_ms : MIN (p->first_byte_ms, p->timeout_ms));
  pending_drop (p);	/* a running handshake is cancelled */
  return G_SOURCE_REMOVE;
}

/* Where @r's refusals not logged came from, appended to @s: "pid A (n),
 * pid B (m)[ and K from other processes]; GetStats' refused counts them
 * all". */
static void
refusal_pids (const Refusal *r, GString *s)
{
  for (guint i = 0; i < r->n_pids; i++)
    g_string_append_printf (s, "%spid %d (%u)", i ? ", " : "", (int) r->by_pid[i].pid,
                            r->by_pid[i].n);
  if (r->others)
    g_string_append_printf (s, " and %u from other processes", r->others);
  g_string_append (s, "; GetStats' refused counts them all");
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
  g_autoptr (GString) since = g_string_new (NULL);

  if (r && now - r->logged_us < REFUSAL_LOG_US)
    {
      guint i;

      r->unlogged++;
      for (i = 0; i < r->n_pids && r->by_pid[i].pid != pid; i++)
        ;
      if (i < r->n_pids)
        r->by_pid[i].n++;
      else if (r->n_pids < REFUSAL_PIDS)
        r->by_pid[r->n_pids].pid = pid, r->by_pid[r->n_pids++].n = 1;
      else
        r->others++;
      log_flush_arm (server, r->logged_us + REFUSAL_LOG_US);
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
  if (r->unlogged)
    {
      g_string_printf (since, "; since the last such line, %u more refused and not logged, "
                       "from ", r->unlogged);
      refusal_pids (r, since);
    }
  g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING,
                    "MESSAGE_ID", VGICD_MESSAGE_PEER_REFUSED,
                    "VGICD_PEER_UID", uid_s,
                    "MESSAGE", "closed a connection from user %s (uid %u, pid %d): %s "
                    "(AllowUsers in %s lists: %s)%s",
                    who, (guint) uid, (int) pid, why, server->daemon->config->path, list,
                    since->str);
  r->logged_us = now;
  r->unlogged = r->n_pids = r->others = 0;
}

/* The end of a log window that withheld lines: how many, in a line of
 * their own, unless a line of that kind or uid already said so.  That
 * line starts the next window, so the journal still gets at most one line
 * a kind (and a uid) every REFUSAL_LOG_US; without it, what a flood's
 * last seconds withheld was never said. */
static gboolean
on_log_flush (gpointer data)
{
  VgicdServer *server = data;
  gint64 now = g_get_monotonic_time (), next = G_MAXINT64;
  GHashTableIter iter;
  gpointer key, value;

  g_clear_pointer (&server->log_flush, g_source_unref);
  for (guint k = 0; k < DOOR_LOG_KINDS; k++)
    {
      DoorLog *l = &server->logs[k];

      if (!l->unlogged)
        continue;
      if (now - l->logged_us < REFUSAL_LOG_US)
        {
          next = MIN (next, l->logged_us + REFUSAL_LOG_US);
          continue;
        }
      g_log_structured (G_LOG_DOMAIN, l->level, "MESSAGE",
                        "since the last such line, %u more %s, not logged", l->unlogged,
                        door_log_what[k]);
      l->logged_us = now;
      l->unlogged = 0;
    }
  g_hash_table_iter_init (&iter, server->refusals);
  while (g_hash_table_iter_next (&iter, &key, &value))
    {
      Refusal *r = value;
      uid_t uid = (uid_t) GPOINTER_TO_UINT (key);
      g_autofree char *who = NULL;
      g_autofree char *uid_s = NULL;
      g_autoptr (GString) from = NULL;

      if (!r->unlogged)
        continue;
      if (now - r->logged_us < REFUSAL_LOG_US)
        {
          next = MIN (next, r->logged_us + REFUSAL_LOG_US);
          continue;
        }
      who = user_name (uid);
      uid_s = g_strdup_printf ("%u", (guint) uid);
      from = g_string_new (NULL);
      refusal_pids (r, from);
      g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING,
                        "MESSAGE_ID", VGICD_MESSAGE_PEER_REFUSED,
                        "VGICD_PEER_UID", uid_s,
                        "MESSAGE", "closed %u more connections from user %s (uid %u) since "
                        "the last such line, not logged, from %s", r->unlogged, who,
                        (guint) uid, from->str);
      r->logged_us = now;
      r->unlogged = r->n_pids = r->others = 0;
    }
  if (next != G_MAXINT64)
    log_flush_arm (server, next);
  return G_SOURCE_REMOVE;
}

/* What is at the door now.  Connections closed and still holding their
 * descriptors (a handshake thread winding down, GDBus closing a peer the
 * door, the relay or the bus filter closed, or that left) are "closing"
 * (peer_closing()): outside the bounds, in the descriptors. */
typedef struct {
  guint pending;	/* in their handshake */
  guint connections;	/* in any state */
  guint door_fds;	/* held by connections not attached, not closing */
  guint all_fds;	/* fds_charged() */
  guint pending_mine;	/* of the newcomer's process */
  guint connections_mine;
} DoorCounts;

static void
door_count (VgicdServer *server, pid_t pid, DoorCounts *c)
{
  *c = (DoorCounts) { .all_fds = vgicd_reaper_pending () };	/* as fds_charged() */
  for (guint i = 0; i < server->pending->len; i++)
    {
      const Pending *q = g_ptr_array_index (server->pending, i);

      c->all_fds += FDS_PER_CONNECTION + FDS_PER_HANDSHAKE;
      if (pending_closing (q))
        continue;
      c->pending++;
      c->pending_mine += q->pid == pid;
      c->connections_mine += q->pid == pid;
      c->door_fds += FDS_PER_CONNECTION + FDS_PER_HANDSHAKE;
    }
  for (guint i = 0; i < server->peers->len; i++)
    {
      const Peer *q = g_ptr_array_index (server->peers, i);

      c->all_fds += FDS_PER_CONNECTION + (q->session ? FDS_PER_SESSION : 0);
      if (peer_closing (q))
        continue;
      c->connections++;
      c->connections_mine += q->pid == pid;
      c->door_fds += q->session ? 0 : FDS_PER_CONNECTION;
    }
  c->connections += c->pending;
}

/* Which of the door's host bounds a newcomer would pass (NULL: none);
 * *@pending_only when only a connection in its handshake makes room. */
static const char *
door_full (VgicdServer *server, const DoorCounts *c, gboolean *pending_only)
{
  const VgicdConfig *config = server->daemon->config;

  *pending_only = FALSE;
  if (c->pending >= config->max_handshakes)
    {
      *pending_only = TRUE;
      return "MaxHandshakes=";
    }
  if (c->connections >= config->max_connections)
    return "MaxConnections=";
  if (c->door_fds + FDS_PER_CONNECTION + FDS_PER_HANDSHAKE > fds_door (config, fds_budget ()))
    return "LimitNOFILE=";
  return NULL;
}

/* One process's sheddable connections (not attached, not closing). */
typedef struct {
  pid_t pid;
  guint n;
  guint64 seq;		/* its oldest's */
  Pending *pending;	/* its oldest, if in its handshake */
  Peer *peer;		/* else its oldest, not attached */
} Holding;

static void
holding_add (GHashTable *by_pid, pid_t pid, guint64 seq, Pending *pending, Peer *peer)
{
  Holding *h = g_hash_table_lookup (by_pid, GINT_TO_POINTER (pid));

  if (!h)
    {
      h = g_new0 (Holding, 1);
      h->pid = pid;
      h->seq = G_MAXUINT64;
      g_hash_table_insert (by_pid, GINT_TO_POINTER (pid), h);
    }
  h->n++;
  if (seq < h->seq)
    {
      h->seq = seq;
      h->pending = pending;
      h->peer = peer;
    }
}

/* The process holding the most sheddable connections (ties: the one whose
 * oldest is oldest); FALSE if there are none. */
static gboolean
door_victim (VgicdServer *server, gboolean pending_only, Holding *out)
{
  g_autoptr (GHashTable) by_pid = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  GHashTableIter it;
  Holding *h, *best = NULL;

  for (guint i = 0; i < server->pending->len; i++)
    {
      Pending *q = g_ptr_array_index (server->pending, i);

      if (!pending_closing (q))
        holding_add (by_pid, q->pid, q->seq, q, NULL);
    }
  for (guint i = 0; i < server->peers->len && !pending_only; i++)
    {
      Peer *q = g_ptr_array_index (server->peers, i);

      if (!q->session && !peer_closing (q))
        holding_add (by_pid, q->pid, q->seq, NULL, q);
    }
  g_hash_table_iter_init (&it, by_pid);
  while (g_hash_table_iter_next (&it, NULL, (gpointer *) &h))
    if (!best || h->n > best->n || (h->n == best->n && h->seq < best->seq))
      best = h;
  if (best)
    *out = *best;
  return best != NULL;
}

/* Step 2: make room for a newcomer of @pid on a full door, by shedding
 * the oldest connection of the process that holds the most; NULL when
 * there is room, else why the newcomer is refused. */
static const char *
door_make_room (VgicdServer *server, pid_t pid, gboolean fds_low)
{
  DoorCounts c;
  gboolean pending_only;
  const char *bound;

  for (door_count (server, pid, &c); (bound = door_full (server, &c, &pending_only));
       door_count (server, pid, &c))
    {
      Holding h;

      if (!door_victim (server, pending_only, &h))
        return "the door is full, and none of its connections may be shed";
      if (h.pid == pid)
        return "the door is full, and this process holds the most connections on it";
      server->daemon->totals.refused++;
      door_log (server, DOOR_LOG_SHED, G_LOG_LEVEL_WARNING,
                "shed the oldest connection of pid %d (%u connections not attached, the "
                "most of any process) for a newcomer of pid %d: the door is full (%s)",
                (int) h.pid, h.n, (int) pid, bound);
      if (h.pending)
        pending_drop (h.pending);
      else
        peer_close (h.peer);
    }
  /* What the door closed holds its descriptors a little longer, and the
   * table may hold more than the charges say (on_accept()). */
  if (c.all_fds + FDS_PER_CONNECTION + FDS_PER_HANDSHAKE > fds_budget () || fds_low)
    return "vgicd has no descriptors to spare (LimitNOFILE=)";
  return NULL;
}

/* A connection accepted; @fds_low: the table itself has fewer than
 * FDS_HEADROOM descriptors free (on_accept()), and no one is admitted. */
static void
on_incoming (VgicdServer *server, GSocketConnection *stream, gboolean fds_low)
{
  const VgicdConfig *config = server->daemon->config;
  GSocket *sock = g_socket_connection_get_socket (stream);
  g_autoptr (GCredentials) creds = g_socket_get_credentials (sock, NULL);
  uid_t uid = creds ? g_credentials_get_unix_user (creds, NULL) : (uid_t) -1;
  pid_t pid = creds ? g_credentials_get_unix_pid (creds, NULL) : -1;
  const char *why = NULL;
  DoorCounts c;
  Pending *p;

  door_count (server, pid, &c);
  if (!creds || !uid_allowed (server, uid))
    why = "not allowed";
  else if (c.pending_mine >= config->max_handshakes_per_process)
    why = "too many connections of this process in their handshake";
  else if (c.connections_mine >= config->max_connections_per_process)
    why = "too many connections of this process (MaxConnectionsPerProcess=)";
  else
    why = door_make_room (server, pid, fds_low);
  if (why)
    {
      server->daemon->totals.refused++;
      vgicd_daemon_changed (server->daemon);
      log_refusal (server, uid, pid, why);
      vgicd_reaper_take_over (g_socket_get_fd (sock));
      g_io_stream_close (G_IO_STREAM (stream), NULL, NULL);
      return;
    }
  p = g_new0 (Pending, 1);
  p->server = server;
  p->stream = g_object_ref (stream);
  p->uid = uid;
  p->pid = pid;
  p->seq = server->next_seq++;
  p->accepted_us = g_get_monotonic_time ();
  p->first_byte = g_socket_create_source (sock, G_IO_IN | G_IO_HUP | G_IO_ERR, NULL);
  g_source_set_priority (p->first_byte, DOOR_PRIORITY);
  g_source_set_callback (p->first_byte, G_SOURCE_FUNC (on_first_byte), p, NULL);
  g_source_attach (p->first_byte, NULL);
  p->timeout_ms = config->handshake_timeout;
  p->first_byte_ms = config->first_byte_timeout;
  pending_arm (p, MIN (p->first_byte_ms, p->timeout_ms));
  g_ptr_array_add (server->pending, p);
}

/*
 * Step 4's accept.  GSocketService, at accept() failing with EMFILE,
 * warns ("fail: Too many open files") and accepts again at once: the
 * connection stays in the backlog, the listening socket stays readable,
 * and vgicd would spin and flood the journal.  This source accepts
 * itself, a few at a time, and at EMFILE or ENFILE closes its spare
 * descriptor to accept the connection and close it (the peer sees it
 * closed, as a refusal), then takes the spare again; if it cannot, it
 * stops accepting for ACCEPT_PAUSE_MS.  The listening socket is
 * non-blocking and no cancellable is involved, so accepting never makes
 * GLib create a wakeup descriptor.
 */
#define ACCEPT_BATCH 8
/* The listening socket's backlog, as vgicd.socket's Backlog= sets it.
 * GLib's default, 10, refused a burst of QEMUs (EAGAIN) when libvgicd's
 * connect did not wait; it waits now (vgicd-client-dial.c), and the
 * kernel's maximum (SOMAXCONN, 4096) only lengthened the queue a process
 * connecting in a loop keeps full ahead of an honest QEMU: measured in the
 * door's flood test, the slowest honest attach and save during the flood
 * took 0.8 to 2.5 s at 4096, and 0.05 to 1.0 s at 128. */
#define SOCKET_BACKLOG 128
#define ACCEPT_PAUSE_MS 100
#define ACCEPT_REAPER_MAX 16

static gboolean on_accept (GSocket *listener, GIOCondition cond, gpointer data);

static void
accept_watch (VgicdServer *server)
{
  server->accept_source = g_socket_create_source (server->listener, G_IO_IN, NULL);
  g_source_set_priority (server->accept_source, DOOR_PRIORITY);
  g_source_set_callback (server->accept_source, G_SOURCE_FUNC (on_accept), server, NULL);
  g_source_attach (server->accept_source, NULL);
}

static gboolean
on_accept_resume (gpointer data)
{
  VgicdServer *server = data;

  g_clear_pointer (&server->accept_pause, g_source_unref);	/* removed by returning */
  accept_watch (server);
  return G_SOURCE_REMOVE;
}

/* accept() failed for lack of descriptors: shed that connection with the
 * spare; FALSE when there is no spare to shed with.  Only a connection
 * closed is counted in refused: a spare not taken again at once (the
 * shed one's descriptor still on its way through the reaper) makes
 * on_accept() pause, and refused then said more than the connections. */
static gboolean
accept_shed (VgicdServer *server, const char *why)
{
  int fd;

  if (server->spare_fd < 0)
    {
      server->spare_fd = fcntl (g_socket_get_fd (server->listener), F_DUPFD_CLOEXEC, 0);
      if (server->spare_fd < 0)
        return FALSE;
    }
  close (server->spare_fd);
  fd = accept4 (g_socket_get_fd (server->listener), NULL, NULL, SOCK_CLOEXEC);
  if (fd >= 0)
    {
      server->daemon->totals.refused++;
      vgicd_daemon_changed (server->daemon);
      vgicd_reaper_close (fd);
      door_log (server, DOOR_LOG_ACCEPT, G_LOG_LEVEL_WARNING,
                "closed a connection at accept(): %s (vgicd holds as many descriptors as "
                "LimitNOFILE= allows, or the host does)", why);
    }
  server->spare_fd = fcntl (g_socket_get_fd (server->listener), F_DUPFD_CLOEXEC, 0);
  return server->spare_fd >= 0;
}

/* Stop accepting for ACCEPT_PAUSE_MS (on_accept() returns this): counted,
 * since QEMUs connecting meanwhile wait (libvgicd waits up to 2 s). */
static gboolean
accept_pause (VgicdServer *server)
{
  server->daemon->totals.accept_pauses++;
  vgicd_daemon_changed (server->daemon);
  g_clear_pointer (&server->accept_source, g_source_unref);	/* removed by returning */
  server->accept_pause = g_timeout_source_new (ACCEPT_PAUSE_MS);
  g_source_set_callback (server->accept_pause, on_accept_resume, server, NULL);
  g_source_attach (server->accept_pause, NULL);
  return G_SOURCE_REMOVE;
}

/* What the connections admitted at the door will still open: the relay
 * and the wakeup of each one waiting for its first byte. */
static guint
fds_owed (VgicdServer *server)
{
  guint n = 0;

  for (guint i = 0; i < server->pending->len; i++)
    {
      const Pending *q = g_ptr_array_index (server->pending, i);

      n += q->first_byte ? FDS_AT_FIRST_BYTE : 0;
    }
  return n;
}

static gboolean
on_accept (GSocket *listener, GIOCondition cond, gpointer data)
{
  VgicdServer *server = data;

  for (guint i = 0; i < ACCEPT_BATCH; i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (GSocket) sock = NULL;
      g_autoptr (GSocketConnection) stream = NULL;
      guint charged = fds_charged (server), budget = fds_budget ();
      guint owed = fds_owed (server), reaping = vgicd_reaper_pending ();
      guint free_fds = vgicd_fds_free (FDS_HEADROOM + owed);
      gboolean fds_low = free_fds < FDS_HEADROOM + owed;

      /* Every connection accepted holds descriptors until its last close,
       * refused at once or not: a refused one waits for the reaper thread
       * (vgicd-reaper.c), which a process reconnecting in a loop can
       * outpace, and a closed one's objects let go of theirs when GLib
       * drops them, which the charges cannot follow (vgicd-fds.c).  At the
       * budget, or with fewer than FDS_HEADROOM descriptors free beyond
       * what those admitted still open at their first byte (fds_owed():
       * a burst of them would spend the last), the door admits no one
       * (fds_low), and once ACCEPT_REAPER_MAX closes wait
       * (or any, with fewer than half that free) the rest wait in the
       * kernel's backlog, which costs vgicd nothing, until closes make
       * room; before, such a loop took vgicd to its limit, where GLib
       * aborts.  Until then, a newcomer is still accepted and closed at
       * once, so that its QEMU hears no at once rather than wait. */
      if (((charged + FDS_PER_CONNECTION + FDS_PER_HANDSHAKE > budget || fds_low) &&
           reaping >= ACCEPT_REAPER_MAX) ||
          (free_fds < FDS_HEADROOM / 2 && reaping > 0))
        {
          door_log (server, DOOR_LOG_BACKLOG, G_LOG_LEVEL_WARNING,
                    "not accepting connections for %d ms: peers' connections hold %u of the "
                    "%u descriptors LimitNOFILE= leaves them, %u of those waiting for their "
                    "last close (%u descriptors free)", ACCEPT_PAUSE_MS, charged, budget,
                    reaping, free_fds);
          return accept_pause (server);
        }
      sock = g_socket_accept (listener, NULL, &error);
      if (!sock && g_error_matches (error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
        break;
      if (!sock && g_error_matches (error, G_IO_ERROR, G_IO_ERROR_TOO_MANY_OPEN_FILES) &&
          accept_shed (server, error->message))
        continue;
      if (!sock)
        {
          /* No spare, or another failure: wait rather than spin. */
          door_log (server, DOOR_LOG_ACCEPT, G_LOG_LEVEL_WARNING,
                    "cannot accept connections: %s; trying again in %d ms", error->message,
                    ACCEPT_PAUSE_MS);
          return accept_pause (server);
        }
      /* A connection queued before vgicd set the listening socket's
       * refusal of descriptors took it without: under socket activation,
       * the QEMU whose connection started vgicd. */
      vgicd_refuse_fds (g_socket_get_fd (sock), NULL);
      stream = g_socket_connection_factory_create_connection (sock);
      on_incoming (server, stream, fds_low);
    }
  return G_SOURCE_CONTINUE;
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
  g_socket_set_listen_backlog (sock, SOCKET_BACKLOG);
  /* Owner and mode are set before listen(): until then nobody connects. */
  if (!g_socket_bind (sock, addr, TRUE, error))
    {
      g_prefix_error (error, "cannot listen on %s: ", path);
      return NULL;
    }
  /* And the refusal of descriptors (vgicd-reaper.c), which a connection
   * takes from the listening socket as it is queued. */
  vgicd_refuse_fds (g_socket_get_fd (sock), NULL);
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
  server->spare_fd = -1;
  server->guid = g_dbus_generate_guid ();
  server->allowed = g_array_new (FALSE, FALSE, sizeof (uid_t));
  server->peers = g_ptr_array_new_with_free_func ((GDestroyNotify) peer_free);
  server->pending = g_ptr_array_new ();
  server->refusals = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  server->observer = g_dbus_auth_observer_new ();
  {
    const VgicdConfig *c = daemon->config;
    guint room = sessions_fd_room (c);
    guint budget = fds_budget ();
    guint64 asked = (guint64) c->max_connections * FDS_PER_CONNECTION +
                    (guint64) c->max_handshakes * FDS_PER_HANDSHAKE +
                    (guint64) MIN (c->max_sessions, c->max_connections) * FDS_PER_SESSION;

    if (room < c->max_sessions)
      g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING,
                        "MESSAGE", "the file descriptor limit (LimitNOFILE=) leaves room for "
                        "%u sessions, fewer than MaxSessions=%u: attaches beyond are refused",
                        room, c->max_sessions);
    if (asked > budget)
      g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING,
                        "MESSAGE", "the file descriptor limit (LimitNOFILE=) leaves peers %u "
                        "descriptors (%d are kept for vgicd), fewer than MaxConnections=%u, "
                        "MaxHandshakes=%u and MaxSessions=%u may take (%" G_GUINT64_FORMAT
                        "): connections beyond are refused, or shed from the process that "
                        "holds the most", budget, FDS_RESERVE, c->max_connections,
                        c->max_handshakes, c->max_sessions, asked);
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
  /* Step 4: accept() never waits, and a spare descriptor to shed with. */
  g_socket_set_blocking (sock, FALSE);
  /* Systemd's socket comes without it (vgicd.socket cannot ask for it
   * before systemd 258's AcceptFileDescriptors=); what is already in its
   * backlog is set at accept (on_accept()). */
  {
    g_autofree char *why = NULL;

    server->fds = vgicd_refuse_fds (g_socket_get_fd (sock), &why)
                    ? g_strdup ("refused by the kernel (SO_PASSRIGHTS)")
                    : g_strdup_printf ("read around, the peer closed (%s)", why);
  }
  server->listener = g_steal_pointer (&sock);
  server->spare_fd = fcntl (g_socket_get_fd (server->listener), F_DUPFD_CLOEXEC, 0);
  vgicd_reaper_start ();	/* its thread and inert socket, before any peer */
  accept_watch (server);
  return server;
}

void
vgicd_server_free (VgicdServer *server)
{
  if (!server)
    return;
  source_clear (&server->accept_source);
  source_clear (&server->accept_pause);
  source_clear (&server->log_flush);
  if (server->listener)
    {
      g_socket_close (server->listener, NULL);
      g_object_unref (server->listener);
    }
  if (server->spare_fd >= 0)
    close (server->spare_fd);
  if (server->pending)
    {
      /* A running handshake's callback frees its own, once cancelled. */
      for (guint i = 0; i < server->pending->len; i++)
        {
          Pending *p = g_ptr_array_index (server->pending, i);

          p->server = NULL;
          if (p->handshake_running)
            {
              source_clear (&p->first_byte);
              source_clear (&p->deadline);
              g_cancellable_cancel (p->cancel);
            }
          else
            {
              g_io_stream_close (G_IO_STREAM (p->stream), NULL, NULL);
              pending_free (p);
            }
        }
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
  g_free (server->fds);
  g_free (server->guid);
  g_free (server);
}

const char *
vgicd_server_describe_fds (VgicdServer *server)
{
  return server->fds;
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
