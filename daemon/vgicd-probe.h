/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-probe.h - the optional start-up probe: does this host's kernel have
 * the vGIC batch group (KVM_DEV_ARM_VGIC_GRP_BATCH_REGS)?
 */
#pragma once

#include <glib.h>

#define VGICD_KVM_DEVICE "/dev/kvm"

/**
 * vgicd_probe_kernel_batch() - ask the kernel through a throwaway VM
 * @kvm_path: the KVM device, normally VGICD_KVM_DEVICE
 * @foreign: (out): TRUE when the kernel has a group 10 of another layout
 * @source: (out): what the answer rests on, for KernelBatchSource, e.g.
 *	"start-up probe: /dev/kvm: No such file or directory"
 *
 * Opens @kvm_path, creates a VM of one vCPU with an initialized vGICv3
 * (vgicd-throwaway.h), and runs the batch group's probe on it
 * (vgic_batch_probe(): a batch of reads against single reads, in memory a
 * group of another layout cannot write outside of).  Everything is closed
 * again before returning.  On a host that is not arm64 the kernel cannot
 * answer, so nothing is opened.
 *
 * Return: 1 the kernel has the batch group, verified; 0 it has none (or
 * one of another layout: @foreign); -1 unknown (@source says why).
 */
int vgicd_probe_kernel_batch (const char *kvm_path, gboolean *foreign, char **source);
