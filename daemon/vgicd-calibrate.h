/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-calibrate.h - what one vGIC register per ioctl costs on this host,
 * measured at start-up on throwaway VMs, so that a batched save or load can
 * say what the one-by-one path would have cost it (vgicd-history.h).
 */
#pragma once

#include <glib.h>

/**
 * vgicd_calibrate_single() - time register reads, one per
 * KVM_GET_DEVICE_ATTR, on two throwaway VMs of different sizes, and fit
 * the cost of one access on a VM of n vCPUs as @base_ns + n × @per_vcpu_ns
 * @kvm_path: the KVM device (VGICD_KVM_DEVICE)
 * @base_ns: (out): the part that does not depend on the VM's size
 * @per_vcpu_ns: (out): the part each vCPU adds (lock_all_vcpus())
 * @source: (out): what was measured, or why nothing was, for the log
 *
 * Runs only on arm64 with /dev/kvm; each VM is closed again before it
 * returns.  It takes tens of milliseconds natively, and is run once, at
 * start, before vgicd accepts a connection: never inside a migration.
 *
 * Return: TRUE with both figures set, FALSE when it could not measure
 * (@source says why; the estimate then waits for a one-by-one operation).
 */
gboolean vgicd_calibrate_single (const char *kvm_path, double *base_ns, double *per_vcpu_ns,
                                 char **source);
