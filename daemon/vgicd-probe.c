/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-probe.c - the optional start-up probe for the kernel's vGIC batch
 * group.
 *
 * vgicd itself never needs KVM: QEMU executes every access.  The probe only
 * fills in KernelBatch before the first VM attaches, so an operator can see
 * what the host offers; executors' reports replace its answer later.  Any
 * failure is therefore "unknown" with a reason, never an error.
 */
#include "vgicd-probe.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "vgic-batch-probe.h"
#include "vgicd-throwaway.h"

/* The code below is compiled on every host so that an x86-64 build catches
 * mistakes in it; it only runs where a vGICv3 can exist. */
#if defined(__aarch64__)
#define HOST_IS_ARM64 1
#else
#define HOST_IS_ARM64 0
#endif

#define PREFIX "start-up probe: "

/* vgicd_probe_kernel_batch() - see vgicd-probe.h */
int
vgicd_probe_kernel_batch (const char *kvm_path, gboolean *foreign, char **source)
{
  VgicdThrowawayVm t;
  g_autofree char *why = NULL;
  const char *what = NULL;
  int kvm, ret;

  g_return_val_if_fail (source != NULL && foreign != NULL, -1);
  *foreign = FALSE;

  if (!HOST_IS_ARM64)
    {
      *source = g_strdup (PREFIX "not an arm64 host");
      return -1;
    }

  kvm = open (kvm_path, O_RDWR | O_CLOEXEC);
  if (kvm < 0)
    {
      *source = g_strdup_printf (PREFIX "%s: %s", kvm_path, g_strerror (errno));
      return -1;
    }
  /* One vCPU (affinity 0, which the probe reads) and an initialized vGIC,
   * never run: the probe reads its registers, batched and one by one. */
  if (!vgicd_throwaway_vm_new (kvm, 1, &t, &what))
    {
      *source = g_strdup_printf (PREFIX "a throwaway VM: %s: %s", what, g_strerror (errno));
      vgicd_throwaway_vm_close (&t);
      close (kvm);
      return -1;
    }
  close (kvm);
  ret = vgic_batch_probe (t.gic, &why);
  vgicd_throwaway_vm_close (&t);
  *source = g_strdup_printf (PREFIX "%s", why);
  if (ret < 0)
    return -1;
  /* A group 10 of another layout is no batch group for vgicd. */
  *foreign = ret == VGIC_BATCH_PROBE_FOREIGN;
  return ret == VGIC_BATCH_PROBE_OURS ? 1 : 0;
}
