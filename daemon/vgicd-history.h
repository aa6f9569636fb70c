/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-history.h - what vgicd keeps of each save and load after the
 * session that ran it has gone: a bounded ring of operations per VM (by
 * UUID and the process that ran them), duration histograms per direction and path, and the host's
 * measured cost of one register per ioctl, from which the one-by-one
 * cost of a batched operation is estimated.
 *
 * A migration source's QEMU detaches the moment its migration completes,
 * which is the moment an operator wants its figures: ListSessions no
 * longer has them, the history does (Manager1.GetHistory, `vgicctl
 * history`).  Everything is in memory, bounded by History= and
 * HistoryVMs=, and starts empty when vgicd starts.
 */
#pragma once

#include <glib.h>

typedef struct _VgicdHistory VgicdHistory;

/* One finished operation.  The strings are static (protocol words). */
typedef struct {
  gint64 when_usec;		/* CLOCK_REALTIME, when it ended */
  const char *direction;	/* "save" or "load" */
  const char *path;		/* "batch", "single", or "-" (nothing ran) */
  const char *stream;		/* "record" or "fields" */
  const char *outcome;		/* VGICD_OUTCOME_* */
  guint64 duration_ns;		/* the call to done, as vgicd saw it */
  guint64 kernel_ns;		/* the executor's kernel calls */
  guint64 busy_ns;		/* vgicd's own time on it: planning, checking, the record */
  guint ioctls;
  guint calls;		/* the peer's calls vgicd answered: round trips */
  guint registers;		/* registers read (save) or written (load) */
  guint64 bytes;		/* the state record, when there is one */
  guint vcpus;
  /* What the same registers cost one per ioctl: measured (path single),
   * estimated from the host's measured cost per ioctl and vCPU, or 0:
   * unknown (no one-by-one operation measured on this host yet). */
  guint64 single_ns;
  gboolean single_estimated;
  const char *single_source;	/* estimated from: "calibration" or "operation" */
} VgicdOp;

#define VGICD_OUTCOME_OK "ok"
#define VGICD_OUTCOME_FAILED "failed"
#define VGICD_OUTCOME_REFUSED "refused"	/* nothing written: the record or VM did not fit */
#define VGICD_OUTCOME_DECLINED "declined"	/* mode off: QEMU took its own path */

/* The upper bounds of the duration histograms, in seconds (+Inf last). */
#define VGICD_HISTORY_N_BUCKETS 14
extern const double vgicd_history_buckets[VGICD_HISTORY_N_BUCKETS];

/* The durations of one direction's and path's successful operations. */
typedef struct {
  const char *direction;	/* "save", "load" */
  const char *path;		/* "batch", "single" */
  guint64 count, sum_ns;
  guint64 buckets[VGICD_HISTORY_N_BUCKETS];	/* per bound, not cumulative */
} VgicdHistogram;

#define VGICD_HISTORY_N_HISTOGRAMS 4	/* save, load x batch, single */

/**
 * vgicd_history_new() - keep @per_vm operations for each of at most
 * @max_vms VMs (@per_vm 0: keep none, but still count the histograms)
 */
VgicdHistory *vgicd_history_new (guint per_vm, guint max_vms);
void vgicd_history_free (VgicdHistory *h);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VgicdHistory, vgicd_history_free)

/* vgicd_history_resize() - new bounds (a reload); what no longer fits is
 * dropped, oldest first */
void vgicd_history_resize (VgicdHistory *h, guint per_vm, guint max_vms);

/**
 * vgicd_history_calibrated() - the host's cost of one register per ioctl
 * on a VM of n vCPUs, @base_ns + n × @per_vcpu_ns, measured at start
 * (vgicd-calibrate.h), for both directions
 */
void vgicd_history_calibrated (VgicdHistory *h, double base_ns, double per_vcpu_ns);

/**
 * vgicd_history_estimate() - fill @op->single_ns: @op's own kernel time on
 * the single path (from which the host's cost line for its direction is
 * learnt, or pinned when calibrated), else registers × that line's cost at
 * @op's vCPUs, marked estimated, else 0 (nothing measured yet)
 */
void vgicd_history_estimate (VgicdHistory *h, VgicdOp *op);

/**
 * vgicd_history_add() - record @op of the VM @uuid (named @name now), and
 * count it in its histogram when it succeeded
 * @message: what went wrong, for an operation that did not succeed (kept
 *	up to 256 bytes), else NULL
 */
void vgicd_history_add (VgicdHistory *h, const char *uuid, const char *name,
                        const VgicdOp *op, const char *message);

/**
 * vgicd_history_add_of() - vgicd_history_add() for an operation that the
 * process @pid ran: kept apart from the same UUID's operations of any
 * other process (a UUID is the peer's claim), under the name @name the
 * entry keeps; the process's history VMs are bounded by
 * vgicd_history_set_vms_per_process()
 */
void vgicd_history_add_of (VgicdHistory *h, const char *uuid, const char *name, gint64 pid,
                           const VgicdOp *op, const char *message);

/* vgicd_history_set_vms_per_process() - at most @per_process history VMs
 * per process (HistoryVMsPerProcess=): past it, the process's own least
 * recently active is dropped; what is over it now is dropped at once */
void vgicd_history_set_vms_per_process (VgicdHistory *h, guint per_process);

/**
 * vgicd_history_describe() - the operations kept, oldest first, as
 * Manager1.GetHistory returns them (aa{sv}, keys in
 * data/org.vgicd.Manager1.xml)
 * @vm: a VM's UUID (every process's operations under it) or the name an
 *	operation ran under; NULL or "" for every VM
 * @limit: at most this many, the newest (0: all)
 */
GVariant *vgicd_history_describe (VgicdHistory *h, const char *vm, guint limit);

/* vgicd_history_histogram() - the @i-th histogram, @i below
 * VGICD_HISTORY_N_HISTOGRAMS (its count is 0 until it counts an operation) */
const VgicdHistogram *vgicd_history_histogram (VgicdHistory *h, guint i);

/* vgicd_history_histograms() - aa{sv}: one per direction and path that has
 * counted anything: "direction" s, "path" s, "count" t, "sum-ns" t,
 * "le-seconds" ad, "buckets" at (cumulative, as Prometheus has them) */
GVariant *vgicd_history_histograms (VgicdHistory *h);

/* vgicd_history_single_cost() - the host's one-by-one cost of a register
 * on a VM of n vCPUs, *@base_ns + n × *@per_vcpu_ns, for "save" or "load";
 * FALSE when nothing has measured it yet.  @source: "calibration" or
 * "operation" (a one-by-one operation on this host pinned it) */
gboolean vgicd_history_single_cost (VgicdHistory *h, const char *direction, double *base_ns,
                                    double *per_vcpu_ns, const char **source);

/* A copy of one kept operation, that another thread may describe. */
typedef struct {
  VgicdOp op;			/* its strings are static */
  char *vm, *uuid, *message;	/* the VM's name then, its UUID; message or NULL */
  gint64 pid;			/* the process that ran it */
} VgicdHistoryCopy;

/**
 * vgicd_history_copy() - the operations vgicd_history_describe() would
 * describe, copied (no GVariant is built: the costly part is left to the
 * caller's thread, see vgicd-manager.c)
 * @h: the history; only the thread that adds to it may call this
 * @vm: as for vgicd_history_describe()
 * @limit: the newest this many (0: all)
 *
 * Return: a GPtrArray of VgicdHistoryCopy, oldest first, owning them.
 */
GPtrArray *vgicd_history_copy (VgicdHistory *h, const char *vm, guint limit);

/**
 * vgicd_history_copy_describe() - @copies as GetHistory shows them
 * Return: a floating aa{sv}.  Touches nothing but @copies: any thread.
 */
GVariant *vgicd_history_copy_describe (GPtrArray *copies);
