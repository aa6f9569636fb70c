/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-calibrate.c - the host's cost of one vGIC register per ioctl (see
 * vgicd-calibrate.h).
 *
 * Theory of operation.  Each KVM_{GET,SET}_DEVICE_ATTR of the vGIC's
 * register groups takes kvm->lock and then every vCPU's mutex
 * (lock_all_vcpus()), so one access on a VM of n vCPUs costs about
 * a + b × n: a for the system call and the register's emulation, b for
 * each vCPU's lock.  A one-by-one save or restore makes one such access
 * per register, and the registers grow with n too, which is why the cost
 * is quadratic.  Two throwaway VMs, of SMALL and LARGE vCPUs, each with an
 * initialised vGICv3 and no guest, are timed over READS reads of a
 * distributor register (the best of ROUNDS rounds, so that a preempted
 * round does not count), and the line through the two points is the
 * host's figure.  vgicd-history.c multiplies it out per operation, and
 * marks the result an estimate; a real one-by-one operation on this host
 * then pins the line to what it measured.
 */
#include "vgicd-calibrate.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "vgicd/kvm-call.h"
#include "vgicd-throwaway.h"

#define PREFIX "calibration: "
#define SMALL 1
#define LARGE 32
#define READS 256
#define ROUNDS 5

#if defined(__aarch64__)

#define GICD_IPRIORITYR 0x0400

static double
now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* The best ns per read, one per ioctl, on a new VM of @n vCPUs; 0 with
 * *@what set when the VM could not be made. */
static double
time_reads (int kvm, guint n, const char **what, int *err)
{
  VgicdThrowawayVm t;
  double best = 0;

  if (!vgicd_throwaway_vm_new (kvm, n, &t, what))
    goto out;
  *what = "KVM_GET_DEVICE_ATTR";
  for (guint r = 0; r < ROUNDS; r++)
    {
      guint32 value;
      double t0 = now_ns (), ns;

      for (guint i = 0; i < READS; i++)
        {
          /* The priorities of SPIs 32..63, 4 per register, as a save
           * reads them (the VM has KVM's default 256 IRQs). */
          struct kvm_device_attr a = { .group = KVM_DEV_ARM_VGIC_GRP_DIST_REGS,
                                       .attr = GICD_IPRIORITYR + 32 + 4 * (i % 8),
                                       .addr = (guint64) (uintptr_t) &value };

          if (kvm_call (t.gic, KVM_GET_DEVICE_ATTR, &a) < 0)
            {
              best = 0;
              goto out;
            }
        }
      ns = (now_ns () - t0) / READS;
      if (best == 0 || ns < best)
        best = ns;
    }
  *what = NULL;
out:
  *err = errno;
  vgicd_throwaway_vm_close (&t);
  return *what ? 0 : best;
}

gboolean
vgicd_calibrate_single (const char *kvm_path, double *base_ns, double *per_vcpu_ns,
                        char **source)
{
  const char *what = NULL;
  double small, large;
  int err = 0;
  int kvm = open (kvm_path, O_RDWR | O_CLOEXEC);

  if (kvm < 0)
    {
      *source = g_strdup_printf (PREFIX "%s: %s", kvm_path, g_strerror (errno));
      return FALSE;
    }
  small = time_reads (kvm, SMALL, &what, &err);
  large = small > 0 ? time_reads (kvm, LARGE, &what, &err) : 0;
  close (kvm);
  if (small <= 0 || large <= 0)
    {
      *source = g_strdup_printf (PREFIX "a throwaway VM of %u vCPUs: %s: %s",
                                 small > 0 ? LARGE : SMALL, what ? what : "?",
                                 g_strerror (err));
      return FALSE;
    }
  /* Noise can tilt the line the wrong way on a host where the locks are
   * cheap: then each access costs what the larger VM measured. */
  *per_vcpu_ns = MAX ((large - small) / (LARGE - SMALL), 0);
  *base_ns = large - *per_vcpu_ns * LARGE;
  *source = g_strdup_printf (PREFIX "one register per ioctl costs %.0f ns + %.1f ns per vCPU "
                             "(%u reads on VMs of %u and %u vCPUs: %.0f and %.0f ns each)",
                             *base_ns, *per_vcpu_ns, READS, SMALL, LARGE, small, large);
  return TRUE;
}

#else

gboolean
vgicd_calibrate_single (const char *kvm_path, double *base_ns, double *per_vcpu_ns,
                        char **source)
{
  (void) kvm_path;
  *base_ns = *per_vcpu_ns = 0;
  *source = g_strdup (PREFIX "not an arm64 host");
  return FALSE;
}

#endif
