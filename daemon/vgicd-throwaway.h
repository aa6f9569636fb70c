/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-throwaway.h - a VM that exists only to be asked something: n vCPUs
 * (initialized, never run) and an initialized vGICv3 at the virt machine's
 * addresses.  vgicd's start-up probe and its calibration build one each.
 */
#pragma once

#include <glib.h>

typedef struct {
  int vm;
  int gic;		/* the vGICv3 device fd */
  int *vcpus;
  guint nr_vcpus;	/* vCPUs made (and to close) */
} VgicdThrowawayVm;

/**
 * vgicd_throwaway_vm_new() - make the VM on the KVM fd @kvm
 * @t: (out): the VM; vgicd_throwaway_vm_close() it whatever the result
 * @what: (out): on failure, the step that failed, with errno set
 *
 * Only an arm64 host can; elsewhere it fails at KVM_ARM_PREFERRED_TARGET
 * with ENOSYS (the code is compiled everywhere so that every build checks it).
 * Return: TRUE with @t ready.
 */
gboolean vgicd_throwaway_vm_new (int kvm, guint nr_vcpus, VgicdThrowawayVm *t, const char **what);

void vgicd_throwaway_vm_close (VgicdThrowawayVm *t);
