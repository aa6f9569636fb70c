/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * figures.h - the arithmetic of the programs that print timings (the demo,
 * the benchmarks): elapsed milliseconds, and the median of a few runs.
 */
#pragma once

#include <glib.h>

/* figures_ms_since() - milliseconds since @t0 (g_get_monotonic_time()) */
double figures_ms_since (gint64 t0);

/* figures_median() - the median of @v[0..@n) (@n > 0); @v is left alone */
double figures_median (const double *v, guint n);

/* figures_max() - the largest of @v[0..@n), 0 for none */
double figures_max (const double *v, guint n);
