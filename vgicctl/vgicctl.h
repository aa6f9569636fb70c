/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicctl.h - what vgicctl's commands share: the exit statuses, the usage
 * error, the options every command takes, and the commands defined outside
 * vgicctl.c.
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

/* --json's format: none asked for, one line (the default), or indented. */
typedef enum {
  VGICCTL_JSON_NONE,
  VGICCTL_JSON_SHORT,
  VGICCTL_JSON_PRETTY,
} VgicctlJson;

/* One command as invoked: its positional arguments (after the options,
 * which GOptionContext took out) and the options every command has.  A
 * command's own options are in static variables beside it, which its
 * GOptionEntry table points at. */
typedef struct {
  const char *name;
  char **args;		/* NULL-terminated, never NULL */
  guint n_args;
  VgicctlJson json;
  gboolean quiet;	/* -q: no informative output, only answers and errors */
} VgicctlCall;

/* usage_error() - report a mistake on the command line, with the usage of
 * the command being run (or vgicctl's whole usage before there is one);
 * returns EXIT_USAGE */
int usage_error (const char *fmt, ...) G_GNUC_PRINTF (1, 2);

/* vgicctl-libvirt.c: enable|disable DOMAIN, and their own options */
extern const GOptionEntry vgicctl_enable_options[];
extern const GOptionEntry vgicctl_disable_options[];
int vgicctl_enable (const VgicctlCall *call);
int vgicctl_disable (const VgicctlCall *call);
