/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-vgicd-restarts.c - vgicd's life around its QEMUs: hung, killed
 * (mid-save, at each step), restarted, started by socket activation,
 * reloaded by SIGHUP, its system bus gone.
 */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vgic-direct.h"
#include "vgicd-test.h"

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
  g_autofree guint32 *mpidrs = sim_vm_mpidrs (src, s->vcpus);
  gint64 t0;

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
  log = vgicd_harness_wait_log (h, "lost the system bus", VGICD_TEST_PATIENCE_MS);
  g_assert_nonnull (strstr (log, "lost the system bus"));
  g_assert_cmpint (kill (h->vgicd_pid, 0), ==, 0);
  g_assert_true (vgicd_client_save (c, &record, &error));
  g_assert_no_error (error);
  c2 = attach (h, other, s, "after");
  g_assert_true (vgicd_client_save (c2, &record2, &error));
  g_assert_no_error (error);
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
  while (vgicd_client_is_connected (c) && waited_ms < VGICD_TEST_PATIENCE_MS)
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
  gboolean fields;	/* a save into QEMU's fields, its reads into @regs */
  VgicdRegs *regs;
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
  else if (job->fields)
    job->ok = vgicd_client_save_fields (job->client, &job->regs, &job->error);
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

/* Run @record's load (or a save; with @regs, a save into QEMU's fields,
 * its reads into *@regs) on @sim with its @k-th ioctl held while vgicd is
 * killed; then restart vgicd.  Returns whether the operation succeeded,
 * and its error in @error. */
static gboolean
kill_at_full (VgicdHarness *h, VgicSim *sim, const Shape *s, GBytes *record, VgicdRegs **regs,
              guint k, double *ms, GError **error)
{
  g_autoptr (GError) local = NULL;
  StepJob job = { .record = record, .fields = regs != NULL };
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
  if (regs)
    *regs = job.regs;
  return job.ok;
}

static gboolean
kill_at (VgicdHarness *h, VgicSim *sim, const Shape *s, GBytes *record, guint k,
         double *ms, GError **error)
{
  return kill_at_full (h, sim, s, record, NULL, k, ms, error);
}

/* A save into QEMU's fields whose step read every register QEMU's get
 * needs has nothing left to take from vgicd: the reads of round 1 confirm
 * the round 2 vgicd guessed (the step's "last-if"), and vgicd's answer
 * could only be done.  So libvgicd reports and returns without waiting,
 * and vgicd killed while that step runs leaves the save whole, every value
 * the kernel's.  Where round 1 says the guess missed (a VM of 2 APRs per
 * group, the host guessing 1), the save still needs vgicd, and fails as
 * unreachable. */
static void
test_killed_during_fields_reads (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *guessed = &shapes[3], *missed = &shapes[2];	/* an ITS; 1 APR, 2 APRs */
  g_autoptr (VgicSim) src = make_sim (guessed, TRUE);
  g_autoptr (VgicSim) other = make_sim (missed, TRUE);
  g_autoptr (VgicShape) shape = sim_vm_shape (src, guessed->vcpus, guessed->irqs);
  g_autoptr (VgicList) direct = NULL;
  g_autoptr (VgicdRegs) regs = NULL, none = NULL;
  g_autoptr (GError) error = NULL;
  double ms;

  vgic_sim_randomize (src, 71);
  direct = vgic_direct_save (shape, vgic_sim_get_fd (src), VGIC_EXEC_SINGLE, FALSE, NULL,
                             &error);
  g_assert_no_error (error);
  /* The kernel's batch reads the step in one ioctl: vgicd dies while it runs. */
  g_assert_true (kill_at_full (h, src, guessed, NULL, &regs, 1, &ms, &error));
  g_assert_no_error (error);
  assert_regs_read (regs, direct);
  g_test_message ("guess held: vgicd killed during the reads, the save whole (%u registers), "
                  "returned %.1f ms after", vgicd_regs_count (regs), ms);

  vgic_sim_randomize (other, 72);
  g_assert_false (kill_at_full (h, other, missed, NULL, &none, 1, &ms, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_UNREACHABLE);
  g_assert_null (none);
  g_test_message ("guess missed: the save waited for vgicd and failed %.1f ms after the "
                  "kill: %s", ms, error->message);
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
  g_autoptr (VgicdHarness) h = vgicd_harness_start_activated (vgicd_test_bin, vgicd_test_policy,
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
  log = vgicd_harness_read_log (h);
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
  for (int i = 0; i < VGICD_TEST_PATIENCE_MS / 20; i++)
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

/* This process's open descriptors. */
static guint
own_fds (void)
{
  g_autoptr (GError) error = NULL;
  guint n = vgicd_count_fds (getpid (), &error);

  g_assert_no_error (error);
  return n;
}

/* A QEMU connects again after each restart of vgicd, and each VM of a
 * process attaches once: what a client held goes with
 * vgicd_client_free().  (Each connection once left its handshake's
 * GMainContext behind, with its eventfd and the connection itself: a
 * thousand cycles, a thousand descriptors.) */
static void
test_client_leaves_nothing (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[0];
  g_autoptr (VgicSim) sim = make_sim (s, TRUE);
  guint before;

  /* The first cycles start what stays for the process's life (GDBus's
   * worker thread and its context); the earlier tests' harnesses may
   * still be closing a descriptor or two meanwhile, hence the margin,
   * far below one a cycle. */
  for (guint i = 0; i < 20; i++)
    vgicd_client_free (attach (h, sim, s, "first"));
  before = own_fds ();
  for (guint i = 0; i < 200; i++)
    vgicd_client_free (attach (h, sim, s, "cycle"));
  g_assert_cmpuint (own_fds (), <=, before + 4);
}

int
main (int argc, char **argv)
{
  vgicd_test_init (&argc, &argv);
  g_test_add_func ("/vgicd/vgicd-gone", test_vgicd_gone);
  g_test_add_func ("/vgicd/bus-gone", test_bus_gone);
  g_test_add_func ("/vgicd/vgicd-restarted", test_vgicd_restarted);
  g_test_add_func ("/vgicd/killed-mid-save", test_killed_mid_save);
  g_test_add_func ("/vgicd/killed-at-each-step", test_killed_at_each_step);
  g_test_add_func ("/vgicd/killed-during-fields-reads", test_killed_during_fields_reads);
  g_test_add_func ("/vgicd/socket-activated", test_socket_activated);
  g_test_add_func ("/vgicd/sighup-reload", test_sighup_reload);
  g_test_add_func ("/vgicd/client-leaves-nothing", test_client_leaves_nothing);
  return g_test_run ();
}
