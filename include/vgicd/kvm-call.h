/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kvm-call.h - the two KVM calls everything that builds a throwaway VM
 * makes (vgicd's start-up probe and calibration, the nested tier's test):
 * an ioctl retried on EINTR, and KVM_SET_DEVICE_ATTR of one value.
 */
#pragma once

#include <errno.h>
#include <stdint.h>
#include <sys/ioctl.h>

#include "vgicd/kvm-vgic-batch.h"

/* kvm_call() - ioctl(@fd, @req, @arg), again while a signal interrupts it */
static inline int
kvm_call (int fd, unsigned long req, void *arg)
{
  int r;

  do
    r = ioctl (fd, req, arg);
  while (r < 0 && errno == EINTR);
  return r;
}

/* kvm_device_set() - KVM_SET_DEVICE_ATTR (@group, @attr) of the device @fd
 * from @value (its width is the attribute's); -1 with errno set on failure */
static inline int
kvm_device_set (int fd, uint32_t group, uint64_t attr, const void *value)
{
  struct kvm_device_attr a = {
    .group = group, .attr = attr, .addr = (uint64_t) (uintptr_t) value,
  };

  return kvm_call (fd, KVM_SET_DEVICE_ATTR, &a);
}
