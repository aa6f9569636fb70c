/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-metrics.c - the Prometheus exposition of vgicd's figures, and the
 * node_exporter textfile (see vgicd-metrics.h).
 *
 * One text serves both ways in, so that `vgicctl metrics` shows exactly
 * what the textfile holds.  The textfile is replaced atomically
 * (g_file_set_contents_full() writes a temporary file in the same folder
 * and renames it over the old one), as node_exporter's textfile collector
 * requires: a scrape never sees half a file.  The write is deferred to
 * the main loop's next second: an operation's figures change at its end,
 * which is inside the migration's downtime, and file I/O has no place
 * there.  On a quiet host it is rewritten every VGICD_METRICS_REFRESH_S
 * all the same: node_textfile_mtime_seconds then says vgicd is alive and
 * can write (the VgicdTextfileStale alert, data/prometheus/vgicd.rules.yml),
 * which a file written only at changes could not tell from an idle host.
 */
#ifndef G_LOG_DOMAIN
#define G_LOG_DOMAIN "vgicd"
#endif

#include "vgicd-metrics.h"

#include <math.h>

#include "vgicd-history.h"

/* Five minutes: the stale alert waits three of them, so one slow write
 * never fires it, and a host's disk is not woken more than that. */
#define VGICD_METRICS_REFRESH_S 300

#ifndef PACKAGE_VERSION
#error "PACKAGE_VERSION must be defined by the build"
#endif

static void
family (GString *out, const char *name, const char *type, const char *help)
{
  g_string_append_printf (out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
counter (GString *out, const char *name, const char *help, guint64 value)
{
  family (out, name, "counter", help);
  g_string_append_printf (out, "%s %" G_GUINT64_FORMAT "\n", name, value);
}

/* A gauge's value: C's shortest form for integers, and microseconds for
 * times (a timestamp, or the deprecated uptime), never %.17g's
 * 10.317009000000001; in the C locale whatever the process's. */
static void
gauge (GString *out, const char *name, const char *help, double value)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];

  family (out, name, "gauge", help);
  g_string_append_printf (out, "%s %s\n", name,
                          value == (double) (gint64) value
                          ? g_ascii_formatd (buf, sizeof buf, "%.0f", value)
                          : g_ascii_formatd (buf, sizeof buf, "%.6f", value));
}

/* A label value: only protocol words and the version reach here, but
 * escape as the format asks all the same. */
static char *
label (const char *value)
{
  GString *s = g_string_new (NULL);

  for (const char *p = value ? value : ""; *p; p++)
    if (*p == '\\' || *p == '"')
      g_string_append_printf (s, "\\%c", *p);
    else if (*p == '\n')
      g_string_append (s, "\\n");
    else
      g_string_append_c (s, *p);
  return g_string_free (s, FALSE);
}

static void
histograms (GString *out, VgicdDaemon *d)
{
  static const char name[] = "vgicd_operation_duration_seconds";

  family (out, name, "histogram",
          "Successful saves and loads, from the call to done as vgicd sees it, "
          "by direction and path.");
  for (guint i = 0; d->history && i < VGICD_HISTORY_N_HISTOGRAMS; i++)
    {
      const VgicdHistogram *h = vgicd_history_histogram (d->history, i);
      guint64 cumulative = 0;

      if (!h->count)
        continue;
      for (guint k = 0; k < VGICD_HISTORY_N_BUCKETS; k++)
        {
          double bound = vgicd_history_buckets[k];
          g_autofree char *le = isinf (bound) ? g_strdup ("+Inf") : g_strdup_printf ("%g", bound);

          cumulative += h->buckets[k];
          g_string_append_printf (out, "%s_bucket{direction=\"%s\",path=\"%s\",le=\"%s\"} %"
                                  G_GUINT64_FORMAT "\n", name, h->direction, h->path, le,
                                  cumulative);
        }
      g_string_append_printf (out, "%s_sum{direction=\"%s\",path=\"%s\"} %.9f\n", name,
                              h->direction, h->path, h->sum_ns / 1e9);
      g_string_append_printf (out, "%s_count{direction=\"%s\",path=\"%s\"} %" G_GUINT64_FORMAT
                              "\n", name, h->direction, h->path, h->count);
    }
}

/* vgicd_operations_total's labels, by VgicdTotals.operations' indices: the
 * directions, and the history's outcome words. */
static const char *const directions[VGICD_N_DIRECTIONS] = { "save", "load" };
static const char *const outcomes[VGICD_N_COUNTS] = {
  [VGICD_COUNT_OK] = VGICD_OUTCOME_OK,
  [VGICD_COUNT_FAILED] = VGICD_OUTCOME_FAILED,
  [VGICD_COUNT_REFUSED] = VGICD_OUTCOME_REFUSED,
  [VGICD_COUNT_DECLINED] = VGICD_OUTCOME_DECLINED,
};

void
vgicd_metrics_count (VgicdTotals *t, const char *operation, const char *outcome)
{
  const guint dir = g_str_equal (operation, directions[VGICD_DIRECTION_SAVE])
                    ? VGICD_DIRECTION_SAVE : VGICD_DIRECTION_LOAD;

  for (guint i = 0; i < VGICD_N_COUNTS; i++)
    if (g_str_equal (outcome, outcomes[i]))
      t->operations[dir][i]++;
}

static void
operations (GString *out, const VgicdTotals *t)
{
  static const char name[] = "vgicd_operations_total";

  /* Every series from the start, zero or not: rate() and increase() need
   * the zero to see the first failure as one. */
  family (out, name, "counter",
          "Saves and loads that ended, by direction and outcome (ok; failed; refused: "
          "nothing written; declined: mode off, QEMU took its own path).");
  for (guint d = 0; d < VGICD_N_DIRECTIONS; d++)
    for (guint o = 0; o < VGICD_N_COUNTS; o++)
      g_string_append_printf (out, "%s{direction=\"%s\",outcome=\"%s\"} %" G_GUINT64_FORMAT "\n",
                              name, directions[d], outcomes[o], t->operations[d][o]);
}

/* Two series of one counter family, by direction. */
static void
by_direction (GString *out, const char *name, const char *help, guint64 save, guint64 load)
{
  family (out, name, "counter", help);
  g_string_append_printf (out, "%s{direction=\"save\"} %" G_GUINT64_FORMAT "\n"
                          "%s{direction=\"load\"} %" G_GUINT64_FORMAT "\n",
                          name, save, name, load);
}

/*
 * The names before 0.4.0 (docs/operations.md, "Renamed metrics"): kept for
 * one release so that dashboards and alerts can move at their own pace;
 * each help says what replaces it.  vgicd_uptime_seconds is one of them:
 * in a textfile it stops at the last write, where the start time does not.
 */
static void
deprecated (GString *out, VgicdDaemon *d)
{
  const VgicdTotals *t = &d->totals;
  const struct {
    const char *name, *use;
    guint64 value;
  } counters[] = {
    { "vgicd_saves_total", "vgicd_operations_total{direction=\"save\",outcome=\"ok\"}",
      t->saves },
    { "vgicd_loads_total", "vgicd_operations_total{direction=\"load\",outcome=\"ok\"}",
      t->loads },
    { "vgicd_record_saves_total", "vgicd_record_operations_total{direction=\"save\"}",
      t->record_saves },
    { "vgicd_record_loads_total", "vgicd_record_operations_total{direction=\"load\"}",
      t->record_loads },
    { "vgicd_declined_total", "vgicd_operations_total{outcome=\"declined\"}", t->declined },
    { "vgicd_failures_total", "vgicd_operations_total{outcome=~\"failed|refused\"}",
      t->failures },
    { "vgicd_record_bytes_saved_total", "vgicd_record_bytes_total{direction=\"save\"}",
      t->bytes_saved },
    { "vgicd_record_bytes_loaded_total", "vgicd_record_bytes_total{direction=\"load\"}",
      t->bytes_loaded },
    { "vgicd_refused_total", "vgicd_peers_refused_total", t->refused },
  };

  for (guint i = 0; i < G_N_ELEMENTS (counters); i++)
    {
      g_autofree char *help = g_strdup_printf ("Deprecated, removed in the next release: %s.",
                                               counters[i].use);

      counter (out, counters[i].name, help, counters[i].value);
    }
  gauge (out, "vgicd_uptime_seconds",
         "Deprecated, removed in the next release: time() - vgicd_start_time_seconds.",
         d->start_usec ? (g_get_monotonic_time () - d->start_usec) / 1e6 : 0);
  gauge (out, "vgicd_sessions", "Deprecated, removed in the next release: vgicd_sessions_attached.",
         d->sessions ? d->sessions->len : 0);
}

char *
vgicd_metrics_text (VgicdDaemon *d)
{
  const VgicdTotals *t = &d->totals;
  GString *out = g_string_new (NULL);
  g_autofree char *version = label (PACKAGE_VERSION);
  g_autofree char *mode = label (vgicd_mode_to_string (d->mode));
  const char *batch = d->kernel_batch > 0 ? "yes" : d->kernel_batch == 0 ? "no" : "unknown";

  const struct {
    const char *name, *help;
    guint64 value;
  } counters[] = {
    { "vgicd_sessions_total", "VMs attached since start.", t->sessions_total },
    { "vgicd_fallbacks_total",
      "Operations run one register per ioctl for lack of the kernel's batch group.",
      t->fallbacks },
    { "vgicd_second_rounds_total", "Saves that read the LPI bases and APRs in a second round.",
      t->second_rounds },
    { "vgicd_peers_refused_total", "Peers refused (not on AllowUsers, or over a bound).",
      t->refused },
    { "vgicd_peers_closed_total", "Admitted peers closed for what they sent or for not attaching in time.",
      (guint64) g_atomic_int_get (&d->peers_closed) },
    { "vgicd_accept_pauses_total",
      "Times vgicd stopped accepting connections for 100 ms: connections came faster than it closed them.",
      t->accept_pauses },
    { "vgicd_log_lines_suppressed_total",
      "Log lines a peer process caused past its share (LogLinesPerProcess=): counted, not written.",
      vgicd_log_shares_suppressed (d->log_shares) },
  };

  family (out, "vgicd_info", "gauge", "vgicd's version, mode and the kernel's batch group.");
  g_string_append_printf (out, "vgicd_info{version=\"%s\",mode=\"%s\",kernel_batch=\"%s\"} 1\n",
                          version, mode, batch);
  gauge (out, "vgicd_start_time_seconds", "When vgicd started, in seconds since the Unix epoch.",
         d->start_real_usec / 1e6);
  gauge (out, "vgicd_sessions_attached", "VMs attached now.", d->sessions ? d->sessions->len : 0);
  operations (out, t);
  by_direction (out, "vgicd_record_operations_total",
                "Saves whose stream carried vgicd's state record, and loads from one.",
                t->record_saves, t->record_loads);
  by_direction (out, "vgicd_record_bytes_total", "State record bytes produced and accepted.",
                t->bytes_saved, t->bytes_loaded);
  for (guint i = 0; i < G_N_ELEMENTS (counters); i++)
    counter (out, counters[i].name, counters[i].help, counters[i].value);
  histograms (out, d);
  deprecated (out, d);
  return g_string_free (out, FALSE);
}

static gboolean
refresh (gpointer data)
{
  VgicdDaemon *d = data;

  d->metrics_refresh = 0;
  vgicd_metrics_write_now (d);
  return G_SOURCE_REMOVE;
}

gboolean
vgicd_metrics_write_now (VgicdDaemon *d)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *text = NULL;
  const char *path = d->config ? d->config->metrics_textfile : NULL;

  g_clear_handle_id (&d->metrics_refresh, g_source_remove);
  if (!path)
    return TRUE;
  d->metrics_refresh = g_timeout_add_seconds (VGICD_METRICS_REFRESH_S, refresh, d);
  text = vgicd_metrics_text (d);
  if (g_file_set_contents_full (path, text, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0644, &error))
    {
      d->metrics_failing = FALSE;
      return TRUE;
    }
  /* Once per run of failures, not once per operation. */
  if (!d->metrics_failing)
    g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING,
                      "MESSAGE", "cannot write the metrics textfile (MetricsTextfile=): %s",
                      error->message);
  d->metrics_failing = TRUE;
  return FALSE;
}

static gboolean
write_pending (gpointer data)
{
  VgicdDaemon *d = data;

  d->metrics_timeout = 0;
  vgicd_metrics_write_now (d);
  return G_SOURCE_REMOVE;
}

void
vgicd_metrics_changed (VgicdDaemon *d)
{
  if (d->config && d->config->metrics_textfile && !d->metrics_timeout)
    d->metrics_timeout = g_timeout_add_seconds (1, write_pending, d);
}

void
vgicd_metrics_stop (VgicdDaemon *d)
{
  g_clear_handle_id (&d->metrics_timeout, g_source_remove);
  g_clear_handle_id (&d->metrics_refresh, g_source_remove);
}
