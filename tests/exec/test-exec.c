/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-exec.c - the executor (libvgicd) against vgic-sim through real
 * ioctl(2) calls: the probe, chunking, widths, refusals and how a failure
 * part-way through is reported.
 */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#include "sim-util.h"
#include "sim-vm.h"
#include "vgic-batch-probe.h"
#include "vgic-exec.h"
#include "vgic-plan.h"

typedef VgicEntry Entry;

#define ENTRIES(a) ((a)->entries)


static void
test_probe (void)
{
  g_autoptr (VgicSim) sim = sim_new (2, 64, TRUE, 5);
  g_autofree char *ours = NULL, *absent = NULL, *foreign = NULL, *busy = NULL;
  VgicSimCounters c;

  /* This project's group: 7 registers read one by one, then as one batch. */
  vgic_sim_counters_reset (sim);
  g_assert_cmpint (vgic_batch_probe (vgic_sim_get_fd (sim), &ours), ==, VGIC_BATCH_PROBE_OURS);
  g_assert_cmpstr (ours, ==, "the kernel has the vGIC batch group (7 registers read as a "
                             "batch and one by one agree)");
  vgic_sim_counters_get (sim, &c);
  g_assert_cmpuint (c.single_get, ==, 7);
  g_assert_cmpuint (c.batch_calls, ==, 1);
  g_assert_cmpuint (c.batch_entries, ==, 7);
  g_assert_cmpuint (c.single_set, ==, 0);

  vgic_sim_set_batch (sim, FALSE);
  g_assert_cmpint (vgic_batch_probe (vgic_sim_get_fd (sim), &absent), ==,
                   VGIC_BATCH_PROBE_ABSENT);
  g_assert_cmpstr (absent, ==, "the kernel has no vGIC batch group");

  /* A group 10 of another layout accepts HAS(10, 0) as ours does... */
  vgic_sim_set_foreign_batch (sim);
  {
    struct kvm_device_attr has = { .group = KVM_DEV_ARM_VGIC_GRP_BATCH_REGS };

    g_assert_cmpint (ioctl (vgic_sim_get_fd (sim), KVM_HAS_DEVICE_ATTR, &has), ==, 0);
  }
  /* ...and the probe's one batch tells it apart: that layout takes each
   * entry's value for a pointer and writes the register there, which is
   * the probe's own scratch slot, never anything else. */
  vgic_sim_counters_reset (sim);
  g_assert_cmpint (vgic_batch_probe (vgic_sim_get_fd (sim), &foreign), ==,
                   VGIC_BATCH_PROBE_FOREIGN);
  g_assert_cmpstr (foreign, ==, "the kernel's device-attr group 10 is another batch "
                                "interface (it wrote outside the entries' values): not used");
  vgic_sim_counters_get (sim, &c);
  g_assert_cmpuint (c.foreign_calls, ==, 1);
  g_assert_cmpuint (c.batch_calls, ==, 0);
  g_assert_cmpuint (c.single_set, ==, 0);

  /* A running vCPU: the probe cannot tell, and says so. */
  vgic_sim_set_batch (sim, TRUE);
  vgic_sim_set_vcpu_running (sim, 1, TRUE);
  g_assert_cmpint (vgic_batch_probe (vgic_sim_get_fd (sim), &busy), ==, -EBUSY);
  g_assert_nonnull (strstr (busy, "could not be verified"));
}

/* On a foreign group 10, a list runs one by one and group 10 sees nothing
 * more than the probe's read. */
static void
test_foreign_group_runs_single (void)
{
  g_autoptr (VgicSim) sim = sim_new (2, 64, TRUE, 5);
  g_autoptr (VgicShape) shape = sim_vm_shape (sim, 2, 64);
  g_autoptr (VgicList) plan = vgic_plan_save_first (shape);
  VgicExecReport r;
  VgicSimCounters c;

  vgic_sim_set_foreign_batch (sim);
  vgic_sim_counters_reset (sim);
  g_assert_cmpint (vgic_batch_probe (vgic_sim_get_fd (sim), NULL), ==,
                   VGIC_BATCH_PROBE_FOREIGN);
  g_assert_true (vgic_exec_run (vgic_sim_get_fd (sim), ENTRIES (plan), plan->len,
                                VGIC_EXEC_READ, VGIC_EXEC_SINGLE, &r));
  g_assert_cmpuint (r.ioctls, ==, plan->len);
  vgic_sim_counters_get (sim, &c);
  g_assert_cmpuint (c.foreign_calls, ==, 1);
  /* The probe's 7 single reads, then the list's. */
  g_assert_cmpuint (c.single_get, ==, 7 + plan->len);
}

/* A list with a CTRL entry (or an oversized 32-bit value) is refused before
 * a single ioctl reaches the device. */
static void
test_refuses_before_any_ioctl (void)
{
  g_autoptr (VgicSim) sim = sim_new (2, 64, TRUE, 5);
  g_autoptr (VgicShape) shape = sim_vm_shape (sim, 2, 64);
  g_autoptr (VgicList) plan = vgic_plan_save_first (shape);
  g_autoptr (GError) error = NULL;
  VgicSimCounters c;

  vgic_sim_counters_reset (sim);
  plan->entries[5].group = KVM_DEV_ARM_VGIC_GRP_CTRL;
  g_assert_false (vgic_exec_check (ENTRIES (plan), plan->len, VGIC_EXEC_READ, &error));
  g_assert_nonnull (strstr (error->message, "entry 5: group 4"));
  g_clear_error (&error);

  plan->entries[5].group = GRP_DIST;
  plan->entries[7].value = 0x100000000ULL;
  g_assert_true (vgic_exec_check (ENTRIES (plan), plan->len, VGIC_EXEC_READ, NULL));
  g_assert_false (vgic_exec_check (ENTRIES (plan), plan->len, VGIC_EXEC_WRITE, &error));
  g_assert_nonnull (strstr (error->message, "entry 7"));
  g_clear_error (&error);

  /* A reserved field the kernel would refuse the whole batch for. */
  plan->entries[7].value = 0;
  plan->entries[9].reserved = 1;
  g_assert_false (vgic_exec_check (ENTRIES (plan), plan->len, VGIC_EXEC_READ, &error));
  g_assert_nonnull (strstr (error->message, "entry 9: its reserved field"));

  vgic_sim_counters_get (sim, &c);
  g_assert_cmpuint (c.single_get + c.single_set + c.has + c.batch_calls, ==, 0);
}

/* A save larger than the kernel's cap goes out in ceil(n / cap) batches and
 * reads what one-by-one reads, value for value. */
static void
test_batch_chunks_equal_single (void)
{
  g_autoptr (VgicSim) sim = sim_new (160, 288, TRUE, 5);
  g_autoptr (VgicShape) shape = sim_vm_shape (sim, 160, 288);
  g_autoptr (VgicList) batch = vgic_plan_save_first (shape);
  g_autoptr (VgicList) single = vgic_list_new_from (batch->entries, batch->len);
  VgicExecReport r;
  VgicSimCounters c;
  guint chunks = (batch->len + VGICD_BATCH_CHUNK - 1) / VGICD_BATCH_CHUNK;

  g_assert_cmpuint (chunks, ==, 2);
  vgic_sim_randomize (sim, 7);
  vgic_sim_counters_reset (sim);
  g_assert_true (vgic_exec_run (vgic_sim_get_fd (sim), ENTRIES (batch), batch->len,
                                VGIC_EXEC_READ, VGIC_EXEC_BATCH, &r));
  g_assert_cmpuint (r.ioctls, ==, chunks);
  g_assert_cmpuint (r.done, ==, batch->len);
  g_assert_cmpint (r.error, ==, 0);
  vgic_sim_counters_get (sim, &c);
  g_assert_cmpuint (c.batch_calls, ==, chunks);
  g_assert_cmpuint (c.batch_entries, ==, batch->len);

  g_assert_true (vgic_exec_run (vgic_sim_get_fd (sim), ENTRIES (single), single->len,
                                VGIC_EXEC_READ, VGIC_EXEC_SINGLE, &r));
  g_assert_cmpuint (r.ioctls, ==, single->len);
  for (guint i = 0; i < batch->len; i++)
    {
      g_assert_cmphex (batch->entries[i].value, ==,
                       single->entries[i].value);
      if (batch->entries[i].group != GRP_SYSREG)
        g_assert_cmphex (batch->entries[i].value >> 32, ==, 0);
    }
}

/* A failure injected at entry k of a write list: k entries done, entry k
 * named with the kernel's error, on both paths. */
static void
test_failure_at_k (gconstpointer data)
{
  VgicExecVia via = GPOINTER_TO_INT (data);
  g_autoptr (VgicSim) sim = sim_new (4, 128, TRUE, 6);
  g_autoptr (VgicShape) shape = sim_vm_shape (sim, 4, 128);
  g_autoptr (VgicList) plan = vgic_plan_save_first (shape);
  const guint k = 37;
  VgicExecReport r;

  /* Write back what was read: a harmless list of writes. */
  g_assert_true (vgic_exec_run (vgic_sim_get_fd (sim), ENTRIES (plan), plan->len,
                                VGIC_EXEC_READ, VGIC_EXEC_BATCH, &r));
  vgic_sim_fail_at (sim, k, -EINVAL);
  g_assert_false (vgic_exec_run (vgic_sim_get_fd (sim), ENTRIES (plan), plan->len,
                                 VGIC_EXEC_WRITE, via, &r));
  g_assert_cmpuint (r.done, ==, k);
  g_assert_cmpuint (r.error_index, ==, k);
  g_assert_cmpint (r.error, ==, -EINVAL);
  g_assert_cmpuint (r.ioctls, ==, via == VGIC_EXEC_BATCH ? 1 : k + 1);

  /* The device stays usable. */
  g_assert_true (vgic_exec_run (vgic_sim_get_fd (sim), ENTRIES (plan), plan->len,
                                VGIC_EXEC_WRITE, via, &r));
}

/* A write batch whose last entry the kernel does not know (an offset past
 * the distributor's registers) is refused as a whole: nothing written,
 * nr_done 0, the error HAS gives.  One by one, the entries before it are
 * written first. */
static void
test_unknown_offset_refuses_batch (void)
{
  g_autoptr (VgicSim) sim = sim_new (2, 64, TRUE, 5);
  g_autoptr (VgicShape) shape = sim_vm_shape (sim, 2, 64);
  g_autoptr (VgicList) plan = vgic_plan_save_first (shape);
  g_autoptr (VgicList) before = NULL, after = NULL;
  VgicExecReport r;
  VgicSimCounters c;

  vgic_sim_randomize (sim, 11);
  g_assert_true (vgic_exec_run (vgic_sim_get_fd (sim), ENTRIES (plan), plan->len,
                                VGIC_EXEC_READ, VGIC_EXEC_BATCH, &r));
  before = vgic_list_new_from (plan->entries, plan->len);
  /* Every value changed, then the last entry made unknown. */
  for (guint i = 0; i < plan->len; i++)
    if (plan->entries[i].group == GRP_DIST)
      plan->entries[i].value ^= 0x1;
  plan->entries[plan->len - 1] = (Entry) { .group = GRP_DIST, .attr = 0x0020 };
  vgic_sim_counters_reset (sim);
  g_assert_false (vgic_exec_run (vgic_sim_get_fd (sim), ENTRIES (plan), plan->len,
                                 VGIC_EXEC_WRITE, VGIC_EXEC_BATCH, &r));
  g_assert_cmpint (r.error, ==, -ENXIO);
  g_assert_cmpuint (r.done, ==, 0);
  g_assert_cmpuint (r.error_index, ==, 0);
  vgic_sim_counters_get (sim, &c);
  g_assert_cmpuint (c.batch_calls, ==, 1);

  after = vgic_list_new_from (before->entries, before->len);
  g_assert_true (vgic_exec_run (vgic_sim_get_fd (sim), ENTRIES (after), after->len,
                                VGIC_EXEC_READ, VGIC_EXEC_BATCH, &r));
  for (guint i = 0; i < before->len; i++)
    g_assert_cmphex (after->entries[i].value, ==, before->entries[i].value);
}

static void
test_running_vcpu_is_busy (gconstpointer data)
{
  VgicExecVia via = GPOINTER_TO_INT (data);
  g_autoptr (VgicSim) sim = sim_new (4, 64, FALSE, 5);
  g_autoptr (VgicShape) shape = sim_vm_shape (sim, 4, 64);
  g_autoptr (VgicList) plan = vgic_plan_save_first (shape);
  VgicExecReport r;

  vgic_sim_set_vcpu_running (sim, 3, TRUE);
  g_assert_false (vgic_exec_run (vgic_sim_get_fd (sim), ENTRIES (plan), plan->len,
                                 VGIC_EXEC_READ, via, &r));
  g_assert_cmpint (r.error, ==, -EBUSY);
  g_assert_cmpuint (r.done, ==, 0);
}

static void
test_bad_pointer (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  g_autoptr (VgicShape) shape = sim_vm_shape (sim, 1, 64);
  g_autoptr (VgicList) plan = vgic_plan_save_first (shape);
  VgicExecReport r;

  vgic_sim_fault_next (sim);
  g_assert_false (vgic_exec_run (vgic_sim_get_fd (sim), ENTRIES (plan), plan->len,
                                 VGIC_EXEC_READ, VGIC_EXEC_BATCH, &r));
  g_assert_cmpint (r.error, ==, -EFAULT);
  g_assert_cmpuint (r.done, ==, 0);
}

int
main (int argc, char **argv)
{
  sim_test_init (&argc, &argv);

  g_test_add_func ("/exec/probe", test_probe);
  g_test_add_func ("/exec/foreign-group-runs-single", test_foreign_group_runs_single);
  g_test_add_func ("/exec/refuses-before-any-ioctl", test_refuses_before_any_ioctl);
  g_test_add_func ("/exec/batch-chunks-equal-single", test_batch_chunks_equal_single);
  g_test_add_func ("/exec/unknown-offset-refuses-batch", test_unknown_offset_refuses_batch);
  g_test_add_data_func ("/exec/failure-at-k/batch", GINT_TO_POINTER (VGIC_EXEC_BATCH), test_failure_at_k);
  g_test_add_data_func ("/exec/failure-at-k/single", GINT_TO_POINTER (VGIC_EXEC_SINGLE), test_failure_at_k);
  g_test_add_data_func ("/exec/running-vcpu-is-busy/batch", GINT_TO_POINTER (VGIC_EXEC_BATCH), test_running_vcpu_is_busy);
  g_test_add_data_func ("/exec/running-vcpu-is-busy/single", GINT_TO_POINTER (VGIC_EXEC_SINGLE), test_running_vcpu_is_busy);
  g_test_add_func ("/exec/bad-pointer", test_bad_pointer);
  return g_test_run ();
}
