/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sim-vm.h - a vgic-sim VM as QEMU describes it to vgicd and to the vGIC
 * core: its vCPUs' affinities (MPIDRs) and its shape.  Every test that
 * plays QEMU on a sim needs both; they are said once, here.
 */
#pragma once

#include "vgic-shape.h"
#include "vgic-sim.h"

/* sim_vm_mpidrs() - the packed affinity of each of @sim's @vcpus vCPUs, as
 * QEMU reads them for an attach; g_free() it */
guint32 *sim_vm_mpidrs (VgicSim *sim, guint vcpus);

/* sim_vm_shape() - the vGIC core's shape of @sim (@vcpus vCPUs, @irqs
 * IRQs); fails the test if the core refuses it */
VgicShape *sim_vm_shape (VgicSim *sim, guint vcpus, guint irqs);
