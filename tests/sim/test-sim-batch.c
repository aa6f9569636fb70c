/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-sim-batch.c - one test per rule of the batch group
 * (docs/kernel-interface.md), through real ioctl(2) calls on a sim fd.
 */
#include <errno.h>
#include <linux/kvm.h>

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sim-util.h"

#define D(off) vgic_attr (0, (off))
#define R(sim, cpu, off) vgic_attr (vgic_sim_get_mpidr ((sim), (cpu)), (off))

static struct kvm_vgic_batch_entry
ent (guint32 group, guint64 attr, guint64 value)
{
  struct kvm_vgic_batch_entry e = { .group = group, .reserved = 0, .attr = attr, .value = value };

  return e;
}

static void
test_probe (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);

  struct kvm_vgic_batch_entry e = ent (GRP_DIST, D (GICD_CTLR), 0);
  struct kvm_vgic_batch b = { .nr_entries = 1, .entries = (guint64) (uintptr_t) &e };

  /* As kernel-patch/ does: HAS discovers attr 0, the only one. */
  g_assert_cmpint (sim_has (fd, GRP_BATCH, 0), ==, 0);
  g_assert_cmpint (sim_has (fd, GRP_BATCH, 1), ==, -ENXIO);
  g_assert_cmpint (sim_ioctl (fd, KVM_GET_DEVICE_ATTR, GRP_BATCH, 1, &b), ==, -ENXIO);
  g_assert_cmpint (sim_ioctl (fd, KVM_SET_DEVICE_ATTR, GRP_BATCH, 2, &b), ==, -ENXIO);
  g_assert_cmpint (sim_ioctl (fd, KVM_GET_DEVICE_ATTR, GRP_BATCH, 0, &b), ==, 0);
  g_assert_cmpuint (b.nr_done, ==, 1);
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
    g_new0 (struct kvm_vgic_batch_entry, VGICD_BATCH_CHUNK + 1);
  guint32 done;

  /* The sim's limit is VGICD_BATCH_CHUNK, the least a kernel may have. */
  for (guint i = 0; i <= VGICD_BATCH_CHUNK; i++)
    e[i] = ent (GRP_DIST, D (GICD_CTLR), 0);
  g_assert_cmpint (sim_batch (vgic_sim_get_fd (sim), FALSE, e,
                              VGICD_BATCH_CHUNK + 1, &done), ==, -E2BIG);
  g_assert_cmpuint (done, ==, 0);
  g_assert_cmpint (sim_batch (vgic_sim_get_fd (sim), FALSE, e,
                              VGICD_BATCH_CHUNK, &done), ==, 0);
  g_assert_cmpuint (done, ==, VGICD_BATCH_CHUNK);
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
  /* A reserved field in an entry: the batch is refused, nr_done written. */
  e.reserved = 1;
  b.nr_done = 0xffff;
  g_assert_cmpint (sim_ioctl (fd, KVM_GET_DEVICE_ATTR, GRP_BATCH, 0, &b), ==, -EINVAL);
  g_assert_cmpuint (b.nr_done, ==, 0);
  e.reserved = 0;
  g_assert_cmpint (sim_ioctl (fd, KVM_GET_DEVICE_ATTR, GRP_BATCH, 0, &b), ==, 0);
  g_assert_cmpuint (b.nr_done, ==, 1);
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

  struct kvm_vgic_batch_entry copy[3];

  memcpy (copy, e, sizeof e);
  g_assert_cmpint (sim_batch (fd, TRUE, e, 3, &done), ==, err);
  g_assert_cmpuint (done, ==, 0);
  /* A SET never writes the entries back. */
  g_assert_cmpmem (copy, sizeof copy, e, sizeof e);
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
                        -ENXIO);
}

/* An offset KVM_HAS_DEVICE_ATTR does not know: refused at decode, as a
 * whole, though its single access would read as zero. */
static void
test_decode_unknown_offset (void)
{
  check_decode_failure (ent (GRP_DIST, D (0x0020), 0), -ENXIO);
  check_decode_failure (ent (GRP_REDIST, vgic_attr (0, 0x0ffc0), 0), -ENXIO);
  check_decode_failure (ent (GRP_DIST, D (GICD_ISENABLER + 2), 0), -ENXIO);
}

static void
test_decode_reserved (void)
{
  struct kvm_vgic_batch_entry bad = ent (GRP_DIST, D (GICD_ISENABLER + 8), 1);

  bad.reserved = 1;
  check_decode_failure (bad, -EINVAL);
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
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_ISENABLER + 4)), ==, 0x7);
  /* Consumed: the same batch now succeeds. */
  g_assert_cmpint (sim_batch (fd, TRUE, e, 5, &done), ==, 0);
  g_assert_cmpuint (done, ==, 5);
}

/* A GET copies back the completed entries only; a failed one and those
 * after it keep what the caller put there. */
static void
test_get_copies_back_done_only (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  struct kvm_vgic_batch_entry e[4];
  guint32 done = 0;

  for (guint i = 0; i < 4; i++)
    e[i] = ent (GRP_DIST, D (GICD_CTLR), 0x5a5a);
  vgic_sim_fail_at (sim, 2, -EIO);
  g_assert_cmpint (sim_batch (fd, FALSE, e, 4, &done), ==, -EIO);
  g_assert_cmpuint (done, ==, 2);
  g_assert_cmphex (e[0].value, ==, 0x50);
  g_assert_cmphex (e[1].value, ==, 0x50);
  g_assert_cmphex (e[2].value, ==, 0x5a5a);
  g_assert_cmphex (e[3].value, ==, 0x5a5a);
}

/* The values of a GET cannot be copied back (read-only entries): -EFAULT
 * when the batch succeeded, nr_done still written; the batch's own error
 * when it failed. */
static void
test_copy_back_fault (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  gsize page = (gsize) sysconf (_SC_PAGESIZE);
  struct kvm_vgic_batch_entry *e = mmap (NULL, page, PROT_READ | PROT_WRITE,
                                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  guint32 done = 0xffff;

  g_assert_true (e != MAP_FAILED);
  for (guint i = 0; i < 3; i++)
    e[i] = ent (GRP_DIST, D (GICD_ISENABLER + 4), 0);
  g_assert_cmpint (mprotect (e, page, PROT_READ), ==, 0);
  g_assert_cmpint (sim_batch (fd, FALSE, e, 3, &done), ==, -EFAULT);
  g_assert_cmpuint (done, ==, 3);
  vgic_sim_fail_at (sim, 1, -EIO);
  g_assert_cmpint (sim_batch (fd, FALSE, e, 3, &done), ==, -EIO);
  g_assert_cmpuint (done, ==, 1);
  /* A SET does not write the entries: read-only is fine. */
  g_assert_cmpint (sim_batch (fd, TRUE, e, 3, &done), ==, 0);
  g_assert_cmpuint (done, ==, 3);
  munmap (e, page);
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
  g_test_add_func ("/sim/batch/decode-unknown-sysreg-enxio", test_decode_unknown_sysreg);
  g_test_add_func ("/sim/batch/decode-unknown-offset-enxio", test_decode_unknown_offset);
  g_test_add_func ("/sim/batch/decode-entry-reserved-einval", test_decode_reserved);
  g_test_add_func ("/sim/batch/decode-bad-level-info-einval", test_decode_bad_level_info);
  g_test_add_func ("/sim/batch/decode-high-value-bits-einval", test_decode_high_value_bits);
  g_test_add_func ("/sim/batch/apply-stops-at-first-error", test_apply_stops_at_first_error);
  g_test_add_func ("/sim/batch/success-values-written-back", test_success_writes_back);
  g_test_add_func ("/sim/batch/get-copies-back-done-only", test_get_copies_back_done_only);
  g_test_add_func ("/sim/batch/copy-back-fault", test_copy_back_fault);
  g_test_add_func ("/sim/batch/entries-behave-like-single-calls", test_entries_keep_quirks);
  g_test_add_func ("/sim/batch/one-lock-round-cached-mpidr", test_one_lock_round_and_mpidr_cache);
  g_test_add_func ("/sim/batch/ebusy-applies-nothing", test_ebusy_applies_nothing);
  g_test_add_func ("/sim/batch/fail-at-index", test_fail_at_index);

  return g_test_run ();
}
