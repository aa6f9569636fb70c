/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fake-save.h - saves made up without a device, for the planner, record and
 * fuzz-corpus code: the planner's own rounds, with values derived from the
 * register and a seed.
 */
#pragma once

#include "vgic-plan.h"

/**
 * fake_save_fill() - give every read of @reads a value that depends only on
 * the register and @seed (a register read twice reads the same, as from a
 * paused VM; 32-bit registers stay 32-bit), then force what the planner
 * branches on: GICR_TYPER.PLPIS = @plpis, every ICC_CTLR_EL1.PRIbits =
 * @pri_bits - 1, and GICD_TYPER room for 1024 IRQs
 */
void fake_save_fill (VgicList *reads, guint32 seed, gboolean plpis, guint pri_bits);

/**
 * fake_save() - both rounds of a save of @shape, as vgicd runs them
 * @n_first: if not NULL, gets the number of round-1 reads (they come first)
 * Return: every read, round 1 then round 2.
 */
VgicList *fake_save (const VgicShape *shape, gboolean plpis, guint pri_bits,
                   guint32 seed, guint *n_first);

/**
 * fake_save_routes() - fake_save() as vgicd runs a save for its record:
 * round 1, the routes QEMU misses (vgic_plan_save_routes()), round 2
 * @zero_routes: those routes read 0 (as on a VM that never set them), else
 *	each has a value of its own
 */
VgicList *fake_save_routes (const VgicShape *shape, gboolean plpis, guint pri_bits,
                            guint32 seed, gboolean zero_routes);
