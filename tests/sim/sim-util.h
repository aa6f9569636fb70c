/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sim-util.h - helpers for the vgic-sim tests: make sims, and issue real
 * KVM_{GET,SET,HAS}_DEVICE_ATTR ioctls on their fds, returning -errno.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "vgic-list.h"
#include "vgic-shape.h"
#include "vgic-regs.h"
#include "vgic-sim.h"

#define GRP_DIST KVM_DEV_ARM_VGIC_GRP_DIST_REGS
#define GRP_REDIST KVM_DEV_ARM_VGIC_GRP_REDIST_REGS
#define GRP_SYSREG KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS
#define GRP_LEVEL KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO
#define GRP_BATCH KVM_DEV_ARM_VGIC_GRP_BATCH_REGS

/* sim_new() - a sim of @vcpus vCPUs and @irqs IRQs; aborts on error */
VgicSim *sim_new (guint32 vcpus, guint32 irqs, gboolean its, guint pri_bits);
VgicSim *sim_new_config (const VgicSimConfig *config);

/* The raw ioctl: 0 or -errno. */
int sim_ioctl (int fd, unsigned long request, guint32 group, guint64 attr,
               void *addr);
int sim_get32 (int fd, guint32 group, guint64 attr, guint32 *val);
int sim_set32 (int fd, guint32 group, guint64 attr, guint32 val);
int sim_get64 (int fd, guint32 group, guint64 attr, guint64 *val);
int sim_set64 (int fd, guint32 group, guint64 attr, guint64 val);
int sim_has (int fd, guint32 group, guint64 attr);

/* GET a 32-bit register and return it (asserting success). */
guint32 sim_read32 (int fd, guint32 group, guint64 attr);
guint64 sim_read64 (int fd, guint32 group, guint64 attr);

/* sim_batch() - one batch ioctl; *nr_done gets the header's nr_done */
int sim_batch (int fd, gboolean write, struct kvm_vgic_batch_entry *e,
               guint32 n, guint32 *nr_done);

/* Run a plan (GArray of kvm_vgic_batch_entry, values in/out) one access at
 * a time with the group's width, or in batches of at most the kernel cap. */
int sim_run_single (int fd, gboolean write, VgicList *plan);
int sim_run_batch (int fd, gboolean write, VgicList *plan);

/* sim_plan_save() - a whole save of @sim through the planner (both rounds),
 * batched or one by one, with the routes QEMU's offsets miss when @routes;
 * fails the test on any error.  Return: the reads, values filled in. */
VgicList *sim_plan_save (VgicSim *sim, const VgicShape *shape, gboolean batch,
                         gboolean routes);

/* sim_assert_same_values() - two saves of the same plan read the same
 * registers and values (32-bit groups with nothing above bit 31); fails
 * the test naming the first entry that differs */
void sim_assert_same_values (VgicList *a, VgicList *b);

/* Call first in main(): supervise this process, then g_test_init(). */
void sim_test_init (int *argc, char ***argv);
