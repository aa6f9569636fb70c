/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-load.c - vgicd under load and under attack: what it holds and what
 * an honest QEMU waits.
 *
 * Against a private vgicd (the harness: its own system bus, the project's
 * policy), with VMs in vgic-sim (real ioctls), it measures
 *   1. attach/detach cycles (10,000 by default): vgicd's RSS and open
 *      descriptors at the start and at the end, which should be flat;
 *   2. many VMs at once (64 of 160 vCPUs by default), each saving and
 *      loading into its own destination, several rounds: every record and
 *      every destination compared with its source, the slowest and the
 *      median operation, vgicd's peak RSS and descriptors;
 *   3. an honest QEMU's attach + save while a peer attacks, each attack
 *      a process of its own as a compromised QEMU is (issue 17's table,
 *      row by row where a row is an attack on a live vgicd): none; 80
 *      silent connections (the door's bound: row 2); calls it never reads
 *      (row 4); an attached peer's step-channel calls it never reads (row
 *      1); messages carrying descriptors (row 3); Attach with 8 MiB names
 *      (row 5); crafted records whose entries collide in the decoder's
 *      index, at 512 vCPUs (row 6); and 40 VMs attaching and detaching in
 *      a loop (row 7); for each, the honest figures (median, max) and
 *      vgicd's RSS and descriptors afterwards;
 *   4. the record decoder at 512 vCPUs: a valid record and one whose
 *      entries all collide in its index (row 6), median decode times.
 * Nothing is asserted on time (the figures are read); a wrong record or
 * destination, or a failed honest operation, is an error (exit 1).
 */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <gio/gunixfdlist.h>

#include "crc32c.h"
#include "fake-save.h"
#include "libvgicd.h"
#include "vgic-plan.h"
#include "vgic-record.h"
#include "vgicd/protocol.h"
#include "vgic-direct.h"
#include "vgic-sim.h"
#include "sim-vm.h"
#include "vgicd-harness.h"
#include "figures.h"

static guint opt_cycles = 10000;
static guint opt_sessions = 64;
static guint opt_vcpus = 160;
static guint opt_irqs = 992;
static guint opt_rounds = 3;
static gboolean opt_quick;
static gboolean failed;

static G_NORETURN void
die (const char *what, const GError *error)
{
  fprintf (stderr, "bench-load: %s: %s\n", what, error ? error->message : "failed");
  exit (1);
}

/* ------------------------------------------------------------------ */
/* A VM                                                               */
/* ------------------------------------------------------------------ */

static VgicSim *
sim_new (guint vcpus, guint irqs)
{
  g_autoptr (GError) error = NULL;
  VgicSimConfig c = { .nr_vcpus = vcpus, .nr_irqs = irqs, .has_its = TRUE, .pri_bits = 5,
                      .batch = TRUE };
  VgicSim *sim = vgic_sim_new (&c, &error);

  if (!sim)
    die ("vgic-sim", error);
  return sim;
}

/* Attach @sim (@vcpus, @irqs) as @name; NULL with @error set if vgicd
 * refused. */
static VgicdClient *
attach (VgicdHarness *h, VgicSim *sim, guint vcpus, guint irqs, const char *name,
        GError **error)
{
  g_autofree guint32 *mpidrs = sim_vm_mpidrs (sim, vcpus);
  VgicdClient *c = vgicd_client_connect (h->address, 0, error);

  if (!c)
    return NULL;
  if (!vgicd_client_attach (c, vgic_sim_get_fd (sim), name, NULL, irqs, vcpus,
                            mpidrs, error))
    {
      vgicd_client_free (c);
      return NULL;
    }
  return c;
}

/* ------------------------------------------------------------------ */
/* 1. Attach/detach cycles                                            */
/* ------------------------------------------------------------------ */

static void
cycles (VgicdHarness *h)
{
  g_autoptr (VgicSim) sim = sim_new (4, 128);
  const guint64 rss0 = vgicd_harness_status_kib (h, "VmRSS:");
  const guint fds0 = vgicd_harness_open_fds (h);
  const gint64 t0 = g_get_monotonic_time ();

  for (guint i = 0; i < opt_cycles; i++)
    {
      g_autoptr (GError) error = NULL;
      VgicdClient *c = attach (h, sim, 4, 128, "cycle", &error);

      if (!c)
        die ("attach", error);
      vgicd_client_free (c);
    }
  /* The last detach reaches vgicd as its connection closes. */
  g_usleep (200 * 1000);
  printf ("1. %u attach/detach cycles: %.2f ms each; vgicd RSS %" G_GUINT64_FORMAT " -> %"
          G_GUINT64_FORMAT " KiB, open descriptors %u -> %u\n\n", opt_cycles,
          (g_get_monotonic_time () - t0) / 1000.0 / opt_cycles, rss0, vgicd_harness_status_kib (h, "VmRSS:"),
          fds0, vgicd_harness_open_fds (h));
}

/* ------------------------------------------------------------------ */
/* 2. Many VMs at once                                                */
/* ------------------------------------------------------------------ */

typedef struct {
  VgicdHarness *h;
  guint index;
  GMutex *lock;
  GCond *go;
  gboolean *started;
  double ms[2 * 16];	/* save, load per round */
  gboolean ok;
} Worker;

static gpointer
worker (gpointer data)
{
  Worker *w = data;
  g_autoptr (VgicSim) src = sim_new (opt_vcpus, opt_irqs);
  g_autoptr (VgicSim) dst = sim_new (opt_vcpus, opt_irqs);
  g_autofree char *name = g_strdup_printf ("vm%02u", w->index);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;

  vgic_sim_randomize (src, 7000 + w->index);
  cs = attach (w->h, src, opt_vcpus, opt_irqs, name, &error);
  cd = cs ? attach (w->h, dst, opt_vcpus, opt_irqs, name, &error) : NULL;
  /* Start together: the rounds overlap. */
  g_mutex_lock (w->lock);
  while (!*w->started)
    g_cond_wait (w->go, w->lock);
  g_mutex_unlock (w->lock);
  if (!cd)
    {
      fprintf (stderr, "%s: attach: %s\n", name, error->message);
      return NULL;
    }
  for (guint r = 0; r < opt_rounds; r++)
    {
      gint64 t = g_get_monotonic_time ();

      g_clear_pointer (&record, g_bytes_unref);
      if (!vgicd_client_save (cs, &record, &error))
        break;
      w->ms[2 * r] = (g_get_monotonic_time () - t) / 1000.0;
      t = g_get_monotonic_time ();
      if (!vgicd_client_load (cd, g_bytes_get_data (record, NULL), g_bytes_get_size (record),
                              &error))
        break;
      w->ms[2 * r + 1] = (g_get_monotonic_time () - t) / 1000.0;
    }
  if (error)
    {
      fprintf (stderr, "%s: %s\n", name, error->message);
      return NULL;
    }
  {
    /* The record is the source, and so is the destination: read back one
     * register per ioctl, bypassing vgicd. */
    g_autoptr (VgicShape) shape = NULL;
    g_autofree guint32 *mpidrs = sim_vm_mpidrs (src, opt_vcpus);
    g_autoptr (VgicList) a = NULL, b = NULL;

    shape = vgic_shape_new (opt_irqs, opt_vcpus, mpidrs, &error);
    a = shape ? vgic_direct_save (shape, vgic_sim_get_fd (src), VGIC_EXEC_BATCH, TRUE, NULL,
                                  &error)
              : NULL;
    b = a ? vgic_direct_save (shape, vgic_sim_get_fd (dst), VGIC_EXEC_BATCH, TRUE, NULL,
                                  &error)
          : NULL;
    w->ok = b && vgic_list_same_accesses (a, b) &&
            memcmp (a->entries, b->entries, a->len * sizeof *a->entries) == 0;
    if (a)
      {
        g_autoptr (GBytes) want = vgic_record_encode (shape, a->entries, a->len, NULL);

        w->ok &= want && g_bytes_equal (want, record);
      }
  }
  return NULL;
}

static int
cmp_double (const void *a, const void *b)
{
  const double x = *(const double *) a, y = *(const double *) b;

  return (x > y) - (x < y);
}

static void
many (VgicdHarness *h)
{
  g_autofree Worker *w = g_new0 (Worker, opt_sessions);
  g_autofree GThread **t = g_new0 (GThread *, opt_sessions);
  g_autofree double *save = g_new0 (double, opt_sessions * opt_rounds);
  g_autofree double *load = g_new0 (double, opt_sessions * opt_rounds);
  GMutex lock;
  GCond go;
  gboolean started = FALSE;
  guint good = 0, n = 0;
  gint64 t0;

  g_mutex_init (&lock);
  g_cond_init (&go);
  for (guint i = 0; i < opt_sessions; i++)
    {
      w[i] = (Worker) { .h = h, .index = i, .lock = &lock, .go = &go, .started = &started };
      t[i] = g_thread_new ("qemu", worker, &w[i]);
    }
  /* Let the attaches finish before the rounds start. */
  g_usleep (G_USEC_PER_SEC / 2 + opt_sessions * 20000);
  t0 = g_get_monotonic_time ();
  g_mutex_lock (&lock);
  started = TRUE;
  g_cond_broadcast (&go);
  g_mutex_unlock (&lock);
  for (guint i = 0; i < opt_sessions; i++)
    {
      g_thread_join (t[i]);
      good += w[i].ok;
      for (guint r = 0; r < opt_rounds; r++)
        {
          save[n] = w[i].ms[2 * r];
          load[n++] = w[i].ms[2 * r + 1];
        }
    }
  /* What they leave: their connections closed as their threads ended. */
  g_usleep (300 * 1000);
  qsort (save, n, sizeof *save, cmp_double);
  qsort (load, n, sizeof *load, cmp_double);
  printf ("2. %u VMs of %u vCPUs and %u IRQs, each saving and loading %u times at once "
          "(%.0f ms in all): %u of %u correct (record and destination equal the source)\n"
          "   save: median %.2f ms, max %.2f ms; load: median %.2f ms, max %.2f ms\n"
          "   vgicd: peak RSS %" G_GUINT64_FORMAT " KiB; after they detached, RSS %"
          G_GUINT64_FORMAT " KiB (what malloc keeps), %u descriptors\n\n",
          opt_sessions, opt_vcpus, opt_irqs, opt_rounds, (g_get_monotonic_time () - t0) / 1000.0,
          good, opt_sessions, save[n / 2], save[n - 1], load[n / 2], load[n - 1],
          vgicd_harness_status_kib (h, "VmHWM:"), vgicd_harness_status_kib (h, "VmRSS:"), vgicd_harness_open_fds (h));
  if (good != opt_sessions)
    failed = TRUE;
  g_mutex_clear (&lock);
  g_cond_clear (&go);
}

/* ------------------------------------------------------------------ */
/* 3. An honest QEMU under attack                                     */
/* ------------------------------------------------------------------ */

typedef enum { NONE, SILENT, FLOOD, CHANNEL, FDS, NAMES, RECORDS, CHURN } Attack;

static const char *const attack_names[] = {
  [NONE] = "none",
  [SILENT] = "80 silent connections (another process)",
  [FLOOD] = "a process sending calls it never reads",
  [CHANNEL] = "an attached peer's channel calls, never read",
  [FDS] = "messages carrying 64 descriptors each",
  [NAMES] = "Attach with an 8 MiB name, again and again",
  [RECORDS] = "crafted colliding records (512 vCPUs)",
  [CHURN] = "40 VMs attaching and detaching in a loop",
};

/* The attackers that run as programs of their own (this one, exec'd with
 * --attack=KIND): they use GDBus and libvgicd, which a forked child of a
 * threaded process may not. */
static const char *const attack_kinds[] = {
  [CHANNEL] = "channel", [FDS] = "fds", [NAMES] = "names", [RECORDS] = "records",
};

typedef struct {
  VgicdHarness *h;
  Attack how;
  volatile gint stop;
  guint *done;		/* attacks made (connections, calls, cycles): shared memory */
  pid_t child;		/* the attacking process (all but CHURN) */
  int count_fd;		/* the memfd *done is mapped from */
} Attacker;

static int
raw_connect (const char *path)
{
  struct sockaddr_un a = { .sun_family = AF_UNIX };
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

  g_strlcpy (a.sun_path, path, sizeof a.sun_path);
  if (fd >= 0 && connect (fd, (struct sockaddr *) &a, sizeof a) < 0)
    {
      close (fd);
      fd = -1;
    }
  return fd;
}

/* The attackers that are processes of their own, as a compromised QEMU
 * is (the door's bounds are per process): in a forked child of this
 * threaded process, system calls only, until killed. */
static G_NORETURN void
silent_child (const char *path, guint *done)
{
  int fds[80];

  for (;;)
    {
      for (guint i = 0; i < G_N_ELEMENTS (fds); i++)
        fds[i] = raw_connect (path);
      *done += G_N_ELEMENTS (fds);
      sleep (6);	/* past the door's deadline, then again */
      for (guint i = 0; i < G_N_ELEMENTS (fds); i++)
        if (fds[i] >= 0)
          close (fds[i]);
    }
}

/* The AUTH EXTERNAL handshake of this process's uid, by hand, asking for
 * fd passing when @fds. */
static char *
external_auth (gboolean fds)
{
  g_autofree char *uid = g_strdup_printf ("%u", (guint) getuid ());
  GString *auth = g_string_new ("AUTH EXTERNAL ");

  for (const char *c = uid; *c; c++)
    g_string_append_printf (auth, "%02x", (guint) (guchar) *c);
  g_string_append (auth, fds ? "\r\nNEGOTIATE_UNIX_FD\r\nBEGIN\r\n" : "\r\nBEGIN\r\n");
  return g_string_free (auth, FALSE);
}

/* The D-Bus handshake by hand (@auth), then the call @blob again and
 * again, each with @n_fds descriptors @fds (none if 0), never reading;
 * again whenever vgicd closes the connection.  System calls only, so that
 * a forked child of this threaded process may run it. */
static G_NORETURN void
flood (const char *path, const char *auth, const guint8 *blob, gsize len, const int *fds,
       guint n_fds, guint *done)
{
  union { struct cmsghdr h; char space[CMSG_SPACE (64 * sizeof (int))]; } control;
  char buf[256];

  g_assert (n_fds <= 64);
  for (;;)
    {
      int fd = raw_connect (path);

      if (fd < 0 || send (fd, "", 1, MSG_NOSIGNAL) != 1 ||
          send (fd, auth, strlen (auth), MSG_NOSIGNAL) < 0 || recv (fd, buf, sizeof buf, 0) <= 0)
        {
          if (fd >= 0)
            close (fd);
          usleep (1000);
          continue;
        }
      for (;;)
        {
          struct iovec iov = { (void *) blob, len };
          struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

          if (n_fds)
            {
              struct cmsghdr *cm;

              msg.msg_control = control.space;
              msg.msg_controllen = CMSG_SPACE (n_fds * sizeof (int));
              cm = CMSG_FIRSTHDR (&msg);
              cm->cmsg_level = SOL_SOCKET;
              cm->cmsg_type = SCM_RIGHTS;
              cm->cmsg_len = CMSG_LEN (n_fds * sizeof (int));
              memcpy (CMSG_DATA (cm), fds, n_fds * sizeof (int));
            }
          if (sendmsg (fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0)
            (*done)++;
          else if (errno == EAGAIN)
            usleep (1000);
          else
            break;	/* vgicd closed it */
        }
      close (fd);
    }
}

/* The Attach argument of an attacker's VM: @vcpus at their default
 * affinities, 64 IRQs, @name, @features. */
static GVariant *
attacker_vm (const char *name, guint vcpus, const char *const *features)
{
  GVariantBuilder b;
  g_autofree guint32 *mpidrs = g_new (guint32, vcpus);

  for (guint i = 0; i < vcpus; i++)
    mpidrs[i] = vgic_default_mpidr (i);
  g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&b, "{sv}", VGICD_VM_NAME, g_variant_new_string (name));
  g_variant_builder_add (&b, "{sv}", VGICD_VM_NR_IRQS, g_variant_new_uint32 (64));
  g_variant_builder_add (&b, "{sv}", VGICD_VM_MPIDRS,
                         g_variant_new_fixed_array (G_VARIANT_TYPE_UINT32, mpidrs, vcpus,
                                                    sizeof (guint32)));
  g_variant_builder_add (&b, "{sv}", VGICD_VM_FEATURES, g_variant_new_strv (features, -1));
  return g_variant_builder_end (&b);
}

static GDBusConnection *
attacker_connect (const char *address)
{
  GDBusConnection *c;

  while (!(c = g_dbus_connection_new_for_address_sync (
               address, G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT, NULL, NULL, NULL)))
    usleep (10 * 1000);
  return c;
}

/* Attach @vm on @c; the reply's fds, or NULL if vgicd refused. */
static GUnixFDList *
attacker_attach (GDBusConnection *c, GVariant *vm, GVariant **info)
{
  GUnixFDList *fds = NULL;
  g_autoptr (GVariant) reply = g_dbus_connection_call_with_unix_fd_list_sync (
      c, NULL, VGICD_HELPER_PATH, VGICD_HELPER_IFACE, "Attach", g_variant_new ("(@a{sv})", vm),
      NULL, G_DBUS_CALL_FLAGS_NONE, 5000, NULL, &fds, NULL, NULL);

  if (reply && info)
    g_variant_get_child (reply, 2, "@a{sv}", info);
  if (!reply)
    g_clear_object (&fds);
  return fds;
}

/* CHANNEL (row 1): attach with a step channel, send Save packets on it and
 * never read an answer; attach again whenever vgicd closes it. */
static G_NORETURN void
attack_channel (const char *address, guint *done)
{
  static const char *const features[] = {
    VGICD_FEATURE_GUARDS, VGICD_FEATURE_RECORD_WINDOW, VGICD_FEATURE_CHANNEL, NULL,
  };
  guint8 packet[sizeof (VgicdChannelHeader) + 1] = { 0 };
  VgicdChannelHeader h = { .method = VGICD_CHANNEL_SAVE };

  memcpy (packet, &h, sizeof h);
  for (;;)
    {
      g_autoptr (GDBusConnection) c = attacker_connect (address);
      g_autoptr (GVariant) info = NULL;
      g_autoptr (GUnixFDList) fds = attacker_attach (c, attacker_vm ("channel", 4, features),
                                                     &info);
      gint32 handle = -1;
      int fd;

      if (!fds || !g_variant_lookup (info, VGICD_INFO_CHANNEL, "h", &handle) ||
          (fd = g_unix_fd_list_get (fds, handle, NULL)) < 0)
        {
          usleep (10 * 1000);
          continue;
        }
      for (;;)
        {
          if (send (fd, packet, sizeof packet, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0)
            (*done)++;
          else if (errno == EAGAIN)
            usleep (1000);
          else
            break;	/* vgicd closed the channel */
        }
      close (fd);
    }
}

/* FDS (row 3): the handshake with fd passing, then calls carrying 64
 * descriptors each, again whenever vgicd closes the connection. */
static G_NORETURN void
attack_fds (const char *path, guint *done)
{
  g_autofree char *auth = external_auth (TRUE);
  g_autoptr (GDBusMessage) m =
    g_dbus_message_new_method_call (NULL, VGICD_HELPER_PATH,
                                    "org.freedesktop.DBus.Introspectable", "Introspect");
  g_autoptr (GUnixFDList) list = g_unix_fd_list_new ();
  g_autofree guint8 *blob = NULL;
  int fds[64];
  gsize len = 0;

  for (guint i = 0; i < G_N_ELEMENTS (fds); i++)
    {
      fds[i] = open ("/dev/null", O_RDONLY | O_CLOEXEC);
      g_unix_fd_list_append (list, fds[i], NULL);
    }
  g_dbus_message_set_unix_fd_list (m, list);
  g_dbus_message_set_serial (m, 1);
  blob = g_dbus_message_to_blob (m, &len, G_DBUS_CAPABILITY_FLAGS_UNIX_FD_PASSING, NULL);
  flood (path, auth, blob, len, fds, G_N_ELEMENTS (fds), done);
}

/* NAMES (row 5): Attach with a name of 8 MiB, refused, again. */
static G_NORETURN void
attack_huge_names (const char *address, guint *done)
{
  static const char *const features[] = { NULL };
  g_autofree char *name = g_malloc (8 << 20);

  memset (name, 'x', (8 << 20) - 1);
  name[(8 << 20) - 1] = 0;
  for (;;)
    {
      g_autoptr (GDBusConnection) c = attacker_connect (address);

      while (!g_dbus_connection_is_closed (c))
        {
          GUnixFDList *fds = attacker_attach (c, attacker_vm (name, 4, features), NULL);

          g_clear_object (&fds);	/* refused: there are none */
          (*done)++;
        }
    }
}

static void
put32 (guint8 *p, guint32 v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (guint8) (v >> (8 * i));
}

/* A record for @shape whose entries all start their probe in the
 * decoder's register index at its first slot (the hash is public: attr is
 * the multiplier's inverse times k), as many as a save of the shape may
 * hold, with a valid checksum: issue 17's row 6.  @sliding: the worst the
 * index's bound leaves, instead: entry k starts 254 slots before the end
 * of the cluster the earlier ones made, so that every entry probes 255
 * slots and none is refused by the index (the record is refused later, as
 * not a save's register set). */
static GBytes *
colliding_record (const VgicShape *shape, gboolean sliding)
{
  const guint64 mul = G_GUINT64_CONSTANT (0x9E3779B97F4A7C15);
  const guint32 group = KVM_DEV_ARM_VGIC_GRP_REDIST_REGS;
  GByteArray *rec = g_byte_array_new ();
  guint n = vgic_plan_save_count (shape, TRUE, 4) - 1;
  guint vcpus = shape->nr_vcpus, bits = 4;
  guint64 inv = mul;

  for (int i = 0; i < 6; i++)	/* Newton: the inverse modulo 2^64 */
    inv *= 2 - mul * inv;
  g_byte_array_set_size (rec, 32 + 4 * vcpus + 20 * n + 4);
  memset (rec->data, 0, rec->len);
  memcpy (rec->data, "VGICDREC", 8);
  rec->data[8] = 1;		/* version */
  rec->data[10] = 32;		/* header_len */
  put32 (rec->data + 16, shape->nr_irqs);
  put32 (rec->data + 20, vcpus);
  put32 (rec->data + 24, n);
  for (guint i = 0; i < vcpus; i++)
    put32 (rec->data + 32 + 4 * i, shape->mpidrs[i]);
  while ((1ull << bits) < 2 * (guint64) n)	/* vgic-values.c's table size */
    bits++;
  for (guint k = 0; k < n; k++)
    {
      guint8 *e = rec->data + 32 + 4 * vcpus + 20 * k;
      guint64 home = sliding && k > 254 ? k - 254 : 0;
      guint64 h = sliding ? (home << (64 - bits)) | k : k + 1;
      guint64 attr = (h * inv) ^ ((guint64) group << 59);

      put32 (e, group);
      put32 (e + 4, (guint32) attr);
      put32 (e + 8, (guint32) (attr >> 32));
    }
  put32 (rec->data + rec->len - 4, crc32c (0, rec->data, rec->len - 4));
  return g_byte_array_free_to_bytes (rec);
}

/* RECORDS (row 6): a VM of 512 vCPUs loads colliding records again and
 * again. */
static G_NORETURN void
attack_records (const char *address, guint *done)
{
  const guint vcpus = 512, irqs = 64;
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicSim) sim = sim_new (vcpus, irqs);
  g_autofree guint32 *mpidrs = sim_vm_mpidrs (sim, vcpus);
  g_autoptr (VgicShape) shape = NULL;
  g_autoptr (GBytes) rec = NULL;

  shape = vgic_shape_new (irqs, vcpus, mpidrs, &error);
  if (!shape)
    die ("shape", error);
  rec = colliding_record (shape, FALSE);
  for (;;)
    {
      g_autoptr (VgicdClient) c = NULL;
      g_autoptr (GError) local = NULL;

      while (!(c = vgicd_client_connect (address, 0, NULL)))
        usleep (10 * 1000);
      if (!vgicd_client_attach (c, vgic_sim_get_fd (sim), "records", NULL, irqs, vcpus, mpidrs,
                                NULL))
        {
          usleep (10 * 1000);
          continue;
        }
      while (!vgicd_client_load (c, g_bytes_get_data (rec, NULL), g_bytes_get_size (rec),
                                 &local) &&
             !g_error_matches (local, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_UNREACHABLE))
        {
          (*done)++;
          g_clear_error (&local);
        }
    }
}

/* The child side of --attack=KIND. */
static G_NORETURN void
attacker_main (const char *kind, const char *address, const char *path, int count_fd)
{
  guint *done = mmap (NULL, sizeof (guint), PROT_READ | PROT_WRITE, MAP_SHARED, count_fd, 0);

  if (done == MAP_FAILED)
    die ("attacker: mmap", NULL);
  if (!strcmp (kind, "channel"))
    attack_channel (address, done);
  if (!strcmp (kind, "fds"))
    attack_fds (path, done);
  if (!strcmp (kind, "names"))
    attack_huge_names (address, done);
  if (!strcmp (kind, "records"))
    attack_records (address, done);
  die ("attacker: no such kind", NULL);
}

static void
attack_start (Attacker *a)
{
  g_autofree char *auth = NULL;
  g_autofree guint8 *blob = NULL;
  gsize len = 0;

  if (a->how == FLOOD)
    {
      g_autoptr (GDBusMessage) m =
        g_dbus_message_new_method_call (NULL, "/org/vgicd/Helper1",
                                        "org.freedesktop.DBus.Introspectable", "Introspect");

      auth = external_auth (FALSE);
      g_dbus_message_set_serial (m, 1);
      blob = g_dbus_message_to_blob (m, &len, G_DBUS_CAPABILITY_FLAGS_NONE, NULL);
    }
  if (a->how != SILENT && a->how != FLOOD)
    {
      /* A program of its own: everything is built before fork(), and
       * the child only exec()s. */
      g_autofree char *kind = g_strdup_printf ("--attack=%s", attack_kinds[a->how]);
      g_autofree char *address = g_strdup_printf ("--attack-address=%s", a->h->address);
      g_autofree char *path = g_strdup_printf ("--attack-socket=%s", a->h->socket_path);
      g_autofree char *count = g_strdup_printf ("--attack-count-fd=%d", a->count_fd);
      char *argv[] = { (char *) "bench-load", kind, address, path, count, NULL };
      char self[64];

      g_snprintf (self, sizeof self, "/proc/%d/exe", (int) getpid ());
      a->child = fork ();
      if (a->child < 0)
        die ("fork", NULL);
      if (a->child == 0)
        {
          prctl (PR_SET_PDEATHSIG, SIGKILL);
          execv (self, argv);
          _exit (127);
        }
      return;
    }
  a->child = fork ();
  if (a->child < 0)
    die ("fork", NULL);
  if (a->child == 0)
    {
      if (a->how == SILENT)
        silent_child (a->h->socket_path, a->done);
      flood (a->h->socket_path, auth, blob, len, NULL, 0, a->done);
    }
}

/* CHURN: QEMUs that come and go, in a thread of this process. */
static gpointer
churn (gpointer data)
{
  Attacker *a = data;
  g_autoptr (VgicSim) sim = sim_new (4, 128);
  VgicdClient *c[40] = { NULL };

  while (!g_atomic_int_get (&a->stop))
    for (guint i = 0; i < G_N_ELEMENTS (c) && !g_atomic_int_get (&a->stop); i++)
      {
        g_clear_pointer (&c[i], vgicd_client_free);
        c[i] = attach (a->h, sim, 4, 128, "churn", NULL);
        (*a->done)++;
      }
  for (guint i = 0; i < G_N_ELEMENTS (c); i++)
    g_clear_pointer (&c[i], vgicd_client_free);
  return NULL;
}

static void
under_attack (VgicdHarness *h, Attack how)
{
  g_autoptr (VgicSim) sim = sim_new (opt_vcpus, opt_irqs);
  const guint n = opt_quick ? 10 : 40;
  g_autofree double *attach_ms = g_new (double, n);
  g_autofree double *save_ms = g_new (double, n);
  /* A memfd, not CLOEXEC: the exec'd attackers map it too. */
  int count_fd = memfd_create ("bench-load-count", 0);
  guint *done;
  Attacker a = { .h = h, .how = how, .count_fd = count_fd };
  GThread *t = NULL;

  if (count_fd < 0 || ftruncate (count_fd, sizeof (guint)) < 0)
    die ("memfd", NULL);
  done = mmap (NULL, sizeof (guint), PROT_READ | PROT_WRITE, MAP_SHARED, count_fd, 0);
  if (done == MAP_FAILED)
    die ("mmap", NULL);
  a.done = done;
  *done = 0;
  if (how == CHURN)
    t = g_thread_new ("churn", churn, &a);
  else if (how != NONE)
    attack_start (&a);

  vgic_sim_randomize (sim, 99);
  /* The attack under way (an exec'd attacker first starts and attaches). */
  g_usleep (how == NONE ? 0 : how == SILENT || how == FLOOD || how == CHURN ? 300 * 1000
                                                                          : 1000 * 1000);
  for (guint i = 0; i < n; i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (GBytes) record = NULL;
      gint64 t0 = g_get_monotonic_time ();
      g_autoptr (VgicdClient) c = attach (h, sim, opt_vcpus, opt_irqs, "honest", &error);

      attach_ms[i] = (g_get_monotonic_time () - t0) / 1000.0;
      t0 = g_get_monotonic_time ();
      if (!c || !vgicd_client_save (c, &record, &error))
        {
          fprintf (stderr, "honest QEMU under \"%s\": %s\n", attack_names[how], error->message);
          failed = TRUE;
          save_ms[i] = 0;
          continue;
        }
      save_ms[i] = (g_get_monotonic_time () - t0) / 1000.0;
      g_usleep (20 * 1000);
    }
  g_atomic_int_set (&a.stop, 1);
  if (t)
    g_thread_join (t);
  if (a.child > 0)
    {
      kill (a.child, SIGKILL);
      waitpid (a.child, NULL, 0);
    }
  qsort (attach_ms, n, sizeof *attach_ms, cmp_double);
  qsort (save_ms, n, sizeof *save_ms, cmp_double);
  printf ("| %-44s | %7.2f | %7.2f | %7.2f | %7.2f | %9" G_GUINT64_FORMAT " | %9" G_GUINT64_FORMAT
          " | %5u | %8u |\n", attack_names[how], attach_ms[n / 2], attach_ms[n - 1],
          save_ms[n / 2], save_ms[n - 1], vgicd_harness_status_kib (h, "VmRSS:"), vgicd_harness_status_kib (h, "VmHWM:"),
          vgicd_harness_open_fds (h), *done);
  munmap (done, sizeof (guint));
  close (count_fd);
}

/* ------------------------------------------------------------------ */
/* 4. The record decoder's worst case                                 */
/* ------------------------------------------------------------------ */

/* Median of @runs decodes of @rec against @shape, in ms; whether it
 * decoded in @ok. */
static double
decode_ms (const VgicShape *shape, GBytes *rec, guint runs, gboolean *ok)
{
  g_autofree double *t = g_new (double, runs);

  for (guint i = 0; i < runs; i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (VgicRecord) r = NULL;
      gint64 t0 = g_get_monotonic_time ();

      r = vgic_record_load (g_bytes_get_data (rec, NULL), g_bytes_get_size (rec), shape, &error);
      t[i] = (g_get_monotonic_time () - t0) / 1000.0;
      *ok = r != NULL;
    }
  qsort (t, runs, sizeof *t, cmp_double);
  return t[runs / 2];
}

static void
decoder (void)
{
  printf ("\n4. The record decoder at 512 vCPUs (ms, median of 21, vgicd's own code):\n\n");
  printf ("| %-44s | %7s | %9s | %-8s |\n", "record", "decode", "bytes", "result");
  printf ("|----------------------------------------------|---------|-----------|----------|\n");
  for (guint irqs = 64; irqs <= 1024; irqs += 960)
    {
      g_autoptr (GError) error = NULL;
      g_autofree guint32 *mpidrs = g_new (guint32, 512);
      g_autoptr (VgicShape) shape = NULL;
      g_autoptr (VgicList) reads = NULL;
      g_autoptr (GBytes) valid = NULL, crafted = NULL, sliding = NULL;
      g_autofree char *what_v = NULL, *what_c = NULL, *what_s = NULL;
      gboolean ok_v = FALSE, ok_c = TRUE, ok_s = TRUE;
      double ms_v, ms_c, ms_s;

      for (guint i = 0; i < 512; i++)
        mpidrs[i] = vgic_default_mpidr (i);
      shape = vgic_shape_new (irqs, 512, mpidrs, &error);
      if (!shape)
        die ("shape", error);
      reads = fake_save (shape, TRUE, 5, 7, NULL);
      valid = vgic_record_encode (shape, reads->entries, reads->len, &error);
      if (!valid)
        die ("record", error);
      crafted = colliding_record (shape, FALSE);
      sliding = colliding_record (shape, TRUE);
      ms_v = decode_ms (shape, valid, 21, &ok_v);
      ms_c = decode_ms (shape, crafted, 21, &ok_c);
      ms_s = decode_ms (shape, sliding, 21, &ok_s);
      what_v = g_strdup_printf ("a valid record, %u IRQs", irqs);
      what_c = g_strdup_printf ("every entry colliding, %u IRQs", irqs);
      printf ("| %-44s | %7.2f | %9" G_GSIZE_FORMAT " | %-8s |\n", what_v, ms_v,
              g_bytes_get_size (valid), ok_v ? "decoded" : "REFUSED");
      printf ("| %-44s | %7.2f | %9" G_GSIZE_FORMAT " | %-8s |\n", what_c, ms_c,
              g_bytes_get_size (crafted), ok_c ? "DECODED" : "refused");
      what_s = g_strdup_printf ("255 probes an entry (the bound), %u IRQs", irqs);
      printf ("| %-44s | %7.2f | %9" G_GSIZE_FORMAT " | %-8s |\n", what_s, ms_s,
              g_bytes_get_size (sliding), ok_s ? "DECODED" : "refused");
      if (!ok_v || ok_c || ok_s)
        failed = TRUE;
    }
  printf ("\n(before the index's bound, the colliding record took 574 ms at 512 vCPUs)\n");
}

int
main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- vgicd under load and attack");
  GOptionEntry entries[] = {
    { "cycles", 0, 0, G_OPTION_ARG_INT, &opt_cycles, "attach/detach cycles (10000)", "N" },
    { "sessions", 0, 0, G_OPTION_ARG_INT, &opt_sessions, "VMs at once (64)", "N" },
    { "vcpus", 0, 0, G_OPTION_ARG_INT, &opt_vcpus, "their vCPUs (160)", "N" },
    { "irqs", 0, 0, G_OPTION_ARG_INT, &opt_irqs, "their IRQs (992)", "N" },
    { "rounds", 0, 0, G_OPTION_ARG_INT, &opt_rounds, "save/load rounds (3, at most 16)", "N" },
    { "quick", 0, 0, G_OPTION_ARG_NONE, &opt_quick, "1,000 cycles, 16 VMs, 10 honest runs",
      NULL },
    { NULL },
  };
  g_autoptr (VgicdHarness) h = NULL;
  g_autofree char *attack = NULL, *attack_address = NULL, *attack_socket = NULL;
  gint attack_count_fd = -1;
  GOptionEntry hidden[] = {
    { "attack", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &attack, NULL, NULL },
    { "attack-address", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &attack_address, NULL,
      NULL },
    { "attack-socket", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &attack_socket, NULL, NULL },
    { "attack-count-fd", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_INT, &attack_count_fd, NULL,
      NULL },
    { NULL },
  };

  /* First, before any thread: the sims' ioctls are answered by the
   * supervisor this installs.  An exec'd attacker is already under its
   * parent's filter, whose supervisor serves its sims too. */
  for (int i = 1; i < argc && !attack; i++)
    if (g_str_has_prefix (argv[i], "--attack="))
      attack = g_strdup ("");
  if (!attack && !vgic_sim_supervise_self (&error))
    die ("vgic-sim", error);
  g_clear_pointer (&attack, g_free);
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_main_entries (ctx, hidden, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    die ("options", error);
  if (attack)
    attacker_main (attack, attack_address, attack_socket, attack_count_fd);
  if (opt_quick)
    opt_cycles = MIN (opt_cycles, 1000), opt_sessions = MIN (opt_sessions, 16);
  opt_rounds = CLAMP (opt_rounds, 1, 16);
  opt_sessions = MAX (opt_sessions, 1);
  opt_vcpus = CLAMP (opt_vcpus, 1, 512);
  /* ClientTimeout= at its largest: the VMs of part 2 save all at once on
   * few cores, and this measures what they wait, not the bound.  This
   * process plays every honest QEMU: vgicd's bound per process is for one. */
  h = vgicd_harness_start (VGICD_BIN, VGICD_POLICY,
                           "Mode=auto\nAllowUsers=root\nClientTimeout=5000\n"
                           "MaxConnectionsPerProcess=1024\n", &error);
  if (!h)
    die ("vgicd", error);
  printf ("bench-load: vgicd %s (ClientTimeout=5000), vgic-sim VMs (real ioctls), %u cores\n\n",
          PACKAGE_VERSION, g_get_num_processors ());
  cycles (h);
  many (h);
  printf ("3. An honest QEMU (%u vCPUs) attaching and saving while a peer attacks "
          "(ms; RSS and peak in KiB):\n\n", opt_vcpus);
  printf ("| %-44s | %7s | %7s | %7s | %7s | %9s | %9s | %5s | %8s |\n", "attack", "attach",
          "max", "save", "max", "RSS", "peak", "fds", "attacks");
  printf ("|----------------------------------------------|---------|---------|---------|"
          "---------|-----------|-----------|-------|----------|\n");
  for (Attack how = NONE; how <= CHURN; how++)
    under_attack (h, how);
  printf ("\n(medians; target: each attack within 50 ms of \"none\"; "
          "memory and descriptors flat)\n");
  decoder ();
  return failed ? 1 : 0;
}
