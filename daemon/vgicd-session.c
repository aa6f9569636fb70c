/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-session.c - one QEMU's session: its life cycle.  Attach's
 * arguments become the VM's shape, a window sized for its largest step and
 * the plan of round 1 (both made here, outside any downtime); the session
 * registers with the daemon, serves Session1 on the peer's connection and,
 * when asked, a step channel; it goes when the connection does.
 *
 * What the session does with Session1's six methods is vgicd-steps.c's;
 * how they reach it, vgicd-session-dbus.c's and vgicd-session-channel.c's.
 */
#include <string.h>

#include "vgicd-relay.h"
#include "vgicd-session-private.h"
#include "vgicd-vms.h"
#include "vgicd/protocol.h"

static guint next_session_id;

/* The VM's own restriction: its domain's choice, the host's per-VM policy.
 * A policy that cannot be read is logged and ignored: it must not stop a
 * VM from starting or migrating. */
void
vgicd_session_refresh_policy (VgicdSession *s)
{
  g_autoptr (GError) error = NULL;
  char buf[256];
  VgicdVmPolicy p;

  s->vm_mode = VGICD_MODE_AUTO;
  g_clear_pointer (&s->vm_mode_source, g_free);
  s->vm_record = s->daemon->config->record;
  if (!vgicd_vms_lookup (s->daemon->vms_conf, s->daemon->vms_dir, VGICD_MODE_AUTO,
                         s->daemon->config->record, s->uuid, s->name, &p, buf, sizeof buf, &error))
    {
      vgicd_session_log (s, G_LOG_LEVEL_WARNING, NULL, NULL,
                         "VM %s: per-VM policy ignored: %s", s->name, error->message);
      s->vm_mode_source = g_strdup ("host (per-VM policy unreadable)");
      return;
    }
  s->vm_mode = p.mode;
  s->vm_mode_source = g_strdup (p.source);
  s->vm_record = p.record;
}

/* ------------------------------------------------------------------ */
/* Life cycle                                                         */
/* ------------------------------------------------------------------ */

/* A VM's name goes into vgicd's log, the journal's fields, Manager1's
 * answers and vgicctl's terminal: control characters there would forge
 * log lines or drive the terminal, and a name of megabytes would make
 * every listing that big (the system bus drops a connection that sends a
 * message over its limit).  libvirt's and QEMU's names are far shorter.
 * Every other string a peer sends that vgicd keeps (its executor's
 * kernel-batch-abi and kernel-batch-probe: ListSessions has them, and the
 * journal when the ABI is foreign) passes the same check, with its own
 * length. */
static gboolean
text_ok (const char *text, gsize max)
{
  if (strlen (text) > max)
    return FALSE;
  /* GVariant strings are valid UTF-8. */
  for (const char *p = text; *p; p = g_utf8_next_char (p))
    if (!g_unichar_isprint (g_utf8_get_char (p)))
      return FALSE;
  return TRUE;
}

static gboolean
parse_vm (VgicdSession *s, GVariant *vm, GError **error)
{
  g_autoptr (GVariant) mpidrs = NULL;
  guint32 nr_irqs = 0;
  gsize n = 0;
  const guint32 *aff;

  if (!g_variant_lookup (vm, VGICD_VM_NAME, "s", &s->name) ||
      !g_variant_lookup (vm, VGICD_VM_NR_IRQS, "u", &nr_irqs) ||
      !(mpidrs = g_variant_lookup_value (vm, VGICD_VM_MPIDRS, G_VARIANT_TYPE ("au"))))
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_INVALID_SHAPE,
                   "Attach needs \"name\" (s), \"nr-irqs\" (u) and \"mpidrs\" (au)");
      return FALSE;
    }
  if (!text_ok (s->name, VGICD_VM_NAME_MAX))
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_INVALID_SHAPE,
                   "Attach: \"%s\" must be at most %d bytes of printable characters",
                   VGICD_VM_NAME, VGICD_VM_NAME_MAX);
      return FALSE;
    }
  if (!g_variant_lookup (vm, VGICD_VM_UUID, "s", &s->uuid))
    s->uuid = g_strdup ("");
  if (*s->uuid && !vgicd_vms_uuid_ok (s->uuid))
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_INVALID_SHAPE,
                   "Attach: \"%s\" is not a UUID (hex digits and '-', at most 64)",
                   VGICD_VM_UUID);
      return FALSE;
    }
  g_variant_lookup (vm, VGICD_VM_KERNEL_BATCH, "b", &s->kernel_batch);
  /* Older executors send neither: their probe was HAS(10, 0) alone. */
  if (!g_variant_lookup (vm, VGICD_VM_KERNEL_BATCH_ABI, "s", &s->kernel_batch_abi))
    s->kernel_batch_abi = g_strdup (s->kernel_batch ? VGICD_BATCH_ABI_OURS : VGICD_BATCH_ABI_ABSENT);
  if (!g_variant_lookup (vm, VGICD_VM_KERNEL_BATCH_PROBE, "s", &s->kernel_batch_probe))
    s->kernel_batch_probe = g_strdup ("");
  /* A batch group is driven only when its behaviour was verified on this
   * host: "ours" is the executor's probe on the VM's own vGIC; "unknown"
   * (it could not tell, e.g. a vCPU ran when it attached) is settled by
   * vgicd's own probe in vgicd_session_new(); anything else runs one by
   * one, as the log line at attach says. */
  if (s->kernel_batch && strcmp (s->kernel_batch_abi, VGICD_BATCH_ABI_OURS) != 0 &&
      strcmp (s->kernel_batch_abi, VGICD_BATCH_ABI_UNKNOWN) != 0)
    s->kernel_batch = FALSE;
  if (!text_ok (s->kernel_batch_abi, 16) ||
      !text_ok (s->kernel_batch_probe, VGICD_VM_KERNEL_BATCH_PROBE_MAX))
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_INVALID_SHAPE,
                   "Attach: \"%s\" (at most 16 bytes) and \"%s\" (at most %d) must be "
                   "printable characters", VGICD_VM_KERNEL_BATCH_ABI,
                   VGICD_VM_KERNEL_BATCH_PROBE, VGICD_VM_KERNEL_BATCH_PROBE_MAX);
      return FALSE;
    }
  {
    g_autofree const char **features = NULL;

    if (g_variant_lookup (vm, VGICD_VM_FEATURES, "^a&s", &features))
      {
        s->peer_guards = g_strv_contains (features, VGICD_FEATURE_GUARDS);
        s->peer_record_window = g_strv_contains (features, VGICD_FEATURE_RECORD_WINDOW);
        /* The channel's packets are small: a record cannot travel in one,
         * so only a peer that takes it from the window gets a channel. */
        s->peer_channel = g_strv_contains (features, VGICD_FEATURE_CHANNEL) &&
                          s->peer_record_window;
      }
  }
  aff = g_variant_get_fixed_array (mpidrs, &n, sizeof (guint32));
  if (n > VGIC_MAX_VCPUS)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_INVALID_SHAPE,
                   "%" G_GSIZE_FORMAT " vCPUs is more than vgicd supports (%u)", n,
                   VGIC_MAX_VCPUS);
      return FALSE;
    }
  s->shape = vgic_shape_new (nr_irqs, (guint32) n, aff, error);
  return s->shape != NULL;
}

/* MaxVcpus= takes what the shape code does. */
G_STATIC_ASSERT (VGICD_MAX_MAX_VCPUS == VGIC_MAX_VCPUS);

/* vgicd_session_footprint() of a session whose window has @capacity
 * entries. */
static gsize
footprint_of (guint32 capacity)
{
  return 5 * (gsize) capacity * sizeof (struct kvm_vgic_batch_entry);
}

/* MaxVcpus=, MaxSessionMemoryPerProcess= and MaxSessionMemory=: may a VM
 * of @vcpus, whose session would hold @footprint bytes, attach for the
 * process @pid besides the sessions there are?  The process's share first:
 * one process that holds more than its share is refused, and what it
 * cannot take is left for the VMs that attach after it. */
static gboolean
within_limits (VgicdDaemon *daemon, pid_t pid, guint vcpus, gsize footprint, GError **error)
{
  const VgicdConfig *config = daemon->config;
  guint64 used = 0, mine = 0;

  if (vcpus > config->max_vcpus)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_LIMIT,
                   "the VM has %u vCPUs, more than this host's limit (MaxVcpus=%u); it saves "
                   "and loads by QEMU's own path", vcpus, config->max_vcpus);
      return FALSE;
    }
  for (guint i = 0; i < daemon->sessions->len; i++)
    {
      VgicdSession *t = g_ptr_array_index (daemon->sessions, i);
      gsize f = vgicd_session_footprint (t);

      used += f;
      if (t->pid == pid)
        mine += f;
    }
  if (mine + footprint > (guint64) config->max_session_memory_per_process << 20)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_LIMIT,
                   "process %d's sessions hold %.2f MiB and this one would %.2f MiB more, "
                   "over its share (MaxSessionMemoryPerProcess=%u MiB); it saves and loads "
                   "by QEMU's own path", (int) pid, mine / 1048576.0, footprint / 1048576.0,
                   config->max_session_memory_per_process);
      return FALSE;
    }
  if (used + footprint > (guint64) config->max_session_memory << 20)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_LIMIT,
                   "the attached VMs may hold %.2f MiB and this one %.2f MiB more, over "
                   "this host's limit (MaxSessionMemory=%u MiB); it saves and loads by "
                   "QEMU's own path", used / 1048576.0, footprint / 1048576.0,
                   config->max_session_memory);
      return FALSE;
    }
  return TRUE;
}

/*
 * Without a probe of its own (Probe=false, or /dev/kvm not openable), vgicd
 * does not know the host's kernel: KernelBatch stays "unknown", and its
 * source tells what the attached VMs' executors claim, counted, never one
 * of them taken for the host's.
 */
static void
note_claims (VgicdDaemon *d)
{
  guint yes = 0, no = 0;

  if (d->kernel_batch_probed)
    return;
  for (guint i = 0; i < d->sessions->len; i++)
    {
      VgicdSession *s = d->sessions->pdata[i];

      if (s->kernel_batch)
        yes++;
      else
        no++;
    }
  g_free (d->kernel_batch_source);
  d->kernel_batch_source =
    g_strdup_printf ("%s; the executors of the %u attached VM(s) claim: %u with the batch "
                     "group, %u without (a VM's claim is its own, not the host's)",
                     d->kernel_batch_unprobed ? d->kernel_batch_unprobed : "no probe",
                     yes + no, yes, no);
}

VgicdSession *
vgicd_session_new (VgicdDaemon *daemon, GDBusConnection *connection, GVariant *vm,
                   uid_t uid, pid_t pid, GError **error)
{
  VgicdSession *s = g_new0 (VgicdSession, 1);
  g_autofree char *msg = NULL;
  guint32 capacity;

  s->peer_channel_fd = -1;
  s->daemon = daemon;
  s->uid = uid;
  s->pid = pid;
  if (!parse_vm (s, vm, error))
    {
      vgicd_session_free (s);
      return NULL;
    }
  /* vgicd's own start-up probe, where it has one, overrides: a group it
   * found to be another layout is never driven, and one the executor could
   * not verify is driven only if the probe verified it. */
  if (s->kernel_batch && (daemon->kernel_batch_foreign ||
                          (strcmp (s->kernel_batch_abi, VGICD_BATCH_ABI_UNKNOWN) == 0 &&
                           !(daemon->kernel_batch_probed && daemon->kernel_batch == 1))))
    {
      char *executor = s->kernel_batch_probe;

      s->kernel_batch = FALSE;
      s->kernel_batch_probe =
        g_strdup_printf ("%s (its executor: %s)", daemon->kernel_batch_foreign
                         ? "vgicd's start-up probe found the kernel's group 10 to be "
                           "another batch interface"
                         : "neither its executor nor vgicd's start-up probe could verify "
                           "the kernel's vGIC batch group", *executor ? executor : "-");
      g_free (executor);
    }
  /* The largest step of any operation on this shape: a restore's writes
   * with LPIs and four APRs per group, after its guards (QEMU's three reads,
   * which the count includes, and one per vCPU; a save, even with its
   * guessed round 2, is smaller; so is its record). */
  capacity = vgic_plan_restore_count (s->shape, TRUE, 4) + vgic_plan_route_count (s->shape) +
             s->shape->nr_vcpus + 8;
  /* The host's limits, before anything is allocated for the VM. */
  if (!within_limits (daemon, pid, s->shape->nr_vcpus, footprint_of (capacity), error))
    {
      vgicd_session_free (s);
      return NULL;
    }
  s->window = vgicd_window_new (capacity, error);
  if (!s->window)
    {
      vgicd_session_free (s);
      return NULL;
    }
  /* Round 1 of a save depends on the shape alone: planned once, here,
   * rather than inside each save's or load's downtime. */
  s->first_plan = vgic_plan_save_first (s->shape);
  s->routes_plan = vgic_plan_save_routes (s->shape);
  s->connection = g_object_ref (connection);
  s->path = g_strdup_printf (VGICD_SESSION_PATH_PREFIX "%u", ++next_session_id);
  if (!vgicd_session_dbus_export (s, error))
    {
      vgicd_session_free (s);
      return NULL;
    }
  if (s->peer_channel && !vgicd_session_channel_open (s, error))
    {
      vgicd_session_free (s);
      return NULL;
    }
  s->attached_usec = g_get_real_time ();
  vgicd_session_refresh_policy (s);

  /* The host's status is vgicd's own probe's: an executor is a peer,
   * possibly hostile, and its claim is only its own VM's (the session runs
   * by it).  One that disagrees with the probe is logged. */
  if (daemon->kernel_batch_probed && daemon->kernel_batch != (s->kernel_batch ? 1 : 0))
    vgicd_session_log (s, G_LOG_LEVEL_WARNING, NULL, NULL,
                       "VM %s: its executor says this kernel %s the batch group, but "
                       "vgicd's own probe found %s; the host's status stays the probe's",
                       s->name, s->kernel_batch ? "has" : "lacks",
                       daemon->kernel_batch ? "it" : "none");
  g_ptr_array_add (daemon->sessions, s);
  note_claims (daemon);
  daemon->totals.sessions_total++;
  if (g_strcmp0 (s->kernel_batch_abi, VGICD_BATCH_ABI_FOREIGN) == 0)
    {
      /* Never driven with this layout: every operation of the VM runs one
       * by one (and is counted in fallbacks as well). */
      daemon->totals.foreign_batch++;
      vgicd_session_log (s, G_LOG_LEVEL_WARNING, "VGICD_FALLBACK", "foreign-batch-abi",
                         "VM %s: %s; every save and load of this VM runs one "
                         "register per ioctl", s->name,
                         *s->kernel_batch_probe ? s->kernel_batch_probe
                         : "its executor found a device-attr group 10 of another ABI");
    }
  msg = g_strdup_printf ("attached: %u vCPUs, %u IRQs, kernel batch %s, %s, pid %d uid %u%s%s%s",
                         s->shape->nr_vcpus, s->shape->nr_irqs,
                         s->kernel_batch ? "yes" : "no",
                         s->peer_channel ? "step channel" : "D-Bus steps", (int) pid, (guint) uid,
                         s->vm_mode == VGICD_MODE_AUTO ? "" : ", VM mode ",
                         s->vm_mode == VGICD_MODE_AUTO ? "" : vgicd_mode_to_string (s->vm_mode),
                         s->vm_mode == VGICD_MODE_AUTO ? "" : " by policy");
  vgicd_session_log_op (s, G_LOG_LEVEL_MESSAGE, "attach", msg);
  vgicd_daemon_changed (daemon);
  return s;
}

void
vgicd_session_free (VgicdSession *s)
{
  if (!s)
    return;
  vgicd_steps_flush (s);
  if (s->daemon && g_ptr_array_remove (s->daemon->sessions, s))
    {
      if (vgicd_steps_operation (s))
        vgicd_steps_abandon (s);
      else
        vgicd_session_log_op (s, G_LOG_LEVEL_MESSAGE, "detach", "detached");
      note_claims (s->daemon);
      vgicd_daemon_changed (s->daemon);
    }
  vgicd_session_dbus_unexport (s);
  vgicd_steps_reset (s);
  vgicd_session_channel_close (s);
  g_clear_pointer (&s->last_second, vgic_list_unref);
  g_clear_pointer (&s->first_plan, vgic_list_unref);
  g_clear_pointer (&s->routes_plan, vgic_list_unref);
  g_clear_object (&s->connection);
  vgicd_window_free (s->window);
  vgic_shape_free (s->shape);
  g_free (s->name);
  g_free (s->uuid);
  g_free (s->kernel_batch_abi);
  g_free (s->kernel_batch_probe);
  g_free (s->vm_mode_source);
  g_free (s->path);
  g_free (s);
}

const char *
vgicd_session_get_path (VgicdSession *s)
{
  return s->path;
}

int
vgicd_session_get_window_fd (VgicdSession *s)
{
  return s->window->fd;
}

gsize
vgicd_session_footprint (VgicdSession *s)
{
  return footprint_of (s->window->capacity);
}

GVariant *
vgicd_session_get_info (VgicdSession *s, gint channel_handle)
{
  GVariantBuilder b;

  g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
  if (channel_handle >= 0)
    g_variant_builder_add (&b, "{sv}", VGICD_INFO_CHANNEL, g_variant_new_handle (channel_handle));
  g_variant_builder_add (&b, "{sv}", VGICD_INFO_WINDOW_ENTRIES,
                         g_variant_new_uint32 (s->window->capacity));
  g_variant_builder_add (&b, "{sv}", VGICD_INFO_MODE,
                         g_variant_new_string (vgicd_mode_to_string (vgicd_session_mode (s))));
  g_variant_builder_add (&b, "{sv}", VGICD_INFO_PROTOCOL,
                         g_variant_new_uint32 (VGICD_PROTOCOL_VERSION));
  {
    static const char *const features[] = {
      VGICD_FEATURE_LOAD_WINDOW, VGICD_FEATURE_FIELDS, NULL,
    };
    g_variant_builder_add (&b, "{sv}", VGICD_INFO_FEATURES, g_variant_new_strv (features, -1));
  }
  g_variant_builder_add (&b, "{sv}", VGICD_INFO_VERSION, g_variant_new_string (PACKAGE_VERSION));
  g_variant_builder_add (&b, "{sv}", VGICD_INFO_TIMEOUT,
                         g_variant_new_uint32 (s->daemon->config->client_timeout));
  g_variant_builder_add (&b, "{sv}", VGICD_INFO_RECORD, g_variant_new_boolean (s->vm_record));
  /* A record longer is no VM's on this host, and as Load's argument a
   * message longer than the relay takes: the peer refuses it itself. */
  g_variant_builder_add (&b, "{sv}", VGICD_INFO_RECORD_MAX,
                         g_variant_new_uint32 ((guint32) MIN (G_MAXUINT32,
                                                              vgicd_relay_record_max (
                                                                s->daemon->config->max_vcpus))));
  return g_variant_builder_end (&b);
}

GVariant *
vgicd_session_describe (VgicdSession *s)
{
  GVariantBuilder b;

  g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&b, "{sv}", "name", g_variant_new_string (s->name));
  g_variant_builder_add (&b, "{sv}", "uuid", g_variant_new_string (s->uuid));
  g_variant_builder_add (&b, "{sv}", "vcpus", g_variant_new_uint32 (s->shape->nr_vcpus));
  g_variant_builder_add (&b, "{sv}", "nr-irqs", g_variant_new_uint32 (s->shape->nr_irqs));
  g_variant_builder_add (&b, "{sv}", "kernel-batch", g_variant_new_boolean (s->kernel_batch));
  g_variant_builder_add (&b, "{sv}", "kernel-batch-abi", g_variant_new_string (s->kernel_batch_abi));
  g_variant_builder_add (&b, "{sv}", "kernel-batch-probe",
                         g_variant_new_string (s->kernel_batch_probe));
  g_variant_builder_add (&b, "{sv}", "mode",
                         g_variant_new_string (vgicd_mode_to_string (vgicd_session_mode (s))));
  g_variant_builder_add (&b, "{sv}", "mode-source",
                         g_variant_new_string (s->daemon->mode == VGICD_MODE_OFF ||
                                               s->vm_mode == VGICD_MODE_AUTO ? "host"
                                               : s->vm_mode_source));
  g_variant_builder_add (&b, "{sv}", "saves", g_variant_new_uint64 (s->save.count));
  g_variant_builder_add (&b, "{sv}", "loads", g_variant_new_uint64 (s->load.count));
  g_variant_builder_add (&b, "{sv}", "last-save-ns", g_variant_new_uint64 (s->save.ns));
  g_variant_builder_add (&b, "{sv}", "last-save-ioctls", g_variant_new_uint32 (s->save.ioctls));
  g_variant_builder_add (&b, "{sv}", "last-save-via", g_variant_new_string (s->save.via ? s->save.via : ""));
  g_variant_builder_add (&b, "{sv}", "last-save-stream",
                         g_variant_new_string (s->save.stream ? s->save.stream : ""));
  g_variant_builder_add (&b, "{sv}", "last-load-ns", g_variant_new_uint64 (s->load.ns));
  g_variant_builder_add (&b, "{sv}", "last-load-ioctls", g_variant_new_uint32 (s->load.ioctls));
  g_variant_builder_add (&b, "{sv}", "last-load-via", g_variant_new_string (s->load.via ? s->load.via : ""));
  g_variant_builder_add (&b, "{sv}", "last-load-stream",
                         g_variant_new_string (s->load.stream ? s->load.stream : ""));
  g_variant_builder_add (&b, "{sv}", "record", g_variant_new_boolean (s->vm_record));
  g_variant_builder_add (&b, "{sv}", "attached-usec", g_variant_new_uint64 ((guint64) s->attached_usec));
  return g_variant_builder_end (&b);
}
