/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-vgicd-paths.c - the paths a VM's state takes through vgicd: the
 * record, batched or one by one (an old kernel, a foreign batch ABI), QEMU's
 * own fields, and the SPI routes QEMU's accesses miss; the destination
 * reads back what the source held.
 */
#include <signal.h>

#include "vgic-direct.h"
#include "vgic-plan.h"
#include "vgic-record.h"
#include "vgic-regs.h"
#include "vgicd-test.h"

typedef struct {
  const char *mode;
  gboolean kernel_batch;
  gboolean expect_batched;
} ModeCase;

typedef struct {
  VgicdClient *c;
  GBytes *record;
  GBytes *saved;
} LoadArgs;

/* Load, then save at once. */
static gpointer
load_thread (gpointer data)
{
  LoadArgs *a = data;
  g_autoptr (GError) error = NULL;

  if (vgicd_client_load (a->c, g_bytes_get_data (a->record, NULL),
                         g_bytes_get_size (a->record), &error))
    vgicd_client_save (a->c, &a->saved, &error);
  if (error)
    g_printerr ("load_thread: %s\n", error->message);
  return NULL;
}

/* Save through vgicd, load into a fresh VM through vgicd: the destination
 * reads back exactly what the source held, by the expected path. */
static void
test_round_trip (gconstpointer data)
{
  const ModeCase *mc = data;
  g_autoptr (VgicdHarness) h = harness (mc->mode);

  for (guint i = 0; i < G_N_ELEMENTS (shapes); i++)
    {
      const Shape *s = &shapes[i];
      g_autoptr (VgicSim) src = make_sim (s, mc->kernel_batch);
      g_autoptr (VgicSim) dst = make_sim (s, mc->kernel_batch);
      g_autoptr (VgicdClient) cs = NULL, cd = NULL;
      g_autoptr (GBytes) record = NULL, want = NULL, got = NULL;
      g_autoptr (GError) error = NULL;
      VgicdClientStats st;
      guint accesses;

      g_autoptr (GBytes) again = NULL;

      vgic_sim_randomize (src, 100 + i);
      cs = attach (h, src, s, "src");
      cd = attach (h, dst, s, "dst");
      want = visible_state_n (src, s, &accesses);

      /* The first save of a VM new to the host guesses round 2 as the
       * host's guess has it: an ITS and one APR, since every VM here is
       * this one process's, which never moves the host's guess
       * (learn_shape()).  A shape other than that reads round 2 as
       * guessed (more APRs than the vCPU has fail in the kernel; fewer,
       * or other LPIs, are found wrong by round 1's values), then again
       * as it should be. */
      g_assert_true (vgicd_client_save (cs, &record, &error));
      g_assert_no_error (error);
      vgicd_client_get_stats (cs, &st);
      g_assert_cmpint (st.batched, ==, mc->expect_batched);
      if (s->its && s->pri_bits == 5)
        g_assert_cmpuint (st.entries, ==, accesses);
      else
        g_assert_cmpuint (st.entries, >, accesses);
      if (mc->expect_batched)
        g_assert_cmpuint (st.ioctls, <=, 3);
      else /* and the read of an APR the vCPU lacks, if the guess had more */
        g_assert_cmpuint (st.ioctls - st.entries, <=, 1);

      /* The next save of this shape guesses right: QEMU's accesses, one
       * list, and the same record. */
      g_assert_true (vgicd_client_save (cs, &again, &error));
      g_assert_no_error (error);
      g_assert_true (g_bytes_equal (record, again));
      vgicd_client_get_stats (cs, &st);
      g_assert_cmpuint (st.entries, ==, accesses);
      if (mc->expect_batched)
        g_assert_cmpuint (st.ioctls, ==, (accesses + VGICD_BATCH_CHUNK - 1) /
                                             VGICD_BATCH_CHUNK);
      else
        g_assert_cmpuint (st.ioctls, ==, st.entries);

      /* Load, then save at once: libvgicd does not wait for the answer to
       * a load's last report, and must take it before its next call (else
       * that answer, done, would be taken for the save's).  vgicd is
       * stopped while they start, so that the answer comes late. */
      {
        LoadArgs a = { cd, record, NULL };
        GThread *t;

        g_assert_cmpint (kill (h->vgicd_pid, SIGSTOP), ==, 0);
        t = g_thread_new ("load", load_thread, &a);
        g_usleep (100 * 1000);
        g_assert_cmpint (kill (h->vgicd_pid, SIGCONT), ==, 0);
        g_thread_join (t);
        g_assert_nonnull (a.saved);
        g_assert_true (g_bytes_equal (a.saved, record));
        g_bytes_unref (a.saved);
      }
      got = visible_state (dst, s);
      g_assert_true (g_bytes_equal (want, got));
      g_assert_true (g_bytes_equal (want, record));
    }

  /* libvgicd asked for the step channel, and vgicd gave it. */
  {
    g_autofree char *log = NULL;
    log = vgicd_harness_read_log (h);
    g_assert_nonnull (strstr (log, "VM src: attached: 1 vCPUs, 64 IRQs, kernel batch"));
    g_assert_nonnull (strstr (log, "step channel, pid"));
    g_assert_null (strstr (log, "D-Bus steps"));
    /* Every report was taken as it was made. */
    g_assert_null (strstr (log, "refusing its results"));
    /* No warning but the socket's, on a host without a kvm group. */
    {
      g_auto (GStrv) lines = g_strsplit (log, "\n", -1);

      for (guint i = 0; lines[i]; i++)
        if (strstr (lines[i], "WARNING"))
          g_assert_nonnull (strstr (lines[i], "group kvm does not exist"));
    }
  }
}

/* The kernel has no batch group: vgicd's plans run one by one, same result. */
static void
test_old_kernel_single_path (void)
{
  static const ModeCase mc = { "auto", FALSE, FALSE };

  test_round_trip (&mc);
}

/* The kernel's group 10 is another batch layout, which answers
 * KVM_HAS_DEVICE_ATTR(10, 0) as this one does: libvgicd's probe finds it is
 * not this layout, so nothing but the probe's one batch reaches group 10,
 * every access runs one by one, and vgicd says so in its log and its
 * counters. */
static void
test_foreign_batch_abi (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[3];
  g_autoptr (VgicSim) src = make_sim (s, TRUE);
  g_autoptr (VgicSim) dst = make_sim (s, TRUE);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL;
  g_autoptr (GBytes) record = NULL, want = NULL, got = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *log = NULL;
  VgicdClientStats st;
  VgicSimCounters c;

  vgic_sim_set_foreign_batch (src);
  vgic_sim_set_foreign_batch (dst);
  g_assert_cmpint (vgicd_client_probe_batch (vgic_sim_get_fd (src)), ==, 0);
  vgic_sim_randomize (src, 7);
  vgic_sim_counters_reset (src);
  vgic_sim_counters_reset (dst);
  cs = attach (h, src, s, "src");
  cd = attach (h, dst, s, "dst");
  want = visible_state (src, s);

  g_assert_true (vgicd_client_save (cs, &record, &error));
  g_assert_no_error (error);
  vgicd_client_get_stats (cs, &st);
  g_assert_false (st.batched);
  g_assert_cmpuint (st.ioctls, >=, st.entries);
  g_assert_true (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                    g_bytes_get_size (record), &error));
  g_assert_no_error (error);
  vgicd_client_get_stats (cd, &st);
  g_assert_false (st.batched);
  got = visible_state (dst, s);
  g_assert_true (g_bytes_equal (want, got));

  /* The probe's one batch, on each side; nothing more. */
  vgic_sim_counters_get (src, &c);
  g_assert_cmpuint (c.foreign_calls, ==, 1);
  g_assert_cmpuint (c.batch_calls, ==, 0);
  g_assert_cmpuint (c.single_get, >, 0);
  vgic_sim_counters_get (dst, &c);
  g_assert_cmpuint (c.foreign_calls, ==, 1);
  g_assert_cmpuint (c.batch_calls, ==, 0);
  g_assert_cmpuint (c.single_set, >, 0);

  g_assert_cmpuint (vgicd_harness_stat (h, "foreign-batch"), ==, 2);
  g_assert_cmpuint (vgicd_harness_stat (h, "fallbacks"), >=, 2);
  log = vgicd_harness_read_log (h);
  g_assert_nonnull (strstr (log, "VM src: the kernel's device-attr group 10 is another "
                                 "batch interface (it wrote outside the entries' values)"));
  g_assert_nonnull (strstr (log, "every save and load of this VM runs one register per ioctl"));
  g_assert_nonnull (strstr (log, "not used; running one register per ioctl"));
}

/* An executor that attaches while a vCPU runs (a re-attach after vgicd
 * restarted, while the guest runs) cannot verify the batch group: it says
 * "unknown", and vgicd, whose own probe has no answer here (not an arm64
 * host), drives the VM one by one, logged and counted, though the kernel
 * has the group.  Nothing is given a batch it did not verify. */
static void
test_unverified_batch_runs_single (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[3];
  g_autoptr (VgicSim) src = make_sim (s, TRUE);
  g_autoptr (VgicdClient) cs = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *log = NULL;
  VgicdClientStats st;
  VgicSimCounters c;

  vgic_sim_set_vcpu_running (src, 1, TRUE);
  g_assert_cmpint (vgicd_client_probe_batch (vgic_sim_get_fd (src)), ==, -EBUSY);
  cs = attach (h, src, s, "src");
  vgic_sim_set_vcpu_running (src, 1, FALSE);
  vgic_sim_counters_reset (src);
  g_assert_true (vgicd_client_save (cs, &record, &error));
  g_assert_no_error (error);
  vgicd_client_get_stats (cs, &st);
  g_assert_false (st.batched);
  vgic_sim_counters_get (src, &c);
  g_assert_cmpuint (c.batch_calls, ==, 0);
  g_assert_cmpuint (vgicd_harness_stat (h, "fallbacks"), >=, 1);
  g_assert_cmpuint (vgicd_harness_stat (h, "foreign-batch"), ==, 0);
  log = vgicd_harness_read_log (h);
  g_assert_nonnull (strstr (log, "VM src: neither its executor nor vgicd's start-up probe "
                                 "could verify the kernel's vGIC batch group (its executor: "
                                 "the vGIC batch group could not be verified: a single read"));
}

/* The writes QEMU's put would make of @sim's state, in @order (see
 * test_fields()). */
static VgicdAccess *
qemu_put_of (VgicSim *sim, const Shape *s, VgicPutOrder order, gsize *n)
{
  g_autoptr (VgicShape) shape = sim_vm_shape (sim, s->vcpus, s->irqs);
  g_autoptr (VgicList) reads = NULL;
  g_autoptr (VgicValues) values = NULL;
  g_autoptr (VgicList) put = NULL;
  g_autoptr (GError) error = NULL;
  VgicdAccess *out;

  reads = vgic_direct_save (shape, vgic_sim_get_fd (sim), VGIC_EXEC_SINGLE, FALSE, NULL, &error);
  g_assert_no_error (error);
  values = vgic_values_from_reads (reads->entries, reads->len, &error);
  g_assert_no_error (error);
  put = vgic_plan_restore_write_in (shape, values, FALSE, order, &error);
  g_assert_no_error (error);
  out = g_new (VgicdAccess, put->len);
  for (guint i = 0; i < put->len; i++)
    out[i] = (VgicdAccess) { put->entries[i].group, put->entries[i].attr,
                             put->entries[i].value };
  *n = put->len;
  return out;
}

/* The stream of QEMU's own fields: SaveFields hands back exactly what the
 * one-by-one get reads, batched; LoadList runs QEMU's own restore, batched,
 * and the destination then reads back what the source held.  (The write
 * list here is vgicd's planner's, which follows kvm_arm_gicv3_put; the
 * nested QEMU tier runs the real put.)  A damaged list writes nothing; mode
 * off declines SaveFields; Record= is announced. */
static void
test_fields (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[2];
  g_autoptr (VgicSim) src = make_sim (s, TRUE);
  g_autoptr (VgicSim) dst = make_sim (s, TRUE);
  g_autoptr (VgicSim) spoilt = make_sim (s, TRUE);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL, cx = NULL;
  g_autoptr (VgicdRegs) regs = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) want = NULL, got = NULL;
  g_autoptr (VgicSimState) before = NULL;
  g_autofree VgicdAccess *put = NULL;
  g_autoptr (VgicShape) shape = NULL;
  g_autoptr (VgicList) direct = NULL;
  VgicdClientStats st;
  gsize n;

  vgic_sim_randomize (src, 41);
  cs = attach (h, src, s, "fields-src");
  g_assert_true (vgicd_client_offers_fields (cs));
  g_assert_false (vgicd_client_wants_record (cs));

  /* Every register QEMU's get reads, with the value it reads. */
  g_assert_true (vgicd_client_save_fields (cs, &regs, &error));
  g_assert_no_error (error);
  vgicd_client_get_stats (cs, &st);
  g_assert_true (st.batched);
  g_assert_cmpuint (st.ioctls, <=, 4);
  shape = sim_vm_shape (src, s->vcpus, s->irqs);
  direct = vgic_direct_save (shape, vgic_sim_get_fd (src), VGIC_EXEC_SINGLE, FALSE, NULL,
                             &error);
  g_assert_no_error (error);
  assert_regs_read (regs, direct);

  /* QEMU's own restore, batched, into a fresh VM. */
  put = qemu_put_of (src, s, VGIC_PUT_CLEAR_PENDING, &n);
  /* Collected where the patched QEMU collects them: in the room the
   * client lends (none before it attaches). */
  {
    g_autoptr (VgicdClient) unattached = vgicd_client_connect (h->address, 2000, &error);
    size_t room = 1;

    g_assert_no_error (error);
    g_assert_null (vgicd_client_load_list_buffer (unattached, &room));
    g_assert_cmpuint (room, ==, 0);
  }
  cd = attach (h, dst, s, "fields-dst");
  {
    size_t room = 0;
    VgicdAccess *lent = vgicd_client_load_list_buffer (cd, &room);

    g_assert_nonnull (lent);
    g_assert_cmpuint (room, >=, n);
    memcpy (lent, put, n * sizeof (*put));
    g_assert_true (vgicd_client_load_list (cd, lent, n, &error));
  }
  g_assert_no_error (error);
  vgicd_client_get_stats (cd, &st);
  g_assert_true (st.batched);
  g_assert_cmpuint (st.ioctls, <=, 4);
  /* All QEMU's fields carry arrived; the routes they have no room for did
   * not (test_routes()). */
  want = qemu_visible_state (src, s);
  got = qemu_visible_state (dst, s);
  g_assert_true (g_bytes_equal (want, got));
  g_clear_pointer (&want, g_bytes_unref);
  g_clear_pointer (&got, g_bytes_unref);
  want = visible_state (src, s);
  got = visible_state (dst, s);
  g_assert_false (g_bytes_equal (want, got));

  /* Two writes out of order: refused, nothing written. */
  {
    VgicdAccess t = put[10];

    put[10] = put[11];
    put[11] = t;
  }
  cx = attach (h, spoilt, s, "fields-spoilt");
  before = vgic_sim_state_get (spoilt);
  g_assert_false (vgicd_client_load_list (cx, put, n, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_REFUSED);
  g_assert_nonnull (strstr (error->message, "differs from the one vgicd plans"));
  g_clear_error (&error);
  assert_untouched (spoilt, before);

  /* Mode off declines a SaveFields as it declines a Save. */
  g_assert_true (vgicd_harness_set_mode (h, "off", &error));
  g_clear_pointer (&regs, vgicd_regs_free);
  g_assert_false (vgicd_client_save_fields (cs, &regs, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DECLINED);
  g_assert_null (regs);
  g_clear_error (&error);

  /* ... and a LoadList (QEMU's own put then runs), changing nothing. */
  g_free (put);
  put = qemu_put_of (src, s, VGIC_PUT_CLEAR_PENDING, &n);
  g_assert_false (vgicd_client_load_list (cx, put, n, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DECLINED);
  assert_untouched (spoilt, before);
}

/* QEMU 10.2's put sets the pending registers without clearing them first
 * (VgicPutOrder): vgicd takes its list as it takes QEMU 10.0's, batched,
 * and the destination ends with the source's state, pending bits
 * included.  A list that clears some pending registers and not others is
 * neither QEMU's: refused, nothing written. */
static void
test_fields_put_order (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[2];
  g_autoptr (VgicSim) src = make_sim (s, TRUE);
  g_autoptr (VgicSim) dst = make_sim (s, TRUE);
  g_autoptr (VgicSim) spoilt = make_sim (s, TRUE);
  g_autoptr (VgicdClient) cd = NULL, cx = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) want = NULL, got = NULL;
  g_autoptr (VgicSimState) state = NULL, before = NULL;
  g_autofree VgicdAccess *put = NULL, *put10 = NULL;
  VgicdClientStats st;
  gsize n, n10, pending = 0;

  vgic_sim_randomize (src, 43);
  state = vgic_sim_state_get (src);
  for (guint i = 0; i < state->nr_irqs - 32; i++)
    pending += state->spis[i].pending;
  for (guint c = 0; c < state->nr_vcpus; c++)
    for (guint i = 0; i < 32; i++)
      pending += state->cpus[c].priv[i].pending;
  g_assert_cmpuint (pending, >, 0);	/* pending state to carry over */

  put = qemu_put_of (src, s, VGIC_PUT_SET_PENDING, &n);
  put10 = qemu_put_of (src, s, VGIC_PUT_CLEAR_PENDING, &n10);
  g_assert_cmpuint (n, <, n10);
  cd = attach (h, dst, s, "order-dst");
  g_assert_true (vgicd_client_load_list (cd, put, n, &error));
  g_assert_no_error (error);
  vgicd_client_get_stats (cd, &st);
  g_assert_true (st.batched);
  want = qemu_visible_state (src, s);
  got = qemu_visible_state (dst, s);
  g_assert_true (g_bytes_equal (want, got));

  /* QEMU 10.0's list with vCPU 0's GICR_ICPENDR0 clear taken out. */
  for (gsize i = 0; i < n10; i++)
    if (put10[i].group == KVM_DEV_ARM_VGIC_GRP_REDIST_REGS &&
        vgic_attr_low (put10[i].attr) == GICR_ICPENDR0)
      {
        memmove (&put10[i], &put10[i + 1], (n10 - i - 1) * sizeof (*put10));
        n10--;
        break;
      }
  cx = attach (h, spoilt, s, "order-spoilt");
  before = vgic_sim_state_get (spoilt);
  g_assert_false (vgicd_client_load_list (cx, put10, n10, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_REFUSED);
  assert_untouched (spoilt, before);
}

/* What QEMU's get reads of @sim, one by one; *@distinct: how many
 * registers that is (each overlapping IROUTER word is read twice). */
static VgicList *
qemu_get_of (VgicSim *sim, const Shape *s, guint *distinct)
{
  g_autoptr (VgicShape) shape = sim_vm_shape (sim, s->vcpus, s->irqs);
  g_autoptr (VgicValues) values = NULL;
  g_autoptr (GError) error = NULL;
  VgicList *reads;

  reads = vgic_direct_save (shape, vgic_sim_get_fd (sim), VGIC_EXEC_SINGLE, FALSE, NULL, &error);
  g_assert_no_error (error);
  values = vgic_values_from_reads (reads->entries, reads->len, &error);
  g_assert_no_error (error);
  *distinct = vgic_values_size (values);
  g_assert_cmpuint (*distinct, <, reads->len);
  return reads;
}

/* Another state of @sim's shape: other priorities, the same APRs. */
static void
vary_priorities (VgicSim *sim, guint8 by)
{
  g_autoptr (VgicSimState) state = vgic_sim_state_get (sim);
  g_autoptr (GError) error = NULL;

  for (guint i = 0; i < state->nr_irqs - 32; i++)
    state->spis[i].priority ^= by << 3;
  for (guint c = 0; c < state->nr_vcpus; c++)
    for (guint i = 0; i < 32; i++)
      state->cpus[c].priv[i].priority ^= by << 3;
  g_assert_true (vgic_sim_state_set (sim, state, &error));
  g_assert_no_error (error);
}

/* @regs holds every read of @get, with its value, looked up in the order
 * @order gives (NULL: @get's own). */
static void
assert_regs_hold (const VgicdRegs *regs, const VgicList *get, const guint *order)
{
  for (guint i = 0; i < get->len; i++)
    {
      const VgicEntry *e = &get->entries[order ? order[i] : i];
      guint64 v = ~0ULL;

      if (!vgicd_regs_lookup (regs, e->group, e->attr, &v))
        g_error ("no value for entry %u of QEMU's get", order ? order[i] : i);
      g_assert_cmphex (v, ==, e->value);
    }
}

/* A register of no vGIC save: nothing to look up, wherever the cursor is. */
static void
assert_regs_miss (const VgicdRegs *regs, const VgicShape *shape)
{
  const guint32 dist = KVM_DEV_ARM_VGIC_GRP_DIST_REGS, redist = KVM_DEV_ARM_VGIC_GRP_REDIST_REGS;
  /* A route QEMU misses, GICD_TYPER2 (the restore does not write it, so
   * no save reads it), a GICR_CTLR of an affinity no vCPU has. */
  const struct { guint32 group; guint64 attr; } never[] = {
    { dist, vgic_attr (0, GICD_IROUTER + 8 * (shape->nr_irqs - 1)) },
    { dist, vgic_attr (0, GICD_TYPER2) },
    { redist, vgic_attr (0xff00ff, GICR_CTLR) },
  };
  guint64 v = 7;

  for (guint i = 0; i < G_N_ELEMENTS (never); i++)
    {
      g_assert_false (vgicd_regs_lookup (regs, never[i].group, never[i].attr, &v));
      g_assert_cmpuint (v, ==, 7);
    }
}

/*
 * What a SaveFields hands QEMU (VgicdRegs) answers every read of QEMU's
 * get with its value, in any order: the read order (a cursor), backwards,
 * shuffled and from the middle (an index built at the first miss, the
 * cursor taking up again after it); nothing for a register no save reads;
 * and the number of registers, each counted once.  A VgicdRegs still held
 * at the next save keeps its values (that save reads into other memory),
 * and outlives its client.
 */
static void
test_fields_regs (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[1];	/* LPIs and 4 APRs: round 2 as the host does not guess */
  g_autoptr (VgicSim) src = make_sim (s, TRUE);
  g_autoptr (VgicShape) shape = sim_vm_shape (src, s->vcpus, s->irqs);
  VgicdClient *cs;
  g_autoptr (VgicdRegs) first = NULL, held = NULL, next = NULL;
  g_autoptr (VgicList) get1 = NULL, get2 = NULL, get3 = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GRand) rand = g_rand_new_with_seed (5);
  g_autofree guint *order = NULL;
  guint distinct;

  vgic_sim_randomize (src, 51);
  cs = attach (h, src, s, "regs-src");
  get1 = qemu_get_of (src, s, &distinct);

  /* The first save of a VM new to the host reads round 2 twice (the guess,
   * then what round 1 says): each register once all the same. */
  g_assert_true (vgicd_client_save_fields (cs, &first, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (vgicd_regs_count (first), ==, distinct);
  assert_regs_hold (first, get1, NULL);

  /* Saved again (round 2 as the last save found it: one step), another
   * state, while the first is held. */
  vary_priorities (src, 1);
  get2 = qemu_get_of (src, s, &distinct);
  g_assert_true (vgicd_client_save_fields (cs, &held, &error));
  g_assert_no_error (error);
  assert_regs_hold (held, get2, NULL);
  assert_regs_hold (first, get1, NULL);
  g_assert_cmpuint (vgicd_regs_count (held), ==, distinct);

  /* The first let go, the next save reads into the client's storage
   * again: the one still held keeps its values. */
  g_clear_pointer (&first, vgicd_regs_free);
  vary_priorities (src, 2);
  get3 = qemu_get_of (src, s, &distinct);
  g_assert_true (vgicd_client_save_fields (cs, &next, &error));
  g_assert_no_error (error);
  assert_regs_miss (next, shape);
  assert_regs_hold (next, get3, NULL);
  assert_regs_hold (held, get2, NULL);

  /* Any order. */
  order = g_new (guint, get3->len);
  for (guint i = 0; i < get3->len; i++)
    order[i] = get3->len - 1 - i;
  assert_regs_hold (next, get3, order);
  for (guint i = 0; i < get3->len; i++)
    order[i] = (i + get3->len / 2) % get3->len;
  assert_regs_hold (next, get3, order);
  for (guint i = get3->len - 1; i > 0; i--)
    {
      guint j = g_rand_int_range (rand, 0, i + 1), t = order[i];

      order[i] = order[j];
      order[j] = t;
    }
  assert_regs_hold (next, get3, order);
  assert_regs_miss (next, shape);
  assert_regs_hold (next, get3, NULL);
  g_assert_cmpuint (vgicd_regs_count (next), ==, distinct);

  /* The client gone, what it read stays. */
  vgicd_client_free (cs);
  assert_regs_hold (next, get3, NULL);
  assert_regs_hold (held, get2, NULL);
}

typedef struct {
  VgicdClient *c;
  VgicdRegs *regs;
  GError *error;
} SaveFieldsJob;

static gpointer
save_fields_thread (gpointer data)
{
  SaveFieldsJob *job = data;

  vgicd_client_save_fields (job->c, &job->regs, &job->error);
  return NULL;
}

/*
 * A register read twice keeps its last read.  The first save of a VM new
 * to the host reads the LPI bases and APR 0 in the guessed round 2, and
 * again in round 2 proper; the VM's vCPU 0 changes them in between (held at
 * round 2's ioctl), so the two reads differ, and QEMU's get, in its order,
 * must find what round 2 read.
 */
static void
test_fields_regs_last_read_wins (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) twin = make_sim (s, TRUE);
  g_autoptr (VgicSim) src = make_sim (s, TRUE);
  g_autoptr (VgicShape) shape = sim_vm_shape (src, s->vcpus, s->irqs);
  g_autoptr (VgicdClient) ct = NULL, cs = NULL;
  g_autoptr (VgicdRegs) regs = NULL;
  g_autoptr (VgicList) before = NULL, after = NULL;
  g_autoptr (VgicSimState) state = NULL;
  g_autoptr (GError) error = NULL;
  SaveFieldsJob job = { 0 };
  VgicdClientStats st;
  const guint64 pendbaser = vgic_attr (shape->mpidrs[0], GICR_PENDBASER);
  const guint64 ap0r0 = vgic_attr (shape->mpidrs[0], ICC_AP0R_EL1 (0));
  guint distinct, changed = 0;
  GThread *t;

  /* How many ioctls a first save makes: round 2 proper is the last. */
  vgic_sim_randomize (twin, 61);
  ct = attach (h, twin, s, "regs-twin");
  g_assert_true (vgicd_client_save_fields (ct, &regs, &error));
  g_assert_no_error (error);
  vgicd_client_get_stats (ct, &st);
  g_clear_pointer (&regs, vgicd_regs_free);

  vgic_sim_randomize (src, 61);
  cs = attach (h, src, s, "regs-src");
  before = qemu_get_of (src, s, &distinct);
  vgic_sim_stall_at (src, st.ioctls);
  job.c = cs;
  t = g_thread_new ("save-fields", save_fields_thread, &job);
  g_assert_true (vgic_sim_wait_stalled (src, 10000));
  state = vgic_sim_state_get (src);
  state->cpus[0].pendbaser ^= 1ULL << 16;
  state->cpus[0].ap0r[0] ^= 1;
  g_assert_true (vgic_sim_state_set (src, state, &error));
  g_assert_no_error (error);
  vgic_sim_release (src);
  g_thread_join (t);
  g_assert_no_error (job.error);
  regs = job.regs;

  /* Round 2 read the new values; everything else is as it was. */
  after = qemu_get_of (src, s, &distinct);
  g_assert_cmpuint (after->len, ==, before->len);
  for (guint i = 0; i < after->len; i++)
    if (after->entries[i].value != before->entries[i].value)
      {
        g_assert_true (after->entries[i].attr == pendbaser || after->entries[i].attr == ap0r0);
        changed++;
      }
  g_assert_cmpuint (changed, ==, 2);
  assert_regs_hold (regs, after, NULL);
  g_assert_cmpuint (vgicd_regs_count (regs), ==, distinct);
}

/* Route every SPI QEMU's addressing misses (above nr_irqs / 2) to a vCPU
 * other than vCPU 0, whose affinity is 0: a route a fresh destination
 * could only have by chance. */
static guint
route_high_spis (VgicSim *sim, const Shape *s)
{
  g_autoptr (VgicSimState) state = vgic_sim_state_get (sim);
  g_autoptr (GError) error = NULL;
  guint n = 0;

  for (guint irq = s->irqs / 2 + 1; irq < s->irqs; irq++, n++)
    state->spis[irq - 32].route = vgic_sim_get_mpidr (sim, 1 + irq % (s->vcpus - 1)) & 0xffffff;
  g_assert_true (vgic_sim_state_set (sim, state, &error));
  g_assert_no_error (error);
  return n;
}

/* How many SPIs route differently on @a and @b. */
static guint
routes_differing (VgicSim *a, VgicSim *b, const Shape *s)
{
  g_autoptr (VgicSimState) x = vgic_sim_state_get (a);
  g_autoptr (VgicSimState) y = vgic_sim_state_get (b);
  guint n = 0;

  for (guint irq = 32; irq < s->irqs; irq++)
    n += x->spis[irq - 32].route != y->spis[irq - 32].route;
  return n;
}

/*
 * Every SPI's route is migrated through vgicd's record, including those
 * QEMU 10.0's GICD_IROUTER addressing misses (0x6000 + 4n: the SPIs above
 * nr_irqs / 2); QEMU's own path and vgicd's fields path keep QEMU's
 * accesses, and lose them.  A record whose source never set those routes
 * is written as version 1, which any vgicd loads.
 */
static void
test_routes (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[3];	/* 64 vCPUs, 992 IRQs: 495 routes QEMU misses */
  g_autoptr (VgicSim) src = make_sim (s, TRUE);
  g_autoptr (VgicSim) dst = make_sim (s, TRUE);
  g_autoptr (VgicSim) own = make_sim (s, TRUE);
  g_autoptr (VgicSim) plain = make_sim (s, TRUE);
  g_autoptr (VgicSim) plain_dst = make_sim (s, TRUE);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL, cp = NULL, cpd = NULL;
  g_autoptr (VgicSimState) a = NULL, b = NULL;
  g_autoptr (GString) diff = g_string_new (NULL);
  g_autoptr (GBytes) record = NULL, plain_record = NULL;
  g_autoptr (VgicRecord) r = NULL;
  g_autoptr (VgicShape) shape = NULL;
  g_autoptr (VgicList) reads = NULL;
  g_autoptr (VgicValues) values = NULL;
  g_autoptr (GError) error = NULL;
  guint high;

  vgic_sim_randomize (src, 4242);
  high = route_high_spis (src, s);
  g_assert_cmpuint (high, ==, s->irqs / 2 - 1);

  /* Through vgicd's record: the whole register file arrives. */
  cs = attach (h, src, s, "routes-src");
  cd = attach (h, dst, s, "routes-dst");
  g_assert_true (vgicd_client_save (cs, &record, &error));
  g_assert_no_error (error);
  r = vgic_record_decode (g_bytes_get_data (record, NULL), g_bytes_get_size (record), &error);
  g_assert_no_error (error);
  g_assert_cmpuint (r->version, ==, VGIC_RECORD_VERSION_ROUTES);
  g_assert_true (r->routes);
  g_assert_true (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                    g_bytes_get_size (record), &error));
  g_assert_no_error (error);
  a = vgic_sim_state_get (src);
  b = vgic_sim_state_get (dst);
  if (!vgic_sim_state_equal (a, b, diff))
    g_error ("the record path lost state: %s", diff->str);

  /* QEMU's own path: every route QEMU misses stays the fresh VM's 0. */
  shape = sim_vm_shape (src, s->vcpus, s->irqs);
  reads = vgic_direct_save (shape, vgic_sim_get_fd (src), VGIC_EXEC_SINGLE, FALSE, NULL,
                            &error);
  g_assert_no_error (error);
  values = vgic_values_from_reads (reads->entries, reads->len, &error);
  g_assert_no_error (error);
  g_assert_true (vgic_direct_restore (shape, vgic_sim_get_fd (own), values, FALSE,
                                      VGIC_EXEC_SINGLE, NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (routes_differing (src, own, s), ==, high);

  /* A VM that never routed those SPIs: a version 1 record, as an older
   * vgicd writes and reads it; loaded, those routes stay the
   * destination's (0 on a fresh VM, as the source's). */
  vgic_sim_randomize (plain, 4242);
  {
    g_autoptr (VgicSimState) p = vgic_sim_state_get (plain);

    for (guint irq = s->irqs / 2 + 1; irq < s->irqs; irq++)
      p->spis[irq - 32].route = 0;
    g_assert_true (vgic_sim_state_set (plain, p, &error));
    g_assert_no_error (error);
  }
  cp = attach_uuid (h, plain, s, "routes-plain", "0f3c1a2e-0000-4000-8000-000000000002");
  cpd = attach_uuid (h, plain_dst, s, "routes-plain-dst", "0f3c1a2e-0000-4000-8000-000000000003");
  g_assert_true (vgicd_client_save (cp, &plain_record, &error));
  g_assert_no_error (error);
  g_clear_pointer (&r, vgic_record_free);
  r = vgic_record_decode (g_bytes_get_data (plain_record, NULL),
                          g_bytes_get_size (plain_record), &error);
  g_assert_no_error (error);
  g_assert_cmpuint (r->version, ==, 1);
  g_assert_false (r->routes);
  g_assert_cmpuint (g_bytes_get_size (plain_record), ==,
                    g_bytes_get_size (record) - (gsize) high * 20);	/* 20 bytes an entry */
  g_assert_true (vgicd_client_load (cpd, g_bytes_get_data (plain_record, NULL),
                                    g_bytes_get_size (plain_record), &error));
  g_assert_no_error (error);
  g_clear_pointer (&a, vgic_sim_state_free);
  g_clear_pointer (&b, vgic_sim_state_free);
  a = vgic_sim_state_get (plain);
  b = vgic_sim_state_get (plain_dst);
  g_string_truncate (diff, 0);
  if (!vgic_sim_state_equal (a, b, diff))
    g_error ("the version 1 record lost state: %s", diff->str);
}

/* A save into QEMU's fields that ended without vgicd's answer (its guess
 * held) leaves its reads in the window for vgicd to take: the client's
 * next call must wait for that answer before it writes the window again.
 * A record loaded through the window right after such a save, on the same
 * client, must leave both the save and the load ok in vgicd's history (a
 * window overwritten under vgicd would fail the save there, as results
 * that are not what vgicd laid out). */
static void
test_fields_save_then_window (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[3];	/* an ITS and 1 APR: the host's first guess */
  g_autoptr (VgicSim) vm = make_sim (s, TRUE);
  g_autoptr (VgicSim) other = make_sim (s, TRUE);
  g_autoptr (VgicdClient) c = NULL, co = NULL;
  g_autoptr (VgicdRegs) regs = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GPtrArray) hist = NULL;
  g_autoptr (GError) error = NULL;
  const char *uuid = "0f3c1a2e-0000-4000-8000-0000000000f5";

  vgic_sim_randomize (other, 81);
  co = attach (h, other, s, "record-src");
  g_assert_true (vgicd_client_save (co, &record, &error));
  g_assert_no_error (error);
  c = attach_uuid (h, vm, s, "save-then-window", uuid);
  for (guint round = 0; round < 5; round++)
    {
      g_clear_pointer (&regs, vgicd_regs_free);
      g_assert_true (vgicd_client_save_fields (c, &regs, &error));
      g_assert_no_error (error);
      g_assert_true (vgicd_client_load (c, g_bytes_get_data (record, NULL),
                                        g_bytes_get_size (record), &error));
      g_assert_no_error (error);
    }
  hist = history (h, uuid, 0);
  g_assert_cmpuint (hist->len, >=, 2);
  for (guint i = 0; i < hist->len; i++)
    {
      g_test_message ("%s: %s", hstr (hist, i, "direction"), hstr (hist, i, "outcome"));
      g_assert_cmpstr (hstr (hist, i, "outcome"), ==, "ok");
    }
}

int
main (int argc, char **argv)
{
  vgicd_test_init (&argc, &argv);
  static const ModeCase auto_batch = { "auto", TRUE, TRUE };
  static const ModeCase single = { "single", TRUE, FALSE };

  g_test_add_data_func ("/vgicd/round-trip/auto-batch", &auto_batch, test_round_trip);
  g_test_add_data_func ("/vgicd/round-trip/single", &single, test_round_trip);
  g_test_add_func ("/vgicd/round-trip/old-kernel-single-path", test_old_kernel_single_path);
  g_test_add_func ("/vgicd/round-trip/foreign-batch-abi", test_foreign_batch_abi);
  g_test_add_func ("/vgicd/round-trip/unverified-batch-runs-single",
                   test_unverified_batch_runs_single);
  g_test_add_func ("/vgicd/fields", test_fields);
  g_test_add_func ("/vgicd/fields/put-order", test_fields_put_order);
  g_test_add_func ("/vgicd/fields/regs", test_fields_regs);
  g_test_add_func ("/vgicd/fields/save-then-window", test_fields_save_then_window);
  g_test_add_func ("/vgicd/fields/regs/last-read-wins", test_fields_regs_last_read_wins);
  g_test_add_func ("/vgicd/routes", test_routes);
  return g_test_run ();
}
