/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-manager.c - org.vgicd.Manager1 on the system bus: the mode, what is
 * known of the kernel, the attached VMs and the host totals.
 *
 * The interface is data/org.vgicd.Manager1.xml itself (embedded by the
 * build), so what vgicd serves is exactly what the file documents.
 *
 * Who may change the mode is decided twice: the D-Bus policy file lets only
 * root send SetMode, and SetMode itself asks the bus for the caller's uid and
 * refuses anyone but root.  The second check is there because a policy file
 * is easy to loosen by accident (a local override, a distribution's
 * system.d), and a mode change affects every VM on the host.
 *
 * Theory of operation
 *
 * The QEMUs' saves and loads run on vgicd's main thread, inside their
 * migrations' downtime; nothing a local user does through this interface
 * may wait on them or delay them.  So Manager1 has a thread and a
 * GMainContext of its own: the object is registered on the system bus
 * connection with that context as the thread-default, and GDBus (whose
 * worker thread reads the socket) dispatches every call to it there.  The
 * connection stays the one GDBus shares (g_bus_get()): nothing else in
 * vgicd uses the system bus, and a second connection would only double
 * the bus's bookkeeping.
 *
 * The Manager1 thread runs at nice 19, so that building its answers takes
 * CPU from the sessions' thread only when that has none to use.
 *
 * The Manager1 thread never touches the daemon's state.  The main thread
 * publishes what the calls show, a Snapshot (the sessions, the totals, the
 * metrics text), at G_PRIORITY_LOW after each change (the daemon's changed
 * hook), so the sessions' own events always go first, and swaps it in
 * under a lock held only for the swap; the properties, a few strings, are
 * published at once.  A call that arrives while a change is not published
 * yet waits for the publication (read-your-writes: a test, or an operator,
 * that saw a save end finds it in GetStats), and is otherwise answered from
 * the snapshot without involving the main thread.  The work the main
 * thread does for this interface is thus bounded by how often the state
 * changes, never by how often it is asked.
 *
 * GetHistory is the exception: the history is large and a query selects
 * from it.  The Manager1 thread asks the main thread (at G_PRIORITY_LOW) for
 * a plain copy of the selected operations, at most HISTORY_LIMIT_MAX of
 * them, and builds the answer (the costly GVariant) itself; the answer is
 * kept until the history changes, so a flood of the same query costs the
 * main thread one copy per change.  Only root, vgicd and group vgicd may
 * ask (the policy file).
 *
 * CheckConfig reads the configuration files again, on the Manager1 thread,
 * and answers their problems; it is for root, vgicd and group vgicd too.
 *
 * SetMode changes the daemon's state: the caller's uid is asked of the bus
 * from the Manager1 thread, then the change runs on the main thread (a
 * g_main_context_invoke()), which answers the call.
 *
 * A caller that has left is not worked for: a filter on the connection (it
 * runs on GDBus's worker thread, as messages arrive, so ahead of the calls
 * queued for the Manager1 thread) sees the bus's NameOwnerChanged for each
 * known caller that disconnects and marks it gone; its queued calls are
 * then dropped without being computed, and counted ("manager-dropped").
 *
 * What else bounds a local user:
 * - GetHistory and GetMetrics, the large answers, are for root, the vgicd
 *   user and group "vgicd" (the policy file); ListSessions and GetStats
 *   stay open to everyone and are small.
 * - GetHistory answers at most HISTORY_LIMIT_MAX operations (0 asks for
 *   HISTORY_LIMIT_DEFAULT): an operation is under 1 KiB on the wire (its
 *   message is cut at 256 bytes), so an answer stays under 4 MiB whatever
 *   History= and HistoryVMs= say, far below the bus's 32 MiB limit on a
 *   message, past which the bus would drop vgicd and the API with it.
 * - Each caller (a unique bus name) has a token bucket: RATE_BURST calls at
 *   once, then RATE_PER_SEC a second.  The bucket is kept by the filter,
 *   on GDBus's worker thread, because that thread is shared: it also
 *   carries every QEMU's Attach, Save and Next (GDBus has one worker per
 *   process).  A call beyond the bucket is dropped there, before it is
 *   dispatched, and counted ("manager-refused" in GetStats); the first one
 *   of each second per caller is answered with
 *   org.freedesktop.DBus.Error.LimitsExceeded, so that a client that went
 *   too fast learns why, and the others get no answer at all.  That is the
 *   point: the bus holds an unanswered call against its sender's
 *   max_replies_per_connection (128 on Debian's system bus, with no reply
 *   timeout), so a connection that floods fills its own quota and can
 *   send no more calls, while each answer, even an error, would free a
 *   slot for the next call and keep the worker busy.  A flood by `nobody'
 *   of 64 connections with 128 GetStats in flight each was answered at
 *   5,000 calls a second, all of them through the worker, before this.
 *   The bus bounds how many connections one user may open
 *   (max_connections_per_user, 256 on Debian's system bus), and so how far
 *   one user can multiply the rate.
 */
#ifndef G_LOG_DOMAIN
#define G_LOG_DOMAIN "vgicd"
#endif

#include "vgicd-manager.h"

#include <gio/gunixfdlist.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vgicd-manager-xml.h"
#include "vgicd-history.h"
#include "vgicd-metrics.h"	/* GetMetrics */
#include "vgicd-reaper.h"	/* descriptors a caller sent */
#include "vgicd-vms.h"		/* CheckConfig */
#include "vgicd-catalog.h"	/* MESSAGE_ID of a mode change */

/* Flags and replies of org.freedesktop.DBus.RequestName. */
#define NAME_FLAG_DO_NOT_QUEUE 4
#define NAME_REPLY_PRIMARY_OWNER 1
#define NAME_REPLY_EXISTS 3
#define NAME_REPLY_ALREADY_OWNER 4

/* GetHistory: the operations an answer carries when the caller asks for 0
 * (all), and at most (see the top of the file). */
#define HISTORY_LIMIT_DEFAULT 256
#define HISTORY_LIMIT_MAX 4096

/* A caller's token bucket: this many calls at once, refilled at this many
 * a second.  vgicctl makes one to three calls a command; a metrics
 * exporter one every few seconds. */
#define RATE_BURST_INT 32
#define RATE_PER_SEC_INT 16
#define RATE_BURST ((double) RATE_BURST_INT)
#define RATE_PER_SEC ((double) RATE_PER_SEC_INT)
/* Callers remembered before the ones gone or idle (their bucket full) are
 * forgotten. */
#define CALLERS_MAX 1024
/* Calls kept waiting for a publication at most; past it, answered from
 * the last one. */
#define WAITERS_MAX 1024

#ifndef PACKAGE_VERSION
#error "PACKAGE_VERSION must be defined by the build"
#endif

/* What the calls show, as the main thread last published it.  Immutable
 * once published; reference-counted (g_atomic_rc_box). */
typedef struct {
  GVariant *sessions;		/* aa{sv}, ListSessions */
  GVariant *stats;		/* a{sv}, GetStats less what is added per answer */
  char *metrics;		/* GetMetrics */
  gint64 start_usec;		/* the daemon's, for uptime-usec */
} Snapshot;

static void
snapshot_clear (gpointer data)
{
  Snapshot *s = data;

  g_clear_pointer (&s->sessions, g_variant_unref);
  g_clear_pointer (&s->stats, g_variant_unref);
  g_free (s->metrics);
}

static void
snapshot_release (Snapshot *s)
{
  g_atomic_rc_box_release_full (s, snapshot_clear);
}

/* A caller (a unique bus name): its token bucket, and whether it left. */
typedef struct {
  double tokens;
  gint64 when;			/* g_get_monotonic_time() of the last refill */
  gint64 told;			/* when it was last answered LimitsExceeded */
  gboolean gone;
} Caller;

/* The callers, by unique name: the filter (GDBus's worker thread) adds
 * them and marks them gone, Manager1's thread takes their tokens.  Its own
 * reference-counted object (g_atomic_rc_box), because GDBus may still run
 * a filter after g_dbus_connection_remove_filter(). */
typedef struct {
  GMutex lock;
  GHashTable *table;		/* unique name -> Caller */
  gint refused;			/* calls beyond a bucket, dropped (atomic) */
} Callers;

static void
callers_clear (gpointer data)
{
  Callers *c = data;

  g_hash_table_unref (c->table);
  g_mutex_clear (&c->lock);
}

static void
callers_release (gpointer data)
{
  g_atomic_rc_box_release_full (data, callers_clear);
}

struct _VgicdManager {
  VgicdDaemon *daemon;		/* the main thread's only (but its atomic peers_closed) */
  GDBusConnection *bus;
  GDBusNodeInfo *node;
  guint registration;
  guint filter;
  gboolean owns_name;
  /* Cancelled on free (main thread): calls still on their way between
   * the threads then fail instead of touching the daemon. */
  GCancellable *cancellable;
  GMainContext *main_ctx;	/* the sessions' */
  GMainContext *ctx;		/* Manager1's */
  GMainLoop *loop;
  GThread *thread;

  /* Main thread only. */
  char *shown_mode;		/* last announced by PropertiesChanged */
  char *shown_batch;
  char *shown_batch_source;
  guint publish_source;
  gint history_gen;		/* bumped at each change (atomic: read by Manager1) */

  /* Published by the main thread, read by Manager1's, under lock. */
  GMutex lock;
  Snapshot *snap;
  gboolean stale;		/* a change is not in snap yet */
  char *prop_mode, *prop_batch, *prop_batch_source, *prop_config, *prop_socket;
  char *check_state, *check_vms;	/* CheckConfig's other two files */

  Callers *callers;

  /* Manager1's thread only. */
  GQueue waiters;		/* GDBusMethodInvocation *, for a publication */
  char *history_vm;		/* the last GetHistory answer, its query and */
  guint history_limit;		/* the history's generation it was made of */
  gint history_answer_gen;
  GVariant *history_answer;

  gint dropped;			/* calls of callers gone, not computed (atomic) */
};

static const char *
kernel_batch_string (int kernel_batch)
{
  return kernel_batch > 0 ? "yes" : kernel_batch == 0 ? "no" : "unknown";
}

/* ---- The main thread: publishing ---- */

static GVariant *
build_sessions (VgicdDaemon *d)
{
  GVariantBuilder b;

  g_variant_builder_init (&b, G_VARIANT_TYPE ("aa{sv}"));
  for (guint i = 0; d->sessions && i < d->sessions->len; i++)
    g_variant_builder_add_value (&b, vgicd_session_describe (
                                   g_ptr_array_index (d->sessions, i)));
  return g_variant_ref_sink (g_variant_builder_end (&b));
}

static GVariant *
build_stats (VgicdDaemon *d)
{
  const VgicdTotals *t = &d->totals;
  GVariantBuilder b;

  g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
#define T(key, value) \
  g_variant_builder_add (&b, "{sv}", key, g_variant_new_uint64 (value))
  T ("saves", t->saves);
  T ("loads", t->loads);
  T ("declined", t->declined);
  T ("record-saves", t->record_saves);
  T ("record-loads", t->record_loads);
  T ("fallbacks", t->fallbacks);
  T ("foreign-batch", t->foreign_batch);
  T ("second-rounds", t->second_rounds);
  T ("failures", t->failures);
  T ("bytes-saved", t->bytes_saved);
  T ("bytes-loaded", t->bytes_loaded);
  T ("sessions-total", t->sessions_total);
  T ("refused", t->refused);
  T ("accept-pauses", t->accept_pauses);
#undef T
  g_variant_builder_add (&b, "{sv}", "sessions",
                         g_variant_new_uint32 (d->sessions ? d->sessions->len : 0));
  if (d->history)
    {
      GVariantBuilder cost;

      g_variant_builder_add (&b, "{sv}", "histograms", vgicd_history_histograms (d->history));
      g_variant_builder_init (&cost, G_VARIANT_TYPE ("a{s(dds)}"));
      for (guint i = 0; i < 2; i++)
        {
          const char *dir = i ? "load" : "save", *source;
          double base, per_vcpu;

          if (vgicd_history_single_cost (d->history, dir, &base, &per_vcpu, &source))
            g_variant_builder_add (&cost, "{s(dds)}", dir, base, per_vcpu, source);
        }
      g_variant_builder_add (&b, "{sv}", "single-cost-ns", g_variant_builder_end (&cost));
    }
  return g_variant_ref_sink (g_variant_builder_end (&b));
}

static gboolean answer_waiters (gpointer data);

/* Build a snapshot of the daemon's figures and swap it in. */
static void
publish (VgicdManager *m)
{
  VgicdDaemon *d = m->daemon;
  Snapshot *s = g_atomic_rc_box_new0 (Snapshot), *old;

  s->sessions = build_sessions (d);
  s->stats = build_stats (d);
  s->metrics = vgicd_metrics_text (d);
  s->start_usec = d->start_usec;
  g_mutex_lock (&m->lock);
  old = m->snap;
  m->snap = s;
  m->stale = FALSE;
  g_mutex_unlock (&m->lock);
  if (old)
    snapshot_release (old);
  /* Calls that waited for it. */
  g_main_context_invoke (m->ctx, answer_waiters, m);
}

static gboolean
publish_now (gpointer data)
{
  VgicdManager *m = data;

  m->publish_source = 0;
  publish (m);
  return G_SOURCE_REMOVE;
}

/* The properties, a few strings: published at once. */
static void
publish_properties (VgicdManager *m)
{
  VgicdDaemon *d = m->daemon;

  g_mutex_lock (&m->lock);
  g_free (m->prop_mode);
  m->prop_mode = g_strdup (vgicd_mode_to_string (d->mode));
  g_free (m->prop_batch);
  m->prop_batch = g_strdup (kernel_batch_string (d->kernel_batch));
  g_free (m->prop_batch_source);
  m->prop_batch_source = g_strdup (d->kernel_batch_source ? d->kernel_batch_source : "");
  g_free (m->prop_config);
  m->prop_config = g_strdup (d->config && d->config->path ? d->config->path : "");
  g_free (m->prop_socket);
  m->prop_socket = g_strdup (d->config && d->config->socket_path ? d->config->socket_path : "");
  g_free (m->check_state);
  m->check_state = g_strdup (d->config ? d->config->state_path : NULL);
  g_free (m->check_vms);
  m->check_vms = g_strdup (d->vms_conf);
  m->stale = TRUE;
  g_mutex_unlock (&m->lock);
}

/* One property into a PropertiesChanged dict if it differs from what was
 * last announced. */
static void
note_change (GVariantBuilder *changed, gboolean *any, char **shown,
             const char *name, const char *now)
{
  if (g_strcmp0 (*shown, now) == 0)
    return;
  g_free (*shown);
  *shown = g_strdup (now);
  g_variant_builder_add (changed, "{sv}", name, g_variant_new_string (now));
  *any = TRUE;
}

/* The daemon's changed hook (main thread): publish the properties now and
 * the rest when the main loop has nothing more urgent; emit
 * PropertiesChanged for what changed. */
static void
daemon_changed (gpointer data)
{
  VgicdManager *m = data;
  VgicdDaemon *d = m->daemon;
  g_auto (GVariantBuilder) changed =
    G_VARIANT_BUILDER_INIT (G_VARIANT_TYPE_VARDICT);
  g_autoptr (GError) error = NULL;
  gboolean any = FALSE;

  g_atomic_int_inc (&m->history_gen);
  publish_properties (m);
  if (!m->publish_source)
    m->publish_source = g_idle_add_full (G_PRIORITY_LOW, publish_now, m, NULL);

  note_change (&changed, &any, &m->shown_mode, "Mode",
               vgicd_mode_to_string (d->mode));
  note_change (&changed, &any, &m->shown_batch, "KernelBatch",
               kernel_batch_string (d->kernel_batch));
  note_change (&changed, &any, &m->shown_batch_source, "KernelBatchSource",
               d->kernel_batch_source ? d->kernel_batch_source : "");
  if (!any)
    return;

  if (!g_dbus_connection_emit_signal (m->bus, NULL, VGICD_MANAGER_PATH,
                                      "org.freedesktop.DBus.Properties",
                                      "PropertiesChanged",
                                      g_variant_new ("(s@a{sv}as)",
                                                     VGICD_MANAGER_INTERFACE,
                                                     g_variant_builder_end (&changed),
                                                     NULL),
                                      &error))
    g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING,
                      "MESSAGE", "cannot announce a property change: %s",
                      error->message);
}

/* ---- GDBus's worker thread: who called, who left ---- */

/* @c's tokens at @now: refilled since its last call, at most a burst. */
static double
caller_tokens (const Caller *c, gint64 now)
{
  return MIN (RATE_BURST, c->tokens + (now - c->when) * RATE_PER_SEC / G_USEC_PER_SEC);
}

/* Whether @sender may make one more call now (and take its token); a
 * caller not seen yet starts with a full bucket.  *@tell: refused, and not
 * told so for a second.  Callers gone or idle are forgotten when there are
 * many. */
static gboolean
caller_take (Callers *callers, const char *sender, gint64 now, gboolean *tell)
{
  gboolean allowed = TRUE;
  Caller *c;

  g_mutex_lock (&callers->lock);
  if (g_hash_table_size (callers->table) > CALLERS_MAX)
    {
      GHashTableIter it;
      gpointer key, value;

      g_hash_table_iter_init (&it, callers->table);
      while (g_hash_table_iter_next (&it, &key, &value))
        {
          Caller *old = value;

          if (g_strcmp0 (key, sender) != 0 &&
              (old->gone || caller_tokens (old, now) >= RATE_BURST))
            g_hash_table_iter_remove (&it);
        }
    }
  c = g_hash_table_lookup (callers->table, sender);
  if (!c)
    {
      c = g_new0 (Caller, 1);
      c->tokens = RATE_BURST;
      c->when = now;
      c->told = now - G_USEC_PER_SEC;
      g_hash_table_insert (callers->table, g_strdup (sender), c);
    }
  c->tokens = caller_tokens (c, now);
  c->when = now;
  if (c->tokens < 1.0)
    {
      allowed = FALSE;
      if (now - c->told >= G_USEC_PER_SEC)
        {
          c->told = now;
          *tell = TRUE;
        }
    }
  else
    c->tokens -= 1.0;
  g_mutex_unlock (&callers->lock);
  return allowed;
}

static GDBusMessage *
filter (GDBusConnection *connection, GDBusMessage *message, gboolean incoming,
        gpointer data)
{
  Callers *callers = data;
  GDBusMessageType type;
  const char *sender;

  if (!incoming)
    return message;
  /* Manager1 takes no descriptor, and the bus passes a caller's: their
   * last close is the reaper's, not this thread's or the main loop's
   * (vgicd-reaper.c says why). */
  if (g_dbus_message_get_unix_fd_list (message))
    {
      gint n = 0;
      g_autofree gint *fds = g_unix_fd_list_steal_fds (g_dbus_message_get_unix_fd_list (message),
                                                       &n);

      for (gint i = 0; i < n; i++)
        vgicd_reaper_close (fds[i]);
    }
  type = g_dbus_message_get_message_type (message);
  sender = g_dbus_message_get_sender (message);
  if (type == G_DBUS_MESSAGE_TYPE_METHOD_CALL && sender &&
      g_strcmp0 (g_dbus_message_get_path (message), VGICD_MANAGER_PATH) == 0)
    {
      gint64 now = g_get_monotonic_time ();
      gboolean tell = FALSE;

      if (caller_take (callers, sender, now, &tell))
        return message;
      g_atomic_int_inc (&callers->refused);
      if (tell && !(g_dbus_message_get_flags (message) & G_DBUS_MESSAGE_FLAGS_NO_REPLY_EXPECTED))
        {
          g_autoptr (GDBusMessage) reply = g_dbus_message_new_method_error (
            message, "org.freedesktop.DBus.Error.LimitsExceeded",
            "too many calls to vgicd from this connection: at most "
            G_STRINGIFY (RATE_BURST_INT) " at once and " G_STRINGIFY (RATE_PER_SEC_INT)
            " a second; the calls past them this second are not answered; "
            "try again in a moment");

          (void) g_dbus_connection_send_message (connection, reply,
                                                 G_DBUS_SEND_MESSAGE_FLAGS_NONE, NULL, NULL);
        }
      g_object_unref (message);
      return NULL;
    }
  else if (type == G_DBUS_MESSAGE_TYPE_SIGNAL &&
           g_strcmp0 (sender, "org.freedesktop.DBus") == 0 &&
           g_strcmp0 (g_dbus_message_get_member (message), "NameOwnerChanged") == 0)
    {
      GVariant *body = g_dbus_message_get_body (message);
      const char *name, *old_owner, *new_owner;

      if (body && g_variant_is_of_type (body, G_VARIANT_TYPE ("(sss)")))
        {
          g_variant_get (body, "(&s&s&s)", &name, &old_owner, &new_owner);
          if (!*new_owner)
            {
              Caller *c;

              g_mutex_lock (&callers->lock);
              c = g_hash_table_lookup (callers->table, name);
              if (c)
                c->gone = TRUE;
              g_mutex_unlock (&callers->lock);
            }
        }
    }
  return message;
}

/* ---- Manager1's thread ---- */

static gboolean
caller_gone (VgicdManager *m, const char *sender)
{
  Callers *callers = m->callers;
  gboolean gone = FALSE;
  Caller *c;

  if (!sender)
    return FALSE;
  g_mutex_lock (&callers->lock);
  c = g_hash_table_lookup (callers->table, sender);
  gone = c && c->gone;
  g_mutex_unlock (&callers->lock);
  return gone;
}

static Snapshot *
snapshot_get (VgicdManager *m)
{
  Snapshot *s;

  g_mutex_lock (&m->lock);
  s = m->snap ? g_atomic_rc_box_acquire (m->snap) : NULL;
  g_mutex_unlock (&m->lock);
  return s;
}

static GVariant *
get_property (GDBusConnection *connection, const char *sender,
              const char *object_path, const char *interface_name,
              const char *property_name, GError **error, gpointer user_data)
{
  VgicdManager *m = user_data;
  const char *value = NULL;
  GVariant *v = NULL;

  if (g_str_equal (property_name, "Version"))
    return g_variant_new_string (PACKAGE_VERSION);
  g_mutex_lock (&m->lock);
  if (g_str_equal (property_name, "Mode"))
    value = m->prop_mode;
  else if (g_str_equal (property_name, "KernelBatch"))
    value = m->prop_batch;
  else if (g_str_equal (property_name, "KernelBatchSource"))
    value = m->prop_batch_source;
  else if (g_str_equal (property_name, "ConfigFile"))
    value = m->prop_config;
  else if (g_str_equal (property_name, "Socket"))
    value = m->prop_socket;
  if (value)
    v = g_variant_new_string (value);
  g_mutex_unlock (&m->lock);
  if (!v)
    g_set_error (error, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_PROPERTY,
                 "no property %s", property_name);
  return v;
}

/* ListSessions, GetStats or GetMetrics from the snapshot; takes @inv's
 * reference (as the answer does). */
static void
answer (VgicdManager *m, GDBusMethodInvocation *inv)
{
  const char *method = g_dbus_method_invocation_get_method_name (inv);
  Snapshot *s;

  if (caller_gone (m, g_dbus_method_invocation_get_sender (inv)))
    {
      g_atomic_int_inc (&m->dropped);
      g_object_unref (inv);	/* unanswered: nobody to answer */
      return;
    }
  s = snapshot_get (m);
  if (g_str_equal (method, "ListSessions"))
    g_dbus_method_invocation_return_value (inv, g_variant_new ("(@aa{sv})", s->sessions));
  else if (g_str_equal (method, "GetMetrics"))
    g_dbus_method_invocation_return_value (inv, g_variant_new ("(s)", s->metrics));
  else
    {
      GVariantBuilder b;
      GVariantIter it;
      GVariant *child;

      g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
      g_variant_iter_init (&it, s->stats);
      while ((child = g_variant_iter_next_value (&it)))
        {
          g_variant_builder_add_value (&b, child);
          g_variant_unref (child);
        }
#define T(key, value) \
  g_variant_builder_add (&b, "{sv}", key, g_variant_new_uint64 (value))
      /* Counted on other threads (the relay's, GDBus's worker), atomic:
       * read now, so that a peer that saw its connection closed finds it
       * counted. */
      T ("peers-closed", (guint64) g_atomic_int_get (&m->daemon->peers_closed));
      T ("log-suppressed", vgicd_log_shares_suppressed (m->daemon->log_shares));
      T ("manager-refused", (guint64) g_atomic_int_get (&m->callers->refused));
      T ("manager-dropped", (guint64) g_atomic_int_get (&m->dropped));
      T ("uptime-usec", s->start_usec ? g_get_monotonic_time () - s->start_usec : 0);
#undef T
      g_dbus_method_invocation_return_value (inv, g_variant_new ("(a{sv})", &b));
    }
  snapshot_release (s);
}

/* The main thread published: answer the calls that waited for it. */
static gboolean
answer_waiters (gpointer data)
{
  VgicdManager *m = data;
  GDBusMethodInvocation *inv;

  while ((inv = g_queue_pop_head (&m->waiters)))
    answer (m, inv);
  return G_SOURCE_REMOVE;
}

/* A GetHistory call on its way to the main thread and back. */
typedef struct {
  VgicdManager *m;		/* not to be touched on the main thread once cancelled */
  GCancellable *cancellable;
  GDBusMethodInvocation *invocation;	/* NULL once answered */
  char *vm;
  guint limit;
  gint gen;			/* the history's generation copied */
  GPtrArray *copies;
} HistoryCall;

static void
history_call_free (HistoryCall *call)
{
  g_object_unref (call->cancellable);
  g_clear_object (&call->invocation);	/* a caller gone: left unanswered */
  g_free (call->vm);
  g_clear_pointer (&call->copies, g_ptr_array_unref);
  g_free (call);
}

/* Answer @inv (taking its reference). */
static void
history_reply (GDBusMethodInvocation *inv, GVariant *list)
{
  g_dbus_method_invocation_return_value (inv, g_variant_new ("(@aa{sv})", list));
}

/* Manager1's thread: turn the copies into the answer (the costly part). */
static gboolean
history_answer (gpointer data)
{
  HistoryCall *call = data;
  VgicdManager *m = call->m;

  if (caller_gone (m, g_dbus_method_invocation_get_sender (call->invocation)))
    g_atomic_int_inc (&m->dropped);
  else
    {
      g_clear_pointer (&m->history_answer, g_variant_unref);
      m->history_answer = g_variant_ref_sink (vgicd_history_copy_describe (call->copies));
      g_free (m->history_vm);
      m->history_vm = g_strdup (call->vm);
      m->history_limit = call->limit;
      m->history_answer_gen = call->gen;
      history_reply (g_steal_pointer (&call->invocation), m->history_answer);
    }
  history_call_free (call);
  return G_SOURCE_REMOVE;
}

/* The main thread: copy what the query selects. */
static gboolean
history_on_main (gpointer data)
{
  HistoryCall *call = data;
  VgicdManager *m = call->m;

  if (g_cancellable_is_cancelled (call->cancellable))
    {
      g_dbus_method_invocation_return_dbus_error (
        g_steal_pointer (&call->invocation), "org.freedesktop.DBus.Error.Failed",
        "vgicd is shutting down");
      history_call_free (call);
      return G_SOURCE_REMOVE;
    }
  if (caller_gone (m, g_dbus_method_invocation_get_sender (call->invocation)))
    {
      g_atomic_int_inc (&m->dropped);
      history_call_free (call);
      return G_SOURCE_REMOVE;
    }
  call->gen = g_atomic_int_get (&m->history_gen);
  call->copies = m->daemon->history ? vgicd_history_copy (m->daemon->history, call->vm,
                                                          call->limit)
                                    : g_ptr_array_new ();
  g_main_context_invoke (m->ctx, history_answer, call);
  return G_SOURCE_REMOVE;
}

static void
get_history (VgicdManager *m, GDBusMethodInvocation *inv, GVariant *params)
{
  HistoryCall *call;
  const char *vm;
  guint32 limit;

  g_variant_get (params, "(&su)", &vm, &limit);
  limit = limit == 0 ? HISTORY_LIMIT_DEFAULT : MIN (limit, HISTORY_LIMIT_MAX);
  /* The same query of the same history: the answer made for it. */
  if (m->history_answer && m->history_limit == limit && g_str_equal (m->history_vm, vm) &&
      m->history_answer_gen == g_atomic_int_get (&m->history_gen))
    {
      history_reply (inv, m->history_answer);
      return;
    }
  call = g_new0 (HistoryCall, 1);
  call->m = m;
  call->cancellable = g_object_ref (m->cancellable);
  call->invocation = inv;
  call->vm = g_strdup (vm);
  call->limit = limit;
  g_main_context_invoke_full (m->main_ctx, G_PRIORITY_LOW, history_on_main, call, NULL);
}

/* A SetMode call: Manager1's thread asks the bus who sent it, the main
 * thread changes the mode. */
typedef struct {
  VgicdManager *m;		/* not to be touched on the main thread once cancelled */
  GCancellable *cancellable;
  GDBusMethodInvocation *invocation;
  char *mode;
  gboolean persist;
  guint32 uid;
} SetModeCall;

static void
set_mode_call_free (SetModeCall *call)
{
  g_object_unref (call->cancellable);
  g_object_unref (call->invocation);
  g_free (call->mode);
  g_free (call);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SetModeCall, set_mode_call_free)

/* The main thread: change the mode. */
static gboolean
set_mode_on_main (gpointer data)
{
  g_autoptr (SetModeCall) call = data;
  g_autoptr (GError) error = NULL;
  g_autofree char *uid_str = g_strdup_printf ("%u", call->uid);
  GDBusMethodInvocation *inv = call->invocation;
  VgicdManager *m;
  VgicdDaemon *d;
  VgicdMode mode, old;

  if (g_cancellable_is_cancelled (call->cancellable))
    {
      g_dbus_method_invocation_return_dbus_error (
        inv, "org.freedesktop.DBus.Error.Failed",
        "vgicd is shutting down; the mode was not changed");
      return G_SOURCE_REMOVE;
    }
  m = call->m;
  d = m->daemon;

  if (!vgicd_mode_from_string (call->mode, &mode, &error))
    {
      g_dbus_method_invocation_return_dbus_error (
        inv, "org.freedesktop.DBus.Error.InvalidArgs", error->message);
      return G_SOURCE_REMOVE;
    }

  /* Persist first: if the file cannot be written the caller is told and
   * nothing changes, so the running mode never disagrees with what the
   * caller believes was saved. */
  if (call->persist && !d->config->state_path)
    {
      g_dbus_method_invocation_return_dbus_error (
        inv, "org.freedesktop.DBus.Error.Failed",
        "this vgicd has no state file to save the mode in; change it for this run only");
      return G_SOURCE_REMOVE;
    }
  if (call->persist && !vgicd_config_save_mode (d->config->state_path, mode, &error))
    {
      g_dbus_method_invocation_return_dbus_error (
        inv, "org.freedesktop.DBus.Error.Failed", error->message);
      return G_SOURCE_REMOVE;
    }
  if (call->persist)
    {
      d->config->mode = mode;
      d->config->mode_from_state = TRUE;
    }

  old = d->mode;
  d->mode = mode;
  g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE,
                    "MESSAGE_ID", VGICD_MESSAGE_MODE_CHANGED,
                    "VGICD_MODE", vgicd_mode_to_string (mode),
                    "VGICD_CALLER_UID", uid_str,
                    "MESSAGE", "mode %s → %s by uid %u (%s)",
                    vgicd_mode_to_string (old), vgicd_mode_to_string (mode), call->uid,
                    call->persist ? "saved in the state file"
                                  : "until vgicd restarts or reloads");
  vgicd_daemon_changed (d);
  g_dbus_method_invocation_return_value (inv, NULL);
  return G_SOURCE_REMOVE;
}

/* Manager1's thread: the bus said who called. */
static void
set_mode_with_uid (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr (SetModeCall) call = user_data;
  g_autoptr (GError) error = NULL;
  g_autoptr (GVariant) reply = NULL;
  GDBusMethodInvocation *inv = call->invocation;
  GMainContext *main_ctx;

  reply = g_dbus_connection_call_finish (G_DBUS_CONNECTION (source), result, &error);
  if (!reply)
    {
      if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        g_dbus_method_invocation_return_dbus_error (
          inv, "org.freedesktop.DBus.Error.Failed",
          "vgicd is shutting down; the mode was not changed");
      else
        g_dbus_method_invocation_return_dbus_error (
          inv, "org.freedesktop.DBus.Error.AccessDenied",
          "cannot tell who is asking (the bus did not give the caller's uid); "
          "the mode was not changed");
      return;
    }
  g_variant_get (reply, "(u)", &call->uid);

  if (call->uid != 0)
    {
      g_autofree char *uid_str = g_strdup_printf ("%u", call->uid);

      /* A notice, not a warning: any local user can cause it. */
      g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE,
                        "VGICD_CALLER_UID", uid_str,
                        "MESSAGE", "refused a mode change to \"%s\" by uid %u "
                        "(only root may change the mode)", call->mode, call->uid);
      g_dbus_method_invocation_return_error (
        inv, G_DBUS_ERROR, G_DBUS_ERROR_ACCESS_DENIED,
        "only root may change vgicd's mode (the call came from uid %u)", call->uid);
      return;
    }
  main_ctx = call->m->main_ctx;
  g_main_context_invoke (main_ctx, set_mode_on_main, g_steal_pointer (&call));
}

static void
set_mode (VgicdManager *m, GDBusMethodInvocation *inv, GVariant *params)
{
  const char *sender = g_dbus_method_invocation_get_sender (inv);
  SetModeCall *call;

  if (!sender)
    {
      g_dbus_method_invocation_return_dbus_error (
        inv, "org.freedesktop.DBus.Error.AccessDenied",
        "SetMode is only served on the system bus");
      return;
    }

  call = g_new0 (SetModeCall, 1);
  call->m = m;
  call->cancellable = g_object_ref (m->cancellable);
  call->invocation = g_object_ref (inv);
  g_variant_get (params, "(sb)", &call->mode, &call->persist);

  g_dbus_connection_call (m->bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                          "org.freedesktop.DBus", "GetConnectionUnixUser",
                          g_variant_new ("(s)", sender), G_VARIANT_TYPE ("(u)"),
                          G_DBUS_CALL_FLAGS_NONE, -1, m->cancellable,
                          set_mode_with_uid, call);
}

/* CheckConfig: the check `vgicd --check-config` makes, of the files this
 * vgicd loads, on the Manager1 thread (it reads files, never the daemon's
 * state; the files are root's, and VGICD_CONF_FILE_MAX bounds each). */
static void
check_config (VgicdManager *m, GDBusMethodInvocation *inv)
{
  g_autoptr (VgicdDiags) diags = vgicd_diags_new ();
  g_autofree char *path = NULL, *state = NULL, *vms = NULL;
  GVariantBuilder b;

  g_mutex_lock (&m->lock);
  path = g_strdup (m->prop_config);
  state = g_strdup (m->check_state);
  vms = g_strdup (m->check_vms);
  g_mutex_unlock (&m->lock);

  /* Only its problems are wanted here, not the configuration. */
  vgicd_config_free (vgicd_config_check (path && *path ? path : NULL, diags));
  if (state)
    vgicd_config_check_state (state, diags);
  if (vms)
    vgicd_vms_check (vms, diags);
  vgicd_diags_sort (diags);

  g_variant_builder_init (&b, G_VARIANT_TYPE ("a(ssusss)"));
  for (guint i = 0; i < diags->items->len; i++)
    {
      const VgicdDiag *d = diags->items->pdata[i];

      g_variant_builder_add (&b, "(ssusss)", vgicd_diag_level_to_string (d->level), d->file,
                             d->line, d->group ? d->group : "", d->key ? d->key : "",
                             d->message);
    }
  g_dbus_method_invocation_return_value (inv, g_variant_new ("(a(ssusss))", &b));
}

static void
method_call (GDBusConnection *connection, const char *sender,
             const char *object_path, const char *interface_name,
             const char *method_name, GVariant *params,
             GDBusMethodInvocation *inv, gpointer user_data)
{
  VgicdManager *m = user_data;
  gboolean stale;

  /* Past its bucket, a call does not get here (the filter). */
  if (caller_gone (m, sender))
    {
      /* Nobody to answer: not computed, not answered. */
      g_atomic_int_inc (&m->dropped);
      g_object_unref (inv);
      return;
    }
  if (g_str_equal (method_name, "SetMode"))
    set_mode (m, inv, params);
  else if (g_str_equal (method_name, "GetHistory"))
    get_history (m, inv, params);
  else if (g_str_equal (method_name, "CheckConfig"))
    check_config (m, inv);
  else if (g_str_equal (method_name, "ListSessions") ||
           g_str_equal (method_name, "GetStats") ||
           g_str_equal (method_name, "GetMetrics"))
    {
      g_mutex_lock (&m->lock);
      stale = m->stale;
      g_mutex_unlock (&m->lock);
      if (stale && m->waiters.length < WAITERS_MAX)
        g_queue_push_tail (&m->waiters, inv);
      else
        answer (m, inv);
    }
  else
    g_dbus_method_invocation_return_dbus_error (
      inv, "org.freedesktop.DBus.Error.UnknownMethod", method_name);
}

static const GDBusInterfaceVTable vtable = {
  .method_call = method_call,
  .get_property = get_property,
};

static gboolean
quit_loop (gpointer data)
{
  g_main_loop_quit (data);
  return G_SOURCE_REMOVE;
}

static gpointer
manager_thread (gpointer data)
{
  VgicdManager *m = data;

  /* The sessions' thread first, when the CPUs are short: a nice value
   * is per thread on Linux.  Failing leaves the thread at vgicd's own. */
  (void) setpriority (PRIO_PROCESS, (id_t) syscall (SYS_gettid), 19);
  g_main_context_push_thread_default (m->ctx);
  g_main_loop_run (m->loop);
  g_main_context_pop_thread_default (m->ctx);
  return NULL;
}

/* Own the name now rather than through g_bus_own_name(), so that a vgicd
 * that cannot own it fails at start with the reason instead of running on
 * unreachable. */
static gboolean
own_name (VgicdManager *m, GError **error)
{
  g_autoptr (GVariant) reply = NULL;
  g_autoptr (GError) local = NULL;
  guint32 result;

  reply = g_dbus_connection_call_sync (m->bus, "org.freedesktop.DBus",
                                       "/org/freedesktop/DBus",
                                       "org.freedesktop.DBus", "RequestName",
                                       g_variant_new ("(su)", VGICD_MANAGER_NAME,
                                                      NAME_FLAG_DO_NOT_QUEUE),
                                       G_VARIANT_TYPE ("(u)"),
                                       G_DBUS_CALL_FLAGS_NONE, -1, NULL, &local);
  if (!reply)
    {
      if (g_error_matches (local, G_DBUS_ERROR, G_DBUS_ERROR_ACCESS_DENIED))
        g_set_error (error, G_DBUS_ERROR, G_DBUS_ERROR_ACCESS_DENIED,
                     "the system bus does not let this user own %s: vgicd runs "
                     "as root or as user \"vgicd\", and needs the policy file "
                     "org.vgicd.Manager1.conf in /usr/share/dbus-1/system.d "
                     "(reload the bus after installing it: systemctl reload dbus)",
                     VGICD_MANAGER_NAME);
      else
        g_set_error (error, local->domain, local->code,
                     "cannot own %s on the system bus: %s",
                     VGICD_MANAGER_NAME, local->message);
      return FALSE;
    }

  g_variant_get (reply, "(u)", &result);
  if (result == NAME_REPLY_EXISTS)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_EXISTS,
                   "%s is already owned on the system bus: another vgicd is "
                   "running (systemctl status vgicd)", VGICD_MANAGER_NAME);
      return FALSE;
    }
  if (result != NAME_REPLY_PRIMARY_OWNER && result != NAME_REPLY_ALREADY_OWNER)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                   "cannot own %s on the system bus (RequestName answered %u)",
                   VGICD_MANAGER_NAME, result);
      return FALSE;
    }
  m->owns_name = TRUE;
  return TRUE;
}

/* vgicd_manager_new() - see vgicd-manager.h */
VgicdManager *
vgicd_manager_new (VgicdDaemon *daemon, GDBusConnection *system_bus, GError **error)
{
  g_autoptr (VgicdManager) m = g_new0 (VgicdManager, 1);
  g_autoptr (GVariant) match = NULL;

  g_return_val_if_fail (daemon != NULL, NULL);
  g_return_val_if_fail (G_IS_DBUS_CONNECTION (system_bus), NULL);

  m->daemon = daemon;
  m->bus = g_object_ref (system_bus);
  m->cancellable = g_cancellable_new ();
  g_mutex_init (&m->lock);
  m->callers = g_atomic_rc_box_new0 (Callers);
  g_mutex_init (&m->callers->lock);
  m->callers->table = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_queue_init (&m->waiters);
  m->main_ctx = g_main_context_ref_thread_default ();
  m->ctx = g_main_context_new ();
  m->loop = g_main_loop_new (m->ctx, FALSE);
  m->shown_mode = g_strdup (vgicd_mode_to_string (daemon->mode));
  m->shown_batch = g_strdup (kernel_batch_string (daemon->kernel_batch));
  m->shown_batch_source = g_strdup (daemon->kernel_batch_source ?
                                    daemon->kernel_batch_source : "");
  publish_properties (m);
  publish (m);

  m->node = g_dbus_node_info_new_for_xml (vgicd_manager_xml, error);
  if (!m->node)
    return NULL;

  /* Who leaves: the bus tells every connection that asks. */
  m->filter = g_dbus_connection_add_filter (system_bus, filter,
                                            g_atomic_rc_box_acquire (m->callers),
                                            callers_release);
  match = g_dbus_connection_call_sync (system_bus, "org.freedesktop.DBus",
                                       "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                       "AddMatch", g_variant_new ("(s)",
                                         "type='signal',sender='org.freedesktop.DBus',"
                                         "interface='org.freedesktop.DBus',"
                                         "member='NameOwnerChanged'"),
                                       NULL, G_DBUS_CALL_FLAGS_NONE, -1, NULL, error);
  if (!match)
    return NULL;

  /* Export before owning the name: a client that sees the name appear must
   * find the object there.  Registered with Manager1's context as the
   * thread-default, so that GDBus dispatches its calls there. */
  g_main_context_push_thread_default (m->ctx);
  m->registration = g_dbus_connection_register_object (
    system_bus, VGICD_MANAGER_PATH,
    g_dbus_node_info_lookup_interface (m->node, VGICD_MANAGER_INTERFACE),
    &vtable, m, NULL, error);
  g_main_context_pop_thread_default (m->ctx);
  if (!m->registration)
    return NULL;

  m->thread = g_thread_try_new ("vgicd-manager", manager_thread, m, error);
  if (!m->thread)
    return NULL;

  if (!own_name (m, error))
    return NULL;

  daemon->changed = daemon_changed;
  daemon->changed_data = m;
  return g_steal_pointer (&m);
}

/* vgicd_manager_free() - see vgicd-manager.h */
void
vgicd_manager_free (VgicdManager *m)
{
  GDBusMethodInvocation *inv;

  if (!m)
    return;
  if (m->daemon->changed_data == m)
    {
      m->daemon->changed = NULL;
      m->daemon->changed_data = NULL;
    }
  g_cancellable_cancel (m->cancellable);
  g_clear_handle_id (&m->publish_source, g_source_remove);
  if (m->owns_name)
    g_dbus_connection_call (m->bus, "org.freedesktop.DBus",
                            "/org/freedesktop/DBus", "org.freedesktop.DBus",
                            "ReleaseName",
                            g_variant_new ("(s)", VGICD_MANAGER_NAME),
                            NULL, G_DBUS_CALL_FLAGS_NONE, -1, NULL, NULL, NULL);
  if (m->registration)
    g_dbus_connection_unregister_object (m->bus, m->registration);
  if (m->filter)
    g_dbus_connection_remove_filter (m->bus, m->filter);
  if (m->thread)
    {
      /* From its own context: a quit before the thread runs the loop
       * would be lost. */
      g_main_context_invoke (m->ctx, quit_loop, m->loop);
      g_thread_join (m->thread);
    }
  /* What was on its way between the threads: it sees the cancellation. */
  while (g_main_context_iteration (m->ctx, FALSE))
    ;
  while ((inv = g_queue_pop_head (&m->waiters)))
    answer (m, inv);
  g_clear_pointer (&m->loop, g_main_loop_unref);
  g_clear_pointer (&m->ctx, g_main_context_unref);
  g_clear_pointer (&m->main_ctx, g_main_context_unref);
  g_clear_object (&m->cancellable);
  g_clear_pointer (&m->callers, callers_release);
  g_clear_pointer (&m->node, g_dbus_node_info_unref);
  g_clear_object (&m->bus);
  g_clear_pointer (&m->snap, snapshot_release);
  g_clear_pointer (&m->history_answer, g_variant_unref);
  g_free (m->history_vm);
  g_free (m->prop_mode);
  g_free (m->prop_batch);
  g_free (m->prop_batch_source);
  g_free (m->prop_config);
  g_free (m->prop_socket);
  g_free (m->check_state);
  g_free (m->check_vms);
  g_mutex_clear (&m->lock);
  g_free (m->shown_mode);
  g_free (m->shown_batch);
  g_free (m->shown_batch_source);
  g_free (m);
}
