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
 *      a process of its own as a compromised QEMU or a local user is: issue
 *      17's table, row by row where a row is an attack on a live vgicd
 *      (none; 80 silent connections, row 2; calls it never reads, row 4;
 *      an attached peer's step-channel calls it never reads, row 1;
 *      messages carrying descriptors, row 3; Attach with 8 MiB names, row
 *      5; crafted records whose entries collide in the decoder's index at
 *      512 vCPUs, row 6; 40 VMs attaching and detaching in a loop, each
 *      a QEMU process of its own, row 7),
 *      then issue 31's (N1 to N5): connections that finish the D-Bus
 *      handshake and never attach, as many as one process can open; one
 *      connection's unfinished message whose every part carries as many
 *      descriptors as the kernel passes at once (SCM_MAX_FD); unfinished
 *      messages declaring 128 MiB, their bodies streamed and never
 *      finished; GetHistory("", 0) over a full history and GetStats, many
 *      calls in flight from several connections, by `nobody' on the
 *      private system bus; four processes each holding its
 *      MaxHandshakesPerProcess= of silent connections, reopening each one
 *      vgicd closes; one process attaching every session vgicd gives it;
 *      and one making vgicd log as fast as it can (loads refused,
 *      connections closed), whose lines vgicd wrote are held against its
 *      share (LogLinesPerProcess=) in the notes and the verdict; and four
 *      processes reconnecting in a loop (a handshake, a bad header,
 *      close), which keep the socket's backlog full.
 *      On each row, sampled while the attack runs: the honest attach and
 *      save (median, max, and their distance from the row without attack),
 *      how many honest runs fell back (attach refused or save failed),
 *      vgicd's peak RSS (VmRSS, and VmHWM reset through clear_refs), its
 *      peak open descriptors against its RLIMIT_NOFILE (/proc/PID/limits)
 *      less the reserve, whether it stayed up, and how long it took to
 *      answer an honest attach again once the attacker was gone.  The
 *      verdict column says "held" or what broke, against issue 31's
 *      bounds: vgicd up; honest attach and save within 50 ms of the
 *      unloaded figures (median and max) and never falling back; RSS under
 *      256 MiB; descriptors under LimitNOFILE= less the reserve.  A vgicd
 *      that died is restarted for the next row, and the notes under the
 *      table say so, with its exit and the last line of its log;
 *   4. the record decoder at 512 vCPUs: a valid record and one whose
 *      entries all collide in its index (row 6), median decode times.
 * vgicd runs as its unit runs it: RLIMIT_NOFILE 8192 (LimitNOFILE=, set
 * here before the exec) and ClientTimeout= at its default, 250 ms, for the
 * whole run (--client-timeout to change it; part 2 prints its fallbacks);
 * and as on a kernel before 6.16, which lets peers send it descriptors
 * (VGICD_TEST_ACCEPT_FDS), so that rows 3 and N1b measure its own defence
 * against them on any kernel.
 * Parts 1 and 2 play many QEMUs from this one process, so their vgicd
 * lifts the per-process bounds (MaxSessionsPerProcess= and the others, as
 * the test harness does); part 3's vgicd has them at their defaults, since
 * its QEMUs and attackers are each a process of their own.
 * Nothing is asserted on time (the figures are read).  Exit status 1: a
 * wrong record or destination, or a failed honest operation in issue 17's
 * rows (a vgicd without the fixes of issue 31 fails those rows' bounds
 * today, so their breaches, and part 2's fallbacks, only show in the
 * table); with --strict-attacks, any breach of any row as well; with
 * --strict-resources, any breach under attack that is not a time (vgicd
 * died or stayed busy, an honest run fell back for any reason but running
 * out of its time, RSS, descriptors, log lines).  CI
 * (scripts/test.sh, --quick) runs with --strict-resources: on a shared
 * 2-core machine, with a kernel building beside it, the slowest of ten
 * attaches passes 50 ms in about half the runs (attacks or not), so the
 * time bounds are read in the table, not held.  --quick runs issue 31's slow attacks at a reduced scale
 * (the row's name gives it).  Most of issue 31's rows need root (to drop to
 * `nobody', to raise an attacker's descriptor limit, to reset VmHWM).
 */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
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
#include "vgicd-config.h"
#include "vgicd-harness.h"
#include "figures.h"

static guint opt_cycles = 10000;
static guint opt_sessions = 64;
static guint opt_vcpus = 160;
static guint opt_irqs = 992;
static guint opt_rounds = 3;
static gboolean opt_quick;
static guint opt_client_timeout = 250;
static guint opt_nofile = 8192;
static guint opt_fd_reserve = 64;
static gboolean opt_strict;
static char *opt_only;
static gboolean failed;		/* exit 1: a wrong record, an honest failure (issue 17) */
static gboolean breached;	/* a bound of issue 31 broken: exit 1 with --strict-attacks */
/* One of part 3's that is not a time (vgicd down, an honest run falling
 * back under attack, RSS, descriptors, log lines): exit 1 with
 * --strict-resources too. */
static gboolean breached_resources;
static gboolean opt_strict_resources;

/* Issue 31's bounds (the acceptance). */
#define BOUND_EXTRA_MS 50.0
#define BOUND_RSS_KIB (256 * 1024)

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
  double ms[2 * 16];	/* save, load per round; < 0: it fell back or failed */
  guint fell_back;	/* saves that fell back (vgicd did not answer in time) */
  guint load_failed;	/* loads that did not finish (a migration would fail) */
  gboolean ok;
} Worker;

/* Whether @error is libvgicd's "use your own path" for a save that vgicd
 * did not answer in time (ClientTimeout=): a fallback, not a wrong record. */
static gboolean
timed_out (const GError *error)
{
  return g_error_matches (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_UNREACHABLE);
}

static gpointer
worker (gpointer data)
{
  Worker *w = data;
  g_autoptr (VgicSim) src = sim_new (opt_vcpus, opt_irqs);
  g_autoptr (VgicSim) dst = sim_new (opt_vcpus, opt_irqs);
  g_autofree char *name = g_strdup_printf ("vm%02u", w->index);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL;
  g_autoptr (GPtrArray) records = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
  g_autoptr (GError) error = NULL;
  gboolean loaded = FALSE;

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
  /* A save or load that runs out of ClientTimeout= is counted and the
   * rounds go on, as the next migration would; any other error ends them. */
  for (guint r = 0; r < opt_rounds; r++)
    {
      g_autoptr (GBytes) record = NULL;
      gint64 t = g_get_monotonic_time ();

      w->ms[2 * r] = w->ms[2 * r + 1] = -1;
      if (!vgicd_client_save (cs, &record, &error))
        {
          if (!timed_out (error))
            break;
          fprintf (stderr, "%s: save fell back: %s\n", name, error->message);
          w->fell_back++;
          g_clear_error (&error);
          continue;
        }
      w->ms[2 * r] = (g_get_monotonic_time () - t) / 1000.0;
      t = g_get_monotonic_time ();
      if (!vgicd_client_load (cd, g_bytes_get_data (record, NULL), g_bytes_get_size (record),
                              &error))
        {
          if (!timed_out (error))
            break;
          fprintf (stderr, "%s: load failed: %s\n", name, error->message);
          w->load_failed++;
          g_clear_error (&error);
        }
      else
        {
          w->ms[2 * r + 1] = (g_get_monotonic_time () - t) / 1000.0;
          loaded = TRUE;
        }
      g_ptr_array_add (records, g_steal_pointer (&record));
    }
  if (error)
    {
      fprintf (stderr, "%s: %s\n", name, error->message);
      return NULL;
    }
  {
    /* Every record is the source, and so is the destination once a load
     * finished: read back one register per ioctl, bypassing vgicd. */
    g_autoptr (VgicShape) shape = NULL;
    g_autofree guint32 *mpidrs = sim_vm_mpidrs (src, opt_vcpus);
    g_autoptr (VgicList) a = NULL, b = NULL;

    shape = vgic_shape_new (opt_irqs, opt_vcpus, mpidrs, &error);
    a = shape ? vgic_direct_save (shape, vgic_sim_get_fd (src), VGIC_EXEC_BATCH, TRUE, NULL,
                                  &error)
              : NULL;
    b = a && loaded ? vgic_direct_save (shape, vgic_sim_get_fd (dst), VGIC_EXEC_BATCH, TRUE,
                                        NULL, &error)
                    : NULL;
    w->ok = a && (!loaded || (b && vgic_list_same_accesses (a, b) &&
                              memcmp (a->entries, b->entries,
                                      a->len * sizeof *a->entries) == 0));
    if (a)
      {
        g_autoptr (GBytes) want = vgic_record_encode (shape, a->entries, a->len, NULL);

        w->ok &= want != NULL;
        for (guint i = 0; want && i < records->len; i++)
          w->ok &= g_bytes_equal (want, g_ptr_array_index (records, i));
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
  guint good = 0, n = 0, ns = 0, nl = 0, fell_back = 0, load_failed = 0;
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
      fell_back += w[i].fell_back;
      load_failed += w[i].load_failed;
      for (guint r = 0; r < opt_rounds; r++)
        {
          if (w[i].ms[2 * r] >= 0)
            save[ns++] = w[i].ms[2 * r];
          if (w[i].ms[2 * r + 1] >= 0)
            load[nl++] = w[i].ms[2 * r + 1];
        }
    }
  n = opt_sessions * opt_rounds;
  /* What they leave: their connections closed as their threads ended. */
  g_usleep (300 * 1000);
  qsort (save, ns, sizeof *save, cmp_double);
  qsort (load, nl, sizeof *load, cmp_double);
  printf ("2. %u VMs of %u vCPUs and %u IRQs, each saving and loading %u times at once "
          "(%.0f ms in all, ClientTimeout=%u): %u of %u correct (records and destinations "
          "equal the source)\n"
          "   save: median %.2f ms, max %.2f ms; load: median %.2f ms, max %.2f ms\n"
          "   fell back: %u of %u saves; failed (out of time): %u of %u loads: %s\n"
          "   vgicd: peak RSS %" G_GUINT64_FORMAT " KiB; after they detached, RSS %"
          G_GUINT64_FORMAT " KiB (what malloc keeps), %u descriptors\n\n",
          opt_sessions, opt_vcpus, opt_irqs, opt_rounds, (g_get_monotonic_time () - t0) / 1000.0,
          opt_client_timeout, good, opt_sessions, ns ? save[ns / 2] : 0, ns ? save[ns - 1] : 0,
          nl ? load[nl / 2] : 0, nl ? load[nl - 1] : 0, fell_back, n, load_failed, n,
          fell_back + load_failed ? "BREACH (issue 31: none may)" : "held",
          vgicd_harness_status_kib (h, "VmHWM:"), vgicd_harness_status_kib (h, "VmRSS:"),
          vgicd_harness_open_fds (h));
  if (good != opt_sessions)
    failed = TRUE;
  /* Time, on 2 cores with 16 to 64 VMs at once: not --strict-resources'. */
  if (fell_back + load_failed)
    breached = TRUE;
  g_mutex_clear (&lock);
  g_cond_clear (&go);
}

/* ------------------------------------------------------------------ */
/* 3. An honest QEMU under attack                                     */
/* ------------------------------------------------------------------ */

typedef enum {
  NONE, SILENT, FLOOD, CHANNEL, FDS, NAMES, RECORDS, CHURN,	/* issue 17 */
  ADMITTED, FD_PARTS, BIG, HISTORY, STATS, DOOR, SESSIONS,	/* issue 31 */
  LOGS,			/* the journal, after issue 35's audit */
  RECONNECT,		/* the socket's backlog */
  N_ATTACKS
} Attack;

/* The first of issue 31's rows: theirs break no exit status but with
 * --strict-attacks (the header). */
#define FIRST_NEW ADMITTED

/* The scale of issue 31's attacks: full, and --quick's (reduced where the
 * full one takes seconds; the row's name says which). */
typedef struct {
  guint n, m;		/* what the kind's comment says */
} Scale;

static const Scale scale_full[N_ATTACKS] = {
  [ADMITTED] = { 16384 }, [BIG] = { 8, 20 }, [HISTORY] = { 4, 8 }, [STATS] = { 64, 128 },
  [DOOR] = { 32 },
};
static const Scale scale_quick[N_ATTACKS] = {
  [ADMITTED] = { 1024 }, [BIG] = { 3, 64 }, [HISTORY] = { 2, 4 }, [STATS] = { 8, 16 },
  [DOOR] = { 32 },
};
/* The history GetHistory floods: VMs x entries (History=32, HistoryVMs=256,
 * the defaults: full; --quick fills an eighth). */
#define HISTORY_ENTRIES 32
#define HISTORY_VMS_FULL 256
#define HISTORY_VMS_QUICK 32
/* The door's processes (MaxHandshakes= 128 is 4 x MaxHandshakesPerProcess=
 * 32, the defaults) and the bytes an unfinished big message streams. */
#define DOOR_PROCESSES 4
/* CHURN's QEMUs, each a process of its own, one VM each, as on a host
 * (vgicd bounds sessions per process: MaxSessionsPerProcess=). */
#define CHURN_PROCESSES 40
#define CHURN_PAUSE_US (50 * 1000)
#define BIG_DECLARED (128u << 20)
#define BIG_SENT (120u << 20)
/* Descriptors per sendmsg() the kernel passes at most (SCM_MAX_FD). */
#define SCM_MAX 253

static const Scale *scale = scale_full;
static char *attack_names[N_ATTACKS];

static void
attack_names_init (void)
{
  static const char *const fixed[] = {
    [NONE] = "none",
    [SILENT] = "80 silent connections (another process)",
    [FLOOD] = "a process sending calls it never reads",
    [CHANNEL] = "an attached peer's channel calls, never read",
    [FDS] = "messages carrying 64 descriptors each",
    [NAMES] = "Attach with an 8 MiB name, again and again",
    [RECORDS] = "crafted colliding records (512 vCPUs)",
    [CHURN] = "40 VMs attaching and detaching in a loop",
    [FD_PARTS] = "N1b: an unfinished message, 253 fds a part",
    [DOOR] = "N4: 4 processes x 32 silent, reopened",
    [SESSIONS] = "N5: one process taking every session",
    [LOGS] = "a process making vgicd log in a loop",
    [RECONNECT] = "4 processes reconnecting in a loop",
  };
  const guint vms = opt_quick ? HISTORY_VMS_QUICK : HISTORY_VMS_FULL;

  for (guint i = 0; i < N_ATTACKS; i++)
    attack_names[i] = g_strdup (i < G_N_ELEMENTS (fixed) ? fixed[i] : NULL);
  attack_names[ADMITTED] = g_strdup_printf ("N1a: up to %u handshaken, never attaching",
                                            scale[ADMITTED].n);
  attack_names[BIG] = g_strdup_printf ("N3: %u unfinished 128 MiB, %u MiB/s each",
                                       scale[BIG].n, scale[BIG].m);
  attack_names[HISTORY] = g_strdup_printf ("N2: nobody, %u GetHistory (%ux%u) in flight",
                                           scale[HISTORY].n * scale[HISTORY].m, vms,
                                           HISTORY_ENTRIES);
  attack_names[STATS] = g_strdup_printf ("N2: nobody, %ux%u GetStats in flight", scale[STATS].n,
                                         scale[STATS].m);
}

/* The attackers that run as programs of their own (this one, exec'd with
 * --attack=KIND): they use GDBus and libvgicd, which a forked child of a
 * threaded process may not, or raise their own limits and drop to
 * another user. */
static const char *const attack_kinds[] = {
  [CHANNEL] = "channel", [FDS] = "fds", [NAMES] = "names", [RECORDS] = "records",
  [ADMITTED] = "admitted", [FD_PARTS] = "fd-parts", [BIG] = "big", [HISTORY] = "history",
  [STATS] = "stats", [DOOR] = "door", [SESSIONS] = "sessions", [CHURN] = "churn",
  [LOGS] = "logs", [RECONNECT] = "reconnect",
};

typedef struct {
  VgicdHarness *h;
  Attack how;
  volatile gint stop;
  guint *done;		/* attacks made (connections, calls, cycles): shared memory */
  pid_t child[MAX (DOOR_PROCESSES, CHURN_PROCESSES)];	/* the attacking processes */
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

/* Send @len bytes of @data on @fd with @n_fds descriptors @fds; the bytes
 * sent, or -1 with errno. */
static ssize_t
send_with_fds (int fd, const void *data, gsize len, const int *fds, guint n_fds, int flags)
{
  union { struct cmsghdr h; char space[CMSG_SPACE (SCM_MAX * sizeof (int))]; } control;
  struct iovec iov = { (void *) data, len };
  struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

  if (n_fds)
    {
      struct cmsghdr *cm;

      memset (&control, 0, sizeof control);
      msg.msg_control = control.space;
      msg.msg_controllen = CMSG_SPACE (n_fds * sizeof (int));
      cm = CMSG_FIRSTHDR (&msg);
      cm->cmsg_level = SOL_SOCKET;
      cm->cmsg_type = SCM_RIGHTS;
      cm->cmsg_len = CMSG_LEN (n_fds * sizeof (int));
      memcpy (CMSG_DATA (cm), fds, n_fds * sizeof (int));
    }
  return sendmsg (fd, &msg, flags | MSG_NOSIGNAL);
}

/* The D-Bus handshake by hand (@auth), then the call @blob again and
 * again, each with @n_fds descriptors @fds (none if 0), never reading;
 * again whenever vgicd closes the connection.  System calls only, so that
 * a forked child of this threaded process may run it. */
static G_NORETURN void
flood (const char *path, const char *auth, const guint8 *blob, gsize len, const int *fds,
       guint n_fds, guint *done)
{
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
          if (send_with_fds (fd, blob, len, fds, n_fds, MSG_DONTWAIT) >= 0)
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

/* ------------------------------------------------------------------ */
/* Issue 31's attackers                                               */
/* ------------------------------------------------------------------ */

/* As many descriptors as the kernel lets this process have: an attacker
 * holds thousands (root may raise its hard limit; anyone else gets what
 * the hard limit allows). */
static void
raise_nofile (rlim_t want)
{
  struct rlimit r;

  if (getrlimit (RLIMIT_NOFILE, &r) < 0)
    return;
  r.rlim_cur = MAX (r.rlim_cur, want);
  r.rlim_max = MAX (r.rlim_max, want);
  if (setrlimit (RLIMIT_NOFILE, &r) < 0 && getrlimit (RLIMIT_NOFILE, &r) == 0)
    {
      r.rlim_cur = r.rlim_max;
      setrlimit (RLIMIT_NOFILE, &r);
    }
}

/* A connection to @path that finished the D-Bus handshake (EXTERNAL, as
 * libvgicd's GDBus does, by hand), with fd passing agreed when @fds; -1
 * if vgicd refused, closed it or did not answer within a second. */
static int
admitted_connect (const char *path, const char *auth, gboolean fds)
{
  struct sockaddr_un a = { .sun_family = AF_UNIX };
  struct timeval tv = { .tv_sec = 1 };
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  char buf[512];
  gsize got = 0;

  if (fd < 0)
    return -1;
  g_strlcpy (a.sun_path, path, sizeof a.sun_path);
  setsockopt (fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect (fd, (struct sockaddr *) &a, sizeof a) < 0 ||
      send (fd, "", 1, MSG_NOSIGNAL) != 1 ||
      send (fd, auth, strlen (auth), MSG_NOSIGNAL) != (ssize_t) strlen (auth))
    goto fail;
  /* "OK <guid>\r\n", and "AGREE_UNIX_FD\r\n" when asked. */
  while (got < sizeof buf - 1)
    {
      ssize_t r = recv (fd, buf + got, sizeof buf - 1 - got, 0);

      if (r <= 0)
        goto fail;
      got += r;
      buf[got] = 0;
      if (strstr (buf, "ERROR") || strstr (buf, "REJECTED"))
        goto fail;
      if (g_str_has_prefix (buf, "OK ") && strstr (buf, "\r\n") &&
          (!fds || strstr (buf, "AGREE_UNIX_FD\r\n")))
        return fd;
    }
fail:
  close (fd);
  return -1;
}

/* Whether vgicd closed @fd (EOF or an error; it never writes first). */
static gboolean
closed_by_peer (int fd, short revents)
{
  char c;

  if (revents & (POLLHUP | POLLERR | POLLRDHUP))
    return TRUE;
  return (revents & POLLIN) && recv (fd, &c, 1, MSG_DONTWAIT | MSG_PEEK) <= 0;
}

/* Keep @n connections from connect_one open: open what is missing, and
 * again each one vgicd closes; *done counts those opened. */
static G_NORETURN void
hold_connections (guint n, int (*connect_one) (const char *, const char *), const char *path,
                  const char *auth, guint *done)
{
  g_autofree struct pollfd *p = g_new (struct pollfd, n);

  for (guint i = 0; i < n; i++)
    p[i] = (struct pollfd) { .fd = -1, .events = POLLIN | POLLRDHUP };
  for (;;)
    {
      guint opened = 0;

      for (guint i = 0; i < n; i++)
        if (p[i].fd < 0 && (p[i].fd = connect_one (path, auth)) >= 0)
          {
            (*done)++;
            opened++;
          }
      if (poll (p, n, opened ? 0 : 20) > 0)
        for (guint i = 0; i < n; i++)
          if (p[i].fd >= 0 && p[i].revents && closed_by_peer (p[i].fd, p[i].revents))
            {
              close (p[i].fd);
              p[i].fd = -1;
            }
      if (!opened)
        usleep (1000);	/* vgicd refuses, or is gone */
    }
}

static int
connect_admitted (const char *path, const char *auth)
{
  return admitted_connect (path, auth, FALSE);
}

static int
connect_silent (const char *path, const char *auth)
{
  return raw_connect (path);
}

/* ADMITTED (N1a): @n connections that finish the handshake and never
 * attach, as many as vgicd keeps, each reopened when vgicd closes it. */
static G_NORETURN void
attack_admitted (const char *path, guint n, guint *done)
{
  g_autofree char *auth = external_auth (FALSE);

  raise_nofile (n + 64);
  hold_connections (n, connect_admitted, path, auth, done);
}

/* DOOR (N4): one of four processes, each holding @n silent connections
 * (MaxHandshakesPerProcess=), each reopened as vgicd closes it. */
static G_NORETURN void
attack_door (const char *path, guint n, guint *done)
{
  hold_connections (n, connect_silent, path, NULL, done);
}

/* The first bytes of a method call to vgicd whose header declares
 * @declared bytes in all (a body of bytes, "ay"), in @len. */
static guint8 *
declared_message (guint32 declared, gsize *len)
{
  g_autoptr (GDBusMessage) m =
    g_dbus_message_new_method_call (NULL, VGICD_HELPER_PATH, VGICD_HELPER_IFACE, "Attach");
  guint8 *blob;
  guint32 body_len, array_len;

  g_dbus_message_set_body (m, g_variant_new ("(@ay)", g_variant_new_fixed_array (
                                               G_VARIANT_TYPE_BYTE, "x", 1, 1)));
  g_dbus_message_set_serial (m, 1);
  blob = g_dbus_message_to_blob (m, len, G_DBUS_CAPABILITY_FLAGS_NONE, NULL);
  g_assert (blob && blob[0] == 'l');
  /* The header is what is left once the body (array length + 1 byte) is
   * taken away: declare the rest as the body, and as the array. */
  body_len = declared - (guint32) (*len - 5);
  array_len = body_len - 4;
  memcpy (blob + 4, &body_len, 4);
  memcpy (blob + *len - 5, &array_len, 4);
  *len -= 1;		/* the body's one byte: the stream brings the rest */
  return blob;
}

/* FD_PARTS (N1b): one connection (fd passing agreed) sends a message of
 * 64 KiB a byte at a time, every sendmsg() carrying SCM_MAX descriptors,
 * and never finishes it; again when vgicd closes it.  *done counts the
 * descriptors sent. */
static G_NORETURN void
attack_fd_parts (const char *path, guint *done)
{
  g_autofree char *auth = external_auth (TRUE);
  gsize len = 0;
  g_autofree guint8 *blob = declared_message (64 * 1024, &len);
  int fds[SCM_MAX];

  raise_nofile (SCM_MAX + 64);
  for (guint i = 0; i < SCM_MAX; i++)
    fds[i] = open ("/dev/null", O_RDONLY | O_CLOEXEC);
  for (;;)
    {
      int fd = admitted_connect (path, auth, TRUE);
      gsize at = 0;

      if (fd < 0)
        {
          usleep (1000);
          continue;
        }
      /* The fixed header first (what GDBus reads to learn the length),
       * then a byte a part: all the message's header, never its body. */
      while (at < len)
        {
          ssize_t r = send_with_fds (fd, blob + at, at ? 1 : 16, fds, SCM_MAX, 0);

          if (r < 0)
            break;	/* vgicd closed it (or is gone) */
          at += r;
          *done += SCM_MAX;
        }
      if (at >= len)
        {
          struct pollfd p = { .fd = fd, .events = POLLRDHUP };

          poll (&p, 1, -1);	/* hold it until vgicd closes it */
        }
      close (fd);
    }
}

/* BIG (N3): @n connections, each sending a message that declares 128 MiB,
 * its body streamed at @mib_s MiB/s up to 120 MiB and never finished;
 * again when vgicd closes one.  *done counts the MiB sent. */
static G_NORETURN void
attack_big (const char *path, guint n, guint mib_s, guint *done)
{
  g_autofree char *auth = external_auth (FALSE);
  gsize len = 0;
  g_autofree guint8 *head = declared_message (BIG_DECLARED, &len);
  g_autofree guint8 *zeros = g_malloc0 (1 << 20);
  g_autofree int *fd = g_new (int, n);
  g_autofree guint64 *sent = g_new0 (guint64, n);
  guint64 all = 0;

  for (guint i = 0; i < n; i++)
    fd[i] = -1;
  for (;;)
    {
      for (guint i = 0; i < n; i++)
        {
          gsize quota = (gsize) mib_s * (1 << 20) / 200;	/* every 5 ms */

          if (fd[i] < 0)
            {
              if ((fd[i] = admitted_connect (path, auth, FALSE)) < 0)
                continue;
              fcntl (fd[i], F_SETFL, O_NONBLOCK);
              if (send (fd[i], head, len, MSG_NOSIGNAL) != (ssize_t) len)
                {
                  close (fd[i]);
                  fd[i] = -1;
                  continue;
                }
              sent[i] = len;
            }
          while (quota && sent[i] < BIG_SENT)
            {
              ssize_t r = send (fd[i], zeros, MIN (quota, BIG_SENT - sent[i]),
                                MSG_NOSIGNAL | MSG_DONTWAIT);

              if (r < 0 && errno == EAGAIN)
                break;
              if (r < 0)
                {
                  close (fd[i]);	/* vgicd closed it */
                  fd[i] = -1;
                  break;
                }
              sent[i] += r;
              quota -= r;
              all += r;
            }
          if (fd[i] >= 0 && sent[i] >= BIG_SENT)
            {
              struct pollfd p = { .fd = fd[i], .events = POLLRDHUP };

              if (poll (&p, 1, 0) > 0 && closed_by_peer (fd[i], p.revents))
                {
                  close (fd[i]);
                  fd[i] = -1;
                }
            }
        }
      *done = (guint) (all >> 20);
      usleep (5000);
    }
}

/* HISTORY and STATS (N2): @n connections to the system bus, each keeping
 * @m calls of @method in flight (no timeout: as many as the bus lets one
 * connection have unanswered), each answered call made again at once. */
typedef struct {
  GDBusConnection *c;
  const char *method;
  guint *done;
} Caller;

static void caller_call (Caller *k);

static void
caller_answered (GObject *source, GAsyncResult *result, gpointer data)
{
  Caller *k = data;
  GVariant *reply = g_dbus_connection_call_finish (G_DBUS_CONNECTION (source), result, NULL);

  /* The answer (or refusal) itself does not matter: the next call does. */
  g_clear_pointer (&reply, g_variant_unref);
  if (!g_dbus_connection_is_closed (k->c))
    caller_call (k);
}

static void
caller_call (Caller *k)
{
  (*k->done)++;
  g_dbus_connection_call (k->c, "org.vgicd.Manager1", "/org/vgicd/Manager1",
                          "org.vgicd.Manager1", k->method,
                          g_str_equal (k->method, "GetHistory") ? g_variant_new ("(su)", "", 0)
                                                                : NULL,
                          NULL, G_DBUS_CALL_FLAGS_NONE, G_MAXINT, NULL, caller_answered, k);
}

static G_NORETURN void
attack_manager (const char *bus, const char *method, guint n, guint m, guint *done)
{
  g_autofree Caller *k = g_new0 (Caller, n);

  for (guint i = 0; i < n; i++)
    {
      g_autoptr (GError) error = NULL;

      k[i] = (Caller) { .method = method, .done = done };
      k[i].c = g_dbus_connection_new_for_address_sync (
          bus, G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                 G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION, NULL, NULL, &error);
      if (!k[i].c)
        die ("attacker: the system bus", error);
      g_dbus_connection_set_exit_on_close (k[i].c, FALSE);
      for (guint j = 0; j < m; j++)
        caller_call (&k[i]);
    }
  for (;;)
    g_main_context_iteration (NULL, TRUE);
}

/* SESSIONS (N5): attach 512-vCPU VMs until vgicd refuses three in a row,
 * then 4-vCPU ones likewise, keeping every session; then one more every
 * 100 ms, whenever vgicd has room.  *done counts the sessions held. */
static G_NORETURN void
attack_sessions (const char *address, guint *done)
{
  static const char *const features[] = { NULL };
  static const guint sizes[] = { 512, 4 };
  g_autoptr (GPtrArray) held = g_ptr_array_new ();

  raise_nofile (16384);
  for (guint s = 0;; s = MIN (s + 1, G_N_ELEMENTS (sizes) - 1))
    for (guint refused = 0; refused < 3;)
      {
        GDBusConnection *c = attacker_connect (address);
        GUnixFDList *fds = attacker_attach (c, attacker_vm ("grab", sizes[s], features), NULL);

        if (fds)
          {
            g_ptr_array_add (held, c);
            g_ptr_array_add (held, fds);	/* the window, kept open */
            (*done)++;
            refused = 0;
          }
        else
          {
            g_object_unref (c);
            refused++;
            if (s == G_N_ELEMENTS (sizes) - 1)
              usleep (100 * 1000);
          }
      }
}

/* LOGS: a QEMU making vgicd write a line as cheaply as it can, in a
 * loop: its VM's record loaded cut short (refused before the first
 * write: one line), and after every eighth a connection that sends a
 * header no D-Bus message has (closed: one line).  journald drops all of
 * a service's lines past its rate limit (10,000 in 30 s by default), the
 * other VMs' too; vgicd writes a process's lines up to its share
 * (LogLinesPerProcess=) and counts the rest.  @done: the lines caused. */
static G_NORETURN void
attack_logs (const char *address, const char *path, guint *done)
{
  static const guint8 junk[16] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
  g_autoptr (VgicSim) sim = sim_new (4, 128);
  g_autofree guint32 *mpidrs = sim_vm_mpidrs (sim, 4);
  g_autofree char *auth = external_auth (FALSE);
  g_autoptr (GBytes) record = NULL;
  VgicdClient *c;

  for (;;)
    {
      c = vgicd_client_connect (address, 0, NULL);
      if (c && vgicd_client_attach (c, vgic_sim_get_fd (sim), "logs", NULL, 128, 4, mpidrs,
                                    NULL) &&
          vgicd_client_save (c, &record, NULL))
        break;
      g_clear_pointer (&c, vgicd_client_free);
      usleep (10 * 1000);
    }
  for (guint i = 0;; i++)
    {
      g_autoptr (GError) error = NULL;
      char buf[256];
      int fd;

      if (!vgicd_client_load (c, g_bytes_get_data (record, NULL), g_bytes_get_size (record) - 7,
                              &error) &&
          g_error_matches (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_REFUSED))
        __atomic_add_fetch (done, 1, __ATOMIC_RELAXED);
      if (i % 8 != 7 || (fd = raw_connect (path)) < 0)
        continue;
      if (send (fd, "", 1, MSG_NOSIGNAL) == 1 && send (fd, auth, strlen (auth), MSG_NOSIGNAL) > 0 &&
          recv (fd, buf, sizeof buf, 0) > 0 && send (fd, junk, sizeof junk, MSG_NOSIGNAL) > 0 &&
          recv (fd, buf, sizeof buf, 0) <= 0)
        __atomic_add_fetch (done, 1, __ATOMIC_RELAXED);	/* vgicd closed it */
      close (fd);
    }
}

/* RECONNECT: one of four processes connecting, sending a whole handshake
 * and a header no D-Bus message has, and closing, as fast as it can, its
 * connect() not waiting (a full backlog: again at once).  Every one holds
 * a descriptor of vgicd's until its last close, and the connections
 * queued keep the socket's backlog full: an honest QEMU's connect waits
 * its turn (libvgicd, vgicd-client-dial.c).  @done: connections made. */
static G_NORETURN void
attack_reconnect (const char *path, guint *done)
{
  static const guint8 junk[16] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
  g_autofree char *auth = external_auth (FALSE);
  g_autofree char *hello = g_strconcat ("X", auth, NULL);	/* X: the NUL's place */
  struct sockaddr_un a = { .sun_family = AF_UNIX };
  gsize len = strlen (hello);

  hello[0] = '\0';
  g_strlcpy (a.sun_path, path, sizeof a.sun_path);
  for (;;)
    {
      int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

      if (fd < 0)
        _exit (2);
      if (connect (fd, (struct sockaddr *) &a, sizeof a) == 0)
        {
          if (send (fd, hello, len, MSG_NOSIGNAL) == (ssize_t) len)
            (void) send (fd, junk, sizeof junk, MSG_NOSIGNAL);
          __atomic_add_fetch (done, 1, __ATOMIC_RELAXED);
        }
      else
        usleep (100);
      close (fd);
    }
}

/* In a forked attacker, before anything else: it dies with the bench, and
 * it starts a session of its own, which the row's other attackers share.
 * On a host the attackers never share vgicd's scheduling group: systemd
 * puts vgicd in system.slice, the QEMUs in machine.slice and a local
 * user's processes in user.slice, siblings of equal weight.  Here,
 * without systemd, the kernel's autogroups (one per session) stand in for
 * those slices: the attackers are one group, the honest QEMU (this
 * process) another, and the harness starts vgicd and the bus each in a
 * session of its own.  Without this, 40 churning QEMUs or a flooder and
 * the bus it keeps busy weigh many times vgicd in one group, a contention
 * no host gives them. */
static void
attacker_setup (void)
{
  prctl (PR_SET_PDEATHSIG, SIGKILL);
  setsid ();
}

/* Root's attacker becomes @user (the unprivileged local user of N2). */
static void
become (const char *user)
{
  struct passwd *pw = getpwnam (user);

  if (!pw || setgroups (0, NULL) < 0 || setgid (pw->pw_gid) < 0 || setuid (pw->pw_uid) < 0)
    die ("attacker: cannot become the unprivileged user", NULL);
  /* A change of uid clears the parent-death signal. */
  prctl (PR_SET_PDEATHSIG, SIGKILL);
  if (getppid () == 1)
    _exit (0);
}

static void fill_one (const char *address, guint index, guint saves, guint *done);
static G_NORETURN void churn (const char *address, guint *done);

/* The child side of --attack=KIND (@n, @m: its Scale; @bus: the system
 * bus; @user: whom to become first, or NULL). */
static G_NORETURN void
attacker_main (const char *kind, const char *address, const char *path, int count_fd, guint n,
               guint m, const char *bus, const char *user)
{
  guint *done = mmap (NULL, sizeof (guint), PROT_READ | PROT_WRITE, MAP_SHARED, count_fd, 0);

  if (done == MAP_FAILED)
    die ("attacker: mmap", NULL);
  if (user)
    become (user);
  if (!strcmp (kind, "channel"))
    attack_channel (address, done);
  if (!strcmp (kind, "fds"))
    attack_fds (path, done);
  if (!strcmp (kind, "names"))
    attack_huge_names (address, done);
  if (!strcmp (kind, "records"))
    attack_records (address, done);
  if (!strcmp (kind, "admitted"))
    attack_admitted (path, n, done);
  if (!strcmp (kind, "fd-parts"))
    attack_fd_parts (path, done);
  if (!strcmp (kind, "big"))
    attack_big (path, n, m, done);
  if (!strcmp (kind, "history"))
    attack_manager (bus, "GetHistory", n, m, done);
  if (!strcmp (kind, "stats"))
    attack_manager (bus, "GetStats", n, m, done);
  if (!strcmp (kind, "door"))
    attack_door (path, n, done);
  if (!strcmp (kind, "sessions"))
    attack_sessions (address, done);
  if (!strcmp (kind, "churn"))
    churn (address, done);
  if (!strcmp (kind, "logs"))
    attack_logs (address, path, done);
  if (!strcmp (kind, "reconnect"))
    attack_reconnect (path, done);
  if (!strcmp (kind, "fill"))
    {
      fill_one (address, n, m, done);
      exit (0);
    }
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
      g_autofree char *n = g_strdup_printf ("--attack-n=%u", scale[a->how].n);
      g_autofree char *m = g_strdup_printf ("--attack-m=%u", scale[a->how].m);
      g_autofree char *bus = g_strdup_printf ("--attack-bus=%s", a->h->bus_address);
      /* N2's caller is a local user without a privilege: nobody. */
      char *user = a->how == HISTORY || a->how == STATS ? (char *) "--attack-user=nobody" : NULL;
      char *argv[] = { (char *) "bench-load", kind, address, path, count, n, m, bus, user, NULL };
      char self[64];

      guint processes = a->how == DOOR || a->how == RECONNECT ? DOOR_PROCESSES
                        : a->how == CHURN ? CHURN_PROCESSES : 1;

      g_snprintf (self, sizeof self, "/proc/%d/exe", (int) getpid ());
      /* The row's attackers share one session, led by a process that
       * only waits for them (attacker_setup() says why). */
      a->child[0] = fork ();
      if (a->child[0] < 0)
        die ("fork", NULL);
      if (a->child[0] > 0)
        return;
      attacker_setup ();
      for (guint i = 0; i < processes; i++)
        {
          pid_t pid = fork ();

          if (pid < 0)
            _exit (127);
          if (pid == 0)
            {
              prctl (PR_SET_PDEATHSIG, SIGKILL);
              execv (self, argv);
              _exit (127);
            }
        }
      while (wait (NULL) > 0)
        ;
      _exit (0);
    }
  a->child[0] = fork ();
  if (a->child[0] < 0)
    die ("fork", NULL);
  if (a->child[0] == 0)
    {
      attacker_setup ();
      if (a->how == SILENT)
        silent_child (a->h->socket_path, a->done);
      flood (a->h->socket_path, auth, blob, len, NULL, 0, a->done);
    }
}

/* CHURN: a QEMU that comes and goes, one VM attaching and detaching in a
 * loop (--attack=churn; CHURN_PROCESSES of them, each pausing
 * CHURN_PAUSE_US between two). */
static G_NORETURN void
churn (const char *address, guint *done)
{
  g_autoptr (VgicSim) sim = sim_new (4, 128);
  g_autofree guint32 *mpidrs = sim_vm_mpidrs (sim, 4);

  for (;;)
    {
      g_autoptr (VgicdClient) c = vgicd_client_connect (address, 0, NULL);

      if (c && vgicd_client_attach (c, vgic_sim_get_fd (sim), "churn", NULL, 128, 4, mpidrs,
                                    NULL))
        __atomic_add_fetch (done, 1, __ATOMIC_RELAXED);
      /* A VM a few times a second, not as fast as 2 cores allow: forty
       * QEMUs spinning would measure the scheduler, not vgicd. */
      g_usleep (CHURN_PAUSE_US);
    }
}

/* ------------------------------------------------------------------ */
/* vgicd as its unit runs it, watched                                 */
/* ------------------------------------------------------------------ */

static char *harness_config;	/* the [vgicd] keys */
static GString *notes;		/* what the table's rows need said */

/* vgicd starts as its unit starts it: RLIMIT_NOFILE opt_nofile, soft and
 * hard (LimitNOFILE=; vgicd raises its soft limit to the hard one, so
 * both), set before the exec.  The harness runs what it is given, so it is
 * given this program under the name LIMITED (a link in a directory of its
 * own), which sets the limit it finds in LIMITED_ENV and execs vgicd: the
 * harness's pid is vgicd's, and this process and its attackers keep the
 * host's limits. */
#define LIMITED "vgicd-limited"
#define LIMITED_ENV "BENCH_LOAD_VGICD_NOFILE"
static char *limited_dir, *limited_path;

static G_NORETURN void
exec_vgicd_limited (char **argv)
{
  const char *limit = g_getenv (LIMITED_ENV);
  struct rlimit r;

  r.rlim_cur = r.rlim_max = limit ? g_ascii_strtoull (limit, NULL, 10) : 8192;
  if (setrlimit (RLIMIT_NOFILE, &r) < 0)
    {
      fprintf (stderr, "bench-load: setrlimit (RLIMIT_NOFILE, %s): %s\n", limit,
               g_strerror (errno));
      _exit (127);
    }
  argv[0] = (char *) VGICD_BIN;
  execv (VGICD_BIN, argv);
  fprintf (stderr, "bench-load: %s: %s\n", VGICD_BIN, g_strerror (errno));
  _exit (127);
}

/* Start vgicd (*@h NULL) or restart it (the theory above). */
static gboolean
vgicd_start (VgicdHarness **h, GError **error)
{
  if (!limited_path)
    {
      g_autofree char *self = g_file_read_link ("/proc/self/exe", error);
      g_autofree char *limit = g_strdup_printf ("%u", opt_nofile);

      if (!self || !(limited_dir = g_dir_make_tmp ("bench-load-XXXXXX", error)))
        return FALSE;
      limited_path = g_build_filename (limited_dir, LIMITED, NULL);
      if (symlink (self, limited_path) < 0)
        {
          g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno), "symlink %s: %s",
                       limited_path, g_strerror (errno));
          return FALSE;
        }
      g_setenv (LIMITED_ENV, limit, TRUE);
    }
  if (!*h)
    return (*h = vgicd_harness_start (limited_path, VGICD_POLICY, harness_config, error)) != NULL;
  return vgicd_harness_restart_vgicd (*h, error);
}

/* The per-process bounds at their defaults (vgicd.conf's table), as a
 * host runs them: parts 1 and 2 play many QEMUs from this one process, so
 * their vgicd lifts them (as the test harness does); part 3's attackers
 * are one process a QEMU, and the bounds are what it measures. */
static char *
per_process_defaults (void)
{
  gsize n;
  const VgicdConfigKey *keys = vgicd_config_keys (&n);
  GString *s = g_string_new (NULL);

  for (gsize i = 0; i < n; i++)
    if (g_str_has_suffix (keys[i].name, "PerProcess") && keys[i].default_value)
      g_string_append_printf (s, "%s=%s\n", keys[i].name, keys[i].default_value);
  return g_string_free (s, FALSE);
}

/* Whether vgicd runs (a zombie does not: the harness reaps it). */
static gboolean
vgicd_alive (VgicdHarness *h)
{
  g_autofree char *path = g_strdup_printf ("/proc/%d/status", (int) h->vgicd_pid);
  g_autofree char *text = NULL;
  const char *state;

  if (h->vgicd_pid <= 0 || !g_file_get_contents (path, &text, NULL, NULL) ||
      !(state = strstr (text, "State:")))
    return FALSE;
  state += strlen ("State:");
  while (*state == ' ' || *state == '\t')
    state++;
  return *state != 'Z' && *state != 'X';
}

/* How vgicd ended (without reaping it: the harness does) and the last
 * line of its log that says why. */
static char *
vgicd_death (VgicdHarness *h)
{
  siginfo_t si = { 0 };
  g_autofree char *log = NULL, *how = NULL;
  const char *why = NULL;

  /* It may still be exiting (a core dump): up to 2 s. */
  for (guint i = 0; i < 200 && si.si_pid != h->vgicd_pid; i++)
    if (waitid (P_PID, h->vgicd_pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
      break;
    else if (si.si_pid != h->vgicd_pid)
      g_usleep (10 * 1000);
  if (si.si_pid == h->vgicd_pid)
    how = si.si_code == CLD_EXITED ? g_strdup_printf ("exit status %d", si.si_status)
                                   : g_strdup_printf ("%s", g_strsignal (si.si_status));
  else
    how = g_strdup ("gone");
  if (g_file_get_contents (h->log_path, &log, NULL, NULL))
    {
      g_auto (GStrv) lines = g_strsplit (log, "\n", -1);

      for (guint i = 0; lines[i]; i++)
        if (strstr (lines[i], "ERROR") || strstr (lines[i], "CRITICAL") ||
            strstr (lines[i], "Too many") || strstr (lines[i], "rror:"))
          why = lines[i];
      if (why)
        return g_strdup_printf ("%s; its log: \"%.160s\"", how, g_strstrip ((char *) why));
    }
  return g_steal_pointer (&how);
}

/* vgicd's soft RLIMIT_NOFILE, as its /proc/PID/limits says. */
static guint
vgicd_nofile (VgicdHarness *h)
{
  g_autofree char *path = g_strdup_printf ("/proc/%d/limits", (int) h->vgicd_pid);
  g_autofree char *text = NULL;
  const char *line;

  if (!g_file_get_contents (path, &text, NULL, NULL) ||
      !(line = strstr (text, "Max open files")))
    return 0;
  return (guint) g_ascii_strtoull (line + strlen ("Max open files"), NULL, 10);
}

/* Reset vgicd's VmHWM to its RSS now (clear_refs "5"), so that VmHWM is
 * the peak of what follows, between samples too. */
static void
vgicd_reset_peak (VgicdHarness *h)
{
  g_autofree char *path = g_strdup_printf ("/proc/%d/clear_refs", (int) h->vgicd_pid);

  g_file_set_contents_full (path, "5", 1, G_FILE_SET_CONTENTS_NONE, 0644, NULL);
}

/* A thread sampling vgicd's RSS and open descriptors every 20 ms. */
typedef struct {
  VgicdHarness *h;
  volatile gint stop;
  guint64 rss_kib;	/* peaks */
  guint fds;
  gboolean died;	/* vgicd stopped running while it sampled */
  char *error;		/* why a count of its descriptors failed */
} Sampler;

/* The descriptors @pid holds (0, and the first failure's message in
 * @error, if /proc cannot say: never a count that looks right). */
static guint
open_fds (GPid pid, char **error)
{
  g_autoptr (GError) local = NULL;
  guint n = vgicd_count_fds (pid, &local);

  if (local && !*error)
    *error = g_strdup (local->message);
  return n;
}

static gpointer
sampler (gpointer data)
{
  Sampler *s = data;

  while (!g_atomic_int_get (&s->stop))
    {
      if (!vgicd_alive (s->h))
        s->died = TRUE;
      else
        {
          s->rss_kib = MAX (s->rss_kib, vgicd_harness_status_kib (s->h, "VmRSS:"));
          s->rss_kib = MAX (s->rss_kib, vgicd_harness_status_kib (s->h, "VmHWM:"));
          s->fds = MAX (s->fds, open_fds (s->h->vgicd_pid, &s->error));
        }
      g_usleep (20 * 1000);
    }
  return NULL;
}

/* Fill vgicd's history for the GetHistory flood: @vms VMs, each a QEMU
 * process of its own (exec'd, --attack=fill) with a UUID of its own,
 * saving HISTORY_ENTRIES times, eight at once; then say how many entries
 * GetHistory("", 0) answers root. */
static void
fill_history (VgicdHarness *h, guint vms)
{
  const gint64 t0 = g_get_monotonic_time ();
  int count_fd = memfd_create ("bench-load-fill", 0);
  g_autofree char *address = g_strdup_printf ("--attack-address=%s", h->address);
  g_autofree char *count = g_strdup_printf ("--attack-count-fd=%d", count_fd);
  g_autofree char *m = g_strdup_printf ("--attack-m=%u", HISTORY_ENTRIES);
  g_autoptr (GError) error = NULL;
  g_autoptr (GDBusConnection) bus = NULL;
  g_autoptr (GVariant) reply = NULL;
  char self[64];
  pid_t running[8] = { 0 };
  guint *saves;

  if (count_fd < 0 || ftruncate (count_fd, sizeof (guint)) < 0 ||
      (saves = mmap (NULL, sizeof (guint), PROT_READ | PROT_WRITE, MAP_SHARED, count_fd, 0))
        == MAP_FAILED)
    die ("memfd", NULL);
  g_snprintf (self, sizeof self, "/proc/%d/exe", (int) getpid ());
  for (guint i = 0; i < vms + G_N_ELEMENTS (running); i++)
    {
      pid_t *slot = &running[i % G_N_ELEMENTS (running)];

      if (*slot > 0)
        waitpid (*slot, NULL, 0);
      *slot = 0;
      if (i < vms)
        {
          g_autofree char *n = g_strdup_printf ("--attack-n=%u", i);
          char *argv[] = { (char *) "bench-load", (char *) "--attack=fill", address, count, n, m,
                           NULL };

          *slot = fork ();
          if (*slot < 0)
            die ("fork", NULL);
          if (*slot == 0)
            {
              attacker_setup ();
              execv (self, argv);
              _exit (127);
            }
        }
    }
  g_string_append_printf (notes, "- N2: the history filled first by %u QEMU processes, each "
                          "a VM of its own saving %u times: %u saves in %.1f s", vms,
                          HISTORY_ENTRIES, *saves, (g_get_monotonic_time () - t0) / 1e6);
  munmap (saves, sizeof (guint));
  close (count_fd);
  bus = g_dbus_connection_new_for_address_sync (h->bus_address,
                                                G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
                                                G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
                                                NULL, NULL, &error);
  if (bus)
    reply = g_dbus_connection_call_sync (bus, "org.vgicd.Manager1", "/org/vgicd/Manager1",
                                         "org.vgicd.Manager1", "GetHistory",
                                         g_variant_new ("(su)", "", 0),
                                         G_VARIANT_TYPE ("(aa{sv})"), G_DBUS_CALL_FLAGS_NONE,
                                         30000, NULL, &error);
  if (reply)
    {
      g_autoptr (GVariant) entries = g_variant_get_child_value (reply, 0);

      g_string_append_printf (notes, "; GetHistory(\"\", 0) answers root %" G_GSIZE_FORMAT
                              " entries, %" G_GSIZE_FORMAT " bytes.\n",
                              g_variant_n_children (entries), g_variant_get_size (reply));
    }
  else
    g_string_append_printf (notes, "; root's GetHistory: %s.\n", error->message);
}

/* The child side of fill_history(): VM @index saving @saves times
 * (returning, so that what it holds is freed before the exit). */
static void
fill_one (const char *address, guint index, guint saves, guint *done)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64);
  g_autofree guint32 *mpidrs = sim_vm_mpidrs (sim, 1);
  g_autofree char *uuid = g_strdup_printf ("6a1d0000-0000-4000-8000-%012x", index);
  g_autofree char *name = g_strdup_printf ("fill%03u", index);
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdClient) c = vgicd_client_connect (address, 0, &error);

  if (!c || !vgicd_client_attach (c, vgic_sim_get_fd (sim), name, uuid, 64, 1, mpidrs, &error))
    die ("filling the history", error);
  for (guint j = 0; j < saves; j++)
    {
      g_autoptr (GBytes) record = NULL;

      if (vgicd_client_save (c, &record, NULL))
        __atomic_add_fetch (done, 1, __ATOMIC_RELAXED);
    }
}

/* A figure of the table (@sign: with its sign, no decimals), or "-"
 * where there is none. */
static char *
cell (gboolean have, gboolean sign, double x)
{
  if (!have)
    return g_strdup ("-");
  if (sign && x > -0.5 && x < 0.5)
    return g_strdup ("+0");	/* not "-0" */
  return sign ? g_strdup_printf ("%+.0f", x) : g_strdup_printf ("%.1f", x);
}

/* @key's default, as vgicd.conf's table has it (0 if none). */
static guint
config_default (const char *key)
{
  gsize n;
  const VgicdConfigKey *keys = vgicd_config_keys (&n);

  for (gsize i = 0; i < n; i++)
    if (!strcmp (keys[i].name, key) && keys[i].default_value)
      return (guint) g_ascii_strtoull (keys[i].default_value, NULL, 10);
  return 0;
}

/* LOGS' account, once its attacker is gone: the lines it caused (@caused,
 * its count) against those vgicd wrote since @log_from (bytes of vgicd's
 * log) in @took_us, and what it counted as not written; a line in @notes,
 * and in @verdict what went past the share (TRUE then).  (Not the honest QEMU's lines:
 * this process plays every row's honest VM, which no QEMU does, and goes
 * past its own share in a full run; tests/integration/test-vgicd-peers.c's
 * /vgicd/log-share checks that another process's VM is logged.) */
static gboolean
logs_account (VgicdHarness *h, gsize log_from, guint64 suppressed0, guint caused,
              gint64 took_us, GString *verdict)
{
  const guint share = config_default ("LogLinesPerProcess");
  g_autofree char *log = vgicd_harness_read_log (h);
  const char *row = log && strlen (log) >= log_from ? log + log_from : "";
  const guint written = vgicd_harness_count (row, "VM logs: ") +
                        vgicd_harness_count (row, "closed the connection of a peer");
  const guint64 suppressed = vgicd_harness_stat (h, "log-suppressed") - suppressed0;
  /* Its share at once, then the refill, and the one notice. */
  const double allowed = share + (double) share * took_us / 60e6 + 1;

  g_string_append_printf (notes, "- \"%s\": %u lines caused in %.1f s (refused loads and "
                          "closed connections); vgicd wrote %u of them (its share, "
                          "LogLinesPerProcess=%u: %.0f in that time) and counted %" G_GUINT64_FORMAT
                          " in log-suppressed.\n",
                          attack_names[LOGS], caused, took_us / 1e6, written, share, allowed,
                          suppressed);
  if (written > allowed)
    g_string_append_printf (verdict, "log lines %u > %.0f, ", written, allowed);
  if (written + suppressed < caused)
    g_string_append_printf (verdict, "%" G_GUINT64_FORMAT " lines lost, ",
                            caused - written - suppressed);
  return written > allowed || written + suppressed < caused;
}

/* The row without attack: what the others are measured against. */
static double base_attach_med, base_attach_max, base_save_med, base_save_max;

/* The longer of the two distances from the unloaded figures. */
static double
worse (double med, double max, double base_med, double base_max)
{
  return MAX (med - base_med, max - base_max);
}


/* Whether an honest run fell back because a time bound ran out (the
 * whole save's, ClientTimeout=; the connect's 2 s; the handshake's), not
 * because vgicd refused or dropped it: a time, which --strict-resources
 * leaves to the table.  By libvgicd's messages: its error code,
 * UNREACHABLE, covers both. */
static gboolean
out_of_time (const GError *error)
{
  return error && (strstr (error->message, "(the bound on a whole save or load)") ||
                   strstr (error->message, "no room in the backlog") ||
                   strstr (error->message, "no answer in time"));
}
static void
under_attack (VgicdHarness **hp, Attack how)
{
  VgicdHarness *h = *hp;
  g_autoptr (VgicSim) sim = sim_new (opt_vcpus, opt_irqs);
  const guint n = opt_quick ? 10 : 40;
  /* Issue 31's rows stop their honest runs after this long (a flood may
   * make each attach wait its 2 s bound). */
  const gint64 honest_cap_us = (opt_quick ? 4 : 30) * G_USEC_PER_SEC;
  g_autofree double *attach_ms = g_new (double, n);
  g_autofree double *save_ms = g_new (double, n);
  g_autoptr (GString) verdict = g_string_new (NULL);
  /* A memfd, not CLOEXEC: the exec'd attackers map it too. */
  int count_fd = memfd_create ("bench-load-count", 0);
  guint *done, runs = 0, fell_back = 0, fell_back_time = 0, n_ok = 0, bound = vgicd_nofile (h);
  Attacker a = { .h = h, .how = how, .count_fd = count_fd };
  Sampler smp = { .h = h };
  GThread *st;
  double am = 0, ax = 0, sm = 0, sx = 0, settled_s = 0;
  gboolean died, busy = FALSE;
  gint64 t0, attack_t0 = 0, attack_us = 0;
  g_autofree char *log0 = NULL;
  guint64 suppressed0 = 0;

  if (how == HISTORY || how == STATS)
    {
      if (getuid () != 0)
        {
          printf ("| %-44s | not run: it needs root, to become nobody\n", attack_names[how]);
          close (count_fd);
          return;
        }
      if (how == HISTORY)
        fill_history (h, opt_quick ? HISTORY_VMS_QUICK : HISTORY_VMS_FULL);
    }
  bound = bound > opt_fd_reserve ? bound - opt_fd_reserve : 0;
  if (count_fd < 0 || ftruncate (count_fd, sizeof (guint)) < 0)
    die ("memfd", NULL);
  done = mmap (NULL, sizeof (guint), PROT_READ | PROT_WRITE, MAP_SHARED, count_fd, 0);
  if (done == MAP_FAILED)
    die ("mmap", NULL);
  a.done = done;
  *done = 0;
  vgic_sim_randomize (sim, 99);
  vgicd_reset_peak (h);
  if (how == LOGS)
    {
      log0 = vgicd_harness_read_log (h);
      suppressed0 = vgicd_harness_stat (h, "log-suppressed");
    }
  st = g_thread_new ("sampler", sampler, &smp);
  attack_t0 = g_get_monotonic_time ();
  if (how != NONE)
    attack_start (&a);

  /* The attack under way: issue 17's attackers for a fixed time (an
   * exec'd one first starts and attaches); issue 31's until they hold
   * what they can (their count still for half a second), vgicd died, or
   * their time is up. */
  t0 = g_get_monotonic_time ();
  if (how < FIRST_NEW)
    g_usleep (how == NONE ? 0 : how == SILENT || how == FLOOD || how == CHURN ? 300 * 1000
                                                                            : 1000 * 1000);
  else
    {
      const double cap_s = how == ADMITTED ? (opt_quick ? 5 : 20)
                           : how == SESSIONS ? 10 : how == BIG ? 8
                           : how == FD_PARTS ? 2 : 1;
      gint64 changed = t0;
      guint last = 0;

      while (g_get_monotonic_time () - t0 < cap_s * G_USEC_PER_SEC && vgicd_alive (h))
        {
          g_usleep (50 * 1000);
          if (*done != last)
            last = *done, changed = g_get_monotonic_time ();
          else if (last && g_get_monotonic_time () - changed > G_USEC_PER_SEC / 2)
            break;
        }
    }
  t0 = g_get_monotonic_time ();
  for (guint i = 0; i < n; i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (GBytes) record = NULL;
      gint64 t1 = g_get_monotonic_time ();
      g_autoptr (VgicdClient) c = NULL;
      double ams;

      if (how >= FIRST_NEW && t1 - t0 > honest_cap_us)
        break;
      runs++;
      c = attach (h, sim, opt_vcpus, opt_irqs, "honest", &error);
      ams = (g_get_monotonic_time () - t1) / 1000.0;
      t1 = g_get_monotonic_time ();
      if (!c || !vgicd_client_save (c, &record, &error))
        {
          /* QEMU takes its own path: a fallback. */
          static Attack said = N_ATTACKS;

          if (said != how)
            fprintf (stderr, "honest QEMU under \"%s\": %s\n", attack_names[how],
                     error->message);
          said = how;
          fell_back++;
          fell_back_time += out_of_time (error);
          continue;
        }
      save_ms[n_ok] = (g_get_monotonic_time () - t1) / 1000.0;
      attach_ms[n_ok++] = ams;
      g_usleep (20 * 1000);
    }
  died = !vgicd_alive (h);
  g_atomic_int_set (&a.stop, 1);
  /* The whole session (its leader's process group), then its members,
   * which the leader's death hands to this process (a subreaper). */
  for (guint i = 0; i < G_N_ELEMENTS (a.child); i++)
    if (a.child[i] > 0)
      {
        kill (-a.child[i], SIGKILL);
        waitpid (a.child[i], NULL, 0);
        while (waitpid (-a.child[i], NULL, 0) > 0)
          ;
      }
  attack_us = g_get_monotonic_time () - attack_t0;
  g_atomic_int_set (&smp.stop, 1);
  g_thread_join (st);
  if (smp.error && (!died || !smp.fds))
    g_string_append_printf (notes, "- \"%s\": counting vgicd's descriptors failed: %s\n",
                            attack_names[how], smp.error);
  g_free (smp.error);
  if (!died)
    smp.rss_kib = MAX (smp.rss_kib, vgicd_harness_status_kib (h, "VmHWM:"));
  died |= smp.died;
  qsort (attach_ms, n_ok, sizeof *attach_ms, cmp_double);
  qsort (save_ms, n_ok, sizeof *save_ms, cmp_double);
  if (n_ok)
    am = attach_ms[n_ok / 2], ax = attach_ms[n_ok - 1], sm = save_ms[n_ok / 2],
    sx = save_ms[n_ok - 1];
  if (how == NONE)
    base_attach_med = am, base_attach_max = ax, base_save_med = sm, base_save_max = sx;

  /* Once the attacker is gone: how long until vgicd attaches an honest
   * QEMU as fast as unloaded again (a flood's calls may still be queued). */
  if (!died && how != NONE)
    {
      const gint64 cap = (opt_quick ? 15 : 120) * G_USEC_PER_SEC, s0 = g_get_monotonic_time ();

      for (;;)
        {
          gint64 t1 = g_get_monotonic_time ();
          g_autoptr (VgicdClient) c = attach (h, sim, opt_vcpus, opt_irqs, "honest", NULL);

          if (c && (g_get_monotonic_time () - t1) / 1000.0 <= base_attach_max + BOUND_EXTRA_MS)
            break;
          if (g_get_monotonic_time () - s0 > cap || !vgicd_alive (h))
            {
              busy = TRUE;
              break;
            }
          g_usleep (100 * 1000);
        }
      settled_s = (g_get_monotonic_time () - s0) / 1e6;
      died = !vgicd_alive (h);
      busy &= !died;	/* it died instead: said so */
    }

  /* The verdict, against issue 31's bounds: those that are not a time
   * first (--strict-resources holds CI to them), then the times. */
  if (how == LOGS && !died &&
      logs_account (h, log0 ? strlen (log0) : 0, suppressed0, *done, attack_us, verdict))
    breached_resources = TRUE;
  if (died || fell_back > fell_back_time || smp.rss_kib >= BOUND_RSS_KIB || smp.fds >= bound ||
      busy)
    breached_resources = TRUE;
  if (died)
    {
      g_autofree char *why = vgicd_death (h);

      g_string_append (verdict, "vgicd died, ");
      g_string_append_printf (notes, "- \"%s\": vgicd died (%s); restarted for the next row.\n",
                              attack_names[how], why);
    }
  if (fell_back == fell_back_time && fell_back)
    g_string_append_printf (verdict, "%u of %u fell back (out of time), ", fell_back, runs);
  else if (fell_back)
    g_string_append_printf (verdict, "%u of %u fell back (%u out of time), ", fell_back, runs,
                            fell_back_time);
  if (n_ok && how != NONE && worse (am, ax, base_attach_med, base_attach_max) > BOUND_EXTRA_MS)
    g_string_append_printf (verdict, "attach +%.0f ms, ",
                            worse (am, ax, base_attach_med, base_attach_max));
  if (n_ok && how != NONE && worse (sm, sx, base_save_med, base_save_max) > BOUND_EXTRA_MS)
    g_string_append_printf (verdict, "save +%.0f ms, ",
                            worse (sm, sx, base_save_med, base_save_max));
  if (smp.rss_kib >= BOUND_RSS_KIB)
    g_string_append_printf (verdict, "RSS %" G_GUINT64_FORMAT " MiB, ", smp.rss_kib >> 10);
  if (smp.fds >= bound)
    g_string_append_printf (verdict, "fds %u, ", smp.fds);
  if (busy)
    g_string_append_printf (verdict, "busy > %.0f s after, ", settled_s);
  else if (settled_s > 1)
    g_string_append_printf (verdict, "busy %.0f s after, ", settled_s);
  if (verdict->len)
    {
      g_string_truncate (verdict, verdict->len - 2);
      breached = TRUE;
      if (how < FIRST_NEW && (fell_back || died))
        failed = TRUE;	/* issue 17's rule */
    }
  else
    g_string_append (verdict, "held");

  {
    const gboolean rel = n_ok && how != NONE;
    g_autofree char *c1 = cell (n_ok, FALSE, am), *c2 = cell (rel, TRUE, am - base_attach_med);
    g_autofree char *c3 = cell (n_ok, FALSE, ax), *c4 = cell (n_ok, FALSE, sm);
    g_autofree char *c5 = cell (rel, TRUE, sm - base_save_med), *c6 = cell (n_ok, FALSE, sx);
    g_autofree char *fb = g_strdup_printf ("%u/%u", fell_back, runs);
    g_autofree char *fd = g_strdup_printf ("%u/%u", smp.fds, bound);

    printf ("| %-44s | %7s | %6s | %7s | %7s | %6s | %7s | %7s | %7.1f | %11s | %9u | %s |\n",
            attack_names[how], c1, c2, c3, c4, c5, c6, fb, smp.rss_kib / 1024.0, fd, *done,
            verdict->str);
  }
  fflush (stdout);
  munmap (done, sizeof (guint));
  close (count_fd);

  if (died || busy)
    {
      g_autoptr (GError) error = NULL;

      if (busy && !died)
        g_string_append_printf (notes, "- \"%s\": vgicd still slow %.0f s after the attacker "
                                "left; restarted for the next row.\n", attack_names[how],
                                settled_s);
      if (!vgicd_start (hp, &error))
        die ("restarting vgicd", error);
    }
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
    { "quick", 0, 0, G_OPTION_ARG_NONE, &opt_quick,
      "1,000 cycles, 16 VMs, 10 honest runs, issue 31's slow attacks reduced", NULL },
    { "client-timeout", 0, 0, G_OPTION_ARG_INT, &opt_client_timeout,
      "vgicd's ClientTimeout= (250, its default; 50 to 5000)", "MS" },
    { "nofile", 0, 0, G_OPTION_ARG_INT, &opt_nofile,
      "vgicd's RLIMIT_NOFILE (8192: the unit's LimitNOFILE=)", "N" },
    { "fd-reserve", 0, 0, G_OPTION_ARG_INT, &opt_fd_reserve,
      "descriptors vgicd keeps for itself: the bound is its limit less these (64)", "N" },
    { "strict-attacks", 0, 0, G_OPTION_ARG_NONE, &opt_strict,
      "exit 1 on any breach of issue 31's bounds, in any row", NULL },
    { "strict-resources", 0, 0, G_OPTION_ARG_NONE, &opt_strict_resources,
      "exit 1 when, under any attack, vgicd dies or stays busy, an honest run falls back "
      "(but for running out of its time), or RSS, descriptors or log lines pass their bounds "
      "(the times are printed only)", NULL },
    { "only", 0, 0, G_OPTION_ARG_STRING, &opt_only,
      "part 3's rows only, these (0 is \"none\", 8 to 14 issue 31's: 8,9)", "ROWS" },
    { NULL },
  };
  g_autoptr (VgicdHarness) h = NULL;
  g_autofree char *attack = NULL, *attack_address = NULL, *attack_socket = NULL;
  g_autofree char *attack_bus = NULL, *attack_user = NULL;
  gint attack_count_fd = -1, attack_n = 0, attack_m = 0;
  GOptionEntry hidden[] = {
    { "attack", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &attack, NULL, NULL },
    { "attack-address", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &attack_address, NULL,
      NULL },
    { "attack-socket", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &attack_socket, NULL, NULL },
    { "attack-count-fd", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_INT, &attack_count_fd, NULL,
      NULL },
    { "attack-n", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_INT, &attack_n, NULL, NULL },
    { "attack-m", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_INT, &attack_m, NULL, NULL },
    { "attack-bus", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &attack_bus, NULL, NULL },
    { "attack-user", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &attack_user, NULL, NULL },
    { NULL },
  };

  if (g_str_has_suffix (argv[0], "/" LIMITED))
    exec_vgicd_limited (argv);
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
    attacker_main (attack, attack_address, attack_socket, attack_count_fd, attack_n, attack_m,
                   attack_bus, attack_user);
  if (opt_quick)
    opt_cycles = MIN (opt_cycles, 1000), opt_sessions = MIN (opt_sessions, 16),
    scale = scale_quick;
  opt_rounds = CLAMP (opt_rounds, 1, 16);
  opt_sessions = MAX (opt_sessions, 1);
  opt_vcpus = CLAMP (opt_vcpus, 1, 512);
  opt_client_timeout = CLAMP (opt_client_timeout, 50, 5000);
  opt_nofile = MAX (opt_nofile, 256);
  attack_names_init ();
  notes = g_string_new (NULL);
  /* A row's attackers are reaped here when their session's leader dies. */
  prctl (PR_SET_CHILD_SUBREAPER, 1);
  /* ClientTimeout= at its default: part 2's VMs saving all at once must
   * not fall back at the bound QEMUs get (issue 31).  It ran at 5000
   * until then, as what it measured was what they wait, not the bound. */
  /* Rows 3 and N1b measure vgicd's own defence against the descriptors a
   * peer sends, which trixie's kernel (6.12) needs; from Linux 6.16 the
   * kernel refuses them at the sender (SO_PASSRIGHTS, vgicd-reaper.c), so
   * vgicd runs here as on the older one, wherever the bench runs. */
  g_setenv ("VGICD_TEST_ACCEPT_FDS", "1", TRUE);
  harness_config = g_strdup_printf ("Mode=auto\nAllowUsers=root\nClientTimeout=%u\n"
                                    "MaxConnectionsPerProcess=1024\n",
                                    opt_client_timeout);
  if (!vgicd_start (&h, &error))
    die ("vgicd", error);
  printf ("bench-load: vgicd %s (ClientTimeout=%u, RLIMIT_NOFILE %u, peers' descriptors "
          "read around, as on Linux before 6.16), vgic-sim VMs (real ioctls), %u cores%s\n\n",
          PACKAGE_VERSION, opt_client_timeout, vgicd_nofile (h), g_get_num_processors (),
          opt_quick ? ", --quick" : "");
  if (!opt_only)
    {
      cycles (h);
      many (h);
    }
  {
    g_autofree char *base = harness_config;
    g_autofree char *shares = per_process_defaults ();

    harness_config = g_strconcat (base, shares, NULL);
    g_clear_pointer (&h, vgicd_harness_stop);
    if (!vgicd_start (&h, &error))
      die ("vgicd", error);
  }
  printf ("3. An honest QEMU (%u vCPUs) attaching and saving while a peer attacks (ms, and "
          "the distance from \"none\"; fell back: of the honest runs; vgicd's peak RSS in "
          "MiB and open descriptors against RLIMIT_NOFILE less %u; attacks made):\n\n",
          opt_vcpus, opt_fd_reserve);
  printf ("| %-44s | %7s |      Δ | %7s | %7s |      Δ | %7s | %7s | %7s | %11s | %9s | %s |\n",
          "attack", "attach", "max", "save", "max", "fell bk", "RSS", "fds/bound",
          "attacks", "verdict");
  printf ("|----------------------------------------------|---------|--------|---------|"
          "---------|--------|---------|---------|---------|-------------|-----------|"
          "---------|\n");
  {
    g_auto (GStrv) only = opt_only ? g_strsplit (opt_only, ",", -1) : NULL;

    for (Attack how = NONE; how < N_ATTACKS; how++)
      {
        g_autofree char *row = g_strdup_printf ("%d", how);

        /* "none" always: the others are measured against it. */
        if (how == NONE || !only || g_strv_contains ((const char *const *) only, row))
          under_attack (&h, how);
      }
  }
  printf ("\n(medians; bounds, issue 31: vgicd up; each attack's attach and save, median and "
          "max, within %.0f ms of \"none\", none falling back; RSS under %u MiB; descriptors "
          "under RLIMIT_NOFILE less %u)\n", BOUND_EXTRA_MS, BOUND_RSS_KIB / 1024,
          opt_fd_reserve);
  if (notes->len)
    printf ("\n%s", notes->str);
  if (!opt_only)
    decoder ();
  g_clear_pointer (&h, vgicd_harness_stop);
  unlink (limited_path);
  rmdir (limited_dir);
  if (breached)
    printf ("\nbench-load: bounds broken (the verdicts above): %s%s\n",
            breached_resources ? "not only times" : "times only",
            opt_strict || (opt_strict_resources && breached_resources) ? ""
            : breached_resources ? "; --strict-resources would fail"
            : "; --strict-attacks would fail");
  return failed || (opt_strict && breached) || (opt_strict_resources && breached_resources)
    ? 1 : 0;
}
