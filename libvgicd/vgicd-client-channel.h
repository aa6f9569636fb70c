/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-client-channel.h - libvgicd's end of the step channel
 * (include/vgicd/protocol.h): a call is one packet out and one back,
 * bounded by a timeout, on the caller's thread.
 *
 * Waits are bounded two ways.  A caller that passes @budget_us (libvgicd's
 * save and load do) gives the time left to wait for vgicd over a whole
 * operation: each wait is bounded by it, and what was spent waiting is
 * taken off.  So a vgicd that answers each step just before a per-call
 * timeout cannot stretch a save to steps x timeout; the caller's own work
 * between waits (the kernel's) is not counted.  Without it (NULL), a wait
 * is bounded by the channel's timeout.
 *
 * A call that fails part-way (a send error, a closed socket, the timeout)
 * loses the channel for good: an answer could still arrive and be taken
 * for the next call's.  The channel is then closed and says so
 * (vgicd_client_channel_lost()); the session must be attached again.
 */
#pragma once

#include <glib.h>

#include "vgicd-client-call.h"
#include "vgicd/protocol.h"

typedef struct _VgicdClientChannel VgicdClientChannel;

/* vgicd_client_channel_new() - take @fd; every call waits at most @timeout_ms */
VgicdClientChannel *vgicd_client_channel_new (int fd, int timeout_ms);

/* vgicd_client_channel_free() - take an answer still due, close (NULL is fine) */
void vgicd_client_channel_free (VgicdClientChannel *ch);

/* vgicd_client_channel_lost() - did a call fail part-way? */
gboolean vgicd_client_channel_lost (VgicdClientChannel *ch);

/* vgicd_client_channel_carries() - has @method a packet?  All but Load do:
 * a record does not fit one, so it goes by the window (LoadWindow). */
gboolean vgicd_client_channel_carries (VgicdCall method);

/**
 * vgicd_client_channel_call() - call @method (one the channel carries) with
 * @args (floating, or NULL for "()") and wait for its step
 * @error: VGICD_CLIENT_ERROR_UNREACHABLE when the channel is lost,
 *	VGICD_CLIENT_ERROR_INVALID for arguments too large for a packet
 * Return: the step (a{sv}), or NULL with @error set.
 */
GVariant *vgicd_client_channel_call (VgicdClientChannel *ch, VgicdCall method, GVariant *args,
                                     gint64 *budget_us, GError **error);

/**
 * vgicd_client_channel_call_deferred() - send a call whose answer the
 * caller knows already (the last Next of a load whose writes all
 * succeeded: it can only be done); the answer is taken before the next
 * call, or at free (which waits at most the channel's timeout)
 */
gboolean vgicd_client_channel_call_deferred (VgicdClientChannel *ch, VgicdCall method,
                                             GVariant *args, gint64 *budget_us,
                                             GError **error);

/**
 * vgicd_client_channel_settle() - take the deferred answer, if one is due,
 * so that it is not taken for the next call's
 * Return: FALSE with @error set when the channel was lost taking it.
 */
gboolean vgicd_client_channel_settle (VgicdClientChannel *ch, gint64 *budget_us,
                                      GError **error);
