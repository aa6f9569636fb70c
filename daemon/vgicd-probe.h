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
 * @source: (out): what the answer rests on, for KernelBatchSource, e.g.
 *	"start-up probe: /dev/kvm: No such file or directory"
 *
 * Opens @kvm_path, creates a VM (IPA size type 0) and a vGICv3 device in it,
 * and runs the batch ABI handshake (vgic_batch_probe(), vgic-entry.h): a
 * group 10 of another layout counts as none.  Everything is
 * closed again before returning.  On a host that is not arm64 the kernel
 * cannot answer, so nothing is opened.
 *
 * Return: 1 the kernel has batch, 0 it has not, -1 unknown (@source says
 * why).
 */
int vgicd_probe_kernel_batch (const char *kvm_path, char **source);
