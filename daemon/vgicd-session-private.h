/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-session-private.h - what the parts of a session share, and nothing
 * outside daemon/vgicd-session*.c, vgicd-steps.c and vgicd-log.c sees:
 *
 *   vgicd-session.c       life cycle: Attach's arguments, the window, the
 *                         registration with the daemon, ListSessions' view
 *   vgicd-steps.c         the state machine: Save, SaveFields, Load,
 *                         LoadWindow, LoadList, Next
 *   vgicd-session-dbus.c  org.vgicd.Session1 on the peer's connection
 *   vgicd-session-channel.c  the step channel: the same calls, one packet
 *                         each (the packets themselves: vgicd-channel.c)
 *   vgicd-log.c           the journal records of a session
 *
 * Both transports call the state machine through the six vgicd_steps_*()
 * entry points below, one per Session1 method; it never sees a D-Bus
 * message or a packet.
 */
#pragma once

#include "vgic-plan.h"
#include "vgic-record.h"
#include "vgicd-channel.h"
#include "vgicd-dbus.h"
#include "vgicd-history.h"
#include "vgicd-session.h"
#include "vgicd-window.h"

typedef enum {
  OP_NONE,
  OP_SAVE_FIRST,	/* round 1 and the guessed round 2 */
  OP_SAVE_SECOND,	/* round 2, when the guess was wrong */
  OP_LOAD_CHECK,	/* the TYPER reads (a peer without guards) */
  OP_LOAD_WRITE,	/* the writes, after the guards if the peer has them */
} Op;

/* The figures of a session's last save or load, for ListSessions. */
typedef struct {
  guint64 ns;		/* executor time, summed over steps */
  guint ioctls;
  const char *via;
  const char *stream;	/* VGICD_STREAM_FIELDS or _RECORD */
  guint64 count;
} OpStats;

/* What a save or load moved: QEMU's own GIC fields, or a state record. */
#define VGICD_STREAM_FIELDS "fields"
#define VGICD_STREAM_RECORD "record"

struct _VgicdSession {
  VgicdDaemon *daemon;
  GDBusConnection *connection;
  VgicdDbusSession1 *skeleton;
  char *path;
  uid_t uid;
  pid_t pid;

  char *name;
  char *uuid;
  VgicdMode vm_mode;		/* the VM's own restriction (vgicd-vms.h), at attach */
  char *vm_mode_source;		/* where it comes from */
  gboolean vm_record;		/* its saves should carry a record (host's, vms.conf) */
  VgicShape *shape;
  gboolean kernel_batch;
  char *kernel_batch_abi;	/* VGICD_BATCH_ABI_* as the executor found it */
  char *kernel_batch_probe;	/* ... and in its words (may be empty) */
  gboolean peer_guards;		/* the peer checks guards before writes */
  gboolean peer_record_window;	/* the peer takes a saved record from the window */
  gboolean peer_channel;	/* the peer calls through a step channel */
  VgicdChannel *channel;	/* vgicd's end of it, or NULL */
  int peer_channel_fd;		/* the peer's end, until Attach passes it on */
  VgicdWindow *window;
  gint64 attached_usec;

  /* The operation in progress (vgicd-steps.c). */
  Op op;
  VgicList *step;	/* what was laid into the window, kept private */
  gboolean step_write;
  const char *step_via;
  VgicList *guess;	/* save: the guessed round 2 after round 1 */
  VgicList *last_second;	/* round 2 as this VM's last save or load found it */
  gboolean shape_known;		/* known_*: the shape its last save or load found */
  gboolean known_plpis;
  guint known_apr;
  VgicList *first_plan;	/* round 1 of a save: the shape's, planned at attach */
  VgicList *routes_plan;	/* the routes QEMU misses: read after round 1 for a record */
  guint round1_len;	/* save: round 1's reads in this save, the routes included */
  VgicList *reads;	/* save: everything read so far */
  VgicRecord *record;	/* load: the validated record */
  gsize record_len;
  VgicValues *list_state;	/* load: what the restore needs of the values of QEMU's
				 * list: vCPU 0's GICR_TYPER, each ICC_CTLR_EL1 */
  VgicList *list_plan;	/* load: that list, checked: the plan, to lay out as it is */
  const VgicValues *state;	/* load: the values the restore is judged and planned
				 * by: the record's, or list_state */
  gboolean op_fields;	/* the stream carries QEMU's fields: SaveFields, LoadList */
  gint64 op_start;
  guint op_ioctls;
  guint op_calls;	/* the peer's calls vgicd answered for the operation */
  guint64 op_ns;
  gboolean op_fallback;
  gint64 op_busy;	/* µs vgicd spent on the operation, up to busy_stop() */
  gint64 handler_start;	/* when the handler running now started; 0: its time
                           is in op_busy, or no handler runs */
  /* The journal record of the outcome just answered, written once the
   * answer is out (vgicd-steps.c, op_outcome()). */
  VgicdOp logged_op;
  GLogLevelFlags logged_level;
  char *logged_line;	/* NULL: none due */
  guint after_source;

  OpStats save, load;
};

/* ------------------------------------------------------------------ */
/* vgicd-steps.c: the state machine                                   */
/* ------------------------------------------------------------------ */

/*
 * Each returns the step that answers the call (a floating a{sv}, keys in
 * include/vgicd/protocol.h), whichever transport the call came by.
 */
GVariant *vgicd_steps_save (VgicdSession *s);
GVariant *vgicd_steps_load (VgicdSession *s, const guint8 *record, gsize len);
GVariant *vgicd_steps_load_window (VgicdSession *s, guint32 size);
GVariant *vgicd_steps_save_fields (VgicdSession *s);
GVariant *vgicd_steps_load_list (VgicdSession *s, guint32 count);
GVariant *vgicd_steps_next (VgicdSession *s, GVariant *report);

/* vgicd_steps_reset() - drop the operation in progress, if any */
void vgicd_steps_reset (VgicdSession *s);

/* vgicd_steps_abandon() - the peer went away in the middle of an
 * operation: count it as failed, log it and keep it in the VM's history */
void vgicd_steps_abandon (VgicdSession *s);

/* vgicd_steps_flush() - write the journal record of the last outcome now,
 * if it is still due (before the session's next record, or its end) */
void vgicd_steps_flush (VgicdSession *s);

/* vgicd_steps_operation() - "save" or "load" while one is in progress, else NULL */
const char *vgicd_steps_operation (VgicdSession *s);

/* vgicd_session_mode() - the mode this VM's operations run in: the
 * stricter of the host's (which may change while it is attached) and the
 * VM's own */
VgicdMode vgicd_session_mode (VgicdSession *s);

/* ------------------------------------------------------------------ */
/* vgicd-session-dbus.c: org.vgicd.Session1                           */
/* ------------------------------------------------------------------ */

/* vgicd_session_dbus_export() - serve Session1 at s->path on s->connection */
gboolean vgicd_session_dbus_export (VgicdSession *s, GError **error);
void vgicd_session_dbus_unexport (VgicdSession *s);

/* ------------------------------------------------------------------ */
/* vgicd-session-channel.c: the step channel                          */
/* ------------------------------------------------------------------ */

/* vgicd_session_channel_open() - make the step channel the peer asked
 * for, served on vgicd's main context; its end waits in
 * s->peer_channel_fd for Attach to pass it on */
gboolean vgicd_session_channel_open (VgicdSession *s, GError **error);

/* vgicd_session_channel_close() - close vgicd's end, and the peer's if
 * Attach never took it */
void vgicd_session_channel_close (VgicdSession *s);

/* ------------------------------------------------------------------ */
/* vgicd-log.c: the journal                                           */
/* ------------------------------------------------------------------ */

/**
 * vgicd_session_log_op() - one structured record of an operation's outcome:
 * the VM, the operation and its figures as VGICD_* fields, and @message
 * ("VM name: message") for a person
 */
void vgicd_session_log_op (VgicdSession *s, GLogLevelFlags level, const char *operation,
                           const char *message);

/**
 * vgicd_session_log_outcome() - the journal record of a save's or a load's
 * outcome: vgicd_session_log_op()'s fields, and MESSAGE_ID (one per kind of
 * outcome, data/vgicd.catalog), VGICD_OUTCOME, VGICD_REGISTERS, VGICD_BYTES
 * and VGICD_SINGLE_NS (with VGICD_SINGLE_ESTIMATED) from @op
 */
void vgicd_session_log_outcome (VgicdSession *s, GLogLevelFlags level, const VgicdOp *op,
                                const char *message);

/**
 * vgicd_session_log() - a record about the VM that is not an outcome (a
 * fallback, a second round): VGICD_VM, and @field = @value when @field is
 * not NULL
 */
void vgicd_session_log (VgicdSession *s, GLogLevelFlags level, const char *field,
                        const char *value, const char *format, ...) G_GNUC_PRINTF (5, 6);
