/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-server.h - the peer-to-peer D-Bus endpoint QEMUs connect to: a
 * unix socket (from systemd socket activation, or bound by vgicd), one
 * D-Bus connection and at most one session per peer.
 */
#pragma once

#include <gio/gio.h>

#include "vgicd-daemon.h"

typedef struct _VgicdServer VgicdServer;

/**
 * vgicd_server_new() - start serving
 * @daemon: the shared state
 * @socket_path: the path to bind when no socket was passed by systemd
 * @error: set when neither a passed socket nor @socket_path can be used
 */
VgicdServer *vgicd_server_new (VgicdDaemon *daemon, const char *socket_path,
                               GError **error);
void vgicd_server_free (VgicdServer *server);

/* vgicd_server_describe_fds() - what becomes of the descriptors a peer
 * sends: "refused by the kernel (SO_PASSRIGHTS)" (vgicd-reaper.c), or
 * "read around, the peer closed (why)" */
const char *vgicd_server_describe_fds (VgicdServer *server);

/* vgicd_server_describe() - "socket-activated /run/vgicd/vgicd.sock" etc. */
const char *vgicd_server_describe (VgicdServer *server);

/**
 * vgicd_server_set_allowed() - the uids that may attach (replaces the list;
 * connections already attached stay)
 */
void vgicd_server_set_allowed (VgicdServer *server, const uid_t *uids, guint n);
