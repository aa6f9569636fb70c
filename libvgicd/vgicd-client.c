/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-client.c - libvgicd's API: connect to vgicd, attach a VM (its
 * shape out, the shared window and maybe a step channel back), save and
 * load, by QEMU's fields or by a record.  Following vgicd's steps is
 * vgicd-client-steps.c's; which transport carries a call,
 * vgicd-client-call.c's; what a save into QEMU's fields read,
 * vgicd-regs.c's.
 *
 * The record, the largest thing either side sends, goes through the
 * window when vgicd takes it from there (LoadWindow), not in a message.
 */
#define _GNU_SOURCE /* memfd_create, F_ADD_SEALS */
#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <gio/gunixfdlist.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vgic-batch-probe.h"
#include "vgic-prefault.h"
#include "vgicd-client-private.h"
#include "vgicd/protocol.h"
#include "vgicd/vgic-entry.h"

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
  g_autofree char *path = NULL;
  g_autoptr (GIOStream) stream = NULL;
  Waiter w = { 0 };
  GSource *timeout;
  VgicdClient *c;
  GDBusConnection *conn = NULL;
  gint64 deadline_us;

  g_return_val_if_fail (address != NULL, NULL);
  gboolean chosen = timeout_ms > 0;

  if (!chosen)
    timeout_ms = VGICD_CLIENT_DEFAULT_TIMEOUT_MS;
  deadline_us = g_get_monotonic_time () +
                (gint64) MAX (timeout_ms, VGICD_CLIENT_CONNECT_TIMEOUT_MS) * 1000;

  /* vgicd's own address, a unix path, is connected with a wait for room in
   * its backlog (vgicd-client-dial.c); any other, by GDBus. */
  path = vgicd_client_unix_path (address);
  if (!path || (stream = vgicd_client_dial (path, deadline_us, &local)))
    {
      /* The handshake has no timeout of its own: run it on a private
       * context with what is left of one, so a wedged vgicd cannot hold
       * QEMU. */
      g_main_context_push_thread_default (ctx);
      w.loop = g_main_loop_new (ctx, FALSE);
      if (stream)
        g_dbus_connection_new (stream, NULL, G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT,
                               NULL, cancel, on_ready, &w);
      else
        g_dbus_connection_new_for_address (address,
                                           G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT,
                                           NULL, cancel, on_ready, &w);
      timeout = g_timeout_source_new ((guint) MAX (0, (deadline_us - g_get_monotonic_time ())
                                                      / 1000));
      g_source_set_callback (timeout, on_timeout, cancel, NULL);
      g_source_attach (timeout, ctx);
      g_main_loop_run (w.loop);
      g_source_destroy (timeout);
      g_source_unref (timeout);
      conn = stream ? g_dbus_connection_new_finish (w.result, &local)
                    : g_dbus_connection_new_for_address_finish (w.result, &local);
      g_object_unref (w.result);
      g_main_loop_unref (w.loop);
      g_main_context_pop_thread_default (ctx);
    }

  if (!conn)
    {
      /* ENOENT or ECONNREFUSED: no vgicd here (a stale socket file is what
       * a vgicd that stopped without systemd leaves). */
      gboolean absent = g_error_matches (local, G_IO_ERROR, G_IO_ERROR_NOT_FOUND) ||
                        g_error_matches (local, G_IO_ERROR, G_IO_ERROR_CONNECTION_REFUSED);

      /* vgicd closes a connection at accept() when its user is not on
       * AllowUsers, or when the host or this process has too many
       * connections in their handshake: the handshake then meets a closed
       * socket.  (A vgicd that stops at that moment looks the same.) */
      gboolean closed = g_error_matches (local, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED) ||
                        g_error_matches (local, G_IO_ERROR, G_IO_ERROR_BROKEN_PIPE);

      if (closed && !g_cancellable_is_cancelled (cancel))
        {
          g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DENIED,
                       "vgicd at %s closed the connection before the D-Bus handshake: "
                       "this process's user (uid %u) may not use vgicd on this host, or "
                       "the host's or this process's connections are at vgicd's bounds; "
                       "vgicd's log says which (%s)", address, (guint) getuid (),
                       local->message);
          return NULL;
        }
      g_set_error (error, VGICD_CLIENT_ERROR,
                   absent ? VGICD_CLIENT_ERROR_ABSENT : VGICD_CLIENT_ERROR_UNREACHABLE,
                   "cannot reach vgicd at %s: %s", address,
                   g_cancellable_is_cancelled (cancel) ? "no answer in time" : local->message);
      return NULL;
    }
  c = g_new0 (VgicdClient, 1);
  c->connection = conn;
  c->ctx = g_main_context_ref (ctx);
  c->address = g_strdup (address);
  c->timeout_ms = timeout_ms;
  c->timeout_chosen = chosen;
  c->vgic_fd = -1;
  c->window_fd = -1;
  return c;
}

int
vgicd_client_probe_batch (int vgic_fd)
{
  int probe = vgic_batch_probe (vgic_fd, NULL);

  /* A group 10 of another layout is no batch group for the caller. */
  return probe == VGIC_BATCH_PROBE_FOREIGN ? 0 : probe;
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
  c->window = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
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
  /* Touch every page of both now, at attach, for writing: a first touch
   * inside a save or a restore would be page faults inside the downtime
   * (vgic-prefault.c). */
  vgic_prefault_write (c->window, size);
  c->work = g_malloc (size);
  vgic_prefault_write (c->work, size);
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
  {
    char *why = NULL;

    /* What the probe found goes to vgicd in words: a group 10 of another
     * layout is a fallback vgicd logs and counts (no silent fallbacks).  A
     * group the probe could not verify (a vCPU ran, at a re-attach while
     * the guest runs) is "unknown": vgicd's own probe settles it. */
    int probe = vgic_batch_probe (vgic_fd, &why);
    struct kvm_device_attr has = { .group = KVM_DEV_ARM_VGIC_GRP_BATCH_REGS, .attr = 0 };

    c->kernel_batch = probe == VGIC_BATCH_PROBE_OURS ||
                      (probe < 0 && ioctl (vgic_fd, KVM_HAS_DEVICE_ATTR, &has) == 0);
    c->kernel_batch_abi = probe == VGIC_BATCH_PROBE_OURS ? VGICD_BATCH_ABI_OURS
                          : probe == VGIC_BATCH_PROBE_ABSENT ? VGICD_BATCH_ABI_ABSENT
                          : probe == VGIC_BATCH_PROBE_FOREIGN ? VGICD_BATCH_ABI_FOREIGN
                          : VGICD_BATCH_ABI_UNKNOWN;
    g_free (c->kernel_batch_probe);
    c->kernel_batch_probe = why;
  }

  g_variant_builder_init (&vm, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&vm, "{sv}", VGICD_VM_NAME, g_variant_new_string (name));
  g_variant_builder_add (&vm, "{sv}", VGICD_VM_UUID, g_variant_new_string (uuid ? uuid : ""));
  g_variant_builder_add (&vm, "{sv}", VGICD_VM_NR_IRQS, g_variant_new_uint32 (nr_irqs));
  g_variant_builder_add (&vm, "{sv}", VGICD_VM_MPIDRS,
                         g_variant_new_fixed_array (G_VARIANT_TYPE_UINT32, mpidrs,
                                                    nr_vcpus, sizeof (uint32_t)));
  g_variant_builder_add (&vm, "{sv}", VGICD_VM_KERNEL_BATCH,
                         g_variant_new_boolean (c->kernel_batch));
  g_variant_builder_add (&vm, "{sv}", VGICD_VM_KERNEL_BATCH_ABI,
                         g_variant_new_string (c->kernel_batch_abi));
  g_variant_builder_add (&vm, "{sv}", VGICD_VM_KERNEL_BATCH_PROBE,
                         g_variant_new_string (c->kernel_batch_probe));
  {
    static const char *const features[] = {
      VGICD_FEATURE_GUARDS, VGICD_FEATURE_RECORD_WINDOW, VGICD_FEATURE_CHANNEL, NULL,
    };
    g_variant_builder_add (&vm, "{sv}", VGICD_VM_FEATURES, g_variant_new_strv (features, -1));
  }

  reply = g_dbus_connection_call_with_unix_fd_list_sync (
    c->connection, NULL, VGICD_HELPER_PATH, VGICD_HELPER_IFACE, "Attach",
    g_variant_new ("(@a{sv})", g_variant_builder_end (&vm)), G_VARIANT_TYPE ("(oha{sv})"),
    G_DBUS_CALL_FLAGS_NONE, MAX (c->timeout_ms, VGICD_CLIENT_CONNECT_TIMEOUT_MS), NULL,
    &fds, NULL, &local);
  if (!reply)
    {
      vgicd_client_dbus_error (error, local, "refused to attach");
      return FALSE;
    }
  g_variant_get (reply, "(&oh@a{sv})", &path, &handle, &info);
  g_variant_lookup (info, VGICD_INFO_WINDOW_ENTRIES, "u", &entries);
  g_variant_lookup (info, VGICD_INFO_MODE, "&s", &mode);
  {
    guint32 host_ms;

    /* The host's bound, for every later call, unless the caller chose. */
    if (!c->timeout_chosen && g_variant_lookup (info, VGICD_INFO_TIMEOUT, "u", &host_ms) &&
        host_ms > 0 && host_ms <= G_MAXINT)
      c->timeout_ms = (int) host_ms;
  }
  {
    g_autofree const char **features = NULL;

    if (g_variant_lookup (info, VGICD_INFO_FEATURES, "^a&s", &features))
      {
        c->load_window = g_strv_contains (features, VGICD_FEATURE_LOAD_WINDOW);
        c->fields = g_strv_contains (features, VGICD_FEATURE_FIELDS);
      }
    if (!g_variant_lookup (info, VGICD_INFO_RECORD, "b", &c->record))
      c->record = !c->fields;	/* an older vgicd can only save a record */
    if (!g_variant_lookup (info, VGICD_INFO_RECORD_MAX, "u", &c->record_max))
      c->record_max = 0;	/* an older vgicd: it says so itself */
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
  /* Saves into QEMU's fields keep their reads in storage made now, as the
   * window's work buffer is (vgicd-regs.c). */
  if (c->fields && !c->record)
    c->regs_store = vgicd_regs_store_new (entries);
  {
    gint32 ch;

    if (g_variant_lookup (info, VGICD_INFO_CHANNEL, "h", &ch))
      {
        int channel = g_unix_fd_list_get (fds, ch, NULL);

        if (channel < 0)
          {
            g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_PROTOCOL,
                         "vgicd named a step channel it did not send");
            return FALSE;
          }
        c->channel = vgicd_client_channel_new (channel, c->timeout_ms);
      }
  }
  c->session_path = g_strdup (path);
  c->mode = g_strdup (mode ? mode : "");
  return TRUE;
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
  c->wait_budget_us = (gint64) c->timeout_ms * 1000;
  step = vgicd_client_call (c, VGICD_CALL_SAVE, NULL, error);
  return step && vgicd_client_run (c, step, VGICD_RUN_SAVE, record, error);
}

gboolean
vgicd_client_load (VgicdClient *c, const void *data, size_t len, GError **error)
{
  GVariant *step;
  gboolean too_long;

  if (!check_attached (c, error))
    return FALSE;
  memset (&c->stats, 0, sizeof (c->stats));
  /* Longer than any VM's record on this host: from a damaged stream or a
   * hostile source, and as Load's argument longer than any message vgicd
   * takes (it would close this connection as a misbehaving peer's).  Its
   * size alone goes, through the window's call, for vgicd to refuse and
   * count it; without the window, it is refused here. */
  too_long = c->record_max && len > c->record_max;
  if (too_long && !c->load_window)
    {
      g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_REFUSED,
                   "record refused, nothing written: it is %" G_GSIZE_FORMAT " bytes, longer "
                   "than any VM's record vgicd takes on this host (%u bytes)", len,
                   c->record_max);
      return FALSE;
    }
  c->wait_budget_us = (gint64) c->timeout_ms * 1000;
  if (c->load_window && len > 0 && ((len <= c->window_size && len <= G_MAXUINT32) || too_long))
    {
      /* The record through the window: one copy instead of a message's.
       * An answer still due on the channel is taken first: vgicd may still
       * read the window for it (a save into QEMU's fields that ended
       * early: its reads are there). */
      if (c->channel && !vgicd_client_channel_settle (c->channel, &c->wait_budget_us, error))
        return FALSE;
      if (len <= c->window_size)
        memcpy (c->window, data, len);
      step = vgicd_client_call (c, VGICD_CALL_LOAD_WINDOW,
                                g_variant_new ("(u)", (guint32) MIN (len, G_MAXUINT32)), error);
    }
  else
    step = vgicd_client_call (c, VGICD_CALL_LOAD,
                         g_variant_new ("(@ay)", g_variant_new_fixed_array (G_VARIANT_TYPE_BYTE,
                                                                            data, len, 1)),
                         error);
  return step && vgicd_client_run (c, step, VGICD_RUN_LOAD, NULL, error);
}

/* ------------------------------------------------------------------ */
/* QEMU's own fields: a save whose values stay here, a load of QEMU's  */
/* own list of writes                                                  */
/* ------------------------------------------------------------------ */

gboolean
vgicd_client_offers_fields (VgicdClient *c)
{
  return c->fields;
}

gboolean
vgicd_client_wants_record (VgicdClient *c)
{
  return c->record;
}

static gboolean
check_fields (VgicdClient *c, GError **error)
{
  if (!check_attached (c, error))
    return FALSE;
  if (c->fields)
    return TRUE;
  g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_INVALID,
               "this vgicd cannot save into or load from QEMU's own fields (it is "
               "older than libvgicd); use a record");
  return FALSE;
}

gboolean
vgicd_client_save_fields (VgicdClient *c, VgicdRegs **regs, GError **error)
{
  g_autoptr (VgicdRegsStore) store = NULL;
  GVariant *step;
  gboolean ok;

  g_return_val_if_fail (regs != NULL, FALSE);
  if (!check_fields (c, error))
    return FALSE;
  memset (&c->stats, 0, sizeof (c->stats));
  c->wait_budget_us = (gint64) c->timeout_ms * 1000;
  store = vgicd_regs_store_for_save (c->regs_store, c->window_entries);
  c->collect = vgicd_regs_store_reads (store);
  c->collect_steps = 0;
  step = vgicd_client_call (c, VGICD_CALL_SAVE_FIELDS, NULL, error);
  ok = step && vgicd_client_run (c, step, VGICD_RUN_SAVE_FIELDS, NULL, error);
  c->collect = NULL;
  if (ok)
    *regs = vgicd_regs_new (g_steal_pointer (&store), c->collect_steps);
  return ok;
}

/* The step's private copy (c->work) doubles as the room QEMU collects its
 * writes in: touched at attach, the window's size, and free between
 * steps.  vgicd_client_load_list() turns the writes into window entries
 * before the first step copies anything into it. */
G_STATIC_ASSERT (sizeof (VgicdAccess) == sizeof (struct kvm_vgic_batch_entry));
G_STATIC_ASSERT (G_ALIGNOF (VgicdAccess) <= G_ALIGNOF (struct kvm_vgic_batch_entry));

VgicdAccess *
vgicd_client_load_list_buffer (VgicdClient *c, size_t *n)
{
  g_return_val_if_fail (n != NULL, NULL);
  *n = 0;
  if (!c->session_path || !c->work)
    return NULL;
  *n = c->window_entries;
  return (VgicdAccess *) c->work;
}

gboolean
vgicd_client_load_list (VgicdClient *c, const VgicdAccess *writes, size_t n, GError **error)
{
  GVariant *step;

  if (!check_fields (c, error))
    return FALSE;
  if (n == 0 || n > c->window_entries)
    {
      g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_INVALID,
                   "%zu writes do not fit the window (%u)", n, c->window_entries);
      return FALSE;
    }
  memset (&c->stats, 0, sizeof (c->stats));
  c->wait_budget_us = (gint64) c->timeout_ms * 1000;
  /* An answer still due on the channel is taken before the window is
   * written again (vgicd may still read it for that answer's step: the
   * reads of a save into QEMU's fields that ended early). */
  if (c->channel && !vgicd_client_channel_settle (c->channel, &c->wait_budget_us, error))
    return FALSE;
  for (size_t i = 0; i < n; i++)
    c->window[i] = (struct kvm_vgic_batch_entry) { .group = writes[i].group,
                                                   .attr = writes[i].attr,
                                                   .value = writes[i].value };
  step = vgicd_client_call (c, VGICD_CALL_LOAD_LIST, g_variant_new ("(u)", (guint32) n), error);
  return step && vgicd_client_run (c, step, VGICD_RUN_LOAD, NULL, error);
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

gboolean
vgicd_client_is_connected (VgicdClient *c)
{
  /* GDBus's worker thread reads the socket all the time and marks the
   * connection closed as soon as it reads end-of-file: the flag is current
   * without a main loop, and reading it costs nothing. */
  return c->connection && !g_dbus_connection_is_closed (c->connection);
}

void
vgicd_client_free (VgicdClient *c)
{
  if (!c)
    return;
  if (c->window)
    munmap (c->window, c->window_size);
  g_free (c->work);
  vgicd_regs_store_unref (c->regs_store);
  if (c->window_fd >= 0)
    close (c->window_fd);
  vgicd_client_channel_free (c->channel);
  if (c->connection)
    {
      g_dbus_connection_close_sync (c->connection, NULL, NULL);
      g_object_unref (c->connection);
    }
  if (c->ctx)
    {
      /* The connection's last sources, and with them the connection. */
      while (g_main_context_iteration (c->ctx, FALSE))
        ;
      g_main_context_unref (c->ctx);
    }
  g_free (c->session_path);
  g_free (c->kernel_batch_probe);
  g_free (c->mode);
  g_free (c->address);
  g_free (c);
}
