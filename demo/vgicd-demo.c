/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-demo.c - README's demo.
 *
 * Starts a private system bus and a real vgicd in a temporary directory,
 * creates a simulated source VM (160 vCPUs, 992 IRQs, an ITS so PLPIS is
 * set) with random vGIC state and an empty destination, and moves the state
 * source → record → destination:
 *
 *   - as QEMU 10.0 does it today, one register per ioctl, without vgicd;
 *   - through vgicd, one register per ioctl (Mode=single, what a kernel
 *     without the batch group gets), with vgicd's state record;
 *   - through vgicd, batched, with QEMU's own GIC fields in the stream (the
 *     default: vgicd reads in batches, "QEMU's get" looks each of its
 *     reads up in what vgicd read; "QEMU's put" hands its writes to vgicd);
 *   - through vgicd, batched, with vgicd's state record in the stream
 *     (Record=true).
 *
 * The rows are named as README's figures table names them, and
 * tests/docs/check-demo.py holds that table to what this prints.
 *
 * The demo plays QEMU: it links libvgicd and hands it vgic-sim device fds,
 * which answer real ioctl(2) calls.  After every transfer the destination
 * must read back exactly what the source held.  Times are medians over
 * several runs; "get"/"put" are the whole save and restore as QEMU would see
 * them (D-Bus round trips, planning, encoding and validation included).
 */
#include <stdio.h>
#include <stdlib.h>

#include "libvgicd.h"
#include "vgic-exec.h"
#include "vgic-plan.h"
#include "vgic-record.h"
#include "vgic-regs.h"
#include "vgic-sim.h"
#include "vgic-direct.h"
#include "vgicd-harness.h"
#include "figures.h"
#include "qemu-fields.h"
#include "sim-compare.h"

#define MAX_RUNS 31

/* How a path moves the state. */
typedef enum {
  PATH_QEMU,   /* QEMU 10.0's own accesses, no vgicd */
  PATH_FIELDS, /* vgicd, QEMU's fields in the stream */
  PATH_RECORD, /* vgicd, its state record in the stream */
} PathKind;

typedef struct {
  const char *name;
  const char *short_name; /* in the improvement lines */
  PathKind kind;
  const char *mode;       /* vgicd's host mode for this path */
  double get_ms[MAX_RUNS], put_ms[MAX_RUNS];
  guint get_ioctls, put_ioctls;
} Path;

static guint opt_vcpus = 160;
static guint opt_irqs = 992;
static guint opt_runs = 7;

static G_NORETURN void
die (const char *what, const GError *error)
{
  fprintf (stderr, "vgicd-demo: %s: %s\n", what, error ? error->message : "failed");
  exit (1);
}

/* ------------------------------------------------------------------ */
/* QEMU 10.0's own path: the same accesses, one ioctl each, no vgicd    */
/* ------------------------------------------------------------------ */

/* kvm_arm_gicv3_get: the state stays in "QEMU" (here: the values, as
 * QEMU's GICv3State would hold them). */
static VgicValues *
qemu_get (const VgicShape *shape, int fd, guint *ioctls)
{
  g_autoptr (GError) error = NULL;
  VgicExecReport r;
  g_autoptr (VgicList) reads = vgic_direct_save (shape, fd, VGIC_EXEC_SINGLE, FALSE, &r, &error);
  VgicValues *values = NULL;

  if (reads)
    values = vgic_values_from_reads (reads->entries, reads->len, &error);
  if (!values)
    die ("QEMU-equivalent get", error);
  *ioctls = r.ioctls;
  return values;
}

/* kvm_arm_gicv3_put */
static void
qemu_put (const VgicShape *shape, int fd, const VgicValues *state, guint *ioctls)
{
  g_autoptr (GError) error = NULL;
  VgicExecReport r;

  if (!vgic_direct_restore (shape, fd, state, FALSE, VGIC_EXEC_SINGLE, &r, &error))
    die ("QEMU-equivalent put", error);
  *ioctls = r.ioctls;
}

/* The patched QEMU's get with vgicd, QEMU's fields in the stream: vgicd
 * reads in batches, then every read of QEMU's get (@get, its access list in
 * its order) is looked up in what vgicd read.  Timed as the benchmark
 * times it (tests/support/qemu-fields.h): the libvgicd call and QEMU's
 * lookups; the values, which QEMU keeps in its fields as it reads them,
 * are gathered here after the clock, for the put. */
static VgicValues *
fields_get (VgicdClient *c, const VgicList *get, double *ms, guint *ioctls)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicList) reads = NULL;
  QemuFieldsTimes t;
  VgicdClientStats st;
  VgicValues *values = NULL;

  if (qemu_fields_get (c, get, &reads, &t, &error))
    values = vgic_values_from_reads (reads->entries, reads->len, &error);
  if (!values)
    die ("save into QEMU's fields through vgicd", error);
  *ms = t.call_ms + t.qemu_ms;
  vgicd_client_get_stats (c, &st);
  *ioctls = st.ioctls;
  return values;
}

/* ... and its put: QEMU's writes (@put, made from its fields beforehand),
 * collected, then run by vgicd. */
static void
fields_put (VgicdClient *c, const VgicList *put, double *ms, guint *ioctls)
{
  g_autoptr (GError) error = NULL;
  QemuFieldsTimes t;
  VgicdClientStats st;

  if (!qemu_fields_put (c, put, &t, &error))
    die ("load QEMU's fields through vgicd", error);
  *ms = t.call_ms + t.qemu_ms;
  vgicd_client_get_stats (c, &st);
  *ioctls = st.ioctls;
}

static VgicdClient *
attach (const char *address, VgicSim *sim, const char *name, const VgicShape *shape)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdClient) c = vgicd_client_connect (address, 0, &error);

  if (!c || !vgicd_client_attach (c, vgic_sim_get_fd (sim), name, NULL, shape->nr_irqs,
                                  shape->nr_vcpus, shape->mpidrs, &error))
    die ("attach to vgicd", error);
  return g_steal_pointer (&c);
}

/* A re-save of the destination must equal the record that was loaded
 * (@routes: with every route, as vgicd's record has them). */
static gboolean
same_state (const VgicShape *shape, VgicSim *dst, GBytes *want, gboolean routes)
{
  g_autoptr (VgicList) reads = vgic_direct_save (shape, vgic_sim_get_fd (dst), VGIC_EXEC_BATCH,
                                                 routes, NULL, NULL);
  g_autoptr (GBytes) got = NULL;

  if (reads)
    got = vgic_record_encode (shape, reads->entries, reads->len, NULL);
  return got && g_bytes_equal (got, want);
}

/* The format version of a record (its header: docs/state-record.md). */
static guint
record_version (GBytes *record)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicRecord) r = vgic_record_decode (g_bytes_get_data (record, NULL),
                                                 g_bytes_get_size (record), &error);

  if (!r)
    die ("decode the reference record", error);
  return r->version;
}

/* Did the state arrive whole?  Says which path and run, when not.
 * @routes: the path is vgicd's record, which carries the routes QEMU's
 * fields lose; @reference is the source's state as that path sees it. */
static gboolean
arrived (const VgicShape *shape, VgicSim *src, VgicSim *dst, GBytes *reference,
         gboolean routes, const char *path, guint run)
{
  g_autoptr (GString) diff = g_string_new (NULL);

  if (same_state (shape, dst, reference, routes) &&
      sim_compare_register_files (src, dst, routes, diff))
    return TRUE;
  fprintf (stderr, "MISMATCH: %s, run %u%s%s\n", path, run, diff->len ? ":\n" : "", diff->str);
  return FALSE;
}

int
main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- vgicd demo");
  GOptionEntry entries[] = {
    { "vcpus", 0, 0, G_OPTION_ARG_INT, &opt_vcpus, "vCPUs (160)", "N" },
    { "irqs", 0, 0, G_OPTION_ARG_INT, &opt_irqs, "IRQs incl. private (992)", "N" },
    { "runs", 0, 0, G_OPTION_ARG_INT, &opt_runs, "runs per path; medians are shown (7)", "N" },
    { NULL }
  };
  Path paths[] = {
    { .name = "QEMU 10.0 (no vgicd), one by one", .kind = PATH_QEMU },
    { .name = "vgicd, Mode=single, one by one", .short_name = "Mode=single",
      .kind = PATH_RECORD, .mode = "single" },
    { .name = "vgicd, batched, default (fields)", .short_name = "default",
      .kind = PATH_FIELDS, .mode = "auto" },
    { .name = "vgicd, batched, Record=true", .short_name = "Record=true",
      .kind = PATH_RECORD, .mode = "auto" },
  };
  g_autoptr (VgicdHarness) h = NULL;
  g_autoptr (VgicShape) shape = NULL;
  g_autoptr (VgicSim) src = NULL;
  g_autoptr (VgicdClient) src_client = NULL;
  g_autoptr (GBytes) reference = NULL, qemu_reference = NULL;
  g_autoptr (VgicList) save_list = NULL, get_list = NULL;
  VgicSimConfig config = { 0 };
  gboolean all_equal = TRUE;
  gsize record_size = 0;

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    die ("options", error);
  opt_runs = CLAMP (opt_runs, 1, MAX_RUNS);

  if (!vgic_sim_supervise_self (&error))
    die ("vgic-sim supervisor", error);
  h = vgicd_harness_start (VGICD_BIN, VGICD_POLICY, "Mode=auto\nAllowUsers=root\n", &error);
  if (!h)
    die ("start vgicd", error);

  shape = vgic_shape_new (opt_irqs, opt_vcpus, NULL, &error);
  if (!shape)
    die ("shape", error);
  config.nr_vcpus = opt_vcpus;
  config.nr_irqs = opt_irqs;
  config.has_its = TRUE;
  config.pri_bits = 5;
  config.batch = TRUE;
  src = vgic_sim_new (&config, &error);
  if (!src)
    die ("source VM", error);
  vgic_sim_randomize (src, 2026);
  src_client = attach (h->address, src, "demo-src", shape);

  /* The reference every destination is compared with. */
  if (!vgicd_client_save (src_client, &reference, &error))
    die ("save through vgicd", error);
  /* The accesses QEMU's get makes, for the fields path to look up in
   * kvm_arm_gicv3_get()'s order. */
  save_list = vgic_direct_save (shape, vgic_sim_get_fd (src), VGIC_EXEC_BATCH, FALSE, NULL,
                                &error);
  if (save_list)
    qemu_reference = vgic_record_encode (shape, save_list->entries, save_list->len, &error);
  if (!qemu_reference)
    die ("QEMU's get list", error);
  get_list = qemu_fields_get_order (shape, save_list);

  printf ("vgicd demo: a simulated VM with %u vCPUs, %u IRQs, an ITS (PLPIS=1), "
          "PRIbits 5 (A=1)\n", opt_vcpus, opt_irqs);
  printf ("vgicd %s on %s, private system bus; vgic-sim answers real ioctls "
          "(seccomp user notification)\n\n", PACKAGE_VERSION, h->socket_path);

  for (guint run = 0; run < opt_runs; run++)
    for (guint p = 0; p < G_N_ELEMENTS (paths); p++)
      {
        g_autoptr (VgicSim) dst = vgic_sim_new (&config, &error);
        g_autoptr (GBytes) record = NULL;
        gint64 t0;

        if (!dst)
          die ("destination VM", error);
        if (paths[p].kind == PATH_QEMU)
          {
            g_autoptr (VgicValues) state = NULL;

            t0 = g_get_monotonic_time ();
            state = qemu_get (shape, vgic_sim_get_fd (src), &paths[p].get_ioctls);
            paths[p].get_ms[run] = figures_ms_since (t0);
            t0 = g_get_monotonic_time ();
            qemu_put (shape, vgic_sim_get_fd (dst), state, &paths[p].put_ioctls);
            paths[p].put_ms[run] = figures_ms_since (t0);
            all_equal &= arrived (shape, src, dst, qemu_reference, FALSE, paths[p].name, run);
            continue;
          }

        g_autoptr (VgicdClient) dst_client = attach (h->address, dst, "demo-dst", shape);
        VgicdClientStats st;

        if (!vgicd_harness_set_mode (h, paths[p].mode, &error))
          die ("set vgicd's mode", error);
        if (paths[p].kind == PATH_FIELDS)
          {
            g_autoptr (VgicValues) state = NULL;
            g_autoptr (VgicList) put = NULL;

            state = fields_get (src_client, get_list, &paths[p].get_ms[run],
                                &paths[p].get_ioctls);
            if (!(put = vgic_plan_restore_write (shape, state, FALSE, &error)))
              die ("QEMU's put", error);
            fields_put (dst_client, put, &paths[p].put_ms[run], &paths[p].put_ioctls);
            all_equal &= arrived (shape, src, dst, qemu_reference, FALSE, paths[p].name, run);
            continue;
          }
        t0 = g_get_monotonic_time ();
        if (!vgicd_client_save (src_client, &record, &error))
          die ("save through vgicd", error);
        paths[p].get_ms[run] = figures_ms_since (t0);
        vgicd_client_get_stats (src_client, &st);
        paths[p].get_ioctls = st.ioctls;

        t0 = g_get_monotonic_time ();
        if (!vgicd_client_load (dst_client, g_bytes_get_data (record, NULL),
                                g_bytes_get_size (record), &error))
          die ("load through vgicd", error);
        paths[p].put_ms[run] = figures_ms_since (t0);
        vgicd_client_get_stats (dst_client, &st);
        paths[p].put_ioctls = st.ioctls;

        record_size = g_bytes_get_size (record);
        if (!g_bytes_equal (record, reference))
          {
            fprintf (stderr, "MISMATCH: %s, run %u: the record differs\n", paths[p].name, run);
            all_equal = FALSE;
          }
        all_equal &= arrived (shape, src, dst, reference, TRUE, paths[p].name, run);
      }

  printf ("Register accesses: save %u, restore %u (docs/kernel-interface.md formulas: %u, %u); "
          "state record %" G_GSIZE_FORMAT " bytes\n\n", paths[0].get_ioctls,
          paths[0].put_ioctls, vgic_plan_save_count (shape, TRUE, 1),
          vgic_plan_restore_count (shape, TRUE, 1), record_size);
  printf ("| %-32s | %11s | %7s | %11s | %7s |\n", "Path", "VGIC get ms", "ioctls",
          "VGIC put ms", "ioctls");
  printf ("|----------------------------------|-------------|---------|-------------|---------|\n");
  for (guint p = 0; p < G_N_ELEMENTS (paths); p++)
    printf ("| %-32s | %11.2f | %7u | %11.2f | %7u |\n", paths[p].name,
            figures_median (paths[p].get_ms, opt_runs), paths[p].get_ioctls,
            figures_median (paths[p].put_ms, opt_runs), paths[p].put_ioctls);
  for (guint p = 1; p < G_N_ELEMENTS (paths); p++)
    printf ("| improvement, %-19s | %10.0f%% |         | %10.0f%% |         |\n",
            paths[p].short_name,
            100 * (1 - figures_median (paths[p].get_ms, opt_runs) / figures_median (paths[0].get_ms, opt_runs)),
            100 * (1 - figures_median (paths[p].put_ms, opt_runs) / figures_median (paths[0].put_ms, opt_runs)));
  /* The row a reader asks about: through vgicd, yet no faster than QEMU. */
  printf ("Mode=single: what vgicd costs without the batch group, with %d / %d more ioctls "
          "than QEMU's own path (the routes its record adds; the guard reads of a restore)\n",
          (int) paths[1].get_ioctls - (int) paths[0].get_ioctls,
          (int) paths[1].put_ioctls - (int) paths[0].put_ioctls);
  printf ("\n(medians of %u runs; seed figures at 160 vCPUs: 120 ms get / 158 ms put one "
          "by one, 19 / 40 ms batched)\n", opt_runs);
  printf ("Destination equals source after every transfer: %s\n"
          "  (the whole register file, and a re-save byte for byte; QEMU 10.0's accesses, on\n"
          "  its own path and on the fields path, do not carry the routes of SPIs above %u, which\n"
          "  keep the destination's there; vgicd's record (version %u) carries them: see\n"
          "  docs/state-record.md)\n",
          all_equal ? "yes" : "NO", opt_irqs / 2, record_version (reference));
  return all_equal ? 0 : 1;
}
