/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-client-private.h - what the parts of libvgicd share:
 *
 *   vgicd-client.c          the API: connect, attach, save, load; the calls
 *                           to vgicd, by D-Bus or through the step channel
 *   vgicd-client-steps.c    following vgicd's steps: copy, check, execute,
 *                           report
 *   vgicd-client-channel.c  the step channel's packets
 *   vgic-exec.c             the kernel calls
 */
#pragma once

#include <gio/gio.h>

#include "libvgicd.h"
#include "vgic-exec.h"
#include "vgicd-client-call.h"
#include "vgicd-client-channel.h"

struct _VgicdClient {
  GDBusConnection *connection;
  char *address;
  int timeout_ms;
  gboolean timeout_chosen;	/* the caller named it: the host's does not apply */
  gint64 wait_budget_us;	/* what a save or load may still wait for vgicd */

  int vgic_fd;
  gboolean kernel_batch;
  const char *kernel_batch_abi;	/* VGICD_BATCH_ABI_*, sent at attach */
  char *kernel_batch_probe;	/* vgic_batch_probe_describe(), sent at attach */
  char *session_path;
  char *mode;
  int window_fd;
  struct kvm_vgic_batch_entry *window;
  gsize window_size;
  guint32 window_entries;
  struct kvm_vgic_batch_entry *work;	/* the private copy of a step */
  gboolean load_window;		/* vgicd has Session1.LoadWindow */
  gboolean fields;		/* vgicd has Session1.SaveFields and LoadList */
  gboolean record;		/* vgicd wants this VM's saves to carry a record */
  GArray *collect;		/* a SaveFields: every read run so far (VgicEntry) */
  VgicdClientChannel *channel;	/* the step channel, or NULL */

  VgicdClientStats stats;
};


/* What an operation's "done" carries. */
typedef enum {
  VGICD_RUN_SAVE,	/* a record */
  VGICD_RUN_SAVE_FIELDS,	/* nothing: the reads were collected in c->collect */
  VGICD_RUN_LOAD,	/* nothing */
} VgicdRunKind;

/**
 * vgicd_client_run() - follow vgicd's steps from @first (taken) until done,
 * declined or fail
 * @record: (out): a save's record (VGICD_RUN_SAVE only)
 */
gboolean vgicd_client_run (VgicdClient *c, GVariant *first, VgicdRunKind kind,
                           GBytes **record, GError **error);
