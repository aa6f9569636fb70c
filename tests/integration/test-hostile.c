/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-hostile.c - libvgicd against a vgicd that misbehaves: a window entry
 * in the CTRL group, a count beyond the window, a window that is not
 * sealed, guards that overrun the window or come without their ranges, a
 * saved record said to be larger than the window.  libvgicd must refuse
 * each without issuing a single device ioctl (the sim's counters prove it).
 * And a vgicd that drips: it answers every step, each a little before the
 * client's timeout, and never ends the save.  The timeout bounds the
 * whole save's waiting, not each wait, so the save fails, unreachable,
 * within it rather than never returning.  The hostile server speaks the real
 * protocol with the generated skeletons, on a real unix socket.  A vgicd
 * that states the longest record it takes but has no LoadWindow: a longer
 * record is refused by libvgicd itself, never sent.  And a
 * socket whose backlog stays full (a vgicd that never accepts, or one a
 * flood keeps full): the connect waits for room, and gives up at its
 * deadline, unreachable, instead of waiting for ever.
 */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "libvgicd.h"
#include "vgic-regs.h"
#include "vgic-sim.h"
#include "vgicd-dbus.h"

typedef struct kvm_vgic_batch_entry Entry;

typedef enum {
  BAD_GROUP, BAD_COUNT, UNSEALED, GUARD_BEYOND, GUARD_NO_RANGES, RECORD_TOO_BIG, DRIP,
  RECORD_MAX_NO_WINDOW,
} Misbehaviour;

/* RECORD_MAX_NO_WINDOW: the longest record vgicd says it takes. */
#define RECORD_MAX 64

/* DRIP: the client's timeout, and how long each answer takes. */
#define DRIP_TIMEOUT_MS 200
#define DRIP_DELAY_MS (DRIP_TIMEOUT_MS * 2 / 5)

typedef struct {
  Misbehaviour how;
  GMainContext *ctx;
  GMainLoop *loop;
  GDBusServer *server;
  char *address;
  char *dir;
  VgicdDbusHelper1 *helper;
  VgicdDbusSession1 *session;
  int window_fd;
  GMutex lock;
  GCond ready;
  gboolean up;
  gint loads;	/* Load calls that reached the server */
} Hostile;

#define WINDOW_ENTRIES 16

/* A read step of 4 entries, "single" (the window's entries are GICD_CTLR). */
static GVariant *
read_step (void)
{
  GVariantBuilder b;

  g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&b, "{sv}", "action", g_variant_new_string ("read"));
  g_variant_builder_add (&b, "{sv}", "count", g_variant_new_uint32 (4));
  g_variant_builder_add (&b, "{sv}", "via", g_variant_new_string ("single"));
  return g_variant_builder_end (&b);
}

/* DRIP: answer a Save or Next with one more read step, late. */
static gboolean
drip (gpointer data)
{
  GDBusMethodInvocation *inv = data;

  g_dbus_method_invocation_return_value (inv, g_variant_new ("(@a{sv})", read_step ()));
  return G_SOURCE_REMOVE;
}

static void
drip_later (Hostile *h, GDBusMethodInvocation *inv)
{
  GSource *later = g_timeout_source_new (DRIP_DELAY_MS);

  g_source_set_callback (later, drip, g_object_ref (inv), g_object_unref);
  g_source_attach (later, h->ctx);
  g_source_unref (later);
}

static gboolean
on_next (VgicdDbusSession1 *skel, GDBusMethodInvocation *inv, GVariant *report, gpointer data)
{
  drip_later (data, inv);
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
on_save (VgicdDbusSession1 *skel, GDBusMethodInvocation *inv, gpointer data)
{
  Hostile *h = data;
  GVariantBuilder b;

  if (h->how == DRIP)
    {
      drip_later (h, inv);
      return G_DBUS_METHOD_INVOCATION_HANDLED;
    }
  g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
  if (h->how == RECORD_TOO_BIG)
    {
      g_variant_builder_add (&b, "{sv}", "action", g_variant_new_string ("done"));
      g_variant_builder_add (&b, "{sv}", "record-size",
                             g_variant_new_uint32 (WINDOW_ENTRIES * sizeof (Entry) + 1));
      vgicd_dbus_session1_complete_save (skel, inv, g_variant_builder_end (&b));
      return G_DBUS_METHOD_INVOCATION_HANDLED;
    }
  g_variant_builder_add (&b, "{sv}", "action", g_variant_new_string ("read"));
  g_variant_builder_add (&b, "{sv}", "count",
                         g_variant_new_uint32 (h->how == BAD_COUNT ? WINDOW_ENTRIES * 1000 : 4));
  g_variant_builder_add (&b, "{sv}", "via", g_variant_new_string ("single"));
  vgicd_dbus_session1_complete_save (skel, inv, g_variant_builder_end (&b));
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

/* A guarded write step: 8 writes after guards that overrun the window, or
 * after 2 guards without their ranges. */
static gboolean
on_load (VgicdDbusSession1 *skel, GDBusMethodInvocation *inv, GVariant *record,
         gpointer data)
{
  Hostile *h = data;
  GVariantBuilder b;

  g_atomic_int_inc (&h->loads);
  if (h->how == RECORD_MAX_NO_WINDOW)
    {
      g_dbus_method_invocation_return_dbus_error (inv, "org.vgicd.Error.Refused",
                                                  "this test's vgicd takes no record");
      return G_DBUS_METHOD_INVOCATION_HANDLED;
    }
  g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&b, "{sv}", "action", g_variant_new_string ("write"));
  g_variant_builder_add (&b, "{sv}", "count", g_variant_new_uint32 (8));
  g_variant_builder_add (&b, "{sv}", "via", g_variant_new_string ("single"));
  g_variant_builder_add (&b, "{sv}", "guard",
                         g_variant_new_uint32 (h->how == GUARD_BEYOND ? G_MAXUINT32 - 4 : 2));
  if (h->how == GUARD_BEYOND)
    g_variant_builder_add (&b, "{sv}", "guard-ranges",
                           g_variant_new_array (G_VARIANT_TYPE ("(ttt)"), NULL, 0));
  vgicd_dbus_session1_complete_load (skel, inv, g_variant_builder_end (&b));
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
on_attach (VgicdDbusHelper1 *skel, GDBusMethodInvocation *inv, GUnixFDList *in,
           GVariant *vm, gpointer data)
{
  Hostile *h = data;
  g_autoptr (GUnixFDList) fds = g_unix_fd_list_new ();
  gsize size = WINDOW_ENTRIES * sizeof (Entry);
  Entry *w;
  GVariantBuilder info;
  int fd = memfd_create ("hostile", MFD_CLOEXEC | MFD_ALLOW_SEALING);

  g_assert_cmpint (ftruncate (fd, (off_t) size), ==, 0);
  if (h->how != UNSEALED)
    g_assert_cmpint (fcntl (fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), ==, 0);
  w = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  for (guint i = 0; i < WINDOW_ENTRIES; i++)
    w[i] = (Entry) { .group = KVM_DEV_ARM_VGIC_GRP_DIST_REGS, .attr = GICD_CTLR };
  /* Entry 2 would ask QEMU to run KVM_DEV_ARM_VGIC_CTRL_INIT. */
  if (h->how == BAD_GROUP)
    {
      w[2].group = KVM_DEV_ARM_VGIC_GRP_CTRL;
      w[2].attr = KVM_DEV_ARM_VGIC_CTRL_INIT;
    }
  munmap (w, size);
  g_unix_fd_list_append (fds, fd, NULL);
  close (fd);

  g_variant_builder_init (&info, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&info, "{sv}", "window-entries", g_variant_new_uint32 (WINDOW_ENTRIES));
  g_variant_builder_add (&info, "{sv}", "mode", g_variant_new_string ("auto"));
  /* A vgicd that says how long a record may be, without LoadWindow (the
   * window's call that would carry an oversize record's length to vgicd
   * to refuse and count): libvgicd refuses it itself. */
  if (h->how == RECORD_MAX_NO_WINDOW)
    g_variant_builder_add (&info, "{sv}", "record-max", g_variant_new_uint32 (RECORD_MAX));
  h->session = vgicd_dbus_session1_skeleton_new ();
  g_signal_connect (h->session, "handle-save", G_CALLBACK (on_save), h);
  g_signal_connect (h->session, "handle-load", G_CALLBACK (on_load), h);
  g_signal_connect (h->session, "handle-next", G_CALLBACK (on_next), h);
  g_dbus_interface_skeleton_export (G_DBUS_INTERFACE_SKELETON (h->session),
                                    g_dbus_method_invocation_get_connection (inv),
                                    "/org/vgicd/Session1/1", NULL);
  vgicd_dbus_helper1_complete_attach (skel, inv, fds, "/org/vgicd/Session1/1",
                                      g_variant_new_handle (0), g_variant_builder_end (&info));
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
on_new_connection (GDBusServer *server, GDBusConnection *conn, gpointer data)
{
  Hostile *h = data;

  h->helper = vgicd_dbus_helper1_skeleton_new ();
  g_signal_connect (h->helper, "handle-attach", G_CALLBACK (on_attach), h);
  g_dbus_interface_skeleton_export (G_DBUS_INTERFACE_SKELETON (h->helper), conn,
                                    "/org/vgicd/Helper1", NULL);
  return TRUE;
}

static gpointer
serve (gpointer data)
{
  Hostile *h = data;
  g_autofree char *guid = g_dbus_generate_guid ();
  g_autofree char *listen = g_strdup_printf ("unix:path=%s/sock", h->dir);

  g_main_context_push_thread_default (h->ctx);
  h->server = g_dbus_server_new_sync (listen, G_DBUS_SERVER_FLAGS_NONE, guid, NULL, NULL, NULL);
  g_assert_nonnull (h->server);
  g_signal_connect (h->server, "new-connection", G_CALLBACK (on_new_connection), h);
  g_dbus_server_start (h->server);
  h->address = g_strdup (g_dbus_server_get_client_address (h->server));
  g_mutex_lock (&h->lock);
  h->up = TRUE;
  g_cond_signal (&h->ready);
  g_mutex_unlock (&h->lock);
  g_main_loop_run (h->loop);
  g_dbus_server_stop (h->server);
  g_clear_object (&h->server);
  g_clear_object (&h->helper);
  g_clear_object (&h->session);
  g_main_context_pop_thread_default (h->ctx);
  return NULL;
}

static void
test_hostile (gconstpointer data)
{
  Hostile h = { .how = GPOINTER_TO_INT (data) };
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicSim) sim = NULL;
  g_autoptr (VgicdClient) c = NULL;
  g_autoptr (GBytes) record = NULL;
  VgicSimConfig config = { .nr_vcpus = 1, .nr_irqs = 64, .pri_bits = 5, .batch = TRUE };
  VgicSimCounters counters;
  guint32 mpidr;
  GThread *thread;

  h.dir = g_dir_make_tmp ("hostile-XXXXXX", NULL);
  h.ctx = g_main_context_new ();
  h.loop = g_main_loop_new (h.ctx, FALSE);
  thread = g_thread_new ("hostile-vgicd", serve, &h);
  g_mutex_lock (&h.lock);
  while (!h.up)
    g_cond_wait (&h.ready, &h.lock);
  g_mutex_unlock (&h.lock);

  sim = vgic_sim_new (&config, &error);
  g_assert_no_error (error);
  mpidr = vgic_sim_get_mpidr (sim, 0);
  c = vgicd_client_connect (h.address, h.how == DRIP ? DRIP_TIMEOUT_MS : 2000, &error);
  g_assert_no_error (error);
  if (h.how == DRIP)
    {
      guint steps = 0;

      g_assert_true (vgicd_client_attach (c, vgic_sim_get_fd (sim), "vm", NULL, 64, 1,
                                          &mpidr, &error));
      vgic_sim_counters_reset (sim);
      g_assert_false (vgicd_client_save (c, &record, &error));
      g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_UNREACHABLE);
      g_assert_nonnull (strstr (error->message, "the bound on a whole save or load"));
      g_assert_null (record);
      /* Each answer came within the timeout: only the whole save's bound
       * can have ended it, after the steps that fit in it (2 of 2/5 of
       * it each, then the third wait runs out). */
      vgic_sim_counters_get (sim, &counters);
      steps = counters.single_get / 4;
      g_assert_cmpuint (steps, >=, 1);
      g_assert_cmpuint (steps, <=, DRIP_TIMEOUT_MS / DRIP_DELAY_MS);
      goto out;
    }
  if (h.how == RECORD_MAX_NO_WINDOW)
    {
      static const guint8 bytes[RECORD_MAX + 1];

      g_assert_true (vgicd_client_attach (c, vgic_sim_get_fd (sim), "vm", NULL, 64, 1,
                                          &mpidr, &error));
      vgic_sim_counters_reset (sim);
      g_assert_false (vgicd_client_load (c, bytes, sizeof bytes, &error));
      g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_REFUSED);
      g_assert_nonnull (strstr (error->message, "65 bytes, longer than any VM's record"));
      g_assert_cmpint (g_atomic_int_get (&h.loads), ==, 0);	/* not sent */
      g_clear_error (&error);
      /* One that fits goes to vgicd, which answers for it. */
      g_assert_false (vgicd_client_load (c, bytes, RECORD_MAX, &error));
      g_assert_nonnull (strstr (error->message, "this test's vgicd takes no record"));
      g_assert_cmpint (g_atomic_int_get (&h.loads), ==, 1);
      vgic_sim_counters_get (sim, &counters);
      g_assert_cmpuint (counters.single_get + counters.single_set + counters.batch_calls, ==, 0);
      goto out;
    }
  if (h.how == UNSEALED)
    {
      g_assert_false (vgicd_client_attach (c, vgic_sim_get_fd (sim), "vm", NULL, 64, 1,
                                           &mpidr, &error));
      g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_PROTOCOL);
      g_assert_nonnull (strstr (error->message, "sealed"));
      /* What the attach did itself, before vgicd answered: the batch
       * group's probe, reads only (vgic-batch-probe.h).  Not vgicd's. */
      vgic_sim_counters_get (sim, &counters);
      g_assert_cmpuint (counters.single_set, ==, 0);
      vgic_sim_counters_reset (sim);
    }
  else
    {
      g_assert_true (vgicd_client_attach (c, vgic_sim_get_fd (sim), "vm", NULL, 64, 1,
                                          &mpidr, &error));
      static const guint8 some[16];
      const char *want = h.how == BAD_GROUP ? "entry 2: group 4"
                         : h.how == GUARD_NO_RANGES ? "without as many ranges"
                         : h.how == RECORD_TOO_BIG ? "385 bytes of a 384-byte window"
                         : "the window holds 16";

      vgic_sim_counters_reset (sim);
      if (h.how == GUARD_BEYOND || h.how == GUARD_NO_RANGES)
        g_assert_false (vgicd_client_load (c, some, sizeof some, &error));
      else
        g_assert_false (vgicd_client_save (c, &record, &error));
      g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_PROTOCOL);
      g_assert_nonnull (strstr (error->message, want));
      if (h.how != RECORD_TOO_BIG)
        g_assert_nonnull (strstr (error->message, "nothing was run"));
      g_assert_null (record);
    }
  /* Not one register access reached the device. */
  vgic_sim_counters_get (sim, &counters);
  g_assert_cmpuint (counters.single_get + counters.single_set + counters.batch_calls, ==, 0);

out:
  g_main_loop_quit (h.loop);
  g_thread_join (thread);
  g_main_loop_unref (h.loop);
  g_main_context_unref (h.ctx);
  g_free (h.address);
  {
    g_autofree char *sock = g_build_filename (h.dir, "sock", NULL);
    unlink (sock);
    rmdir (h.dir);
  }
  g_free (h.dir);
}

/* A listening socket that never accepts, its backlog filled, in a folder
 * whose name D-Bus addresses escape ("a b%"): the connect reaches it (not
 * "absent"), waits for room until its deadline (at least
 * VGICD_CLIENT_CONNECT_TIMEOUT_MS), and fails, unreachable, saying why. */
static void
test_backlog_never_drains (void)
{
  g_autofree char *top = g_dir_make_tmp ("hostile-XXXXXX", NULL);
  g_autofree char *dir = g_build_filename (top, "a b%", NULL);
  g_autofree char *path = g_build_filename (dir, "sock", NULL);
  g_autofree char *escaped = g_dbus_address_escape_value (path);
  g_autofree char *address = g_strconcat ("unix:path=", escaped, NULL);
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  g_autoptr (GError) error = NULL;
  g_autoptr (GArray) queued = g_array_new (FALSE, FALSE, sizeof (int));
  VgicdClient *c;
  gint64 t0;
  int listener;

  g_assert_cmpint (g_mkdir (dir, 0700), ==, 0);
  g_assert_nonnull (strchr (address, '%'));
  g_assert_cmpuint (strlen (path), <, sizeof sa.sun_path);
  strcpy (sa.sun_path, path);
  listener = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  g_assert_cmpint (listener, >=, 0);
  g_assert_cmpint (bind (listener, (struct sockaddr *) &sa, sizeof sa), ==, 0);
  g_assert_cmpint (listen (listener, 0), ==, 0);
  /* Fill the backlog: connect without waiting until the kernel says it
   * is full. */
  for (;;)
    {
      int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

      g_assert_cmpint (fd, >=, 0);
      if (connect (fd, (struct sockaddr *) &sa, sizeof sa) < 0)
        {
          g_assert_cmpint (errno, ==, EAGAIN);
          close (fd);
          break;
        }
      g_array_append_val (queued, fd);
      g_assert_cmpuint (queued->len, <, 64);
    }
  g_assert_cmpuint (queued->len, >=, 1);

  t0 = g_get_monotonic_time ();
  c = vgicd_client_connect (address, 100, &error);
  g_assert_null (c);
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_UNREACHABLE);
  g_assert_nonnull (strstr (error->message, "backlog"));
  /* It waited: a deadline is never early (a busy host only makes it late,
   * and meson's timeout bounds the other side). */
  g_assert_cmpint (g_get_monotonic_time () - t0, >=, VGICD_CLIENT_CONNECT_TIMEOUT_MS * 1000);
  g_test_message ("%s", error->message);

  for (guint i = 0; i < queued->len; i++)
    close (g_array_index (queued, int, i));
  close (listener);
  unlink (path);
  rmdir (dir);
  rmdir (top);
}

int
main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;

  if (!vgic_sim_supervise_self (&error))
    g_error ("vgic-sim: %s", error->message);
  g_test_init (&argc, &argv, NULL);
  g_test_add_data_func ("/libvgicd/hostile/ctrl-group-in-window", GINT_TO_POINTER (BAD_GROUP),
                        test_hostile);
  g_test_add_data_func ("/libvgicd/hostile/count-beyond-window", GINT_TO_POINTER (BAD_COUNT),
                        test_hostile);
  g_test_add_data_func ("/libvgicd/hostile/guards-beyond-window", GINT_TO_POINTER (GUARD_BEYOND),
                        test_hostile);
  g_test_add_data_func ("/libvgicd/hostile/guards-without-ranges",
                        GINT_TO_POINTER (GUARD_NO_RANGES), test_hostile);
  g_test_add_data_func ("/libvgicd/hostile/record-beyond-window", GINT_TO_POINTER (RECORD_TOO_BIG),
                        test_hostile);
  g_test_add_data_func ("/libvgicd/hostile/unsealed-window", GINT_TO_POINTER (UNSEALED),
                        test_hostile);
  g_test_add_data_func ("/libvgicd/hostile/drip-feeding-steps", GINT_TO_POINTER (DRIP),
                        test_hostile);
  g_test_add_data_func ("/libvgicd/hostile/record-past-record-max-not-sent",
                        GINT_TO_POINTER (RECORD_MAX_NO_WINDOW), test_hostile);
  g_test_add_func ("/libvgicd/hostile/backlog-never-drains", test_backlog_never_drains);
  return g_test_run ();
}
