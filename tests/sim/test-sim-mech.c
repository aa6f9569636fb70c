/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-sim-mech.c - the machinery around the model: value widths, the fd
 * crossing processes over SCM_RIGHTS, non-sim fds and other ioctls left
 * alone, the cost counters, fault injection, the direct state API and
 * vgic-sim-run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim-util.h"

#define D(off) vgic_attr (0, (off))
#define R(sim, cpu, off) vgic_attr (vgic_sim_get_mpidr ((sim), (cpu)), (off))

static void
test_width_u64_sysreg_u32_dist (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  guint8 buf[16];

  memset (buf, 0xa5, sizeof buf);
  g_assert_cmpint (sim_ioctl (fd, KVM_GET_DEVICE_ATTR, GRP_DIST, D (GICD_CTLR), buf + 4), ==, 0);
  for (guint i = 0; i < 16; i++)
    if (i < 4 || i >= 8)
      g_assert_cmphex (buf[i], ==, 0xa5);
  g_assert_cmphex (buf[4], ==, 0x50);

  memset (buf, 0xa5, sizeof buf);
  g_assert_cmpint (sim_ioctl (fd, KVM_GET_DEVICE_ATTR, GRP_SYSREG, R (sim, 0, ICC_PMR_EL1),
                              buf + 4), ==, 0);
  /* 8 bytes written: the PMR (0) and its zero upper half. */
  for (guint i = 4; i < 12; i++)
    g_assert_cmphex (buf[i], ==, 0);
  for (guint i = 0; i < 16; i++)
    if (i < 4 || i >= 12)
      g_assert_cmphex (buf[i], ==, 0xa5);
}

/* In the child: only async-signal-safe-ish plain calls, exit codes report. */
static G_NORETURN void
child_main (int sock, guint32 mpidr1)
{
  int fd = vgic_sim_recv_fd (sock);
  guint32 v = 0;
  struct kvm_device_attr a = { .group = GRP_REDIST,
                               .attr = vgic_attr (mpidr1, GICR_ISPENDR0),
                               .addr = (uintptr_t) &v };

  if (fd < 0)
    _exit (10);
  v = 0x8001;
  if (ioctl (fd, KVM_SET_DEVICE_ATTR, &a) < 0)
    _exit (11);
  v = 0;
  a.attr = D (GICD_TYPER);
  a.group = GRP_DIST;
  if (ioctl (fd, KVM_GET_DEVICE_ATTR, &a) < 0 || v != (((96 / 32) - 1) | (9u << 19)))
    _exit (12);
  _exit (0);
}

static void
test_fd_over_scm_rights (void)
{
  g_autoptr (VgicSim) sim = sim_new (2, 96, FALSE, 5);
  int sv[2], status;
  pid_t pid;

  g_assert_cmpint (socketpair (AF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
  pid = fork ();
  g_assert_cmpint (pid, >=, 0);
  if (pid == 0)
    {
      close (sv[0]);
      child_main (sv[1], vgic_sim_get_mpidr (sim, 1));
    }
  close (sv[1]);
  /* A dup, so the child's fd is not simply inherited but really passed. */
  g_assert_cmpint (vgic_sim_send_fd (sv[0], vgic_sim_get_fd (sim)), ==, 0);
  g_assert_cmpint (waitpid (pid, &status, 0), ==, pid);
  close (sv[0]);
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, 0);
  g_assert_cmphex (sim_read32 (vgic_sim_get_fd (sim), GRP_REDIST, R (sim, 1, GICR_ISPENDR0)),
                   ==, 0x8001);
}

static void
test_non_sim_fd_normal (void)
{
  int null = open ("/dev/null", O_RDWR | O_CLOEXEC);
  int mfd = memfd_create ("not-a-sim", MFD_CLOEXEC);
  guint32 v;

  g_assert_cmpint (null, >=, 0);
  g_assert_cmpint (sim_get32 (null, GRP_DIST, 0, &v), ==, -ENOTTY);
  g_assert_cmpint (sim_has (null, GRP_DIST, 0), ==, -ENOTTY);
  /* A regular memfd that is not a sim: the real ioctl runs too. */
  g_assert_cmpint (ftruncate (mfd, 4096), ==, 0);
  g_assert_cmpint (sim_get32 (mfd, GRP_DIST, 0, &v), ==, -ENOTTY);
  /* A closed fd: the kernel's EBADF. */
  g_assert_cmpint (sim_get32 (1000, GRP_DIST, 0, &v), ==, -EBADF);
  close (null);
  close (mfd);
}

static void
test_other_ioctls_not_trapped (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim), avail = -1;
  VgicSimCounters c;

  vgic_sim_counters_reset (sim);
  /* FIONREAD on a regular file works in the kernel; KVM_GET_API_VERSION on
   * a memfd is ENOTTY.  Neither reaches the model. */
  g_assert_cmpint (ioctl (fd, FIONREAD, &avail), ==, 0);
  g_assert_cmpint (ioctl (fd, KVM_GET_API_VERSION, 0), ==, -1);
  g_assert_cmpint (errno, ==, ENOTTY);
  g_assert_cmpint (ioctl (fd, KVM_CREATE_DEVICE, NULL), ==, -1);
  vgic_sim_counters_get (sim, &c);
  g_assert_cmpuint (c.single_get + c.single_set + c.has + c.batch_calls, ==, 0);
}

static void
test_cost_shape (void)
{
  const guint n = 32;
  g_autoptr (VgicSim) sim = sim_new (n, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  VgicSimCounters c;

  vgic_sim_counters_reset (sim);
  for (guint i = 0; i < 10; i++)
    sim_read32 (fd, GRP_REDIST, R (sim, n - 1, GICR_ISENABLER0));
  vgic_sim_counters_get (sim, &c);
  g_assert_cmpuint (c.single_get, ==, 10);
  g_assert_cmpuint (c.group_calls[GRP_REDIST], ==, 10);
  g_assert_cmpuint (c.lock_rounds, ==, 10);
  g_assert_cmpuint (c.vcpu_locks, ==, 10 * n);
  /* The last vCPU: a full linear scan every time. */
  g_assert_cmpuint (c.mpidr_scan_steps, ==, 10 * n);

  /* HAS takes no lock. */
  vgic_sim_counters_reset (sim);
  g_assert_cmpint (sim_has (fd, GRP_DIST, D (GICD_CTLR)), ==, 0);
  vgic_sim_counters_get (sim, &c);
  g_assert_cmpuint (c.has, ==, 1);
  g_assert_cmpuint (c.lock_rounds, ==, 0);
}

static void
test_fail_at_single (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);

  vgic_sim_fail_at (sim, 2, -EIO);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ISENABLER + 4), 1), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ISENABLER + 4), 2), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ISENABLER + 4), 4), ==, -EIO);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ISENABLER + 4), 8), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_ISENABLER + 4)), ==, 0xb);
}

static void
test_fault_next (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  guint32 v;

  vgic_sim_fault_next (sim);
  g_assert_cmpint (sim_get32 (fd, GRP_DIST, D (GICD_CTLR), &v), ==, -EFAULT);
  g_assert_cmpint (sim_get32 (fd, GRP_DIST, D (GICD_CTLR), &v), ==, 0);
  vgic_sim_fault_next (sim);
  g_assert_cmpint (sim_has (fd, GRP_BATCH, 0), ==, -EFAULT);
}

static void
test_running_vcpu_ebusy (void)
{
  g_autoptr (VgicSim) sim = sim_new (8, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  VgicSimCounters c;
  guint32 v;

  vgic_sim_set_vcpu_running (sim, 5, TRUE);
  vgic_sim_counters_reset (sim);
  g_assert_cmpint (sim_get32 (fd, GRP_DIST, D (GICD_CTLR), &v), ==, -EBUSY);
  vgic_sim_counters_get (sim, &c);
  /* lock_all_vcpus() gives up at the first held mutex. */
  g_assert_cmpuint (c.vcpu_locks, ==, 6);
  vgic_sim_set_vcpu_running (sim, 5, FALSE);
  g_assert_cmpint (sim_get32 (fd, GRP_DIST, D (GICD_CTLR), &v), ==, 0);
}

static void
test_state_api (void)
{
  g_autoptr (VgicSim) a = sim_new (3, 128, TRUE, 7);
  g_autoptr (VgicSim) b = sim_new (3, 128, TRUE, 7);
  g_autoptr (VgicSim) view = NULL;
  g_autoptr (VgicSimState) sa = NULL, sb = NULL, sv = NULL;
  g_autoptr (GString) diff = g_string_new ("");
  g_autoptr (GError) error = NULL;

  vgic_sim_randomize (a, 42);
  vgic_sim_randomize (b, 42);
  sa = vgic_sim_state_get (a);
  sb = vgic_sim_state_get (b);
  g_assert_true (vgic_sim_state_equal (sa, sb, diff));
  g_assert_cmpstr (diff->str, ==, "");

  vgic_sim_randomize (b, 43);
  g_clear_pointer (&sb, vgic_sim_state_free);
  sb = vgic_sim_state_get (b);
  g_assert_false (vgic_sim_state_equal (sa, sb, diff));
  g_assert_cmpuint (diff->len, >, 0);

  g_assert_true (vgic_sim_state_set (b, sa, &error));
  g_assert_no_error (error);
  g_clear_pointer (&sb, vgic_sim_state_free);
  sb = vgic_sim_state_get (b);
  g_assert_true (vgic_sim_state_equal (sa, sb, NULL));

  /* Another handle on the same fd sees the same model. */
  view = vgic_sim_open_fd (vgic_sim_get_fd (a), &error);
  g_assert_no_error (error);
  sv = vgic_sim_state_get (view);
  g_assert_true (vgic_sim_state_equal (sa, sv, NULL));
  g_assert_null (vgic_sim_open_fd (0, &error));
  g_assert_error (error, VGIC_SIM_ERROR, 0);
}

static void
test_sim_run_exit_status (void)
{
  const char *run = g_getenv ("VGIC_SIM_RUN");
  const char *argv[] = { run, "--", "sh", "-c", "exit 3", NULL };
  g_autoptr (GError) error = NULL;
  int status;

  if (!run)
    {
      g_test_skip ("VGIC_SIM_RUN not set");
      return;
    }
  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, NULL,
                &status, &error);
  g_assert_no_error (error);
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, 3);
}

int
main (int argc, char **argv)
{
  sim_test_init (&argc, &argv);

  g_test_add_func ("/sim/mech/width-sysreg-get-writes-8-dist-get-writes-4",
                   test_width_u64_sysreg_u32_dist);
  g_test_add_func ("/sim/mech/fd-over-scm-rights-to-forked-child", test_fd_over_scm_rights);
  g_test_add_func ("/sim/mech/non-sim-fd-behaves-normally", test_non_sim_fd_normal);
  g_test_add_func ("/sim/mech/other-ioctls-never-trap", test_other_ioctls_not_trapped);
  g_test_add_func ("/sim/mech/cost-single-call-locks-every-vcpu", test_cost_shape);
  g_test_add_func ("/sim/fault/running-vcpu-ebusy", test_running_vcpu_ebusy);
  g_test_add_func ("/sim/fault/fail-at-kth-single-call", test_fail_at_single);
  g_test_add_func ("/sim/fault/fault-next-efault", test_fault_next);
  g_test_add_func ("/sim/mech/state-get-set-randomize-equal-open-fd", test_state_api);
  g_test_add_func ("/sim/mech/sim-run-exit-status", test_sim_run_exit_status);

  return g_test_run ();
}
