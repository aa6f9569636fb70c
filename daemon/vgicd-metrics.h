/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-metrics.h - vgicd's counters and duration histograms in the
 * Prometheus text exposition format (version 0.0.4), for
 * Manager1.GetMetrics (`vgicctl metrics`) and for a node_exporter textfile
 * (MetricsTextfile= in vgicd.conf).  docs/operations.md lists the metrics.
 */
#pragma once

#include "vgicd-daemon.h"

/* vgicd_metrics_count() - count an operation's end (@operation "save" or
 * "load", @outcome one of the history's VGICD_OUTCOME_* words) in
 * vgicd_operations_total{direction,outcome} */
void vgicd_metrics_count (VgicdTotals *t, const char *operation, const char *outcome);

/* vgicd_metrics_text() - the exposition, newly allocated */
char *vgicd_metrics_text (VgicdDaemon *d);

/**
 * vgicd_metrics_changed() - the figures changed: write the textfile, if
 * one is configured, within a second (changes in that second are written
 * together, never inside the operation that made them)
 */
void vgicd_metrics_changed (VgicdDaemon *d);

/* vgicd_metrics_write_now() - write the textfile at once (at start, at
 * reload and before exit), and again in five minutes if nothing changes
 * before; logs and returns FALSE when it cannot */
gboolean vgicd_metrics_write_now (VgicdDaemon *d);

/* vgicd_metrics_stop() - drop pending writes (before @d goes away) */
void vgicd_metrics_stop (VgicdDaemon *d);
