/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-throwaway.c - the throwaway VM of vgicd-throwaway.h.
 */
#include "vgicd-throwaway.h"

#include <errno.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "vgicd/kvm-call.h"

/* Guest-physical bases of the throwaway vGIC: the virt machine's. */
#define DIST_BASE 0x08000000ULL
#define REDIST_BASE 0x080a0000ULL

gboolean
vgicd_throwaway_vm_new (int kvm, guint nr_vcpus, VgicdThrowawayVm *t, const char **what)
{
#if defined(__aarch64__)
  struct kvm_vcpu_init init;
  struct kvm_create_device dev = { .type = KVM_DEV_TYPE_ARM_VGIC_V3 };
  guint64 dist = DIST_BASE, redist = REDIST_BASE;

  *t = (VgicdThrowawayVm) { .vm = -1, .gic = -1, .vcpus = g_new (int, nr_vcpus) };
  *what = "KVM_CREATE_VM";
  /* Type 0: the default IPA size on arm64; the VM only has to exist. */
  t->vm = kvm_call (kvm, KVM_CREATE_VM, 0);
  if (t->vm < 0)
    return FALSE;
  *what = "KVM_ARM_PREFERRED_TARGET";
  if (kvm_call (t->vm, KVM_ARM_PREFERRED_TARGET, &init) < 0)
    return FALSE;
  *what = "KVM_CREATE_VCPU";
  for (; t->nr_vcpus < nr_vcpus; t->nr_vcpus++)
    {
      int fd = ioctl (t->vm, KVM_CREATE_VCPU, (unsigned long) t->nr_vcpus);

      if (fd < 0)
        return FALSE;
      t->vcpus[t->nr_vcpus] = fd;
      if (kvm_call (fd, KVM_ARM_VCPU_INIT, &init) < 0)
        {
          t->nr_vcpus++;
          return FALSE;
        }
    }
  *what = "the vGICv3 (create, addresses, init)";
  if (kvm_call (t->vm, KVM_CREATE_DEVICE, &dev) < 0)
    return FALSE;
  t->gic = (int) dev.fd;
  if (kvm_device_set (t->gic, KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_V3_ADDR_TYPE_DIST, &dist) < 0 ||
      kvm_device_set (t->gic, KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_V3_ADDR_TYPE_REDIST,
                      &redist) < 0 ||
      kvm_device_set (t->gic, KVM_DEV_ARM_VGIC_GRP_CTRL, KVM_DEV_ARM_VGIC_CTRL_INIT, NULL) < 0)
    return FALSE;
  *what = NULL;
  return TRUE;
#else
  (void) kvm;
  *t = (VgicdThrowawayVm) { .vm = -1, .gic = -1, .vcpus = g_new (int, MAX (nr_vcpus, 1)) };
  *what = "KVM_ARM_PREFERRED_TARGET";
  errno = ENOSYS;
  return FALSE;
#endif
}

void
vgicd_throwaway_vm_close (VgicdThrowawayVm *t)
{
  int err = errno;	/* callers report the errno of a failed step */

  if (t->gic >= 0)
    close (t->gic);
  for (guint i = 0; i < t->nr_vcpus; i++)
    close (t->vcpus[i]);
  if (t->vm >= 0)
    close (t->vm);
  g_clear_pointer (&t->vcpus, g_free);
  *t = (VgicdThrowawayVm) { .vm = -1, .gic = -1 };
  errno = err;
}
