/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-fds.h - how many more descriptors vgicd may open, counted cheaply:
 * what the door and the reaper check before taking more (vgicd-fds.c).
 */
#pragma once

#include <glib.h>

/**
 * vgicd_fds_free() - how many more descriptors this process may open under
 * its RLIMIT_NOFILE
 * @enough: the caller's question is whether that many are free
 *
 * Return: the exact number when fewer than @enough may be free; otherwise
 *	a number at least @enough (a lower bound, not counted); G_MAXUINT
 *	without a limit.
 */
guint vgicd_fds_free (guint enough);
