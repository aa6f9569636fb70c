/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-vgicd-shares.c - what one admitted QEMU can take from the others:
 * sessions and their memory (per-process shares), the host's one-by-one
 * estimate (forged figures), another VM's history (a claimed UUID, a flood
 * of UUIDs), log lines (control characters in what a peer sends) and the
 * host's save guess (many sessions of one peer).
 *
 * Each attacker is a process of its own: this program run again as
 * `test-vgicd-shares --attacker MODE ADDRESS ARGS...`, with its own vgic-sim
 * VMs (served by the test's supervisor, as a child's are) and its own pid, a real libvgicd or a peer of plain D-Bus calls that
 * reports what it likes.  It prints what happened, one fact a line, then
 * "ready", and keeps its sessions until its stdin closes.  The honest QEMU
 * is the test's own process.
 */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vgicd-test.h"

/* The bounds on one register's cost an operation may teach an
 * uncalibrated host (daemon/vgicd-history.c, docs/operations.md). */
#define MAX_BASE_NS 1e6
#define MAX_PER_VCPU_NS 100e3

static const Shape common = { 4, 128, TRUE, 5 };	/* the host's first guess */
static const Shape odd = { 4, 128, FALSE, 7 };

/* ------------------------------------------------------------------ */
/* The attacker's side                                                */
/* ------------------------------------------------------------------ */

/* A peer of plain D-Bus calls (protocol 1, one register per ioctl), which
 * sends what it is told. */
typedef struct {
  GDBusConnection *conn;
  char *path;
  Entry *window;
  gsize size;
  guint32 entries;
} Raw;

static gboolean
raw_attach (Raw *p, const char *address, VgicSim *sim, const Shape *s, const char *name,
            const char *uuid, const char *abi, const char *probe, GError **error)
{
  g_autoptr (GVariant) reply = NULL, info = NULL;
  g_autoptr (GUnixFDList) fds = NULL;
  g_autofree guint32 *mpidrs = sim_vm_mpidrs (sim, s->vcpus);
  GVariantBuilder vm;
  const char *path;
  gint32 handle;
  int fd;

  p->conn = g_dbus_connection_new_for_address_sync (address,
                                                    G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT,
                                                    NULL, NULL, error);
  if (!p->conn)
    return FALSE;
  g_variant_builder_init (&vm, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&vm, "{sv}", "name", g_variant_new_string (name));
  g_variant_builder_add (&vm, "{sv}", "nr-irqs", g_variant_new_uint32 (s->irqs));
  g_variant_builder_add (&vm, "{sv}", "mpidrs",
                         g_variant_new_fixed_array (G_VARIANT_TYPE_UINT32, mpidrs, s->vcpus,
                                                    sizeof (guint32)));
  g_variant_builder_add (&vm, "{sv}", "kernel-batch", g_variant_new_boolean (FALSE));
  if (uuid)
    g_variant_builder_add (&vm, "{sv}", "uuid", g_variant_new_string (uuid));
  if (abi)
    g_variant_builder_add (&vm, "{sv}", "kernel-batch-abi", g_variant_new_string (abi));
  if (probe)
    g_variant_builder_add (&vm, "{sv}", "kernel-batch-probe", g_variant_new_string (probe));
  reply = g_dbus_connection_call_with_unix_fd_list_sync (
    p->conn, NULL, "/org/vgicd/Helper1", "org.vgicd.Helper1", "Attach",
    g_variant_new ("(@a{sv})", g_variant_builder_end (&vm)), G_VARIANT_TYPE ("(oha{sv})"),
    G_DBUS_CALL_FLAGS_NONE, VGICD_TEST_BUDGET_MS, NULL, &fds, NULL, error);
  if (!reply)
    return FALSE;
  g_variant_get (reply, "(&oh@a{sv})", &path, &handle, &info);
  g_assert_true (g_variant_lookup (info, "window-entries", "u", &p->entries));
  fd = g_unix_fd_list_get (fds, 0, error);
  g_assert_cmpint (fd, >=, 0);
  p->size = (gsize) p->entries * sizeof (Entry);
  p->window = mmap (NULL, p->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  g_assert_true (p->window != MAP_FAILED);
  close (fd);
  p->path = g_strdup (path);
  return TRUE;
}

/* A save whose steps run for real on @sim, one register per ioctl, each
 * reported as @ioctls ioctls that took @ns: figures of the peer's
 * choosing.  The last step's action. */
static char *
raw_save_forged (Raw *p, VgicSim *sim, guint32 ioctls, guint64 ns)
{
  g_autoptr (GError) error = NULL;
  GVariant *reply = g_dbus_connection_call_sync (p->conn, NULL, p->path, "org.vgicd.Session1",
                                                 "Save", NULL, G_VARIANT_TYPE ("(a{sv})"),
                                                 G_DBUS_CALL_FLAGS_NONE, VGICD_TEST_BUDGET_MS,
                                                 NULL, &error);
  g_autoptr (GVariant) step = NULL;

  g_assert_no_error (error);
  g_variant_get (reply, "(@a{sv})", &step);
  g_variant_unref (reply);
  for (;;)
    {
      const char *action = NULL;
      guint32 count = 0;
      VgicExecReport r;
      GVariantBuilder b;

      g_variant_lookup (step, "action", "&s", &action);
      if (g_strcmp0 (action, "read") != 0 && g_strcmp0 (action, "write") != 0)
        return g_strdup (action);
      g_variant_lookup (step, "count", "u", &count);
      g_assert_cmpuint (count, <=, p->entries);
      vgic_exec_run (vgic_sim_get_fd (sim), p->window, count,
                     action[0] == 'w' ? VGIC_EXEC_WRITE : VGIC_EXEC_READ, VGIC_EXEC_SINGLE, &r);
      g_assert_cmpint (r.error, ==, 0);
      g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
      g_variant_builder_add (&b, "{sv}", "done", g_variant_new_uint32 (r.done));
      g_variant_builder_add (&b, "{sv}", "error", g_variant_new_int32 (r.error));
      g_variant_builder_add (&b, "{sv}", "ioctls", g_variant_new_uint32 (ioctls));
      g_variant_builder_add (&b, "{sv}", "ns", g_variant_new_uint64 (ns));
      g_variant_builder_add (&b, "{sv}", "via", g_variant_new_string ("single"));
      g_clear_pointer (&step, g_variant_unref);
      reply = g_dbus_connection_call_sync (p->conn, NULL, p->path, "org.vgicd.Session1", "Next",
                                           g_variant_new ("(@a{sv})", g_variant_builder_end (&b)),
                                           G_VARIANT_TYPE ("(a{sv})"), G_DBUS_CALL_FLAGS_NONE,
                                           VGICD_TEST_BUDGET_MS, NULL, &error);
      g_assert_no_error (error);
      g_variant_get (reply, "(@a{sv})", &step);
      g_variant_unref (reply);
    }
}

/* Attach VMs of @s through libvgicd, from one process, until vgicd
 * refuses (at most 200): how many, and the refusal. */
static void
fill (const char *address, const Shape *s, const char *what, GPtrArray *keep)
{
  g_autoptr (VgicSim) sim = make_sim (s, TRUE);
  guint n = 0;

  for (; n < 200; n++)
    {
      g_autoptr (GError) error = NULL;
      g_autofree guint32 *mpidrs = sim_vm_mpidrs (sim, s->vcpus);
      g_autofree char *name = g_strdup_printf ("taker-%s-%u", what, n);
      VgicdClient *c = vgicd_client_connect (address, VGICD_TEST_BUDGET_MS, &error);

      g_assert_no_error (error);
      if (!vgicd_client_attach (c, vgic_sim_get_fd (sim), name, NULL, s->irqs, s->vcpus, mpidrs,
                                &error))
        {
          printf ("attached-%s %u\nrefused-%s %s\n", what, n, what, error->message);
          vgicd_client_free (c);
          return;
        }
      g_ptr_array_add (keep, c);
    }
  printf ("attached-%s %u\nrefused-%s never\n", what, n, what);
}

/* Attach @s as @name (@uuid), save once, and detach. */
static void
attach_save (const char *address, VgicSim *sim, const Shape *s, const char *name,
             const char *uuid, GPtrArray *keep)
{
  g_autoptr (GError) error = NULL;
  g_autofree guint32 *mpidrs = sim_vm_mpidrs (sim, s->vcpus);
  g_autoptr (GBytes) record = NULL;
  VgicdClient *c = vgicd_client_connect (address, VGICD_TEST_BUDGET_MS, &error);

  g_assert_no_error (error);
  g_assert_true (vgicd_client_attach (c, vgic_sim_get_fd (sim), name, uuid, s->irqs, s->vcpus,
                                      mpidrs, &error));
  g_assert_no_error (error);
  g_assert_true (vgicd_client_save (c, &record, &error));
  g_assert_no_error (error);
  if (keep)
    g_ptr_array_add (keep, c);
  else
    vgicd_client_free (c);
}

static int
attacker_main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) keep = g_ptr_array_new_with_free_func ((GDestroyNotify) vgicd_client_free);
  g_autoptr (GPtrArray) sims = g_ptr_array_new_with_free_func ((GDestroyNotify) vgic_sim_free);
  const char *mode = argv[2], *address = argv[3];
  Raw raw[2] = { { NULL } };
  char byte;

  /* Its sims' ioctls are served by the test's supervisor, whose filter it
   * inherited (vgic-sim-supervisor.c). */
  if (g_str_equal (mode, "fill"))
    {
      /* N5: every session it can, large VMs then small ones. */
      fill (address, &shapes[3], "big", keep);
      fill (address, &shapes[0], "small", keep);
    }
  else if (g_str_equal (mode, "forge") && argc == 5)
    {
      /* N7: a save one by one, its figures forged. */
      VgicSim *sim = make_sim (&shapes[1], FALSE);
      g_autofree char *last = NULL;

      g_ptr_array_add (sims, sim);
      g_assert_true (raw_attach (&raw[0], address, sim, &shapes[1], "forger",
                                 "0f3c1a2e-0000-4000-8000-0000000000f0", NULL, NULL, &error));
      g_assert_no_error (error);
      last = raw_save_forged (&raw[0], sim, 1, g_ascii_strtoull (argv[4], NULL, 10));
      printf ("save %s\n", last);
    }
  else if (g_str_equal (mode, "claim") && argc == 6)
    {
      /* N8: another VM's UUID under a name of its own, then @argv[5]
       * UUIDs of its making, each with an operation. */
      VgicSim *sim = make_sim (&common, TRUE);
      guint flood = (guint) g_ascii_strtoull (argv[5], NULL, 10);

      g_ptr_array_add (sims, sim);
      attach_save (address, sim, &common, "forged-name", argv[4], NULL);
      for (guint i = 0; i < flood; i++)
        {
          g_autofree char *uuid = g_uuid_string_random ();

          attach_save (address, sim, &common, "flood", uuid, NULL);
        }
      printf ("claimed\n");
    }
  else if (g_str_equal (mode, "probe"))
    {
      /* N9: a newline and other control characters in what the executor
       * found: a forged log line, in vgicd's journal and ListSessions. */
      static const char *const cases[][2] = {
        { "foreign", "group 10 of another layout\nvgicd[1]: VM honest: forged line" },
        { "ours\r\nx", "" },
        { "foreign", "tab\there and an escape \033[2J" },
      };
      VgicSim *sim = make_sim (&shapes[0], FALSE);

      g_ptr_array_add (sims, sim);
      for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
        {
          g_autoptr (GError) e = NULL;
          Raw *p = &raw[MIN (i, 1)];

          if (p->conn)
            {
              g_dbus_connection_close_sync (p->conn, NULL, NULL);
              g_clear_object (&p->conn);
            }
          if (raw_attach (p, address, sim, &shapes[0], "prober", NULL, cases[i][0], cases[i][1],
                          &e))
            printf ("case %u attached\n", i);
          else
            {
              g_autofree char *flat = g_strescape (e->message, NULL);

              printf ("case %u refused %s\n", i, flat);
            }
        }
    }
  else if (g_str_equal (mode, "odd") && argc == 5)
    {
      /* N10: sessions of an odd shape, each saving: each a vote? */
      guint n = (guint) g_ascii_strtoull (argv[4], NULL, 10);

      for (guint i = 0; i < n; i++)
        {
          g_autofree char *name = g_strdup_printf ("odd-%u", i);
          VgicSim *sim = make_sim (&odd, TRUE);

          g_ptr_array_add (sims, sim);
          attach_save (address, sim, &odd, name, NULL, keep);
        }
      printf ("saved %u\n", n);
    }
  else
    {
      fprintf (stderr, "test-vgicd-shares --attacker: bad arguments\n");
      return 2;
    }
  printf ("ready\n");
  fflush (stdout);
  while (read (STDIN_FILENO, &byte, 1) > 0)
    ;
  for (guint i = 0; i < G_N_ELEMENTS (raw); i++)
    if (raw[i].conn)
      {
        g_dbus_connection_close_sync (raw[i].conn, NULL, NULL);
        g_object_unref (raw[i].conn);
        munmap (raw[i].window, raw[i].size);
        g_free (raw[i].path);
      }
  return 0;
}

/* ------------------------------------------------------------------ */
/* The test's side                                                    */
/* ------------------------------------------------------------------ */

typedef struct {
  GSubprocess *proc;
  GDataInputStream *out;
  pid_t pid;
  char *said;	/* what it printed before "ready" */
} Attacker;

/* Start an attacker of @mode against @h (more arguments after it, NULL
 * last) and wait until it is ready. */
static Attacker *attacker_start (VgicdHarness *h, const char *mode, ...) G_GNUC_NULL_TERMINATED;

static Attacker *
attacker_start (VgicdHarness *h, const char *mode, ...)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autoptr (GError) error = NULL;
  g_autoptr (GString) said = g_string_new (NULL);
  Attacker *a = g_new0 (Attacker, 1);
  const char *arg;
  va_list ap;

  g_ptr_array_add (argv, (char *) "/proc/self/exe");
  g_ptr_array_add (argv, (char *) "--attacker");
  g_ptr_array_add (argv, (char *) mode);
  g_ptr_array_add (argv, h->address);
  va_start (ap, mode);
  while ((arg = va_arg (ap, const char *)))
    g_ptr_array_add (argv, (char *) arg);
  va_end (ap);
  g_ptr_array_add (argv, NULL);
  a->proc = g_subprocess_newv ((const char *const *) argv->pdata,
                               G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE,
                               &error);
  g_assert_no_error (error);
  a->pid = (pid_t) g_ascii_strtoll (g_subprocess_get_identifier (a->proc), NULL, 10);
  a->out = g_data_input_stream_new (g_subprocess_get_stdout_pipe (a->proc));
  for (;;)
    {
      g_autofree char *line = g_data_input_stream_read_line_utf8 (a->out, NULL, NULL, &error);

      g_assert_no_error (error);
      g_assert_nonnull (line);	/* else it failed: its stderr says why */
      if (g_str_equal (line, "ready"))
        break;
      g_test_message ("attacker %d: %s", (int) a->pid, line);
      g_string_append_printf (said, "%s\n", line);
    }
  a->said = g_string_free (g_steal_pointer (&said), FALSE);
  return a;
}

/* Let the attacker go (its sessions close with it) and check it ended well. */
static void
attacker_finish (Attacker *a)
{
  g_autoptr (GError) error = NULL;

  g_assert_true (g_output_stream_close (g_subprocess_get_stdin_pipe (a->proc), NULL, &error));
  g_assert_true (g_subprocess_wait (a->proc, NULL, &error));
  g_assert_no_error (error);
  g_assert_true (g_subprocess_get_if_exited (a->proc));
  g_assert_cmpint (g_subprocess_get_exit_status (a->proc), ==, 0);
  g_object_unref (a->out);
  g_object_unref (a->proc);
  g_free (a->said);
  g_free (a);
}

/* The number after "@key " in what the attacker said. */
static guint
said_number (Attacker *a, const char *key)
{
  g_autofree char *k = g_strdup_printf ("%s ", key);
  const char *at = strstr (a->said, k);

  g_assert_nonnull (at);
  return (guint) g_ascii_strtoull (at + strlen (k), NULL, 10);
}

static VgicdHarness *
start (const char *config)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *conf = g_strdup_printf ("Mode=auto\nAllowUsers=root\n%s", config);
  VgicdHarness *h = vgicd_harness_start (vgicd_test_bin, vgicd_test_policy, conf, &error);

  g_assert_no_error (error);
  return h;
}

/* The honest QEMU (this process) attaches a VM of @s, and saves. */
static VgicdClient *
honest (VgicdHarness *h, VgicSim *sim, const Shape *s, const char *name, const char *uuid)
{
  g_autoptr (GError) error = NULL;
  g_autofree guint32 *mpidrs = sim_vm_mpidrs (sim, s->vcpus);
  g_autoptr (GBytes) record = NULL;
  VgicdClient *c = vgicd_test_connect (h, &error);

  g_assert_no_error (error);
  if (!vgicd_client_attach (c, vgic_sim_get_fd (sim), name, uuid, s->irqs, s->vcpus, mpidrs,
                            &error))
    g_error ("the honest VM %s (%u vCPUs) was refused: %s", name, s->vcpus, error->message);
  g_assert_true (vgicd_client_save (c, &record, &error));
  g_assert_no_error (error);
  return c;
}

/* N5: one process takes every session it can, big VMs then small ones.
 * It is refused at its share (two sessions), and the honest QEMU's VMs,
 * large and small, still attach.  Then with a wide session share and a
 * small memory share: refused at its memory share, the same.  On a small
 * host (MaxSessionMemory=16), where the old rule let it take everything. */
static void
test_session_shares (void)
{
  static const char *const configs[] = {
    /* MaxSessionsPerProcess= and MaxSessionMemoryPerProcess= at their
     * defaults, restated over the harness's. */
    "MaxSessionMemory=16\nMaxSessionsPerProcess=2\nMaxSessionMemoryPerProcess=16\n",
    "MaxSessionMemory=16\nMaxSessionsPerProcess=1000\nMaxSessionMemoryPerProcess=1\n",
  };
  static const char *const why[] = {
    "its limit (MaxSessionsPerProcess=2)",
    "over its share (MaxSessionMemoryPerProcess=1 MiB)",
  };

  for (guint i = 0; i < G_N_ELEMENTS (configs); i++)
    {
      g_autoptr (VgicdHarness) h = start (configs[i]);
      g_autoptr (VgicSim) big = make_sim (&shapes[3], TRUE);
      g_autoptr (VgicSim) small = make_sim (&shapes[0], TRUE);
      Attacker *a = attacker_start (h, "fill", NULL);
      VgicdClient *c[2];

      c[0] = honest (h, big, &shapes[3], "honest-big", NULL);
      c[1] = honest (h, small, &shapes[0], "honest-small", NULL);
      g_assert_nonnull (strstr (a->said, why[i]));
      if (i == 0)
        g_assert_cmpuint (said_number (a, "attached-big") + said_number (a, "attached-small"), <=,
                          2);
      vgicd_client_free (c[0]);
      vgicd_client_free (c[1]);
      attacker_finish (a);
    }
}

/* A process over its share that attaches again and again: every refusal
 * is counted, but the log gets a line every 10 s at most (with how many
 * it did not log), not one each: a QEMU retrying in a loop must not flood
 * the journal. */
static void
test_refusals_logged_sparingly (void)
{
  g_autoptr (VgicdHarness) h = start ("MaxSessionsPerProcess=1\n");
  g_autoptr (VgicSim) sim = make_sim (&shapes[0], TRUE);
  g_autofree guint32 *mpidrs = sim_vm_mpidrs (sim, shapes[0].vcpus);
  g_autoptr (VgicdClient) mine = honest (h, sim, &shapes[0], "mine", NULL);
  const gint64 t0 = g_get_monotonic_time ();
  g_autofree char *log = NULL;
  guint lines = 0;
  double seconds;

  for (guint i = 0; i < 30; i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (VgicdClient) c = vgicd_test_connect (h, &error);

      g_assert_no_error (error);
      g_assert_false (vgicd_client_attach (c, vgic_sim_get_fd (sim), "again", NULL,
                                           shapes[0].irqs, shapes[0].vcpus, mpidrs, &error));
      g_assert_nonnull (strstr (error->message, "MaxSessionsPerProcess=1"));
    }
  seconds = (g_get_monotonic_time () - t0) / 1e6;
  g_assert_nonnull (mine);	/* its session held all along: the others were over the share */
  g_assert_cmpuint (vgicd_harness_stat (h, "refused"), >=, 30);
  log = vgicd_harness_read_log (h);
  for (const char *p = log; (p = strstr (p, "refused an attach")); p++)
    lines++;
  g_test_message ("30 refusals in %.1f s: %u log lines", seconds, lines);
  g_assert_cmpuint (lines, >=, 1);
  g_assert_cmpuint (lines, <=, 1 + (guint) (seconds / 10) + 1);
}

/* N7: a peer saves one register per ioctl and reports that its ioctls
 * took 5 s, then 2^64-1 ns.  The honest VM's next batched save is given
 * an estimate within what vgicd's own clock allows (under the plausible
 * ceiling for an uncalibrated host: Probe=false here), and no conversion
 * is undefined: the figure is the clamped one, not what an out-of-range
 * cast gives (0 on x86-64; -fsanitize=undefined does not include
 * float-cast-overflow, so the log's check below catches only the rest). */
static void
test_forged_figures (void)
{
  static const char *const forged[] = { "18446744073709551615", "5000000000" };
  g_autoptr (VgicdHarness) h = start ("");
  g_autoptr (VgicSim) sim = make_sim (&shapes[1], TRUE);
  const char *uuid = "0f3c1a2e-0000-4000-8000-00000000e571";
  g_autoptr (VgicdClient) c = honest (h, sim, &shapes[1], "honest", uuid);

  for (guint i = 0; i < G_N_ELEMENTS (forged); i++)
    {
      Attacker *a = attacker_start (h, "forge", forged[i], NULL);
      g_autoptr (GPtrArray) mine = NULL;
      g_autoptr (GBytes) record = NULL;
      g_autoptr (GError) error = NULL;
      g_autofree char *log = NULL;
      double ceiling;
      guint last;

      g_assert_nonnull (strstr (a->said, "save done"));
      g_assert_true (vgicd_client_save (c, &record, &error));
      g_assert_no_error (error);
      mine = history (h, uuid, 0);
      last = mine->len - 1;
      g_assert_cmpstr (hstr (mine, last, "path"), ==, "batch");
      g_assert_true (hnum (mine, last, "single-estimated"));
      ceiling = hnum (mine, last, "registers") * (MAX_BASE_NS + MAX_PER_VCPU_NS * shapes[1].vcpus);
      g_test_message ("forged ns %s: the honest save's one-by-one estimate %" G_GUINT64_FORMAT
                      " ns (ceiling %.0f)", forged[i], hnum (mine, last, "single-ns"), ceiling);
      g_assert_cmpfloat ((double) hnum (mine, last, "single-ns"), <=, ceiling);
      /* ... and a figure: the forger's save, as long as vgicd saw it take
       * (a conversion out of range gave 0 here). */
      g_assert_cmpuint (hnum (mine, last, "single-ns"), >, 0);
      log = vgicd_harness_read_log (h);
      g_assert_null (strstr (log, "runtime error:"));
      attacker_finish (a);
    }
}

/* N8, renaming and forging: the honest VM saves under its UUID; a peer
 * then attaches with the same UUID under another name and saves.  The
 * honest VM's entry keeps its name, and its name lists only its own
 * process's entries. */
static void
test_history_claimed_uuid (void)
{
  g_autoptr (VgicdHarness) h = start ("HistoryVMsPerProcess=4\n");
  g_autoptr (VgicSim) sim = make_sim (&common, TRUE);
  const char *uuid = "0f3c1a2e-0000-4000-8000-00000000c1a1";
  g_autoptr (GPtrArray) by_uuid = NULL, by_name = NULL;
  VgicdClient *c = honest (h, sim, &common, "honest-vm", uuid);
  Attacker *a;
  guint named = 0;

  vgicd_client_free (c);
  wait_sessions (h, 0);
  a = attacker_start (h, "claim", uuid, "0", NULL);
  by_uuid = history (h, uuid, 0);
  for (guint i = 0; i < by_uuid->len; i++)
    {
      g_test_message ("%s: %s", uuid, hstr (by_uuid, i, "vm"));
      named += g_str_equal (hstr (by_uuid, i, "vm"), "honest-vm");
    }
  /* Not renamed. */
  g_assert_cmpuint (named, ==, 1);
  /* Nothing added under its name, and each entry says whose it is. */
  by_name = history (h, "honest-vm", 0);
  g_assert_cmpuint (by_name->len, ==, 1);
  g_assert_cmpuint (hnum (by_name, 0, "pid"), ==, (guint64) getpid ());
  for (guint i = 0; i < by_uuid->len; i++)
    if (g_str_equal (hstr (by_uuid, i, "vm"), "forged-name"))
      g_assert_cmpuint (hnum (by_uuid, i, "pid"), ==, (guint64) a->pid);
  attacker_finish (a);
}

/* N8, eviction: the honest VM saves; then one process attaches 40 VMs
 * of UUIDs of its own making, an operation each, on a host that keeps 16
 * VMs' history.  It drops its own, never the honest VM's. */
static void
test_history_flood (void)
{
  g_autoptr (VgicdHarness) h = start ("HistoryVMs=16\nHistoryVMsPerProcess=4\n");
  g_autoptr (VgicSim) sim = make_sim (&common, TRUE);
  const char *uuid = "0f3c1a2e-0000-4000-8000-00000000f100";
  g_autoptr (GPtrArray) mine = NULL, all = NULL;
  VgicdClient *c = honest (h, sim, &common, "honest-vm", uuid);
  Attacker *a;
  guint theirs = 0;

  vgicd_client_free (c);
  a = attacker_start (h, "claim", "0f3c1a2e-0000-4000-8000-00000000f1ff", "40", NULL);
  mine = history (h, uuid, 0);
  g_assert_cmpuint (mine->len, ==, 1);
  g_assert_cmpstr (hstr (mine, 0, "vm"), ==, "honest-vm");
  all = history (h, "", 0);
  for (guint i = 0; i < all->len; i++)
    theirs += !g_str_equal (hstr (all, i, "vm"), "honest-vm");
  g_test_message ("the flood's entries kept: %u", theirs);
  g_assert_cmpuint (theirs, <=, 4);
  attacker_finish (a);
}

/* N9: a newline, a carriage return, a tab and an escape in
 * kernel-batch-probe and kernel-batch-abi: each attach is refused, and
 * nothing of them reaches vgicd's log. */
static void
test_peer_strings (void)
{
  g_autoptr (VgicdHarness) h = start ("");
  Attacker *a = attacker_start (h, "probe", NULL);
  g_autofree char *log = NULL;
  g_autoptr (GVariant) reply = NULL;
  g_autofree char *listing = NULL;

  log = vgicd_harness_read_log (h);
  g_assert_null (strstr (log, "\nvgicd[1]: VM honest: forged line"));
  g_assert_null (strstr (log, "\033[2J"));
  reply = vgicd_harness_manager_call (h, "ListSessions", NULL, "(aa{sv})");
  listing = g_variant_print (reply, FALSE);
  g_assert_null (strstr (listing, "forged line"));
  for (guint i = 0; i < 3; i++)
    {
      g_autofree char *want = g_strdup_printf ("case %u refused ", i);
      const char *at = strstr (a->said, want);

      g_assert_nonnull (at);
      g_assert_nonnull (strstr (at, "must be printable characters"));
    }
  attacker_finish (a);
}

/* N10: the honest QEMU's VM (of the host's usual shape) saves; one peer
 * attaches two VMs of an odd shape, each saving.  A new VM of the usual
 * shape still saves in one round: one process is one vote, and one peer
 * never moves the host's guess.  The guess still learns: when a second
 * process of the odd shape saves, the odd shape has most processes' votes,
 * and a new VM of the odd shape saves in one round. */
static void
test_save_guess_votes (void)
{
  g_autoptr (VgicdHarness) h = start ("");
  g_autoptr (VgicSim) first = make_sim (&common, TRUE);
  g_autoptr (VgicSim) newcomer = make_sim (&common, TRUE);
  g_autoptr (VgicSim) odd_newcomer = make_sim (&odd, TRUE);
  VgicdClient *c[3];
  Attacker *a, *b;
  guint64 rounds;

  c[0] = honest (h, first, &common, "usual", NULL);
  a = attacker_start (h, "odd", "2", NULL);
  g_assert_cmpuint (said_number (a, "saved"), ==, 2);
  rounds = vgicd_harness_stat (h, "second-rounds");
  c[1] = honest (h, newcomer, &common, "newcomer", NULL);
  g_test_message ("second rounds: %" G_GUINT64_FORMAT " -> %" G_GUINT64_FORMAT, rounds,
                  vgicd_harness_stat (h, "second-rounds"));
  g_assert_cmpuint (vgicd_harness_stat (h, "second-rounds"), ==, rounds);

  b = attacker_start (h, "odd", "1", NULL);
  rounds = vgicd_harness_stat (h, "second-rounds");
  c[2] = honest (h, odd_newcomer, &odd, "odd-newcomer", NULL);
  g_test_message ("two processes of the odd shape; second rounds: %" G_GUINT64_FORMAT " -> %"
                  G_GUINT64_FORMAT, rounds, vgicd_harness_stat (h, "second-rounds"));
  g_assert_cmpuint (vgicd_harness_stat (h, "second-rounds"), ==, rounds);
  for (guint i = 0; i < G_N_ELEMENTS (c); i++)
    vgicd_client_free (c[i]);
  attacker_finish (a);
  attacker_finish (b);
}

int
main (int argc, char **argv)
{
  if (argc >= 4 && g_str_equal (argv[1], "--attacker"))
    return attacker_main (argc, argv);
  vgicd_test_init (&argc, &argv);
  g_test_add_func ("/vgicd/shares/sessions", test_session_shares);
  g_test_add_func ("/vgicd/shares/refusals-logged-sparingly", test_refusals_logged_sparingly);
  g_test_add_func ("/vgicd/shares/forged-figures", test_forged_figures);
  g_test_add_func ("/vgicd/shares/history-claimed-uuid", test_history_claimed_uuid);
  g_test_add_func ("/vgicd/shares/history-flood", test_history_flood);
  g_test_add_func ("/vgicd/shares/peer-strings", test_peer_strings);
  g_test_add_func ("/vgicd/shares/save-guess-votes", test_save_guess_votes);
  return g_test_run ();
}
