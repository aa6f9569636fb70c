/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-client-steps.c - libvgicd follows vgicd's steps.
 *
 * Theory of operation
 *
 * vgicd answers every Session1 call (Save, SaveFields, Load, LoadWindow,
 * LoadList, Next) with a step.  A "read" or "write" step
 * names a count of entries in the shared window.  The window is shared
 * memory that vgicd can change at any time, so the loop copies the entries
 * into private memory first, checks the copy (groups, widths, count), runs
 * the copy, and only then copies the results back.  What the kernel is asked
 * to do is exactly what was checked.
 *
 * A write step may start with guards: reads, each with a range its value
 * (under a mask) must fall in.  They are how a restore takes one round trip
 * rather than two: vgicd states what the destination must look like, and
 * the loop writes nothing unless it does.  The guards are run and checked
 * on the private copy too.
 *
 * The last step of an operation need not wait for vgicd's answer when
 * that answer can only be done and carries nothing the caller needs: a
 * restore's writes, all applied ("last"), and a save into QEMU's fields
 * whose reads satisfy the step's "last-if" (round 1's values ask for
 * exactly the round 2 vgicd guessed and read with it).  The report then
 * goes out and the operation ends, a round trip early.
 */
#include <string.h>

#include "vgicd-client-private.h"
#include "vgicd/protocol.h"

/* The first guard whose read does not satisfy its range, or -1.  The
 * ranges are a(ttt), fixed-size: read in place as (mask, min, max) triples
 * (their count was checked against the guards'). */
static gint64
first_failed_guard (const struct kvm_vgic_batch_entry *reads, GVariant *ranges)
{
  gsize n = 0;
  const guint64 *r = g_variant_get_fixed_array (ranges, &n, 3 * sizeof (guint64));

  for (gsize i = 0; i < n; i++)
    {
      guint64 v = reads[i].value & r[3 * i];

      if (v < r[3 * i + 1] || v > r[3 * i + 2])
        return (gint64) i;
    }
  return -1;
}

/* Does a read step's "last-if" hold: for each (index, mask, min, max), the
 * value read at index, under mask, in [min, max]?  FALSE for an index past
 * the step (vgicd's mistake, or its malice: the save then just takes
 * vgicd's answer, as without the key). */
static gboolean
last_if_holds (const struct kvm_vgic_batch_entry *reads, guint32 count, GVariant *checks)
{
  gsize n = 0;
  const guint64 *k = g_variant_get_fixed_array (checks, &n, 4 * sizeof (guint64));

  for (gsize i = 0; i < n; i++)
    {
      const guint64 *c = &k[4 * i];
      guint64 v;

      if (c[0] >= count)
        return FALSE;
      v = reads[c[0]].value & c[1];
      if (v < c[2] || v > c[3])
        return FALSE;
    }
  return n > 0;
}

static void
add_report (GVariantBuilder *b, const VgicExecReport *r, guint32 index_base,
            VgicExecVia via)
{
  g_variant_builder_add (b, "{sv}", VGICD_REPORT_DONE, g_variant_new_uint32 (r->done));
  g_variant_builder_add (b, "{sv}", VGICD_REPORT_ERROR, g_variant_new_int32 (r->error));
  g_variant_builder_add (b, "{sv}", VGICD_REPORT_ERROR_INDEX,
                         g_variant_new_uint32 (index_base + r->error_index));
  g_variant_builder_add (b, "{sv}", VGICD_REPORT_NS, g_variant_new_uint64 (r->ns));
  g_variant_builder_add (b, "{sv}", VGICD_REPORT_VIA,
                         g_variant_new_string (via == VGIC_EXEC_BATCH ? VGICD_VIA_BATCH
                                                                      : VGICD_VIA_SINGLE));
}

static GVariant *
step_done (void)
{
  GVariantBuilder b;

  g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&b, "{sv}", VGICD_STEP_ACTION, g_variant_new_string (VGICD_ACTION_DONE));
  return g_variant_ref_sink (g_variant_builder_end (&b));
}

/* The last writes of a load all applied, and the report of them could not
 * reach vgicd (it went away: killed, or restarted by an upgrade, between
 * handing out the step and taking its report).  The vGIC is restored
 * whole, so the load has succeeded: failing it would fail a migration whose
 * destination is complete.  Only vgicd's log of it is lost, so say so on
 * QEMU's side (its log is the domain's), as a message: a warning would be
 * fatal to a program run with G_DEBUG=fatal-warnings.  Any other failure
 * stands. */
static GVariant *
last_report_lost (VgicdClient *c, gboolean write, GError *lost, GError **error)
{
  g_autoptr (GError) local = lost;

  if (!g_error_matches (local, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_UNREACHABLE))
    {
      g_propagate_error (error, g_steal_pointer (&local));
      return NULL;
    }
  g_log_structured ("libvgicd", G_LOG_LEVEL_MESSAGE,
                    "MESSAGE", "vgicd went away before it was told that this VM's %s "
                    "finished (%s); every %s, so the %s stands, but vgicd has no record of it",
                    write ? "restore" : "save", local->message,
                    write ? "write was applied" : "register was read",
                    write ? "restore" : "save");
  return step_done ();
}

/* Run one read or write step: copy, check, execute, copy back. */
static GVariant *
run_step (VgicdClient *c, GVariant *step, gboolean write, GError **error)
{
  struct kvm_vgic_batch_entry *work;
  g_autoptr (GError) local = NULL;
  g_autoptr (GVariant) ranges = NULL;
  guint32 count = 0, guard = 0, ioctls = 0;
  const char *via = NULL;
  VgicExecVia exec_via;
  VgicExecReport r = { 0 };
  VgicExecDir dir = write ? VGIC_EXEC_WRITE : VGIC_EXEC_READ;
  GVariantBuilder b;
  gboolean last = FALSE;
  gint64 failed = -1;
  guint64 ns = 0;

  g_variant_lookup (step, VGICD_STEP_COUNT, "u", &count);
  g_variant_lookup (step, VGICD_STEP_VIA, "&s", &via);
  if (write)
    g_variant_lookup (step, VGICD_STEP_GUARD, "u", &guard);
  if (count > c->window_entries || guard > c->window_entries - count)
    {
      g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_PROTOCOL,
                   "vgicd asked for %" G_GUINT64_FORMAT " entries but the window holds %u; "
                   "nothing was run", (guint64) count + guard, c->window_entries);
      return NULL;
    }
  if (guard)
    {
      ranges = g_variant_lookup_value (step, VGICD_STEP_GUARD_RANGES, G_VARIANT_TYPE ("a(ttt)"));
      if (!ranges || g_variant_n_children (ranges) != guard)
        {
          g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_PROTOCOL,
                       "vgicd sent %u guards without as many ranges; nothing was run",
                       guard);
          return NULL;
        }
    }
  /* Private copy first: vgicd can no longer change what is checked.  The
   * buffer is the session's, the window's size, touched at attach: a
   * fresh one per step would be page faults inside the downtime. */
  work = c->work;
  memcpy (work, c->window, (gsize) (guard + count) * sizeof (*work));
  if (!vgic_exec_check (work, guard, VGIC_EXEC_READ, &local) ||
      !vgic_exec_check (work + guard, count, dir, &local))
    {
      g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_PROTOCOL,
                   "refusing vgicd's list, nothing was run: %s", local->message);
      return NULL;
    }
  exec_via = g_strcmp0 (via, VGICD_VIA_BATCH) == 0 && c->kernel_batch ? VGIC_EXEC_BATCH
                                                             : VGIC_EXEC_SINGLE;
  g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
  if (guard)
    {
      /* The guards, then the writes only if every one holds. */
      vgic_exec_run (c->vgic_fd, work, guard, VGIC_EXEC_READ, exec_via, &r);
      ioctls += r.ioctls;
      ns += r.ns;
      c->stats.entries += r.done;
      if (r.error)
        {
          r.done = 0;
          add_report (&b, &r, 0, exec_via);
        }
      else if ((failed = first_failed_guard (work, ranges)) >= 0)
        {
          memset (&r, 0, sizeof (r));
          add_report (&b, &r, 0, exec_via);
          g_variant_builder_add (&b, "{sv}", VGICD_REPORT_GUARD_FAILED, g_variant_new_uint32 (failed));
        }
    }
  if (!r.error && failed < 0)
    {
      vgic_exec_run (c->vgic_fd, work + guard, count, dir, exec_via, &r);
      ioctls += r.ioctls;
      ns += r.ns;
      c->stats.entries += r.done;
      add_report (&b, &r, guard, exec_via);
    }
  /* A SaveFields keeps what the kernel answered, for QEMU's fields: the
   * reads that completed, later ones winning (a wrong guess is read again
   * in a second round). */
  if (c->collect && !write)
    {
      g_array_append_vals (c->collect, work, r.done);
      c->collect_steps++;
    }
  /* Back go what vgicd reads: the values read, and the guards.  Writes
   * leave nothing to read back (their errors are in the report). */
  memcpy (c->window, work, (gsize) (write ? guard : guard + count) * sizeof (*work));

  c->stats.ioctls += ioctls;
  c->stats.kernel_ns += ns;
  c->stats.batched = exec_via == VGIC_EXEC_BATCH;
  g_variant_builder_add (&b, "{sv}", VGICD_REPORT_IOCTLS, g_variant_new_uint32 (ioctls));

  /* The last writes of a load, all applied: vgicd's answer can only be
   * done, and a load's done carries nothing.  Likewise the reads of a
   * save into QEMU's fields whose "last-if" holds: the guess vgicd read
   * round 2 by was right, and that done carries nothing QEMU needs (the
   * values are the ones collected here).  So the report goes out and the
   * operation ends here, a round trip early; the answer is taken before
   * the next call (vgicd_client_channel_settle()). */
  if (r.error || failed >= 0 || r.done != count)
    last = FALSE;		/* not all applied, or not all read */
  else if (write)
    {
      if (!g_variant_lookup (step, VGICD_STEP_LAST, "b", &last))
        last = FALSE;
    }
  else if (c->collect)
    {
      g_autoptr (GVariant) checks = g_variant_lookup_value (step, VGICD_STEP_LAST_IF,
                                                            G_VARIANT_TYPE ("a(tttt)"));

      last = checks && last_if_holds (work, count, checks);
    }
  if (last && c->channel)
    {
      if (!vgicd_client_channel_call_deferred (c->channel, VGICD_CALL_NEXT,
                                               g_variant_new ("(@a{sv})",
                                                              g_variant_builder_end (&b)),
                                               &c->wait_budget_us, &local))
        return last_report_lost (c, write, g_steal_pointer (&local), error);
      return step_done ();
    }
  {
    GVariant *next = vgicd_client_call (c, VGICD_CALL_NEXT,
                                        g_variant_new ("(@a{sv})", g_variant_builder_end (&b)),
                                        &local);

    if (!next && last)
      return last_report_lost (c, write, g_steal_pointer (&local), error);
    if (!next)
      g_propagate_error (error, g_steal_pointer (&local));
    return next;
  }
}

/* The record of a finished save: in the step, or at the start of the
 * window (copied out at once: vgicd may write there again). */
static gboolean
take_record (VgicdClient *c, GVariant *step, GBytes **record, GError **error)
{
  g_autoptr (GVariant) bytes = g_variant_lookup_value (step, VGICD_STEP_RECORD,
                                                       G_VARIANT_TYPE_BYTESTRING);
  guint32 size;

  if (bytes)
    {
      *record = g_variant_get_data_as_bytes (bytes);
      return TRUE;
    }
  if (g_variant_lookup (step, VGICD_STEP_RECORD_SIZE, "u", &size))
    {
      if (size == 0 || size > c->window_size)
        {
          g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_PROTOCOL,
                       "vgicd said its record is %u bytes of a %" G_GSIZE_FORMAT
                       "-byte window", size, c->window_size);
          return FALSE;
        }
      *record = g_bytes_new (c->window, size);
      return TRUE;
    }
  g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_PROTOCOL,
               "vgicd finished a save without a record");
  return FALSE;
}

/* Follow steps until vgicd says done, declined or fail. */
gboolean
vgicd_client_run (VgicdClient *c, GVariant *first, VgicdRunKind kind, GBytes **record,
                  GError **error)
{
  g_autoptr (GVariant) step = first;

  while (step)
    {
      const char *action = NULL;
      GVariant *next;

      g_variant_lookup (step, VGICD_STEP_ACTION, "&s", &action);
      if (g_strcmp0 (action, VGICD_ACTION_READ) == 0 || g_strcmp0 (action, VGICD_ACTION_WRITE) == 0)
        {
          next = run_step (c, step, g_strcmp0 (action, VGICD_ACTION_WRITE) == 0, error);
          g_variant_unref (step);
          step = next;
          continue;
        }
      if (g_strcmp0 (action, VGICD_ACTION_DONE) == 0)
        return kind != VGICD_RUN_SAVE || take_record (c, step, record, error);
      if (g_strcmp0 (action, VGICD_ACTION_DECLINED) == 0)
        {
          g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_DECLINED,
                       "vgicd declined (mode off on this host)");
          return FALSE;
        }
      if (g_strcmp0 (action, VGICD_ACTION_FAIL) == 0)
        {
          const char *message = "no reason given", *reason = "";
          g_variant_lookup (step, VGICD_STEP_MESSAGE, "&s", &message);
          g_variant_lookup (step, VGICD_STEP_REASON, "&s", &reason);
          /* Refused before any access, or failed in the kernel. */
          g_set_error (error, VGICD_CLIENT_ERROR,
                       strcmp (reason, VGICD_REASON_REFUSED) == 0 ? VGICD_CLIENT_ERROR_REFUSED
                                                       : VGICD_CLIENT_ERROR_DEVICE,
                       "vgicd: %s", message);
          return FALSE;
        }
      g_set_error (error, VGICD_CLIENT_ERROR, VGICD_CLIENT_ERROR_PROTOCOL,
                   "vgicd sent an unknown step \"%s\"", action ? action : "");
      return FALSE;
    }
  return FALSE;
}

