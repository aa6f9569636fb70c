/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-relay.h - vgicd's own reader of a peer's D-Bus byte stream, between
 * the peer's socket and GDBus (the theory is in vgicd-relay.c).
 */
#pragma once

#include <gio/gio.h>
#include <sys/types.h>

#include "vgicd-daemon.h"

typedef struct _VgicdRelay VgicdRelay;

/**
 * vgicd_relay_message_max() - the longest D-Bus message a peer may send
 * @max_vcpus: MaxVcpus=, the largest VM vgicd attaches
 *
 * Return: in bytes: twice the largest state record a VM of @max_vcpus
 * vCPUs and the most IRQs KVM allows can have (Session1.Load carries one
 * as `ay`, the largest message of the protocol), and at least
 * VGICD_RELAY_MESSAGE_MIN.
 */
#define VGICD_RELAY_MESSAGE_MIN (1024 * 1024)
gsize vgicd_relay_message_max (guint max_vcpus);

/**
 * vgicd_relay_record_max() - the longest state record a VM of @max_vcpus
 * vCPUs and the most IRQs KVM allows can have: half the message bound
 * above it, and what a peer is told (Attach's record-max), so that it
 * refuses a longer one itself instead of sending a message vgicd closes
 * it for
 */
gsize vgicd_relay_record_max (guint max_vcpus);

/**
 * vgicd_relay_new() - put a relay between a peer's socket and GDBus
 * @peer_fd: the accepted socket, taken (closed by the relay, also on error)
 * @uid: the peer's uid as SO_PEERCRED says (what EXTERNAL must claim)
 * @pid: the peer's pid, for the log
 * @guid: what the relay answers OK with (the server's GUID)
 * @message_max: a peer declaring a longer message is closed
 * @daemon: where the peers closed for what they sent are counted (any thread)
 * @error: set when the relay cannot start (no descriptors, no thread)
 *
 * The relay authenticates the peer itself, then relays the messages.  The
 * stream it returns is GDBus's end (a GUnixConnection, so that vgicd can
 * still send descriptors): run g_dbus_connection_new() on it as the
 * server; its handshake ends when the peer's does.  Closing the stream
 * closes the peer, and the peer closing closes the stream.
 *
 * Return: GDBus's end, holding a reference to the relay
 * (vgicd_relay_of_stream()).
 */
GIOStream *vgicd_relay_new (int peer_fd, uid_t uid, pid_t pid, const char *guid,
                            gsize message_max, VgicdDaemon *daemon, GError **error);

/* vgicd_relay_of_stream() - the relay behind @stream, or NULL (not a ref) */
VgicdRelay *vgicd_relay_of_stream (GIOStream *stream);

VgicdRelay *vgicd_relay_ref (VgicdRelay *relay);
void vgicd_relay_unref (VgicdRelay *relay);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VgicdRelay, vgicd_relay_unref)

/**
 * vgicd_relay_unread() - bytes vgicd has sent towards the peer that the peer
 * has not read: the relay's queue and the peer socket's (SIOCOUTQ); any
 * thread
 */
gsize vgicd_relay_unread (VgicdRelay *relay);

/**
 * vgicd_relay_dup_failure() - why the relay closed the peer, or NULL
 * @logged: set to whether the relay logged it already (what the peer sent
 *	after its handshake) or leaves it to the caller (a failed handshake)
 */
char *vgicd_relay_dup_failure (VgicdRelay *relay, gboolean *logged);

/**
 * vgicd_relay_claim_failure() - close the peer for @why, if no one has: the
 * relay (for what the peer sent), the bus filter (for its calls) and the
 * door (for not attaching) each close a peer, and a peer is logged and
 * counted as closed once; any thread
 *
 * Return: TRUE when @why is the first reason, and so the caller logs and
 *	counts the peer; FALSE when another did already.
 */
gboolean vgicd_relay_claim_failure (VgicdRelay *relay, const char *why);

/**
 * vgicd_relay_is_closed() - whether the peer is gone: its socket closed
 * (by vgicd or by the peer), or a reason to close it claimed; any thread
 *
 * GDBus says "closed" later, on the main loop (seconds later on a busy
 * host), and its connection holds its descriptors until then; but from
 * this point the peer sees no connection, and the door counts none.
 */
gboolean vgicd_relay_is_closed (VgicdRelay *relay);
