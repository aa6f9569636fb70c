/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-harness.h - a private vgicd in a temporary directory, with its own
 * system-bus dbus-daemon carrying the project's policy file: what the demo
 * and the integration tests run against.  Real processes, real sockets.
 */
#pragma once

#include <gio/gio.h>

typedef struct {
  char *dir;		/* temporary directory, removed at stop */
  char *bus_address;	/* the private system bus (DBUS_SYSTEM_BUS_ADDRESS) */
  char *config_path;	/* vgicd.conf */
  char *socket_path;	/* vgicd's socket */
  char *address;	/* "unix:path=<socket_path>", for libvgicd */
  GPid dbus_pid;
  GPid vgicd_pid;
  char *log_path;	/* vgicd's stderr */
  int log_watch;	/* its end printed if the test dies (log-on-failure.h) */
  char *state_path;	/* its state file (what SetMode persists) */
  char *vms_conf;	/* its static per-VM policy (absent until written) */
  char *vms_dir;	/* its folder of domains' choices (created empty) */
  char *vgicd;		/* the binary, for a restart */
} VgicdHarness;

/**
 * vgicd_harness_start() - start dbus-daemon and vgicd
 * @vgicd: path of the vgicd binary
 * @policy: path of data/org.vgicd.Manager1.conf
 * @config: the [vgicd] keys to write (e.g. "Mode=auto\nAllowUsers=root\n");
 *	Socket= and Probe=false are added
 * @error: set when either process does not come up
 */
VgicdHarness *vgicd_harness_start (const char *vgicd, const char *policy,
                                   const char *config, GError **error);

/**
 * vgicd_harness_start_activated() - the same, but vgicd is started on the
 * first connection by systemd-socket-activate, which holds the listening
 * socket and passes it (LISTEN_FDS), as vgicd.socket does under systemd
 */
VgicdHarness *vgicd_harness_start_activated (const char *vgicd, const char *policy,
                                             const char *config, GError **error);

/* vgicd_harness_set_mode() - SetMode(@mode, not persisted) over the private
 * system bus, as root's vgicctl mode --runtime would */
gboolean vgicd_harness_set_mode (VgicdHarness *h, const char *mode, GError **error);

/* vgicd_harness_stat() - one counter of GetStats over the private system
 * bus, as vgicctl stats reads it ("sessions" too); fails the test if the
 * call fails */
guint64 vgicd_harness_stat (VgicdHarness *h, const char *key);

/* vgicd_harness_manager_call() - one Manager1 method over the private
 * system bus; fails the test if the call fails */
GVariant *vgicd_harness_manager_call (VgicdHarness *h, const char *method, GVariant *params,
                                      const char *reply_type);

/* vgicd_harness_read_log() - vgicd's stderr so far, newly allocated (""
 * if unreadable), once vgicd has written what it owes the operations
 * already answered: a journal record is written just after its answer
 * (vgicd-steps.c), so the log is read after a GetStats, which waits for
 * it (no activation, its failure ignored: vgicd may be down) */
char *vgicd_harness_read_log (VgicdHarness *h);

/* vgicd_harness_wait_log() - vgicd's log (as vgicd_harness_read_log()
 * reads it) once it holds @needle, or as it is after @timeout_ms; newly
 * allocated.  The caller asserts: vgicd logs in its own time. */
char *vgicd_harness_wait_log (VgicdHarness *h, const char *needle, guint timeout_ms);

/* vgicd_harness_count() - how many times @needle is in @haystack (lines of
 * a log vgicd_harness_read_log() read, say) */
guint vgicd_harness_count (const char *haystack, const char *needle);

/* vgicd_harness_property() - a string property of Manager1 ("KernelBatch",
 * "KernelBatchSource", ...), newly allocated; fails the test if the call
 * fails */
char *vgicd_harness_property (VgicdHarness *h, const char *name);

/* vgicd_harness_status_kib() - @key ("VmRSS:", "VmHWM:", "RssShmem:") of
 * vgicd's /proc status, in KiB (0 if unreadable) */
guint64 vgicd_harness_status_kib (VgicdHarness *h, const char *key);

/* vgicd_harness_open_fds() - how many descriptors vgicd holds open */
guint vgicd_harness_open_fds (VgicdHarness *h);

/* vgicd_count_fds() - how many descriptors process @pid holds open (its
 * /proc/PID/fd); 0 and @error set if /proc cannot say, never a count that
 * looks right */
guint vgicd_count_fds (GPid pid, GError **error);

/* vgicd_harness_kill_vgicd() - SIGKILL vgicd (for failure tests) */
void vgicd_harness_kill_vgicd (VgicdHarness *h);

/* vgicd_harness_restart_vgicd() - stop vgicd as systemd does (SIGTERM, and
 * wait for it) and start a new one on the same socket and files, as a
 * package upgrade's restart does (vgicd_harness_start() only); returns once
 * the new one listens and owns its name on the bus */
gboolean vgicd_harness_restart_vgicd (VgicdHarness *h, GError **error);

/* vgicd_harness_stop() - stop both, remove the directory (kept, and
 * vgicd's log printed, when the test has failed; a test that aborts gets
 * the log printed by log-on-failure.c) */
void vgicd_harness_stop (VgicdHarness *h);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VgicdHarness, vgicd_harness_stop)
