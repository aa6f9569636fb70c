/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-logshare.h - each peer process's share of vgicd's journal lines
 * (LogLinesPerProcess=).
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

typedef struct _VgicdLogShares VgicdLogShares;

/* What vgicd_log_shares_take() decides for one line. */
typedef enum {
  VGICD_LOG_WRITE,	/* write it (with *unlogged, when not 0) */
  VGICD_LOG_DROP_FIRST,	/* the process is over its share from here: write the notice */
  VGICD_LOG_DROP,	/* counted, not written */
} VgicdLogVerdict;

/* vgicd_log_shares_new() - @per_minute lines a minute for each process */
VgicdLogShares *vgicd_log_shares_new (guint per_minute);
void vgicd_log_shares_free (VgicdLogShares *shares);

/* vgicd_log_shares_set_per_minute() - a reload's LogLinesPerProcess= */
void vgicd_log_shares_set_per_minute (VgicdLogShares *shares, guint per_minute);
guint vgicd_log_shares_per_minute (VgicdLogShares *shares);

/*
 * vgicd_log_shares_take() - may a line that process @pid caused be written?
 * On VGICD_LOG_WRITE, *@unlogged is how many of @pid's lines were dropped
 * since its last written one (for that line to say).  Any thread.  A
 * @shares of NULL (a stand-in daemon) writes every line.
 */
VgicdLogVerdict vgicd_log_shares_take (VgicdLogShares *shares, pid_t pid, guint64 *unlogged);

/* vgicd_log_shares_suppressed() - the lines dropped since start (GetStats'
 * log-suppressed) */
guint64 vgicd_log_shares_suppressed (VgicdLogShares *shares);

/* vgicd_log_shares_tracked() - the processes in the table now (its bound
 * is what the tests check) */
guint vgicd_log_shares_tracked (VgicdLogShares *shares);

/*
 * vgicd_log_shares_line() - @message as process @pid may write it now,
 * saying how many of its lines were not logged before it; NULL when it is
 * over its share (the line counted, and the first time one notice written,
 * naming @vm when not NULL)
 */
char *vgicd_log_shares_line (VgicdLogShares *shares, pid_t pid, const char *vm,
                             const char *message);

/*
 * vgicd_log_peer_line() - a line about process @pid outside a session
 * (its connection closed, its handshake failed), at @level, through @pid's
 * share: written with what was dropped before it, or counted.
 */
void vgicd_log_peer_line (VgicdLogShares *shares, pid_t pid, GLogLevelFlags level,
                          const char *format, ...) G_GNUC_PRINTF (4, 5);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (VgicdLogShares, vgicd_log_shares_free)
