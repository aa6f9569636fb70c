/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * protocol.h - the wire protocol between libvgicd (inside QEMU) and vgicd:
 * its version, the object paths and interfaces, every key and value of the
 * a{sv} dictionaries both ends build and read, the step channel's packets,
 * and the limits.  Both ends include it; docs/protocol.md explains it, and
 * data/org.vgicd.Helper1.xml defines the D-Bus methods themselves.
 *
 * Theory of operation
 *
 * libvgicd calls Helper1.Attach once, with the VM's shape (VGICD_VM_*), and
 * gets a session object, the shared window and an info dictionary
 * (VGICD_INFO_*).  Each Session1 method (Save, SaveFields, Load,
 * LoadWindow, LoadList, Next) answers with a step (VGICD_STEP_*): run this
 * many window entries (VGICD_ACTION_READ/WRITE), or stop (DONE, DECLINED,
 * FAIL).  After running a step, libvgicd calls Next with a report
 * (VGICD_REPORT_*).  A peer that asks for it (VGICD_FEATURE_CHANNEL) makes
 * every call but Load (a record does not fit a packet) through the step
 * channel instead of D-Bus: one packet each way, carrying the same
 * GVariants.
 *
 * Both ends treat a key they do not know as absent, and a feature they do
 * not know as not offered: that is how the protocol grows.  A change that
 * an older peer would misread raises VGICD_PROTOCOL_VERSION.
 */
#pragma once

#include <stdint.h>

/* The protocol this header describes; vgicd sends it as VGICD_INFO_PROTOCOL. */
#define VGICD_PROTOCOL_VERSION 2

/* ------------------------------------------------------------------ */
/* Objects                                                            */
/* ------------------------------------------------------------------ */

#define VGICD_HELPER_PATH "/org/vgicd/Helper1"
#define VGICD_HELPER_IFACE "org.vgicd.Helper1"
#define VGICD_SESSION_IFACE "org.vgicd.Session1"
/* Sessions are VGICD_SESSION_PATH_PREFIX + a number, unique in vgicd's life. */
#define VGICD_SESSION_PATH_PREFIX "/org/vgicd/Session1/"

/* D-Bus errors vgicd returns from Attach (besides the standard ones:
 * org.freedesktop.DBus.Error.AccessDenied for a peer not on AllowUsers,
 * org.freedesktop.DBus.Error.InvalidArgs for a VM that cannot be). */
#define VGICD_DBUS_ERROR_ALREADY_ATTACHED "org.vgicd.Error.AlreadyAttached"
/* MaxSessions= or MaxSessionsPerUser= reached: save by your own path. */
#define VGICD_DBUS_ERROR_LIMIT "org.vgicd.Error.Limit"

/* ------------------------------------------------------------------ */
/* Helper1.Attach (a{sv} vm) -> (o session, h window, a{sv} info)     */
/* ------------------------------------------------------------------ */

#define VGICD_VM_NAME "name"		/* s: for logs and vgicctl */
#define VGICD_VM_NAME_MAX 256		/* bytes, printable: else refused */
#define VGICD_VM_UUID "uuid"		/* s: may be empty, else hex and '-' */
#define VGICD_VM_NR_IRQS "nr-irqs"	/* u: including the 32 private ones */
#define VGICD_VM_MPIDRS "mpidrs"	/* au: per vCPU, Aff3.Aff2.Aff1.Aff0 */
#define VGICD_VM_KERNEL_BATCH "kernel-batch"	/* b: the executor's probe */
#define VGICD_VM_KERNEL_BATCH_ABI "kernel-batch-abi"	/* s: one of VGICD_BATCH_ABI_* */
#define VGICD_VM_KERNEL_BATCH_PROBE "kernel-batch-probe"	/* s: what it found, in words */
#define VGICD_BATCH_ABI_OURS "ours"		/* this project's batch group */
#define VGICD_BATCH_ABI_ABSENT "absent"		/* no group 10 */
#define VGICD_BATCH_ABI_FOREIGN "foreign"	/* a group 10 of another layout */
#define VGICD_BATCH_ABI_UNKNOWN "unknown"	/* the probe failed */
#define VGICD_VM_KERNEL_BATCH_PROBE_MAX 512	/* bytes, longer is refused */
#define VGICD_VM_FEATURES "features"	/* as: VGICD_FEATURE_* the peer has */

/* What a peer can do (VGICD_VM_FEATURES). */
#define VGICD_FEATURE_GUARDS "guards"		/* checks a write step's guards */
#define VGICD_FEATURE_RECORD_WINDOW "record-window"	/* takes a record from the window */
#define VGICD_FEATURE_CHANNEL "channel"	/* calls through a step channel */

#define VGICD_INFO_WINDOW_ENTRIES "window-entries"	/* u: the window's capacity */
#define VGICD_INFO_MODE "mode"		/* s: the host's mode at attach */
#define VGICD_INFO_PROTOCOL "protocol"	/* u: VGICD_PROTOCOL_VERSION */
#define VGICD_INFO_VERSION "version"	/* s: vgicd's version */
#define VGICD_INFO_FEATURES "features"	/* as: VGICD_FEATURE_LOAD_WINDOW */
#define VGICD_INFO_CHANNEL "channel"	/* h: the step channel, when asked for */
#define VGICD_INFO_TIMEOUT "timeout-ms"	/* u: the host's bound on each later call */
#define VGICD_INFO_RECORD "record"	/* b: this VM's saves should carry a record */
#define VGICD_INFO_RECORD_MAX "record-max"	/* u: the longest record any VM here has */

/* What vgicd can do (VGICD_INFO_FEATURES). */
#define VGICD_FEATURE_LOAD_WINDOW "load-window"	/* Session1.LoadWindow exists */
#define VGICD_FEATURE_FIELDS "fields"	/* Session1.SaveFields and LoadList exist */

/* ------------------------------------------------------------------ */
/* Steps: the answer of every Session1 method                         */
/* ------------------------------------------------------------------ */

#define VGICD_STEP_ACTION "action"	/* s: VGICD_ACTION_* */
#define VGICD_STEP_COUNT "count"	/* u: entries to run (read, write) */
#define VGICD_STEP_VIA "via"		/* s: VGICD_VIA_* */
#define VGICD_STEP_LAST "last"		/* b: a restore's last step */
#define VGICD_STEP_GUARD "guard"	/* u: guard reads ahead of the writes */
#define VGICD_STEP_GUARD_RANGES "guard-ranges"	/* a(ttt): mask, min, max per guard */
#define VGICD_STEP_LAST_IF "last-if"	/* a(tttt): index, mask, min, max: a read step
					 * that is a SaveFields' last when each holds */
#define VGICD_STEP_RECORD "record"	/* ay: a save's record (done) */
#define VGICD_STEP_RECORD_SIZE "record-size"	/* u: its size, in the window */
#define VGICD_STEP_FIELDS "fields"	/* u: registers a SaveFields read (done) */
#define VGICD_STEP_REASON "reason"	/* s: VGICD_REASON_* (fail) */
#define VGICD_STEP_MESSAGE "message"	/* s: for a person (fail) */

#define VGICD_ACTION_READ "read"
#define VGICD_ACTION_WRITE "write"
#define VGICD_ACTION_DONE "done"
#define VGICD_ACTION_DECLINED "declined"	/* mode off: use QEMU's own path */
#define VGICD_ACTION_FAIL "fail"

#define VGICD_VIA_BATCH "batch"		/* the kernel's batch group */
#define VGICD_VIA_SINGLE "single"	/* one ioctl per entry */

#define VGICD_REASON_REFUSED "refused"	/* nothing was touched */
#define VGICD_REASON_DEVICE "device"	/* a kernel call failed */
#define VGICD_REASON_INTERNAL "internal"	/* anything else */

/* ------------------------------------------------------------------ */
/* Session1.Next (a{sv} report)                                       */
/* ------------------------------------------------------------------ */

#define VGICD_REPORT_DONE "done"	/* u: entries completed (writes, after guards) */
#define VGICD_REPORT_ERROR "error"	/* i: 0, or -errno of the failing entry */
#define VGICD_REPORT_ERROR_INDEX "error-index"	/* u: its window position */
#define VGICD_REPORT_GUARD_FAILED "guard-failed"	/* u: the first guard that did not hold */
#define VGICD_REPORT_IOCTLS "ioctls"	/* u: device ioctls issued */
#define VGICD_REPORT_NS "ns"		/* t: time spent in them */
#define VGICD_REPORT_VIA "via"		/* s: the path taken (VGICD_VIA_*) */

/* ------------------------------------------------------------------ */
/* The step channel                                                   */
/* ------------------------------------------------------------------ */

/*
 * A SOCK_SEQPACKET socket that vgicd makes at Attach for a peer with
 * VGICD_FEATURE_CHANNEL and VGICD_FEATURE_RECORD_WINDOW (a record does not
 * fit a packet, so it travels in the window).  One packet each way per call:
 *
 *   request: VgicdChannelHeader, then the method's arguments as a
 *            serialised GVariant: "()", "(u)" or "(a{sv})"
 *   answer:  the step as a serialised "(a{sv})" GVariant
 */

/* The largest packet either way. */
#define VGICD_CHANNEL_MAX 65536

typedef enum {
  VGICD_CHANNEL_SAVE = 1,	/* "()" */
  VGICD_CHANNEL_LOAD_WINDOW = 2,	/* "(u)" */
  VGICD_CHANNEL_NEXT = 3,	/* "(a{sv})" */
  VGICD_CHANNEL_SAVE_FIELDS = 4,	/* "()" */
  VGICD_CHANNEL_LOAD_LIST = 5,	/* "(u)" */
} VgicdChannelMethod;

/* Eight bytes, so that the GVariant after it is 8-aligned. */
typedef struct {
  uint32_t method;	/* VgicdChannelMethod, host byte order */
  uint32_t reserved;	/* 0 */
} VgicdChannelHeader;

/* The GVariant type of a method's arguments, or NULL for no such method. */
static inline const char *
vgicd_channel_args_type (uint32_t method)
{
  switch (method)
    {
    case VGICD_CHANNEL_SAVE: return "()";
    case VGICD_CHANNEL_LOAD_WINDOW: return "(u)";
    case VGICD_CHANNEL_NEXT: return "(a{sv})";
    case VGICD_CHANNEL_SAVE_FIELDS: return "()";
    case VGICD_CHANNEL_LOAD_LIST: return "(u)";
    default: return NULL;
    }
}

/* The type of every answer. */
#define VGICD_CHANNEL_ANSWER_TYPE "(a{sv})"
