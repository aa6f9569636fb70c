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
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "vgicd/kvm-call.h"
#include "vgicd/vgic-entry.h"

/* The code below is compiled on every host so that an x86-64 build catches
 * mistakes in it; it only runs where a vGICv3 can exist. */
#if defined(__aarch64__)
#define HOST_IS_ARM64 1
#else
#define HOST_IS_ARM64 0
#endif

#define PREFIX "start-up probe: "

static int
unknown (char **source, const char *what, int err)
{
  *source = g_strdup_printf (PREFIX "%s: %s", what, g_strerror (err));
  return -1;
}

/* vgicd_probe_kernel_batch() - see vgicd-probe.h */
int
vgicd_probe_kernel_batch (const char *kvm_path, char **source)
{
  struct kvm_create_device dev = { .type = KVM_DEV_TYPE_ARM_VGIC_V3 };
  int kvm = -1, vm = -1, ret, err;

  g_return_val_if_fail (source != NULL, -1);

  if (!HOST_IS_ARM64)
    {
      *source = g_strdup (PREFIX "not an arm64 host");
      return -1;
    }

  kvm = open (kvm_path, O_RDWR | O_CLOEXEC);
  if (kvm < 0)
    return unknown (source, kvm_path, errno);

  /* Type 0: the default IPA size on arm64; the VM only has to exist. */
  vm = kvm_call (kvm, KVM_CREATE_VM, 0);
  if (vm < 0)
    {
      err = errno;
      close (kvm);
      return unknown (source, "KVM_CREATE_VM", err);
    }
  close (kvm);

  if (ioctl (vm, KVM_CREATE_DEVICE, &dev) < 0)
    {
      err = errno;
      close (vm);
      return unknown (source, "KVM_CREATE_DEVICE (vGICv3)", err);
    }

  {
    struct kvm_vgic_batch_abi abi;
    char buf[VGIC_BATCH_PROBE_DESCRIBE_MAX];

    ret = vgic_batch_probe ((int) dev.fd, &abi);
    close ((int) dev.fd);
    close (vm);
    *source = g_strdup_printf (PREFIX "%s",
                               vgic_batch_probe_describe (ret, &abi, buf, sizeof buf));
  }
  if (ret < 0)
    return -1;
  /* A group 10 of another ABI is no batch group for vgicd. */
  return ret == VGIC_BATCH_PROBE_OURS ? 1 : 0;
}
