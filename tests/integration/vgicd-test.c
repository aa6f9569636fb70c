/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* vgicd-test.c - what the test-vgicd-*.c programs share (see vgicd-test.h). */
#include <sys/mman.h>
#include <sys/stat.h>
#include <gio/gunixfdlist.h>

#include "vgic-direct.h"
#include "vgic-record.h"
#include "vgicd-test.h"

const char *vgicd_test_bin;
const char *vgicd_test_policy;

const Shape shapes[4] = {
  { 1, 64, FALSE, 5 },
  { 4, 128, TRUE, 7 },
  { 16, 288, TRUE, 6 },
  { 64, 992, TRUE, 5 },
};

void
vgicd_test_init (int *argc, char ***argv)
{
  g_autoptr (GError) error = NULL;

  vgicd_test_bin = g_getenv ("VGICD_BIN");
  vgicd_test_policy = g_getenv ("VGICD_POLICY");
  if (!vgic_sim_supervise_self (&error))
    g_error ("vgic-sim: %s", error->message);
  g_test_init (argc, argv, NULL);
  g_assert_nonnull (vgicd_test_bin);
  g_assert_nonnull (vgicd_test_policy);
}

VgicdClient *
vgicd_test_connect (VgicdHarness *h, GError **error)
{
  return vgicd_client_connect (h->address, VGICD_TEST_BUDGET_MS, error);
}

VgicSim *
make_sim (const Shape *s, gboolean batch)
{
  g_autoptr (GError) error = NULL;
  VgicSimConfig c = {
    .nr_vcpus = s->vcpus, .nr_irqs = s->irqs, .has_its = s->its,
    .pri_bits = s->pri_bits, .batch = batch,
  };
  VgicSim *sim = vgic_sim_new (&c, &error);

  g_assert_no_error (error);
  return sim;
}

VgicdClient *
try_attach_uuid (VgicdHarness *h, VgicSim *sim, const Shape *s, const char *name,
                 const char *uuid, GError **error)
{
  g_autofree guint32 *mpidrs = sim_vm_mpidrs (sim, s->vcpus);
  g_autoptr (VgicdClient) c = vgicd_test_connect (h, error);

  if (!c || !vgicd_client_attach (c, vgic_sim_get_fd (sim), name, uuid, s->irqs, s->vcpus,
                                  mpidrs, error))
    return NULL;
  return g_steal_pointer (&c);
}

VgicdClient *
attach_uuid (VgicdHarness *h, VgicSim *sim, const Shape *s, const char *name,
             const char *uuid)
{
  g_autoptr (GError) error = NULL;
  VgicdClient *c = try_attach_uuid (h, sim, s, name, uuid, &error);

  g_assert_no_error (error);
  return c;
}

VgicdClient *
attach (VgicdHarness *h, VgicSim *sim, const Shape *s, const char *name)
{
  return attach_uuid (h, sim, s, name, "0f3c1a2e-0000-4000-8000-000000000001");
}

/* What a save for vgicd's record can see of @sim (@routes; else what
 * QEMU's accesses see: no route of an SPI above nr_irqs / 2), as a record
 * (one-by-one reads, bypassing vgicd); *@accesses gets the number of reads
 * that save makes. */
static GBytes *
state_of (VgicSim *sim, const Shape *s, gboolean routes, guint *accesses)
{
  g_autoptr (VgicShape) shape = sim_vm_shape (sim, s->vcpus, s->irqs);
  g_autoptr (VgicList) all = NULL;
  g_autoptr (GError) error = NULL;
  GBytes *bytes;

  all = vgic_direct_save (shape, vgic_sim_get_fd (sim), VGIC_EXEC_SINGLE, routes, NULL,
                          &error);
  g_assert_no_error (error);
  bytes = vgic_record_encode (shape, all->entries, all->len, &error);
  g_assert_no_error (error);
  if (accesses)
    *accesses = all->len;
  return bytes;
}

GBytes *
visible_state_n (VgicSim *sim, const Shape *s, guint *accesses)
{
  return state_of (sim, s, TRUE, accesses);
}

GBytes *
visible_state (VgicSim *sim, const Shape *s)
{
  return state_of (sim, s, TRUE, NULL);
}

GBytes *
qemu_visible_state (VgicSim *sim, const Shape *s)
{
  return state_of (sim, s, FALSE, NULL);
}

void
assert_untouched (VgicSim *sim, VgicSimState *before)
{
  g_autoptr (VgicSimState) after = vgic_sim_state_get (sim);
  g_autoptr (GString) diff = g_string_new (NULL);

  if (!vgic_sim_state_equal (before, after, diff))
    g_error ("destination changed: %s", diff->str);
}

void
assert_regs_read (const VgicdRegs *regs, const VgicList *reads)
{
  for (guint i = 0; i < reads->len; i++)
    {
      guint64 v = ~0ULL;

      if (!vgicd_regs_lookup (regs, reads->entries[i].group, reads->entries[i].attr, &v))
        g_error ("the save into QEMU's fields did not read entry %u of QEMU's get", i);
      g_assert_cmphex (v, ==, reads->entries[i].value);
    }
}

VgicdHarness *
harness_accepting_fds (const char *conf)
{
  g_autoptr (GError) error = NULL;
  VgicdHarness *h;

  /* vgicd reads it from the environment it starts with. */
  g_setenv ("VGICD_TEST_ACCEPT_FDS", "1", TRUE);
  h = conf ? vgicd_harness_start (vgicd_test_bin, vgicd_test_policy, conf, &error)
           : harness ("auto");
  g_unsetenv ("VGICD_TEST_ACCEPT_FDS");
  g_assert_no_error (error);
  return h;
}

VgicdHarness *
harness (const char *mode)
{
  g_autoptr (GError) error = NULL;
  /* This process plays many QEMUs at once (up to 64 VMs, each source and
   * destination): vgicd's bound per process is for one QEMU. */
  g_autofree char *conf = g_strdup_printf ("Mode=%s\nAllowUsers=root\n"
                                           "MaxConnectionsPerProcess=1024\n", mode);
  VgicdHarness *h = vgicd_harness_start (vgicd_test_bin, vgicd_test_policy, conf, &error);

  g_assert_no_error (error);
  return h;
}


void
peer_attach (OldPeer *p, VgicdHarness *h, VgicSim *sim, const Shape *s, const char *name,
             const char *const *features)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GVariant) reply = NULL, info = NULL;
  g_autoptr (GUnixFDList) fds = NULL;
  g_autofree guint32 *mpidrs = sim_vm_mpidrs (sim, s->vcpus);
  GVariantBuilder vm;
  const char *path;
  gint32 handle;
  int fd;

  p->conn = g_dbus_connection_new_for_address_sync (h->address,
                                                    G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT,
                                                    NULL, NULL, &error);
  g_assert_no_error (error);
  g_variant_builder_init (&vm, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&vm, "{sv}", "name", g_variant_new_string (name));
  g_variant_builder_add (&vm, "{sv}", "nr-irqs", g_variant_new_uint32 (s->irqs));
  g_variant_builder_add (&vm, "{sv}", "mpidrs",
                         g_variant_new_fixed_array (G_VARIANT_TYPE_UINT32, mpidrs, s->vcpus,
                                                    sizeof (guint32)));
  g_variant_builder_add (&vm, "{sv}", "kernel-batch", g_variant_new_boolean (FALSE));
  if (features)
    g_variant_builder_add (&vm, "{sv}", "features", g_variant_new_strv (features, -1));
  reply = g_dbus_connection_call_with_unix_fd_list_sync (
    p->conn, NULL, "/org/vgicd/Helper1", "org.vgicd.Helper1", "Attach",
    g_variant_new ("(@a{sv})", g_variant_builder_end (&vm)), G_VARIANT_TYPE ("(oha{sv})"),
    G_DBUS_CALL_FLAGS_NONE, 5000, NULL, &fds, NULL, &error);
  g_assert_no_error (error);
  g_variant_get (reply, "(&oh@a{sv})", &path, &handle, &info);
  /* A step channel for a peer that asked for one, and takes records from
   * the window (they do not fit a packet); only then. */
  p->channel = -1;
  if (features && g_strv_contains (features, "channel") &&
      g_strv_contains (features, "record-window"))
    {
      g_assert_true (g_variant_lookup (info, "channel", "h", &handle));
      p->channel = g_unix_fd_list_get (fds, handle, &error);
      g_assert_no_error (error);
    }
  else
    g_assert_false (g_variant_lookup (info, "channel", "h", &handle));
  g_assert_true (g_variant_lookup (info, "window-entries", "u", &p->entries));
  fd = g_unix_fd_list_get (fds, 0, &error);
  g_assert_no_error (error);
  p->size = (gsize) p->entries * sizeof (Entry);
  p->window = mmap (NULL, p->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  g_assert_true (p->window != MAP_FAILED);
  close (fd);
  p->path = g_strdup (path);
}

void
old_peer_attach (OldPeer *p, VgicdHarness *h, VgicSim *sim, const Shape *s, const char *name)
{
  peer_attach (p, h, sim, s, name, NULL);
}

void
old_peer_clear (OldPeer *p)
{
  if (p->channel >= 0)
    close (p->channel);
  munmap (p->window, p->size);
  g_dbus_connection_close_sync (p->conn, NULL, NULL);
  g_object_unref (p->conn);
  g_free (p->path);
}

/* Call @method, then run steps until done; the last step is returned. */
GVariant *
old_peer_run (OldPeer *p, VgicSim *sim, const char *method, GVariant *args, guint *steps)
{
  g_autoptr (GError) error = NULL;
  GVariant *reply = g_dbus_connection_call_sync (p->conn, NULL, p->path, "org.vgicd.Session1",
                                                 method, args, G_VARIANT_TYPE ("(a{sv})"),
                                                 G_DBUS_CALL_FLAGS_NONE, 5000, NULL, &error);
  GVariant *step;

  g_assert_no_error (error);
  g_variant_get (reply, "(@a{sv})", &step);
  g_variant_unref (reply);
  for (*steps = 0;; (*steps)++)
    {
      const char *action = NULL;
      guint32 count = 0, guard = 0;
      VgicExecReport r;
      GVariantBuilder b;

      g_variant_lookup (step, "action", "&s", &action);
      if (g_strcmp0 (action, "read") != 0 && g_strcmp0 (action, "write") != 0)
        return step;
      /* Guards are only for peers that asked for them. */
      g_assert_false (g_variant_lookup (step, "guard", "u", &guard));
      g_variant_lookup (step, "count", "u", &count);
      g_assert_cmpuint (count, <=, p->entries);
      if (p->report_error)
        {
          r = (VgicExecReport) { .error = p->report_error };
          p->report_error = 0;
        }
      else
        {
          vgic_exec_run (vgic_sim_get_fd (sim), p->window, count,
                         action[0] == 'w' ? VGIC_EXEC_WRITE : VGIC_EXEC_READ, VGIC_EXEC_SINGLE,
                         &r);
          g_assert_cmpint (r.error, ==, 0);
        }
      g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
      g_variant_builder_add (&b, "{sv}", "done", g_variant_new_uint32 (r.done));
      g_variant_builder_add (&b, "{sv}", "error", g_variant_new_int32 (r.error));
      g_variant_builder_add (&b, "{sv}", "ioctls", g_variant_new_uint32 (r.ioctls));
      g_variant_builder_add (&b, "{sv}", "ns", g_variant_new_uint64 (r.ns));
      g_variant_builder_add (&b, "{sv}", "via", g_variant_new_string ("single"));
      g_variant_unref (step);
      reply = g_dbus_connection_call_sync (p->conn, NULL, p->path, "org.vgicd.Session1", "Next",
                                           g_variant_new ("(@a{sv})", g_variant_builder_end (&b)),
                                           G_VARIANT_TYPE ("(a{sv})"), G_DBUS_CALL_FLAGS_NONE,
                                           5000, NULL, &error);
      g_assert_no_error (error);
      g_variant_get (reply, "(@a{sv})", &step);
      g_variant_unref (reply);
    }
}

GPtrArray *
history (VgicdHarness *h, const char *vm, guint limit)
{
  g_autoptr (GVariant) reply = vgicd_harness_manager_call (h, "GetHistory",
                                                           g_variant_new ("(su)", vm, limit),
                                                           "(aa{sv})");
  g_autoptr (GVariant) list = g_variant_get_child_value (reply, 0);
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) g_variant_dict_unref);

  for (gsize i = 0; i < g_variant_n_children (list); i++)
    {
      g_autoptr (GVariant) e = g_variant_get_child_value (list, i);

      g_ptr_array_add (out, g_variant_dict_new (e));
    }
  return out;
}

const char *
hstr (GPtrArray *a, guint i, const char *key)
{
  const char *s = NULL;

  g_assert_true (g_variant_dict_lookup (g_ptr_array_index (a, i), key, "&s", &s));
  return s;
}

guint64
hnum (GPtrArray *a, guint i, const char *key)
{
  g_autoptr (GVariant) v = g_variant_dict_lookup_value (g_ptr_array_index (a, i), key, NULL);

  g_assert_nonnull (v);
  if (g_variant_is_of_type (v, G_VARIANT_TYPE_BOOLEAN))
    return g_variant_get_boolean (v);
  if (g_variant_is_of_type (v, G_VARIANT_TYPE_INT64))
    return (guint64) g_variant_get_int64 (v);
  return g_variant_is_of_type (v, G_VARIANT_TYPE_UINT32) ? g_variant_get_uint32 (v)
                                                         : g_variant_get_uint64 (v);
}

void
wait_sessions (VgicdHarness *h, guint64 n)
{
  for (int i = 0; i < VGICD_TEST_PATIENCE_MS / 10 && vgicd_harness_stat (h, "sessions") != n; i++)
    g_usleep (10 * 1000);
  g_assert_cmpuint (vgicd_harness_stat (h, "sessions"), ==, n);
}

char *
copy_for_everyone (const char *src, const char *dir, const char *name)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *data = NULL;
  char *dst = g_build_filename (dir, name, NULL);
  gsize len;

  g_assert_true (g_file_get_contents (src, &data, &len, &error));
  g_assert_true (g_file_set_contents (dst, data, (gssize) len, &error));
  g_assert_no_error (error);
  g_assert_cmpint (chmod (dst, 0755), ==, 0);
  return dst;
}
