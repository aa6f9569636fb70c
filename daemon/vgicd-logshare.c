/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-logshare.c - each peer process's share of vgicd's journal lines.
 *
 * Theory of operation
 *
 * journald rations each service: past RateLimitBurst= lines in
 * RateLimitIntervalSec= (10,000 in 30 s by default, scaled up with the
 * free disk space) it drops the service's lines, every one of them, until
 * the interval ends, and says only how many it dropped.  For vgicd those
 * are every VM's lines: the failures, the fallbacks, the refusals an
 * operator looks for after a migration went wrong.  And a peer makes vgicd
 * write a line cheaply: a load refused before its first write costs it
 * one call (tens of microseconds), a connection closed for what it sent
 * one connect().  One compromised QEMU could so silence vgicd for every
 * VM on the host, and fill the journal's disk share with its own lines.
 *
 * So every line a peer causes is charged to the process that caused it
 * (its SO_PEERCRED pid: a QEMU runs one VM), as a token bucket: a process
 * may write LogLinesPerProcess= lines (120) at once, and that many a
 * minute after, spread out (one every half second by default).  A QEMU
 * writes three to five a migration (its attach, a second round, a
 * fallback, the outcome, its detach).  A line over the share is counted
 * (log-suppressed, vgicd_log_lines_suppressed_total) and not written; the
 * first line dropped is replaced by one notice naming the process (one
 * until its bucket is full again: a process that keeps at it gets no
 * second), and each line written after says how many were not before it
 * (vgicd_log_shares_line(), which every charged line goes through).  Only
 * the prose is rationed: every operation is still counted, kept in the
 * history and in the metrics.  A host with N processes writing at once writes at most
 * N shares, N being bounded by MaxConnections=.
 *
 * The table holds a process while its bucket is below full: a sweep, every
 * 64 takes when it holds more than 64, removes the rest (a full bucket is
 * what a process not in the table gets; one quiet for a minute may lose
 * its "not logged" in prose, never in the count), so that it holds about
 * the processes that wrote in the last minute.  Takes come from the main
 * loop, GDBus's worker thread and the relay's, hence the mutex; each
 * holds it for a hash lookup.
 */
#include "vgicd-logshare.h"

#define SWEEP_ABOVE 64
#define SWEEP_EVERY 64

typedef struct {
  double tokens;		/* lines it may write now */
  gint64 at_us;			/* when tokens was computed */
  guint64 unlogged;		/* dropped since its last written line */
  gboolean told;		/* the notice is out, and the bucket not full since */
} Share;

struct _VgicdLogShares {
  GMutex lock;
  guint per_minute;
  GHashTable *by_pid;		/* GINT_TO_POINTER (pid) -> Share */
  guint takes;			/* since the last sweep */
  guint64 suppressed;		/* every line dropped */
};

VgicdLogShares *
vgicd_log_shares_new (guint per_minute)
{
  VgicdLogShares *shares = g_new0 (VgicdLogShares, 1);

  g_mutex_init (&shares->lock);
  shares->per_minute = MAX (per_minute, 1);
  shares->by_pid = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  return shares;
}

void
vgicd_log_shares_free (VgicdLogShares *shares)
{
  if (!shares)
    return;
  g_hash_table_unref (shares->by_pid);
  g_mutex_clear (&shares->lock);
  g_free (shares);
}

void
vgicd_log_shares_set_per_minute (VgicdLogShares *shares, guint per_minute)
{
  g_mutex_lock (&shares->lock);
  shares->per_minute = MAX (per_minute, 1);
  g_mutex_unlock (&shares->lock);
}

guint
vgicd_log_shares_per_minute (VgicdLogShares *shares)
{
  guint n;

  g_mutex_lock (&shares->lock);
  n = shares->per_minute;
  g_mutex_unlock (&shares->lock);
  return n;
}

/* @s's tokens at @now: refilled at per_minute a minute, at most a burst
 * (a smaller share after a reload clips it). */
static void
refill (const VgicdLogShares *shares, Share *s, gint64 now)
{
  const double burst = shares->per_minute;

  s->tokens = MIN (burst, s->tokens + (double) (now - s->at_us) * burst / (60.0 * G_USEC_PER_SEC));
  s->at_us = now;
}

static void
sweep (VgicdLogShares *shares, gint64 now)
{
  GHashTableIter it;
  Share *s;

  g_hash_table_iter_init (&it, shares->by_pid);
  while (g_hash_table_iter_next (&it, NULL, (gpointer *) &s))
    {
      refill (shares, s, now);
      if (s->tokens >= shares->per_minute)
        g_hash_table_iter_remove (&it);
    }
}

VgicdLogVerdict
vgicd_log_shares_take (VgicdLogShares *shares, pid_t pid, guint64 *unlogged)
{
  const gint64 now = g_get_monotonic_time ();
  VgicdLogVerdict verdict;
  Share *s;

  *unlogged = 0;
  if (!shares)
    return VGICD_LOG_WRITE;
  g_mutex_lock (&shares->lock);
  if (++shares->takes >= SWEEP_EVERY && g_hash_table_size (shares->by_pid) > SWEEP_ABOVE)
    {
      shares->takes = 0;
      sweep (shares, now);
    }
  s = g_hash_table_lookup (shares->by_pid, GINT_TO_POINTER (pid));
  if (!s)
    {
      s = g_new0 (Share, 1);
      s->tokens = shares->per_minute;
      s->at_us = now;
      g_hash_table_insert (shares->by_pid, GINT_TO_POINTER (pid), s);
    }
  refill (shares, s, now);
  if (s->tokens >= shares->per_minute)
    s->told = FALSE;
  if (s->tokens >= 1.0)
    {
      s->tokens -= 1.0;
      *unlogged = s->unlogged;
      s->unlogged = 0;
      verdict = VGICD_LOG_WRITE;
    }
  else
    {
      verdict = s->told ? VGICD_LOG_DROP : VGICD_LOG_DROP_FIRST;
      s->told = TRUE;
      s->unlogged++;
      shares->suppressed++;
    }
  g_mutex_unlock (&shares->lock);
  return verdict;
}

guint64
vgicd_log_shares_suppressed (VgicdLogShares *shares)
{
  guint64 n;

  if (!shares)
    return 0;
  g_mutex_lock (&shares->lock);
  n = shares->suppressed;
  g_mutex_unlock (&shares->lock);
  return n;
}

guint
vgicd_log_shares_tracked (VgicdLogShares *shares)
{
  guint n;

  g_mutex_lock (&shares->lock);
  n = g_hash_table_size (shares->by_pid);
  g_mutex_unlock (&shares->lock);
  return n;
}

/* The one notice written when @pid goes over its share. */
static void
log_over_share (VgicdLogShares *shares, pid_t pid, const char *vm)
{
  g_autofree char *pid_s = g_strdup_printf ("%d", (int) pid);
  g_autofree char *about = vm ? g_strdup_printf (" (VM %s)", vm) : NULL;

  g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING,
                    "VGICD_PEER_PID", pid_s,
                    "MESSAGE", "pid %d%s causes more than its %u log lines a minute "
                    "(LogLinesPerProcess=): its lines are counted in log-suppressed, not "
                    "logged, until it slows down; the next says how many", (int) pid,
                    about ? about : "", vgicd_log_shares_per_minute (shares));
}

char *
vgicd_log_shares_line (VgicdLogShares *shares, pid_t pid, const char *vm, const char *message)
{
  guint64 unlogged;

  switch (vgicd_log_shares_take (shares, pid, &unlogged))
    {
    case VGICD_LOG_DROP_FIRST:
      log_over_share (shares, pid, vm);
      return NULL;
    case VGICD_LOG_DROP:
      return NULL;
    case VGICD_LOG_WRITE:
      break;
    }
  if (!unlogged)
    return g_strdup (message);
  return g_strdup_printf ("%s (and %" G_GUINT64_FORMAT " lines of pid %d not logged before it)",
                          message, unlogged, (int) pid);
}

void
vgicd_log_peer_line (VgicdLogShares *shares, pid_t pid, GLogLevelFlags level,
                     const char *format, ...)
{
  g_autofree char *msg = NULL, *line = NULL;
  va_list ap;

  va_start (ap, format);
  msg = g_strdup_vprintf (format, ap);
  va_end (ap);
  line = vgicd_log_shares_line (shares, pid, NULL, msg);
  if (line)
    g_log_structured (G_LOG_DOMAIN, level, "MESSAGE", "%s", line);
}
