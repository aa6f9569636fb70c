/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-stuck-vgicd.c - what a stuck or dying vgicd costs a paused guest.
 *
 * Plays QEMU as the patched QEMU behaves (qemu-patch/): the VM attaches to
 * vgicd while it runs (at start, or when a migration is set up), and the
 * save inside the downtime (pre_save) either gets its record from vgicd or,
 * when vgicd fails it, drops the client and saves by QEMU's own path (one
 * register per ioctl).  The figure that matters is the pause: pre_save's
 * whole time, failure and fallback included, next to the own path alone.
 *
 * For each ClientTimeout= (vgicd.conf, which libvgicd adopts at attach):
 * the default and both ends of its range, it measures
 *   - the own path alone (no vgicd): the baseline;
 *   - a healthy vgicd;
 *   - a listener that accepts and never answers (no D-Bus handshake):
 *     the attach fails while the VM runs, so the save goes its own way;
 *   - vgicd stopped (SIGSTOP) between the attach and the save;
 *   - vgicd stopped in the middle of a save (runs spread over a healthy
 *     save's time; how far each got is printed), batched and one by one
 *     (mode single: what the attempt's own register reads cost before the
 *     stall shows, as it would on a kernel without the batch group);
 *   - vgicd killed in the middle of a save (a dying vgicd);
 *   - a load (the destination) with vgicd stopped: how long it takes to
 *     fail, and that no register was written.
 * Every fallback's state is checked against the source's.  Figures are
 * medians; nothing here asserts a time (the closing figures are read, not
 * tested), but a save that does not fall back, or a load that writes, is
 * an error (exit 1).  A healthy vgicd's save that falls back is load (at
 * ClientTimeout=10, a busy machine misses the bound): that run is made
 * again, and said; only one that falls back HEALTHY_TRIES times in a row
 * is an error.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "libvgicd.h"
#include "vgic-direct.h"
#include "vgic-exec.h"
#include "vgic-plan.h"
#include "vgic-record.h"
#include "vgic-sim.h"
#include "vgicd-harness.h"
#include "figures.h"

#define MAX_RUNS 15

static guint opt_vcpus = 64;
static guint opt_irqs = 512;
static guint opt_runs = 5;
static gboolean failed;
/* Healthy saves that fell back and were run again (see bench_timeout()). */
static guint healthy_retries;
#define HEALTHY_TRIES 5

static G_NORETURN void
die (const char *what, const GError *error)
{
  fprintf (stderr, "bench-stuck-vgicd: %s: %s\n", what, error ? error->message : "failed");
  exit (1);
}

typedef struct {
  VgicShape *shape;
  VgicSimConfig config;
  VgicSim *src;
  GBytes *reference;	/* the source's state, encoded, as vgicd's record has it */
  GBytes *qemu_reference;	/* the same, as QEMU's accesses see it (no route above
				   nr_irqs / 2) */
} Vm;

/* QEMU's own path, checked against the source's state. */
static void
own_save (Vm *vm)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicList) reads = vgic_direct_save (vm->shape, vgic_sim_get_fd (vm->src),
                                                 VGIC_EXEC_SINGLE, FALSE, NULL, &error);
  g_autoptr (GBytes) got = NULL;

  if (reads)
    got = vgic_record_encode (vm->shape, reads->entries, reads->len, &error);
  if (!got)
    die ("own path", error);
  if (!g_bytes_equal (got, vm->qemu_reference))
    {
      fprintf (stderr, "bench-stuck-vgicd: the own path read a different state\n");
      failed = TRUE;
    }
}

static VgicdClient *
attach (const char *address, VgicSim *sim, const VgicShape *shape, GError **error)
{
  g_autoptr (VgicdClient) c = vgicd_client_connect (address, 0, error);

  if (!c || !vgicd_client_attach (c, vgic_sim_get_fd (sim), "bench", NULL, shape->nr_irqs,
                                  shape->nr_vcpus, shape->mpidrs, error))
    return NULL;
  return g_steal_pointer (&c);
}

/*
 * pre_save as the patched QEMU runs it: through vgicd when attached, else,
 * or when vgicd fails the save, the own path.  *@client is dropped on
 * failure.  Returns the pause in ms; *@fell_back says which way it went,
 * *@extra_ms how long the pause spent on vgicd before falling back (what
 * a failing vgicd adds; 0 when not attached).
 */
static double
pre_save (Vm *vm, VgicdClient **client, gboolean *fell_back, double *extra_ms,
          guint *entries)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) record = NULL;
  gint64 t0 = g_get_monotonic_time ();
  VgicdClientStats st = { 0 };

  *fell_back = TRUE;
  if (*client && vgicd_client_save (*client, &record, &error))
    {
      *fell_back = FALSE;
      if (!g_bytes_equal (record, vm->reference))
        {
          fprintf (stderr, "bench-stuck-vgicd: vgicd's record differs from the source\n");
          failed = TRUE;
        }
    }
  else
    {
      if (extra_ms)
        *extra_ms = *client ? figures_ms_since (t0) : 0;
      if (*client)
        vgicd_client_get_stats (*client, &st);
      g_clear_pointer (client, vgicd_client_free);
      own_save (vm);
    }
  if (entries)
    *entries = st.entries;
  return figures_ms_since (t0);
}

/* A signal to a process after a delay, from another thread. */
typedef struct {
  GPid pid;
  int sig;
  gulong delay_us;
} Later;

static gpointer
signal_later (gpointer data)
{
  Later *l = data;

  g_usleep (l->delay_us);
  kill (l->pid, l->sig);
  return NULL;
}

/* A socket that accepts connections and never says a word. */
typedef struct {
  char *dir;
  char *address;
  int fd;
  GThread *thread;
} Mute;

static gpointer
mute_accept (gpointer data)
{
  Mute *m = data;
  int c;

  /* Accept and keep every connection; closed at exit. */
  while ((c = accept (m->fd, NULL, NULL)) >= 0 || errno == EINTR)
    ;
  return NULL;
}

static Mute *
mute_start (void)
{
  Mute *m = g_new0 (Mute, 1);
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  g_autofree char *path = NULL;

  m->dir = g_dir_make_tmp ("bench-mute-XXXXXX", NULL);
  path = g_build_filename (m->dir, "sock", NULL);
  g_strlcpy (sa.sun_path, path, sizeof sa.sun_path);
  m->fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (m->fd < 0 || bind (m->fd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen (m->fd, 64) < 0)
    die ("the mute listener", NULL);
  m->address = g_strdup_printf ("unix:path=%s", path);
  m->thread = g_thread_new ("mute", mute_accept, m);
  return m;
}

typedef struct {
  const char *name;
  double pause[MAX_RUNS];
  double extra[MAX_RUNS];	/* spent on vgicd before the fallback */
  double other[MAX_RUNS];	/* the attach, or the time a load took to fail */
  guint runs;
  gboolean no_extra, no_other;
  gboolean one_by_one;		/* mode single: the attempt's own ioctls are slow */
  char note[96];
} Row;

static void
print_row (const Row *r)
{
  char pause[32] = "-", extra[32] = "-", worst[32] = "-", other[32] = "-";

  /* A row with no run (no stop landed mid-save) prints "-" throughout. */
  if (r->runs > 0)
    g_snprintf (pause, sizeof pause, "%.1f", figures_median (r->pause, r->runs));
  if (r->runs > 0 && !r->no_extra)
    {
      g_snprintf (extra, sizeof extra, "%.1f", figures_median (r->extra, r->runs));
      g_snprintf (worst, sizeof worst, "%.1f", figures_max (r->extra, r->runs));
    }
  if (r->runs > 0 && !r->no_other)
    g_snprintf (other, sizeof other, "%.1f", figures_median (r->other, r->runs));
  printf ("| %-34s | %8s | %8s | %8s | %8s | %s\n", r->name, pause, extra, worst, other, r->note);
}

/* Stop vgicd (SIGSTOP) part-way through saves: run i after
 * (i + 0.5) / runs of @save_ms.  A save that finishes before the stop
 * lands is retried with half the delay: on a busy machine the stopping
 * thread can wake after a save of a millisecond or two is over, and a
 * shorter delay still lands inside the next one.  A row that no stop
 * landed in (every try finished first, down to no delay at all) is
 * reported as not measured: it says how busy the machine was, not that
 * vgicd failed to fall back. */
static void
stop_mid_save (Vm *vm, VgicdHarness *h, Row *row, double save_ms, guint runs, guint full)
{
  g_autoptr (GError) error = NULL;
  guint lo = G_MAXUINT, hi = 0, tries = 0, missed = 0;
  gboolean fell;

  for (guint i = 0; i < runs && tries < 10 * runs; tries++)
    {
      VgicdClient *c = attach (h->address, vm->src, vm->shape, &error);
      Later l = { h->vgicd_pid, SIGSTOP,
                  (gulong) (save_ms * 1000 * (i + 0.5) / runs) >> MIN (missed, 31) };
      GThread *t;
      guint entries;

      if (!c)
        die ("attach", error);
      t = g_thread_new ("stop", signal_later, &l);
      row->pause[i] = pre_save (vm, &c, &fell, &row->extra[i], &entries);
      g_thread_join (t);
      kill (h->vgicd_pid, SIGCONT);
      g_clear_pointer (&c, vgicd_client_free);
      if (!fell)
        {
          missed++;	/* finished before the stop: not a mid-save one */
          continue;
        }
      lo = MIN (lo, entries);
      hi = MAX (hi, entries);
      row->runs = ++i;
    }
  if (row->runs == 0)
    {
      g_printerr ("bench-stuck-vgicd: %s: every save of %u tries finished before "
                  "the stop landed; row not measured\n", row->name, tries);
      g_snprintf (row->note, sizeof row->note,
                  "not measured: %u saves all ended before the stop (busy machine)", tries);
      return;
    }
  g_snprintf (row->note, sizeof row->note, "fell back after %u..%u of %u entries ran%s",
              lo, hi, full, row->one_by_one ? " (their ioctls count too)" : "");
}

static void
bench_timeout (Vm *vm, guint timeout_ms)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *conf = g_strdup_printf ("Mode=auto\nAllowUsers=%s\nClientTimeout=%u\n",
                                           g_get_user_name (), timeout_ms);
  g_autoptr (VgicdHarness) h = vgicd_harness_start (VGICD_BIN, VGICD_POLICY, conf, &error);
  guint stuck_runs = timeout_ms >= 1000 ? MIN (opt_runs, 2) : opt_runs;
  Row own = { "own path only (no vgicd)" }, healthy = { "healthy vgicd" };
  Row mute = { "accepts, never answers" }, stopped = { "SIGSTOP between attach and save" };
  Row mid = { "SIGSTOP mid-save" }, killed = { "killed mid-save" };
  Row mid_single = { "SIGSTOP mid-save, one by one" };
  Row load = { "load, vgicd stopped (destination)" };
  double healthy_ms;
  guint full = 0, retried = 0;
  gboolean fell;

  if (!h)
    die ("start vgicd", error);

  for (guint i = 0; i < opt_runs; i++, own.runs++)
    {
      VgicdClient *none = NULL;
      own.pause[i] = pre_save (vm, &none, &fell, NULL, NULL);
    }
  /* The control.  At a small ClientTimeout= a healthy vgicd that is not
   * scheduled in time (a busy machine: a CI run beside this) misses the
   * bound and the save falls back, as it should: that is load, not a
   * fault, so the run is made again (and counted); only a vgicd that
   * never saves within HEALTHY_TRIES attempts is an error. */
  for (guint i = 0, tries = 0; i < opt_runs; i++, healthy.runs++)
    {
      VgicdClientStats st;

      for (;;)
        {
          gint64 t0 = g_get_monotonic_time ();
          g_autoptr (VgicdClient) c = attach (h->address, vm->src, vm->shape, &error);

          if (!c)
            die ("attach", error);
          healthy.other[i] = figures_ms_since (t0);
          healthy.pause[i] = pre_save (vm, &c, &fell, NULL, NULL);
          if (!fell)
            {
              vgicd_client_get_stats (c, &st);
              break;
            }
          healthy_retries++;
          retried++;
          fprintf (stderr, "bench-stuck-vgicd: ClientTimeout=%u ms: a healthy vgicd's save "
                   "fell back after %.1f ms (a busy machine); run %u again\n", timeout_ms,
                   healthy.pause[i], i + 1);
          if (++tries >= HEALTHY_TRIES)
            die ("a healthy vgicd's save fell back on every try", NULL);
        }
      tries = 0;
      full = st.entries;
    }
  if (retried)
    g_snprintf (healthy.note, sizeof healthy.note,
                "through vgicd (%u entries); other: attach; %u fell back, run again", full,
                retried);
  else
    g_snprintf (healthy.note, sizeof healthy.note, "through vgicd (%u entries); other: attach",
                full);
  healthy_ms = figures_median (healthy.pause, healthy.runs);

  /* The mute listener: the attach (VM running) fails; the save is own. */
  {
    Mute *m = mute_start ();

    for (guint i = 0; i < stuck_runs; i++, mute.runs++)
      {
        g_autoptr (GError) e = NULL;
        gint64 t0 = g_get_monotonic_time ();
        VgicdClient *c = attach (m->address, vm->src, vm->shape, &e);

        mute.other[i] = figures_ms_since (t0);
        if (c)
          die ("a mute listener let the attach through", NULL);
        mute.pause[i] = pre_save (vm, &c, &fell, &mute.extra[i], NULL);
      }
    g_snprintf (mute.note, sizeof mute.note,
                "attach fails while the VM runs; save: own path");
    close (m->fd);	/* not joined: accept() may not return; exits with us */
  }

  /* Stopped between attach and save. */
  for (guint i = 0; i < stuck_runs; i++, stopped.runs++)
    {
      VgicdClient *c = attach (h->address, vm->src, vm->shape, &error);

      if (!c)
        die ("attach", error);
      kill (h->vgicd_pid, SIGSTOP);
      stopped.pause[i] = pre_save (vm, &c, &fell, &stopped.extra[i], NULL);
      kill (h->vgicd_pid, SIGCONT);
      if (!fell)
        die ("a stopped vgicd's save did not fall back", NULL);
    }
  g_snprintf (stopped.note, sizeof stopped.note, "fell back to the own path");

  /* Stopped mid-save: batched (the save's few steps go by in about a
   * millisecond, so the stop lands while vgicd builds the record), and
   * one by one, where the steps take long enough for stops to land
   * between them (the budget is spent over several waits). */
  stop_mid_save (vm, h, &mid, healthy_ms, stuck_runs, full);
  if (!vgicd_harness_set_mode (h, "single", &error))
    die ("set vgicd's mode", error);
  {
    double single_ms;
    Row probe = { 0 };

    for (guint i = 0; i < 3; i++, probe.runs++)
      {
        VgicdClient *c = attach (h->address, vm->src, vm->shape, &error);

        if (!c)
          die ("attach", error);
        probe.pause[i] = pre_save (vm, &c, &fell, NULL, NULL);
        g_clear_pointer (&c, vgicd_client_free);
      }
    single_ms = figures_median (probe.pause, probe.runs);
    mid_single.one_by_one = TRUE;
    stop_mid_save (vm, h, &mid_single, single_ms, stuck_runs, full);
  }
  if (!vgicd_harness_set_mode (h, "auto", &error))
    die ("set vgicd's mode", error);

  /* The destination: a load with vgicd stopped fails, writes nothing. */
  for (guint i = 0; i < stuck_runs; i++, load.runs++)
    {
      g_autoptr (GError) e = NULL;
      g_autoptr (VgicSim) dst = vgic_sim_new (&vm->config, &error);
      g_autoptr (VgicdClient) c = NULL;
      VgicSimCounters counters;
      gint64 t0;

      if (!dst)
        die ("destination VM", error);
      c = attach (h->address, dst, vm->shape, &error);
      if (!c)
        die ("attach", error);
      vgic_sim_counters_reset (dst);
      kill (h->vgicd_pid, SIGSTOP);
      t0 = g_get_monotonic_time ();
      if (vgicd_client_load (c, g_bytes_get_data (vm->reference, NULL),
                             g_bytes_get_size (vm->reference), &e))
        die ("a stopped vgicd's load succeeded", NULL);
      load.pause[i] = load.other[i] = load.extra[i] = figures_ms_since (t0);
      kill (h->vgicd_pid, SIGCONT);
      vgic_sim_counters_get (dst, &counters);
      if (counters.single_set + counters.batch_calls != 0)
        {
          fprintf (stderr, "bench-stuck-vgicd: a failed load wrote registers\n");
          failed = TRUE;
        }
      if (!g_error_matches (e, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_UNREACHABLE))
        die ("a stopped vgicd's load failed otherwise", e);
    }
  g_snprintf (load.note, sizeof load.note, "failed, unreachable; registers written: 0");

  /* Killed mid-save: each run its own vgicd. */
  for (guint i = 0; i < stuck_runs; i++, killed.runs++)
    {
      g_autoptr (VgicdHarness) k = vgicd_harness_start (VGICD_BIN, VGICD_POLICY, conf, &error);
      VgicdClient *c;
      Later l;
      GThread *t;

      if (!k)
        die ("start vgicd", error);
      c = attach (k->address, vm->src, vm->shape, &error);
      if (!c)
        die ("attach", error);
      l = (Later) { k->vgicd_pid, SIGKILL,
                    (gulong) (healthy_ms * 1000 * (i + 0.5) / stuck_runs) };
      t = g_thread_new ("kill", signal_later, &l);
      killed.pause[i] = pre_save (vm, &c, &fell, &killed.extra[i], NULL);
      g_thread_join (t);
      if (!fell)
        {
          i--;
          killed.runs--;
        }
    }
  g_snprintf (killed.note, sizeof killed.note, "fell back (the channel closed)");

  own.no_extra = own.no_other = healthy.no_extra = TRUE;
  stopped.no_other = mid.no_other = mid_single.no_other = killed.no_other = TRUE;
  printf ("\nClientTimeout=%u ms (the bound on what a save or load waits for vgicd)\n\n",
          timeout_ms);
  printf ("| %-34s | %8s | %8s | %8s | %8s | %s\n", "vgicd", "pause", "extra",
          "worst", "other", "what happened");
  printf ("|------------------------------------|----------|----------|----------|----------|"
          "--------------\n");
  print_row (&own);
  print_row (&healthy);
  print_row (&mute);
  print_row (&stopped);
  print_row (&mid);
  print_row (&mid_single);
  print_row (&killed);
  print_row (&load);
}

int
main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- what a stuck vgicd costs a save");
  g_autofree char *timeouts = g_strdup_printf ("10,%d,5000", VGICD_CLIENT_DEFAULT_TIMEOUT_MS);
  g_auto (GStrv) list = NULL;
  GOptionEntry entries[] = {
    { "vcpus", 0, 0, G_OPTION_ARG_INT, &opt_vcpus, "vCPUs (64)", "N" },
    { "irqs", 0, 0, G_OPTION_ARG_INT, &opt_irqs, "IRQs incl. private (512)", "N" },
    { "runs", 0, 0, G_OPTION_ARG_INT, &opt_runs, "runs per row; medians shown (5; 2 at 1 s and over)", "N" },
    { "timeouts", 0, 0, G_OPTION_ARG_STRING, &timeouts, "ClientTimeout= values, ms (10,250,5000)", "LIST" },
    { NULL }
  };
  Vm vm = { 0 };
  g_autoptr (VgicList) reads = NULL;

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    die ("options", error);
  opt_runs = CLAMP (opt_runs, 1, MAX_RUNS);
  if (!vgic_sim_supervise_self (&error))
    die ("vgic-sim supervisor", error);

  vm.shape = vgic_shape_new (opt_irqs, opt_vcpus, NULL, &error);
  if (!vm.shape)
    die ("shape", error);
  vm.config = (VgicSimConfig) { .nr_vcpus = opt_vcpus, .nr_irqs = opt_irqs, .has_its = TRUE,
                                .pri_bits = 5, .batch = TRUE };
  vm.src = vgic_sim_new (&vm.config, &error);
  if (!vm.src)
    die ("source VM", error);
  vgic_sim_randomize (vm.src, 2026);
  reads = vgic_direct_save (vm.shape, vgic_sim_get_fd (vm.src), VGIC_EXEC_BATCH, TRUE, NULL,
                            &error);
  if (reads)
    vm.reference = vgic_record_encode (vm.shape, reads->entries, reads->len, &error);
  if (!vm.reference)
    die ("the source's state", error);
  g_clear_pointer (&reads, vgic_list_unref);
  reads = vgic_direct_save (vm.shape, vgic_sim_get_fd (vm.src), VGIC_EXEC_BATCH, FALSE, NULL,
                            &error);
  if (reads)
    vm.qemu_reference = vgic_record_encode (vm.shape, reads->entries, reads->len, &error);
  if (!vm.qemu_reference)
    die ("the source's state, as QEMU reads it", error);

  printf ("bench-stuck-vgicd: what a stuck or dying vgicd adds to a save's pause\n");
  printf ("A simulated VM of %u vCPUs, %u IRQs (vgic-sim answers real ioctls); vgicd %s.\n",
          opt_vcpus, opt_irqs, PACKAGE_VERSION);
  printf ("All times in ms, medians of %u runs (%u at ClientTimeout= 1 s and over).\n"
          "pause: pre_save's whole time, as the patched QEMU runs it (through vgicd, or on\n"
          "failure its own path); extra: what the pause spent on vgicd before it fell back,\n"
          "the cost of a failing vgicd (for the load: its time to fail); worst: the largest\n"
          "extra of the runs; other: the attach, made while the VM runs.\n",
          opt_runs, MIN (opt_runs, 2));

  list = g_strsplit (timeouts, ",", -1);
  for (guint i = 0; list[i]; i++)
    bench_timeout (&vm, (guint) g_ascii_strtoull (list[i], NULL, 10));

  if (healthy_retries)
    printf ("\n%u healthy save(s) fell back on a busy machine and were run again (see the "
            "healthy rows).\n", healthy_retries);
  vgic_sim_free (vm.src);
  g_bytes_unref (vm.reference);
  g_bytes_unref (vm.qemu_reference);
  vgic_shape_free (vm.shape);
  return failed ? 1 : 0;
}
