/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-logshare.c - each peer process's share of vgicd's log lines
 * (daemon/vgicd-logshare.c): the burst, the one notice, the count of what
 * was not written and its report, processes apart, and a table that
 * forgets processes whose share is full again.  Waits are lower bounds
 * only (a share refills with time), so a busy machine cannot fail it.
 */
#include "vgicd-logshare.h"

/* A NULL table (a stand-in daemon) writes everything. */
static void
test_no_shares (void)
{
  guint64 unlogged = 7;

  for (guint i = 0; i < 1000; i++)
    g_assert_cmpint (vgicd_log_shares_take (NULL, 1, &unlogged), ==, VGICD_LOG_WRITE);
  g_assert_cmpuint (unlogged, ==, 0);
  g_assert_cmpuint (vgicd_log_shares_suppressed (NULL), ==, 0);
}

/* 3 a minute: three lines, then one notice and silence, counted; another
 * process is not charged for it. */
static void
test_burst_then_counted (void)
{
  g_autoptr (VgicdLogShares) shares = vgicd_log_shares_new (3);
  guint64 unlogged;

  for (guint i = 0; i < 3; i++)
    {
      g_assert_cmpint (vgicd_log_shares_take (shares, 100, &unlogged), ==, VGICD_LOG_WRITE);
      g_assert_cmpuint (unlogged, ==, 0);
    }
  g_assert_cmpint (vgicd_log_shares_take (shares, 100, &unlogged), ==, VGICD_LOG_DROP_FIRST);
  for (guint i = 0; i < 50; i++)
    g_assert_cmpint (vgicd_log_shares_take (shares, 100, &unlogged), ==, VGICD_LOG_DROP);
  g_assert_cmpuint (vgicd_log_shares_suppressed (shares), ==, 51);
  g_assert_cmpint (vgicd_log_shares_take (shares, 200, &unlogged), ==, VGICD_LOG_WRITE);
  g_assert_cmpuint (unlogged, ==, 0);
  g_assert_cmpuint (vgicd_log_shares_per_minute (shares), ==, 3);
  vgicd_log_shares_set_per_minute (shares, 0);	/* never below one */
  g_assert_cmpuint (vgicd_log_shares_per_minute (shares), ==, 1);
}

/* 600 a minute refill one line every 100 ms: after 150 ms the process
 * writes again, and that line carries what was dropped; it gets no second
 * notice while its share is not full again. */
static void
test_refill_reports (void)
{
  g_autoptr (VgicdLogShares) shares = vgicd_log_shares_new (600);
  guint64 unlogged;
  guint written = 0, dropped = 0;

  for (guint i = 0; i < 700; i++)
    switch (vgicd_log_shares_take (shares, 100, &unlogged))
      {
      case VGICD_LOG_WRITE:
        written++;
        break;
      case VGICD_LOG_DROP_FIRST:
        g_assert_cmpuint (dropped, ==, 0);
        G_GNUC_FALLTHROUGH;
      case VGICD_LOG_DROP:
        dropped++;
        break;
      }
  /* 600 at once, and what the time the loop took refilled. */
  g_assert_cmpuint (written, >=, 600);
  g_assert_cmpuint (written + dropped, ==, 700);
  g_assert_cmpuint (vgicd_log_shares_suppressed (shares), ==, dropped);
  if (dropped == 0)
    {
      g_test_skip ("the machine took over 10 s for 700 takes");
      return;
    }
  g_usleep (150000);
  g_assert_cmpint (vgicd_log_shares_take (shares, 100, &unlogged), ==, VGICD_LOG_WRITE);
  g_assert_cmpuint (unlogged, ==, dropped);
  while (vgicd_log_shares_take (shares, 100, &unlogged) == VGICD_LOG_WRITE)
    g_assert_cmpuint (unlogged, ==, 0);
  g_assert_cmpint (vgicd_log_shares_take (shares, 100, &unlogged), ==, VGICD_LOG_DROP);
}

/* A thousand processes that each wrote a line, their shares full again a
 * second later (60 a minute): the next takes sweep them out. */
static void
test_table_forgets (void)
{
  g_autoptr (VgicdLogShares) shares = vgicd_log_shares_new (60);
  guint64 unlogged;

  for (guint pid = 1000; pid < 2000; pid++)
    g_assert_cmpint (vgicd_log_shares_take (shares, pid, &unlogged), ==, VGICD_LOG_WRITE);
  g_assert_cmpuint (vgicd_log_shares_tracked (shares), ==, 1000);
  g_usleep (G_USEC_PER_SEC + G_USEC_PER_SEC / 10);
  for (guint i = 0; i < 64; i++)
    vgicd_log_shares_take (shares, 5000 + i, &unlogged);
  g_assert_cmpuint (vgicd_log_shares_tracked (shares), <=, 64);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/logshare/no-shares", test_no_shares);
  g_test_add_func ("/logshare/burst-then-counted", test_burst_then_counted);
  g_test_add_func ("/logshare/refill-reports", test_refill_reports);
  g_test_add_func ("/logshare/table-forgets", test_table_forgets);
  return g_test_run ();
}
