/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-vgicd.c - libvgicd + the real vgicd + a real system dbus-daemon with
 * the project's policy, against vgic-sim behind real ioctls.  This program
 * plays QEMU; the window and the vGIC fd really cross process boundaries.
 */
#define _GNU_SOURCE /* prlimit */
#include <errno.h>
#include <math.h>
#include <gio/gunixfdlist.h>
#include <grp.h>
#include <pwd.h>
#include <sys/resource.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <poll.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libvgicd.h"
#include "vgic-direct.h"
#include "vgic-exec.h"
#include "vgic-plan.h"
#include "vgic-record.h"
#include "vgic-sim.h"
#include "vgicd-harness.h"
#include "vgicd/protocol.h"

typedef VgicEntry Entry;

static const char *vgicd_bin;
static const char *policy;

typedef struct {
  guint32 vcpus, irqs;
  gboolean its;
  guint pri_bits;
} Shape;

static VgicSim *
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

static VgicdClient *
attach_uuid (VgicdHarness *h, VgicSim *sim, const Shape *s, const char *name,
             const char *uuid)
{
  g_autoptr (GError) error = NULL;
  g_autofree guint32 *mpidrs = g_new (guint32, s->vcpus);
  VgicdClient *c = vgicd_client_connect (h->address, 0, &error);

  g_assert_no_error (error);
  for (guint i = 0; i < s->vcpus; i++)
    mpidrs[i] = vgic_sim_get_mpidr (sim, i);
  vgicd_client_attach (c, vgic_sim_get_fd (sim), name, uuid, s->irqs, s->vcpus, mpidrs,
                       &error);
  g_assert_no_error (error);
  return c;
}

static VgicdClient *
attach (VgicdHarness *h, VgicSim *sim, const Shape *s, const char *name)
{
  return attach_uuid (h, sim, s, name, "0f3c1a2e-0000-4000-8000-000000000001");
}

/* The vGIC core's shape of @sim (its vCPUs' affinities, @s's IRQs). */
static VgicShape *
sim_shape (VgicSim *sim, const Shape *s)
{
  g_autofree guint32 *mpidrs = g_new (guint32, s->vcpus);
  g_autoptr (GError) error = NULL;
  VgicShape *shape;

  for (guint i = 0; i < s->vcpus; i++)
    mpidrs[i] = vgic_sim_get_mpidr (sim, i);
  shape = vgic_shape_new (s->irqs, s->vcpus, mpidrs, &error);
  g_assert_no_error (error);
  return shape;
}

/* What a save for vgicd's record can see of @sim (@routes; else what
 * QEMU's accesses see: no route of an SPI above nr_irqs / 2), as a record
 * (one-by-one reads, bypassing vgicd); *@accesses gets the number of reads
 * that save makes. */
static GBytes *
state_of (VgicSim *sim, const Shape *s, gboolean routes, guint *accesses)
{
  g_autoptr (VgicShape) shape = sim_shape (sim, s);
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

static GBytes *
visible_state_n (VgicSim *sim, const Shape *s, guint *accesses)
{
  return state_of (sim, s, TRUE, accesses);
}

static GBytes *
visible_state (VgicSim *sim, const Shape *s)
{
  return state_of (sim, s, TRUE, NULL);
}

static GBytes *
qemu_visible_state (VgicSim *sim, const Shape *s)
{
  return state_of (sim, s, FALSE, NULL);
}

static void
assert_untouched (VgicSim *sim, VgicSimState *before)
{
  g_autoptr (VgicSimState) after = vgic_sim_state_get (sim);
  g_autoptr (GString) diff = g_string_new (NULL);

  if (!vgic_sim_state_equal (before, after, diff))
    g_error ("destination changed: %s", diff->str);
}

static VgicdHarness *
harness (const char *mode)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *conf = g_strdup_printf ("Mode=%s\nAllowUsers=root\n", mode);
  VgicdHarness *h = vgicd_harness_start (vgicd_bin, policy, conf, &error);

  g_assert_no_error (error);
  return h;
}

/* ------------------------------------------------------------------ */

typedef struct {
  const char *mode;
  gboolean kernel_batch;
  gboolean expect_batched;
} ModeCase;

static const Shape shapes[] = {
  { 1, 64, FALSE, 5 },
  { 4, 128, TRUE, 7 },
  { 16, 288, TRUE, 6 },
  { 64, 992, TRUE, 5 },
};

typedef struct {
  VgicdClient *c;
  GBytes *record;
  GBytes *saved;
} LoadArgs;

/* Load, then save at once. */
static gpointer
load_thread (gpointer data)
{
  LoadArgs *a = data;
  g_autoptr (GError) error = NULL;

  if (vgicd_client_load (a->c, g_bytes_get_data (a->record, NULL),
                         g_bytes_get_size (a->record), &error))
    vgicd_client_save (a->c, &a->saved, &error);
  if (error)
    g_printerr ("load_thread: %s\n", error->message);
  return NULL;
}

/* Save through vgicd, load into a fresh VM through vgicd: the destination
 * reads back exactly what the source held, by the expected path. */
static void
test_round_trip (gconstpointer data)
{
  const ModeCase *mc = data;
  g_autoptr (VgicdHarness) h = harness (mc->mode);

  for (guint i = 0; i < G_N_ELEMENTS (shapes); i++)
    {
      const Shape *s = &shapes[i];
      g_autoptr (VgicSim) src = make_sim (s, mc->kernel_batch);
      g_autoptr (VgicSim) dst = make_sim (s, mc->kernel_batch);
      g_autoptr (VgicdClient) cs = NULL, cd = NULL;
      g_autoptr (GBytes) record = NULL, want = NULL, got = NULL;
      g_autoptr (GError) error = NULL;
      VgicdClientStats st;
      guint accesses;

      g_autoptr (GBytes) again = NULL;

      vgic_sim_randomize (src, 100 + i);
      cs = attach (h, src, s, "src");
      cd = attach (h, dst, s, "dst");
      want = visible_state_n (src, s, &accesses);

      /* Each shape differs from the one before in its LPIs or its APRs, so
       * the first save reads round 2 as the last save's shape (more APRs
       * than the vCPU has fail in the kernel; fewer, or other LPIs, are
       * found wrong by round 1's values), then again as it should be. */
      g_assert_true (vgicd_client_save (cs, &record, &error));
      g_assert_no_error (error);
      vgicd_client_get_stats (cs, &st);
      g_assert_cmpint (st.batched, ==, mc->expect_batched);
      g_assert_cmpuint (st.entries, >, accesses);
      if (mc->expect_batched)
        g_assert_cmpuint (st.ioctls, <=, 3);
      else /* and the read of an APR the vCPU lacks, if the guess had more */
        g_assert_cmpuint (st.ioctls - st.entries, <=, 1);

      /* The next save of this shape guesses right: QEMU's accesses, one
       * list, and the same record. */
      g_assert_true (vgicd_client_save (cs, &again, &error));
      g_assert_no_error (error);
      g_assert_true (g_bytes_equal (record, again));
      vgicd_client_get_stats (cs, &st);
      g_assert_cmpuint (st.entries, ==, accesses);
      if (mc->expect_batched)
        g_assert_cmpuint (st.ioctls, ==, (accesses + KVM_VGIC_BATCH_MAX_ENTRIES - 1) /
                                             KVM_VGIC_BATCH_MAX_ENTRIES);
      else
        g_assert_cmpuint (st.ioctls, ==, st.entries);

      /* Load, then save at once: libvgicd does not wait for the answer to
       * a load's last report, and must take it before its next call (else
       * that answer, done, would be taken for the save's).  vgicd is
       * stopped while they start, so that the answer comes late. */
      {
        LoadArgs a = { cd, record, NULL };
        GThread *t;

        g_assert_cmpint (kill (h->vgicd_pid, SIGSTOP), ==, 0);
        t = g_thread_new ("load", load_thread, &a);
        g_usleep (100 * 1000);
        g_assert_cmpint (kill (h->vgicd_pid, SIGCONT), ==, 0);
        g_thread_join (t);
        g_assert_nonnull (a.saved);
        g_assert_true (g_bytes_equal (a.saved, record));
        g_bytes_unref (a.saved);
      }
      got = visible_state (dst, s);
      g_assert_true (g_bytes_equal (want, got));
      g_assert_true (g_bytes_equal (want, record));
    }

  /* libvgicd asked for the step channel, and vgicd gave it. */
  {
    g_autofree char *log = NULL;
    g_assert_true (g_file_get_contents (h->log_path, &log, NULL, NULL));
    g_assert_nonnull (strstr (log, "VM src: attached: 1 vCPUs, 64 IRQs, kernel batch"));
    g_assert_nonnull (strstr (log, "step channel, pid"));
    g_assert_null (strstr (log, "D-Bus steps"));
    /* Every report was taken as it was made. */
    g_assert_null (strstr (log, "refusing its results"));
    g_assert_null (strstr (log, "WARNING"));
  }
}

/* A peer of protocol 1 (libvgicd before guards, the record in the window
 * and the step channel): plain D-Bus calls, no features.  vgicd must serve
 * it as before: the record in the done step, the destination's TYPER
 * reads as a step of their own.  The steps run here one register per
 * ioctl, through the executor, on the sims. */
typedef struct {
  GDBusConnection *conn;
  char *path;
  Entry *window;
  gsize size;
  guint32 entries;
  int channel;		/* the step channel, when asked for */
} OldPeer;

static void
peer_attach (OldPeer *p, VgicdHarness *h, VgicSim *sim, const Shape *s, const char *name,
             const char *const *features)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GVariant) reply = NULL, info = NULL;
  g_autoptr (GUnixFDList) fds = NULL;
  g_autofree guint32 *mpidrs = g_new (guint32, s->vcpus);
  GVariantBuilder vm;
  const char *path;
  gint32 handle;
  int fd;

  p->conn = g_dbus_connection_new_for_address_sync (h->address,
                                                    G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT,
                                                    NULL, NULL, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < s->vcpus; i++)
    mpidrs[i] = vgic_sim_get_mpidr (sim, i);
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

static void
old_peer_attach (OldPeer *p, VgicdHarness *h, VgicSim *sim, const Shape *s, const char *name)
{
  peer_attach (p, h, sim, s, name, NULL);
}

static void
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
/* When not 0, old_peer_run() reports this error for the first step
 * instead of running it (done 0): a peer that says anything. */
static gint32 report_error;

static GVariant *
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
      if (report_error)
        {
          r = (VgicExecReport) { .error = report_error };
          report_error = 0;
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

static void
test_protocol1_peer (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[2];
  g_autoptr (VgicSim) src = make_sim (s, FALSE);
  g_autoptr (VgicSim) dst = make_sim (s, FALSE);
  g_autoptr (GVariant) done = NULL, loaded = NULL, bytes = NULL;
  g_autoptr (GBytes) record = NULL, want = NULL, got = NULL;
  OldPeer ps = { 0 }, pd = { 0 };
  const char *action = NULL;
  guint steps;

  vgic_sim_randomize (src, 31);
  old_peer_attach (&ps, h, src, s, "old-src");
  old_peer_attach (&pd, h, dst, s, "old-dst");

  done = old_peer_run (&ps, src, "Save", NULL, &steps);
  g_assert_true (g_variant_lookup (done, "action", "&s", &action));
  g_assert_cmpstr (action, ==, "done");
  bytes = g_variant_lookup_value (done, "record", G_VARIANT_TYPE_BYTESTRING);
  g_assert_nonnull (bytes);
  record = g_variant_get_data_as_bytes (bytes);
  want = visible_state (src, s);
  g_assert_true (g_bytes_equal (want, record));

  loaded = old_peer_run (&pd, dst, "Load",
                         g_variant_new ("(@ay)", g_variant_new_from_bytes (G_VARIANT_TYPE_BYTESTRING,
                                                                          record, TRUE)),
                         &steps);
  g_assert_true (g_variant_lookup (loaded, "action", "&s", &action));
  g_assert_cmpstr (action, ==, "done");
  g_assert_cmpuint (steps, ==, 2);	/* the TYPER reads, then the writes */
  got = visible_state (dst, s);
  g_assert_true (g_bytes_equal (want, got));
  old_peer_clear (&ps);
  old_peer_clear (&pd);
}

/* A peer that sends the step channel what no method is: vgicd closes the
 * channel and says why, and nothing else changes (vgicd serves the next
 * peer, and this one's D-Bus session still works). */
/* A name with control characters (a forged log line, a terminal escape),
 * one over 256 bytes, and a uuid that is not one are refused at Attach,
 * with the reason; a 256-byte name of printable characters, spaces and
 * non-ASCII ones included, is not. */
static void
test_attach_names (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) sim = make_sim (s, FALSE);
  g_autofree guint32 *mpidrs = g_new (guint32, s->vcpus);
  g_autofree char *long_name = g_strnfill (257, 'n');
  const struct { const char *name, *uuid, *why; } bad[] = {
    { "web-1\nvgicd[1]: VM db: load failed", NULL, "printable" },
    { "web-\033[2J", NULL, "printable" },
    { long_name, NULL, "at most 256 bytes" },
    { "web-1", "../../etc/passwd", "is not a UUID" },
  };

  for (guint i = 0; i < s->vcpus; i++)
    mpidrs[i] = vgic_sim_get_mpidr (sim, i);
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (VgicdClient) c = vgicd_client_connect (h->address, 0, &error);

      g_assert_no_error (error);
      g_assert_false (vgicd_client_attach (c, vgic_sim_get_fd (sim), bad[i].name, bad[i].uuid,
                                           s->irqs, s->vcpus, mpidrs, &error));
      g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_INVALID);
      g_assert_nonnull (strstr (error->message, bad[i].why));
    }
  {
    /* 256 bytes: UTF-8 and spaces, then ASCII up to the limit. */
    g_autofree char *ok_name = g_strdup_printf ("h\u00f4te web 1 %s", long_name);
    g_autoptr (VgicdClient) c = NULL;

    ok_name[256] = '\0';
    c = attach (h, sim, s, ok_name);	/* asserts that it attached */
  }
}

/* The door's bounds, against a real vgicd: another process (a child, so
 * its own pid) opens 40 connections and says nothing.  12 are admitted
 * (MaxHandshakesPerProcess=12), the other 28 are closed at once and
 * counted as refused; meanwhile a QEMU of another process attaches and
 * saves; and the silent 12 are closed when their handshake time
 * (HandshakeTimeout=1500) is up, which the child sees as end of file on
 * every one (it waits up to 30 s). */
#define SILENT 40
static void
test_door_bounds (void)
{
  g_autoptr (GError) herr = NULL;
  /* The door's bounds are keys: 12 per process here, 1.5 s each. */
  g_autoptr (VgicdHarness) h =
    vgicd_harness_start (vgicd_bin, policy,
                         "Mode=auto\nAllowUsers=root\nMaxHandshakesPerProcess=12\n"
                         "HandshakeTimeout=1500\n", &herr);
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) sim = make_sim (s, FALSE);
  g_autoptr (VgicdClient) c = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *log = NULL;
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  int ready[2], status;
  char byte;
  pid_t child;

  g_assert_no_error (herr);
  g_assert_cmpuint (strlen (h->socket_path), <, sizeof sa.sun_path);
  strcpy (sa.sun_path, h->socket_path);
  g_assert_cmpint (pipe (ready), ==, 0);
  child = fork ();
  g_assert_cmpint (child, >=, 0);
  if (child == 0)
    {
      /* Only system calls here: the parent has threads. */
      struct pollfd fds[SILENT];
      int open = SILENT;

      for (int i = 0; i < SILENT; i++)
        {
          fds[i] = (struct pollfd) { .fd = socket (AF_UNIX, SOCK_STREAM, 0), .events = POLLIN };
          if (fds[i].fd < 0 || connect (fds[i].fd, (struct sockaddr *) &sa, sizeof sa) < 0)
            _exit (2);
        }
      if (write (ready[1], "r", 1) != 1)
        _exit (2);
      while (open > 0)
        {
          int n = poll (fds, SILENT, 30000);

          if (n <= 0)
            _exit (1);	/* some still open after 30 s */
          for (int i = 0; i < SILENT; i++)
            if (fds[i].fd >= 0 && fds[i].revents)
              {
                if (read (fds[i].fd, &byte, 1) > 0)
                  _exit (3);	/* vgicd said something */
                close (fds[i].fd);
                fds[i].fd = -1;
                open--;
              }
        }
      _exit (0);
    }
  g_assert_cmpint (read (ready[0], &byte, 1), ==, 1);
  close (ready[0]);
  close (ready[1]);
  /* Another process's QEMU is not kept out. */
  c = attach (h, sim, s, "after-the-silent");
  g_assert_true (vgicd_client_save (c, &record, &error));
  g_assert_no_error (error);
  g_assert_cmpint (waitpid (child, &status, 0), ==, child);
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, 0);
  g_assert_cmpuint (vgicd_harness_stat (h, "refused"), ==, SILENT - 12);
  g_assert_true (g_file_get_contents (h->log_path, &log, NULL, NULL));
  g_assert_nonnull (strstr (log, "too many connections of this process in their handshake"));
  g_assert_nonnull (strstr (log, "sent nothing within 1500 ms; closed"));
  /* One refusal line for the 28: the rest were counted, not logged. */
  g_assert_null (strstr (strstr (log, "too many connections of this process") + 1,
                         "too many connections of this process"));
}

/* A step report's error is the peer's word: any int32, INT32_MIN too
 * (whose negation is undefined, which UBSan would catch).  The save fails
 * with the number told as it is, and the session serves the next one. */
static void
test_report_error_not_errno (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) src = make_sim (s, FALSE);
  g_autoptr (GVariant) failed = NULL, done = NULL;
  const char *action = NULL, *message = NULL;
  OldPeer p = { 0 };
  guint steps;

  vgic_sim_randomize (src, 7);
  old_peer_attach (&p, h, src, s, "liar");
  report_error = G_MININT32;
  failed = old_peer_run (&p, src, "Save", NULL, &steps);
  g_assert_true (g_variant_lookup (failed, "action", "&s", &action));
  g_assert_cmpstr (action, ==, "fail");
  g_assert_true (g_variant_lookup (failed, "message", "&s", &message));
  g_assert_nonnull (strstr (message, "error -2147483648, which is not a kernel errno"));
  done = old_peer_run (&p, src, "Save", NULL, &steps);
  g_assert_true (g_variant_lookup (done, "action", "&s", &action));
  g_assert_cmpstr (action, ==, "done");
  old_peer_clear (&p);
}

static void
test_channel_refuses_garbage (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  static const char *const features[] = { "channel", "record-window", NULL };
  static const char *const channel_only[] = { "channel", NULL };
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) src = make_sim (s, FALSE);
  g_autoptr (VgicSim) other = make_sim (s, FALSE);
  g_autoptr (VgicdClient) c = NULL;
  g_autoptr (GVariant) done = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *log = NULL;
  static const guint32 bad[4] = { 99, 0, 0, 0 };
  const char *action = NULL;
  OldPeer p = { 0 };
  guint8 byte;
  guint steps;

  /* No channel without records in the window (peer_attach checks). */
  peer_attach (&p, h, src, s, "no-channel", channel_only);
  old_peer_clear (&p);

  peer_attach (&p, h, src, s, "garbage", features);
  g_assert_cmpint (send (p.channel, bad, sizeof bad, MSG_NOSIGNAL), ==, sizeof bad);
  /* vgicd closed its end: no answer, end of file. */
  g_assert_cmpint (recv (p.channel, &byte, 1, 0), ==, 0);
  g_assert_true (g_file_get_contents (h->log_path, &log, NULL, NULL));
  g_assert_nonnull (strstr (log, "VM garbage: closing the step channel: an unknown method"));

  done = old_peer_run (&p, src, "Save", NULL, &steps);
  g_assert_true (g_variant_lookup (done, "action", "&s", &action));
  g_assert_cmpstr (action, ==, "done");
  old_peer_clear (&p);

  c = attach (h, other, s, "next");
  g_assert_true (vgicd_client_save (c, &record, &error));
  g_assert_no_error (error);
}

/* A peer that sends step-channel requests and never reads an answer (a
 * compromised QEMU): vgicd must not wait on it.  It closes that channel
 * once the answers fill the socket, says why, and serves the next VM. */
static void
test_channel_peer_does_not_read (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  static const char *const features[] = { "channel", "record-window", NULL };
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) src = make_sim (s, FALSE);
  g_autoptr (VgicSim) other = make_sim (s, FALSE);
  g_autoptr (VgicdClient) c = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *log = NULL;
  /* Save: the header, then "()" (one byte). */
  const guint8 save[9] = { VGICD_CHANNEL_SAVE };
  OldPeer p = { 0 };
  guint sent = 0, i;

  peer_attach (&p, h, src, s, "deaf", features);
  for (i = 0; i < 20000; i++)
    {
      if (send (p.channel, save, sizeof save, MSG_NOSIGNAL | MSG_DONTWAIT) == sizeof save)
        sent++;
      else if (errno == EAGAIN)
        g_usleep (1000);	/* vgicd is reading: let it */
      else
        break;	/* EPIPE or ECONNRESET: vgicd closed its end */
    }
  g_test_message ("%u requests sent before vgicd closed the channel", sent);
  g_assert_cmpuint (i, <, 20000);
  g_assert_true (errno == EPIPE || errno == ECONNRESET);
  g_assert_true (g_file_get_contents (h->log_path, &log, NULL, NULL));
  g_assert_nonnull (strstr (log, "VM deaf: closing the step channel: the peer sends requests "
                                 "and does not read the answers"));
  c = attach (h, other, s, "next");
  g_assert_true (vgicd_client_save (c, &record, &error));
  g_assert_no_error (error);
  old_peer_clear (&p);
}

/* The system bus goes away (restarted, or it dropped vgicd): vgicd says
 * so and keeps serving its QEMUs, the attached one and a new one.  GDBus's
 * default, exiting the process, would have ended every session. */
static void
test_bus_gone (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) src = make_sim (s, FALSE);
  g_autoptr (VgicSim) other = make_sim (s, FALSE);
  g_autoptr (VgicdClient) c = NULL, c2 = NULL;
  g_autoptr (GBytes) record = NULL, record2 = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *log = NULL;

  c = attach (h, src, s, "before");
  kill (h->dbus_pid, SIGTERM);
  g_assert_cmpint (waitpid (h->dbus_pid, NULL, 0), ==, h->dbus_pid);
  g_spawn_close_pid (h->dbus_pid);
  h->dbus_pid = 0;
  for (int i = 0; i < 100; i++)
    {
      g_clear_pointer (&log, g_free);
      g_assert_true (g_file_get_contents (h->log_path, &log, NULL, NULL));
      if (strstr (log, "lost the system bus"))
        break;
      g_usleep (50000);
    }
  g_assert_nonnull (strstr (log, "lost the system bus"));
  g_assert_cmpint (kill (h->vgicd_pid, 0), ==, 0);
  g_assert_true (vgicd_client_save (c, &record, &error));
  g_assert_no_error (error);
  c2 = attach (h, other, s, "after");
  g_assert_true (vgicd_client_save (c2, &record2, &error));
  g_assert_no_error (error);
}

/* MaxSessions= and MaxSessionsPerUser=: the attach over the limit is
 * refused with the reason (QEMU then keeps its own path), counted, and a
 * session that ends makes room again. */
static void
attach_refused (VgicdHarness *h, VgicSim *sim, const Shape *s, const char *why)
{
  g_autoptr (GError) error = NULL;
  g_autofree guint32 *mpidrs = g_new (guint32, s->vcpus);
  g_autoptr (VgicdClient) c = vgicd_client_connect (h->address, 0, &error);

  g_assert_no_error (error);
  for (guint i = 0; i < s->vcpus; i++)
    mpidrs[i] = vgic_sim_get_mpidr (sim, i);
  g_assert_false (vgicd_client_attach (c, vgic_sim_get_fd (sim), "one-too-many", NULL, s->irqs,
                                       s->vcpus, mpidrs, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DENIED);
  g_assert_nonnull (strstr (error->message, why));
}

/* vgicd started from a shell rather than by its unit: a soft descriptor
 * limit of 1024.  It serves several VMs at once (the old reservation, for
 * the largest MaxHandshakes= there could be, left room for one, and the
 * QEMU tier's live migrations, source and destination attached together,
 * went one register per ioctl).  Then, its limit cut to 200 (prlimit, as
 * a LimitNOFILE=200 would set it): room for 2 sessions beside 128
 * handshakes, and the third attach is refused with the reason. */
static void
test_fd_limit_outside_systemd (void)
{
  const Shape *s = &shapes[0];
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdHarness) h = NULL;
  g_autoptr (VgicSim) sim = make_sim (s, TRUE);
  struct rlimit mine, shell, tight = { 200, 200 };
  VgicdClient *c[4] = { NULL };

  g_assert_cmpint (getrlimit (RLIMIT_NOFILE, &mine), ==, 0);
  shell = mine;
  shell.rlim_cur = MIN (mine.rlim_max, 1024);
  g_assert_cmpint (setrlimit (RLIMIT_NOFILE, &shell), ==, 0);
  h = vgicd_harness_start (vgicd_bin, policy, "Mode=auto\nAllowUsers=root\n", &error);
  g_assert_cmpint (setrlimit (RLIMIT_NOFILE, &mine), ==, 0);
  g_assert_no_error (error);
  for (guint i = 0; i < G_N_ELEMENTS (c); i++)
    {
      g_autofree char *name = g_strdup_printf ("vm-%u", i);

      c[i] = attach (h, sim, s, name);
    }
  for (guint i = 0; i < G_N_ELEMENTS (c); i++)
    g_clear_pointer (&c[i], vgicd_client_free);
  while (vgicd_harness_stat (h, "sessions") > 0)
    g_usleep (10000);

  g_assert_cmpint (prlimit (h->vgicd_pid, RLIMIT_NOFILE, &tight, NULL), ==, 0);
  c[0] = attach (h, sim, s, "one");
  c[1] = attach (h, sim, s, "two");
  attach_refused (h, sim, s, "as many as its file descriptor limit allows (LimitNOFILE=)");
  for (guint i = 0; i < G_N_ELEMENTS (c); i++)
    g_clear_pointer (&c[i], vgicd_client_free);
}

static void
test_session_limits (void)
{
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) sim = make_sim (s, FALSE);
  g_autoptr (GError) error = NULL;
  VgicdClient *c[3] = { NULL };

  {
    g_autoptr (VgicdHarness) h =
      vgicd_harness_start (vgicd_bin, policy, "Mode=auto\nAllowUsers=root\nMaxSessions=2\n",
                           &error);
    g_assert_no_error (error);
    c[0] = attach (h, sim, s, "one");
    c[1] = attach (h, sim, s, "two");
    attach_refused (h, sim, s, "vgicd has 2 sessions, its limit (MaxSessions=2)");
    g_assert_cmpuint (vgicd_harness_stat (h, "refused"), ==, 1);
    g_clear_pointer (&c[1], vgicd_client_free);
    /* The session goes with its connection, which vgicd sees close. */
    for (int i = 0; i < 100 && !c[2]; i++)
      {
        g_autoptr (GError) e2 = NULL;
        g_autofree guint32 *mpidrs = g_new (guint32, s->vcpus);

        c[2] = vgicd_client_connect (h->address, 0, &e2);
        g_assert_no_error (e2);
        for (guint v = 0; v < s->vcpus; v++)
          mpidrs[v] = vgic_sim_get_mpidr (sim, v);
        if (!vgicd_client_attach (c[2], vgic_sim_get_fd (sim), "three", NULL, s->irqs, s->vcpus,
                                  mpidrs, &e2))
          {
            g_clear_pointer (&c[2], vgicd_client_free);
            g_usleep (20000);
          }
      }
    g_assert_nonnull (c[2]);
    for (guint i = 0; i < G_N_ELEMENTS (c); i++)
      g_clear_pointer (&c[i], vgicd_client_free);
  }
  {
    g_autoptr (VgicdHarness) h =
      vgicd_harness_start (vgicd_bin, policy,
                           "Mode=auto\nAllowUsers=root\nMaxSessionsPerUser=1\n", &error);
    g_assert_no_error (error);
    c[0] = attach (h, sim, s, "one");
    attach_refused (h, sim, s, "uid 0 has 1 sessions, its limit (MaxSessionsPerUser=1)");
    g_clear_pointer (&c[0], vgicd_client_free);
  }
  {
    /* vCPUs per VM: the 4-vCPU VM is refused, a 1-vCPU one is not. */
    g_autoptr (VgicdHarness) h =
      vgicd_harness_start (vgicd_bin, policy, "Mode=auto\nAllowUsers=root\nMaxVcpus=2\n",
                           &error);
    g_autoptr (VgicSim) small = make_sim (&shapes[0], FALSE);

    g_assert_no_error (error);
    attach_refused (h, sim, s, "the VM has 4 vCPUs, more than this host's limit (MaxVcpus=2)");
    c[0] = attach (h, small, &shapes[0], "small");
    g_assert_cmpuint (vgicd_harness_stat (h, "refused"), ==, 1);
    g_clear_pointer (&c[0], vgicd_client_free);
  }
  {
    /* Memory: 64-vCPU VMs attach until their sessions would pass 16 MiB;
     * the next is refused with the figures, and vgicd serves the rest. */
    const Shape *big = &shapes[3];
    g_autoptr (VgicdHarness) h =
      vgicd_harness_start (vgicd_bin, policy,
                           "Mode=auto\nAllowUsers=root\nMaxSessionMemory=16\n", &error);
    g_autoptr (VgicSim) bsim = make_sim (big, TRUE);
    g_autoptr (GPtrArray) clients = g_ptr_array_new_with_free_func ((GDestroyNotify) vgicd_client_free);
    g_autoptr (GBytes) record = NULL;

    g_assert_no_error (error);
    for (;;)
      {
        g_autoptr (GError) e2 = NULL;
        g_autofree guint32 *mpidrs = g_new (guint32, big->vcpus);
        VgicdClient *cl = vgicd_client_connect (h->address, 0, &e2);

        g_assert_no_error (e2);
        for (guint v = 0; v < big->vcpus; v++)
          mpidrs[v] = vgic_sim_get_mpidr (bsim, v);
        if (!vgicd_client_attach (cl, vgic_sim_get_fd (bsim), "big", NULL, big->irqs,
                                  big->vcpus, mpidrs, &e2))
          {
            g_test_message ("after %u sessions: %s", clients->len, e2->message);
            g_assert_error (e2, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DENIED);
            g_assert_nonnull (strstr (e2->message, "(MaxSessionMemory=16 MiB)"));
            vgicd_client_free (cl);
            break;
          }
        g_ptr_array_add (clients, cl);
        g_assert_cmpuint (clients->len, <, 200);
      }
    g_assert_cmpuint (clients->len, >, 1);
    g_assert_true (vgicd_client_save (g_ptr_array_index (clients, 0), &record, &error));
    g_assert_no_error (error);
  }
}

/* Mode off: saves are declined (QEMU keeps its own path); loads still serve. */
static void
test_mode_off (void)
{
  g_autoptr (VgicdHarness) on = harness ("auto");
  g_autoptr (VgicdHarness) off = harness ("off");
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) src = make_sim (s, TRUE);
  g_autoptr (VgicSim) dst = make_sim (s, TRUE);
  g_autoptr (VgicdClient) c_on = NULL, c_off = NULL, c_dst = NULL;
  g_autoptr (GBytes) record = NULL, none = NULL;
  g_autoptr (GError) error = NULL;

  vgic_sim_randomize (src, 5);
  c_on = attach (on, src, s, "src");
  c_off = attach (off, src, s, "src");
  g_assert_false (vgicd_client_save (c_off, &none, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DECLINED);
  g_assert_null (none);
  g_clear_error (&error);

  g_assert_true (vgicd_client_save (c_on, &record, &error));
  c_dst = attach (off, dst, s, "dst");
  g_assert_true (vgicd_client_load (c_dst, g_bytes_get_data (record, NULL),
                                    g_bytes_get_size (record), &error));
  g_assert_no_error (error);
}

/* A record that does not fit its VM changes nothing. */
static void
test_refused_records_change_nothing (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape four = { 4, 128, TRUE, 5 }, eight = { 8, 128, TRUE, 5 };
  g_autoptr (VgicSim) src = make_sim (&four, TRUE);
  g_autoptr (VgicSim) dst = make_sim (&eight, TRUE);
  g_autoptr (VgicSim) dst4 = make_sim (&four, TRUE);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL, cd4 = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicSimState) before = NULL, before4 = NULL;
  g_autofree guint8 *bad = NULL;
  gsize len;

  /* dst (8 vCPUs) holds state of its own; dst4 is a fresh VM, as a real
   * destination is, so that the correct record loads into it at the end. */
  vgic_sim_randomize (src, 9);
  vgic_sim_randomize (dst, 10);
  cs = attach (h, src, &four, "src");
  cd = attach (h, dst, &eight, "dst8");
  cd4 = attach (h, dst4, &four, "dst4");
  g_assert_true (vgicd_client_save (cs, &record, &error));
  len = g_bytes_get_size (record);

  /* 4 vCPUs into 8. */
  before = vgic_sim_state_get (dst);
  vgic_sim_counters_reset (dst);
  g_assert_false (vgicd_client_load (cd, g_bytes_get_data (record, NULL), len, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_REFUSED);
  g_assert_nonnull (strstr (error->message, "4 vCPUs but this VM has 8"));
  g_clear_error (&error);
  assert_untouched (dst, before);

  /* Truncated, then one flipped byte, into a VM of the right shape. */
  before4 = vgic_sim_state_get (dst4);
  g_assert_false (vgicd_client_load (cd4, g_bytes_get_data (record, NULL), len - 7, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_REFUSED);
  g_clear_error (&error);
  bad = g_memdup2 (g_bytes_get_data (record, NULL), len);
  bad[len / 2] ^= 0x40;
  g_assert_false (vgicd_client_load (cd4, bad, len, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_REFUSED);
  g_assert_nonnull (strstr (error->message, "checksum"));
  g_clear_error (&error);
  assert_untouched (dst4, before4);

  /* The sessions stay usable. */
  vgicd_client_load (cd4, g_bytes_get_data (record, NULL), len, &error);
  g_assert_no_error (error);
}

/* A destination that fails the checks QEMU makes before it writes (here:
 * no ITS, so no LPIs, where the source had them) is refused by the guards
 * libvgicd runs: vgicd names the difference, and nothing is written. */
static void
test_guards_refuse_destination (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape with = { 4, 128, TRUE, 5 }, without = { 4, 128, FALSE, 5 };
  g_autoptr (VgicSim) src = make_sim (&with, TRUE);
  g_autoptr (VgicSim) dst = make_sim (&without, TRUE);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicSimState) before = NULL;
  VgicdClientStats st;

  vgic_sim_randomize (src, 21);
  vgic_sim_randomize (dst, 22);
  cs = attach (h, src, &with, "src");
  cd = attach (h, dst, &without, "dst");
  g_assert_true (vgicd_client_save (cs, &record, &error));

  before = vgic_sim_state_get (dst);
  vgic_sim_counters_reset (dst);
  g_assert_false (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                     g_bytes_get_size (record), &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_REFUSED);
  g_assert_nonnull (strstr (error->message, "ITS configuration"));
  g_assert_nonnull (strstr (error->message, "nothing written"));
  g_clear_error (&error);
  /* The guard reads ran (QEMU's three, and each vCPU's ICC_CTLR_EL1), and
   * nothing else. */
  vgicd_client_get_stats (cd, &st);
  g_assert_cmpuint (st.entries, ==, 3 + 4);
  assert_untouched (dst, before);
}

/* Row 8: a record from a host whose GIC implements more priority bits
 * than the destination's.  The kernel refuses such an ICC_CTLR_EL1 when it
 * is written, which used to be after the distributor and every
 * redistributor: the destination was left partly written.  The guards now
 * read each vCPU's ICC_CTLR_EL1 first, and nothing is written. */
static void
test_guards_refuse_cpu_interface (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape seven = { 4, 128, TRUE, 7 }, five = { 4, 128, TRUE, 5 };
  g_autoptr (VgicSim) src = make_sim (&seven, TRUE);
  g_autoptr (VgicSim) dst = make_sim (&five, TRUE);
  g_autoptr (VgicSim) dst7 = make_sim (&seven, TRUE);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL, cd7 = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicSimState) before = NULL;
  VgicdClientStats st;

  /* Randomized, the source's vCPUs use 5 to 7 priority bits; seed 5 gives
   * vCPU 0 more than 5 (asserted through the message below). */
  vgic_sim_randomize (src, 5);
  cs = attach (h, src, &seven, "src");
  cd = attach (h, dst, &five, "dst");
  cd7 = attach (h, dst7, &seven, "dst7");
  g_assert_true (vgicd_client_save (cs, &record, &error));

  before = vgic_sim_state_get (dst);
  vgic_sim_counters_reset (dst);
  g_assert_false (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                     g_bytes_get_size (record), &error));
  g_test_message ("%s", error->message);
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_REFUSED);
  g_assert_nonnull (strstr (error->message, "ICC_CTLR_EL1"));
  g_assert_nonnull (strstr (error->message, "priority bits"));
  g_assert_nonnull (strstr (error->message, "nothing written"));
  g_clear_error (&error);
  vgicd_client_get_stats (cd, &st);
  g_assert_cmpuint (st.entries, ==, 3 + 4);
  assert_untouched (dst, before);

  /* The same record loads into a destination with as many bits. */
  g_assert_true (vgicd_client_load (cd7, g_bytes_get_data (record, NULL),
                                    g_bytes_get_size (record), &error));
  g_assert_no_error (error);

  /* A peer without guards: vgicd reads the same registers in a step of
   * their own, judges them, and ends the load before any write. */
  {
    g_autoptr (VgicSim) old_dst = make_sim (&five, FALSE);
    g_autoptr (VgicSimState) old_before = vgic_sim_state_get (old_dst);
    g_autoptr (GVariant) last = NULL;
    OldPeer pd = { 0 };
    const char *action = NULL, *msg = NULL;
    guint steps;

    old_peer_attach (&pd, h, old_dst, &five, "old-dst");
    last = old_peer_run (&pd, old_dst, "Load",
                         g_variant_new ("(@ay)",
                                        g_variant_new_from_bytes (G_VARIANT_TYPE_BYTESTRING,
                                                                  record, TRUE)),
                         &steps);
    g_assert_true (g_variant_lookup (last, "action", "&s", &action));
    g_assert_cmpstr (action, !=, "done");
    g_assert_cmpuint (steps, ==, 1);	/* the check reads, and no write step */
    g_assert_true (g_variant_lookup (last, "message", "&s", &msg));
    g_test_message ("protocol 1 peer: %s: %s", action, msg);
    g_assert_nonnull (strstr (msg, "ICC_CTLR_EL1"));
    assert_untouched (old_dst, old_before);
    old_peer_clear (&pd);
  }
}

/* ------------------------------------------------------------------ */
/* An admitted peer that does what GDBus would not                    */
/* ------------------------------------------------------------------ */

/* A D-Bus client on a raw socket, past the handshake (as root, who is on
 * the harness's AllowUsers): it can send without reading, and send file
 * descriptors with any message. */
static int
raw_peer_connect (VgicdHarness *h)
{
  struct sockaddr_un a = { .sun_family = AF_UNIX };
  g_autofree char *uid = g_strdup_printf ("%u", (guint) getuid ());
  g_autoptr (GString) auth = g_string_new ("AUTH EXTERNAL ");
  char buf[256];
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const char *lines[] = { NULL, "NEGOTIATE_UNIX_FD\r\n", "BEGIN\r\n" };

  g_assert_cmpint (fd, >=, 0);
  g_strlcpy (a.sun_path, h->socket_path, sizeof a.sun_path);
  g_assert_cmpint (connect (fd, (struct sockaddr *) &a, sizeof a), ==, 0);
  g_assert_cmpint (send (fd, "", 1, MSG_NOSIGNAL), ==, 1);
  for (const char *c = uid; *c; c++)
    g_string_append_printf (auth, "%02x", (guint) (guchar) *c);
  g_string_append (auth, "\r\n");
  lines[0] = auth->str;
  for (guint i = 0; i < G_N_ELEMENTS (lines); i++)
    {
      ssize_t n;

      g_assert_cmpint (send (fd, lines[i], strlen (lines[i]), MSG_NOSIGNAL), ==,
                       (gssize) strlen (lines[i]));
      if (i == 2)
        break;
      n = recv (fd, buf, sizeof buf - 1, 0);
      g_assert_cmpint (n, >, 0);
      buf[n] = 0;
      g_assert_true (g_str_has_prefix (buf, i == 0 ? "OK " : "AGREE_UNIX_FD"));
    }
  return fd;
}

/* A call of Introspect on the helper, serial @serial, as bytes. */
static guint8 *
raw_call (guint32 serial, GUnixFDList *fds, gsize *len)
{
  g_autoptr (GDBusMessage) m =
    g_dbus_message_new_method_call (NULL, "/org/vgicd/Helper1",
                                    "org.freedesktop.DBus.Introspectable", "Introspect");
  g_autoptr (GError) error = NULL;
  guint8 *blob;

  g_dbus_message_set_serial (m, serial);
  if (fds)
    g_dbus_message_set_unix_fd_list (m, fds);
  blob = g_dbus_message_to_blob (m, len, G_DBUS_CAPABILITY_FLAGS_UNIX_FD_PASSING, &error);
  g_assert_no_error (error);
  return blob;
}

static guint64
vgicd_rss_kib (VgicdHarness *h)
{
  g_autofree char *path = g_strdup_printf ("/proc/%d/status", (int) h->vgicd_pid);
  g_autofree char *text = NULL;
  const char *line;

  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  line = strstr (text, "VmRSS:");
  g_assert_nonnull (line);
  return g_ascii_strtoull (line + 6, NULL, 10);
}

static guint
vgicd_fd_count (VgicdHarness *h)
{
  g_autofree char *path = g_strdup_printf ("/proc/%d/fd", (int) h->vgicd_pid);
  g_autoptr (GDir) dir = g_dir_open (path, 0, NULL);
  guint n = 0;

  g_assert_nonnull (dir);
  while (g_dir_read_name (dir))
    n++;
  return n;
}

/* Did vgicd close @fd's connection?  Reads (and drops) what is there
 * until EOF, for at most @ms. */
static gboolean
raw_peer_closed (int fd, int ms)
{
  gint64 end = g_get_monotonic_time () + (gint64) ms * 1000;
  char buf[65536];

  while (g_get_monotonic_time () < end)
    {
      struct pollfd p = { fd, POLLIN, 0 };
      ssize_t n;

      if (poll (&p, 1, 100) <= 0)
        continue;
      n = recv (fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno == ECONNRESET))
        return TRUE;
    }
  return FALSE;
}

/* Rows 3 and 4, for a peer on AllowUsers (the door keeps out the others):
 * 200,000 calls sent without reading an answer, then a call carrying file
 * descriptors.  Each peer is closed, vgicd's memory and descriptors stay
 * where they were, and an honest QEMU attaches and saves meanwhile.  With
 * the old code the first peer was never closed and vgicd grew by hundreds
 * of MiB; the second left vgicd holding its descriptors until it closed. */
static void
test_admitted_peer_bounds (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) sim = make_sim (s, TRUE);
  g_autoptr (VgicdClient) c = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *log = NULL;
  guint64 rss0, rss1;
  guint fds0, fds1, sent = 0;
  gsize len;
  int fd;

  c = attach (h, sim, s, "honest");
  g_assert_true (vgicd_client_save (c, &record, &error));
  rss0 = vgicd_rss_kib (h);
  fds0 = vgicd_fd_count (h);

  /* A flood, never read. */
  fd = raw_peer_connect (h);
  for (sent = 0; sent < 200000; sent++)
    {
      g_autofree guint8 *blob = raw_call (sent + 1, NULL, &len);

      if (send (fd, blob, len, MSG_NOSIGNAL) < 0)
        break;	/* EPIPE: vgicd closed it */
    }
  g_assert_true (raw_peer_closed (fd, 10000));
  close (fd);
  rss1 = vgicd_rss_kib (h);
  g_test_message ("flood: %u calls sent before vgicd closed the peer; RSS %" G_GUINT64_FORMAT
                  " -> %" G_GUINT64_FORMAT " KiB", sent, rss0, rss1);
  g_assert_cmpuint (rss1, <, rss0 + 32 * 1024);
  g_assert_true (vgicd_client_save (c, &record, &error));
  g_assert_no_error (error);

  /* File descriptors with a call: 200 of them. */
  {
    g_autoptr (GUnixFDList) list = g_unix_fd_list_new ();
    g_autofree guint8 *blob = NULL;
    char cbuf[CMSG_SPACE (200 * sizeof (int))];
    struct iovec iov;
    struct msghdr mh = { 0 };
    struct cmsghdr *cm;

    for (guint i = 0; i < 200; i++)
      g_unix_fd_list_append (list, 0, NULL);	/* dups of stdin, the list's */
    blob = raw_call (1, list, &len);
    fd = raw_peer_connect (h);
    iov = (struct iovec) { blob, len };
    mh.msg_iov = &iov, mh.msg_iovlen = 1;
    mh.msg_control = cbuf, mh.msg_controllen = sizeof cbuf;
    cm = CMSG_FIRSTHDR (&mh);
    cm->cmsg_level = SOL_SOCKET, cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN (200 * sizeof (int));
    memcpy (CMSG_DATA (cm), g_unix_fd_list_peek_fds (list, NULL), 200 * sizeof (int));
    g_assert_cmpint (sendmsg (fd, &mh, MSG_NOSIGNAL), ==, (gssize) len);
    g_assert_true (raw_peer_closed (fd, 10000));
    close (fd);
  }
  fds1 = vgicd_fd_count (h);
  g_test_message ("fds: vgicd holds %u descriptors before, %u after", fds0, fds1);
  g_assert_cmpuint (fds1, <=, fds0);
  g_assert_true (vgicd_client_save (c, &record, &error));
  g_assert_no_error (error);

  g_assert_cmpuint (vgicd_harness_stat (h, "peers-closed"), ==, 2);
  g_assert_true (g_file_get_contents (h->log_path, &log, NULL, NULL));
  {
    g_auto (GStrv) lines = g_strsplit (log, "\n", -1);

    for (guint i = 0; lines[i]; i++)
      if (strstr (lines[i], "closed the connection of a peer"))
        g_test_message ("vgicd: %s", lines[i]);
  }
  /* Which of the two bounds a flood meets first depends on how far the
   * main loop lags behind GDBus's reader. */
  g_assert_true (strstr (log, "does not read the answers") || strstr (log, "unanswered"));
  g_assert_nonnull (strstr (log, "it sent file descriptors"));
}

/* ------------------------------------------------------------------ */
/* Item 6: the fault campaign                                         */
/* ------------------------------------------------------------------ */

/* After each fault: vgicd is up with its three sessions and no more
 * descriptors than before, and the bystander VM saves what it holds. */
static void
campaign_check (VgicdHarness *h, guint fds0, VgicdClient *bystander, GBytes *bystander_record)
{
  g_autoptr (GBytes) again = NULL;
  g_autoptr (GError) error = NULL;

  g_assert_cmpint (kill (h->vgicd_pid, 0), ==, 0);
  g_assert_cmpuint (vgicd_harness_stat (h, "sessions"), ==, 3);
  g_assert_cmpuint (vgicd_fd_count (h), <=, fds0);
  g_assert_true (vgicd_client_save (bystander, &again, &error));
  g_assert_no_error (error);
  g_assert_true (g_bytes_equal (again, bystander_record));
}

/* A kernel (sim) error at access k, for k spread over a save and over a
 * load, -EBUSY from a running vCPU, and the out-of-order calls (Next with
 * nothing to run, Save twice, another VM's record).  For each: the caller's
 * error names the cause; vgicd keeps its sessions, and no descriptor; a
 * bystander VM is unaffected; a save changes nothing, a load that fails in
 * its reads writes nothing (compared), one that fails in its writes says
 * how many were applied; and the same call then succeeds. */
static void
test_fault_campaign (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) src = make_sim (s, TRUE);
  g_autoptr (VgicSim) dst = make_sim (s, TRUE);
  g_autoptr (VgicSim) by = make_sim (s, TRUE);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL, cb = NULL;
  g_autoptr (GBytes) record = NULL, by_record = NULL;
  g_autoptr (GError) error = NULL;
  VgicdClientStats st;
  guint n_save, n_load, guards = 3 + s->vcpus, fds0, faults = 0;

  vgic_sim_randomize (src, 41);
  vgic_sim_randomize (by, 42);
  cs = attach (h, src, s, "src");
  cd = attach (h, dst, s, "dst");
  cb = attach (h, by, s, "bystander");
  g_assert_true (vgicd_client_save (cb, &by_record, &error));
  g_assert_true (vgicd_client_save (cs, &record, &error));
  g_assert_true (vgicd_client_save (cs, &record, &error));	/* the guess settled */
  vgicd_client_get_stats (cs, &st);
  n_save = st.entries;
  g_assert_true (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                    g_bytes_get_size (record), &error));
  g_assert_no_error (error);
  vgicd_client_get_stats (cd, &st);
  n_load = st.entries;
  fds0 = vgicd_fd_count (h);
  g_test_message ("save: %u accesses; load: %u (%u guard reads, then writes)", n_save,
                  n_load, guards);

  for (guint i = 0; i <= 8; i++)
    {
      const guint k = i < 8 ? i * n_save / 8 : n_save - 1;
      g_autoptr (VgicSimState) before = vgic_sim_state_get (src);
      g_autoptr (GBytes) got = NULL;

      const guint64 rounds = vgicd_harness_stat (h, "second-rounds");

      vgic_sim_fail_at (src, k, -EIO);
      if (vgicd_client_save (cs, &got, &error))
        {
          /* An error in the guessed round 2 (the save's last reads) is
           * taken as a guess that missed: round 2 is read again, and the
           * save completes, counted. */
          g_assert_true (g_bytes_equal (got, record));
          g_assert_cmpuint (vgicd_harness_stat (h, "second-rounds"), ==, rounds + 1);
          g_test_message ("save, error at access %u of %u: in the guessed round 2, read "
                          "again: saved", k, n_save);
          assert_untouched (src, before);
          campaign_check (h, fds0, cb, by_record);
          faults++;
          continue;
        }
      g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DEVICE);
      g_assert_nonnull (strstr (error->message, g_strerror (EIO)));
      g_test_message ("save, error at access %u of %u: %s", k, n_save, error->message);
      g_clear_error (&error);
      assert_untouched (src, before);
      campaign_check (h, fds0, cb, by_record);
      g_assert_true (vgicd_client_save (cs, &got, &error));
      g_assert_true (g_bytes_equal (got, record));
      faults++;
    }
  for (guint i = 0; i <= 8; i++)
    {
      const guint k = i == 0 ? guards / 2 : i < 8 ? guards + (i - 1) * (n_load - guards) / 7
                                                  : n_load - 1;
      g_autoptr (VgicSimState) before = vgic_sim_state_get (dst);
      g_autoptr (GBytes) got = NULL;

      vgic_sim_fail_at (dst, k, -EIO);
      g_assert_false (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                         g_bytes_get_size (record), &error));
      g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DEVICE);
      g_assert_nonnull (strstr (error->message, g_strerror (EIO)));
      g_test_message ("load, error at access %u of %u: %s", k, n_load, error->message);
      if (k <= guards)
        {
          /* a guard read, or the first write */
          g_assert_nonnull (strstr (error->message, k < guards ? "nothing was changed"
                                                               : "nothing was written"));
          assert_untouched (dst, before);
        }
      else
        {
          g_autofree char *applied = g_strdup_printf ("%u writes were applied", k - guards);

          g_assert_nonnull (strstr (error->message, applied));
        }
      g_clear_error (&error);
      campaign_check (h, fds0, cb, by_record);
      g_assert_true (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                        g_bytes_get_size (record), &error));
      g_assert_no_error (error);
      got = visible_state (dst, s);
      g_assert_true (g_bytes_equal (got, record));
      faults++;
    }

  /* A vCPU that runs: the kernel cannot lock it, so nothing is written. */
  {
    g_autoptr (VgicSimState) before = vgic_sim_state_get (dst);

    vgic_sim_set_vcpu_running (dst, 2, TRUE);
    g_assert_false (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                       g_bytes_get_size (record), &error));
    g_test_message ("load, vCPU 2 running: %s", error->message);
    g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DEVICE);
    g_assert_nonnull (strstr (error->message, g_strerror (EBUSY)));
    g_clear_error (&error);
    assert_untouched (dst, before);
    campaign_check (h, fds0, cb, by_record);
    vgic_sim_set_vcpu_running (dst, 2, FALSE);
    g_assert_true (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                      g_bytes_get_size (record), &error));
    g_assert_no_error (error);
    faults++;
  }

  /* Another VM's record (the bystander's has other values, and its VM
   * another name, but the same shape: it loads, which is right: a record
   * carries a VM's state, not its identity), and a record of another
   * shape, which is refused before any write. */
  {
    const Shape one = { 1, 64, FALSE, 5 };
    g_autoptr (VgicSim) other = make_sim (&one, TRUE);
    g_autoptr (VgicdClient) co = attach (h, other, &one, "other-shape");
    g_autoptr (GBytes) other_record = NULL;
    g_autoptr (VgicSimState) before = vgic_sim_state_get (dst);

    g_assert_true (vgicd_client_save (co, &other_record, &error));
    g_assert_false (vgicd_client_load (cd, g_bytes_get_data (other_record, NULL),
                                       g_bytes_get_size (other_record), &error));
    g_test_message ("load of a 1-vCPU VM's record: %s", error->message);
    g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_REFUSED);
    g_clear_error (&error);
    assert_untouched (dst, before);
    faults++;
  }
  g_assert_cmpuint (vgicd_harness_stat (h, "sessions"), ==, 3);
  g_test_message ("%u faults, vgicd up, 3 sessions, %u descriptors (%u before)", faults,
                  vgicd_fd_count (h), fds0);
}

/* Row 12, its other half: the host's KernelBatch is never a peer's claim.
 * This vgicd has no probe (Probe=false): VMs whose executors claim the
 * batch group, and one that claims none, attach; the host's status stays
 * "unknown", and its source counts the claims as theirs.  (The old code
 * made the last peer's claim the host's: "yes", then "no".) */
static void
test_kernel_batch_is_not_a_peers (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[0];
  g_autoptr (VgicSim) a = make_sim (s, TRUE);
  g_autoptr (VgicSim) b = make_sim (s, FALSE);
  g_autoptr (VgicdClient) ca = NULL, cb = NULL;
  g_autofree char *batch = NULL, *source = NULL, *batch2 = NULL, *source2 = NULL;

  ca = attach_uuid (h, a, s, "claims-yes", "0f3c1a2e-0000-4000-8000-0000000000b1");
  batch = vgicd_harness_property (h, "KernelBatch");
  source = vgicd_harness_property (h, "KernelBatchSource");
  g_assert_cmpstr (batch, ==, "unknown");
  g_assert_nonnull (strstr (source, "no probe (Probe=false)"));
  g_assert_nonnull (strstr (source, "1 attached VM(s) claim: 1 with the batch group, 0 without"));
  cb = attach_uuid (h, b, s, "claims-no", "0f3c1a2e-0000-4000-8000-0000000000b2");
  batch2 = vgicd_harness_property (h, "KernelBatch");
  source2 = vgicd_harness_property (h, "KernelBatchSource");
  g_assert_cmpstr (batch2, ==, "unknown");
  g_assert_nonnull (strstr (source2, "2 attached VM(s) claim: 1 with the batch group, 1 without"));
  /* Each VM still runs by its own executor's finding. */
  {
    g_autoptr (GBytes) rec = NULL;
    g_autoptr (GError) error = NULL;
    VgicdClientStats st;

    g_assert_true (vgicd_client_save (cb, &rec, &error));
    g_assert_no_error (error);
    vgicd_client_get_stats (cb, &st);
    g_assert_false (st.batched);
  }
}

/* Row 12: the first save of a VM new to the host guesses round 2 from what
 * most attached VMs have, not from whichever peer saved last.  Three VMs
 * with an ITS and 5 priority bits, then one peer whose VM claims neither
 * (no LPIs, 7 priority bits: its values are its own to report): a newcomer
 * of the common shape still saves in one round.  With the old rule (the
 * last save's shape) the newcomer read round 2 again. */
static void
test_save_guess_is_the_hosts (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape common = { 4, 128, TRUE, 5 }, odd = { 4, 128, FALSE, 7 };
  VgicSim *sims[5];
  VgicdClient *clients[5];
  guint64 rounds;

  for (guint i = 0; i < G_N_ELEMENTS (sims); i++)
    {
      const Shape *sh = i == 3 ? &odd : &common;
      g_autofree char *name = g_strdup_printf ("vm%u", i);
      g_autoptr (GBytes) record = NULL;
      g_autoptr (GError) error = NULL;

      sims[i] = make_sim (sh, TRUE);
      clients[i] = attach (h, sims[i], sh, name);
      rounds = vgicd_harness_stat (h, "second-rounds");
      g_assert_true (vgicd_client_save (clients[i], &record, &error));
      g_assert_no_error (error);
      g_test_message ("vm%u (%s): second rounds %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT,
                      i, i == 3 ? "odd" : "common", rounds,
                      vgicd_harness_stat (h, "second-rounds"));
      /* Only the odd VM's own first save misses. */
      g_assert_cmpuint (vgicd_harness_stat (h, "second-rounds"), ==, rounds + (i == 3));
    }
  for (guint i = 0; i < G_N_ELEMENTS (sims); i++)
    {
      vgicd_client_free (clients[i]);
      vgic_sim_free (sims[i]);
    }
}

/* A fault at write k: the load fails naming the register, vgicd and the
 * QEMU side stay usable. */
static void
test_fault_during_restore (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) src = make_sim (s, TRUE);
  g_autoptr (VgicSim) dst = make_sim (s, TRUE);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL;
  g_autoptr (GBytes) record = NULL, again = NULL;
  g_autoptr (GError) error = NULL;

  vgic_sim_randomize (src, 3);
  cs = attach (h, src, s, "src");
  cd = attach (h, dst, s, "dst");
  g_assert_true (vgicd_client_save (cs, &record, &error));

  /* Access 104 from now: the restore's guard reads come first (3 TYPER
   * reads, 4 ICC_CTLR_EL1), so this is write 97. */
  vgic_sim_fail_at (dst, 104, -EINVAL);
  g_assert_false (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                     g_bytes_get_size (record), &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DEVICE);
  g_assert_nonnull (strstr (error->message, "entry 97 of"));
  g_assert_nonnull (strstr (error->message, "97 writes were applied"));
  g_assert_nonnull (strstr (error->message, "partly restored"));
  /* GICD_CTLR, 4 x 4 LPI bases, 4 x 20 redistributor writes, then: */
  g_assert_nonnull (strstr (error->message, "writing GICD_STATUSR"));
  g_test_message ("%s", error->message);
  g_clear_error (&error);

  /* Both sides carry on: the load succeeds the second time, and a save
   * still works. */
  g_assert_true (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                    g_bytes_get_size (record), &error));
  g_assert_no_error (error);
  g_assert_true (vgicd_client_save (cd, &again, &error));
  g_assert_true (g_bytes_equal (record, again));
}

/* The access tests' peer is a separate program run as another user (this
 * process has threads, so a forked child must exec before it uses GDBus):
 * in the child, become @data (a struct passwd), with no supplementary
 * groups left from root. */
static void
child_become (gpointer data)
{
  struct passwd *pw = data;

  if (setgroups (0, NULL) < 0 || setgid (pw->pw_gid) < 0 || setuid (pw->pw_uid) < 0)
    _exit (127);
}

/* Copy @src to @dir/@name, readable and executable by everyone. */
static char *
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

/* Run vgicd-peer as @pw against @h; its one line of output. */
static char *
run_peer_as (VgicdHarness *h, struct passwd *pw)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *peer = NULL, *lib = NULL, *env_lib = NULL;
  const char *argv[3], *envp[2];
  char *out = NULL;
  int status;

  g_assert_nonnull (g_getenv ("VGICD_PEER"));
  g_assert_nonnull (g_getenv ("VGICD_LIBVGICD"));
  /* The peer runs as another user, who may not reach the build tree (a
   * checkout in a private folder): it runs from the harness's folder,
   * which vgicd's socket is in and everyone may enter. */
  peer = copy_for_everyone (g_getenv ("VGICD_PEER"), h->dir, "vgicd-peer");
  lib = copy_for_everyone (g_getenv ("VGICD_LIBVGICD"), h->dir, "libvgicd.so.0");
  env_lib = g_strdup_printf ("LD_LIBRARY_PATH=%s", h->dir);
  argv[0] = peer, argv[1] = h->address, argv[2] = NULL;
  envp[0] = env_lib, envp[1] = NULL;
  g_assert_true (g_spawn_sync (NULL, (char **) argv, (char **) envp, G_SPAWN_DEFAULT,
                               child_become, pw, &out, NULL, &status, &error));
  g_assert_no_error (error);
  g_test_message ("peer (%s) said: %s", pw->pw_name, out);
  g_assert_false (g_spawn_check_wait_status (status, NULL));
  return out;
}

/* A harness whose socket is in @pw's primary group, so that @pw gets as
 * far as vgicd's own check. */
static VgicdHarness *
harness_group_of (struct passwd *pw)
{
  struct group *gr = getgrgid (pw->pw_gid);
  g_autoptr (GError) error = NULL;
  g_autofree char *conf = NULL;
  VgicdHarness *h;

  g_assert_nonnull (gr);
  conf = g_strdup_printf ("Mode=auto\nAllowUsers=root\nSocketGroup=%s\n", gr->gr_name);
  h = vgicd_harness_start (vgicd_bin, policy, conf, &error);
  g_assert_no_error (error);
  return h;
}

/* A peer whose uid is not on the allow-list is closed at the door, before
 * any handshake; libvgicd tells its caller it is denied, with a message
 * that names neither the allow-list nor the configuration's path (the peer
 * may be hostile); vgicd's log has both, for the operator. */
static void
test_peer_not_allowed (void)
{
  struct passwd *nobody = getpwnam ("nobody");
  g_autoptr (VgicdHarness) h = NULL;
  g_autofree char *out = NULL;
  g_autofree char *code = NULL;
  g_autofree char *log = NULL;

  g_assert_nonnull (nobody);
  h = harness_group_of (nobody);
  out = run_peer_as (h, nobody);
  code = g_strdup_printf ("error %d ", VGICD_CLIENT_ERROR_DENIED);
  g_assert_true (g_str_has_prefix (out, code));
  g_assert_nonnull (strstr (out, "may not use vgicd"));
  g_assert_null (strstr (out, "AllowUsers"));
  g_assert_null (strstr (out, "root"));
  g_assert_null (strstr (out, ".conf"));
  /* Logged before the connection was closed. */
  g_assert_true (g_file_get_contents (h->log_path, &log, NULL, NULL));
  g_assert_nonnull (strstr (log, "closed a connection from user nobody"));
  g_assert_nonnull (strstr (log, ": not allowed (AllowUsers in "));
  g_assert_cmpuint (vgicd_harness_stat (h, "refused"), ==, 1);
}

/* The socket vgicd binds itself is what vgicd.socket makes: 0660 in group
 * SocketGroup= (kvm by default), so a user outside the group cannot even
 * connect; with no kvm group on the host it is root's alone (0600), and
 * the log says so.  A SocketGroup= that does not exist stops vgicd. */
static void
test_socket_group (void)
{
  struct passwd *nobody = getpwnam ("nobody");
  struct group *kvm = getgrnam ("kvm");
  struct passwd outsider;
  g_autoptr (VgicdHarness) h = harness ("auto");
  g_autoptr (VgicdHarness) in_group = NULL, bad = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *log = NULL, *out = NULL, *code = NULL;
  struct stat st;

  g_assert_cmpint (stat (h->socket_path, &st), ==, 0);
  g_assert_true (g_file_get_contents (h->log_path, &log, NULL, NULL));
  if (kvm)
    {
      g_assert_cmpint (st.st_mode & 07777, ==, 0660);
      g_assert_cmpint (st.st_gid, ==, kvm->gr_gid);
    }
  else
    {
      g_assert_cmpint (st.st_mode & 07777, ==, 0600);
      g_assert_nonnull (strstr (log, "group kvm does not exist"));
    }

  g_assert_nonnull (nobody);
  in_group = harness_group_of (nobody);
  g_assert_cmpint (stat (in_group->socket_path, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 07777, ==, 0660);
  g_assert_cmpint (st.st_gid, ==, nobody->pw_gid);
  /* nobody in another group: refused by the socket's mode, before vgicd
   * sees a byte. */
  outsider = *nobody;
  outsider.pw_gid = nobody->pw_gid - 1;
  out = run_peer_as (in_group, &outsider);
  code = g_strdup_printf ("error %d ", VGICD_CLIENT_ERROR_UNREACHABLE);
  g_assert_true (g_str_has_prefix (out, code));
  g_assert_nonnull (strstr (out, g_strerror (EACCES)));

  bad = vgicd_harness_start (vgicd_bin, policy,
                             "Mode=auto\nSocketGroup=no-such-group-vgicd\n", &error);
  g_assert_null (bad);
  g_assert_nonnull (error);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "SocketGroup=no-such-group-vgicd: no such group"));
}

/* The kernel has no batch group: vgicd's plans run one by one, same result. */
static void
test_old_kernel_single_path (void)
{
  static const ModeCase mc = { "auto", FALSE, FALSE };

  test_round_trip (&mc);
}

/* The kernel's group 10 is another batch ABI, which answers the bare
 * KVM_HAS_DEVICE_ATTR probe: libvgicd's handshake finds it is not this
 * layout, so nothing but the probe's one read reaches group 10, every
 * access runs one by one, and vgicd says so in its log and its counters. */
static void
test_foreign_batch_abi (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[3];
  g_autoptr (VgicSim) src = make_sim (s, TRUE);
  g_autoptr (VgicSim) dst = make_sim (s, TRUE);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL;
  g_autoptr (GBytes) record = NULL, want = NULL, got = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *log = NULL;
  VgicdClientStats st;
  VgicSimCounters c;

  vgic_sim_set_foreign_batch (src);
  vgic_sim_set_foreign_batch (dst);
  g_assert_cmpint (vgicd_client_probe_batch (vgic_sim_get_fd (src)), ==, 0);
  vgic_sim_randomize (src, 7);
  vgic_sim_counters_reset (src);
  vgic_sim_counters_reset (dst);
  cs = attach (h, src, s, "src");
  cd = attach (h, dst, s, "dst");
  want = visible_state (src, s);

  g_assert_true (vgicd_client_save (cs, &record, &error));
  g_assert_no_error (error);
  vgicd_client_get_stats (cs, &st);
  g_assert_false (st.batched);
  g_assert_cmpuint (st.ioctls, >=, st.entries);
  g_assert_true (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                    g_bytes_get_size (record), &error));
  g_assert_no_error (error);
  vgicd_client_get_stats (cd, &st);
  g_assert_false (st.batched);
  got = visible_state (dst, s);
  g_assert_true (g_bytes_equal (want, got));

  /* The probe's one read of the ABI attribute, on each side; no batch. */
  vgic_sim_counters_get (src, &c);
  g_assert_cmpuint (c.foreign_calls, ==, 1);
  g_assert_cmpuint (c.batch_calls, ==, 0);
  g_assert_cmpuint (c.single_get, >, 0);
  vgic_sim_counters_get (dst, &c);
  g_assert_cmpuint (c.foreign_calls, ==, 1);
  g_assert_cmpuint (c.batch_calls, ==, 0);
  g_assert_cmpuint (c.single_set, >, 0);

  g_assert_cmpuint (vgicd_harness_stat (h, "foreign-batch"), ==, 2);
  g_assert_cmpuint (vgicd_harness_stat (h, "fallbacks"), >=, 2);
  g_assert_true (g_file_get_contents (h->log_path, &log, NULL, NULL));
  g_assert_nonnull (strstr (log, "VM src: the kernel's device-attr group 10 is not this "
                                 "batch ABI (it answered magic 0x00000000"));
  g_assert_nonnull (strstr (log, "every save and load of this VM runs one register per ioctl"));
  g_assert_nonnull (strstr (log, "not used; running one register per ioctl"));
}

/* vgicd dies or hangs: libvgicd returns within its timeout. */
static void
test_vgicd_gone (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[3];
  g_autoptr (VgicSim) src = make_sim (s, TRUE);
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (VgicdClient) c = NULL;
  g_autofree guint32 *mpidrs = g_new (guint32, s->vcpus);
  gint64 t0;

  for (guint i = 0; i < s->vcpus; i++)
    mpidrs[i] = vgic_sim_get_mpidr (src, i);
  c = vgicd_client_connect (h->address, 1000, &error);
  g_assert_no_error (error);
  g_assert_true (vgicd_client_attach (c, vgic_sim_get_fd (src), "victim", NULL, s->irqs,
                                      s->vcpus, mpidrs, &error));
  /* Hung: stopped in the middle of the conversation. */
  kill (h->vgicd_pid, SIGSTOP);
  t0 = g_get_monotonic_time ();
  g_assert_false (vgicd_client_save (c, &record, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_UNREACHABLE);
  g_assert_cmpint (g_get_monotonic_time () - t0, <, 3 * G_USEC_PER_SEC);
  g_clear_error (&error);
  /* Gone. */
  vgicd_harness_kill_vgicd (h);
  g_assert_false (vgicd_client_save (c, &record, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_UNREACHABLE);
  g_clear_error (&error);
  /* Nothing listens on the socket it left: no vgicd here, which a caller
   * need not warn about (QEMU then takes its own path quietly). */
  g_assert_null (vgicd_client_connect (h->address, 1000, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_ABSENT);
}

/* vgicd restarted between two migrations (a package upgrade does it): the
 * session is gone, and the client sees so without a round trip, which is
 * what QEMU checks at a migration's setup before it attaches again; a new
 * session on the restarted vgicd saves batched as before. */
static void
test_vgicd_restarted (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[3];
  g_autoptr (VgicSim) src = make_sim (s, TRUE);
  g_autoptr (VgicdClient) c = attach (h, src, s, "upgraded");
  g_autoptr (VgicdClient) again = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) record = NULL;
  VgicdClientStats stats;
  int waited_ms = 0;

  g_assert_true (vgicd_client_is_connected (c));
  g_assert_true (vgicd_client_save (c, &record, &error));
  g_assert_no_error (error);
  g_clear_pointer (&record, g_bytes_unref);

  g_assert_true (vgicd_harness_restart_vgicd (h, &error));
  g_assert_no_error (error);
  /* GDBus's worker thread reads the end of file on its own; give it the
   * time the scheduler takes (a migration's setup comes much later). */
  while (vgicd_client_is_connected (c) && waited_ms < 5000)
    {
      g_usleep (10 * 1000);
      waited_ms += 10;
    }
  g_assert_false (vgicd_client_is_connected (c));
  g_test_message ("the client saw the restart after %d ms", waited_ms);
  g_assert_false (vgicd_client_save (c, &record, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_UNREACHABLE);
  g_clear_error (&error);

  again = attach (h, src, s, "upgraded");
  g_assert_true (vgicd_client_is_connected (again));
  g_assert_true (vgicd_client_save (again, &record, &error));
  g_assert_no_error (error);
  vgicd_client_get_stats (again, &stats);
  g_assert_true (stats.batched);
}

/* A save (or, with @record, a load) on a thread of its own, for the tests
 * that kill vgicd while it runs. */
typedef struct {
  VgicdClient *client;
  GBytes *record;	/* NULL: save */
  GError *error;
  gboolean ok;
  gint64 returned;
} StepJob;

static gpointer
step_job (gpointer data)
{
  StepJob *job = data;
  g_autoptr (GBytes) record = NULL;

  if (job->record)
    job->ok = vgicd_client_load (job->client, g_bytes_get_data (job->record, NULL),
                                 g_bytes_get_size (job->record), &job->error);
  else
    job->ok = vgicd_client_save (job->client, &record, &job->error);
  job->returned = g_get_monotonic_time ();
  return NULL;
}

/* vgicd killed in the middle of a save (while the executor runs its first
 * round, one by one): the save fails as UNREACHABLE, promptly. */
static void
test_killed_mid_save (void)
{
  g_autoptr (VgicdHarness) h = harness ("single");
  const Shape s = { 160, 992, TRUE, 5 };
  g_autoptr (VgicSim) src = make_sim (&s, TRUE);
  g_autoptr (VgicdClient) c = attach (h, src, &s, "victim");
  StepJob job = { .client = c };
  VgicSimCounters counters = { 0 };
  GThread *thread;
  gint64 killed;

  vgic_sim_counters_reset (src);
  thread = g_thread_new ("save", step_job, &job);
  while (counters.single_get < 500)
    {
      g_usleep (1000);
      vgic_sim_counters_get (src, &counters);
    }
  vgicd_harness_kill_vgicd (h);
  killed = g_get_monotonic_time ();
  g_thread_join (thread);
  g_assert_false (job.ok);
  g_assert_error (job.error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_UNREACHABLE);
  /* The closed connection ended it, not the 5 s timeout: said by the
   * error, not by a clock (the rest of round 1 runs one by one, which
   * under ASan on a loaded machine once took 2.5 s). */
  g_assert_null (strstr (job.error->message, "did not answer"));
  g_assert_nonnull (strstr (job.error->message, "went away"));
  g_test_message ("returned %.1f ms after the kill: %s",
                  (job.returned - killed) / 1000.0, job.error->message);
  g_error_free (job.error);
}

/* Run @record's load (or a save) on @sim with its @k-th ioctl held while
 * vgicd is killed; then restart vgicd.  Returns whether the operation
 * succeeded, and its error in @error. */
static gboolean
kill_at (VgicdHarness *h, VgicSim *sim, const Shape *s, GBytes *record, guint k,
         double *ms, GError **error)
{
  g_autoptr (GError) local = NULL;
  StepJob job = { .record = record };
  GThread *t;
  gint64 killed;

  job.client = attach (h, sim, s, record ? "dst" : "src");
  vgic_sim_stall_at (sim, k);
  t = g_thread_new ("step", step_job, &job);
  g_assert_true (vgic_sim_wait_stalled (sim, 10000));
  vgicd_harness_kill_vgicd (h);
  killed = g_get_monotonic_time ();
  vgic_sim_release (sim);
  g_thread_join (t);
  *ms = (job.returned - killed) / 1000.0;
  vgicd_client_free (job.client);
  g_assert_true (vgicd_harness_restart_vgicd (h, &local));
  g_assert_no_error (local);
  /* The new vgicd holds nothing of the old one's sessions. */
  g_assert_cmpuint (vgicd_harness_stat (h, "sessions"), ==, 0);
  if (job.error)
    g_propagate_error (error, job.error);
  return job.ok;
}

/* vgicd SIGKILLed at each step of a save and of a load, batched and one by
 * one: the executor is held at its k-th ioctl (vgic_sim_stall_at()), vgicd
 * is killed, and the executor goes on.  A save then fails as UNREACHABLE
 * and the VM is as it was (compared).  A restore's writes are its last
 * step, which the executor runs whole without vgicd's answer: killed while
 * they run, or while the guards are read before them, the restore is whole
 * (compared with an undisturbed one) and succeeds; only vgicd's log of it
 * is lost (libvgicd says so).  A new vgicd (as systemd restarts it) has no
 * session left over and serves the same VMs at once. */
static void
test_killed_at_each_step (void)
{
  const Shape *s = &shapes[2];	/* 16 vCPUs, 288 IRQs */
  const char *const modes[] = { "auto", "single" };

  for (guint m = 0; m < G_N_ELEMENTS (modes); m++)
    {
      g_autoptr (VgicdHarness) h = harness (modes[m]);
      g_autoptr (VgicSim) src = make_sim (s, TRUE);
      g_autoptr (VgicSim) dst = make_sim (s, TRUE);
      g_autoptr (VgicSimState) fresh = NULL, restored = NULL;
      g_autoptr (GBytes) record = NULL;
      g_autoptr (GError) error = NULL;
      g_autoptr (VgicdClient) c = NULL;
      VgicdClientStats st;
      guint save_ioctls, load_ioctls, guards = 3 + s->vcpus;

      vgic_sim_randomize (src, 61);
      fresh = vgic_sim_state_get (dst);
      /* The figures of an undisturbed save and load: how many ioctls each
       * makes (the kill points). */
      c = attach (h, src, s, "src");
      g_assert_true (vgicd_client_save (c, &record, &error));
      g_clear_pointer (&record, g_bytes_unref);
      g_assert_true (vgicd_client_save (c, &record, &error));	/* the guess settled */
      g_assert_no_error (error);
      vgicd_client_get_stats (c, &st);
      save_ioctls = st.ioctls;
      g_clear_pointer (&c, vgicd_client_free);
      c = attach (h, dst, s, "dst");
      g_assert_true (vgicd_client_load (c, g_bytes_get_data (record, NULL),
                                        g_bytes_get_size (record), &error));
      g_assert_no_error (error);
      vgicd_client_get_stats (c, &st);
      load_ioctls = st.ioctls;
      g_clear_pointer (&c, vgicd_client_free);
      /* What a whole restore gives (not all of the source: QEMU's layout
       * carries no route of an SPI above nr_irqs / 2). */
      restored = vgic_sim_state_get (dst);

      /* Each save step (batch: 1 ioctl; one by one: the first, the middle
       * and the last read). */
      for (guint i = 0; i < 3; i++)
        {
          const guint k = i == 0 ? 1 : i == 1 ? MAX (1, save_ioctls / 2) : save_ioctls;
          g_autoptr (VgicSimState) before = vgic_sim_state_get (src);
          g_autoptr (VgicSimState) after = NULL;
          g_autoptr (GError) e = NULL;
          double ms;

          if (i > 0 && k == 1)
            continue;
          g_assert_false (kill_at (h, src, s, NULL, k, &ms, &e));
          g_assert_error (e, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_UNREACHABLE);
          after = vgic_sim_state_get (src);
          g_assert_true (vgic_sim_state_equal (before, after, NULL));
          g_test_message ("%s: vgicd killed at save ioctl %u of %u: failed %.1f ms after, "
                          "unreachable, VM unchanged: %s", modes[m], k, save_ioctls, ms,
                          e->message);
        }

      /* Each load step: the guards' first and last read, the first write,
       * the middle and the last (batch: the guard batch, the writes). */
      {
        const guint ks_batch[] = { 1, 2 };
        const guint ks_single[] = { 1, guards, guards + 1, (guards + load_ioctls) / 2,
                                    load_ioctls };
        const guint *ks = load_ioctls <= 2 ? ks_batch : ks_single;
        const guint nk = load_ioctls <= 2 ? G_N_ELEMENTS (ks_batch) : G_N_ELEMENTS (ks_single);

        for (guint i = 0; i < nk; i++)
          {
            g_autoptr (VgicSimState) got = NULL;
            g_autoptr (GError) e = NULL;
            g_autoptr (GError) put = NULL;
            double ms;

            if (ks[i] > load_ioctls)
              continue;
            g_assert_true (vgic_sim_state_set (dst, fresh, &put));
            g_assert_no_error (put);
            g_assert_true (kill_at (h, dst, s, record, ks[i], &ms, &e));
            g_assert_no_error (e);
            got = vgic_sim_state_get (dst);
            g_assert_true (vgic_sim_state_equal (restored, got, NULL));
            g_test_message ("%s: vgicd killed at load ioctl %u of %u (%s): restore whole, "
                            "returned %.1f ms after", modes[m], ks[i], load_ioctls,
                            ks[i] <= (load_ioctls <= 2 ? 1 : guards) ? "a guard read"
                                                                    : "a write", ms);
          }
      }

      /* And the new vgicd serves the same VMs at once. */
      c = attach (h, src, s, "src");
      g_clear_pointer (&record, g_bytes_unref);
      g_assert_true (vgicd_client_save (c, &record, &error));
      g_assert_no_error (error);
    }
}

/* Under socket activation (systemd-socket-activate passes the listening
 * socket, as vgicd.socket does), vgicd starts on the first connection and
 * serves it. */
static void
test_socket_activated (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdHarness) h = vgicd_harness_start_activated (vgicd_bin, policy,
                                                              "AllowUsers=root\n", &error);
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) src = make_sim (s, TRUE);
  g_autoptr (VgicdClient) c = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autofree char *log = NULL;

  g_assert_no_error (error);
  vgic_sim_randomize (src, 77);
  c = attach (h, src, s, "activated");
  g_assert_true (vgicd_client_save (c, &record, &error));
  g_assert_no_error (error);
  g_assert_true (g_file_get_contents (h->log_path, &log, NULL, NULL));
  g_assert_nonnull (strstr (log, "(socket-activated)"));
}

/* SIGHUP re-reads the configuration: the mode changes at once. */
static void
test_sighup_reload (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[0];
  g_autoptr (VgicSim) src = make_sim (s, TRUE);
  g_autoptr (VgicdClient) c = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *conf = g_strdup_printf ("[vgicd]\nSocket=%s\nProbe=false\nMode=off\n"
                                           "AllowUsers=root\n", h->socket_path);

  c = attach (h, src, s, "reloaded");
  g_assert_true (vgicd_client_save (c, &record, &error));
  g_clear_pointer (&record, g_bytes_unref);
  g_assert_true (g_file_set_contents (h->config_path, conf, -1, &error));
  kill (h->vgicd_pid, SIGHUP);
  for (int i = 0; i < 100; i++)
    {
      g_clear_error (&error);
      g_clear_pointer (&record, g_bytes_unref);
      if (!vgicd_client_save (c, &record, &error) &&
          g_error_matches (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DECLINED))
        break;
      g_usleep (20000);
    }
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DECLINED);
}

/* A peer reaches only the session it attached: another connection does not
 * even see it. */
static void
test_sessions_are_private (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[0];
  g_autoptr (VgicSim) sim = make_sim (s, TRUE);
  g_autoptr (VgicdClient) c = attach (h, sim, s, "owner");
  g_autoptr (GError) error = NULL;
  g_autoptr (GDBusConnection) other = NULL;
  g_autoptr (GVariant) reply = NULL;

  g_assert_cmpstr (vgicd_client_get_mode (c), ==, "auto");

  other = g_dbus_connection_new_for_address_sync (h->address,
                                                  G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT,
                                                  NULL, NULL, &error);
  g_assert_no_error (error);
  reply = g_dbus_connection_call_sync (other, NULL, "/org/vgicd/Session1/1",
                                       "org.vgicd.Session1", "Save", NULL, NULL,
                                       G_DBUS_CALL_FLAGS_NONE, 2000, NULL, &error);
  g_assert_null (reply);
  g_assert_error (error, G_DBUS_ERROR, G_DBUS_ERROR_UNKNOWN_METHOD);
}

/* 32 QEMUs save at once, each its own VM: all correct. */
typedef struct {
  VgicdHarness *h;
  guint index;
  gboolean ok;
} Worker;

static gpointer
worker (gpointer data)
{
  Worker *w = data;
  const Shape s = { 8, 256, TRUE, 6 };
  g_autoptr (VgicSim) src = make_sim (&s, TRUE);
  g_autoptr (VgicSim) dst = make_sim (&s, TRUE);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL;
  g_autoptr (GBytes) record = NULL, want = NULL, got = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *name = g_strdup_printf ("vm%02u", w->index);

  vgic_sim_randomize (src, 1000 + w->index);
  cs = attach (w->h, src, &s, name);
  cd = attach (w->h, dst, &s, name);
  for (int round = 0; round < 3; round++)
    {
      g_clear_pointer (&record, g_bytes_unref);
      if (!vgicd_client_save (cs, &record, &error) ||
          !vgicd_client_load (cd, g_bytes_get_data (record, NULL), g_bytes_get_size (record),
                              &error))
        {
          g_printerr ("%s: %s\n", name, error->message);
          return NULL;
        }
    }
  want = visible_state (src, &s);
  got = visible_state (dst, &s);
  w->ok = g_bytes_equal (want, got) && g_bytes_equal (want, record);
  return NULL;
}

static void
test_concurrent_sessions (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  Worker workers[32];
  GThread *threads[32];

  for (guint i = 0; i < 32; i++)
    {
      workers[i] = (Worker) { .h = h, .index = i };
      threads[i] = g_thread_new ("qemu", worker, &workers[i]);
    }
  for (guint i = 0; i < 32; i++)
    {
      g_thread_join (threads[i]);
      g_assert_true (workers[i].ok);
    }
}

/* Per-VM policy: a domain's own choice (the hook's file, by UUID) and the
 * host's static policy (by UUID or name), each applied to its VM only,
 * the stricter of them and the host's mode winning; read again on reload. */
static void
test_per_vm_policy (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[0];
  g_autoptr (VgicSim) sim = make_sim (s, TRUE);
  g_autoptr (VgicdClient) off = NULL, plain = NULL, single = NULL, later = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *choice = g_build_filename (h->vms_dir,
                                              "11111111-0000-4000-8000-000000000001.conf", NULL);
  g_autofree char *log = NULL;
  VgicdClientStats stats;

  g_assert_true (g_file_set_contents (choice, "[vm]\nName=off-vm\nChoice=off\n", -1, &error));
  g_assert_true (g_file_set_contents (h->vms_conf, "[name single-vm]\nMode=single\n"
                                      "[uuid 33333333-0000-4000-8000-000000000003]\nMode=off\n",
                                      -1, &error));
  off = attach_uuid (h, sim, s, "off-vm", "11111111-0000-4000-8000-000000000001");
  plain = attach_uuid (h, sim, s, "plain-vm", "22222222-0000-4000-8000-000000000002");
  single = attach_uuid (h, sim, s, "single-vm", "44444444-0000-4000-8000-000000000004");
  g_assert_cmpstr (vgicd_client_get_mode (off), ==, "off");
  g_assert_cmpstr (vgicd_client_get_mode (plain), ==, "auto");
  g_assert_cmpstr (vgicd_client_get_mode (single), ==, "single");

  g_assert_false (vgicd_client_save (off, &record, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DECLINED);
  g_clear_error (&error);
  g_assert_true (vgicd_client_save (plain, &record, &error));
  vgicd_client_get_stats (plain, &stats);
  g_assert_true (stats.batched);
  g_clear_pointer (&record, g_bytes_unref);
  g_assert_true (vgicd_client_save (single, &record, &error));
  vgicd_client_get_stats (single, &stats);
  g_assert_false (stats.batched);
  g_clear_pointer (&record, g_bytes_unref);

  /* The domain changes its mind; a reload applies it to the attached VM. */
  g_assert_cmpint (unlink (choice), ==, 0);
  kill (h->vgicd_pid, SIGHUP);
  for (int i = 0; i < 100; i++)
    {
      g_clear_error (&error);
      g_clear_pointer (&record, g_bytes_unref);
      if (vgicd_client_save (off, &record, &error))
        break;
      g_usleep (20000);
    }
  g_assert_no_error (error);

  /* By UUID in the static policy. */
  later = attach_uuid (h, sim, s, "any-name", "33333333-0000-4000-8000-000000000003");
  g_assert_cmpstr (vgicd_client_get_mode (later), ==, "off");

  g_assert_true (g_file_get_contents (h->log_path, &log, NULL, NULL));
  g_assert_nonnull (strstr (log, "save declined: mode is off (domain metadata)"));
}

/* A connection closed before its first byte is a reachability probe (the
 * libvirt hook's): vgicd says nothing about it, and serves on. */
static void
test_probe_is_silent (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[0];
  g_autoptr (VgicSim) sim = make_sim (s, TRUE);
  g_autoptr (VgicdClient) c = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *log = NULL;

  for (int i = 0; i < 20; i++)
    {
      g_autoptr (GSocketClient) sc = g_socket_client_new ();
      g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (h->socket_path);
      g_autoptr (GSocketConnection) conn =
        g_socket_client_connect (sc, G_SOCKET_CONNECTABLE (addr), NULL, &error);

      g_assert_no_error (error);
      g_io_stream_close (G_IO_STREAM (conn), NULL, NULL);
      /* One at a time, as hooks come: the listen backlog is short. */
      g_usleep (10000);
    }
  c = attach (h, sim, s, "after-probes");
  g_assert_true (vgicd_client_save (c, &record, &error));
  g_assert_true (g_file_get_contents (h->log_path, &log, NULL, NULL));
  g_assert_null (strstr (log, "handshake"));
}

/* The stream of QEMU's own fields: SaveFields hands back exactly what the
 * one-by-one get reads, batched; LoadList runs QEMU's own restore, batched,
 * and the destination then reads back what the source held.  (The write
 * list here is vgicd's planner's, which follows kvm_arm_gicv3_put; the
 * nested QEMU tier runs the real put.)  A damaged list writes nothing; mode
 * off declines SaveFields; Record= is announced. */
static VgicdAccess *
qemu_put_of (VgicSim *sim, const Shape *s, gsize *n)
{
  g_autoptr (VgicShape) shape = sim_shape (sim, s);
  g_autoptr (VgicList) reads = NULL;
  g_autoptr (VgicValues) values = NULL;
  g_autoptr (VgicList) put = NULL;
  g_autoptr (GError) error = NULL;
  VgicdAccess *out;

  reads = vgic_direct_save (shape, vgic_sim_get_fd (sim), VGIC_EXEC_SINGLE, FALSE, NULL, &error);
  g_assert_no_error (error);
  values = vgic_values_from_reads (reads->entries, reads->len, &error);
  g_assert_no_error (error);
  put = vgic_plan_restore_write (shape, values, FALSE, &error);
  g_assert_no_error (error);
  out = g_new (VgicdAccess, put->len);
  for (guint i = 0; i < put->len; i++)
    out[i] = (VgicdAccess) { put->entries[i].group, put->entries[i].attr,
                             put->entries[i].value };
  *n = put->len;
  return out;
}

static void
test_fields (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[2];
  g_autoptr (VgicSim) src = make_sim (s, TRUE);
  g_autoptr (VgicSim) dst = make_sim (s, TRUE);
  g_autoptr (VgicSim) spoilt = make_sim (s, TRUE);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL, cx = NULL;
  g_autoptr (VgicdRegs) regs = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) want = NULL, got = NULL;
  g_autoptr (VgicSimState) before = NULL;
  g_autofree VgicdAccess *put = NULL;
  g_autoptr (VgicShape) shape = NULL;
  g_autoptr (VgicList) direct = NULL;
  VgicdClientStats st;
  gsize n;

  vgic_sim_randomize (src, 41);
  cs = attach (h, src, s, "fields-src");
  g_assert_true (vgicd_client_offers_fields (cs));
  g_assert_false (vgicd_client_wants_record (cs));

  /* Every register QEMU's get reads, with the value it reads. */
  g_assert_true (vgicd_client_save_fields (cs, &regs, &error));
  g_assert_no_error (error);
  vgicd_client_get_stats (cs, &st);
  g_assert_true (st.batched);
  g_assert_cmpuint (st.ioctls, <=, 4);
  shape = sim_shape (src, s);
  direct = vgic_direct_save (shape, vgic_sim_get_fd (src), VGIC_EXEC_SINGLE, FALSE, NULL,
                             &error);
  g_assert_no_error (error);
  for (guint i = 0; i < direct->len; i++)
    {
      guint64 v = ~0ULL;

      if (!vgicd_regs_lookup (regs, direct->entries[i].group, direct->entries[i].attr, &v))
        g_error ("SaveFields did not read entry %u of QEMU's get", i);
      g_assert_cmphex (v, ==, direct->entries[i].value);
    }

  /* QEMU's own restore, batched, into a fresh VM. */
  put = qemu_put_of (src, s, &n);
  cd = attach (h, dst, s, "fields-dst");
  g_assert_true (vgicd_client_load_list (cd, put, n, &error));
  g_assert_no_error (error);
  vgicd_client_get_stats (cd, &st);
  g_assert_true (st.batched);
  g_assert_cmpuint (st.ioctls, <=, 4);
  /* All QEMU's fields carry arrived; the routes they have no room for did
   * not (test_routes()). */
  want = qemu_visible_state (src, s);
  got = qemu_visible_state (dst, s);
  g_assert_true (g_bytes_equal (want, got));
  g_clear_pointer (&want, g_bytes_unref);
  g_clear_pointer (&got, g_bytes_unref);
  want = visible_state (src, s);
  got = visible_state (dst, s);
  g_assert_false (g_bytes_equal (want, got));

  /* Two writes out of order: refused, nothing written. */
  {
    VgicdAccess t = put[10];

    put[10] = put[11];
    put[11] = t;
  }
  cx = attach (h, spoilt, s, "fields-spoilt");
  before = vgic_sim_state_get (spoilt);
  g_assert_false (vgicd_client_load_list (cx, put, n, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_REFUSED);
  g_assert_nonnull (strstr (error->message, "differs from the one vgicd plans"));
  g_clear_error (&error);
  assert_untouched (spoilt, before);

  /* Mode off declines a SaveFields as it declines a Save. */
  g_assert_true (vgicd_harness_set_mode (h, "off", &error));
  g_clear_pointer (&regs, vgicd_regs_free);
  g_assert_false (vgicd_client_save_fields (cs, &regs, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DECLINED);
  g_assert_null (regs);
  g_clear_error (&error);

  /* ... and a LoadList (QEMU's own put then runs), changing nothing. */
  g_free (put);
  put = qemu_put_of (src, s, &n);
  g_assert_false (vgicd_client_load_list (cx, put, n, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DECLINED);
  assert_untouched (spoilt, before);
}

/* Record=true (the host's, or a VM's in vms.conf) is what the attach says. */
/* Route every SPI QEMU's addressing misses (above nr_irqs / 2) to a vCPU
 * other than vCPU 0, whose affinity is 0: a route a fresh destination
 * could only have by chance. */
static guint
route_high_spis (VgicSim *sim, const Shape *s)
{
  g_autoptr (VgicSimState) state = vgic_sim_state_get (sim);
  g_autoptr (GError) error = NULL;
  guint n = 0;

  for (guint irq = s->irqs / 2 + 1; irq < s->irqs; irq++, n++)
    state->spis[irq - 32].route = vgic_sim_get_mpidr (sim, 1 + irq % (s->vcpus - 1)) & 0xffffff;
  g_assert_true (vgic_sim_state_set (sim, state, &error));
  g_assert_no_error (error);
  return n;
}

/* How many SPIs route differently on @a and @b. */
static guint
routes_differing (VgicSim *a, VgicSim *b, const Shape *s)
{
  g_autoptr (VgicSimState) x = vgic_sim_state_get (a);
  g_autoptr (VgicSimState) y = vgic_sim_state_get (b);
  guint n = 0;

  for (guint irq = 32; irq < s->irqs; irq++)
    n += x->spis[irq - 32].route != y->spis[irq - 32].route;
  return n;
}

/*
 * Every SPI's route is migrated through vgicd's record, including those
 * QEMU 10.0's GICD_IROUTER addressing misses (0x6000 + 4n: the SPIs above
 * nr_irqs / 2); QEMU's own path and vgicd's fields path keep QEMU's
 * accesses, and lose them.  A record whose source never set those routes
 * is written as version 1, which any vgicd loads.
 */
static void
test_routes (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[3];	/* 64 vCPUs, 992 IRQs: 495 routes QEMU misses */
  g_autoptr (VgicSim) src = make_sim (s, TRUE);
  g_autoptr (VgicSim) dst = make_sim (s, TRUE);
  g_autoptr (VgicSim) own = make_sim (s, TRUE);
  g_autoptr (VgicSim) plain = make_sim (s, TRUE);
  g_autoptr (VgicSim) plain_dst = make_sim (s, TRUE);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL, cp = NULL, cpd = NULL;
  g_autoptr (VgicSimState) a = NULL, b = NULL;
  g_autoptr (GString) diff = g_string_new (NULL);
  g_autoptr (GBytes) record = NULL, plain_record = NULL;
  g_autoptr (VgicRecord) r = NULL;
  g_autoptr (VgicShape) shape = NULL;
  g_autoptr (VgicList) reads = NULL;
  g_autoptr (VgicValues) values = NULL;
  g_autoptr (GError) error = NULL;
  guint high;

  vgic_sim_randomize (src, 4242);
  high = route_high_spis (src, s);
  g_assert_cmpuint (high, ==, s->irqs / 2 - 1);

  /* Through vgicd's record: the whole register file arrives. */
  cs = attach (h, src, s, "routes-src");
  cd = attach (h, dst, s, "routes-dst");
  g_assert_true (vgicd_client_save (cs, &record, &error));
  g_assert_no_error (error);
  r = vgic_record_decode (g_bytes_get_data (record, NULL), g_bytes_get_size (record), &error);
  g_assert_no_error (error);
  g_assert_cmpuint (r->version, ==, VGIC_RECORD_VERSION_ROUTES);
  g_assert_true (r->routes);
  g_assert_true (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                    g_bytes_get_size (record), &error));
  g_assert_no_error (error);
  a = vgic_sim_state_get (src);
  b = vgic_sim_state_get (dst);
  if (!vgic_sim_state_equal (a, b, diff))
    g_error ("the record path lost state: %s", diff->str);

  /* QEMU's own path: every route QEMU misses stays the fresh VM's 0. */
  shape = sim_shape (src, s);
  reads = vgic_direct_save (shape, vgic_sim_get_fd (src), VGIC_EXEC_SINGLE, FALSE, NULL,
                            &error);
  g_assert_no_error (error);
  values = vgic_values_from_reads (reads->entries, reads->len, &error);
  g_assert_no_error (error);
  g_assert_true (vgic_direct_restore (shape, vgic_sim_get_fd (own), values, FALSE,
                                      VGIC_EXEC_SINGLE, NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (routes_differing (src, own, s), ==, high);

  /* A VM that never routed those SPIs: a version 1 record, as an older
   * vgicd writes and reads it; loaded, those routes stay the
   * destination's (0 on a fresh VM, as the source's). */
  vgic_sim_randomize (plain, 4242);
  {
    g_autoptr (VgicSimState) p = vgic_sim_state_get (plain);

    for (guint irq = s->irqs / 2 + 1; irq < s->irqs; irq++)
      p->spis[irq - 32].route = 0;
    g_assert_true (vgic_sim_state_set (plain, p, &error));
    g_assert_no_error (error);
  }
  cp = attach_uuid (h, plain, s, "routes-plain", "0f3c1a2e-0000-4000-8000-000000000002");
  cpd = attach_uuid (h, plain_dst, s, "routes-plain-dst", "0f3c1a2e-0000-4000-8000-000000000003");
  g_assert_true (vgicd_client_save (cp, &plain_record, &error));
  g_assert_no_error (error);
  g_clear_pointer (&r, vgic_record_free);
  r = vgic_record_decode (g_bytes_get_data (plain_record, NULL),
                          g_bytes_get_size (plain_record), &error);
  g_assert_no_error (error);
  g_assert_cmpuint (r->version, ==, 1);
  g_assert_false (r->routes);
  g_assert_cmpuint (g_bytes_get_size (plain_record), ==,
                    g_bytes_get_size (record) - (gsize) high * 20);	/* 20 bytes an entry */
  g_assert_true (vgicd_client_load (cpd, g_bytes_get_data (plain_record, NULL),
                                    g_bytes_get_size (plain_record), &error));
  g_assert_no_error (error);
  g_clear_pointer (&a, vgic_sim_state_free);
  g_clear_pointer (&b, vgic_sim_state_free);
  a = vgic_sim_state_get (plain);
  b = vgic_sim_state_get (plain_dst);
  g_string_truncate (diff, 0);
  if (!vgic_sim_state_equal (a, b, diff))
    g_error ("the version 1 record lost state: %s", diff->str);
}

/* GetHistory's entries, as a list of dictionaries. */
static GPtrArray *
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

static const char *
hstr (GPtrArray *a, guint i, const char *key)
{
  const char *s = NULL;

  g_assert_true (g_variant_dict_lookup (g_ptr_array_index (a, i), key, "&s", &s));
  return s;
}

static guint64
hnum (GPtrArray *a, guint i, const char *key)
{
  g_autoptr (GVariant) v = g_variant_dict_lookup_value (g_ptr_array_index (a, i), key, NULL);

  g_assert_nonnull (v);
  if (g_variant_is_of_type (v, G_VARIANT_TYPE_BOOLEAN))
    return g_variant_get_boolean (v);
  return g_variant_is_of_type (v, G_VARIANT_TYPE_UINT32) ? g_variant_get_uint32 (v)
                                                         : g_variant_get_uint64 (v);
}

static void
wait_sessions (VgicdHarness *h, guint64 n)
{
  for (int i = 0; i < 500 && vgicd_harness_stat (h, "sessions") != n; i++)
    g_usleep (10 * 1000);
  g_assert_cmpuint (vgicd_harness_stat (h, "sessions"), ==, n);
}

/* The line of @text that starts with @prefix, or NULL. */
static char *
metric_line (const char *text, const char *prefix)
{
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);

  for (guint i = 0; lines[i]; i++)
    if (g_str_has_prefix (lines[i], prefix))
      return g_strdup (lines[i]);
  return NULL;
}

/*
 * What vgicd keeps of operations after their QEMU has gone: the history
 * (bounded per VM and in VMs), the one-by-one figure (measured on the
 * single path, then estimated), the histograms, and the same figures in
 * Prometheus form, by GetMetrics and in the textfile.
 */
static void
test_history (void)
{
  g_autofree char *metrics_dir = g_dir_make_tmp ("vgicd-metrics-XXXXXX", NULL);
  g_autofree char *prom = g_build_filename (metrics_dir, "vgicd.prom", NULL);
  g_autofree char *conf = g_strdup_printf ("Mode=auto\nAllowUsers=root\nHistory=3\n"
                                           "HistoryVMs=2\nMetricsTextfile=%s\n", prom);
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdHarness) h = vgicd_harness_start (vgicd_bin, policy, conf, &error);
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) src = make_sim (s, TRUE);
  g_autoptr (VgicSim) dst = make_sim (s, TRUE);
  g_autoptr (VgicSim) third = make_sim (s, TRUE);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL, ct = NULL;
  g_autoptr (GBytes) record = NULL, again = NULL;
  g_autoptr (GPtrArray) all = NULL, by_name = NULL, newest = NULL, gone = NULL;
  g_autoptr (GVariant) reply = NULL, stats = NULL, hists = NULL;
  g_autofree char *text = NULL, *file = NULL, *line = NULL, *want = NULL;
  const char *src_uuid = "0f3c1a2e-0000-4000-8000-0000000000a1";
  const char *dst_uuid = "0f3c1a2e-0000-4000-8000-0000000000a2";
  guint64 single_ns, batch_regs;
  gboolean found = FALSE;

  g_assert_no_error (error);
  vgic_sim_randomize (src, 7);
  cs = attach_uuid (h, src, s, "hist-src", src_uuid);
  cd = attach_uuid (h, dst, s, "hist-dst", dst_uuid);
  g_assert_true (vgicd_client_save (cs, &record, &error));
  g_assert_no_error (error);
  g_assert_true (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                    g_bytes_get_size (record), &error));
  g_assert_no_error (error);

  /* The source's QEMU goes away, as at the end of a migration: its save
   * is still there. */
  g_clear_pointer (&cs, vgicd_client_free);
  wait_sessions (h, 1);
  all = history (h, "", 0);
  g_assert_cmpuint (all->len, ==, 2);
  g_assert_cmpstr (hstr (all, 0, "vm"), ==, "hist-src");
  g_assert_cmpstr (hstr (all, 0, "uuid"), ==, src_uuid);
  g_assert_cmpstr (hstr (all, 0, "direction"), ==, "save");
  g_assert_cmpstr (hstr (all, 0, "path"), ==, "batch");
  g_assert_cmpstr (hstr (all, 0, "stream"), ==, "record");
  g_assert_cmpstr (hstr (all, 0, "outcome"), ==, "ok");
  g_assert_cmpuint (hnum (all, 0, "bytes"), ==, g_bytes_get_size (record));
  g_assert_cmpuint (hnum (all, 0, "vcpus"), ==, s->vcpus);
  g_assert_cmpuint (hnum (all, 0, "ioctls"), <=, 3);
  /* Save, then one Next with round 1 and the guessed round 2: two round
   * trips, three when the guess missed (a second round); the load's
   * record, then its guarded writes: two. */
  g_assert_cmpuint (hnum (all, 0, "calls"), >=, 2);
  g_assert_cmpuint (hnum (all, 0, "calls"), <=, 3);
  g_assert_cmpuint (hnum (all, 0, "duration-ns"), >=, hnum (all, 0, "kernel-ns"));
  g_assert_cmpuint (hnum (all, 0, "when-usec"), <=, (guint64) g_get_real_time ());
  batch_regs = hnum (all, 0, "registers");
  g_assert_cmpuint (batch_regs, >, 0);
  /* Nothing was run one by one on this host yet: no estimate. */
  g_assert_cmpuint (hnum (all, 0, "single-ns"), ==, 0);
  g_assert_cmpstr (hstr (all, 1, "vm"), ==, "hist-dst");
  g_assert_cmpstr (hstr (all, 1, "direction"), ==, "load");
  g_assert_cmpuint (hnum (all, 1, "bytes"), ==, g_bytes_get_size (record));
  g_assert_cmpuint (hnum (all, 1, "calls"), ==, 2);

  /* One save one by one measures the host's cost; the next batched save
   * is given an estimate from it, marked as one. */
  g_assert_true (vgicd_harness_set_mode (h, "single", &error));
  g_assert_true (vgicd_client_save (cd, &again, &error));
  g_assert_no_error (error);
  g_clear_pointer (&again, g_bytes_unref);
  g_assert_true (vgicd_harness_set_mode (h, "auto", &error));
  g_assert_true (vgicd_client_save (cd, &again, &error));
  g_assert_no_error (error);
  by_name = history (h, "hist-dst", 0);
  g_assert_cmpuint (by_name->len, ==, 3);	/* History=3: load, single, batch */
  g_assert_cmpstr (hstr (by_name, 1, "path"), ==, "single");
  single_ns = hnum (by_name, 1, "single-ns");
  g_assert_cmpuint (single_ns, ==, hnum (by_name, 1, "kernel-ns"));
  g_assert_false (hnum (by_name, 1, "single-estimated"));
  g_assert_cmpstr (hstr (by_name, 2, "path"), ==, "batch");
  g_assert_true (hnum (by_name, 2, "single-estimated"));
  /* Same VM, same registers: the estimate is the measured cost (but for
   * the rounding of a cost per ioctl and vCPU). */
  g_assert_cmpfloat (fabs ((double) hnum (by_name, 2, "single-ns") - (double) single_ns), <=,
                     single_ns / 1000.0 + 1);

  /* A refused load is kept with its reason; the oldest of this VM's
   * operations makes room for it. */
  {
    guint8 junk[64] = { 'V', 'G', 'I', 'C' };

    g_assert_false (vgicd_client_load (cd, junk, sizeof junk, &error));
    g_clear_error (&error);
  }
  newest = history (h, dst_uuid, 1);
  g_assert_cmpuint (newest->len, ==, 1);
  g_assert_cmpstr (hstr (newest, 0, "outcome"), ==, "refused");
  g_assert_nonnull (strstr (hstr (newest, 0, "message"), "record refused, nothing written"));
  g_ptr_array_unref (by_name);
  by_name = history (h, dst_uuid, 0);
  g_assert_cmpuint (by_name->len, ==, 3);
  g_assert_cmpstr (hstr (by_name, 0, "path"), ==, "single");

  /* HistoryVMs=2: a third VM's operation drops the VM active longest ago
   * (the source, gone since). */
  ct = attach_uuid (h, third, s, "hist-third", "0f3c1a2e-0000-4000-8000-0000000000a3");
  g_clear_pointer (&again, g_bytes_unref);
  g_assert_true (vgicd_client_save (ct, &again, &error));
  g_assert_no_error (error);
  gone = history (h, src_uuid, 0);
  g_assert_cmpuint (gone->len, ==, 0);

  /* The histograms count the successful operations by direction and
   * path: 3 batched saves (src, dst, third), 1 single save, 1 load. */
  reply = vgicd_harness_manager_call (h, "GetStats", NULL, "(a{sv})");
  g_variant_get (reply, "(@a{sv})", &stats);
  hists = g_variant_lookup_value (stats, "histograms", G_VARIANT_TYPE ("aa{sv}"));
  g_assert_nonnull (hists);
  for (gsize i = 0; i < g_variant_n_children (hists); i++)
    {
      g_autoptr (GVariant) e = g_variant_get_child_value (hists, i);
      g_autoptr (GVariantDict) d = g_variant_dict_new (e);
      g_autoptr (GVariant) b = g_variant_dict_lookup_value (d, "buckets", G_VARIANT_TYPE ("at"));
      const char *dir = NULL, *path = NULL;
      guint64 count = 0;
      gsize n;
      const guint64 *cum = g_variant_get_fixed_array (b, &n, sizeof (guint64));

      g_variant_dict_lookup (d, "direction", "&s", &dir);
      g_variant_dict_lookup (d, "path", "&s", &path);
      g_variant_dict_lookup (d, "count", "t", &count);
      g_assert_cmpuint (cum[n - 1], ==, count);
      for (gsize k = 1; k < n; k++)
        g_assert_cmpuint (cum[k - 1], <=, cum[k]);
      if (g_str_equal (dir, "save") && g_str_equal (path, "batch"))
        {
          g_assert_cmpuint (count, ==, 3);
          found = TRUE;
        }
      else if (g_str_equal (dir, "save"))
        g_assert_cmpuint (count, ==, 1);
      else
        g_assert_cmpuint (count, ==, 1);
    }
  g_assert_true (found);

  /* The Prometheus text, by GetMetrics and in the textfile (written
   * within a second of the change, replaced whole). */
  g_clear_pointer (&reply, g_variant_unref);
  reply = vgicd_harness_manager_call (h, "GetMetrics", NULL, "(s)");
  g_variant_get (reply, "(s)", &text);
  g_assert_nonnull (strstr (text, "# TYPE vgicd_operation_duration_seconds histogram\n"));
  g_assert_nonnull (strstr (text, "vgicd_operation_duration_seconds_bucket{direction=\"save\","
                                  "path=\"batch\",le=\"+Inf\"} 3\n"));
  g_assert_nonnull (strstr (text, "vgicd_operation_duration_seconds_count{direction=\"save\","
                                  "path=\"single\"} 1\n"));
  g_assert_nonnull (strstr (text, "\nvgicd_saves_total 4\n"));
  g_assert_nonnull (strstr (text, "\nvgicd_failures_total 1\n"));
  g_assert_nonnull (strstr (text, "vgicd_info{version=\"" PACKAGE_VERSION "\",mode=\"auto\""));
  want = metric_line (text, "vgicd_saves_total ");
  for (int i = 0; i < 300; i++)
    {
      g_clear_pointer (&file, g_free);
      g_clear_pointer (&line, g_free);
      if (g_file_get_contents (prom, &file, NULL, NULL) &&
          (line = metric_line (file, "vgicd_saves_total ")) && g_str_equal (line, want))
        break;
      g_usleep (10 * 1000);
    }
  g_assert_cmpstr (line, ==, want);
  g_assert_true (g_str_has_prefix (file, "# HELP vgicd_info "));
  g_assert_true (g_str_has_suffix (file, "\n"));
  {
    /* Nothing but the file itself is left in its folder. */
    g_autoptr (GDir) dir = g_dir_open (metrics_dir, 0, NULL);
    const char *name;
    guint n = 0;

    while ((name = g_dir_read_name (dir)))
      {
        g_assert_cmpstr (name, ==, "vgicd.prom");
        n++;
      }
    g_assert_cmpuint (n, ==, 1);
  }
  unlink (prom);
  rmdir (metrics_dir);
}

static void
test_record_setting (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdHarness) h = vgicd_harness_start (vgicd_bin, policy,
                                                    "AllowUsers=root\nRecord=false\n", &error);
  const Shape *s = &shapes[0];
  g_autoptr (VgicSim) a = make_sim (s, TRUE);
  g_autoptr (VgicSim) b = make_sim (s, TRUE);
  g_autoptr (VgicdClient) ca = NULL, cb = NULL;

  g_assert_no_error (error);
  g_assert_true (g_file_set_contents (h->vms_conf, "[name db-rec]\nRecord=true\n", -1, NULL));
  ca = attach (h, a, s, "plain");
  cb = attach (h, b, s, "db-rec");
  g_assert_false (vgicd_client_wants_record (ca));
  g_assert_true (vgicd_client_wants_record (cb));
}

int
main (int argc, char **argv)
{
  static const ModeCase auto_batch = { "auto", TRUE, TRUE };
  static const ModeCase single = { "single", TRUE, FALSE };
  g_autoptr (GError) error = NULL;

  vgicd_bin = g_getenv ("VGICD_BIN");
  policy = g_getenv ("VGICD_POLICY");
  if (!vgic_sim_supervise_self (&error))
    g_error ("vgic-sim: %s", error->message);
  g_test_init (&argc, &argv, NULL);
  g_assert_nonnull (vgicd_bin);
  g_assert_nonnull (policy);

  g_test_add_data_func ("/vgicd/round-trip/auto-batch", &auto_batch, test_round_trip);
  g_test_add_data_func ("/vgicd/round-trip/single", &single, test_round_trip);
  g_test_add_func ("/vgicd/round-trip/old-kernel-single-path", test_old_kernel_single_path);
  g_test_add_func ("/vgicd/round-trip/foreign-batch-abi", test_foreign_batch_abi);
  g_test_add_func ("/vgicd/mode-off-declines-save-serves-load", test_mode_off);
  g_test_add_func ("/vgicd/protocol-1-peer", test_protocol1_peer);
  g_test_add_func ("/vgicd/channel-refuses-garbage", test_channel_refuses_garbage);
  g_test_add_func ("/vgicd/channel-peer-does-not-read", test_channel_peer_does_not_read);
  g_test_add_func ("/vgicd/report-error-not-errno", test_report_error_not_errno);
  g_test_add_func ("/vgicd/attach-names", test_attach_names);
  g_test_add_func ("/vgicd/door-bounds", test_door_bounds);
  g_test_add_func ("/vgicd/admitted-peer-bounds", test_admitted_peer_bounds);
  g_test_add_func ("/vgicd/refused-records-change-nothing", test_refused_records_change_nothing);
  g_test_add_func ("/vgicd/guards-refuse-destination", test_guards_refuse_destination);
  g_test_add_func ("/vgicd/guards-refuse-cpu-interface", test_guards_refuse_cpu_interface);
  g_test_add_func ("/vgicd/fault-during-restore", test_fault_during_restore);
  g_test_add_func ("/vgicd/fault-campaign", test_fault_campaign);
  g_test_add_func ("/vgicd/save-guess-is-the-hosts", test_save_guess_is_the_hosts);
  g_test_add_func ("/vgicd/kernel-batch-is-not-a-peers", test_kernel_batch_is_not_a_peers);
  g_test_add_func ("/vgicd/peer-not-allowed", test_peer_not_allowed);
  g_test_add_func ("/vgicd/socket-group", test_socket_group);
  g_test_add_func ("/vgicd/vgicd-gone", test_vgicd_gone);
  g_test_add_func ("/vgicd/bus-gone", test_bus_gone);
  g_test_add_func ("/vgicd/session-limits", test_session_limits);
  g_test_add_func ("/vgicd/fd-limit-outside-systemd", test_fd_limit_outside_systemd);
  g_test_add_func ("/vgicd/vgicd-restarted", test_vgicd_restarted);
  g_test_add_func ("/vgicd/concurrent-sessions", test_concurrent_sessions);
  g_test_add_func ("/vgicd/fields", test_fields);
  g_test_add_func ("/vgicd/routes", test_routes);
  g_test_add_func ("/vgicd/history", test_history);
  g_test_add_func ("/vgicd/record-setting", test_record_setting);
  g_test_add_func ("/vgicd/killed-mid-save", test_killed_mid_save);
  g_test_add_func ("/vgicd/killed-at-each-step", test_killed_at_each_step);
  g_test_add_func ("/vgicd/socket-activated", test_socket_activated);
  g_test_add_func ("/vgicd/sighup-reload", test_sighup_reload);
  g_test_add_func ("/vgicd/sessions-are-private", test_sessions_are_private);
  g_test_add_func ("/vgicd/per-vm-policy", test_per_vm_policy);
  g_test_add_func ("/vgicd/probe-is-silent", test_probe_is_silent);
  return g_test_run ();
}
