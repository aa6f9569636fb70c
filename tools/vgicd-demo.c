/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-demo.c - README's demo: a simulated 160-vCPU VM's vGIC state saved
 * and restored one register per ioctl (what QEMU does today) and in batches
 * (what vgicd does), through the real planner, record and executor, against
 * vgic-sim behind real ioctl(2) calls.
 *
 * Prints the plan sizes, the kernel calls each path makes (counted by the
 * sim), median times, and checks that the destination holds the source's
 * state after every transfer.
 */
#include <stdio.h>
#include <stdlib.h>

#include "vgic-exec.h"
#include "vgic-plan.h"
#include "vgic-record.h"
#include "vgic-regs.h"
#include "vgic-sim.h"

typedef struct kvm_vgic_batch_entry Entry;

typedef struct {
  const char *name;
  VgicExecVia via;
  double save_ms[16], load_ms[16];
  guint save_ioctls, load_ioctls;
  guint save_entries, load_entries;
  guint64 save_locks, load_locks;
} Path;

static guint opt_vcpus = 160;
static guint opt_irqs = 992;
static guint opt_runs = 5;

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

static double
median (double *v, guint n)
{
  qsort (v, n, sizeof (double), cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void
die (const char *what, const GError *error)
{
  fprintf (stderr, "vgicd-demo: %s: %s\n", what, error ? error->message : "failed");
  exit (1);
}

static void
run_round (int fd, GArray *plan, VgicExecDir dir, VgicExecVia via,
           VgicExecReport *total)
{
  g_autoptr (GError) error = NULL;
  VgicExecReport r;

  if (!vgic_exec_check ((Entry *) (void *) plan->data, plan->len, dir, &error))
    die ("executor refused the plan", error);
  if (!vgic_exec_run (fd, (Entry *) (void *) plan->data, plan->len, dir, via, &r))
    {
      const Entry *e = &g_array_index (plan, Entry, r.error_index);
      g_autofree char *what = vgic_reg_describe (e->group, e->attr);
      fprintf (stderr, "vgicd-demo: %s of %s failed: %s\n",
               dir == VGIC_EXEC_READ ? "read" : "write", what, g_strerror (-r.error));
      exit (1);
    }
  total->ioctls += r.ioctls;
  total->ns += r.ns;
  total->done += r.done;
}

/* Save: two rounds of reads, then the record. */
static GBytes *
save (const VgicShape *shape, int fd, VgicExecVia via, VgicExecReport *rep)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GArray) first = vgic_plan_save_first (shape);
  g_autoptr (GArray) second = NULL;
  g_autoptr (VgicValues) values = NULL;
  GBytes *record;

  run_round (fd, first, VGIC_EXEC_READ, via, rep);
  values = vgic_values_from_reads ((Entry *) (void *) first->data, first->len, &error);
  if (!values)
    die ("save", error);
  second = vgic_plan_save_second (shape, values, &error);
  if (!second)
    die ("save", error);
  run_round (fd, second, VGIC_EXEC_READ, via, rep);
  g_array_append_vals (first, second->data, second->len);
  record = vgic_record_encode (shape, (Entry *) (void *) first->data, first->len, &error);
  if (!record)
    die ("encode", error);
  return record;
}

/* Restore: validate the record against the VM, read the TYPERs, write. */
static void
load (const VgicShape *shape, int fd, GBytes *bytes, VgicExecVia via,
      VgicExecReport *rep)
{
  g_autoptr (GError) error = NULL;
  gsize len;
  const guint8 *data = g_bytes_get_data (bytes, &len);
  g_autoptr (VgicRecord) record = vgic_record_load (data, len, shape, &error);
  g_autoptr (GArray) check = vgic_plan_restore_check (shape);
  g_autoptr (VgicValues) check_values = NULL;
  g_autoptr (GArray) write = NULL;

  if (!record)
    die ("record refused", error);
  run_round (fd, check, VGIC_EXEC_READ, via, rep);
  check_values = vgic_values_new ((Entry *) (void *) check->data, check->len, &error);
  if (!check_values)
    die ("restore", error);
  write = vgic_plan_restore_write (shape, record->values, check_values, &error);
  if (!write)
    die ("restore", error);
  run_round (fd, write, VGIC_EXEC_WRITE, via, rep);
}

int
main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- vgicd demo");
  GOptionEntry entries[] = {
    { "vcpus", 0, 0, G_OPTION_ARG_INT, &opt_vcpus, "vCPUs (160)", "N" },
    { "irqs", 0, 0, G_OPTION_ARG_INT, &opt_irqs, "IRQs incl. private (992)", "N" },
    { "runs", 0, 0, G_OPTION_ARG_INT, &opt_runs, "runs per path, median taken (5)", "N" },
    { NULL }
  };
  Path paths[] = {
    { .name = "one register per ioctl", .via = VGIC_EXEC_SINGLE },
    { .name = "batched", .via = VGIC_EXEC_BATCH },
  };
  g_autoptr (VgicShape) shape = NULL;
  g_autoptr (VgicSim) src = NULL;
  VgicSimConfig config = { 0 };
  g_autoptr (GBytes) reference = NULL;
  gboolean all_equal = TRUE;

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    die ("options", error);
  opt_runs = CLAMP (opt_runs, 1, G_N_ELEMENTS (paths[0].save_ms));

  if (!vgic_sim_supervise_self (&error))
    die ("vgic-sim supervisor", error);
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

  printf ("Simulated VM: %u vCPUs, %u IRQs, ITS (GICR_TYPER.PLPIS=1), PRIbits 5 (A=1)\n",
          opt_vcpus, opt_irqs);
  for (guint p = 0; p < G_N_ELEMENTS (paths); p++)
    {
      Path *path = &paths[p];

      for (guint run = 0; run < opt_runs; run++)
        {
          g_autoptr (VgicSim) dst = vgic_sim_new (&config, &error);
          g_autoptr (GBytes) record = NULL;
          g_autoptr (GBytes) again = NULL;
          VgicExecReport s = { 0 }, l = { 0 }, v = { 0 };
          VgicSimCounters c;

          if (!dst)
            die ("destination VM", error);
          vgic_sim_counters_reset (src);
          record = save (shape, vgic_sim_get_fd (src), path->via, &s);
          vgic_sim_counters_get (src, &c);
          path->save_locks = c.lock_rounds;
          load (shape, vgic_sim_get_fd (dst), record, path->via, &l);
          vgic_sim_counters_get (dst, &c);
          path->load_locks = c.lock_rounds;

          /* The destination must now read back exactly what the source did,
           * and every transfer must carry the same record. */
          again = save (shape, vgic_sim_get_fd (dst), VGIC_EXEC_BATCH, &v);
          if (!g_bytes_equal (record, again))
            {
              fprintf (stderr, "MISMATCH: %s: destination differs from source\n", path->name);
              all_equal = FALSE;
            }
          if (!reference)
            reference = g_bytes_ref (record);
          else if (!g_bytes_equal (reference, record))
            {
              fprintf (stderr, "MISMATCH: %s: record differs from the first path's\n", path->name);
              all_equal = FALSE;
            }
          path->save_ms[run] = s.ns / 1e6;
          path->load_ms[run] = l.ns / 1e6;
          path->save_ioctls = s.ioctls;
          path->save_entries = s.done;
          path->load_entries = l.done;
          path->load_ioctls = l.ioctls;
        }
    }

  printf ("Accesses per save: %u (KVM-VGIC-FACTS.md formula: %u); per restore: %u (formula: %u)\n",
          paths[1].save_entries, vgic_plan_save_count (shape, TRUE, 1),
          paths[1].load_entries, vgic_plan_restore_count (shape, TRUE, 1));
  printf ("State record: %" G_GSIZE_FORMAT " bytes\n\n", g_bytes_get_size (reference));
  printf ("| %-24s | %12s | %8s | %12s | %8s |\n", "Path (median of runs)",
          "VGIC get ms", "ioctls", "VGIC put ms", "ioctls");
  printf ("|%s|%s|%s|%s|%s|\n", "--------------------------", "--------------",
          "----------", "--------------", "----------");
  for (guint p = 0; p < G_N_ELEMENTS (paths); p++)
    printf ("| %-24s | %12.2f | %8u | %12.2f | %8u |\n", paths[p].name,
            median (paths[p].save_ms, opt_runs), paths[p].save_ioctls,
            median (paths[p].load_ms, opt_runs), paths[p].load_ioctls);
  {
    double sg = median (paths[0].save_ms, opt_runs), bg = median (paths[1].save_ms, opt_runs);
    double sp = median (paths[0].load_ms, opt_runs), bp = median (paths[1].load_ms, opt_runs);
    printf ("| %-24s | %11.0f%% | %8s | %11.0f%% | %8s |\n", "improvement",
            100 * (1 - bg / sg), "", 100 * (1 - bp / sp), "");
  }
  printf ("\nvCPU lock rounds taken by the (simulated) kernel: save %" G_GUINT64_FORMAT
          " vs %" G_GUINT64_FORMAT ", restore %" G_GUINT64_FORMAT " vs %" G_GUINT64_FORMAT
          " (each round locks all %u vCPUs)\n",
          paths[0].save_locks, paths[1].save_locks, paths[0].load_locks,
          paths[1].load_locks, opt_vcpus);
  printf ("Destination equals source after every transfer: %s\n",
          all_equal ? "yes" : "NO");
  return all_equal ? 0 : 1;
}
