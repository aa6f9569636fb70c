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
 * What a local user can make vgicd spend here is bounded, because the
 * answers are computed on the thread that also serves the QEMUs:
 * - GetHistory and GetMetrics, the large answers, are for root, the vgicd
 *   user and group "vgicd" (the policy file); ListSessions and GetStats
 *   stay open to everyone and are small.
 * - GetHistory answers at most HISTORY_LIMIT_MAX operations (0 asks for
 *   HISTORY_LIMIT_DEFAULT): an operation is under 1 KiB on the wire (its
 *   message is cut at 256 bytes), so an answer stays under 4 MiB whatever
 *   History= and HistoryVMs= say, far below the bus's 32 MiB limit on a
 *   message, past which the bus would drop vgicd and the API with it.
 * - Each caller (a unique bus name) has a token bucket: RATE_BURST calls at
 *   once, then RATE_PER_SEC a second; a call beyond it is refused with
 *   org.freedesktop.DBus.Error.LimitsExceeded before any work, and counted
 *   ("manager-refused" in GetStats).  The bus bounds how many connections
 *   one user may open (max_connections_per_user, 256 on Debian's system
 *   bus), and so how far one user can multiply the rate.
 */
#ifndef G_LOG_DOMAIN
#define G_LOG_DOMAIN "vgicd"
#endif

#include "vgicd-manager.h"

#include "vgicd-manager-xml.h"
#include "vgicd-history.h"
#include "vgicd-metrics.h"	/* GetMetrics */

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
/* Callers remembered at most; past it, the ones whose bucket has refilled
 * (they would start full anyway) are forgotten. */
#define RATE_CALLERS_MAX 1024

#ifndef PACKAGE_VERSION
#error "PACKAGE_VERSION must be defined by the build"
#endif

struct _VgicdManager {
  VgicdDaemon *daemon;
  GDBusConnection *bus;
  GDBusNodeInfo *node;
  guint registration;
  gboolean owns_name;
  /* Cancelled on free: SetMode calls still waiting for the bus's answer
   * then fail instead of touching a freed manager. */
  GCancellable *cancellable;
  /* The property values last announced, so that a change hook that fires
   * for a new session or a counter emits nothing. */
  char *shown_mode;
  char *shown_batch;
  char *shown_batch_source;
  /* Callers' token buckets, by unique bus name (Bucket). */
  GHashTable *buckets;
  guint64 refused;		/* calls refused by the rate limit */
};

typedef struct {
  double tokens;
  gint64 when;			/* g_get_monotonic_time() of the last refill */
} Bucket;

/* Whether @sender may make one more call now (and take its token). */
static gboolean
rate_allows (VgicdManager *m, const char *sender)
{
  gint64 now = g_get_monotonic_time ();
  Bucket *b;

  if (!sender)
    return TRUE;		/* a peer-to-peer connection: the tests' */
  b = g_hash_table_lookup (m->buckets, sender);
  if (!b)
    {
      if (g_hash_table_size (m->buckets) >= RATE_CALLERS_MAX)
        {
          GHashTableIter it;
          gpointer value;

          g_hash_table_iter_init (&it, m->buckets);
          while (g_hash_table_iter_next (&it, NULL, &value))
            {
              Bucket *old = value;

              if (old->tokens + (now - old->when) * RATE_PER_SEC / G_USEC_PER_SEC >= RATE_BURST)
                g_hash_table_iter_remove (&it);
            }
        }
      b = g_new (Bucket, 1);
      b->tokens = RATE_BURST;
      b->when = now;
      g_hash_table_insert (m->buckets, g_strdup (sender), b);
    }
  b->tokens = MIN (RATE_BURST, b->tokens + (now - b->when) * RATE_PER_SEC / G_USEC_PER_SEC);
  b->when = now;
  if (b->tokens < 1.0)
    return FALSE;
  b->tokens -= 1.0;
  return TRUE;
}

static const char *
kernel_batch_string (int kernel_batch)
{
  return kernel_batch > 0 ? "yes" : kernel_batch == 0 ? "no" : "unknown";
}

static GVariant *
get_property (GDBusConnection *connection, const char *sender,
              const char *object_path, const char *interface_name,
              const char *property_name, GError **error, gpointer user_data)
{
  VgicdManager *m = user_data;
  VgicdDaemon *d = m->daemon;

  if (g_str_equal (property_name, "Mode"))
    return g_variant_new_string (vgicd_mode_to_string (d->mode));
  if (g_str_equal (property_name, "KernelBatch"))
    return g_variant_new_string (kernel_batch_string (d->kernel_batch));
  if (g_str_equal (property_name, "KernelBatchSource"))
    return g_variant_new_string (d->kernel_batch_source ? d->kernel_batch_source : "");
  if (g_str_equal (property_name, "Version"))
    return g_variant_new_string (PACKAGE_VERSION);
  if (g_str_equal (property_name, "ConfigFile"))
    return g_variant_new_string (d->config && d->config->path ? d->config->path : "");
  if (g_str_equal (property_name, "Socket"))
    return g_variant_new_string (d->config && d->config->socket_path ?
                                 d->config->socket_path : "");
  g_set_error (error, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_PROPERTY,
               "no property %s", property_name);
  return NULL;
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

/* The daemon's changed hook: emit PropertiesChanged for what changed. */
static void
daemon_changed (gpointer data)
{
  VgicdManager *m = data;
  VgicdDaemon *d = m->daemon;
  g_auto (GVariantBuilder) changed =
    G_VARIANT_BUILDER_INIT (G_VARIANT_TYPE_VARDICT);
  g_autoptr (GError) error = NULL;
  gboolean any = FALSE;

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

static GVariant *
list_sessions (VgicdManager *m)
{
  GVariantBuilder b;

  g_variant_builder_init (&b, G_VARIANT_TYPE ("aa{sv}"));
  for (guint i = 0; m->daemon->sessions && i < m->daemon->sessions->len; i++)
    g_variant_builder_add_value (&b, vgicd_session_describe (
                                   g_ptr_array_index (m->daemon->sessions, i)));
  return g_variant_builder_end (&b);
}

static GVariant *
get_stats (VgicdManager *m)
{
  VgicdDaemon *d = m->daemon;
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
  T ("peers-closed", (guint64) g_atomic_int_get (&d->peers_closed));
  T ("manager-refused", m->refused);
  T ("uptime-usec", d->start_usec ? g_get_monotonic_time () - d->start_usec : 0);
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
  return g_variant_builder_end (&b);
}

/* A SetMode call waiting for the bus to say who sent it. */
typedef struct {
  VgicdManager *m;	/* not to be touched once the call was cancelled */
  GDBusMethodInvocation *invocation;
  char *mode;
  gboolean persist;
} SetModeCall;

static void
set_mode_call_free (SetModeCall *call)
{
  g_object_unref (call->invocation);
  g_free (call->mode);
  g_free (call);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SetModeCall, set_mode_call_free)

static void
set_mode_with_uid (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr (SetModeCall) call = user_data;
  g_autoptr (GError) error = NULL;
  g_autoptr (GVariant) reply = NULL;
  g_autofree char *uid_str = NULL;
  GDBusMethodInvocation *inv = call->invocation;
  VgicdManager *m;
  VgicdDaemon *d;
  VgicdMode mode, old;
  guint32 uid;

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
  m = call->m;
  d = m->daemon;
  g_variant_get (reply, "(u)", &uid);
  uid_str = g_strdup_printf ("%u", uid);

  if (uid != 0)
    {
      /* A notice, not a warning: any local user can cause it. */
      g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE,
                        "VGICD_CALLER_UID", uid_str,
                        "MESSAGE", "refused a mode change to \"%s\" by uid %u "
                        "(only root may change the mode)", call->mode, uid);
      g_dbus_method_invocation_return_error (
        inv, G_DBUS_ERROR, G_DBUS_ERROR_ACCESS_DENIED,
        "only root may change vgicd's mode (the call came from uid %u)", uid);
      return;
    }

  if (!vgicd_mode_from_string (call->mode, &mode, &error))
    {
      g_dbus_method_invocation_return_dbus_error (
        inv, "org.freedesktop.DBus.Error.InvalidArgs", error->message);
      return;
    }

  /* Persist first: if the file cannot be written the caller is told and
   * nothing changes, so the running mode never disagrees with what the
   * caller believes was saved. */
  if (call->persist && !d->config->state_path)
    {
      g_dbus_method_invocation_return_dbus_error (
        inv, "org.freedesktop.DBus.Error.Failed",
        "this vgicd has no state file to save the mode in; change it for this run only");
      return;
    }
  if (call->persist && !vgicd_config_save_mode (d->config->state_path, mode, &error))
    {
      g_dbus_method_invocation_return_dbus_error (
        inv, "org.freedesktop.DBus.Error.Failed", error->message);
      return;
    }
  if (call->persist)
    {
      d->config->mode = mode;
      d->config->mode_from_state = TRUE;
    }

  old = d->mode;
  d->mode = mode;
  g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE,
                    "VGICD_MODE", vgicd_mode_to_string (mode),
                    "VGICD_CALLER_UID", uid_str,
                    "MESSAGE", "mode %s → %s by uid %u (%s)",
                    vgicd_mode_to_string (old), vgicd_mode_to_string (mode), uid,
                    call->persist ? "saved in the state file"
                                  : "until vgicd restarts or reloads");
  vgicd_daemon_changed (d);
  g_dbus_method_invocation_return_value (inv, NULL);
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
  call->invocation = g_object_ref (inv);
  g_variant_get (params, "(sb)", &call->mode, &call->persist);

  /* Asked asynchronously: a slow bus must not stall the sessions' main loop. */
  g_dbus_connection_call (m->bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                          "org.freedesktop.DBus", "GetConnectionUnixUser",
                          g_variant_new ("(s)", sender), G_VARIANT_TYPE ("(u)"),
                          G_DBUS_CALL_FLAGS_NONE, -1, m->cancellable,
                          set_mode_with_uid, call);
}

static void
method_call (GDBusConnection *connection, const char *sender,
             const char *object_path, const char *interface_name,
             const char *method_name, GVariant *params,
             GDBusMethodInvocation *inv, gpointer user_data)
{
  VgicdManager *m = user_data;

  if (!rate_allows (m, sender))
    {
      m->refused++;
      g_dbus_method_invocation_return_dbus_error (
        inv, "org.freedesktop.DBus.Error.LimitsExceeded",
        "too many calls to vgicd from this connection: at most "
        G_STRINGIFY (RATE_BURST_INT) " at once and " G_STRINGIFY (RATE_PER_SEC_INT)
        " a second; try again in a moment");
      return;
    }
  if (g_str_equal (method_name, "SetMode"))
    set_mode (m, inv, params);
  else if (g_str_equal (method_name, "ListSessions"))
    g_dbus_method_invocation_return_value (inv, g_variant_new_tuple (
                                             (GVariant *[]) { list_sessions (m) }, 1));
  else if (g_str_equal (method_name, "GetStats"))
    g_dbus_method_invocation_return_value (inv, g_variant_new_tuple (
                                             (GVariant *[]) { get_stats (m) }, 1));
  else if (g_str_equal (method_name, "GetHistory"))
    {
      const char *vm;
      guint32 limit;

      g_variant_get (params, "(&su)", &vm, &limit);
      limit = limit == 0 ? HISTORY_LIMIT_DEFAULT : MIN (limit, HISTORY_LIMIT_MAX);
      g_dbus_method_invocation_return_value (
        inv, g_variant_new_tuple ((GVariant *[]) {
          m->daemon->history ? vgicd_history_describe (m->daemon->history, vm, limit)
                             : g_variant_new_array (G_VARIANT_TYPE_VARDICT, NULL, 0) }, 1));
    }
  else if (g_str_equal (method_name, "GetMetrics"))
    {
      g_autofree char *text = vgicd_metrics_text (m->daemon);

      g_dbus_method_invocation_return_value (inv, g_variant_new ("(s)", text));
    }
  else
    g_dbus_method_invocation_return_dbus_error (
      inv, "org.freedesktop.DBus.Error.UnknownMethod", method_name);
}

static const GDBusInterfaceVTable vtable = {
  .method_call = method_call,
  .get_property = get_property,
};

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

  g_return_val_if_fail (daemon != NULL, NULL);
  g_return_val_if_fail (G_IS_DBUS_CONNECTION (system_bus), NULL);

  m->daemon = daemon;
  m->bus = g_object_ref (system_bus);
  m->cancellable = g_cancellable_new ();
  m->buckets = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  m->shown_mode = g_strdup (vgicd_mode_to_string (daemon->mode));
  m->shown_batch = g_strdup (kernel_batch_string (daemon->kernel_batch));
  m->shown_batch_source = g_strdup (daemon->kernel_batch_source ?
                                    daemon->kernel_batch_source : "");

  m->node = g_dbus_node_info_new_for_xml (vgicd_manager_xml, error);
  if (!m->node)
    return NULL;

  /* Export before owning the name: a client that sees the name appear must
   * find the object there. */
  m->registration = g_dbus_connection_register_object (
    system_bus, VGICD_MANAGER_PATH,
    g_dbus_node_info_lookup_interface (m->node, VGICD_MANAGER_INTERFACE),
    &vtable, m, NULL, error);
  if (!m->registration)
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
  if (!m)
    return;
  if (m->daemon->changed_data == m)
    {
      m->daemon->changed = NULL;
      m->daemon->changed_data = NULL;
    }
  g_cancellable_cancel (m->cancellable);
  if (m->owns_name)
    g_dbus_connection_call (m->bus, "org.freedesktop.DBus",
                            "/org/freedesktop/DBus", "org.freedesktop.DBus",
                            "ReleaseName",
                            g_variant_new ("(s)", VGICD_MANAGER_NAME),
                            NULL, G_DBUS_CALL_FLAGS_NONE, -1, NULL, NULL, NULL);
  if (m->registration)
    g_dbus_connection_unregister_object (m->bus, m->registration);
  g_clear_object (&m->cancellable);
  g_clear_pointer (&m->buckets, g_hash_table_unref);
  g_clear_pointer (&m->node, g_dbus_node_info_unref);
  g_clear_object (&m->bus);
  g_free (m->shown_mode);
  g_free (m->shown_batch);
  g_free (m->shown_batch_source);
  g_free (m);
}
