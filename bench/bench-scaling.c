/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-scaling.c - how the vGIC's save and restore cost grows with the
 * VM's vCPUs, on each path, and what vgicd holds with many VMs attached.
 * bench/run-bench.sh runs it and turns its JSON into the table and the plot
 * (bench/report.py); the figures are read, never asserted.
 *
 * Theory of operation.  Against a private vgicd (the harness: its own
 * system bus, the project's policy), each VM is a vgic-sim device, which
 * answers real ioctl(2) calls and takes a lock per vCPU around every
 * register access as KVM's lock_all_vcpus() does, so a register costs more
 * the more vCPUs the VM has.  For each size (992 IRQs, an ITS so PLPIS is
 * set, random non-trivial state) and each run, the four paths take turns:
 *
 *   qemu    QEMU 10.0's own path, without vgicd: kvm_arm_gicv3_get/put's
 *           accesses, one KVM_{GET,SET}_DEVICE_ATTR each;
 *   single  through vgicd, one register per ioctl (mode single), on the
 *           default path (QEMU's fields in the stream): what a host
 *           without the kernel's batch group gets;
 *   fields  through vgicd, the kernel's batch group (mode auto), QEMU's
 *           own fields in the stream: the default, what a user gets
 *           without Record=true (tests/support/qemu-fields.c plays the
 *           patched QEMU: SaveFields, then each read of kvm_arm_gicv3_get
 *           looked up in its order; its put's writes collected, then
 *           LoadList);
 *   record  through vgicd, batched, vgicd's state record in the stream
 *           (Record=true; save → record → load), whose size is the
 *           "bytes" column.
 *
 * Each operation's wall time is taken as QEMU's pre_save/post_load would
 * see it (the D-Bus or step-channel round trips, vgicd's planning,
 * validation and encoding, and on the fields paths QEMU's own lookups and
 * collection of writes included).  "own" is vgicd's share: the libvgicd
 * call's time less the executor's kernel calls (what vgicd, libvgicd and
 * the transport add; outside the kernel and outside QEMU's own loop),
 * "vgicd" the part of it in vgicd's handlers (its history's vgicd-ns),
 * "qemu" the fields paths' own loop in QEMU.  The calls are vgicd's count
 * for the operation (each a round trip, but for the last of a restore and
 * of a fields save whose guess held, which the caller does not wait for), read from its history (Manager1.GetHistory) outside
 * the timed part.  Every destination is compared with its source, register
 * by register, and a mismatch fails the run (exit 1): no figure is printed
 * for a wrong result.
 *
 * Then the fleet: --fleet VMs of --fleet-vcpus attached at once (vgicd's
 * RSS and descriptors), one of them saving alone, then all saving at the
 * same moment, --runs times: the latency one VM sees with the others busy.
 *
 * Every access of a one-by-one path is a round trip between two threads
 * (the caller, and vgic-sim's supervisor answering the ioctl).  On an idle
 * machine each of those wakes a CPU out of its idle state, which in a VM
 * is a halt and an exit to the hypervisor: measured here, the one-by-one
 * paths then took 3 to 4 times as long, and varied 10-fold from run to
 * run, for reasons that are the machine's, not the code's.  So, as root,
 * the run holds /dev/cpu_dma_latency at 0 (the PM QoS request that
 * latency benchmarks make: idle CPUs poll rather than halt) and says so
 * in its output; without it, it says that too.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "figures.h"
#include "libvgicd.h"
#include "qemu-fields.h"
#include "sim-compare.h"
#include "vgic-direct.h"
#include "vgic-plan.h"
#include "vgic-record.h"
#include "vgic-sim.h"
#include "sim-vm.h"
#include "vgicd-harness.h"

#define MAX_RUNS 31
#define MAX_SIZES 16
#define IRQS 992

enum { P_QEMU, P_SINGLE, P_FIELDS, P_RECORD, N_PATHS };
enum { D_SAVE, D_RESTORE, N_DIRS };

static const char *const path_names[N_PATHS] = { "qemu", "single", "fields", "record" };
static const char *const dir_names[N_DIRS] = { "save", "restore" };

/* One path, one direction, one size: a figure per run. */
typedef struct {
  double ms[MAX_RUNS];
  double own_ms[MAX_RUNS];	/* vgicd's share (see the top); vgicd paths only */
  double qemu_ms[MAX_RUNS];	/* QEMU's own loop; fields paths only */
  double vgicd_ms[MAX_RUNS];	/* in vgicd's handlers (its history); vgicd paths only */
  guint ioctls, calls, registers;
  guint64 bytes;
} Cell;

typedef struct {
  guint vcpus;
  Cell cell[N_PATHS][N_DIRS];
} Size;

static char *opt_sizes = NULL;
static guint opt_runs = 7;
static guint opt_fleet = 64;
static guint opt_fleet_vcpus = 160;
static char *opt_json = NULL;

static G_NORETURN void
die (const char *what, const GError *error)
{
  fprintf (stderr, "bench-scaling: %s: %s\n", what, error ? error->message : "failed");
  exit (1);
}

static VgicSim *
sim_new (guint vcpus)
{
  g_autoptr (GError) error = NULL;
  VgicSimConfig c = { .nr_vcpus = vcpus, .nr_irqs = IRQS, .has_its = TRUE, .pri_bits = 5,
                      .batch = TRUE };
  VgicSim *sim = vgic_sim_new (&c, &error);

  if (!sim)
    die ("vgic-sim", error);
  return sim;
}

static VgicShape *
shape_of (VgicSim *sim, guint vcpus)
{
  g_autoptr (GError) error = NULL;
  g_autofree guint32 *mpidrs = sim_vm_mpidrs (sim, vcpus);
  VgicShape *shape;

  if (!(shape = vgic_shape_new (IRQS, vcpus, mpidrs, &error)))
    die ("shape", error);
  return shape;
}

static VgicdClient *
attach (VgicdHarness *h, VgicSim *sim, const VgicShape *shape, const char *name,
        const char *uuid)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdClient) c = vgicd_client_connect (h->address, 0, &error);

  if (!c || !vgicd_client_attach (c, vgic_sim_get_fd (sim), name, uuid, shape->nr_irqs,
                                  shape->nr_vcpus, shape->mpidrs, &error))
    die ("attach", error);
  return g_steal_pointer (&c);
}

/* The calls vgicd answered for VM @uuid's last operation, and the time
 * vgicd's handlers took (its history: "calls", "vgicd-ns"). */
static guint
last_op (VgicdHarness *h, const char *uuid, double *vgicd_ms)
{
  g_autoptr (GVariant) reply = vgicd_harness_manager_call (h, "GetHistory",
                                                           g_variant_new ("(su)", uuid, 1),
                                                           "(aa{sv})");
  g_autoptr (GVariant) list = g_variant_get_child_value (reply, 0);
  g_autoptr (GVariant) last = NULL;
  guint32 calls = 0;
  guint64 busy_ns = 0;

  if (g_variant_n_children (list) != 1)
    die ("vgicd's history has no operation of the VM just saved or loaded", NULL);
  last = g_variant_get_child_value (list, 0);
  if (!g_variant_lookup (last, "calls", "u", &calls) ||
      !g_variant_lookup (last, "vgicd-ns", "t", &busy_ns))
    die ("vgicd's history has no \"calls\" or \"vgicd-ns\"", NULL);
  *vgicd_ms = busy_ns / 1e6;
  return calls;
}

static void
check (VgicSim *src, VgicSim *dst, gboolean routes, guint vcpus, guint p, guint run)
{
  g_autoptr (GString) diff = g_string_new (NULL);

  if (!sim_compare_register_files (src, dst, routes, diff))
    {
      fprintf (stderr, "bench-scaling: MISMATCH at %u vCPUs, path %s, run %u:\n%s\n", vcpus,
               path_names[p], run, diff->str);
      exit (1);
    }
}

/* ------------------------------------------------------------------ */
/* One run of one path at one size                                   */
/* ------------------------------------------------------------------ */

static void
run_qemu (Size *z, const VgicShape *shape, VgicSim *src, guint run)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicSim) dst = sim_new (z->vcpus);
  g_autoptr (VgicList) reads = NULL;
  g_autoptr (VgicValues) values = NULL;
  Cell *save = &z->cell[P_QEMU][D_SAVE], *restore = &z->cell[P_QEMU][D_RESTORE];
  VgicExecReport r;
  gint64 t0;

  /* kvm_arm_gicv3_get: the values stay in QEMU's GICv3State. */
  t0 = g_get_monotonic_time ();
  reads = vgic_direct_save (shape, vgic_sim_get_fd (src), VGIC_EXEC_SINGLE, FALSE, &r, &error);
  if (reads)
    values = vgic_values_from_reads (reads->entries, reads->len, &error);
  save->ms[run] = figures_ms_since (t0);
  if (!values)
    die ("QEMU-equivalent save", error);
  save->ioctls = r.ioctls;
  save->registers = reads->len;

  /* kvm_arm_gicv3_put */
  t0 = g_get_monotonic_time ();
  if (!vgic_direct_restore (shape, vgic_sim_get_fd (dst), values, FALSE, VGIC_EXEC_SINGLE, &r,
                            &error))
    die ("QEMU-equivalent restore", error);
  restore->ms[run] = figures_ms_since (t0);
  restore->ioctls = r.ioctls;
  restore->registers = r.done;
  check (src, dst, FALSE, z->vcpus, P_QEMU, run);
}

/* A vgicd operation's figures into @c: @call_ms the libvgicd call, @qemu_ms
 * QEMU's own loop around it (0 on the record path), the rest from the
 * client's stats and vgicd's history of VM @uuid. */
static void
take_figures (Cell *c, guint run, double call_ms, double qemu_ms, VgicdClient *client,
              VgicdHarness *h, const char *uuid, guint64 bytes)
{
  VgicdClientStats st;

  vgicd_client_get_stats (client, &st);
  c->ms[run] = call_ms + qemu_ms;
  c->own_ms[run] = call_ms - st.kernel_ns / 1e6;
  c->qemu_ms[run] = qemu_ms;
  c->ioctls = st.ioctls;
  c->registers = st.entries;
  c->bytes = bytes;
  c->calls = last_op (h, uuid, &c->vgicd_ms[run]);
}

static void
run_vgicd (VgicdHarness *h, Size *z, guint p, const VgicShape *shape, VgicSim *src,
           VgicdClient *cs, const char *src_uuid, const VgicList *get, guint run)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicSim) dst = sim_new (z->vcpus);
  g_autofree char *dst_uuid = g_strdup_printf ("0b5ca1e0-0000-4000-8000-%012u", z->vcpus);
  g_autoptr (VgicdClient) cd = attach (h, dst, shape, "bench-dst", dst_uuid);
  g_autoptr (GBytes) record = NULL;
  Cell *save = &z->cell[p][D_SAVE], *restore = &z->cell[p][D_RESTORE];
  gint64 t0;

  if (!vgicd_harness_set_mode (h, p == P_SINGLE ? "single" : "auto", &error))
    die ("vgicd's mode", error);

  if (p != P_RECORD)
    {
      g_autoptr (VgicList) reads = NULL;
      g_autoptr (VgicValues) state = NULL;
      g_autoptr (VgicList) put = NULL;
      QemuFieldsTimes t;

      if (!qemu_fields_get (cs, get, &reads, &t, &error))
        die ("save into QEMU's fields through vgicd", error);
      take_figures (save, run, t.call_ms, t.qemu_ms, cs, h, src_uuid, 0);
      /* QEMU's fields, and its put's writes of them: outside the timed
       * part, as QEMU keeps the values in its GICv3State as it reads them
       * and its put walks them (qemu-fields.h) */
      if (!(state = vgic_values_from_reads (reads->entries, reads->len, &error)) ||
          !(put = vgic_plan_restore_write (shape, state, FALSE, &error)))
        die ("QEMU's fields", error);
      if (!qemu_fields_put (cd, put, &t, &error))
        die ("load QEMU's fields through vgicd", error);
      take_figures (restore, run, t.call_ms, t.qemu_ms, cd, h, dst_uuid, 0);
      check (src, dst, FALSE, z->vcpus, p, run);
      return;
    }

  t0 = g_get_monotonic_time ();
  if (!vgicd_client_save (cs, &record, &error))
    die ("save through vgicd", error);
  take_figures (save, run, figures_ms_since (t0), 0, cs, h, src_uuid, g_bytes_get_size (record));

  t0 = g_get_monotonic_time ();
  if (!vgicd_client_load (cd, g_bytes_get_data (record, NULL), g_bytes_get_size (record),
                          &error))
    die ("load through vgicd", error);
  take_figures (restore, run, figures_ms_since (t0), 0, cd, h, dst_uuid,
                g_bytes_get_size (record));
  check (src, dst, TRUE, z->vcpus, p, run);
}

static void
measure_size (VgicdHarness *h, Size *z)
{
  g_autoptr (VgicSim) src = sim_new (z->vcpus);
  g_autoptr (VgicShape) shape = shape_of (src, z->vcpus);
  g_autofree char *src_uuid = g_strdup_printf ("0b5ca1e0-0000-4000-8000-1%011u", z->vcpus);
  g_autoptr (VgicdClient) cs = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicList) save = NULL;
  g_autoptr (VgicList) get = NULL;
  gint64 t0 = g_get_monotonic_time ();

  vgic_sim_randomize (src, 2026 + z->vcpus);
  cs = attach (h, src, shape, "bench-src", src_uuid);
  /* What QEMU's get reads, in its order, for the fields paths to look up. */
  if (!(save = vgic_direct_save (shape, vgic_sim_get_fd (src), VGIC_EXEC_BATCH, FALSE, NULL,
                                 &error)))
    die ("QEMU's get list", error);
  get = qemu_fields_get_order (shape, save);
  /* Runs interleave the paths, so that a slow moment of the machine falls
   * on all of them alike. */
  for (guint run = 0; run < opt_runs; run++)
    for (guint p = 0; p < N_PATHS; p++)
      if (p == P_QEMU)
        run_qemu (z, shape, src, run);
      else
        run_vgicd (h, z, p, shape, src, cs, src_uuid, get, run);
  fprintf (stderr, "  %3u vCPUs: %u runs in %.1f s; medians save/restore ms: qemu %.2f/%.2f, "
           "single %.2f/%.2f, fields %.3f/%.3f, record %.3f/%.3f\n", z->vcpus, opt_runs,
           figures_ms_since (t0) / 1000,
           figures_median (z->cell[P_QEMU][D_SAVE].ms, opt_runs),
           figures_median (z->cell[P_QEMU][D_RESTORE].ms, opt_runs),
           figures_median (z->cell[P_SINGLE][D_SAVE].ms, opt_runs),
           figures_median (z->cell[P_SINGLE][D_RESTORE].ms, opt_runs),
           figures_median (z->cell[P_FIELDS][D_SAVE].ms, opt_runs),
           figures_median (z->cell[P_FIELDS][D_RESTORE].ms, opt_runs),
           figures_median (z->cell[P_RECORD][D_SAVE].ms, opt_runs),
           figures_median (z->cell[P_RECORD][D_RESTORE].ms, opt_runs));
}

/* ------------------------------------------------------------------ */
/* The fleet                                                          */
/* ------------------------------------------------------------------ */

typedef struct {
  VgicSim *sim;
  VgicdClient *client;
  GBytes *reference;	/* its first save's record */
  double ms;
  gboolean ok;
  GThread *thread;
} Member;

typedef struct {
  guint vms, vcpus;
  guint64 rss_kib, shmem_kib, hwm_kib, idle_rss_kib;
  guint fds, idle_fds;
  double alone_ms[MAX_RUNS], busy_ms[MAX_RUNS * 256];
  guint n_busy;
  guint correct, saves;
} Fleet;

static gpointer
member_save (gpointer data)
{
  Member *m = data;
  g_autoptr (GBytes) record = NULL;
  gint64 t0 = g_get_monotonic_time ();

  m->ok = vgicd_client_save (m->client, &record, NULL);
  m->ms = figures_ms_since (t0);
  m->ok = m->ok && g_bytes_equal (record, m->reference);
  return NULL;
}

static void
fleet (VgicdHarness *h, Fleet *f)
{
  g_autofree Member *m = g_new0 (Member, opt_fleet);
  g_autoptr (VgicShape) shape = NULL;

  f->vms = opt_fleet;
  f->vcpus = opt_fleet_vcpus;
  f->idle_rss_kib = vgicd_harness_status_kib (h, "VmRSS:");
  f->idle_fds = vgicd_harness_open_fds (h);
  if (!vgicd_harness_set_mode (h, "auto", NULL))
    die ("vgicd's mode", NULL);
  for (guint i = 0; i < opt_fleet; i++)
    {
      g_autofree char *name = g_strdup_printf ("fleet-%02u", i);
      g_autofree char *uuid = g_strdup_printf ("0b5ca1e0-0000-4000-8000-2%011u", i);
      g_autoptr (GError) error = NULL;

      m[i].sim = sim_new (opt_fleet_vcpus);
      vgic_sim_randomize (m[i].sim, 9000 + i);
      if (!shape)
        shape = shape_of (m[i].sim, opt_fleet_vcpus);
      m[i].client = attach (h, m[i].sim, shape, name, uuid);
      /* Each VM's first save is its reference, and warms its session the
       * way a VM's first migration does (round 2's shape learnt). */
      if (!vgicd_client_save (m[i].client, &m[i].reference, &error))
        die ("fleet save", error);
    }
  g_usleep (200 * 1000);
  f->rss_kib = vgicd_harness_status_kib (h, "VmRSS:");
  f->shmem_kib = vgicd_harness_status_kib (h, "RssShmem:");
  f->fds = vgicd_harness_open_fds (h);

  /* One VM saving while the others sit attached... */
  for (guint run = 0; run < opt_runs; run++)
    {
      member_save (&m[0]);
      f->alone_ms[run] = m[0].ms;
      f->correct += m[0].ok;
      f->saves++;
    }
  /* ... and all of them at the same moment. */
  for (guint run = 0; run < opt_runs; run++)
    {
      for (guint i = 0; i < opt_fleet; i++)
        m[i].thread = g_thread_new ("qemu", member_save, &m[i]);
      for (guint i = 0; i < opt_fleet; i++)
        {
          g_thread_join (m[i].thread);
          if (f->n_busy < G_N_ELEMENTS (f->busy_ms))
            f->busy_ms[f->n_busy++] = m[i].ms;
          f->correct += m[i].ok;
          f->saves++;
        }
    }
  f->hwm_kib = vgicd_harness_status_kib (h, "VmHWM:");
  for (guint i = 0; i < opt_fleet; i++)
    {
      vgicd_client_free (m[i].client);
      vgic_sim_free (m[i].sim);
      g_bytes_unref (m[i].reference);
    }
}

/* ------------------------------------------------------------------ */
/* Output: JSON for bench/report.py                                   */
/* ------------------------------------------------------------------ */

/* The processor, as /proc/cpuinfo names it (for the report's "measured
 * on"); JSON-safe: printable ASCII without quotes or backslashes. */
static char *
cpu_model (void)
{
  g_autofree char *text = NULL;
  const char *line;
  GString *out = g_string_new (NULL);

  if (g_file_get_contents ("/proc/cpuinfo", &text, NULL, NULL) &&
      (line = strstr (text, "model name")) && (line = strchr (line, ':')))
    for (line++; *line && *line != '\n'; line++)
      if (g_ascii_isprint (*line) && *line != '"' && *line != '\\')
        g_string_append_c (out, *line);
  g_strstrip (out->str);
  return g_string_free (out, FALSE);
}

static void
json_runs (GString *out, const double *v, guint n)
{
  g_string_append_c (out, '[');
  for (guint i = 0; i < n; i++)
    g_string_append_printf (out, "%s%.6f", i ? ", " : "", v[i]);
  g_string_append_c (out, ']');
}

/* Ask for no CPU idle-state latency (see the top); the request holds
 * while the descriptor is open.  -1 when it cannot be made. */
static int
hold_pm_qos (void)
{
  gint32 zero = 0;
  int fd = open ("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);

  if (fd >= 0 && write (fd, &zero, sizeof zero) != sizeof zero)
    {
      close (fd);
      fd = -1;
    }
  return fd;
}

static char *
to_json (const Size *sizes, guint n_sizes, const Fleet *f, double seconds, gboolean pm_qos)
{
  GString *out = g_string_new ("{\n");
  g_autofree char *cpu = cpu_model ();
  guint cpus = g_get_num_processors ();

  g_string_append_printf (out, "  \"version\": \"%s\",\n  \"runs\": %u,\n  \"irqs\": %u,\n"
                          "  \"plpis\": true,\n  \"cpus\": %u,\n  \"seconds\": %.1f,\n"
                          "  \"pm_qos\": %s,\n  \"sizes\": [\n", PACKAGE_VERSION, opt_runs, IRQS,
                          cpus, seconds, pm_qos ? "true" : "false");
  for (guint s = 0; s < n_sizes; s++)
    {
      g_string_append_printf (out, "    {\"vcpus\": %u, \"paths\": {", sizes[s].vcpus);
      for (guint p = 0; p < N_PATHS; p++)
        {
          g_string_append_printf (out, "%s\n      \"%s\": {", p ? "," : "", path_names[p]);
          for (guint d = 0; d < N_DIRS; d++)
            {
              const Cell *c = &sizes[s].cell[p][d];

              g_string_append_printf (out, "%s\"%s\": {\"ms\": ", d ? ", " : "", dir_names[d]);
              json_runs (out, c->ms, opt_runs);
              g_string_append (out, ", \"own_ms\": ");
              if (p == P_QEMU)
                g_string_append (out, "null");
              else
                json_runs (out, c->own_ms, opt_runs);
              g_string_append (out, ", \"vgicd_ms\": ");
              if (p == P_QEMU)
                g_string_append (out, "null");
              else
                json_runs (out, c->vgicd_ms, opt_runs);
              g_string_append (out, ", \"qemu_ms\": ");
              if (p == P_QEMU || p == P_RECORD)
                g_string_append (out, "null");
              else
                json_runs (out, c->qemu_ms, opt_runs);
              g_string_append_printf (out, ", \"ioctls\": %u, \"calls\": %u, \"registers\": %u, "
                                      "\"bytes\": %" G_GUINT64_FORMAT "}",
                                      c->ioctls, c->calls, c->registers, c->bytes);
            }
          g_string_append_c (out, '}');
        }
      g_string_append_printf (out, "}}%s\n", s + 1 < n_sizes ? "," : "");
    }
  g_string_append_printf (out, "  ],\n  \"fleet\": {\"vms\": %u, \"vcpus\": %u, "
                          "\"idle_rss_kib\": %" G_GUINT64_FORMAT ", \"idle_fds\": %u, "
                          "\"rss_kib\": %" G_GUINT64_FORMAT ", \"shmem_kib\": %"
                          G_GUINT64_FORMAT ", \"fds\": %u, \"peak_rss_kib\": %"
                          G_GUINT64_FORMAT ", \"saves\": %u, \"correct\": %u,\n"
                          "    \"alone_ms\": ", f->vms, f->vcpus, f->idle_rss_kib,
                          f->idle_fds, f->rss_kib, f->shmem_kib, f->fds, f->hwm_kib, f->saves,
                          f->correct);
  json_runs (out, f->alone_ms, opt_runs);
  g_string_append (out, ",\n    \"busy_ms\": ");
  json_runs (out, f->busy_ms, f->n_busy);
  g_string_append_printf (out, "},\n  \"cpu\": \"%s\"\n}\n", cpu);
  return g_string_free (out, FALSE);
}

int
main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- the vGIC's cost against vCPUs");
  GOptionEntry entries[] = {
    { "sizes", 0, 0, G_OPTION_ARG_STRING, &opt_sizes,
      "vCPU counts (8,16,32,64,128,160,256,512)", "N,N" },
    { "runs", 0, 0, G_OPTION_ARG_INT, &opt_runs, "runs of each path at each size (7)", "N" },
    { "fleet", 0, 0, G_OPTION_ARG_INT, &opt_fleet, "VMs attached at once (64)", "N" },
    { "fleet-vcpus", 0, 0, G_OPTION_ARG_INT, &opt_fleet_vcpus, "their vCPUs (160)", "N" },
    { "json", 0, 0, G_OPTION_ARG_FILENAME, &opt_json, "write the figures here", "FILE" },
    { NULL }
  };
  g_auto (GStrv) list = NULL;
  g_autoptr (VgicdHarness) h = NULL;
  g_autofree char *json = NULL;
  Size sizes[MAX_SIZES] = { 0 };
  static Fleet f;
  guint n_sizes = 0;
  gint64 t0 = g_get_monotonic_time ();
  int pm_qos = -1;

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    die ("options", error);
  if (!opt_json)
    die ("options", NULL);
  opt_runs = CLAMP (opt_runs, 1, MAX_RUNS);
  opt_fleet = CLAMP (opt_fleet, 1, 256);
  list = g_strsplit (opt_sizes ? opt_sizes : "8,16,32,64,128,160,256,512", ",", -1);
  for (guint i = 0; list[i] && n_sizes < MAX_SIZES; i++)
    {
      guint64 n = 0;

      if (!g_ascii_string_to_unsigned (list[i], 10, 1, 512, &n, &error))
        die ("--sizes", error);
      sizes[n_sizes++].vcpus = n;
    }

  if (!vgic_sim_supervise_self (&error))
    die ("vgic-sim supervisor", error);
  /* This process plays the fleet's QEMUs: vgicd's bound per process is
   * for one. */
  h = vgicd_harness_start (VGICD_BIN, VGICD_POLICY,
                           "Mode=auto\nAllowUsers=root\nMaxConnectionsPerProcess=1024\n", &error);
  if (!h)
    die ("start vgicd", error);
  pm_qos = hold_pm_qos ();
  fprintf (stderr, "bench-scaling: vgicd %s, %u runs per path, %u IRQs, PLPIS on; %s\n",
           PACKAGE_VERSION, opt_runs, IRQS,
           pm_qos >= 0 ? "idle CPUs poll (/dev/cpu_dma_latency held at 0)"
                       : "idle CPUs may halt (/dev/cpu_dma_latency not writable: the "
                         "one-by-one figures will vary with the machine's idle states)");
  for (guint s = 0; s < n_sizes; s++)
    measure_size (h, &sizes[s]);
  fprintf (stderr, "  fleet: %u VMs of %u vCPUs\n", opt_fleet, opt_fleet_vcpus);
  fleet (h, &f);
  if (f.correct != f.saves)
    {
      fprintf (stderr, "bench-scaling: %u of the fleet's %u saves made a wrong record\n",
               f.saves - f.correct, f.saves);
      return 1;
    }
  json = to_json (sizes, n_sizes, &f, figures_ms_since (t0) / 1000, pm_qos >= 0);
  if (pm_qos >= 0)
    close (pm_qos);
  if (!g_file_set_contents (opt_json, json, -1, &error))
    die ("--json", error);
  return 0;
}
