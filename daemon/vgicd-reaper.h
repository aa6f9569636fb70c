/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-reaper.h - the last close of every socket a peer could have put a
 * file descriptor in, made on a thread of its own (vgicd-reaper.c says
 * why: a peer chooses what that close does, and it may wait forever).
 */
#pragma once

#include <glib.h>

/**
 * vgicd_reaper_close() - close @fd on the reaper thread, defused first
 * @fd: a socket a peer wrote to, or a descriptor a peer sent (taken: the
 *	caller must not use it again)
 *
 * Returns at once.  Without the thread (it could not start) the socket is
 * defused and closed here, with a warning.
 */
void vgicd_reaper_close (int fd);

/**
 * vgicd_reaper_take_over() - the same, for a descriptor the caller cannot
 * give away (a GSocket's): the file behind @fd goes to the reaper, and @fd
 * is pointed at an inert socket, for its owner to close as usual
 * @fd: the descriptor (stays open)
 *
 * With no descriptor to spare (EMFILE) the socket is defused here, with a
 * warning, and the owner's close is the last.
 */
void vgicd_reaper_take_over (int fd);

/**
 * vgicd_reaper_steal() - move the file behind @fd to a new descriptor,
 * and point @fd at an inert socket, for its owner (a GSocket) to close
 * @fd: the descriptor (stays open)
 * Return: the new descriptor (close-on-exec), or -1 with errno, @fd
 *	unchanged
 */
int vgicd_reaper_steal (int fd);

/* vgicd_reaper_start() - start the thread now, while descriptors and
 * threads are to be had (the first use would otherwise) */
void vgicd_reaper_start (void);

/**
 * vgicd_recv_no_fds() - read what a peer sent, never past bytes that
 * carry descriptors: a peek with no room for any, then, when none came
 * with them, the same bytes for real (vgicd-reaper.c says why)
 * @fd: the peer's socket (non-blocking reads: MSG_DONTWAIT)
 * @buf: where the bytes go
 * @len: its size
 * @flags: more recv() flags for both (MSG_TRUNC on a packet socket)
 * @fds: (out): whether descriptors came; then @buf holds the bytes
 *	peeked, and they and the descriptors stay queued
 * Return: what recv() returns; -1 with EIO when the bytes taken are not
 *	the bytes peeked (another reader of @fd)
 */
gssize vgicd_recv_no_fds (int fd, void *buf, gsize len, int flags, gboolean *fds);

/**
 * vgicd_refuse_fds() - have the kernel refuse descriptors sent to @fd
 * (SO_PASSRIGHTS off, Linux 6.16 and later): a peer's sendmsg() with
 * SCM_RIGHTS then fails with EPERM, and nothing it sends ever reaches
 * vgicd to be read around or defused; a listening socket passes the
 * setting on to the connections queued after
 * @fd: a socket peers write to (a listening one, or vgicd's end of a pair)
 * @why: (out) (optional): when not, why, newly allocated
 *
 * Return: whether the kernel refuses them now.  FALSE on an older kernel
 * (ENOPROTOOPT), and where VGICD_TEST_ACCEPT_FDS is set in the
 * environment: tests of the older kernels' defence (the peek, the reaper)
 * on a newer one.  Either way the readers still peek first.
 */
gboolean vgicd_refuse_fds (int fd, char **why);

/* vgicd_reaper_pending() - descriptors waiting for the reaper: the door
 * charges them to the peers (vgicd-server.c) */
guint vgicd_reaper_pending (void);
