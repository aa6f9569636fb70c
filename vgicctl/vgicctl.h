/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicctl.h - what vgicctl's commands share: the exit statuses, the usage
 * error, flag parsing, and the commands defined outside vgicctl.c.
 */
#pragma once

#include <glib.h>

/* One exit status per kind of failure, for scripts (vgicctl(1)). */
enum {
  EXIT_OK = 0,
  EXIT_USAGE = 1,
  EXIT_DBUS = 2,	/* vgicd (or libvirt) unreachable, or a D-Bus error */
  EXIT_INPUT = 3,	/* bad input (a mode, a record, a domain) */
  EXIT_DENIED = 4,	/* permission denied */
};

/* usage_error() - report a mistake on the command line; exit status 1 */
int usage_error (const char *fmt, ...) G_GNUC_PRINTF (1, 2);

/* parse_flags() - accept only the flags in @known (NULL-terminated), noting
 * which were given in @seen, and at most @max_args positional arguments */
int parse_flags (const char *cmd, int argc, char **argv, const char *const *known,
                 gboolean *seen, int max_args, char **args);

/* vgicctl-libvirt.c: enable|disable DOMAIN */
int vgicctl_enable (int argc, char **argv);
int vgicctl_disable (int argc, char **argv);
