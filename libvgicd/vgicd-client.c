/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-client.c - libvgicd: the peer-to-peer D-Bus client and the step
 * loop that feeds the executor.
 *
 * Theory of operation
 *
 * vgicd answers Save, Load and Next with steps.  A "read" or "write" step
 * names a count of entries in the shared window.  The window is shared
 * memory that vgicd can change at any time, so the loop copies the entries
 * into private memory first, checks the copy (groups, widths, count), runs
 * the copy, and only then copies the results back.  What the kernel is asked
 * to do is exactly what was checked.
 *
 * A write step may start with guards: reads, each with a range its value
 * (under a mask) must fall in.  They are how a restore takes one round trip
 * rather than two: vgicd states what the destination must look like, and
 * the loop writes nothing unless it does.  The guards are run and checked
 * on the private copy too.
 *
 * Each D-Bus call to vgicd is a round trip through both processes' D-Bus
 * threads, which under emulation costs more than the kernel's work.  So
 * Save, LoadWindow and Next go through the step channel when vgicd gives
 * one (include/vgicd/protocol.h): one packet each way, on this thread.  And
 * the record, the largest thing either side sends, goes through the window.
 */
#define _GNU_SOURCE /* memfd_create, F_ADD_SEALS */
#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <gio/gunixfdlist.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libvgicd.h"
#include "vgic-exec.h"
#include "vgicd/protocol.h"

#define HELPER_PATH "/org/vgicd/Helper1"
#define HELPER_IFACE "org.vgicd.Helper1"
#define SESSION_IFACE "org.vgicd.Session1"

struct _VgicdClient {
  GDBusConnection *connection;
  char *address;
  int timeout_ms;

  int vgic_fd;
  gboolean kernel_batch;
  char *session_path;
  char *mode;
  int window_fd;
  struct kvm_vgic_batch_entry *window;
  gsize window_size;
  guint32 window_entries;
  struct kvm_vgic_batch_entry *work;	/* the private copy of a step */
  gboolean load_window;		/* vgicd has Session1.LoadWindow */
  int channel;			/* the step channel, or -1 */
  gboolean broken;		/* a channel call failed: the session is lost */
  gboolean answer_deferred;	/* vgicd's answer to a load's last Next is due */

  VgicdClientStats stats;
};

G_DEFINE_QUARK (vgicd-client-error-quark, vgicd_client_error)

/* Turn a D-Bus call failure into the caller's terms. */
static void
set_call_error (GError **error, GError *call_error, const char *what)
{
  g_autofree char *remote = g_dbus_error_get_remote_error (call_error);
  int code = VGICD_CLIENT_ERROR_UNREACHABLE;

  if (remote && strcmp (remote, "org.freedesktop.DBus.Error.AccessDenied") == 0)
    code = VGICD_CLIENT_ERROR_DENIED;
  else if (remote && strcmp (remote, "org.freedesktop.DBus.Error.InvalidArgs") == 0)
    code = VGICD_CLIENT_ERROR_INVALID;
  g_dbus_error_strip_remote_error (call_error);
  g_set_error (error, VGICD_CLIENT_ERROR, code, "vgicd %s: %s", what, call_error->message);
}

typedef struct {
  GMainLoop *loop;
  GAsyncResult *result;
} Waiter;

static void
on_ready (GObject *source, GAsyncResult *res, gpointer data)
{
  Waiter *w = data;

  w->result = g_object_ref (res);
  g_main_loop_quit (w->loop);
}

static gboolean
on_timeout (gpointer data)
{
  g_cancellable_cancel (data);
  return G_SOURCE_REMOVE;
}

VgicdClient *
vgicd_client_connect (const char *address, int timeout_ms, GError **error)
{
  g_autoptr (GMainContext) ctx = g_main_context_new ();
  g_autoptr (GCancellable) cancel = g_cancellable_new ();
  g_autoptr (GError) local = NULL;
  Waiter w = { 0 };
  GSource *timeout;
  VgicdClient *c;
  GDBusConnection *conn;

  g_return_val_if_fail (address != NULL, NULL);
  if (timeout_ms <= 0)
    timeout_ms = VGICD_CLIENT_DEFAULT_TIMEOUT_MS;

  /* The handshake has no timeout of its own: run it on a private context
   * with one, so a wedged vgicd cannot hold QEMU. */
  g_main_context_push_thread_default (ctx);
  w.loop = g_main_loop_new (ctx, FALSE);
  g_dbus_connection_new_for_address (address,
                                     G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT,
                                     NULL, cancel, on_ready, &w);
  timeout = g_timeout_source_new (timeout_ms);
  g_source_set_callback (timeout, on_timeout, cancel, NULL);
  g_source_attach (timeout, ctx);
  g_main_loop_run (w.loop);
  g_source_destroy (timeout);
  g_source_unref (timeout);
  conn = g_dbus_connection_new_for_address_finish (w.result, &local);
  g_object_unref (w.result);
  g_main_loop_unref (w.loop);
  g_main_context_pop_thread_default (ctx);

  if (!conn)
    {
      g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_UNREACHABLE,
                   "cannot reach vgicd at %s: %s", address,
                   g_cancellable_is_cancelled (cancel) ? "no answer in time" : local->message);
      return NULL;
    }
  c = g_new0 (VgicdClient, 1);
  c->connection = conn;
  c->address = g_strdup (address);
  c->timeout_ms = timeout_ms;
  c->vgic_fd = -1;
  c->window_fd = -1;
  c->channel = -1;
  return c;
}

int
vgicd_client_probe_batch (int vgic_fd)
{
  return vgic_exec_probe_batch (vgic_fd);
}

/* Map the window read-write after checking that vgicd sealed its size, so
 * it cannot be truncated under the executor (which would be SIGBUS). */
static gboolean
map_window (VgicdClient *c, int fd, guint32 entries, GError **error)
{
  struct stat st;
  int seals = fcntl (fd, F_GET_SEALS);
  gsize size = (gsize) entries * sizeof (struct kvm_vgic_batch_entry);

  if (seals < 0 || !(seals & F_SEAL_SHRINK) || fstat (fd, &st) < 0 ||
      (gsize) st.st_size < size || entries == 0)
    {
      g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_PROTOCOL,
                   "vgicd's window is not a sealed memfd of %u entries", entries);
      return FALSE;
    }
  c->window = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (c->window == MAP_FAILED)
    {
      c->window = NULL;
      g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_PROTOCOL,
                   "cannot map vgicd's window: %s", g_strerror (errno));
      return FALSE;
    }
  c->window_fd = fd;
  c->window_size = size;
  c->window_entries = entries;
  /* Touch every page of both now, at attach: a first touch inside a save
   * or a restore would be page faults inside the downtime. */
  c->work = g_malloc (size);
  for (gsize i = 0; i < size; i += 4096)
    ((volatile guint8 *) c->work)[i] = 0;
  return TRUE;
}

gboolean
vgicd_client_attach (VgicdClient *c, int vgic_fd, const char *name, const char *uuid,
                     uint32_t nr_irqs, uint32_t nr_vcpus, const uint32_t *mpidrs,
                     GError **error)
{
  g_autoptr (GError) local = NULL;
  g_autoptr (GVariant) reply = NULL;
  g_autoptr (GUnixFDList) fds = NULL;
  g_autoptr (GVariant) info = NULL;
  GVariantBuilder vm;
  const char *path;
  gint32 handle;
  guint32 entries = 0;
  const char *mode = NULL;
  int fd;

  if (c->session_path || vgic_fd < 0 || !name || nr_vcpus == 0 || !mpidrs)
    {
      g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_INVALID,
                   c->session_path ? "already attached" : "attach needs a vGIC fd, a name "
                   "and the vCPUs' affinities");
      return FALSE;
    }
  c->vgic_fd = vgic_fd;
  c->kernel_batch = vgicd_client_probe_batch (vgic_fd) == 1;

  g_variant_builder_init (&vm, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&vm, "{sv}", "name", g_variant_new_string (name));
  g_variant_builder_add (&vm, "{sv}", "uuid", g_variant_new_string (uuid ? uuid : ""));
  g_variant_builder_add (&vm, "{sv}", "nr-irqs", g_variant_new_uint32 (nr_irqs));
  g_variant_builder_add (&vm, "{sv}", "mpidrs",
                         g_variant_new_fixed_array (G_VARIANT_TYPE_UINT32, mpidrs,
                                                    nr_vcpus, sizeof (uint32_t)));
  g_variant_builder_add (&vm, "{sv}", "kernel-batch", g_variant_new_boolean (c->kernel_batch));
  {
    static const char *const features[] = { "guards", "record-window", "channel", NULL };
    g_variant_builder_add (&vm, "{sv}", "features", g_variant_new_strv (features, -1));
  }

  reply = g_dbus_connection_call_with_unix_fd_list_sync (
    c->connection, NULL, HELPER_PATH, HELPER_IFACE, "Attach",
    g_variant_new ("(@a{sv})", g_variant_builder_end (&vm)), G_VARIANT_TYPE ("(oha{sv})"),
    G_DBUS_CALL_FLAGS_NONE, c->timeout_ms, NULL, &fds, NULL, &local);
  if (!reply)
    {
      set_call_error (error, local, "refused to attach");
      return FALSE;
    }
  g_variant_get (reply, "(&oh@a{sv})", &path, &handle, &info);
  g_variant_lookup (info, "window-entries", "u", &entries);
  g_variant_lookup (info, "mode", "&s", &mode);
  {
    g_autofree const char **features = NULL;

    if (g_variant_lookup (info, "features", "^a&s", &features))
      c->load_window = g_strv_contains (features, "load-window");
  }
  fd = fds ? g_unix_fd_list_get (fds, handle, &local) : -1;
  if (fd < 0)
    {
      g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_PROTOCOL,
                   "vgicd sent no window");
      return FALSE;
    }
  if (!map_window (c, fd, entries, error))
    {
      close (fd);
      return FALSE;
    }
  {
    gint32 ch;

    if (g_variant_lookup (info, "channel", "h", &ch))
      {
        c->channel = g_unix_fd_list_get (fds, ch, NULL);
        if (c->channel < 0)
          {
            g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_PROTOCOL,
                         "vgicd named a step channel it did not send");
            return FALSE;
          }
      }
  }
  c->session_path = g_strdup (path);
  c->mode = g_strdup (mode ? mode : "");
  return TRUE;
}

/* The session is lost: the channel failed part-way through a call, so an
 * answer could still arrive and be taken for the next call's. */
static GVariant *
channel_lost (VgicdClient *c, GError **error, const char *format, ...) G_GNUC_PRINTF (3, 4);
static GVariant *
channel_lost (VgicdClient *c, GError **error, const char *format, ...)
{
  g_autofree char *msg = NULL;
  va_list ap;

  va_start (ap, format);
  msg = g_strdup_vprintf (format, ap);
  va_end (ap);
  close (c->channel);
  c->channel = -1;
  c->broken = TRUE;
  g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_UNREACHABLE, "vgicd %s", msg);
  return NULL;
}

/* Send one call on the step channel. */
static gboolean
channel_send (VgicdClient *c, VgicdChannelMethod method, GVariant *args, GError **error)
{
  g_autoptr (GVariant) sunk = g_variant_ref_sink (args ? args : g_variant_new ("()"));
  VgicdChannelHeader h = { .method = method };
  gsize size = g_variant_get_size (sunk);
  g_autofree guint8 *buf = NULL;

  if (sizeof h + size > VGICD_CHANNEL_MAX)
    {
      g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_INVALID,
                   "a call of %" G_GSIZE_FORMAT " bytes does not fit the step channel", size);
      return FALSE;
    }
  buf = g_malloc (sizeof h + size);
  memcpy (buf, &h, sizeof h);
  g_variant_store (sunk, buf + sizeof h);
  if (send (c->channel, buf, sizeof h + size, MSG_NOSIGNAL) < 0)
    {
      channel_lost (c, error, "went away (%s)", g_strerror (errno));
      return FALSE;
    }
  return TRUE;
}

/* Wait for vgicd's answer on the step channel, within the timeout. */
static GVariant *
channel_receive (VgicdClient *c, GError **error)
{
  g_autofree guint8 *buf = g_malloc (VGICD_CHANNEL_MAX);
  g_autoptr (GVariant) reply = NULL;
  gint64 deadline = g_get_monotonic_time () + (gint64) c->timeout_ms * 1000;
  GVariant *step;
  ssize_t n;

  for (;;)
    {
      struct pollfd p = { .fd = c->channel, .events = POLLIN };
      gint64 left = deadline - g_get_monotonic_time ();
      int r;

      if (left <= 0)
        return channel_lost (c, error, "did not answer in %d ms", c->timeout_ms);
      r = poll (&p, 1, (int) MIN ((left + 999) / 1000, G_MAXINT));
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        return channel_lost (c, error, "cannot be waited for (%s)", g_strerror (errno));
      if (r == 0)
        continue;
      n = recv (c->channel, buf, VGICD_CHANNEL_MAX, MSG_TRUNC | MSG_DONTWAIT);
      if (n < 0 && (errno == EINTR || errno == EAGAIN))
        continue;
      break;
    }
  if (n == 0)
    return channel_lost (c, error, "closed the connection");
  if (n < 0)
    return channel_lost (c, error, "went away (%s)", g_strerror (errno));
  if (n > VGICD_CHANNEL_MAX)
    return channel_lost (c, error, "sent an answer larger than the channel allows");
  {
    g_autoptr (GBytes) bytes = g_bytes_new_take (g_steal_pointer (&buf), (gsize) n);
    reply = g_variant_ref_sink (g_variant_new_from_bytes (G_VARIANT_TYPE ("(a{sv})"),
                                                          bytes, FALSE));
  }
  g_variant_get (reply, "(@a{sv})", &step);
  return step;
}

/*
 * The answer to a load's last Next, which libvgicd did not wait for (see
 * run_step()), must be taken before the next call, else it would be taken
 * for that call's.
 */
static gboolean
take_deferred_answer (VgicdClient *c, GError **error)
{
  g_autoptr (GVariant) step = NULL;

  if (!c->answer_deferred)
    return TRUE;
  c->answer_deferred = FALSE;
  /* Every write was applied, so the load succeeded whatever the answer;
   * were it not done, vgicd found fault with the report alone, and has
   * logged and counted that itself. */
  step = channel_receive (c, error);
  return step != NULL;
}

/* A call through the step channel: one packet out, one back. */
static GVariant *
call_channel (VgicdClient *c, VgicdChannelMethod method, GVariant *args, GError **error)
{
  if (!channel_send (c, method, args, error))
    return NULL;
  return channel_receive (c, error);
}

static GVariant *
call_session (VgicdClient *c, const char *method, GVariant *args, GError **error)
{
  g_autoptr (GError) local = NULL;
  GVariant *reply, *step;

  if (c->broken)
    g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_UNREACHABLE,
                 "vgicd: the session was lost when an earlier call failed; attach again");
  if (c->broken || !take_deferred_answer (c, error))
    {
      if (args)
        g_variant_unref (g_variant_ref_sink (args));
      return NULL;
    }
  if (c->channel >= 0)
    {
      VgicdChannelMethod m = strcmp (method, "Save") == 0 ? VGICD_CHANNEL_SAVE
                             : strcmp (method, "LoadWindow") == 0 ? VGICD_CHANNEL_LOAD_WINDOW
                             : strcmp (method, "Next") == 0 ? VGICD_CHANNEL_NEXT
                             : 0;
      if (m)
        return call_channel (c, m, args, error);
    }
  reply = g_dbus_connection_call_sync (c->connection, NULL, c->session_path,
                                       SESSION_IFACE, method, args,
                                       G_VARIANT_TYPE ("(a{sv})"),
                                       G_DBUS_CALL_FLAGS_NONE, c->timeout_ms,
                                       NULL, &local);
  if (!reply)
    {
      set_call_error (error, local, "did not answer");
      return NULL;
    }
  g_variant_get (reply, "(@a{sv})", &step);
  g_variant_unref (reply);
  return step;
}

/* The first guard whose read does not satisfy its range, or -1. */
static gint64
first_failed_guard (const struct kvm_vgic_batch_entry *reads, GVariant *ranges)
{
  GVariantIter iter;
  guint64 mask, min, max;
  gint64 i = 0;

  g_variant_iter_init (&iter, ranges);
  while (g_variant_iter_next (&iter, "(ttt)", &mask, &min, &max))
    {
      guint64 v = reads[i].value & mask;

      if (v < min || v > max)
        return i;
      i++;
    }
  return -1;
}

static void
add_report (GVariantBuilder *b, const VgicExecReport *r, guint32 index_base,
            VgicExecVia via)
{
  g_variant_builder_add (b, "{sv}", "done", g_variant_new_uint32 (r->done));
  g_variant_builder_add (b, "{sv}", "error", g_variant_new_int32 (r->error));
  g_variant_builder_add (b, "{sv}", "error-index",
                         g_variant_new_uint32 (index_base + r->error_index));
  g_variant_builder_add (b, "{sv}", "ns", g_variant_new_uint64 (r->ns));
  g_variant_builder_add (b, "{sv}", "via",
                         g_variant_new_string (via == VGIC_EXEC_BATCH ? "batch" : "single"));
}

static GVariant *
step_done (void)
{
  GVariantBuilder b;

  g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&b, "{sv}", "action", g_variant_new_string ("done"));
  return g_variant_ref_sink (g_variant_builder_end (&b));
}

/* Run one read or write step: copy, check, execute, copy back. */
static GVariant *
run_step (VgicdClient *c, GVariant *step, gboolean write, GError **error)
{
  struct kvm_vgic_batch_entry *work;
  g_autoptr (GError) local = NULL;
  g_autoptr (GVariant) ranges = NULL;
  guint32 count = 0, guard = 0, ioctls = 0;
  const char *via = NULL;
  VgicExecVia exec_via;
  VgicExecReport r = { 0 };
  VgicExecDir dir = write ? VGIC_EXEC_WRITE : VGIC_EXEC_READ;
  GVariantBuilder b;
  gboolean last = FALSE;
  gint64 failed = -1;
  guint64 ns = 0;

  g_variant_lookup (step, "count", "u", &count);
  g_variant_lookup (step, "via", "&s", &via);
  if (write)
    g_variant_lookup (step, "guard", "u", &guard);
  if (count > c->window_entries || guard > c->window_entries - count)
    {
      g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_PROTOCOL,
                   "vgicd asked for %" G_GUINT64_FORMAT " entries but the window holds %u; "
                   "nothing was run", (guint64) count + guard, c->window_entries);
      return NULL;
    }
  if (guard)
    {
      ranges = g_variant_lookup_value (step, "guard-ranges", G_VARIANT_TYPE ("a(ttt)"));
      if (!ranges || g_variant_n_children (ranges) != guard)
        {
          g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_PROTOCOL,
                       "vgicd sent %u guards without as many ranges; nothing was run",
                       guard);
          return NULL;
        }
    }
  /* Private copy first: vgicd can no longer change what is checked.  The
   * buffer is the session's, the window's size, touched at attach: a
   * fresh one per step would be page faults inside the downtime. */
  work = c->work;
  memcpy (work, c->window, (gsize) (guard + count) * sizeof (*work));
  if (!vgic_exec_check (work, guard, VGIC_EXEC_READ, &local) ||
      !vgic_exec_check (work + guard, count, dir, &local))
    {
      g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_PROTOCOL,
                   "refusing vgicd's list, nothing was run: %s", local->message);
      return NULL;
    }
  exec_via = g_strcmp0 (via, "batch") == 0 && c->kernel_batch ? VGIC_EXEC_BATCH
                                                             : VGIC_EXEC_SINGLE;
  g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
  if (guard)
    {
      /* The guards, then the writes only if every one holds. */
      vgic_exec_run (c->vgic_fd, work, guard, VGIC_EXEC_READ, exec_via, &r);
      ioctls += r.ioctls;
      ns += r.ns;
      c->stats.entries += r.done;
      if (r.error)
        {
          r.done = 0;
          add_report (&b, &r, 0, exec_via);
        }
      else if ((failed = first_failed_guard (work, ranges)) >= 0)
        {
          memset (&r, 0, sizeof (r));
          add_report (&b, &r, 0, exec_via);
          g_variant_builder_add (&b, "{sv}", "guard-failed", g_variant_new_uint32 (failed));
        }
    }
  if (!r.error && failed < 0)
    {
      vgic_exec_run (c->vgic_fd, work + guard, count, dir, exec_via, &r);
      ioctls += r.ioctls;
      ns += r.ns;
      c->stats.entries += r.done;
      add_report (&b, &r, guard, exec_via);
    }
  /* Back go what vgicd reads: the values read, and the guards.  Writes
   * leave nothing to read back (their errors are in the report). */
  memcpy (c->window, work, (gsize) (write ? guard : guard + count) * sizeof (*work));

  c->stats.ioctls += ioctls;
  c->stats.kernel_ns += ns;
  c->stats.batched = exec_via == VGIC_EXEC_BATCH;
  g_variant_builder_add (&b, "{sv}", "ioctls", g_variant_new_uint32 (ioctls));

  /* The last writes of a load, all applied: vgicd's answer can only be
   * done, and a load's done carries nothing.  So the report goes out and
   * the load ends here, a round trip early; the answer is taken before
   * the next call (take_deferred_answer()). */
  if (write && c->channel >= 0 && !r.error && failed < 0 && r.done == count &&
      g_variant_lookup (step, "last", "b", &last) && last)
    {
      if (!channel_send (c, VGICD_CHANNEL_NEXT,
                         g_variant_new ("(@a{sv})", g_variant_builder_end (&b)), error))
        return NULL;
      c->answer_deferred = TRUE;
      return step_done ();
    }
  return call_session (c, "Next", g_variant_new ("(@a{sv})", g_variant_builder_end (&b)),
                       error);
}

/* The record of a finished save: in the step, or at the start of the
 * window (copied out at once: vgicd may write there again). */
static gboolean
take_record (VgicdClient *c, GVariant *step, GBytes **record, GError **error)
{
  g_autoptr (GVariant) bytes = g_variant_lookup_value (step, "record",
                                                       G_VARIANT_TYPE_BYTESTRING);
  guint32 size;

  if (bytes)
    {
      *record = g_variant_get_data_as_bytes (bytes);
      return TRUE;
    }
  if (g_variant_lookup (step, "record-size", "u", &size))
    {
      if (size == 0 || size > c->window_size)
        {
          g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_PROTOCOL,
                       "vgicd said its record is %u bytes of a %" G_GSIZE_FORMAT
                       "-byte window", size, c->window_size);
          return FALSE;
        }
      *record = g_bytes_new (c->window, size);
      return TRUE;
    }
  g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_PROTOCOL,
               "vgicd finished a save without a record");
  return FALSE;
}

/* Follow steps until vgicd says done, declined or fail. */
static gboolean
run (VgicdClient *c, GVariant *first, gboolean load, GBytes **record, GError **error)
{
  g_autoptr (GVariant) step = first;

  while (step)
    {
      const char *action = NULL;
      GVariant *next;

      g_variant_lookup (step, "action", "&s", &action);
      if (g_strcmp0 (action, "read") == 0 || g_strcmp0 (action, "write") == 0)
        {
          next = run_step (c, step, action[0] == 'w', error);
          g_variant_unref (step);
          step = next;
          continue;
        }
      if (g_strcmp0 (action, "done") == 0)
        return load || take_record (c, step, record, error);
      if (g_strcmp0 (action, "declined") == 0)
        {
          g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DECLINED,
                       "vgicd declined (mode off on this host)");
          return FALSE;
        }
      if (g_strcmp0 (action, "fail") == 0)
        {
          const char *message = "no reason given", *reason = "";
          g_variant_lookup (step, "message", "&s", &message);
          g_variant_lookup (step, "reason", "&s", &reason);
          /* Refused before any access, or failed in the kernel. */
          g_set_error (error, VGICD_CLIENT_ERROR,
                       strcmp (reason, "refused") == 0 ? VGICD_CLIENT_ERROR_REFUSED
                                                       : VGICD_CLIENT_ERROR_DEVICE,
                       "vgicd: %s", message);
          return FALSE;
        }
      g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_PROTOCOL,
                   "vgicd sent an unknown step \"%s\"", action ? action : "");
      return FALSE;
    }
  return FALSE;
}

static gboolean
check_attached (VgicdClient *c, GError **error)
{
  if (c->session_path)
    return TRUE;
  g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_INVALID, "not attached");
  return FALSE;
}

gboolean
vgicd_client_save (VgicdClient *c, GBytes **record, GError **error)
{
  GVariant *step;

  g_return_val_if_fail (record != NULL, FALSE);
  if (!check_attached (c, error))
    return FALSE;
  memset (&c->stats, 0, sizeof (c->stats));
  step = call_session (c, "Save", NULL, error);
  return step && run (c, step, FALSE, record, error);
}

gboolean
vgicd_client_load (VgicdClient *c, const void *data, size_t len, GError **error)
{
  GVariant *step;

  if (!check_attached (c, error))
    return FALSE;
  memset (&c->stats, 0, sizeof (c->stats));
  if (c->load_window && len > 0 && len <= c->window_size && len <= G_MAXUINT32)
    {
      /* The record through the window: one copy instead of a message's. */
      memcpy (c->window, data, len);
      step = call_session (c, "LoadWindow", g_variant_new ("(u)", (guint32) len), error);
    }
  else
    step = call_session (c, "Load",
                         g_variant_new ("(@ay)", g_variant_new_fixed_array (G_VARIANT_TYPE_BYTE,
                                                                            data, len, 1)),
                         error);
  return step && run (c, step, TRUE, NULL, error);
}

void
vgicd_client_get_stats (VgicdClient *c, VgicdClientStats *stats)
{
  *stats = c->stats;
}

const char *
vgicd_client_get_mode (VgicdClient *c)
{
  return c->mode;
}

void
vgicd_client_free (VgicdClient *c)
{
  if (!c)
    return;
  if (c->window)
    munmap (c->window, c->window_size);
  g_free (c->work);
  if (c->window_fd >= 0)
    close (c->window_fd);
  if (c->channel >= 0)
    {
      /* Take a deferred answer, so that vgicd does not find the channel
       * closed when it sends it (and log a failed send). */
      take_deferred_answer (c, NULL);
      if (c->channel >= 0)
        close (c->channel);
    }
  if (c->connection)
    {
      g_dbus_connection_close_sync (c->connection, NULL, NULL);
      g_object_unref (c->connection);
    }
  g_free (c->session_path);
  g_free (c->mode);
  g_free (c->address);
  g_free (c);
}
