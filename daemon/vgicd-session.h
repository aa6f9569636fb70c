/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-session.h - one QEMU's session: the VM it attached, its window, and
 * the save or restore in progress.  A session lives exactly as long as the
 * peer-to-peer connection it was attached on.
 */
#pragma once

#include <gio/gio.h>
#include <sys/types.h>

#include "vgicd-daemon.h"

/**
 * vgicd_session_new() - attach a VM on @connection
 * @daemon: the daemon's shared state (the session registers itself there)
 * @connection: the peer's connection; the session's object is exported on it
 * @vm: the Attach argument (a{sv}, see data/org.vgicd.Helper1.xml)
 * @uid: the peer's uid, @pid its pid (for logs)
 * @error: set when @vm does not describe a possible vGIC
 *
 * Return: the session, or NULL with @error set.
 */
VgicdSession *vgicd_session_new (VgicdDaemon *daemon, GDBusConnection *connection,
                                 GVariant *vm, uid_t uid, pid_t pid, GError **error);

/* vgicd_session_free() - unexport, unregister and drop the window */
void vgicd_session_free (VgicdSession *session);

const char *vgicd_session_get_path (VgicdSession *session);

/* vgicd_session_refresh_policy() - read the VM's per-VM policy again (at
 * attach, and when vgicd reloads its configuration) */
void vgicd_session_refresh_policy (VgicdSession *session);
int vgicd_session_get_window_fd (VgicdSession *session);

/**
 * vgicd_session_footprint() - the memory a session may come to hold, in
 * bytes: its window, and about as much again for each of its plans, the
 * reads of its last save, the state it saved or loaded and that state's
 * record (each at most the window's entries): five windows.  An estimate
 * from above, for MaxSessionMemory= (bench/bench-load measured 0.75 MiB a
 * session of 160 vCPUs and 992 IRQs after a save and a load; this says
 * 1.0 MiB).
 */
gsize vgicd_session_footprint (VgicdSession *session);

/**
 * vgicd_session_take_peer_channel() - the peer's end of the step channel,
 * for Attach to pass on (the caller owns it), or -1 if the peer did not ask
 * for one
 */
int vgicd_session_take_peer_channel (VgicdSession *session);

/* vgicd_session_get_info() - Attach's "info" reply (a floating a{sv}); the
 * step channel is the reply's fd @channel_handle (-1: none) */
GVariant *vgicd_session_get_info (VgicdSession *session, gint channel_handle);
