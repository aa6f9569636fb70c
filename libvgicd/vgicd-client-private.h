/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-client-private.h - what the parts of libvgicd share:
 *
 *   vgicd-client.c          the API: connect, attach, save, load
 *   vgicd-client-dial.c     the socket, with a wait for room in its backlog
 *   vgicd-regs.c            what a save into QEMU's fields read (VgicdRegs)
 *   vgicd-client-steps.c    following vgicd's steps: copy, check, execute,
 *                           report
 *   vgicd-client-call.c     which transport carries a call to vgicd
 *   vgicd-client-dbus.c     a call by D-Bus
 *   vgicd-client-channel.c  a call through the step channel: its packets
 *   vgicd-client-error.c    the error domain
 *   vgic-exec.c             the kernel calls
 *
 * Each calls only those below it in this list (the step loop and the API
 * make their calls through vgicd_client_call()).
 */
#pragma once

#include <gio/gio.h>

#include "libvgicd.h"
#include "vgic-exec.h"
#include "vgicd-client-call.h"
#include "vgicd-client-channel.h"

struct _VgicdClient {
  GDBusConnection *connection;
  /* The context the connection was made in: GDBus sends it the
   * connection's last events (its "closed" signal holds a reference to
   * the connection, which holds one to the context), so it is drained at
   * free, or each client would leave both behind, and the context's
   * eventfd with them. */
  GMainContext *ctx;
  char *address;
  int timeout_ms;
  gboolean timeout_chosen;	/* the caller named it: the host's does not apply */
  gint64 wait_budget_us;	/* what a save or load may still wait for vgicd */

  int vgic_fd;
  gboolean kernel_batch;	/* the group may be driven if vgicd says so */
  const char *kernel_batch_abi;	/* VGICD_BATCH_ABI_*, sent at attach */
  char *kernel_batch_probe;	/* vgic_batch_probe()'s words, sent at attach */
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
  guint32 record_max;		/* the longest record vgicd takes (0: not said) */
  GArray *collect;		/* a SaveFields: every read run so far (VgicEntry) */
  guint collect_steps;		/* ... from how many steps */
  struct _VgicdRegsStore *regs_store;	/* a SaveFields' storage, made at attach */
  VgicdClientChannel *channel;	/* the step channel, or NULL */

  VgicdClientStats stats;
};


/* ------------------------------------------------------------------ */
/* vgicd-client-dial.c: the socket, connected with a wait for room     */
/* ------------------------------------------------------------------ */

/* vgicd_client_unix_path() - the path of @address when it names exactly
 * one unix path ("unix:path=...", unescaped), else NULL (GDBus's). */
char *vgicd_client_unix_path (const char *address);

/**
 * vgicd_client_dial() - connect to the unix socket at @path, waiting until
 * @deadline_us (g_get_monotonic_time()) for room in its backlog
 * Return: the connection (a GUnixConnection), or NULL with @error set:
 *	G_IO_ERROR_TIMED_OUT when the backlog stayed full, else as the
 *	errno said (NOT_FOUND, CONNECTION_REFUSED: nothing there).
 */
GIOStream *vgicd_client_dial (const char *path, gint64 deadline_us, GError **error);

/* ------------------------------------------------------------------ */
/* vgicd-client-dbus.c: Session1 by D-Bus                             */
/* ------------------------------------------------------------------ */

/**
 * vgicd_client_dbus_call() - one Session1 call by D-Bus, bounded by what is
 * left of c->wait_budget_us (and taking off what it waited)
 * @args: floating, or NULL; consumed either way
 * Return: the step, or NULL with @error set.
 */
GVariant *vgicd_client_dbus_call (VgicdClient *c, VgicdCall method, GVariant *args,
                                  GError **error);

/* vgicd_client_dbus_error() - @call_error, a failed D-Bus call to vgicd,
 * in the caller's terms: DENIED, INVALID or UNREACHABLE, "vgicd @what: ..." */
void vgicd_client_dbus_error (GError **error, GError *call_error, const char *what);

/* ------------------------------------------------------------------ */
/* vgicd-client-steps.c: following vgicd's steps                      */
/* ------------------------------------------------------------------ */

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

/* ------------------------------------------------------------------ */
/* vgicd-regs.c: what a save into QEMU's fields read                  */
/* ------------------------------------------------------------------ */

/* The storage of a save's reads and of their index, lent to its VgicdRegs
 * by reference. */
typedef struct _VgicdRegsStore VgicdRegsStore;

/* vgicd_regs_store_new() - storage for saves of up to @entries reads (more
 * grow it), every page of it touched now */
VgicdRegsStore *vgicd_regs_store_new (guint32 entries);
void vgicd_regs_store_unref (VgicdRegsStore *store);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VgicdRegsStore, vgicd_regs_store_unref)

/**
 * vgicd_regs_store_for_save() - where a save's reads go: @store, emptied,
 * unless a VgicdRegs still holds it; else fresh storage for about @entries
 * @store: (nullable): the client's
 * Return: a new reference.
 */
VgicdRegsStore *vgicd_regs_store_for_save (VgicdRegsStore *store, guint32 entries);

/* vgicd_regs_store_reads() - @store's array of reads (VgicEntry), to
 * collect a save's reads into (c->collect) */
GArray *vgicd_regs_store_reads (VgicdRegsStore *store);

/**
 * vgicd_regs_new() - what the save whose reads @store holds read
 * @store: (transfer full)
 * @steps: how many steps' reads it holds (c->collect_steps)
 */
VgicdRegs *vgicd_regs_new (VgicdRegsStore *store, guint steps);
