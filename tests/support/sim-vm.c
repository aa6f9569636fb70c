/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sim-vm.c - a sim's affinities and shape (see sim-vm.h). */
#include "sim-vm.h"

guint32 *
sim_vm_mpidrs (VgicSim *sim, guint vcpus)
{
  guint32 *mpidrs = g_new (guint32, vcpus);

  for (guint i = 0; i < vcpus; i++)
    mpidrs[i] = vgic_sim_get_mpidr (sim, i);
  return mpidrs;
}

VgicShape *
sim_vm_shape (VgicSim *sim, guint vcpus, guint irqs)
{
  g_autofree guint32 *mpidrs = sim_vm_mpidrs (sim, vcpus);
  g_autoptr (GError) error = NULL;
  VgicShape *shape = vgic_shape_new (irqs, vcpus, mpidrs, &error);

  g_assert_no_error (error);
  return shape;
}
