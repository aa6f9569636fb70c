/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-sim-batch.c - one test per rule of the batch group
 * (docs/kernel-interface.md), through real ioctl(2) calls on a sim fd.
 */
#include <errno.h>
#include <linux/kvm.h>

#include <string.h>

#include "sim-util.h"

#define D(off) vgic_attr (0, (off))
#define R(sim, cpu, off) vgic_attr (vgic_sim_get_mpidr ((sim), (cpu)), (off))

static struct kvm_vgic_batch_entry
ent (guint32 group, guint64 attr, guint64 value)
{
  struct kvm_vgic_batch_entry e = { .group = group, .error = 0x77, .attr = attr, .value = value };

  return e;
}

static void
test_probe (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);

  struct kvm_vgic_batch_entry e = ent (GRP_DIST, D (GICD_CTLR), 0);
  struct kvm_vgic_batch b = { .nr_entries = 1, .entries = (guint64) (uintptr_t) &e };

  struct kvm_vgic_batch_abi abi;

  /* As kernel-patch/ does: the group's attrs are REGS (0) and ABI (1). */
  g_assert_cmpint (sim_has (fd, GRP_BATCH, KVM_VGIC_BATCH_ATTR_REGS), ==, 0);
  g_assert_cmpint (sim_has (fd, GRP_BATCH, KVM_VGIC_BATCH_ATTR_ABI), ==, 0);
  g_assert_cmpint (sim_has (fd, GRP_BATCH, 2), ==, -ENXIO);
  g_assert_cmpint (sim_ioctl (fd, KVM_GET_DEVICE_ATTR, GRP_BATCH, 2, &b), ==, -ENXIO);
  g_assert_cmpint (sim_ioctl (fd, KVM_GET_DEVICE_ATTR, GRP_BATCH, 0, &b), ==, 0);

  /* The ABI description reads back what the header says; it is read-only. */
  memset (&abi, 0, sizeof abi);
  g_assert_cmpint (sim_ioctl (fd, KVM_GET_DEVICE_ATTR, GRP_BATCH, KVM_VGIC_BATCH_ATTR_ABI, &abi),
                   ==, 0);
  g_assert_cmphex (abi.magic, ==, KVM_VGIC_BATCH_ABI_MAGIC);
  g_assert_cmpuint (abi.version, ==, 1);
  g_assert_cmpuint (abi.batch_size, ==, 24);
  g_assert_cmpuint (abi.entry_size, ==, 24);
  g_assert_cmpuint (abi.max_entries, ==, 4096);
  g_assert_cmpint (sim_ioctl (fd, KVM_SET_DEVICE_ATTR, GRP_BATCH, KVM_VGIC_BATCH_ATTR_ABI, &abi),
                   ==, -ENXIO);
}

static void
test_disabled_acts_like_old_kernel (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  struct kvm_vgic_batch_entry e = ent (GRP_DIST, D (GICD_CTLR), 0);

  vgic_sim_set_batch (sim, FALSE);
  g_assert_cmpint (sim_has (fd, GRP_BATCH, 0), ==, -ENXIO);
  g_assert_cmpint (sim_batch (fd, FALSE, &e, 1, NULL), ==, -ENXIO);
  g_assert_cmpint (sim_batch (fd, TRUE, &e, 1, NULL), ==, -ENXIO);
  g_assert_cmphex (e.value, ==, 0);
  vgic_sim_set_batch (sim, TRUE);
  g_assert_cmpint (sim_batch (fd, FALSE, &e, 1, NULL), ==, 0);
  g_assert_cmphex (e.value, ==, 0x50);
}

static void
test_e2big (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  g_autofree struct kvm_vgic_batch_entry *e =
    g_new0 (struct kvm_vgic_batch_entry, KVM_VGIC_BATCH_MAX_ENTRIES + 1);
  guint32 done;

  for (guint i = 0; i <= KVM_VGIC_BATCH_MAX_ENTRIES; i++)
    e[i] = ent (GRP_DIST, D (GICD_CTLR), 0);
  g_assert_cmpint (sim_batch (vgic_sim_get_fd (sim), FALSE, e,
                              KVM_VGIC_BATCH_MAX_ENTRIES + 1, NULL), ==, -E2BIG);
  g_assert_cmpint (sim_batch (vgic_sim_get_fd (sim), FALSE, e,
                              KVM_VGIC_BATCH_MAX_ENTRIES, &done), ==, 0);
  g_assert_cmpuint (done, ==, KVM_VGIC_BATCH_MAX_ENTRIES);
}

static void
test_header_einval (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  struct kvm_vgic_batch_entry e = ent (GRP_DIST, D (GICD_CTLR), 0);
  struct kvm_vgic_batch b = { .nr_entries = 1, .entries = (uintptr_t) &e };

  g_assert_cmpint (sim_batch (fd, FALSE, &e, 0, NULL), ==, -EINVAL);
  b.flags = 1;
  g_assert_cmpint (sim_ioctl (fd, KVM_GET_DEVICE_ATTR, GRP_BATCH, 0, &b), ==, -EINVAL);
  b.flags = 0;
  b.reserved = 1;
  g_assert_cmpint (sim_ioctl (fd, KVM_GET_DEVICE_ATTR, GRP_BATCH, 0, &b), ==, -EINVAL);
  b.reserved = 0;
  g_assert_cmpint (sim_ioctl (fd, KVM_GET_DEVICE_ATTR, GRP_BATCH, 0, &b), ==, 0);
}

static void
test_efault (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  struct kvm_vgic_batch b = { .nr_entries = 1, .entries = 16 };

  g_assert_cmpint (sim_ioctl (fd, KVM_GET_DEVICE_ATTR, GRP_BATCH, 0, (void *) 16), ==, -EFAULT);
  g_assert_cmpint (sim_ioctl (fd, KVM_GET_DEVICE_ATTR, GRP_BATCH, 0, &b), ==, -EFAULT);
  g_assert_cmpint (sim_ioctl (fd, KVM_SET_DEVICE_ATTR, GRP_BATCH, 0, &b), ==, -EFAULT);
}

/* A SET batch whose entry @bad fails to decode: nothing may change. */
static void
check_decode_failure (struct kvm_vgic_batch_entry bad, int err)
{
  g_autoptr (VgicSim) sim = sim_new (2, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  struct kvm_vgic_batch_entry e[3] = {
    ent (GRP_DIST, D (GICD_ISENABLER + 4), 0x1),
    bad,
    ent (GRP_DIST, D (GICD_ISPENDR + 4), 0x1),
  };
  guint32 done = 0xffff;

  g_assert_cmpint (sim_batch (fd, TRUE, e, 3, &done), ==, err);
  g_assert_cmpuint (done, ==, 0);
  g_assert_cmpint (e[0].error, ==, 0);
  g_assert_cmpint (e[1].error, ==, err);
  g_assert_cmpint (e[2].error, ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_ISENABLER + 4)), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_ISPENDR + 4)), ==, 0);
}

static void
test_decode_failure_applies_nothing (void)
{
  /* Bad group: CTRL is never allowed in a batch. */
  check_decode_failure (ent (KVM_DEV_ARM_VGIC_GRP_CTRL, 0, 0), -EINVAL);
}

static void
test_decode_bad_mpidr (void)
{
  check_decode_failure (ent (GRP_REDIST, vgic_attr (0xdead, GICR_CTLR), 0), -EINVAL);
}

static void
test_decode_unknown_sysreg (void)
{
  check_decode_failure (ent (GRP_SYSREG, vgic_attr (0, VGIC_SYSREG (3, 0, 12, 11, 5)), 0),
                        -ENOENT);
}

static void
test_decode_bad_level_info (void)
{
  check_decode_failure (ent (GRP_LEVEL, vgic_attr (0, 33), 0), -EINVAL);
  check_decode_failure (ent (GRP_LEVEL, vgic_attr (0, (1u << 10) | 32), 0), -EINVAL);
}

static void
test_decode_high_value_bits (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  struct kvm_vgic_batch_entry e = ent (GRP_SYSREG, vgic_attr (0, ICC_AP0R_EL1 (0)),
                                       0x100000000ULL);

  check_decode_failure (ent (GRP_DIST, D (GICD_ISACTIVER + 4), 0x100000001ULL), -EINVAL);
  /* CPU_SYSREGS values are 64-bit: no decode error. */
  g_assert_cmpint (sim_batch (vgic_sim_get_fd (sim), TRUE, &e, 1, NULL), ==, 0);
}

static void
test_apply_stops_at_first_error (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  struct kvm_vgic_batch_entry e[3] = {
    ent (GRP_DIST, D (GICD_ISENABLER + 4), 0x1),
    ent (GRP_DIST, D (GICD_TYPER2), 0x1),	/* the handler refuses */
    ent (GRP_DIST, D (GICD_ISPENDR + 4), 0x1),
  };
  guint32 done = 0xffff;

  g_assert_cmpint (sim_batch (fd, TRUE, e, 3, &done), ==, -EINVAL);
  g_assert_cmpuint (done, ==, 1);
  g_assert_cmpint (e[0].error, ==, 0);
  g_assert_cmpint (e[1].error, ==, -EINVAL);
  /* No rollback of entry 0; entry 2 never ran. */
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_ISENABLER + 4)), ==, 0x1);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_ISPENDR + 4)), ==, 0);
}

static void
test_success_writes_back (void)
{
  g_autoptr (VgicSim) sim = sim_new (2, 64, FALSE, 6);
  int fd = vgic_sim_get_fd (sim);
  struct kvm_vgic_batch_entry e[4] = {
    ent (GRP_DIST, D (GICD_STATUSR), 0),
    ent (GRP_REDIST, R (sim, 1, GICR_TYPER), 0),
    ent (GRP_SYSREG, R (sim, 1, ICC_CTLR_EL1), 0),
    ent (GRP_LEVEL, vgic_attr_level (vgic_sim_get_mpidr (sim, 1), 32), 0),
  };
  guint32 done = 0;

  g_assert_cmpint (sim_batch (fd, FALSE, e, 4, &done), ==, 0);
  g_assert_cmpuint (done, ==, 4);
  for (guint i = 0; i < 4; i++)
    g_assert_cmpint (e[i].error, ==, 0);
  g_assert_cmphex (e[0].value, ==, 0xffffffff);
  g_assert_cmphex (e[1].value, ==, (1u << 8) | GICR_TYPER_LAST);
  g_assert_cmphex (e[2].value, ==, sim_read64 (fd, GRP_SYSREG, R (sim, 1, ICC_CTLR_EL1)));
  g_assert_cmphex (e[3].value, ==, 0);
}

static void
test_entries_keep_quirks (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  guint64 lvl = vgic_attr_level (vgic_sim_get_mpidr (sim, 0), 32);
  struct kvm_vgic_batch_entry set[4] = {
    ent (GRP_DIST, D (GICD_ISPENDR + 4), 0x5),
    ent (GRP_DIST, D (GICD_ISPENDR + 4), 0x4),
    ent (GRP_DIST, D (GICD_ICFGR + 8), 0xa),
    ent (GRP_LEVEL, lvl, 0x3),
  };
  struct kvm_vgic_batch_entry get[2] = {
    ent (GRP_DIST, D (GICD_ISPENDR + 4), 0),
    ent (GRP_LEVEL, lvl, 0xff),
  };

  g_assert_cmpint (sim_batch (fd, TRUE, set, 4, NULL), ==, 0);
  g_assert_cmpint (sim_batch (fd, FALSE, get, 2, NULL), ==, 0);
  g_assert_cmphex (get[0].value, ==, 0x4);
  g_assert_cmphex (get[1].value, ==, 0);
}

static void
test_one_lock_round_and_mpidr_cache (void)
{
  const guint n = 16;
  g_autoptr (VgicSim) sim = sim_new (n, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  struct kvm_vgic_batch_entry e[10];
  VgicSimCounters c;

  for (guint i = 0; i < G_N_ELEMENTS (e); i++)
    e[i] = ent (GRP_REDIST, R (sim, n - 1, GICR_IPRIORITYR + 4 * (i % 8)), 0);
  vgic_sim_counters_reset (sim);
  g_assert_cmpint (sim_batch (fd, FALSE, e, G_N_ELEMENTS (e), NULL), ==, 0);
  vgic_sim_counters_get (sim, &c);
  g_assert_cmpuint (c.batch_calls, ==, 1);
  g_assert_cmpuint (c.batch_entries, ==, G_N_ELEMENTS (e));
  g_assert_cmpuint (c.lock_rounds, ==, 1);
  g_assert_cmpuint (c.vcpu_locks, ==, n);
  /* One scan for the whole batch (same mpidr every entry). */
  g_assert_cmpuint (c.mpidr_scan_steps, ==, n);
  g_assert_cmpuint (c.single_get, ==, 0);
}

static void
test_ebusy_applies_nothing (void)
{
  g_autoptr (VgicSim) sim = sim_new (3, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  struct kvm_vgic_batch_entry e = ent (GRP_DIST, D (GICD_ISENABLER + 4), 1);
  guint32 done = 0xffff;

  vgic_sim_set_vcpu_running (sim, 1, TRUE);
  g_assert_cmpint (sim_batch (fd, TRUE, &e, 1, &done), ==, -EBUSY);
  g_assert_cmpuint (done, ==, 0);
  vgic_sim_set_vcpu_running (sim, 1, FALSE);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_ISENABLER + 4)), ==, 0);
}

static void
test_fail_at_index (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  struct kvm_vgic_batch_entry e[5];
  guint32 done = 0;

  for (guint i = 0; i < 5; i++)
    e[i] = ent (GRP_DIST, D (GICD_ISENABLER + 4), 1u << i);
  vgic_sim_fail_at (sim, 3, -EIO);
  g_assert_cmpint (sim_batch (fd, TRUE, e, 5, &done), ==, -EIO);
  g_assert_cmpuint (done, ==, 3);
  g_assert_cmpint (e[3].error, ==, -EIO);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_ISENABLER + 4)), ==, 0x7);
  /* Consumed: the same batch now succeeds. */
  g_assert_cmpint (sim_batch (fd, TRUE, e, 5, &done), ==, 0);
  g_assert_cmpuint (done, ==, 5);
}

int
main (int argc, char **argv)
{
  sim_test_init (&argc, &argv);

  g_test_add_func ("/sim/batch/probe", test_probe);
  g_test_add_func ("/sim/batch/disabled-acts-like-old-kernel", test_disabled_acts_like_old_kernel);
  g_test_add_func ("/sim/batch/e2big", test_e2big);
  g_test_add_func ("/sim/batch/einval-zero-entries-flags-reserved", test_header_einval);
  g_test_add_func ("/sim/batch/efault-bad-pointers", test_efault);
  g_test_add_func ("/sim/batch/decode-failure-applies-nothing", test_decode_failure_applies_nothing);
  g_test_add_func ("/sim/batch/decode-bad-mpidr-einval", test_decode_bad_mpidr);
  g_test_add_func ("/sim/batch/decode-unknown-sysreg-enoent", test_decode_unknown_sysreg);
  g_test_add_func ("/sim/batch/decode-bad-level-info-einval", test_decode_bad_level_info);
  g_test_add_func ("/sim/batch/decode-high-value-bits-einval", test_decode_high_value_bits);
  g_test_add_func ("/sim/batch/apply-stops-at-first-error", test_apply_stops_at_first_error);
  g_test_add_func ("/sim/batch/success-errors-zero-values-written-back", test_success_writes_back);
  g_test_add_func ("/sim/batch/entries-behave-like-single-calls", test_entries_keep_quirks);
  g_test_add_func ("/sim/batch/one-lock-round-cached-mpidr", test_one_lock_round_and_mpidr_cache);
  g_test_add_func ("/sim/batch/ebusy-applies-nothing", test_ebusy_applies_nothing);
  g_test_add_func ("/sim/batch/fail-at-index", test_fail_at_index);

  return g_test_run ();
}
