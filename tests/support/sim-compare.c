/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sim-compare.c - source and destination register files (see sim-compare.h). */
#include "sim-compare.h"

gboolean
sim_compare_register_files (VgicSim *src, VgicSim *dst, gboolean routes, GString *diff)
{
  g_autoptr (VgicSimState) a = vgic_sim_state_get (src);
  g_autoptr (VgicSimState) b = vgic_sim_state_get (dst);

  for (guint irq = a->nr_irqs / 2 + 1; irq < a->nr_irqs && !routes; irq++)
    b->spis[irq - 32].route = a->spis[irq - 32].route;
  return vgic_sim_state_equal (a, b, diff);
}
