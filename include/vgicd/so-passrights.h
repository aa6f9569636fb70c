/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * so-passrights.h - SO_PASSRIGHTS (Linux 6.16: a socket that refuses the
 * descriptors a peer sends), for headers older than the kernel: vgicd
 * sets it on its sockets (vgicd-reaper.c), and the tests ask whether the
 * running kernel has it.
 *
 * The value is Linux 6.16's include/uapi/asm-generic/socket.h.  The
 * architectures vgicd runs on (arm64, and x86-64 for its tests) take
 * their socket options from there; alpha, mips, parisc and sparc number
 * them otherwise, and on those nothing is defined here (callers test
 * #ifdef SO_PASSRIGHTS).
 */
#pragma once

#include <sys/socket.h>

#if !defined(SO_PASSRIGHTS) && (defined(__aarch64__) || defined(__x86_64__))
#define SO_PASSRIGHTS 83
#endif
