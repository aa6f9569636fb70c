/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-batch-probe.h - may this vGIC device fd be given a batch?  The one
 * check both sides run: libvgicd on the VM's own vGIC at attach, vgicd on a
 * throwaway VM at start-up.
 *
 * The batch group has no ABI attribute: KVM_HAS_DEVICE_ATTR(10, 0) says a
 * group 10 exists, not that it is this layout (another batch series for
 * this device uses the same name and number).  So the probe reads a few
 * registers of the distributor and of the redistributor of the vCPU with
 * affinity 0 one per ioctl, then the same registers as one batch, and the
 * group is this UAPI only if the batch returned exactly those values,
 * exactly where this layout puts them, and touched nothing else.
 *
 * Theory of operation: a kernel of another layout can fail the probe but
 * can never be made to write outside the probe's own memory.  Everything
 * the kernel is given lives in one private mapping, fenced on both sides
 * by inaccessible guard pages, and every naturally aligned 32- or 64-bit
 * word in it, read as a pointer, is one of: zero; a register offset or a
 * group number (below 16, in page 0, which the probe checks is not mapped
 * in this process); or an address inside the mapping itself
 * (the header's entry pointer, and each entry's value, which a GET
 * ignores, pointing at a zeroed scratch slot of its own).  Read as a
 * count, every word is small or a pointer, and a copy that runs past the
 * mapping faults in the guard before it reaches anything else.  The
 * verdict compares the whole mapping afterwards: values, header, unused
 * entry space and scratch.
 */
#pragma once

#include <glib.h>

typedef enum {
  VGIC_BATCH_PROBE_ABSENT = 0,	/* no group 10: an unpatched kernel */
  VGIC_BATCH_PROBE_OURS = 1,	/* this project's batch group, verified */
  VGIC_BATCH_PROBE_FOREIGN = 2,	/* a group 10 that does not behave as this UAPI */
} VgicBatchProbe;

/**
 * vgic_batch_probe() - HAS, then the verification described above
 * @dev_fd: an initialized vGICv3 device fd whose vCPUs are not running
 * @why: if not NULL, receives what was found, in words (g_free())
 *
 * Reads only: no register of the VM is written.
 *
 * Return: a VgicBatchProbe, or a negative errno when the probe could not
 * tell (a vCPU runs: -EBUSY; no vCPU with affinity 0: -EINVAL; ...).
 */
int vgic_batch_probe (int dev_fd, char **why);
