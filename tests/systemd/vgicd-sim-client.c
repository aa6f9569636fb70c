/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-sim-client.c - plays QEMU against a vgicd it did not start: attaches
 * a simulated source VM and a fresh destination VM (vgic-sim behind real
 * ioctls) to the vgicd at ADDRESS, saves the source through it, loads the
 * record into the destination, and checks that the destination now reads
 * back exactly what the source held.  For tests against an installed vgicd
 * (tests/systemd/run-nspawn.sh runs it inside a booted container, where its
 * first connection is what makes systemd start vgicd).
 *
 * Prints one line of figures per operation and exits 0, or prints what
 * failed on stderr and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>

#include "libvgicd.h"
#include "vgic-exec.h"
#include "vgic-plan.h"
#include "vgic-record.h"
#include "vgic-sim.h"
#include "sim-vm.h"

typedef VgicEntry Entry;

static char *opt_name = NULL;
static char *opt_uuid = NULL;
static int opt_vcpus = 8;
static int opt_irqs = 256;
static gboolean opt_old_kernel = FALSE;
static int opt_rounds = 1;

static const GOptionEntry entries[] = {
  { "name", 0, 0, G_OPTION_ARG_STRING, &opt_name, "VM name (sim-vm)", "NAME" },
  { "uuid", 0, 0, G_OPTION_ARG_STRING, &opt_uuid, "VM UUID", "UUID" },
  { "vcpus", 0, 0, G_OPTION_ARG_INT, &opt_vcpus, "vCPUs (8)", "N" },
  { "irqs", 0, 0, G_OPTION_ARG_INT, &opt_irqs, "interrupts, a multiple of 32 (256)", "N" },
  { "old-kernel", 0, 0, G_OPTION_ARG_NONE, &opt_old_kernel,
    "the simulated kernel has no batch group", NULL },
  { "rounds", 0, 0, G_OPTION_ARG_INT, &opt_rounds, "save+load rounds (1)", "N" },
  { NULL }
};

static VgicSim *
make_sim (GError **error)
{
  VgicSimConfig c = {
    .nr_vcpus = opt_vcpus, .nr_irqs = opt_irqs, .has_its = TRUE,
    .pri_bits = 5, .batch = !opt_old_kernel,
  };

  return vgic_sim_new (&c, error);
}

static VgicdClient *
attach (const char *address, VgicSim *sim, GError **error)
{
  g_autofree guint32 *mpidrs = sim_vm_mpidrs (sim, opt_vcpus);
  g_autoptr (VgicdClient) c = vgicd_client_connect (address, 0, error);

  if (!c)
    return NULL;
  if (!vgicd_client_attach (c, vgic_sim_get_fd (sim), opt_name, opt_uuid,
                            opt_irqs, opt_vcpus, mpidrs, error))
    return NULL;
  return g_steal_pointer (&c);
}

static void
print_stats (const char *op, VgicdClient *c, gsize bytes)
{
  VgicdClientStats st;

  vgicd_client_get_stats (c, &st);
  printf ("%s: %u entries, %u ioctls, via %s, %.3f ms in the kernel, %zu bytes\n",
          op, st.entries, st.ioctls, st.batched ? "batch" : "single",
          st.kernel_ns / 1e6, bytes);
}

static int
fail (const char *what, GError *error)
{
  fprintf (stderr, "vgicd-sim-client: %s: %s\n", what, error ? error->message : "failed");
  return 1;
}

int
main (int argc, char **argv)
{
  g_autoptr (GOptionContext) ctx = g_option_context_new ("ADDRESS");
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicSim) src = NULL, dst = NULL;
  g_autoptr (VgicdClient) cs = NULL, cd = NULL;
  g_autoptr (VgicSimState) want = NULL, got = NULL;
  g_autoptr (GString) diff = g_string_new (NULL);

  /* First: the seccomp filter must cover every thread GDBus starts. */
  if (!vgic_sim_supervise_self (&error))
    return fail ("vgic-sim", error);

  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_set_summary (ctx, "Save a simulated VM's vGIC through vgicd at ADDRESS "
                                "(e.g. unix:path=/run/vgicd/vgicd.sock) and load it into "
                                "another.");
  if (!g_option_context_parse (ctx, &argc, &argv, &error) || argc != 2)
    {
      fprintf (stderr, "vgicd-sim-client: %s\n",
               error ? error->message : "give one ADDRESS (see --help)");
      return 2;
    }
  if (!opt_name)
    opt_name = g_strdup ("sim-vm");
  if (!opt_uuid)
    opt_uuid = g_strdup ("5e1f7c2a-0000-4000-8000-00000000feed");

  if (!(src = make_sim (&error)) || !(dst = make_sim (&error)))
    return fail ("creating the simulated VMs", error);
  vgic_sim_randomize (src, 42);

  if (!(cs = attach (argv[1], src, &error)))
    return fail ("attaching the source VM", error);
  if (!(cd = attach (argv[1], dst, &error)))
    return fail ("attaching the destination VM", error);
  printf ("attached %s (%d vCPUs, %d IRQs) twice; host mode %s\n", opt_name, opt_vcpus,
          opt_irqs, vgicd_client_get_mode (cs));

  for (int round = 0; round < opt_rounds; round++)
    {
      g_autoptr (GBytes) record = NULL;

      if (!vgicd_client_save (cs, &record, &error))
        return fail ("save", error);
      print_stats ("save", cs, g_bytes_get_size (record));
      if (!vgicd_client_load (cd, g_bytes_get_data (record, NULL),
                              g_bytes_get_size (record), &error))
        return fail ("load", error);
      print_stats ("load", cd, g_bytes_get_size (record));
    }

  /* The register file as a whole: what the destination holds now is what
   * the source held, every SPI's route included (vgicd's record carries
   * those QEMU 10.0's accesses miss, see vgic/vgic-plan.c). */
  want = vgic_sim_state_get (src);
  got = vgic_sim_state_get (dst);
  if (!vgic_sim_state_equal (want, got, diff))
    {
      fprintf (stderr, "vgicd-sim-client: the destination differs from the source: %s\n",
               diff->str);
      return 1;
    }
  printf ("destination matches the source\n");
  return 0;
}
