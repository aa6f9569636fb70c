/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libvgicd.h - the library QEMU links to save and restore its in-kernel
 * GICv3 (vGIC) through vgicd.
 *
 * vgicd knows which registers make up the vGIC state and in what order they
 * must be written; QEMU does not need to.  The kernel only lets the VM's own
 * process touch the vGIC device, so libvgicd runs vgicd's access lists on
 * the device fd, inside QEMU, in as few KVM_{GET,SET}_DEVICE_ATTR calls as
 * the kernel allows.
 *
 *   c = vgicd_client_connect ("unix:path=/run/vgicd/vgicd.sock", &err);
 *   vgicd_client_attach (c, vgic_fd, "vm1", uuid, nr_irqs, nr_vcpus, mpidrs, &err);
 *   vgicd_client_save (c, &record, &err);       // source, in pre_save
 *   vgicd_client_load (c, data, len, &err);     // destination, in post_load
 *   vgicd_client_free (c);
 *
 * Or, where the stream carries QEMU's own GIC fields (no record):
 *
 *   vgicd_client_save_fields (c, &regs, &err);  // the reads, batched
 *   vgicd_regs_lookup (regs, group, attr, &v);  // what QEMU's get would read
 *   vgicd_client_load_list (c, writes, n, &err);  // what QEMU's put would write
 *
 * Every call is synchronous and bounded.  Save and Load, the calls made
 * inside a migration's downtime: the time each spends waiting for vgicd,
 * over all its steps, is at most the client's timeout (250 ms by default,
 * or what the host's vgicd says at attach, its ClientTimeout=, unless the
 * caller names one); the kernel's own work between the waits is not
 * counted.  So a stuck or dying vgicd costs a save at most that much
 * before the caller takes its own path.  Connecting and attaching, made
 * while the VM runs, by 2 s or that timeout if longer.  Errors
 * are in the VGICD_CLIENT_ERROR domain; the code says what the caller
 * should do (fall back, fail the migration, ...).
 *
 * The API and ABI are stable: symbols are versioned (VGICD_0.1).
 */
#ifndef LIBVGICD_H
#define LIBVGICD_H

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

#define VGICD_CLIENT_DEFAULT_TIMEOUT_MS 250
/* Connecting and attaching happen while the VM runs, not in a downtime:
 * they are bounded by this, or by the client's timeout if longer. */
#define VGICD_CLIENT_CONNECT_TIMEOUT_MS 2000

typedef struct _VgicdClient VgicdClient;

#define VGICD_CLIENT_ERROR (vgicd_client_error_quark ())
GQuark vgicd_client_error_quark (void);

/**
 * VgicdClientError - what went wrong, and what the caller does about it
 * @VGICD_CLIENT_ERROR_UNREACHABLE: no vgicd at the address, it went away,
 *	or it did not answer in time.  On save: use your own path.
 * @VGICD_CLIENT_ERROR_DENIED: vgicd refused this process: its user is not
 *	on the allow-list, or (on connect) vgicd closed the connection at
 *	its door, which it also does when too many connections are in their
 *	handshake, or (on attach) its MaxSessions= or MaxSessionsPerUser= is
 *	reached.  Use your own path; vgicd's log says why.
 * @VGICD_CLIENT_ERROR_DECLINED: a save, or a load of QEMU's own fields:
 *	the mode (the host's or the VM's) is off; use your own path.  Not a
 *	failure.  A record is never declined.
 * @VGICD_CLIENT_ERROR_REFUSED: vgicd refused the request: on load, the
 *	record does not fit this VM (nothing was written).
 * @VGICD_CLIENT_ERROR_DEVICE: a kernel call failed; the message names the
 *	register.  On load the vGIC may be partly written: fail the migration.
 * @VGICD_CLIENT_ERROR_PROTOCOL: vgicd sent something libvgicd will not run
 *	(a non-vGIC group, a count beyond the window); nothing was executed.
 * @VGICD_CLIENT_ERROR_INVALID: bad arguments, or not attached.
 * @VGICD_CLIENT_ERROR_ABSENT: connect only: nothing listens at the address
 *	(no such socket, or nobody accepting on it): the host runs no vgicd.
 *	Use your own path; not worth a warning.
 */
typedef enum {
  VGICD_CLIENT_ERROR_UNREACHABLE,
  VGICD_CLIENT_ERROR_DENIED,
  VGICD_CLIENT_ERROR_DECLINED,
  VGICD_CLIENT_ERROR_REFUSED,
  VGICD_CLIENT_ERROR_DEVICE,
  VGICD_CLIENT_ERROR_PROTOCOL,
  VGICD_CLIENT_ERROR_INVALID,
  VGICD_CLIENT_ERROR_ABSENT,
} VgicdClientError;

/**
 * vgicd_client_connect() - connect to vgicd
 * @address: a D-Bus address, e.g. "unix:path=/run/vgicd/vgicd.sock"
 * @timeout_ms: bound on every save and load call (and, when longer than
 *	VGICD_CLIENT_CONNECT_TIMEOUT_MS, on connecting and attaching); 0 for
 *	VGICD_CLIENT_DEFAULT_TIMEOUT_MS, replaced by the host's at attach
 * @error: ABSENT when nothing listens at @address, UNREACHABLE when
 *	something does but does not answer in time
 *
 * At a "unix:path=" address, a socket whose backlog is full (vgicd busy,
 * or flooded by another process) is waited for, until the bound on
 * connecting, rather than failed at once.
 *
 * Return: a client, or NULL with @error set.
 */
VgicdClient *vgicd_client_connect (const char *address, int timeout_ms, GError **error);

/**
 * vgicd_client_probe_batch() - does the kernel behind @vgic_fd have this
 * project's vGIC batch group?  KVM_DEV_ARM_VGIC_GRP_BATCH_REGS must exist
 * and a batch of reads must agree with single reads of the same registers
 * (the probe can tell a group 10 of another layout, and never lets one
 * write outside its own memory).  Reads only.  The vGIC must be
 * initialized and its vCPUs not running.
 * Return: 1 yes, 0 no (none, or another layout), or a negative errno
 * when it could not tell (-EBUSY: a vCPU runs).
 */
int vgicd_client_probe_batch (int vgic_fd);

/**
 * vgicd_client_attach() - describe the VM to vgicd and get the shared window
 * @client: the client
 * @vgic_fd: the VM's vGICv3 device fd (not passed to vgicd; kept for the
 *	executor; must stay open while the client is used)
 * @name: the VM's name, for logs and vgicctl
 * @uuid: the VM's UUID, or NULL
 * @nr_irqs: the vGIC's interrupt count including the 32 private ones
 * @nr_vcpus: the number of vCPUs
 * @mpidrs: per vCPU, in vCPU index order, the affinity as the device-attr
 *	interface encodes it (Aff3.Aff2.Aff1.Aff0, i.e. GICR_TYPER[63:32])
 * @error: set on failure
 *
 * Probes the kernel (vgicd_client_probe_batch()) and tells vgicd the
 * result.  Call it once, after the vGIC is initialized, best while the
 * vCPUs do not run (a probe that meets a running vCPU cannot verify the
 * group; vgicd's own probe then decides).
 */
gboolean vgicd_client_attach (VgicdClient *client, int vgic_fd, const char *name,
                              const char *uuid, uint32_t nr_irqs, uint32_t nr_vcpus,
                              const uint32_t *mpidrs, GError **error);

/**
 * vgicd_client_save() - save the vGIC state
 * @record: (out): the state record to carry in the migration stream
 *
 * The VM must be stopped.  DECLINED means "use your own path".
 */
gboolean vgicd_client_save (VgicdClient *client, GBytes **record, GError **error);

/**
 * vgicd_client_load() - restore the vGIC state from a record
 *
 * vgicd checks the whole record against the attached VM before anything is
 * written (REFUSED: nothing was touched).  A record longer than any VM's
 * on the host (vgicd says how long at attach) is REFUSED here, unsent.
 * DEVICE means the kernel failed part-way: the vGIC is partly written.
 */
gboolean vgicd_client_load (VgicdClient *client, const void *record, size_t len,
                            GError **error);

/**
 * VgicdAccess - one register access of QEMU's own restore
 * @group: a KVM_DEV_ARM_VGIC_GRP_* state group
 * @attr: the kvm_device_attr.attr QEMU would pass
 * @value: what it would write (32 bits, but for CPU_SYSREGS)
 */
typedef struct {
  uint32_t group;
  uint64_t attr;
  uint64_t value;
} VgicdAccess;

/* What a SaveFields read: the value of each register, by (group, attr).
 * A lookup in the order of the reads (QEMU's get's, but for its LPI bases
 * and APRs) costs a compare, one in any other order a hash lookup.  A
 * lookup moves a cursor: one thread at a time.  A VgicdRegs may outlive
 * its client. */
typedef struct _VgicdRegs VgicdRegs;

/* vgicd_regs_lookup() - the value read for (@group, @attr), if it was read
 * (a register read more than once: its last read) */
gboolean vgicd_regs_lookup (const VgicdRegs *regs, uint32_t group, uint64_t attr,
                            uint64_t *value);
/* vgicd_regs_count() - how many registers were read (each once, however
 * often it was read) */
guint vgicd_regs_count (const VgicdRegs *regs);
void vgicd_regs_free (VgicdRegs *regs);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VgicdRegs, vgicd_regs_free)

/**
 * vgicd_client_offers_fields() - can this vgicd save into and load from
 * QEMU's own fields (vgicd_client_save_fields(), vgicd_client_load_list())?
 */
gboolean vgicd_client_offers_fields (VgicdClient *client);

/**
 * vgicd_client_wants_record() - should this VM's saves carry a state record
 * (vgicd's Record= for the host or the VM), rather than QEMU's own fields?
 * TRUE for a vgicd that cannot do otherwise.
 */
gboolean vgicd_client_wants_record (VgicdClient *client);

/**
 * vgicd_client_save_fields() - save the vGIC state for QEMU's own fields
 * @regs: (out): every register the save read, with its value: what QEMU's
 *	own get would read one by one, read in batches
 *
 * The VM must be stopped.  DECLINED means "use your own path".  The same
 * bound as vgicd_client_save() applies.
 */
gboolean vgicd_client_save_fields (VgicdClient *client, VgicdRegs **regs, GError **error);

/**
 * vgicd_client_load_list() - restore the vGIC from QEMU's own restore
 * @writes: the writes QEMU's own put makes, in its order, with its values
 * @n: their number (at most the window's)
 *
 * vgicd runs them only when they are exactly the restore it plans for the
 * values they write (REFUSED otherwise, nothing written), batched where
 * the kernel can.  DECLINED (mode off): run them yourself.  DEVICE: the
 * kernel failed part-way.
 */
gboolean vgicd_client_load_list (VgicdClient *client, const VgicdAccess *writes, size_t n,
                                 GError **error);

/**
 * vgicd_client_load_list_buffer() - room for vgicd_client_load_list()'s
 * writes, lent by the client
 * @n: (out): how many writes it holds: as many as a load list may have
 *
 * Memory the client touched when it attached.  A list made in fresh memory
 * inside the downtime costs a page fault per 4 KiB (46 at 160 vCPUs, 10 to
 * 15 µs each in a VM); collected here, none.  Put the writes at its start
 * and pass it to vgicd_client_load_list().  It stays the client's: its
 * contents are undefined after any other call on the client, and it goes
 * with vgicd_client_free().
 *
 * Return: the buffer, or NULL when the client is not attached.
 * Since: 0.4 (VGICD_0.4)
 */
VgicdAccess *vgicd_client_load_list_buffer (VgicdClient *client, size_t *n);

/**
 * VgicdClientStats - what the last save or load cost
 * @ioctls: device ioctls issued
 * @kernel_ns: time spent in them
 * @entries: register accesses executed
 * @batched: TRUE if the batch group was used
 */
typedef struct {
  uint32_t ioctls;
  uint64_t kernel_ns;
  uint32_t entries;
  gboolean batched;
} VgicdClientStats;

/* vgicd_client_get_stats() - the last save's or load's figures */
void vgicd_client_get_stats (VgicdClient *client, VgicdClientStats *stats);

/* vgicd_client_get_mode() - the host's mode as of attach ("auto", ...) */
const char *vgicd_client_get_mode (VgicdClient *client);

/**
 * vgicd_client_is_connected() - is the session's connection still open, as
 * far as this side knows?  No round trip, nothing blocks: it reads what
 * GDBus's worker thread saw on the socket.  FALSE once vgicd closed it (it
 * stopped or restarted, e.g. on a package upgrade), and every later save or
 * load would fail: free the client and attach again, where nothing waits
 * for it (QEMU does at a migration's setup, while the guest runs).  TRUE
 * says nothing of a vgicd that hangs: its calls still time out.
 *
 * Since: 0.3 (VGICD_0.3)
 */
gboolean vgicd_client_is_connected (VgicdClient *client);

void vgicd_client_free (VgicdClient *client);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VgicdClient, vgicd_client_free)

G_END_DECLS

#endif /* LIBVGICD_H */
