/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sim-compare.h - did a destination VM (vgic-sim) arrive with its source's
 * register file?  For the programs that move state and print figures (the
 * demo, the benchmarks), which must not report a time for a wrong result.
 */
#pragma once

#include "vgic-sim.h"

/**
 * sim_compare_register_files() - does @dst hold @src's whole register file?
 * @routes: TRUE for vgicd's record path, which carries every SPI's route;
 *	FALSE for QEMU 10.0's accesses (its own path, and the fields path),
 *	which do not carry the routes of SPIs above nr_irqs / 2 (the quirk in
 *	vgic/vgic-plan.c): those keep the destination's, and are not compared
 * @diff: (optional): what differs, when something does
 */
gboolean sim_compare_register_files (VgicSim *src, VgicSim *dst, gboolean routes,
                                     GString *diff);
