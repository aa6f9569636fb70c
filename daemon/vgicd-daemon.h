/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-daemon.h - the state vgicd shares between its parts: the mode, what
 * is known of the kernel, the attached sessions, the host totals and the
 * history.  The sessions (vgicd-session.c, and their operations in
 * vgicd-steps.c) and the socket's door (vgicd-server.c: peers refused or
 * closed) update it; the operator API (vgicd-manager.c) and the metrics
 * textfile (vgicd-metrics.c) read it, told by its changed hook; vgicd-main.c
 * owns it.
 */
#pragma once

#include <gio/gio.h>

#include "vgicd-config.h"
#include "vgicd-logshare.h"

typedef struct _VgicdSession VgicdSession;
typedef struct _VgicdHistory VgicdHistory;

/* vgicd_operations_total's labels: VgicdTotals.operations' indices. */
enum { VGICD_DIRECTION_SAVE, VGICD_DIRECTION_LOAD, VGICD_N_DIRECTIONS };
enum {
  VGICD_COUNT_OK,
  VGICD_COUNT_FAILED,
  VGICD_COUNT_REFUSED,
  VGICD_COUNT_DECLINED,
  VGICD_N_COUNTS
};

typedef struct {
  guint64 saves;		/* saves completed */
  guint64 loads;		/* loads completed */
  guint64 declined;		/* saves and field loads declined (mode off) */
  guint64 record_saves;		/* saves that produced a state record */
  guint64 record_loads;		/* loads from a state record (the rest: QEMU's fields) */
  guint64 fallbacks;		/* operations run one by one for lack of kernel batch */
  guint64 foreign_batch;	/* sessions whose kernel has a group 10 of another ABI */
  guint64 second_rounds;	/* saves that read round 2 apart (the shape guess missed) */
  guint64 failures;		/* saves or loads that failed */
  guint64 bytes_saved;		/* record bytes produced */
  guint64 bytes_loaded;		/* record bytes accepted */
  guint64 sessions_total;	/* sessions attached since start */
  guint64 refused;		/* peers refused (not on the allow-list) */
  guint64 accept_pauses;	/* times the door stopped accepting (vgicd-server.c) */
  /* Every operation's end by direction and outcome (the history's
   * outcome words), counted where it is logged. */
  guint64 operations[VGICD_N_DIRECTIONS][VGICD_N_COUNTS];
} VgicdTotals;

typedef struct {
  VgicdConfig *config;
  VgicdMode mode;		/* may differ from config->mode after SetMode(persist=false) */
  const char *vms_conf;		/* the static per-VM policy (vgicd-vms.h) */
  const char *vms_dir;		/* the domains' own choices, by UUID */
  int kernel_batch;		/* -1 unknown, 0 no, 1 yes */
  char *kernel_batch_source;	/* "start-up probe: ...", or why not and the VMs' claims */
  gboolean kernel_batch_probed;	/* kernel_batch is vgicd's own probe's answer */
  gboolean kernel_batch_foreign;	/* that probe found a group 10 of another layout */
  char *kernel_batch_unprobed;	/* unprobed: why ("no probe (Probe=false)", the probe's error) */
  GPtrArray *sessions;		/* VgicdSession *, attached */
  /* What a VM's first save assumes of round 2: the GICR_TYPER.PLPIS and AP
   * registers per group most attached VMs have (learn_shape()). */
  gboolean guess_plpis;
  guint guess_apr;
  VgicdTotals totals;
  /* Admitted peers closed for what they sent (vgicd-server.c's filter,
   * which runs on GDBus's worker thread: atomic, read with
   * g_atomic_int_get()). */
  gint peers_closed;
  gint peers_closed_told;	/* a vgicd_daemon_changed() for it is queued */
  gint64 start_usec;		/* g_get_monotonic_time() at start */
  gint64 start_real_usec;	/* g_get_real_time() at start: vgicd_start_time_seconds */
  VgicdHistory *history;	/* operations kept after their session (vgicd-history.h) */
  VgicdLogShares *log_shares;	/* each peer process's journal lines (vgicd-logshare.h) */
  guint metrics_timeout;	/* a textfile write pending (vgicd-metrics.h) */
  guint metrics_refresh;	/* the textfile's next write on an idle host */
  gboolean metrics_failing;	/* the last textfile write failed (logged once) */
  /* Called after any change the operator API shows (mode, kernel batch,
   * sessions, totals). */
  void (*changed) (gpointer data);
  gpointer changed_data;
} VgicdDaemon;

/* vgicd_daemon_changed() - tell the operator API that something changed */
static inline void
vgicd_daemon_changed (VgicdDaemon *daemon)
{
  if (daemon->changed)
    daemon->changed (daemon->changed_data);
}

static inline gboolean
vgicd_daemon_tell_closed (gpointer data)
{
  VgicdDaemon *daemon = data;

  g_atomic_int_set (&daemon->peers_closed_told, 0);
  vgicd_daemon_changed (daemon);
  return G_SOURCE_REMOVE;
}

/* vgicd_daemon_count_closed() - count an admitted peer closed for what it
 * sent, from any thread (the relay's, GDBus's worker): the operator API,
 * which answers from what it was last told, is told on the main thread,
 * once for a burst (a peer closed in a loop queues one idle, not one each). */
static inline void
vgicd_daemon_count_closed (VgicdDaemon *daemon)
{
  g_atomic_int_inc (&daemon->peers_closed);
  if (g_atomic_int_compare_and_exchange (&daemon->peers_closed_told, 0, 1))
    g_idle_add (vgicd_daemon_tell_closed, daemon);
}

/**
 * vgicd_session_describe() - one session as Manager1.ListSessions shows it
 * Return: a floating a{sv} (keys in data/org.vgicd.Manager1.xml).
 */
GVariant *vgicd_session_describe (VgicdSession *session);
