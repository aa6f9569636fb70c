/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-nested-test.c - the nested tier's test program.  It runs on a real
 * arm64 kernel with KVM (inside qemu-system-aarch64, see run-nested.sh) and
 * plays QEMU with raw KVM ioctls:
 *
 *   - it builds VMs the way QEMU's virt machine does (vCPUs, a vGICv3, an
 *     ITS so that GICR_TYPER.PLPIS is set) and puts random state in them with
 *     single KVM_SET_DEVICE_ATTR calls, plus a few hand-made writes it checks
 *     for by name in the saved record;
 *   - it saves that state through libvgicd and the real vgicd (mode auto and
 *     mode single), and one register per ioctl without vgicd (what QEMU 10.0
 *     does), and requires the three to agree register for register;
 *   - it restores the record into fresh VMs by each path and requires a
 *     one-by-one read of each to equal the source's;
 *   - it checks the path taken: the batch group on a patched kernel, the
 *     fallback on a stock one (libvgicd's stats, and the start-up probe in
 *     vgicd's log);
 *   - after each restore through vgicd it checks, in KVM's debugfs
 *     vgic-state, that every deliverable interrupt is queued on its
 *     target's list (the ordering rules, vgic-order-check.h), and that the
 *     check fails for the same state written with raw single writes in an
 *     order that breaks R3 and, separately, R0 and R2;
 *   - it times each save and restore and prints a table.
 *
 * Exit status: 0 all good, 1 any mismatch or failure, 2 bad usage, 77 not
 * an arm64 host.
 */
#include <stdio.h>

#ifndef __aarch64__

int
main (void)
{
  printf ("vgic-nested-test: arm64 only (it needs /dev/kvm with a vGICv3)\n");
  return 77;
}

#else /* __aarch64__ */

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <gio/gio.h>
#include <linux/kvm.h>

#include "libvgicd.h"
#include "vgic-direct.h"
#include "vgic-exec.h"
#include "vgic-order-check.h"
#include "vgic-plan.h"
#include "vgic-record.h"
#include "vgic-regs.h"
#include "vgicd/kvm-call.h"

typedef VgicEntry Entry;

/* Guest-physical layout, as QEMU's virt machine (the redistributors are
 * moved up so that 512 of them fit in one legacy region). */
#define DIST_BASE 0x08000000ULL
#define ITS_BASE 0x08080000ULL
#define REDIST_BASE 0x10000000ULL

#define MPIDR_EL1 ARM64_SYS_REG (3, 0, 0, 0, 5)

/* ------------------------------------------------------------------ */
/* Options and failure accounting                                     */
/* ------------------------------------------------------------------ */

static char *opt_vcpus = NULL;
static int opt_irqs = 288;
static int opt_seed = 1;
static char *opt_expect = NULL;
static char *opt_auto = NULL;
static char *opt_single = NULL;
static char *opt_vgicd_log = NULL;
static int opt_timeout_ms = 120000;
static double opt_target = 30.0;
static int opt_target_vcpus = 256;
static gboolean opt_enforce = FALSE;
static gboolean opt_inject = FALSE;
static int opt_repeat = 5;
static int opt_repeat_budget_ms = 1500;
static gboolean opt_source_ran = TRUE;

static guint failures;

#define FAIL(...)                                                       \
  do                                                                    \
    {                                                                   \
      failures++;                                                       \
      g_printerr ("FAIL: " __VA_ARGS__);                                \
      g_printerr ("\n");                                                \
    }                                                                   \
  while (0)

static guint64
now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (guint64) ts.tv_sec * 1000000000u + (guint64) ts.tv_nsec;
}

static double
ms (guint64 ns)
{
  return (double) ns / 1e6;
}

/* ------------------------------------------------------------------ */
/* A VM as QEMU builds one                                            */
/* ------------------------------------------------------------------ */

typedef struct {
  int vm;
  int gic;
  int its;
  guint n;
  int *vcpus;
  guint32 *mpidrs;	/* packed Aff3.Aff2.Aff1.Aff0, as the attrs want */
  VgicShape *shape;
} Vm;

static void
vm_free (Vm *vm)
{
  if (!vm)
    return;
  if (vm->its >= 0)
    close (vm->its);
  if (vm->gic >= 0)
    close (vm->gic);
  for (guint i = 0; i < vm->n; i++)
    if (vm->vcpus[i] >= 0)
      close (vm->vcpus[i]);
  if (vm->vm >= 0)
    close (vm->vm);
  g_free (vm->vcpus);
  g_free (vm->mpidrs);
  vgic_shape_free (vm->shape);
  g_free (vm);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC (Vm, vm_free)

static gboolean
dev_set (int fd, guint32 group, guint64 attr, const void *value, const char *what,
         GError **error)
{
  if (kvm_device_set (fd, group, attr, value) < 0)
    {
      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno), "%s: %s", what,
                   g_strerror (errno));
      return FALSE;
    }
  return TRUE;
}

/* vm_new() - KVM_CREATE_VM, @n vCPUs initialised with the preferred target,
 * a vGICv3 with @nr_irqs IRQs and an ITS, initialised: what QEMU's virt
 * machine does with -accel kvm -M gic-version=3 (minus guest memory). */
static Vm *
vm_new (int kvm, guint n, guint32 nr_irqs, GError **error)
{
  g_autoptr (Vm) vm = g_new0 (Vm, 1);
  struct kvm_vcpu_init init;
  struct kvm_create_device gic = { .type = KVM_DEV_TYPE_ARM_VGIC_V3 };
  struct kvm_create_device its = { .type = KVM_DEV_TYPE_ARM_VGIC_ITS };
  guint64 dist = DIST_BASE, redist = REDIST_BASE, its_base = ITS_BASE;

  vm->vm = vm->gic = vm->its = -1;
  vm->vcpus = g_new (int, n);
  vm->mpidrs = g_new0 (guint32, n);
  for (guint i = 0; i < n; i++)
    vm->vcpus[i] = -1;
  vm->n = n;

  vm->vm = kvm_call (kvm, KVM_CREATE_VM, 0);
  if (vm->vm < 0)
    {
      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno), "KVM_CREATE_VM: %s",
                   g_strerror (errno));
      return NULL;
    }
  if (kvm_call (vm->vm, KVM_ARM_PREFERRED_TARGET, &init) < 0)
    {
      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno),
                   "KVM_ARM_PREFERRED_TARGET: %s", g_strerror (errno));
      return NULL;
    }
  for (guint i = 0; i < n; i++)
    {
      guint64 mpidr = 0;
      struct kvm_one_reg reg = { .id = MPIDR_EL1, .addr = (guint64) (uintptr_t) &mpidr };

      vm->vcpus[i] = ioctl (vm->vm, KVM_CREATE_VCPU, (unsigned long) i);
      if (vm->vcpus[i] < 0)
        {
          g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno),
                       "KVM_CREATE_VCPU %u: %s", i, g_strerror (errno));
          return NULL;
        }
      if (kvm_call (vm->vcpus[i], KVM_ARM_VCPU_INIT, &init) < 0 ||
          kvm_call (vm->vcpus[i], KVM_GET_ONE_REG, &reg) < 0)
        {
          g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno),
                       "vCPU %u: KVM_ARM_VCPU_INIT / MPIDR_EL1: %s", i, g_strerror (errno));
          return NULL;
        }
      /* Aff3 [39:32], Aff2..Aff0 [23:0] -> Aff3.Aff2.Aff1.Aff0 */
      vm->mpidrs[i] = (guint32) (((mpidr >> 32) & 0xff) << 24) | (guint32) (mpidr & 0xffffff);
    }

  if (kvm_call (vm->vm, KVM_CREATE_DEVICE, &gic) < 0)
    {
      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno),
                   "KVM_CREATE_DEVICE vGICv3: %s", g_strerror (errno));
      return NULL;
    }
  vm->gic = (int) gic.fd;
  if (!dev_set (vm->gic, KVM_DEV_ARM_VGIC_GRP_NR_IRQS, 0, &nr_irqs, "NR_IRQS", error) ||
      !dev_set (vm->gic, KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_V3_ADDR_TYPE_DIST, &dist,
                "ADDR dist", error) ||
      !dev_set (vm->gic, KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_V3_ADDR_TYPE_REDIST, &redist,
                "ADDR redist", error))
    return NULL;

  if (kvm_call (vm->vm, KVM_CREATE_DEVICE, &its) < 0)
    {
      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno),
                   "KVM_CREATE_DEVICE ITS: %s", g_strerror (errno));
      return NULL;
    }
  vm->its = (int) its.fd;
  if (!dev_set (vm->its, KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_ITS_ADDR_TYPE, &its_base,
                "ITS ADDR", error) ||
      !dev_set (vm->its, KVM_DEV_ARM_VGIC_GRP_CTRL, KVM_DEV_ARM_VGIC_CTRL_INIT, NULL,
                "ITS CTRL_INIT", error) ||
      !dev_set (vm->gic, KVM_DEV_ARM_VGIC_GRP_CTRL, KVM_DEV_ARM_VGIC_CTRL_INIT, NULL,
                "vGIC CTRL_INIT", error))
    return NULL;

  vm->shape = vgic_shape_new (nr_irqs, n, vm->mpidrs, error);
  if (!vm->shape)
    return NULL;
  return g_steal_pointer (&vm);
}

/* vm_run_once() - KVM_RUN vCPU 0 once, with immediate_exit set so that it
 * returns -EINTR before entering the guest.  A migration source has run;
 * its destination, at post_load, has not.  That matters from Linux 6.7 on:
 * the first KVM_RUN of a VM builds its MPIDR -> vCPU table
 * (kvm->arch.mpidr_data), and until then every affinity lookup of a
 * register access (and of every GICD_IROUTER write) scans the vCPUs. */
static gboolean
vm_run_once (int kvm, Vm *vm, GError **error)
{
  int size = ioctl (kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
  struct kvm_run *run;
  int r, err;

  if (size <= 0)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "KVM_GET_VCPU_MMAP_SIZE: %s",
                   g_strerror (errno));
      return FALSE;
    }
  run = mmap (NULL, (size_t) size, PROT_READ | PROT_WRITE, MAP_SHARED, vm->vcpus[0], 0);
  if (run == MAP_FAILED)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "mmap of kvm_run: %s",
                   g_strerror (errno));
      return FALSE;
    }
  run->immediate_exit = 1;
  r = ioctl (vm->vcpus[0], KVM_RUN, 0);
  err = errno;
  munmap (run, (size_t) size);
  if (r == 0 || err != EINTR)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                   "KVM_RUN with immediate_exit: %s", r == 0 ? "returned 0" : g_strerror (err));
      return FALSE;
    }
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* QEMU-equivalent one-by-one save and restore (no vgicd)             */
/* ------------------------------------------------------------------ */

/* qemu_save() - both rounds read one register per ioctl, as QEMU's
 * kvm_arm_gicv3_get does; returns the record of what was read. */
static GBytes *
qemu_save (Vm *vm, guint *accesses, GError **error)
{
  g_autoptr (VgicList) all = vgic_direct_save (vm->shape, vm->gic, VGIC_EXEC_SINGLE, FALSE,
                                               NULL, error);

  if (!all)
    {
      g_prefix_error (error, "one-by-one save: ");
      return NULL;
    }
  if (accesses)
    *accesses = all->len;
  return vgic_record_encode (vm->shape, all->entries, all->len, error);
}

/* full_save() - the VM's whole register file, one register per ioctl: QEMU's
 * reads and the routes QEMU's addressing misses (vgic_plan_save_routes()),
 * as vgicd reads them for its record; encoded, it is the record vgicd
 * must write (version 2 when one of those routes is set). */
static GBytes *
full_save (Vm *vm, GError **error)
{
  g_autoptr (VgicList) all = vgic_direct_save (vm->shape, vm->gic, VGIC_EXEC_SINGLE, TRUE,
                                               NULL, error);

  if (!all)
    {
      g_prefix_error (error, "one-by-one save with every route: ");
      return NULL;
    }
  return vgic_record_encode (vm->shape, all->entries, all->len, error);
}

/* qemu_restore_values() - the TYPER reads, then every write one per ioctl,
 * in kvm_arm_gicv3_put's order. */
static gboolean
qemu_restore_values (Vm *vm, const VgicValues *state, guint *accesses, GError **error)
{
  VgicExecReport r;

  if (!vgic_direct_restore (vm->shape, vm->gic, state, FALSE, VGIC_EXEC_SINGLE, &r, error))
    {
      g_prefix_error (error, "one-by-one restore: ");
      return FALSE;
    }
  if (accesses)
    *accesses = r.done;
  return TRUE;
}

static gboolean
qemu_restore (Vm *vm, GBytes *record, guint *accesses, GError **error)
{
  g_autoptr (VgicRecord) rec = vgic_record_load (g_bytes_get_data (record, NULL),
                                                 g_bytes_get_size (record), vm->shape, error);

  return rec && qemu_restore_values (vm, rec->values, accesses, error);
}

/* ------------------------------------------------------------------ */
/* Random state                                                       */
/* ------------------------------------------------------------------ */

/* mutate() - a random value for one saved register, within what KVM keeps:
 * LPIs stay disabled (there is no guest memory for their tables), the ICC
 * fields the hardware fixes (PRIbits, IDbits, SEIS, A3V, SRE) stay as read,
 * IDs and TYPERs are read-only. */
static guint64
mutate (const Vm *vm, GRand *rand, const Entry *e)
{
  guint32 low = vgic_attr_low (e->attr);
  guint32 r = g_rand_int (rand);

  switch (e->group)
    {
    case KVM_DEV_ARM_VGIC_GRP_DIST_REGS:
      /* The distributor enabled, always: with it off nothing pending is
       * deliverable, and the order check would have only active IRQs to
       * look at (R0 concerns the pending ones). */
      if (low == GICD_CTLR)
        return e->value | GICD_CTLR_ENABLE_G1;
      if ((low >= GICD_IGROUPR && low < GICD_ICENABLER) ||
          (low >= GICD_ISPENDR && low < GICD_ICPENDR) ||
          (low >= GICD_ISACTIVER && low < GICD_ICACTIVER) ||
          (low >= GICD_IPRIORITYR && low < GICD_IPRIORITYR + 0x400))
        return r;
      if (low >= GICD_ICFGR && low < GICD_ICFGR + 0x100)
        return r & 0xaaaaaaaau;	/* one edge/level bit per IRQ */
      if (low >= GICD_IROUTER && low < GICD_IROUTER + 0x2000)
        {
          /* QEMU's 4-byte stride: an 8-aligned word is some IRQ's Aff2..Aff0,
           * the other one its Aff3; route to a vCPU of this VM. */
          guint32 target = vm->mpidrs[g_rand_int_range (rand, 0, (gint32) vm->n)];
          return (low & 4) ? target >> 24 : target & 0xffffff;
        }
      return e->value;
    case KVM_DEV_ARM_VGIC_GRP_REDIST_REGS:
      if (low == GICR_IGROUPR0 || low == GICR_ISENABLER0 || low == GICR_ISPENDR0 ||
          low == GICR_ISACTIVER0 || (low >= GICR_IPRIORITYR && low < GICR_IPRIORITYR + 0x20))
        return r;
      if (low == GICR_ICFGR1)
        return r & 0xaaaaaaaau;
      if (low == GICR_PROPBASER || low == GICR_PENDBASER)
        return r;
      if (low == GICR_PROPBASER + 4 || low == GICR_PENDBASER + 4)
        return r & 0x070fffffu;	/* PA[51:32], OuterCache */
      return e->value;
    case KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS:
      switch (low & KVM_DEV_ARM_VGIC_SYSREG_INSTR_MASK)
        {
        case ICC_CTLR_EL1:
          return (e->value & ~(ICC_CTLR_EL1_CBPR | ICC_CTLR_EL1_EOIMODE)) |
                 (r & (ICC_CTLR_EL1_CBPR | ICC_CTLR_EL1_EOIMODE));
        case ICC_IGRPEN0_EL1:
        case ICC_IGRPEN1_EL1:
          return r & 1;
        case ICC_PMR_EL1:
          return r & 0xff;
        case ICC_BPR0_EL1:
        case ICC_BPR1_EL1:
          return r & 7;
        default:
          if ((low & 0xfffc) == (ICC_AP0R_EL1 (0) & 0xfffc) ||
              (low & 0xfffc) == (ICC_AP1R_EL1 (0) & 0xfffc))
            return r;
          return e->value;
        }
    case KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO:
      return r;
    default:
      return e->value;
    }
}

/* A few writes made by hand with raw ioctls, independent of the planner:
 * the saved record must hold exactly these values at these places. */
typedef struct {
  guint32 group;
  guint64 attr;
  guint64 value;
  const char *what;
} Spot;

static GArray *
spot_list (const Vm *vm)
{
  GArray *spots = g_array_new (FALSE, FALSE, sizeof (Spot));
  guint32 last = vm->mpidrs[vm->n - 1];
  Spot s[] = {
    /* IRQ 32-63 enabled pattern, priorities of IRQs 40-43, a route. */
    { KVM_DEV_ARM_VGIC_GRP_DIST_REGS, vgic_attr (0, GICD_ISENABLER + 4), 0x80000021,
      "GICD_ISENABLER1" },
    { KVM_DEV_ARM_VGIC_GRP_DIST_REGS, vgic_attr (0, GICD_IPRIORITYR + 40), 0x80a0c0e8,
      "GICD_IPRIORITYR10" },
    { KVM_DEV_ARM_VGIC_GRP_DIST_REGS, vgic_attr (0, GICD_IGROUPR + 4), 0x5a5a5a5a,
      "GICD_IGROUPR1" },
    /* The last vCPU's private state and CPU interface. */
    { KVM_DEV_ARM_VGIC_GRP_REDIST_REGS, vgic_attr (last, GICR_IPRIORITYR + 24), 0x10203040,
      "GICR_IPRIORITYR6 (last vCPU)" },
    { KVM_DEV_ARM_VGIC_GRP_REDIST_REGS, vgic_attr (last, GICR_ISENABLER0), 0x0000a50f,
      "GICR_ISENABLER0 (last vCPU)" },
    { KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS, vgic_attr (last, ICC_PMR_EL1), 0xd8,
      "ICC_PMR_EL1 (last vCPU)" },
    { KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS, vgic_attr (vm->mpidrs[0], ICC_IGRPEN1_EL1), 1,
      "ICC_IGRPEN1_EL1 (vCPU 0)" },
  };

  g_array_append_vals (spots, s, G_N_ELEMENTS (s));
  return spots;
}

static gboolean
spot_write (Vm *vm, GError **error)
{
  g_autoptr (GArray) spots = spot_list (vm);

  for (guint i = 0; i < spots->len; i++)
    {
      Spot *s = &g_array_index (spots, Spot, i);
      guint32 v32 = (guint32) s->value;
      guint64 v64 = s->value;
      gboolean wide = s->group == KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS;

      /* Clear-then-set for the set-only registers, as a guest would. */
      if (s->group == KVM_DEV_ARM_VGIC_GRP_DIST_REGS &&
          vgic_attr_low (s->attr) == GICD_ISENABLER + 4)
        {
          guint32 all = ~0u;
          if (!dev_set (vm->gic, s->group, vgic_attr (0, GICD_ICENABLER + 4), &all,
                        "GICD_ICENABLER1", error))
            return FALSE;
        }
      if (s->group == KVM_DEV_ARM_VGIC_GRP_REDIST_REGS &&
          vgic_attr_low (s->attr) == GICR_ISENABLER0)
        {
          guint32 all = ~0u;
          if (!dev_set (vm->gic, s->group, vgic_attr (vgic_attr_mpidr (s->attr), GICR_ICENABLER0),
                        &all, "GICR_ICENABLER0", error))
            return FALSE;
        }
      if (!dev_set (vm->gic, s->group, s->attr, wide ? (void *) &v64 : (void *) &v32, s->what,
                    error))
        return FALSE;
    }
  return TRUE;
}

/* The spot values must be in @record, as written. */
static void
spot_check (Vm *vm, GBytes *record, const char *what)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GArray) spots = spot_list (vm);
  g_autoptr (VgicRecord) rec = vgic_record_load (g_bytes_get_data (record, NULL),
                                                 g_bytes_get_size (record), vm->shape, &error);

  if (!rec)
    {
      FAIL ("%s: record does not decode: %s", what, error->message);
      return;
    }
  for (guint i = 0; i < spots->len; i++)
    {
      Spot *s = &g_array_index (spots, Spot, i);
      guint64 v;

      if (!vgic_values_lookup (rec->values, s->group, s->attr, &v))
        FAIL ("%s: record lacks %s", what, s->what);
      else if (v != s->value)
        FAIL ("%s: %s is 0x%" G_GINT64_MODIFIER "x, written 0x%" G_GINT64_MODIFIER "x", what,
              s->what, v, s->value);
    }
}

/* route_high_spis() - route every SPI above nr_irqs / 2, the routes QEMU's
 * GICD_IROUTER addressing never reaches, with a raw write at the
 * architected offset 0x6000 + 8m: each to a vCPU other than vCPU 0 (whose
 * affinity is 0), or, with one vCPU, to an affinity no vCPU has (KVM keeps
 * it all the same).  A migration must carry these; QEMU's own path
 * cannot. */
static gboolean
route_high_spis (Vm *vm, GError **error)
{
  for (guint32 irq = vm->shape->nr_irqs / 2 + 1; irq < vm->shape->nr_irqs; irq++)
    {
      guint32 v = vm->n > 1 ? vm->mpidrs[1 + irq % (vm->n - 1)] & 0xffffff : 0x000005;

      if (!dev_set (vm->gic, KVM_DEV_ARM_VGIC_GRP_DIST_REGS,
                    vgic_attr (0, GICD_IROUTER + 8 * irq), &v, "GICD_IROUTER (high SPI)",
                    error))
        return FALSE;
    }
  return TRUE;
}

/* How many of @vm's registers, read one by one with every route, hold
 * another value than the record @want has: among the routes QEMU misses
 * (*@routes), and among the rest (the return value; G_MAXUINT when a
 * register is not in @want or cannot be read).  Registers, not records:
 * a VM whose high routes are all 0 encodes as version 1, without them. */
static guint
registers_differing (Vm *vm, GBytes *want, guint *routes)
{
  g_autoptr (VgicRecord) a = vgic_record_load (g_bytes_get_data (want, NULL),
                                               g_bytes_get_size (want), vm->shape, NULL);
  g_autoptr (VgicList) all = vgic_direct_save (vm->shape, vm->gic, VGIC_EXEC_SINGLE, TRUE,
                                               NULL, NULL);
  guint n = 0;

  *routes = 0;
  if (!a || !all)
    return G_MAXUINT;
  for (guint i = 0; i < all->len; i++)
    {
      const Entry *e = &all->entries[i];
      guint64 v;

      if (!vgic_values_lookup (a->values, e->group, e->attr, &v))
        return G_MAXUINT;
      if (v == e->value)
        continue;
      if (vgic_plan_is_route (vm->shape, e->group, e->attr))
        (*routes)++;
      else
        n++;
    }
  return n;
}

/* randomize() - read every register one by one, give each a random value
 * (mutate()), write them back one per KVM_SET_DEVICE_ATTR in the order
 * QEMU's put uses (clear-then-set pairs, configuration before pending...),
 * then make the hand-made spot writes, and route the SPIs QEMU cannot. */
static gboolean
randomize (Vm *vm, guint32 seed, GError **error)
{
  g_autoptr (GRand) rand = g_rand_new_with_seed (seed);
  g_autoptr (GBytes) now = qemu_save (vm, NULL, error);
  g_autoptr (VgicRecord) rec = NULL;
  g_autoptr (VgicList) mutated = NULL;
  g_autoptr (VgicValues) values = NULL;

  if (!now)
    return FALSE;
  rec = vgic_record_load (g_bytes_get_data (now, NULL), g_bytes_get_size (now), vm->shape,
                          error);
  if (!rec)
    return FALSE;
  mutated = vgic_list_new (0);
  for (gsize i = 0; i < vgic_values_size (rec->values); i++)
    {
      Entry e = *vgic_values_index (rec->values, i);
      e.value = mutate (vm, rand, &e);
      vgic_list_append (mutated, &e, 1);
    }
  values = vgic_values_new (mutated->entries, mutated->len, error);
  return values && qemu_restore_values (vm, values, NULL, error) && spot_write (vm, error) &&
         route_high_spis (vm, error);
}

/* ------------------------------------------------------------------ */
/* Comparing                                                          */
/* ------------------------------------------------------------------ */

/* Register for register: @got must hold exactly @want's registers and
 * values.  Prints up to 16 differences. */
static gboolean
same_state (Vm *vm, GBytes *want, GBytes *got, const char *what)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicRecord) a = NULL, b = NULL;
  guint diffs = 0;
  gsize na, nb;

  a = vgic_record_load (g_bytes_get_data (want, NULL), g_bytes_get_size (want), vm->shape,
                        &error);
  if (a)
    b = vgic_record_load (g_bytes_get_data (got, NULL), g_bytes_get_size (got), vm->shape,
                          &error);
  if (!a || !b)
    {
      FAIL ("%s: a record does not decode: %s", what, error->message);
      return FALSE;
    }
  na = vgic_values_size (a->values);
  nb = vgic_values_size (b->values);
  if (na != nb)
    {
      FAIL ("%s: %" G_GSIZE_FORMAT " registers, expected %" G_GSIZE_FORMAT, what, nb, na);
      return FALSE;
    }
  for (gsize i = 0; i < na; i++)
    {
      const Entry *x = vgic_values_index (a->values, i);
      const Entry *y = vgic_values_index (b->values, i);

      if (x->group == y->group && x->attr == y->attr && x->value == y->value)
        continue;
      if (diffs++ < 16)
        {
          g_autofree char *rx = vgic_reg_describe (x->group, x->attr);
          g_autofree char *ry = vgic_reg_describe (y->group, y->attr);
          g_printerr ("  %s: %s = 0x%" G_GINT64_MODIFIER "x, expected %s = 0x%"
                      G_GINT64_MODIFIER "x\n", what, ry, (guint64) y->value, rx, (guint64) x->value);
        }
    }
  if (diffs)
    {
      FAIL ("%s: %u of %" G_GSIZE_FORMAT " registers differ", what, diffs, na);
      return FALSE;
    }
  /* Canonical encoding: equal state gives equal bytes. */
  if (!g_bytes_equal (want, got))
    {
      FAIL ("%s: same registers but different record bytes", what);
      return FALSE;
    }
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* vgicd                                                              */
/* ------------------------------------------------------------------ */

static VgicdClient *
attach (const char *address, Vm *vm, const char *name, GError **error)
{
  g_autoptr (VgicdClient) c = vgicd_client_connect (address, opt_timeout_ms, error);

  if (!c || !vgicd_client_attach (c, vm->gic, name, NULL, vm->shape->nr_irqs, vm->n,
                                  vm->mpidrs, error))
    return NULL;
  return g_steal_pointer (&c);
}

/* Check what libvgicd reports about the path it took. */
static void
check_stats (const VgicdClientStats *st, gboolean want_batch, guint accesses, const char *what)
{
  if (st->batched != want_batch)
    FAIL ("%s: libvgicd says batched=%s, expected %s", what, st->batched ? "TRUE" : "FALSE",
          want_batch ? "TRUE" : "FALSE");
  if (accesses && st->entries != accesses)
    FAIL ("%s: %u accesses executed, a one-by-one run makes %u", what, st->entries, accesses);
  if (!want_batch && st->ioctls != st->entries)
    FAIL ("%s: %u ioctls for %u accesses on the one-by-one path", what, st->ioctls,
          st->entries);
  if (want_batch && st->ioctls > 2 + st->entries / VGICD_BATCH_CHUNK + 1)
    FAIL ("%s: %u ioctls for %u accesses on the batch path", what, st->ioctls, st->entries);
}

static gboolean
vgicd_save (const char *address, Vm *vm, const char *name, GBytes **record,
            VgicdClientStats *st, guint64 *ns, GError **error)
{
  g_autoptr (VgicdClient) c = attach (address, vm, name, error);
  guint64 t0;

  if (!c)
    return FALSE;
  t0 = now_ns ();
  if (!vgicd_client_save (c, record, error))
    return FALSE;
  *ns = now_ns () - t0;
  vgicd_client_get_stats (c, st);
  return TRUE;
}

static gboolean
vgicd_load (const char *address, Vm *vm, const char *name, GBytes *record,
            VgicdClientStats *st, guint64 *ns, GError **error)
{
  g_autoptr (VgicdClient) c = attach (address, vm, name, error);
  guint64 t0;

  if (!c)
    return FALSE;
  t0 = now_ns ();
  if (!vgicd_client_load (c, g_bytes_get_data (record, NULL), g_bytes_get_size (record),
                          error))
    return FALSE;
  *ns = now_ns () - t0;
  vgicd_client_get_stats (c, st);
  return TRUE;
}

/* ------------------------------------------------------------------ */
/* Queueing order (vgic-order-check.h)                                */
/* ------------------------------------------------------------------ */

/* vm_new_checked() - vm_new() for a VM whose queues will be checked: its
 * vgic-state must be its own.  KVM names a VM's debugfs folder after the
 * creating pid and the VM's fd number and makes none when the name is
 * taken, so a VM whose fd number an earlier VM had, still alive because
 * vgicd has not closed its copy of the vGIC fd yet, would show the earlier
 * VM's file; then close it and try again once that VM has gone. */
static Vm *
vm_new_checked (int kvm, guint n, guint32 nr_irqs, GError **error)
{
  for (guint attempt = 1;; attempt++)
    {
      g_autoptr (GError) why = NULL;
      g_autoptr (Vm) vm = vm_new (kvm, n, nr_irqs, error);

      if (!vm)
        return NULL;
      /* Without a vgic-state the check itself says so, loudly. */
      if (vgic_order_fresh (vm->vm, vm->shape, &why) ||
          !g_error_matches (why, G_IO_ERROR, G_IO_ERROR_EXISTS))
        return g_steal_pointer (&vm);
      if (attempt == 50)
        {
          g_propagate_prefixed_error (error, g_steal_pointer (&why), "after %u attempts: ",
                                      attempt);
          return NULL;
        }
      g_usleep (100000);
    }
}

/* The order check's summary of @r, for a line of its own. */
static char *
order_figures (const VgicOrderResult *r)
{
  return g_strdup_printf ("SPIs %u: %u edge pending, %u level by line only, %u active, of "
                          "them %u/%u/%u routed off vCPU 0; private %u; %u queued though not "
                          "deliverable", r->spis, r->spi_edge, r->spi_level, r->spi_active,
                          r->off0_edge, r->off0_level, r->off0_active,
                          r->deliverable - r->spis, r->stray);
}

/* order_check() - after a restore through vgicd into @dst, whose registers
 * read back one by one are @readback: every IRQ they make deliverable must
 * be queued on its target's list.  A check over a state without
 * deliverable edge, level (line high) and active SPIs routed to a vCPU
 * other than 0 proves nothing about R0, R2 and R3, and fails. */
static void
order_check (Vm *dst, GBytes *readback, const char *what)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicRecord) rec = vgic_record_load (g_bytes_get_data (readback, NULL),
                                                 g_bytes_get_size (readback), dst->shape,
                                                 &error);
  g_autofree char *path = vgic_order_state_path (dst->vm);
  g_autofree char *figures = NULL;
  VgicOrderResult r;

  if (!rec)
    {
      FAIL ("order check: %s: the read-back does not decode: %s", what, error->message);
      return;
    }
  if (!vgic_order_check (dst->vm, dst->shape, rec->values, &r, &error))
    {
      /* Both kernels the tier boots have debugfs (arm64-nested.config,
       * Debian's config) and init.sh mounts it: its absence is a failure. */
      if (g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_NOENT))
        FAIL ("order check: %s: skipped: no vgic-state (%s; is debugfs mounted, "
              "CONFIG_DEBUG_FS on?)", what, error->message);
      else
        FAIL ("order check: %s %s: %s", path, what, error->message);
      return;
    }
  figures = order_figures (&r);
  if (!r.off0_edge || !r.off0_level || !r.off0_active)
    FAIL ("order check: %s %s: %u interrupts deliverable, too few kinds to show the rules "
          "(%s)", path, what, r.deliverable, figures);
  else
    g_print ("order check: %s %s: %u interrupts deliverable, all queued on their targets "
             "(%s)\n", path, what, r.deliverable, figures);
}

/* order_control() - the negative control: @state (the saved record's)
 * written into a fresh VM with raw single writes, the planner's order but
 * for the writes @brk moves last.  The check must fail on that VM: with
 * the routes last (R3) the SPIs queued before them stay on vCPU 0's list;
 * with GICD_CTLR last (R0) no pending IRQ is queued, only active ones; with
 * the SPIs' ICFGR last (R2) no level SPI pending by its line alone is (it
 * was edge-triggered when its line was written).  When the check passes,
 * the rule is not observable on this kernel, or the check blind to it. */
static void
order_control (int kvm, Vm *src, const VgicValues *state, VgicOrderBreak brk)
{
  static const char *const rules[] = {
    [VGIC_ORDER_BREAK_R3] = "R3", [VGIC_ORDER_BREAK_R0] = "R0", [VGIC_ORDER_BREAK_R2] = "R2",
  };
  static const char *const hows[] = {
    [VGIC_ORDER_BREAK_R3] = "every GICD_IROUTER write last",
    [VGIC_ORDER_BREAK_R0] = "GICD_CTLR last",
    [VGIC_ORDER_BREAK_R2] = "every GICD_ICFGR write last",
  };
  const char *rule = rules[brk], *how = hows[brk];
  g_autoptr (GError) error = NULL;
  g_autoptr (Vm) dst = vm_new_checked (kvm, src->n, src->shape->nr_irqs, &error);
  g_autoptr (GBytes) got = NULL;
  g_autoptr (VgicRecord) rec = NULL;
  g_autofree char *figures = NULL;
  VgicOrderResult r;
  guint writes;

  if (!dst)
    {
      FAIL ("order control %s: N=%u: fresh VM: %s", rule, src->n, error->message);
      return;
    }
  if (!vgic_order_restore_broken (dst->gic, dst->shape, state, brk, &writes, &error))
    {
      FAIL ("order control %s: N=%u: restore with %s: %s", rule, src->n, how, error->message);
      return;
    }
  got = full_save (dst, &error);
  if (got)
    rec = vgic_record_load (g_bytes_get_data (got, NULL), g_bytes_get_size (got), dst->shape,
                            &error);
  if (!rec)
    {
      FAIL ("order control %s: N=%u: reading back: %s", rule, src->n, error->message);
      return;
    }
  g_print ("    order control %s: %u raw single writes, %s; the check must fail:\n", rule,
           writes, how);
  if (vgic_order_check (dst->vm, dst->shape, rec->values, &r, &error))
    {
      figures = order_figures (&r);
      FAIL ("order control %s: N=%u: 0 misplaced of %u deliverable: %s is not observable "
            "on this kernel, or the check cannot see it (%s)", rule, src->n, r.deliverable,
            rule, figures);
    }
  else if (r.disagree || (!r.misplaced && !r.unqueued))
    FAIL ("order control %s: N=%u: the check failed for another reason: %s", rule, src->n,
          error->message);
  else
    g_print ("order control %s: N=%u: %u misplaced (%u on another vCPU's list, %u on none, "
             "of %u deliverable): check fails as it must\n", rule, src->n,
             r.misplaced + r.unqueued, r.misplaced, r.unqueued, r.deliverable);
}

/* set_pending_only() - QEMU 10.2's put order on this kernel: @state (the
 * saved record's) written into a fresh VM one register per ioctl, the
 * planner's order without the pending clear-alls (VGIC_PUT_SET_PENDING).
 * vgicd accepts a list of that order from QEMU because the kernel's
 * user-space ISPENDR write replaces the latch (rule R5); then the VM read
 * back must be @full, the source's whole register file, and every
 * deliverable interrupt must be queued on its target. */
static void
set_pending_only (int kvm, Vm *src, const VgicValues *state, GBytes *full)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (Vm) dst = vm_new_checked (kvm, src->n, src->shape->nr_irqs, &error);
  g_autoptr (VgicList) plan = NULL;
  g_autoptr (GBytes) got = NULL;
  g_autofree char *what = g_strdup_printf ("N=%u, QEMU 10.2's put order (no pending "
                                           "clear-alls), one by one", src->n);
  guint writes;

  if (dst)
    plan = vgic_plan_restore_write_in (dst->shape, state, TRUE, VGIC_PUT_SET_PENDING, &error);
  if (!plan || !vgic_order_write (dst->gic, plan, &writes, &error) ||
      !(got = full_save (dst, &error)))
    {
      FAIL ("%s: %s", what, error->message);
      return;
    }
  if (same_state (dst, full, got, what))
    g_print ("    %s: %u writes, the source's %" G_GSIZE_FORMAT "-byte register file "
             "read back\n", what, writes, g_bytes_get_size (full));
  order_check (dst, got, what);
}

/* ------------------------------------------------------------------ */
/* One VM size                                                        */
/* ------------------------------------------------------------------ */

/* The three paths a save or a restore can take. */
typedef enum {
  PATH_AUTO,	/* libvgicd + vgicd mode auto: the batch group when the kernel has it */
  PATH_SINGLE,	/* libvgicd + vgicd mode single */
  PATH_QEMU,	/* one register per ioctl, no vgicd: QEMU 10.0 */
} Path;

static const char *const path_names[] = { "vgicd-auto", "vgicd-single", "one-by-one" };

static GBytes *
save_by (Path p, Vm *vm, guint64 *ns, VgicdClientStats *st, guint *accesses, GError **error)
{
  GBytes *record = NULL;
  guint64 t0;

  memset (st, 0, sizeof (*st));
  if (p == PATH_QEMU)
    {
      t0 = now_ns ();
      record = qemu_save (vm, accesses, error);
      *ns = now_ns () - t0;
      return record;
    }
  if (!vgicd_save (p == PATH_AUTO ? opt_auto : opt_single, vm, "src", &record, st, ns, error))
    return NULL;
  return record;
}

static gboolean
load_by (Path p, Vm *vm, GBytes *record, guint64 *ns, VgicdClientStats *st, guint *accesses,
         GError **error)
{
  guint64 t0;
  gboolean ok;

  memset (st, 0, sizeof (*st));
  if (p == PATH_QEMU)
    {
      t0 = now_ns ();
      ok = qemu_restore (vm, record, accesses, error);
      *ns = now_ns () - t0;
      return ok;
    }
  return vgicd_load (p == PATH_AUTO ? opt_auto : opt_single, vm, path_names[p], record, st,
                     ns, error);
}

/* More timed runs of a path, for the best time: up to --repeat runs in all,
 * stopping once the path has taken --repeat-budget-ms (so a one-by-one run
 * of seconds is made once, a batch of milliseconds several times). */
static gboolean
more_runs (guint runs, guint64 spent)
{
  return runs < (guint) MAX (opt_repeat, 1) && spent < (guint64) opt_repeat_budget_ms * 1000000u;
}

typedef struct {
  guint n;
  guint save_regs, restore_regs;
  guint64 save[3], load[3];		/* best wall time per Path, ns */
  guint64 save_first[3], load_first[3];	/* first run */
  guint save_runs[3], load_runs[3];
  VgicdClientStats save_st, load_st;	/* PATH_AUTO, best run */
  gboolean ok;
} Row;

static gboolean
same_mpidrs (const Vm *a, const Vm *b)
{
  return memcmp (a->mpidrs, b->mpidrs, a->n * sizeof (guint32)) == 0;
}

/* Save @src by @p: the record must equal @ref register for register (and
 * hold the spot values); then time more saves. */
static GBytes *
time_save (Path p, Vm *src, GBytes *ref, gboolean kernel_batch, Row *row)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *what = g_strdup_printf ("N=%u save via %s", src->n, path_names[p]);
  VgicdClientStats st;
  GBytes *first;
  guint64 ns, spent;

  first = save_by (p, src, &ns, &st, p == PATH_QEMU ? &row->save_regs : NULL, &error);
  if (!first)
    {
      FAIL ("%s: %s", what, error->message);
      return NULL;
    }
  /* vgicd's save for its record also reads the routes QEMU misses. */
  if (p != PATH_QEMU)
    check_stats (&st, p == PATH_AUTO && kernel_batch,
                 row->save_regs + vgic_plan_route_count (src->shape), what);
  if (ref)
    same_state (src, ref, first, what);
  spot_check (src, first, what);
  row->save[p] = row->save_first[p] = spent = ns;
  row->save_runs[p] = 1;
  if (p == PATH_AUTO)
    row->save_st = st;
  while (more_runs (row->save_runs[p], spent))
    {
      g_autoptr (GBytes) again = save_by (p, src, &ns, &st, NULL, &error);
      if (!again)
        {
          FAIL ("%s (run %u): %s", what, row->save_runs[p] + 1, error->message);
          break;
        }
      if (!g_bytes_equal (again, first))
        FAIL ("%s (run %u): a different record", what, row->save_runs[p] + 1);
      row->save_runs[p]++;
      spent += ns;
      if (ns < row->save[p])
        {
          row->save[p] = ns;
          if (p == PATH_AUTO)
            row->save_st = st;
        }
    }
  return first;
}

/* Load @record by @p into a fresh VM of @src's size; a one-by-one read of
 * its whole register file must equal @full, the source's (through vgicd),
 * or differ in the routes QEMU misses only, every one of them (QEMU's own
 * path).  More loads into the same VM are timed afterwards (only the first
 * is compared: a repeated load could hide an ordering bug). */
static void
time_load (Path p, int kvm, Vm *src, GBytes *record, GBytes *full, gboolean kernel_batch,
           Row *row)
{
  g_autoptr (GError) error = NULL;
  /* vgicd's restores get their queues checked: a VM with its own vgic-state. */
  g_autoptr (Vm) dst = p == PATH_QEMU ? vm_new (kvm, src->n, src->shape->nr_irqs, &error)
                                      : vm_new_checked (kvm, src->n, src->shape->nr_irqs,
                                                        &error);
  g_autoptr (GBytes) got = NULL;
  g_autofree char *what = g_strdup_printf ("N=%u restore via %s", src->n, path_names[p]);
  VgicdClientStats st;
  guint accesses = 0;
  guint64 ns, spent;

  if (!dst)
    {
      FAIL ("%s: second VM: %s", what, error->message);
      return;
    }
  if (!same_mpidrs (src, dst))
    {
      FAIL ("%s: the fresh VM's MPIDRs differ from the source's", what);
      return;
    }
  if (!load_by (p, dst, record, &ns, &st, &accesses, &error))
    {
      FAIL ("%s: %s", what, error->message);
      return;
    }
  /* vgicd's restore makes n more accesses than the one-by-one one: its
   * guards read every vCPU's ICC_CTLR_EL1 and check it against the record
   * before the first write (docs/protocol.md, Load). */
  if (p == PATH_QEMU)
    row->restore_regs = accesses;
  else	/* and the routes QEMU misses, from a version 2 record */
    check_stats (&st, p == PATH_AUTO && kernel_batch,
                 row->restore_regs + src->n + vgic_plan_route_count (src->shape), what);
  if (opt_inject && p == PATH_AUTO)
    {
      /* The comparison below must catch this. */
      guint32 v = 0x08080808;
      g_print ("    injecting a mismatch: GICD_IPRIORITYR10 of the restored VM := 0x%08x\n", v);
      if (!dev_set (dst->gic, KVM_DEV_ARM_VGIC_GRP_DIST_REGS, vgic_attr (0, GICD_IPRIORITYR + 40),
                    &v, "inject", &error))
        FAIL ("%s: %s", what, error->message);
    }
  if (p == PATH_QEMU)
    {
      const guint high = vgic_plan_route_count (src->shape);
      guint lost = 0, others = registers_differing (dst, full, &lost);

      if (others != 0 || lost != high)
        FAIL ("%s: %u registers differ but for the high SPI routes, and %u of those %u "
              "(QEMU's path should lose them all, and only them)", what, others, lost, high);
      else
        g_print ("    one-by-one (QEMU 10.0's path): every register arrived but the %u routes "
                 "of SPIs %u-%u, all lost\n", high, src->shape->nr_irqs / 2 + 1,
                 src->shape->nr_irqs - 1);
    }
  else if (!(got = full_save (dst, &error)))
    {
      FAIL ("%s: reading back: %s", what, error->message);
      return;
    }
  else
    {
      same_state (dst, full, got, what);
      /* Before the timed reloads: a second load finds the IRQs already
       * queued, so it would hide where the first one put them. */
      order_check (dst, got, what);
    }

  row->load[p] = row->load_first[p] = spent = ns;
  row->load_runs[p] = 1;
  if (p == PATH_AUTO)
    row->load_st = st;
  while (more_runs (row->load_runs[p], spent))
    {
      if (!load_by (p, dst, record, &ns, &st, &accesses, &error))
        {
          FAIL ("%s (run %u): %s", what, row->load_runs[p] + 1, error->message);
          return;
        }
      row->load_runs[p]++;
      spent += ns;
      if (ns < row->load[p])
        {
          row->load[p] = ns;
          if (p == PATH_AUTO)
            row->load_st = st;
        }
    }
}

static void
run_size (int kvm, guint n, gboolean kernel_batch, Row *row)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (Vm) src = NULL;
  g_autoptr (GBytes) ref = NULL, full = NULL, again = NULL, rec_auto = NULL, rec_single = NULL;
  guint64 t0;
  guint before = failures;

  memset (row, 0, sizeof (*row));
  row->n = n;
  g_print ("--- N=%u vCPUs, %d IRQs\n", n, opt_irqs);

  t0 = now_ns ();
  src = vm_new (kvm, n, (guint32) opt_irqs, &error);
  if (!src)
    {
      FAIL ("N=%u: creating the VM: %s", n, error->message);
      return;
    }
  g_print ("    VM created in %.0f ms\n", ms (now_ns () - t0));
  if (opt_source_ran)
    {
      if (!vm_run_once (kvm, src, &error))
        {
          FAIL ("N=%u: running the source VM once: %s", n, error->message);
          return;
        }
      g_print ("    source VM ran once (KVM_RUN, immediate exit); the destination never runs\n");
    }
  if (vgicd_client_probe_batch (src->gic) != (kernel_batch ? 1 : 0))
    FAIL ("N=%u: libvgicd's probe says %d, expected %d", n,
          vgicd_client_probe_batch (src->gic), kernel_batch);

  t0 = now_ns ();
  if (!randomize (src, (guint32) opt_seed + n, &error))
    {
      FAIL ("N=%u: putting random state in: %s", n, error->message);
      return;
    }
  g_print ("    random state written one by one in %.0f ms\n", ms (now_ns () - t0));

  /* a. Save three ways; they must agree register for register.  The
   * one-by-one save is QEMU's (and counts the accesses); vgicd's record
   * must also hold every route QEMU misses: it must equal @full, the whole
   * register file read one by one (a version 2 record). */
  full = full_save (src, &error);
  if (!full)
    {
      FAIL ("N=%u: %s", n, error->message);
      return;
    }
  ref = time_save (PATH_QEMU, src, NULL, kernel_batch, row);
  if (!ref)
    return;
  rec_auto = time_save (PATH_AUTO, src, full, kernel_batch, row);
  rec_single = time_save (PATH_SINGLE, src, full, kernel_batch, row);
  if (!rec_auto || !rec_single)
    return;
  {
    g_autoptr (VgicRecord) r = vgic_record_decode (g_bytes_get_data (rec_auto, NULL),
                                                   g_bytes_get_size (rec_auto), NULL);

    if (!r || r->version != VGIC_RECORD_VERSION_ROUTES)
      FAIL ("N=%u: vgicd's record is not version %u, with the high SPI routes", n,
            VGIC_RECORD_VERSION_ROUTES);
  }

  /* Saving must not have changed anything. */
  again = full_save (src, &error);
  if (!again)
    FAIL ("N=%u: re-reading the source: %s", n, error->message);
  else
    same_state (src, full, again, "source after the saves");

  /* b. Restore into fresh VMs (same N, same MPIDRs) by each path.  The
   * one-by-one restore first: it counts the accesses a restore makes. */
  time_load (PATH_QEMU, kvm, src, ref, full, kernel_batch, row);
  time_load (PATH_AUTO, kvm, src, rec_auto, full, kernel_batch, row);
  time_load (PATH_SINGLE, kvm, src, rec_single, full, kernel_batch, row);

  /* c. The order check's negative controls, from vgicd's record. */
  {
    g_autoptr (VgicRecord) r = vgic_record_load (g_bytes_get_data (rec_auto, NULL),
                                                 g_bytes_get_size (rec_auto), src->shape,
                                                 &error);

    if (!r)
      FAIL ("N=%u: vgicd's record does not load: %s", n, error->message);
    else
      {
        order_control (kvm, src, r->values, VGIC_ORDER_BREAK_R3);
        order_control (kvm, src, r->values, VGIC_ORDER_BREAK_R0);
        order_control (kvm, src, r->values, VGIC_ORDER_BREAK_R2);
        /* d. QEMU 10.2's put order, which vgicd accepts too. */
        set_pending_only (kvm, src, r->values, full);
      }
  }

  row->ok = failures == before;
  g_print ("    %s: save %u registers, restore %u accesses; runs (auto/single/1-by-1) "
           "save %u/%u/%u restore %u/%u/%u\n",
           row->ok ? "agree" : "MISMATCH", row->save_regs, row->restore_regs,
           row->save_runs[PATH_AUTO], row->save_runs[PATH_SINGLE], row->save_runs[PATH_QEMU],
           row->load_runs[PATH_AUTO], row->load_runs[PATH_SINGLE], row->load_runs[PATH_QEMU]);
  g_print ("    first runs, ms (auto/single/1-by-1): save %.1f/%.1f/%.1f restore "
           "%.1f/%.1f/%.1f\n",
           ms (row->save_first[PATH_AUTO]), ms (row->save_first[PATH_SINGLE]),
           ms (row->save_first[PATH_QEMU]), ms (row->load_first[PATH_AUTO]),
           ms (row->load_first[PATH_SINGLE]), ms (row->load_first[PATH_QEMU]));
}

/* ------------------------------------------------------------------ */

/* After the runs: vgicd logged the path each operation took. */
static void
check_vgicd_log_paths (gboolean kernel_batch)
{
  g_autofree char *log = NULL;
  const char *want = kernel_batch ? "ioctls (batch)"
                                  : "the kernel has no vGIC batch group; running one register "
                                    "per ioctl";

  if (!opt_vgicd_log)
    return;
  if (!g_file_get_contents (opt_vgicd_log, &log, NULL, NULL))
    FAIL ("cannot read vgicd's log %s", opt_vgicd_log);
  else if (!strstr (log, want))
    FAIL ("vgicd's log (%s) lacks \"%s\"", opt_vgicd_log, want);
  else if (kernel_batch && strstr (log, "ioctls (single)"))
    FAIL ("vgicd (mode auto) logged a one-by-one operation on a kernel with the batch group");
  else
    g_print ("vgicd (mode auto) logged its operations as \"%s\"\n", want);
}

static gboolean
check_vgicd_log (gboolean kernel_batch)
{
  g_autofree char *log = NULL;
  const char *want = kernel_batch ? "kernel batch group: yes" : "kernel batch group: no";

  if (!opt_vgicd_log)
    return TRUE;
  if (!g_file_get_contents (opt_vgicd_log, &log, NULL, NULL))
    {
      FAIL ("cannot read vgicd's log %s", opt_vgicd_log);
      return FALSE;
    }
  if (!strstr (log, want))
    {
      FAIL ("vgicd's log (%s) lacks \"%s\"", opt_vgicd_log, want);
      return FALSE;
    }
  g_print ("vgicd's start-up probe: \"%s\" (from %s)\n", want, opt_vgicd_log);
  return TRUE;
}

/* vgicd's start-up calibration (daemon/vgicd-calibrate.c), from its log:
 * one register per ioctl costs *@base + n × *@per ns on a VM of n vCPUs. */
static gboolean
vgicd_calibration (double *base, double *per)
{
  g_autofree char *log = NULL;
  const char *at;

  if (!opt_vgicd_log || !g_file_get_contents (opt_vgicd_log, &log, NULL, NULL) ||
      !(at = strstr (log, "one register per ioctl costs ")))
    return FALSE;
  return sscanf (at, "one register per ioctl costs %lf ns + %lf ns per vCPU", base, per) == 2;
}

static double
ratio (guint64 slow, guint64 fast)
{
  return (double) slow / (double) MAX (fast, 1);
}

/* Where a one-by-one access's time goes, at 8 to 512 vCPUs: vgicd's
 * calibrated line a + b x n (ns; daemon/vgicd-calibrate.c) splits into the
 * all-vCPU lock (b x n: every access takes each vCPU's mutex), the
 * register's own work (c: what the same access costs inside a batch, the
 * kernel time of the largest batched save over its registers) and the
 * rest of a call (a - c: the system call, the attribute's copy and decode,
 * kvm->lock).  A batch pays the lock and the call once per ioctl instead
 * of once per register, so the first and last columns are its gain; the
 * lock's share is also what skipping the vCPU locks alone would save. */
static void
print_split (const Row *rows, guint n_rows, double a, double b, gboolean kernel_batch)
{
  static const guint sizes[] = { 8, 16, 32, 64, 128, 256, 512 };
  double c = 0;

  for (guint i = 0; i < n_rows; i++)
    if (kernel_batch && rows[i].save_st.ioctls && rows[i].save_regs)
      c = (double) rows[i].save_st.kernel_ns / rows[i].save_regs;
  if (c > a)
    c = a;
  g_print ("\nWhere a one-by-one access's time goes (vgicd's calibration: %.0f ns + %.1f ns "
           "per vCPU; %s):\n", a, b,
           c > 0 ? "the register's own work from the largest batched save's kernel time"
                 : "no batch here, so the call and the register's work are one column");
  if (c > 0)
    g_print ("%-6s %10s | %12s %12s %12s\n", "vCPUs", "ns/access", "vCPU locks", "call",
             "register");
  else
    g_print ("%-6s %10s | %12s %16s\n", "vCPUs", "ns/access", "vCPU locks", "call + register");
  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
    {
      double lock = b * sizes[i], total = a + lock;

      if (c > 0)
        g_print ("%-6u %10.0f | %11.1f%% %11.1f%% %11.1f%%\n", sizes[i], total,
                 100 * lock / total, 100 * (a - c) / total, 100 * c / total);
      else
        g_print ("%-6u %10.0f | %11.1f%% %15.1f%%\n", sizes[i], total, 100 * lock / total,
                 100 * a / total);
    }
  if (c > 0)
    g_print ("(register: %.0f ns an access inside a batch, measured; every row is the "
             "calibrated line at that size, not a run of it)\n", c);
  g_print ("NESTED-SPLIT: {\"base_ns\": %.1f, \"per_vcpu_ns\": %.2f, \"register_ns\": %.1f}\n",
           a, b, c);
}

static void
print_table (const Row *rows, guint n_rows, gboolean kernel_batch)
{
  const char *a = kernel_batch ? "batch" : "auto*";
  double base = 0, per = 0;

  g_print ("\n%-6s %6s %6s | %9s %9s %9s %7s %7s | %9s %9s %9s %7s %7s\n", "vCPUs", "save",
           "rest.", "save", "save", "save", "ratio", "ratio", "restore", "restore", "restore",
           "ratio", "ratio");
  g_print ("%-6s %6s %6s | %9s %9s %9s %7s %7s | %9s %9s %9s %7s %7s\n", "", "regs", "regs",
           a, "single", "1-by-1", "1b1/b", "sgl/b", a, "single", "1-by-1", "1b1/b", "sgl/b");
  g_print ("%-6s %6s %6s | %9s %9s %9s %7s %7s | %9s %9s %9s %7s %7s\n", "", "", "",
           "vgicd ms", "vgicd ms", "no vgicd", "", "", "vgicd ms", "vgicd ms", "no vgicd", "",
           "");
  for (guint i = 0; i < n_rows; i++)
    {
      const Row *r = &rows[i];
      g_print ("%-6u %6u %6u | %9.1f %9.1f %9.1f %6.1fx %6.1fx | %9.1f %9.1f %9.1f %6.1fx "
               "%6.1fx%s\n",
               r->n, r->save_regs, r->restore_regs, ms (r->save[PATH_AUTO]),
               ms (r->save[PATH_SINGLE]), ms (r->save[PATH_QEMU]),
               ratio (r->save[PATH_QEMU], r->save[PATH_AUTO]),
               ratio (r->save[PATH_SINGLE], r->save[PATH_AUTO]), ms (r->load[PATH_AUTO]),
               ms (r->load[PATH_SINGLE]), ms (r->load[PATH_QEMU]),
               ratio (r->load[PATH_QEMU], r->load[PATH_AUTO]),
               ratio (r->load[PATH_SINGLE], r->load[PATH_AUTO]), r->ok ? "" : "  MISMATCH");
    }
  g_print ("(%s: libvgicd + vgicd mode auto%s; single: vgicd mode single; 1-by-1: one "
           "register per ioctl without vgicd, as QEMU 10.0 does.  Wall clock under TCG, "
           "save and restore as QEMU would call them (vgicd attached beforehand), best of up "
           "to %d runs per path, fewer once a path has taken %d ms)\n", a,
           kernel_batch ? ", kernel batch group" : " on a kernel without the batch group: "
           "the fallback, one by one", MAX (opt_repeat, 1), opt_repeat_budget_ms);
  /* What vgicd would tell an operator a one-by-one save or restore of each
   * VM costs (registers x its calibrated line), next to what one took. */
  if (vgicd_calibration (&base, &per))
    for (guint i = 0; i < n_rows; i++)
      g_print ("N=%u: vgicd's one-by-one estimate (calibrated: %.0f ns + %.1f ns per vCPU an "
               "access): save %.1f ms, restore %.1f ms; measured one by one: %.1f / %.1f ms\n",
               rows[i].n, base, per, rows[i].save_regs * (base + per * rows[i].n) / 1e6,
               rows[i].restore_regs * (base + per * rows[i].n) / 1e6,
               ms (rows[i].save[PATH_QEMU]), ms (rows[i].load[PATH_QEMU]));
  else
    g_print ("vgicd logged no calibration (its log: %s)\n", opt_vgicd_log ? opt_vgicd_log : "none");
  if (base > 0)
    print_split (rows, n_rows, base, per, kernel_batch);
  /* The same rows for bench/report.py (run-nested.sh collects them into
   * ROLE-rows.jsonl): best wall times in ms, by path. */
  for (guint i = 0; i < n_rows; i++)
    {
      const Row *r = &rows[i];

      g_print ("NESTED-ROW: {\"vcpus\": %u, \"save_regs\": %u, \"restore_regs\": %u, "
               "\"save_ms\": {\"%s\": %.3f, \"single\": %.3f, \"qemu\": %.3f}, "
               "\"restore_ms\": {\"%s\": %.3f, \"single\": %.3f, \"qemu\": %.3f}, "
               "\"ok\": %s}\n", r->n, r->save_regs, r->restore_regs,
               kernel_batch ? "batch" : "auto", ms (r->save[PATH_AUTO]), ms (r->save[PATH_SINGLE]),
               ms (r->save[PATH_QEMU]), kernel_batch ? "batch" : "auto", ms (r->load[PATH_AUTO]),
               ms (r->load[PATH_SINGLE]), ms (r->load[PATH_QEMU]), r->ok ? "true" : "false");
    }
  for (guint i = 0; i < n_rows; i++)
    if (kernel_batch && rows[i].save_st.ioctls)
      g_print ("N=%u batch path: save %u ioctls, %.1f of %.1f ms in the kernel (1-by-1 / "
               "kernel time %.1fx); restore %u ioctls, %.1f of %.1f ms in the kernel (%.1fx)\n",
               rows[i].n, rows[i].save_st.ioctls, ms (rows[i].save_st.kernel_ns),
               ms (rows[i].save[PATH_AUTO]),
               ratio (rows[i].save[PATH_QEMU], rows[i].save_st.kernel_ns),
               rows[i].load_st.ioctls, ms (rows[i].load_st.kernel_ns),
               ms (rows[i].load[PATH_AUTO]),
               ratio (rows[i].load[PATH_QEMU], rows[i].load_st.kernel_ns));
}

int
main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- the nested tier's vGIC test");
  g_auto (GStrv) sizes = NULL;
  g_autofree Row *rows = NULL;
  gboolean kernel_batch;
  guint n_rows;
  int kvm;
  GOptionEntry entries[] = {
    { "vcpus", 'n', 0, G_OPTION_ARG_STRING, &opt_vcpus, "VM sizes (default 4,64,256)", "N,N" },
    { "irqs", 0, 0, G_OPTION_ARG_INT, &opt_irqs, "IRQs per VM (default 288)", "N" },
    { "seed", 0, 0, G_OPTION_ARG_INT, &opt_seed, "Random state seed", "N" },
    { "expect-batch", 0, 0, G_OPTION_ARG_STRING, &opt_expect,
      "Whether the kernel has the batch group (required)", "yes|no" },
    { "vgicd", 0, 0, G_OPTION_ARG_STRING, &opt_auto, "vgicd (Mode=auto) address", "ADDR" },
    { "vgicd-single", 0, 0, G_OPTION_ARG_STRING, &opt_single,
      "vgicd (Mode=single) address", "ADDR" },
    { "vgicd-log", 0, 0, G_OPTION_ARG_FILENAME, &opt_vgicd_log,
      "The Mode=auto vgicd's log, for its start-up probe line", "FILE" },
    { "timeout-ms", 0, 0, G_OPTION_ARG_INT, &opt_timeout_ms, "libvgicd call timeout", "MS" },
    { "target", 0, 0, G_OPTION_ARG_DOUBLE, &opt_target,
      "Target ratio one-by-one / batch (default 30)", "X" },
    { "target-vcpus", 0, 0, G_OPTION_ARG_INT, &opt_target_vcpus,
      "VM size the target applies to (default 256)", "N" },
    { "repeat", 0, 0, G_OPTION_ARG_INT, &opt_repeat,
      "Timed runs per path, best kept (default 5)", "N" },
    { "repeat-budget-ms", 0, 0, G_OPTION_ARG_INT, &opt_repeat_budget_ms,
      "No more runs of a path once it has taken this long (default 1500)", "MS" },
    { "inject-mismatch", 0, 0, G_OPTION_ARG_NONE, &opt_inject,
      "Self-check: change one register after each vgicd-auto restore (the run must fail)",
      NULL },
    { "source-never-ran", 0, G_OPTION_FLAG_REVERSE, G_OPTION_ARG_NONE, &opt_source_ran,
      "Do not KVM_RUN the source VM once before saving (a source that never ran, as "
      "before the MPIDR table of Linux 6.7)", NULL },
    { "enforce-target", 0, 0, G_OPTION_ARG_NONE, &opt_enforce,
      "Fail when the target is missed (default: report only)", NULL },
    { NULL }
  };

  setvbuf (stdout, NULL, _IOLBF, 0);
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    {
      g_printerr ("vgic-nested-test: %s\n", error->message);
      return 2;
    }
  if (!opt_expect || (!g_str_equal (opt_expect, "yes") && !g_str_equal (opt_expect, "no")) ||
      !opt_auto || !opt_single)
    {
      g_printerr ("vgic-nested-test: --expect-batch yes|no, --vgicd and --vgicd-single are "
                  "required\n");
      return 2;
    }
  kernel_batch = g_str_equal (opt_expect, "yes");
  sizes = g_strsplit (opt_vcpus ? opt_vcpus : "4,64,256", ",", -1);
  n_rows = g_strv_length (sizes);
  rows = g_new0 (Row, n_rows);

  kvm = open ("/dev/kvm", O_RDWR | O_CLOEXEC);
  if (kvm < 0)
    {
      g_printerr ("FAIL: /dev/kvm: %s\n", g_strerror (errno));
      return 1;
    }
  g_print ("vgic-nested-test: expecting a kernel %s the batch group; KVM_CAP_MAX_VCPUS %d\n",
           kernel_batch ? "with" : "without", ioctl (kvm, KVM_CHECK_EXTENSION, KVM_CAP_MAX_VCPUS));
  check_vgicd_log (kernel_batch);

  for (guint i = 0; i < n_rows; i++)
    {
      guint64 n = g_ascii_strtoull (sizes[i], NULL, 10);
      if (n == 0 || n > 512)
        {
          g_printerr ("vgic-nested-test: bad VM size \"%s\"\n", sizes[i]);
          return 2;
        }
      run_size (kvm, (guint) n, kernel_batch, &rows[i]);
    }
  check_vgicd_log_paths (kernel_batch);
  print_table (rows, n_rows, kernel_batch);

  if (kernel_batch)
    for (guint i = 0; i < n_rows; i++)
      if (rows[i].n == (guint) opt_target_vcpus && rows[i].ok)
        {
          double rs = ratio (rows[i].save[PATH_QEMU], rows[i].save[PATH_AUTO]);
          double rl = ratio (rows[i].load[PATH_QEMU], rows[i].load[PATH_AUTO]);
          gboolean met = rs >= opt_target && rl >= opt_target;

          g_print ("target at %u vCPUs, one-by-one / batch through vgicd >= %.0fx: save "
                   "%.1fx, restore %.1fx: %s\n", rows[i].n, opt_target, rs, rl,
                   met ? "MET" : "MISSED");
          if (!met && opt_enforce)
            FAIL ("target missed at %u vCPUs", rows[i].n);
        }
  close (kvm);
  if (failures)
    g_print ("vgic-nested-test: %u failure(s)\n", failures);
  else
    g_print ("vgic-nested-test: all checks passed\n");
  return failures ? 1 : 0;
}

#endif /* __aarch64__ */
