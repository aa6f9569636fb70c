/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-sim.h - vgic-sim, the project's test double for the KVM vGICv3
 * device: a user-space model of its device-attr interface (Linux 6.1 uaccess
 * semantics, error codes and locking cost, plus the batch group of
 * docs/kernel-interface.md), reached through real ioctl(2) calls on a real fd.
 *
 * A sim is a memfd holding the whole model (registers, locks, counters).
 * That memfd is the "device fd": hand vgic_sim_get_fd() to code that calls
 * ioctl(fd, KVM_{GET,SET,HAS}_DEVICE_ATTR, &attr).  Those ioctls are trapped
 * by a seccomp user-notification filter and answered by a supervisor: call
 * vgic_sim_supervise_self() first thing in a test, or run the program under
 * vgic-sim-run.  See docs/vgic-sim.md.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

typedef struct _VgicSim VgicSim;

/**
 * VgicSimConfig - the VM and host a sim models
 * @nr_vcpus: number of vCPUs (1..VGIC_MAX_VCPUS of vgic-shape.h, max 512 here)
 * @mpidrs: per vCPU, the packed affinity (attr[63:32]); NULL for
 *	vgic_default_mpidr(i)
 * @nr_irqs: IRQs including the 32 private ones (64..1024, multiple of 32)
 * @has_its: the VM has an ITS (GICD_TYPER.LPIS, GICR_TYPER.PLPIS, EnableLPIs)
 * @pri_bits: host ICH_VTR_EL2.PRIbits+1: 5, 6 or 7 (0 means 5)
 * @batch: the kernel has the batch group (group 10)
 * @foreign_batch: instead, the kernel's group 10 is another batch ABI (see
 *	vgic_sim_set_foreign_batch()); wins over @batch
 * @uninitialized: create the vGIC without KVM_DEV_ARM_VGIC_CTRL_INIT
 * @gicv4_1: the host is a GICv4.1 with vSGIs (GICD_TYPER2.nASSGIcap, and
 *	GICD_CTLR.nASSGIreq writable)
 */
typedef struct {
  guint32 nr_vcpus;
  const guint32 *mpidrs;
  guint32 nr_irqs;
  gboolean has_its;
  guint pri_bits;
  gboolean batch;
  gboolean foreign_batch;
  gboolean uninitialized;
  gboolean gicv4_1;
} VgicSimConfig;

/* One interrupt's state, as the 6.1 kernel keeps it in struct vgic_irq. */
typedef struct {
  guint8 group;		/* IGROUPR bit */
  guint8 enabled;
  guint8 pending;	/* the pending latch (what uaccess ISPENDR sees) */
  guint8 active;
  guint8 edge;		/* ICFGR: 1 edge, 0 level */
  guint8 level;		/* line level */
  guint8 priority;	/* only bits [7:3] are kept */
  guint8 pad;
  guint32 route;	/* SPIs: IROUTER Aff2.Aff1.Aff0 ([23:0]) */
} VgicSimIrq;

/* One vCPU's redistributor and CPU-interface state. */
typedef struct {
  guint32 mpidr;	/* identity, packed as in attr[63:32]; not writable */
  guint8 lpis_enabled;	/* GICR_CTLR.EnableLPIs */
  guint8 pri_bits;	/* num_pri_bits (ICC_CTLR_EL1.PRIbits + 1) */
  guint8 id_bits;	/* num_id_bits (ICC_CTLR_EL1.IDbits) */
  guint8 cbpr, eoimode, grpen0, grpen1;
  guint8 pmr, bpr0, bpr1;	/* bpr1 is VMCR.ABPR */
  guint8 pad[2];
  guint32 ap0r[4], ap1r[4];	/* u32 in the kernel: high bits are dropped */
  guint64 pendbaser;
  VgicSimIrq priv[32];	/* SGIs 0-15, PPIs 16-31 */
} VgicSimCpu;

/**
 * VgicSimState - a whole register file, for tests to build and compare
 * @spis: nr_irqs - 32 entries, SPI 32 first
 * @cpus: nr_vcpus entries
 */
typedef struct {
  guint32 nr_vcpus;
  guint32 nr_irqs;
  gboolean has_its;
  gboolean enabled;		/* GICD_CTLR.EnableGrp1 */
  gboolean nassgireq;		/* GICD_CTLR.nASSGIreq */
  guint32 implementation_rev;	/* GICD_IIDR.Revision (2 or 3) */
  guint64 propbaser;		/* one per VM in KVM, whatever GICR it is written at */
  VgicSimIrq *spis;
  VgicSimCpu *cpus;
} VgicSimState;

/* Counters kept in the shared model, reset with vgic_sim_counters_reset(). */
#define VGIC_SIM_NR_GROUPS 16	/* groups 0..14; 15 counts anything else */
typedef struct {
  guint64 group_calls[VGIC_SIM_NR_GROUPS];	/* GET/SET/HAS per group */
  guint64 single_get;		/* GET on any group but the batch one */
  guint64 single_set;
  guint64 has;
  guint64 batch_calls;		/* GET/SET on the batch group */
  guint64 batch_entries;	/* entries of accepted batch headers */
  guint64 foreign_calls;	/* GET/SET on a foreign group 10 */
  guint64 lock_rounds;		/* kvm->lock + every vCPU mutex taken */
  guint64 vcpu_locks;		/* vCPU mutex trylocks (N per round) */
  guint64 mpidr_scan_steps;	/* vCPUs compared resolving mpidrs */
} VgicSimCounters;

VgicSim *vgic_sim_new (const VgicSimConfig *config, GError **error);

/**
 * vgic_sim_open_fd() - attach to the sim behind @fd (a dup is kept; @fd
 * stays the caller's).  Fails if @fd is not a sim memfd of this layout.
 */
VgicSim *vgic_sim_open_fd (int fd, GError **error);

/* vgic_sim_get_fd() - the "device fd" (owned by @sim) */
int vgic_sim_get_fd (VgicSim *sim);
void vgic_sim_free (VgicSim *sim);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VgicSim, vgic_sim_free)

/* vgic_sim_set_batch() - switch the batch group on, or off (an old kernel) */
void vgic_sim_set_batch (VgicSim *sim, gboolean on);

/**
 * vgic_sim_set_foreign_batch() - make group 10 another batch layout: a
 * kernel with a different batch series for this device under the same
 * macro name and group number.  It answers KVM_HAS_DEVICE_ATTR(10, 0) with
 * 0, as this project's does, and takes the same header, but its entries
 * are { __u32 group; __u32 flags; __u64 attr; __u64 addr }: each value
 * goes through a pointer, as in struct kvm_device_attr (a modelled layout,
 * not any posted series' code).  It works, for a caller of that layout; a
 * batch of this project's layout makes it use each entry's value as a
 * pointer.  Every GET/SET counts in foreign_calls.
 */
void vgic_sim_set_foreign_batch (VgicSim *sim);

/**
 * vgic_sim_set_vcpu_running() - mark vCPU @idx as running: KVM holds a
 * running vCPU's mutex, so every register access gets -EBUSY meanwhile
 */
void vgic_sim_set_vcpu_running (VgicSim *sim, guint idx, gboolean running);

/**
 * vgic_sim_fail_at() - arm one apply-phase failure with @err (a negative
 * errno): the @index-th register access from now (0 = the next one) fails
 * after the locks are taken, whether it comes in a single GET/SET or as an
 * entry of a batch (the batch's earlier entries are applied, it is not).
 * Accesses count across calls, so a failure can be aimed at the write round
 * of a restore that starts with a read round.
 */
void vgic_sim_fail_at (VgicSim *sim, guint index, int err);

/* vgic_sim_fault_next() - the next GET/SET/HAS on this sim gets -EFAULT, as
 * if its kvm_device_attr pointer were bad */
void vgic_sim_fault_next (VgicSim *sim);

/**
 * vgic_sim_stall_at() - the @n-th GET or SET on this sim from now (1 = the
 * next; HAS does not count) waits before it runs, until vgic_sim_release()
 * (the test meanwhile kills a peer, say); vgic_sim_wait_stalled() waits up
 * to @timeout_ms for it to be waiting.  While it waits, the supervisor
 * serves no other call.
 */
void vgic_sim_stall_at (VgicSim *sim, guint n);
gboolean vgic_sim_wait_stalled (VgicSim *sim, guint timeout_ms);
void vgic_sim_release (VgicSim *sim);

void vgic_sim_counters_get (VgicSim *sim, VgicSimCounters *out);
void vgic_sim_counters_reset (VgicSim *sim);

/* vgic_sim_initialized() - whether KVM_DEV_ARM_VGIC_CTRL_INIT has run */
gboolean vgic_sim_initialized (VgicSim *sim);

/* vgic_sim_get_mpidr() - the packed affinity of vCPU @idx */
guint32 vgic_sim_get_mpidr (VgicSim *sim, guint idx);

/**
 * vgic_sim_state_get() - copy the whole register file out (under the VM lock)
 * Return: a new state; free with vgic_sim_state_free().
 */
VgicSimState *vgic_sim_state_get (VgicSim *sim);

/**
 * vgic_sim_state_set() - replace the register file; @state must have the
 * sim's nr_vcpus and nr_irqs (mpidrs are identity and are not copied)
 */
gboolean vgic_sim_state_set (VgicSim *sim, const VgicSimState *state,
                             GError **error);

/**
 * vgic_sim_randomize() - fill the sim with random, architecturally valid
 * state derived from @seed (same seed, same state)
 */
void vgic_sim_randomize (VgicSim *sim, guint32 seed);

/**
 * vgic_sim_state_equal() - compare two register files
 * @diff: if not NULL, gets one line per difference
 * Return: TRUE when equal.
 */
gboolean vgic_sim_state_equal (const VgicSimState *a, const VgicSimState *b,
                               GString *diff);
void vgic_sim_state_free (VgicSimState *state);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VgicSimState, vgic_sim_state_free)

/*
 * The queueing model.  KVM puts an interrupt on a vCPU's list (ap_list)
 * only in vgic_queue_irq_unlock(), called by the user-space writes that
 * can make it deliverable: ISENABLER and ISPENDR (each IRQ of a set bit),
 * ISACTIVER (each IRQ it makes active), IGROUPR (every IRQ of the word)
 * and LEVEL_INFO (each line it raises).  It goes where vgic_target_oracle()
 * says: an active IRQ to its target (irq->target_vcpu: the IROUTER's vCPU
 * for an SPI, vCPU 0 before any IROUTER write, none when the route names no
 * vCPU; the owner for an SGI or PPI); otherwise, when it is enabled, pending
 * (edge: the latch; level: the latch or the line) and the distributor is
 * enabled, to its target; else nowhere.  One already on a list does not
 * move (only a running vCPU prunes its list, which the sim does not model),
 * and nothing takes one off.  GICD_CTLR, ICFGR, IROUTER and IPRIORITYR
 * writes queue nothing.  No register shows any of this: it changes no
 * value, error or counter.  vgic_sim_state_set() and vgic_sim_randomize()
 * change neither the lists nor the targets.
 */

/**
 * vgic_sim_irq_queued_on() - the vCPU whose list holds interrupt @intid
 * @vcpu: whose SGI or PPI, for @intid below 32; ignored for SPIs
 * Return: the vCPU index, -1 when it is on no list, -2 when @intid is at or
 * above nr_irqs.
 */
int vgic_sim_irq_queued_on (VgicSim *sim, guint vcpu, guint32 intid);

/**
 * vgic_sim_irq_target() - interrupt @intid's target vCPU (irq->target_vcpu)
 * Return: the vCPU index, -1 for none, -2 when @intid is at or above nr_irqs.
 */
int vgic_sim_irq_target (VgicSim *sim, guint vcpu, guint32 intid);

/**
 * vgic_sim_check_queued() - the property a restore into a fresh VM must
 * leave: every interrupt is on its target's list exactly when it is active,
 * or when the distributor is enabled and it is enabled and pending by its
 * configuration; otherwise it is on no list
 * @diff: if not NULL, gets one line per interrupt that breaks it
 * Return: TRUE when every interrupt holds it.
 */
gboolean vgic_sim_check_queued (VgicSim *sim, GString *diff);

/**
 * vgic_sim_supervise_self() - serve sim fds for this process and the
 * children it forks from now on: installs the seccomp filter (on every
 * thread) and starts the supervisor thread.  Idempotent.
 */
gboolean vgic_sim_supervise_self (GError **error);

/**
 * vgic_sim_send_fd() - send @fd over the unix socket @sock (SCM_RIGHTS,
 * with one data byte)
 * Return: 0, or -1 with errno set.
 */
int vgic_sim_send_fd (int sock, int fd);

/**
 * vgic_sim_recv_fd() - receive what vgic_sim_send_fd() sent (close-on-exec)
 * Return: the fd; -1 with errno set when nothing came; -2 when a byte came
 * without an fd.
 */
int vgic_sim_recv_fd (int sock);

#define VGIC_SIM_ERROR (vgic_sim_error_quark ())
GQuark vgic_sim_error_quark (void);
