/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-vgicd-faults.c - what does not fit or fails: records refused and
 * destinations the guards refuse, with nothing written; kernel errors at
 * each point of a save and a load, a running vCPU, another VM's record;
 * vgicd and a bystander VM carry on.
 */
#include <errno.h>

#include "vgicd-test.h"

/* A record that does not fit its VM changes nothing. */
static void
test_refused_records_change_nothing (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape four = { 4, 128, TRUE, 5 }, eight = { 8, 128, TRUE, 5 };
  g_autoptr (VgicSim) src = make_sim (&four, TRUE);
  g_autoptr (VgicSim) dst = make_sim (&eight, TRUE);
  g_autoptr (VgicSim) dst4 = make_sim (&four, TRUE);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL, cd4 = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicSimState) before = NULL, before4 = NULL;
  g_autofree guint8 *bad = NULL;
  gsize len;

  /* dst (8 vCPUs) holds state of its own; dst4 is a fresh VM, as a real
   * destination is, so that the correct record loads into it at the end. */
  vgic_sim_randomize (src, 9);
  vgic_sim_randomize (dst, 10);
  cs = attach (h, src, &four, "src");
  cd = attach (h, dst, &eight, "dst8");
  cd4 = attach (h, dst4, &four, "dst4");
  g_assert_true (vgicd_client_save (cs, &record, &error));
  len = g_bytes_get_size (record);

  /* 4 vCPUs into 8. */
  before = vgic_sim_state_get (dst);
  vgic_sim_counters_reset (dst);
  g_assert_false (vgicd_client_load (cd, g_bytes_get_data (record, NULL), len, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_REFUSED);
  g_assert_nonnull (strstr (error->message, "4 vCPUs but this VM has 8"));
  g_clear_error (&error);
  assert_untouched (dst, before);

  /* Truncated, then one flipped byte, into a VM of the right shape. */
  before4 = vgic_sim_state_get (dst4);
  g_assert_false (vgicd_client_load (cd4, g_bytes_get_data (record, NULL), len - 7, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_REFUSED);
  g_clear_error (&error);
  bad = g_memdup2 (g_bytes_get_data (record, NULL), len);
  bad[len / 2] ^= 0x40;
  g_assert_false (vgicd_client_load (cd4, bad, len, &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_REFUSED);
  g_assert_nonnull (strstr (error->message, "checksum"));
  g_clear_error (&error);
  assert_untouched (dst4, before4);

  /* The sessions stay usable. */
  vgicd_client_load (cd4, g_bytes_get_data (record, NULL), len, &error);
  g_assert_no_error (error);
}

/* A destination that fails the checks QEMU makes before it writes (here:
 * no ITS, so no LPIs, where the source had them) is refused by the guards
 * libvgicd runs: vgicd names the difference, and nothing is written. */
static void
test_guards_refuse_destination (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape with = { 4, 128, TRUE, 5 }, without = { 4, 128, FALSE, 5 };
  g_autoptr (VgicSim) src = make_sim (&with, TRUE);
  g_autoptr (VgicSim) dst = make_sim (&without, TRUE);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicSimState) before = NULL;
  VgicdClientStats st;

  vgic_sim_randomize (src, 21);
  vgic_sim_randomize (dst, 22);
  cs = attach (h, src, &with, "src");
  cd = attach (h, dst, &without, "dst");
  g_assert_true (vgicd_client_save (cs, &record, &error));

  before = vgic_sim_state_get (dst);
  vgic_sim_counters_reset (dst);
  g_assert_false (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                     g_bytes_get_size (record), &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_REFUSED);
  g_assert_nonnull (strstr (error->message, "ITS configuration"));
  g_assert_nonnull (strstr (error->message, "nothing written"));
  g_clear_error (&error);
  /* The guard reads ran (QEMU's three, and each vCPU's ICC_CTLR_EL1), and
   * nothing else. */
  vgicd_client_get_stats (cd, &st);
  g_assert_cmpuint (st.entries, ==, 3 + 4);
  assert_untouched (dst, before);
}

/* Row 8: a record from a host whose GIC implements more priority bits
 * than the destination's.  The kernel refuses such an ICC_CTLR_EL1 when it
 * is written, which used to be after the distributor and every
 * redistributor: the destination was left partly written.  The guards now
 * read each vCPU's ICC_CTLR_EL1 first, and nothing is written. */
static void
test_guards_refuse_cpu_interface (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape seven = { 4, 128, TRUE, 7 }, five = { 4, 128, TRUE, 5 };
  g_autoptr (VgicSim) src = make_sim (&seven, TRUE);
  g_autoptr (VgicSim) dst = make_sim (&five, TRUE);
  g_autoptr (VgicSim) dst7 = make_sim (&seven, TRUE);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL, cd7 = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicSimState) before = NULL;
  VgicdClientStats st;

  /* Randomized, the source's vCPUs use 5 to 7 priority bits; seed 5 gives
   * vCPU 0 more than 5 (asserted through the message below). */
  vgic_sim_randomize (src, 5);
  cs = attach (h, src, &seven, "src");
  cd = attach (h, dst, &five, "dst");
  cd7 = attach (h, dst7, &seven, "dst7");
  g_assert_true (vgicd_client_save (cs, &record, &error));

  before = vgic_sim_state_get (dst);
  vgic_sim_counters_reset (dst);
  g_assert_false (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                     g_bytes_get_size (record), &error));
  g_test_message ("%s", error->message);
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_REFUSED);
  g_assert_nonnull (strstr (error->message, "ICC_CTLR_EL1"));
  g_assert_nonnull (strstr (error->message, "priority bits"));
  g_assert_nonnull (strstr (error->message, "nothing written"));
  g_clear_error (&error);
  vgicd_client_get_stats (cd, &st);
  g_assert_cmpuint (st.entries, ==, 3 + 4);
  assert_untouched (dst, before);

  /* The same record loads into a destination with as many bits. */
  g_assert_true (vgicd_client_load (cd7, g_bytes_get_data (record, NULL),
                                    g_bytes_get_size (record), &error));
  g_assert_no_error (error);

  /* A peer without guards: vgicd reads the same registers in a step of
   * their own, judges them, and ends the load before any write. */
  {
    g_autoptr (VgicSim) old_dst = make_sim (&five, FALSE);
    g_autoptr (VgicSimState) old_before = vgic_sim_state_get (old_dst);
    g_autoptr (GVariant) last = NULL;
    OldPeer pd = { 0 };
    const char *action = NULL, *msg = NULL;
    guint steps;

    old_peer_attach (&pd, h, old_dst, &five, "old-dst");
    last = old_peer_run (&pd, old_dst, "Load",
                         g_variant_new ("(@ay)",
                                        g_variant_new_from_bytes (G_VARIANT_TYPE_BYTESTRING,
                                                                  record, TRUE)),
                         &steps);
    g_assert_true (g_variant_lookup (last, "action", "&s", &action));
    g_assert_cmpstr (action, !=, "done");
    g_assert_cmpuint (steps, ==, 1);	/* the check reads, and no write step */
    g_assert_true (g_variant_lookup (last, "message", "&s", &msg));
    g_test_message ("protocol 1 peer: %s: %s", action, msg);
    g_assert_nonnull (strstr (msg, "ICC_CTLR_EL1"));
    assert_untouched (old_dst, old_before);
    old_peer_clear (&pd);
  }
}

/* After each fault: vgicd is up with its three sessions and no more
 * descriptors than before, and the bystander VM saves what it holds. */
static void
campaign_check (VgicdHarness *h, guint fds0, VgicdClient *bystander, GBytes *bystander_record)
{
  g_autoptr (GBytes) again = NULL;
  g_autoptr (GError) error = NULL;

  g_assert_cmpint (kill (h->vgicd_pid, 0), ==, 0);
  wait_sessions (h, 3);	/* a closed peer's detach reaches vgicd in its own time */
  g_assert_cmpuint (vgicd_harness_open_fds (h), <=, fds0);
  g_assert_true (vgicd_client_save (bystander, &again, &error));
  g_assert_no_error (error);
  g_assert_true (g_bytes_equal (again, bystander_record));
}

/* A kernel (sim) error at access k, for k spread over a save and over a
 * load, -EBUSY from a running vCPU, and the out-of-order calls (Next with
 * nothing to run, Save twice, another VM's record).  For each: the caller's
 * error names the cause; vgicd keeps its sessions, and no descriptor; a
 * bystander VM is unaffected; a save changes nothing, a load that fails in
 * its reads writes nothing (compared), one that fails in its writes says
 * how many were applied; and the same call then succeeds. */
static void
test_fault_campaign (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) src = make_sim (s, TRUE);
  g_autoptr (VgicSim) dst = make_sim (s, TRUE);
  g_autoptr (VgicSim) by = make_sim (s, TRUE);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL, cb = NULL;
  g_autoptr (GBytes) record = NULL, by_record = NULL;
  g_autoptr (GError) error = NULL;
  VgicdClientStats st;
  guint n_save, n_load, guards = 3 + s->vcpus, fds0, faults = 0;

  vgic_sim_randomize (src, 41);
  vgic_sim_randomize (by, 42);
  cs = attach (h, src, s, "src");
  cd = attach (h, dst, s, "dst");
  cb = attach (h, by, s, "bystander");
  g_assert_true (vgicd_client_save (cb, &by_record, &error));
  g_assert_true (vgicd_client_save (cs, &record, &error));
  g_assert_true (vgicd_client_save (cs, &record, &error));	/* the guess settled */
  vgicd_client_get_stats (cs, &st);
  n_save = st.entries;
  g_assert_true (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                    g_bytes_get_size (record), &error));
  g_assert_no_error (error);
  vgicd_client_get_stats (cd, &st);
  n_load = st.entries;
  fds0 = vgicd_harness_open_fds (h);
  g_assert_cmpuint (fds0, >, 0);	/* 0: /proc had nothing for vgicd */
  g_test_message ("save: %u accesses; load: %u (%u guard reads, then writes)", n_save,
                  n_load, guards);

  for (guint i = 0; i <= 8; i++)
    {
      const guint k = i < 8 ? i * n_save / 8 : n_save - 1;
      g_autoptr (VgicSimState) before = vgic_sim_state_get (src);
      g_autoptr (GBytes) got = NULL;

      const guint64 rounds = vgicd_harness_stat (h, "second-rounds");

      vgic_sim_fail_at (src, k, -EIO);
      if (vgicd_client_save (cs, &got, &error))
        {
          /* An error in the guessed round 2 (the save's last reads) is
           * taken as a guess that missed: round 2 is read again, and the
           * save completes, counted. */
          g_assert_true (g_bytes_equal (got, record));
          g_assert_cmpuint (vgicd_harness_stat (h, "second-rounds"), ==, rounds + 1);
          g_test_message ("save, error at access %u of %u: in the guessed round 2, read "
                          "again: saved", k, n_save);
          assert_untouched (src, before);
          campaign_check (h, fds0, cb, by_record);
          faults++;
          continue;
        }
      g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DEVICE);
      g_assert_nonnull (strstr (error->message, g_strerror (EIO)));
      g_test_message ("save, error at access %u of %u: %s", k, n_save, error->message);
      g_clear_error (&error);
      assert_untouched (src, before);
      campaign_check (h, fds0, cb, by_record);
      g_assert_true (vgicd_client_save (cs, &got, &error));
      g_assert_true (g_bytes_equal (got, record));
      faults++;
    }
  for (guint i = 0; i <= 8; i++)
    {
      const guint k = i == 0 ? guards / 2 : i < 8 ? guards + (i - 1) * (n_load - guards) / 7
                                                  : n_load - 1;
      g_autoptr (VgicSimState) before = vgic_sim_state_get (dst);
      g_autoptr (GBytes) got = NULL;

      vgic_sim_fail_at (dst, k, -EIO);
      g_assert_false (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                         g_bytes_get_size (record), &error));
      g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DEVICE);
      g_assert_nonnull (strstr (error->message, g_strerror (EIO)));
      g_test_message ("load, error at access %u of %u: %s", k, n_load, error->message);
      if (k <= guards)
        {
          /* a guard read, or the first write */
          g_assert_nonnull (strstr (error->message, k < guards ? "nothing was changed"
                                                               : "nothing was written"));
          assert_untouched (dst, before);
        }
      else
        {
          g_autofree char *applied = g_strdup_printf ("%u writes were applied", k - guards);

          g_assert_nonnull (strstr (error->message, applied));
        }
      g_clear_error (&error);
      campaign_check (h, fds0, cb, by_record);
      g_assert_true (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                        g_bytes_get_size (record), &error));
      g_assert_no_error (error);
      got = visible_state (dst, s);
      g_assert_true (g_bytes_equal (got, record));
      faults++;
    }

  /* A vCPU that runs: the kernel cannot lock it, so nothing is written. */
  {
    g_autoptr (VgicSimState) before = vgic_sim_state_get (dst);

    vgic_sim_set_vcpu_running (dst, 2, TRUE);
    g_assert_false (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                       g_bytes_get_size (record), &error));
    g_test_message ("load, vCPU 2 running: %s", error->message);
    g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DEVICE);
    g_assert_nonnull (strstr (error->message, g_strerror (EBUSY)));
    g_clear_error (&error);
    assert_untouched (dst, before);
    campaign_check (h, fds0, cb, by_record);
    vgic_sim_set_vcpu_running (dst, 2, FALSE);
    g_assert_true (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                      g_bytes_get_size (record), &error));
    g_assert_no_error (error);
    faults++;
  }

  /* Another VM's record (the bystander's has other values, and its VM
   * another name, but the same shape: it loads, which is right: a record
   * carries a VM's state, not its identity), and a record of another
   * shape, which is refused before any write. */
  {
    const Shape one = { 1, 64, FALSE, 5 };
    g_autoptr (VgicSim) other = make_sim (&one, TRUE);
    g_autoptr (VgicdClient) co = attach (h, other, &one, "other-shape");
    g_autoptr (GBytes) other_record = NULL;
    g_autoptr (VgicSimState) before = vgic_sim_state_get (dst);

    g_assert_true (vgicd_client_save (co, &other_record, &error));
    g_assert_false (vgicd_client_load (cd, g_bytes_get_data (other_record, NULL),
                                       g_bytes_get_size (other_record), &error));
    g_test_message ("load of a 1-vCPU VM's record: %s", error->message);
    g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_REFUSED);
    g_clear_error (&error);
    assert_untouched (dst, before);
    faults++;
  }
  wait_sessions (h, 3);	/* a closed peer's detach reaches vgicd in its own time */
  g_test_message ("%u faults, vgicd up, 3 sessions, %u descriptors (%u before)", faults,
                  vgicd_harness_open_fds (h), fds0);
}

/* A fault at write k: the load fails naming the register, vgicd and the
 * QEMU side stay usable. */
static void
test_fault_during_restore (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape *s = &shapes[1];
  g_autoptr (VgicSim) src = make_sim (s, TRUE);
  g_autoptr (VgicSim) dst = make_sim (s, TRUE);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL;
  g_autoptr (GBytes) record = NULL, again = NULL;
  g_autoptr (GError) error = NULL;

  vgic_sim_randomize (src, 3);
  cs = attach (h, src, s, "src");
  cd = attach (h, dst, s, "dst");
  g_assert_true (vgicd_client_save (cs, &record, &error));

  /* Access 104 from now: the restore's guard reads come first (3 TYPER
   * reads, 4 ICC_CTLR_EL1), so this is write 97. */
  vgic_sim_fail_at (dst, 104, -EINVAL);
  g_assert_false (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                     g_bytes_get_size (record), &error));
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DEVICE);
  g_assert_nonnull (strstr (error->message, "entry 97 of"));
  g_assert_nonnull (strstr (error->message, "97 writes were applied"));
  g_assert_nonnull (strstr (error->message, "partly restored"));
  /* GICD_CTLR, 4 x 4 LPI bases, 4 x 20 redistributor writes, then: */
  g_assert_nonnull (strstr (error->message, "writing GICD_STATUSR"));
  g_test_message ("%s", error->message);
  g_clear_error (&error);

  /* Both sides carry on: the load succeeds the second time, and a save
   * still works. */
  g_assert_true (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                    g_bytes_get_size (record), &error));
  g_assert_no_error (error);
  g_assert_true (vgicd_client_save (cd, &again, &error));
  g_assert_true (g_bytes_equal (record, again));
}

/* A "record" longer than any VM's record on the host (a damaged stream, a
 * hostile source: QEMU takes up to 16 MiB in the GIC's subsection) is
 * refused as one, without leaving QEMU: libvgicd sends its length alone,
 * vgicd refuses it and counts it; nothing written, the session kept.
 * Sent as Load's argument it was longer than any message vgicd takes, so
 * vgicd closed the connection as a misbehaving peer's (peers-closed, a
 * warning naming an honest QEMU), and QEMU's error said vgicd was
 * unreachable; refused in libvgicd (d5cc707), vgicd never knew. */
static void
test_oversized_record_refused (void)
{
  g_autoptr (VgicdHarness) h = harness ("auto");
  const Shape four = { 4, 256, TRUE, 5 };
  g_autoptr (VgicSim) src = make_sim (&four, TRUE);
  g_autoptr (VgicSim) dst = make_sim (&four, TRUE);
  g_autoptr (VgicdClient) cs = NULL, cd = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicSimState) before = NULL;
  g_autofree guint8 *huge = NULL;
  const gsize len = 4 * 1024 * 1024;

  vgic_sim_randomize (src, 11);
  cs = attach (h, src, &four, "src");
  cd = attach (h, dst, &four, "dst");
  g_assert_true (vgicd_client_save (cs, &record, &error));
  g_assert_no_error (error);
  /* The real record at its start, and 4 MiB in all. */
  huge = g_malloc0 (len);
  memcpy (huge, g_bytes_get_data (record, NULL), g_bytes_get_size (record));
  before = vgic_sim_state_get (dst);
  vgic_sim_counters_reset (dst);
  g_assert_false (vgicd_client_load (cd, huge, len, &error));
  g_test_message ("a %" G_GSIZE_FORMAT "-byte record: %s", len, error->message);
  g_assert_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_REFUSED);
  g_assert_nonnull (strstr (error->message, "nothing written"));
  g_clear_error (&error);
  assert_untouched (dst, before);
  g_assert_cmpuint (vgicd_harness_stat (h, "peers-closed"), ==, 0);
  /* Refused by vgicd on its length alone, which libvgicd sent instead of
   * the record: counted, and said, as any refusal. */
  g_assert_cmpuint (vgicd_harness_stat (h, "failures"), ==, 1);
  {
    g_autofree char *log = vgicd_harness_read_log (h);

    g_assert_nonnull (strstr (log, "it is 4194304 bytes, longer than any VM's record vgicd "
                                   "takes on this host"));
  }

  /* The session is still there: the real record loads. */
  g_assert_true (vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                                    g_bytes_get_size (record), &error));
  g_assert_no_error (error);
}

int
main (int argc, char **argv)
{
  vgicd_test_init (&argc, &argv);
  g_test_add_func ("/vgicd/refused-records-change-nothing", test_refused_records_change_nothing);
  g_test_add_func ("/vgicd/oversized-record-refused", test_oversized_record_refused);
  g_test_add_func ("/vgicd/guards-refuse-destination", test_guards_refuse_destination);
  g_test_add_func ("/vgicd/guards-refuse-cpu-interface", test_guards_refuse_cpu_interface);
  g_test_add_func ("/vgicd/fault-during-restore", test_fault_during_restore);
  g_test_add_func ("/vgicd/fault-campaign", test_fault_campaign);
  return g_test_run ();
}
