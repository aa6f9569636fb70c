/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-channel.h - vgicd's end of a step channel: a SOCK_SEQPACKET pair
 * that carries a session's Save, SaveFields, LoadWindow, LoadList and Next
 * without D-Bus (include/vgicd/protocol.h).  It knows packets, not
 * sessions: each call is handed to a function (vgicd-session-channel.c's),
 * and what it returns is sent back.
 */
#pragma once

#include <gio/gio.h>

#include "vgicd/protocol.h"

typedef struct _VgicdChannel VgicdChannel;

/**
 * VgicdChannelCall - answer one call
 * @data: vgicd_channel_new()'s @data
 * @method: which
 * @args: its arguments, of vgicd_channel_args_type (@method)
 * Return: the step (an a{sv}, floating).
 */
typedef GVariant *(*VgicdChannelCall) (gpointer data, VgicdChannelMethod method,
                                       GVariant *args);

/**
 * vgicd_channel_new() - make a channel served on the thread-default main
 * context
 * @call: what answers each call
 * @data: its argument
 * @name: whose it is, for the log (kept, not copied: it must outlive the
 *	channel)
 * @peer_fd: (out): the peer's end, for the caller to pass on and close
 * @error: set when no socket pair can be made
 */
VgicdChannel *vgicd_channel_new (VgicdChannelCall call, gpointer data, const char *name,
                                 int *peer_fd, GError **error);

/* vgicd_channel_free() - close vgicd's end (NULL is fine) */
void vgicd_channel_free (VgicdChannel *channel);
