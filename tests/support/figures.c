/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * figures.c - elapsed time and medians for the programs that print
 * timings (see figures.h).
 */
#include <stdlib.h>
#include <string.h>

#include "figures.h"

double
figures_ms_since (gint64 t0)
{
  return (g_get_monotonic_time () - t0) / 1000.0;
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

double
figures_median (const double *v, guint n)
{
  g_autofree double *tmp = g_memdup2 (v, n * sizeof (double));

  qsort (tmp, n, sizeof (double), cmp_double);
  return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

double
figures_max (const double *v, guint n)
{
  double m = 0;

  for (guint i = 0; i < n; i++)
    m = MAX (m, v[i]);
  return m;
}
