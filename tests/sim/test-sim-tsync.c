/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-sim-tsync.c - vgic_sim_supervise_self() called while another thread
 * already runs: TSYNC puts the filter on that thread too, so its ioctls on
 * a sim fd are served.  (Its own binary: supervision is once per process.)
 */
#include "sim-util.h"

static GMutex lock;
static GCond cond;
static gboolean go;

static gpointer
early_thread (gpointer data)
{
  VgicSim *sim = data;

  g_mutex_lock (&lock);
  while (!go)
    g_cond_wait (&cond, &lock);
  g_mutex_unlock (&lock);
  return GINT_TO_POINTER (sim_set32 (vgic_sim_get_fd (sim), GRP_DIST,
                                     vgic_attr (0, GICD_ISENABLER + 4), 0x11));
}

static void
test_tsync_thread_started_before (void)
{
  g_autoptr (VgicSim) sim = sim_new (2, 64, FALSE, 5);
  g_autoptr (GError) error = NULL;
  GThread *t = g_thread_new ("early", early_thread, sim);

  g_assert_true (vgic_sim_supervise_self (&error));
  g_assert_no_error (error);
  g_mutex_lock (&lock);
  go = TRUE;
  g_cond_signal (&cond);
  g_mutex_unlock (&lock);
  g_assert_cmpint (GPOINTER_TO_INT (g_thread_join (t)), ==, 0);
  g_assert_cmphex (sim_read32 (vgic_sim_get_fd (sim), GRP_DIST,
                               vgic_attr (0, GICD_ISENABLER + 4)), ==, 0x11);
}

int
main (int argc, char **argv)
{
  /* No sim_test_init(): supervision starts inside the test. */
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/sim/mech/supervise-self-tsync-existing-thread",
                   test_tsync_thread_started_before);
  return g_test_run ();
}
