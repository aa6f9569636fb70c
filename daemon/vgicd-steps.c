/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-steps.c - the session's state machine: what Save, SaveFields,
 * Load, LoadWindow, LoadList and Next do, whichever transport they came by
 * (D-Bus or the step channel); and the mode an operation runs in.
 *
 * Theory of operation
 *
 * vgicd cannot touch the vGIC: the kernel refuses device ioctls from any
 * process but the VM's owner.  So a session plans, and the peer (libvgicd,
 * inside QEMU) executes.  Each step lays an access list into the shared
 * window and answers "read" or "write"; the peer copies the list out of the
 * window, checks it, runs it, copies the results back and calls Next with a
 * report.  vgicd then copies the results out of the window in turn, and
 * checks that the peer changed nothing but values and errors.
 *
 *   save:  [round 1 reads (+ the routes QEMU misses, for a record)
 *           + guessed round 2] → done(record)
 *          ([round 2 reads] in between when the guess was wrong)
 *   load:  validate the whole record against the VM
 *          → [guarded writes: TYPER and ICC_CTLR_EL1 reads, checked by the
 *             peer, then writes]
 *          → done
 *          (a peer without guards: [the same reads] → [writes] → done)
 *
 * A stream that carries QEMU's own GIC fields, not a record, needs no
 * record at either end: SaveFields runs a save's steps and ends without
 * encoding one (the peer keeps the values it read, for QEMU's fields), and
 * LoadList takes QEMU's own restore, the writes kvm_arm_gicv3_put makes,
 * checks that it is exactly the restore vgicd plans for the values it
 * writes (vgic_validate_restore_list()), and runs that very list as a
 * load's steps.  So the source and the destination each gain on their own
 * side, and each works with a host whose QEMU or vgicd does not take part.
 *
 * Every call to vgicd costs a round trip through two processes, which is
 * most of what vgicd adds to the kernel's time.  So a save reads round 2
 * (the LPI bases and the APRs, whose presence depends on round 1's values)
 * in the same list as round 1, assuming the shape the last save found (it
 * is a property of the host and of the VM's ITS); the values of round 1
 * then confirm the guess, or a second round reads what it missed, logged
 * and counted.  And a restore hands the peer the checks QEMU makes on the
 * destination (GICD_TYPER, GICR_TYPER), and one of its own (each vCPU's
 * ICC_CTLR_EL1, which the kernel refuses to take from a GIC with more
 * priority bits), as guards: the peer reads them, compares them with the
 * ranges vgicd gave, and writes nothing unless all hold.
 *
 * A load validates the record (shape, register set, checksum, version)
 * before it lays out a single write, so a record that does not fit changes
 * nothing.  A failure part-way through the writes is reported with the
 * register, how many writes were applied, and that the destination is now
 * partly written: the migration must fail.
 */
#include <errno.h>
#include <string.h>

#include "vgic-regs.h"
#include "vgic-validate.h"
#include "vgicd-history.h"
#include "vgicd-metrics.h"
#include "vgicd-relay.h"
#include "vgicd-session-private.h"
#include "vgicd/protocol.h"

/* ------------------------------------------------------------------ */
/* Answers                                                            */
/* ------------------------------------------------------------------ */

/*
 * Stop the clock of vgicd's own time on the operation, s->op_busy (µs):
 * the handler running now (handler_begin()) counts up to here, what it
 * does after (the log, the history) does not.  The outcome reads it after
 * this (op_outcome()), and so does a successful operation's message first:
 * the "ms in vgicd" of the log line, VGICD_BUSY_NS and the history's
 * vgicd-ns are one figure, the last handler (a save's record encoding, a
 * load's writes judged) included.  Called again, it changes nothing.
 */
static gint64
busy_stop (VgicdSession *s)
{
  if (s->handler_start)
    {
      s->op_busy += g_get_monotonic_time () - s->handler_start;
      s->handler_start = 0;
    }
  return s->op_busy;
}

static GVariant *
step_simple (const char *action, const char *key, GVariant *value)
{
  GVariantBuilder b;

  g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&b, "{sv}", VGICD_STEP_ACTION, g_variant_new_string (action));
  if (key)
    g_variant_builder_add (&b, "{sv}", key, value);
  return g_variant_builder_end (&b);
}

void
vgicd_steps_reset (VgicdSession *s)
{
  s->op = OP_NONE;
  g_clear_pointer (&s->guess, vgic_list_unref);
  g_clear_pointer (&s->step, vgic_list_unref);
  g_clear_pointer (&s->reads, vgic_list_unref);
  g_clear_pointer (&s->record, vgic_record_free);
  g_clear_pointer (&s->list_state, vgic_values_free);
  g_clear_pointer (&s->list_plan, vgic_list_unref);
  s->state = NULL;
}

VgicdMode
vgicd_session_mode (VgicdSession *s)
{
  return vgicd_mode_stricter (s->daemon->mode, s->vm_mode);
}

static const char *
op_name (Op op)
{
  return op == OP_SAVE_FIRST || op == OP_SAVE_SECOND ? "save" : "load";
}

const char *
vgicd_steps_operation (VgicdSession *s)
{
  return s->op == OP_NONE ? NULL : op_name (s->op);
}

static void op_end (VgicdSession *s);
static void op_outcome (VgicdSession *s, GLogLevelFlags level, const char *operation,
                        const char *outcome, guint registers, guint64 bytes,
                        const char *message);

void
vgicd_steps_abandon (VgicdSession *s)
{
  if (s->op == OP_NONE)
    return;
  s->daemon->totals.failures++;
  op_outcome (s, G_LOG_LEVEL_WARNING, op_name (s->op), VGICD_OUTCOME_FAILED, 0, 0,
              "the peer went away in the middle of an operation");
  op_end (s);
  /* No answer goes out: nothing to wait for. */
  vgicd_steps_flush (s);
}

void
vgicd_steps_flush (VgicdSession *s)
{
  g_autofree char *line = g_steal_pointer (&s->logged_line);

  g_clear_handle_id (&s->after_source, g_source_remove);
  if (line)
    vgicd_session_log_outcome (s, s->logged_level, &s->logged_op, line);
}

static gboolean
on_answered (gpointer data)
{
  VgicdSession *s = data;

  s->after_source = 0;
  vgicd_steps_flush (s);
  return G_SOURCE_REMOVE;
}

/* Have vgicd_steps_flush() run once the answer is out (op_outcome()). */
static void
after_answer (VgicdSession *s)
{
  if (!s->after_source)
    s->after_source = g_idle_add_full (G_PRIORITY_HIGH, on_answered, s, NULL);
}

/*
 * The outcome of the operation in progress, everywhere it goes: the
 * journal (one record, with MESSAGE_ID and VGICD_OUTCOME), the VM's
 * history and the histograms (the metrics textfile follows op_end()'s
 * change notice).  @registers: what it
 * read or wrote; @message: the facts for a person.  A successful batched
 * operation's line also says what it would have cost one register per
 * ioctl, measured on this host or estimated (vgicd-history.c).
 *
 * The journal record is written once the answer is out, by a callback of
 * high priority: it runs before vgicd reads anything else (the peer's next
 * call, an operator's GetHistory), after the step channel has sent the
 * answer; a D-Bus answer leaves on GDBus's thread meanwhile.  Writing it
 * is I/O, and was the largest part of a save's last handler: 26 to 72 µs
 * of 95 to 190 (160 vCPUs, the benchmark's guest, its stderr a file),
 * time the peer spent waiting inside the downtime for a record it does
 * not read.  The history, the counters and op_end()'s change notice,
 * which a caller may read right after the answer, are kept at once; as
 * the change notice has the operator API's next GetStats wait for a
 * publication that the main thread makes at G_PRIORITY_LOW, after this
 * callback, that GetStats also finds the record written.
 */
static void
op_outcome (VgicdSession *s, GLogLevelFlags level, const char *operation,
            const char *outcome, guint registers, guint64 bytes, const char *message)
{
  const gboolean ok = g_str_equal (outcome, VGICD_OUTCOME_OK);
  VgicdOp op = {
    .when_usec = g_get_real_time (),
    .direction = operation,
    .path = s->step_via ? s->step_via : "-",
    .stream = s->op_fields ? VGICD_STREAM_FIELDS : VGICD_STREAM_RECORD,
    .outcome = outcome,
    .duration_ns = s->op_start ? (guint64) (g_get_monotonic_time () - s->op_start) * 1000 : 0,
    .kernel_ns = s->op_ns,
    .busy_ns = (guint64) MAX (busy_stop (s), 0) * 1000,
    .ioctls = s->op_ioctls,
    .calls = s->op_calls,
    .registers = registers,
    .bytes = bytes,
    .vcpus = s->shape ? s->shape->nr_vcpus : 0,
  };
  g_autofree char *line = NULL;

  vgicd_metrics_count (&s->daemon->totals, operation, outcome);
  if (s->daemon->history)
    vgicd_history_estimate (s->daemon->history, &op);
  if (ok && op.single_estimated && op.single_ns)
    line = g_strdup_printf ("%s; one by one it would have taken about %.1f ms (estimated "
                            "from %s)", message, op.single_ns / 1e6,
                            g_strcmp0 (op.single_source, "calibration") == 0
                            ? "vgicd's start-up calibration"
                            : "this host's last one-by-one operation");
  /* One record due at a time, in order. */
  vgicd_steps_flush (s);
  s->logged_op = op;
  s->logged_level = level;
  s->logged_line = line ? g_steal_pointer (&line) : g_strdup (message);
  after_answer (s);
  if (s->daemon->history)
    vgicd_history_add_of (s->daemon->history, s->uuid, s->name, s->pid, &op,
                          ok ? NULL : message);
}

/*
 * The operation is over: clear its figures (the outcome has them, and
 * ListSessions its copy from op_succeeded()), so that the session's next
 * journal records, its detach or another attach, do not carry this
 * operation's ioctls and times as their own; tell the operator API.
 */
static void
op_end (VgicdSession *s)
{
  vgicd_steps_reset (s);
  s->op_start = 0;
  s->op_ioctls = 0;
  s->op_calls = 0;
  s->op_ns = 0;
  s->op_busy = 0;
  s->handler_start = 0;
  s->op_fields = FALSE;
  /* Before the answer, unlike the journal record (op_outcome()): it marks
   * the operator API's figures stale, so that a GetStats that follows the
   * answer waits for this operation's (read-your-writes). */
  vgicd_daemon_changed (s->daemon);
}

/* Give up on the operation in progress: count it, log it, say so. */
static GVariant *
step_fail_why (VgicdSession *s, const char *operation, const char *reason,
               const char *message)
{
  GVariantBuilder b;

  s->daemon->totals.failures++;
  op_outcome (s, G_LOG_LEVEL_WARNING, operation,
              g_str_equal (reason, VGICD_REASON_REFUSED) ? VGICD_OUTCOME_REFUSED
                                                         : VGICD_OUTCOME_FAILED,
              0, 0, message);
  op_end (s);
  g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&b, "{sv}", VGICD_STEP_ACTION, g_variant_new_string (VGICD_ACTION_FAIL));
  g_variant_builder_add (&b, "{sv}", VGICD_STEP_REASON, g_variant_new_string (reason));
  g_variant_builder_add (&b, "{sv}", VGICD_STEP_MESSAGE, g_variant_new_string (message));
  return g_variant_builder_end (&b);
}

static GVariant *
step_fail (VgicdSession *s, const char *operation, const char *message)
{
  return step_fail_why (s, operation, VGICD_REASON_INTERNAL, message);
}

/* A load refused before the first write: the record, or the destination,
 * does not fit the VM.  The one wording every such refusal has. */
static GVariant *
load_refused (VgicdSession *s, const GError *error)
{
  /* vgic_validate_restore_list() says "nothing written" itself. */
  g_autofree char *msg = s->op_fields ? g_strdup_printf ("%s", error->message)
                         : g_strdup_printf ("record refused, nothing written: %s",
                                            error->message);

  return step_fail_why (s, "load", VGICD_REASON_REFUSED, msg);
}

/* Which path a step takes: the mode, and what the executor found. */
static const char *
choose_via (VgicdSession *s)
{
  if (vgicd_session_mode (s) == VGICD_MODE_SINGLE)
    return VGICD_VIA_SINGLE;
  if (!s->kernel_batch)
    {
      if (!s->op_fallback)
        {
          /* No silent fallback: logged and counted once per operation. */
          s->op_fallback = TRUE;
          s->daemon->totals.fallbacks++;
          vgicd_session_log (s, G_LOG_LEVEL_MESSAGE, "VGICD_FALLBACK", VGICD_VIA_SINGLE,
                             "VM %s: %s; running one register per ioctl", s->name,
                             *s->kernel_batch_probe ? s->kernel_batch_probe
                                                    : "the kernel has no vGIC batch group");
        }
      return VGICD_VIA_SINGLE;
    }
  return VGICD_VIA_BATCH;
}

/* Lay @plan (guards first, if it has any) into the window and answer the
 * step that runs it; a read step with @n_checks @checks on its values says
 * it is the operation's last when they hold (VGICD_STEP_LAST_IF). */
static GVariant *
step_run_checked (VgicdSession *s, VgicList *plan, gboolean write, const VgicSaveCheck *checks,
                  guint n_checks)
{
  GVariantBuilder b;

  /* The window holds the largest round of this shape by construction. */
  g_assert (plan->len <= s->window->capacity);
  memcpy (s->window->entries, plan->entries, plan->len * sizeof (VgicEntry));
  g_clear_pointer (&s->step, vgic_list_unref);
  s->step = vgic_list_ref (plan);
  s->step_write = write;
  s->step_via = choose_via (s);

  g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&b, "{sv}", VGICD_STEP_ACTION,
                         g_variant_new_string (write ? VGICD_ACTION_WRITE : VGICD_ACTION_READ));
  g_variant_builder_add (&b, "{sv}", VGICD_STEP_COUNT,
                         g_variant_new_uint32 (plan->len - plan->n_guards));
  g_variant_builder_add (&b, "{sv}", VGICD_STEP_VIA, g_variant_new_string (s->step_via));
  /* A restore's writes are its last step: when they all succeed, the
   * answer to Next is done, and the peer need not wait for it. */
  if (write && s->op == OP_LOAD_WRITE)
    g_variant_builder_add (&b, "{sv}", VGICD_STEP_LAST, g_variant_new_boolean (TRUE));
  if (plan->n_guards)
    {
      /* (ttt) is fixed-size, and a VgicGuard is its serialised form (three
       * native-endian u64, nothing between them): one copy, not a
       * builder call per guard, which at 160 vCPUs was a third of what
       * vgicd spent on a restore. */
      G_STATIC_ASSERT (sizeof (VgicGuard) == 3 * sizeof (guint64));
      g_variant_builder_add (&b, "{sv}", VGICD_STEP_GUARD, g_variant_new_uint32 (plan->n_guards));
      g_variant_builder_add (&b, "{sv}", VGICD_STEP_GUARD_RANGES,
                             g_variant_new_fixed_array (G_VARIANT_TYPE ("(ttt)"), plan->guards,
                                                        plan->n_guards, sizeof (VgicGuard)));
    }
  if (n_checks)
    {
      G_STATIC_ASSERT (sizeof (VgicSaveCheck) == 4 * sizeof (guint64));
      g_variant_builder_add (&b, "{sv}", VGICD_STEP_LAST_IF,
                             g_variant_new_fixed_array (G_VARIANT_TYPE ("(tttt)"), checks,
                                                        n_checks, sizeof (VgicSaveCheck)));
    }
  return g_variant_builder_end (&b);
}

static GVariant *
step_run (VgicdSession *s, VgicList *plan, gboolean write)
{
  return step_run_checked (s, plan, write, NULL, 0);
}

/* Take the results of a read step (or of a write step's guards) out of the
 * window, checking that the peer changed nothing but values and errors.
 * Write steps leave nothing to take: see vgicd_steps_next(). */
static VgicList *
step_collect (VgicdSession *s, guint n, GError **error)
{
  g_autoptr (VgicList) out = NULL;

  g_assert (n <= s->step->len);
  /* Copied first: the peer can still write to the window. */
  out = vgic_list_new_from (s->window->entries, n);
  if (!vgic_validate_results (s->step, out->entries, n, error))
    return NULL;
  return g_steal_pointer (&out);
}

/* ------------------------------------------------------------------ */
/* Save                                                               */
/* ------------------------------------------------------------------ */

/* The figures of the operation that just succeeded, for ListSessions
 * and the host totals. */
static void
op_succeeded (VgicdSession *s, OpStats *stats, guint64 *total)
{
  stats->ns = s->op_ns;
  stats->ioctls = s->op_ioctls;
  stats->via = s->step_via;
  stats->stream = s->op_fields ? VGICD_STREAM_FIELDS : VGICD_STREAM_RECORD;
  stats->count++;
  (*total)++;
}

/* A SaveFields is done: the values stay with the peer, for QEMU's fields. */
static GVariant *
save_fields_done (VgicdSession *s)
{
  g_autofree char *msg = NULL;

  op_succeeded (s, &s->save, &s->daemon->totals.saves);
  msg = g_strdup_printf ("saved %u registers in %u ioctls (%s), %.3f ms in the kernel, "
                         "%.3f ms in vgicd, into QEMU's own fields (no record)",
                         s->reads->len, s->op_ioctls, s->step_via, s->op_ns / 1e6,
                         busy_stop (s) / 1e3);
  op_outcome (s, G_LOG_LEVEL_MESSAGE, "save", VGICD_OUTCOME_OK, s->reads->len, 0, msg);
  {
    guint32 n = s->reads->len;

    op_end (s);
    return step_simple (VGICD_ACTION_DONE, VGICD_STEP_FIELDS, g_variant_new_uint32 (n));
  }
}

static GVariant *
save_done (VgicdSession *s)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) record = NULL;
  g_autofree char *msg = NULL;
  GVariant *value;
  const char *key;
  gsize size;

  if (s->op_fields)
    return save_fields_done (s);
  /* s->reads are round 1 and round 2 exactly as planned: each step's
   * results were checked against what was laid out (step_collect()). */
  record = vgic_record_encode_run (s->shape, s->reads->entries, s->reads->len, &error);
  if (!record)
    return step_fail (s, "save", error->message);
  size = g_bytes_get_size (record);
  op_succeeded (s, &s->save, &s->daemon->totals.saves);
  s->daemon->totals.record_saves++;
  s->daemon->totals.bytes_saved += size;
  /* The record goes back through the window when the peer takes it from
   * there: it is the largest thing a save moves, and a D-Bus message would
   * copy it several times on each side. */
  if (s->peer_record_window && size <= s->window->size)
    {
      memcpy (s->window->entries, g_bytes_get_data (record, NULL), size);
      key = VGICD_STEP_RECORD_SIZE;
      value = g_variant_new_uint32 ((guint32) size);
    }
  else
    {
      key = VGICD_STEP_RECORD;
      value = g_variant_new_from_bytes (G_VARIANT_TYPE_BYTESTRING, record, TRUE);
    }
  msg = g_strdup_printf ("saved %u registers in %u ioctls (%s), %.3f ms in the kernel, "
                         "%.3f ms in vgicd, record %" G_GSIZE_FORMAT " bytes",
                         s->reads->len, s->op_ioctls, s->step_via, s->op_ns / 1e6,
                         busy_stop (s) / 1e3, size);
  op_outcome (s, G_LOG_LEVEL_MESSAGE, "save", VGICD_OUTCOME_OK, s->reads->len, size, msg);
  op_end (s);
  return step_simple (VGICD_ACTION_DONE, key, value);
}

/* Remember the shape a save or a restore found.  This VM's next save
 * guesses it (s->last_second); the first save of a VM new to the host
 * guesses what most attached QEMUs have.  The values are the peer's to
 * report, so each process is one vote (that of its session attached
 * first: more sessions of one process add nothing), and a shape becomes
 * the host's guess only when at least two processes vote for it and it
 * has more votes than the guess there is: one peer, however many sessions
 * it holds, never moves the host's guess, and many peers that claim an odd
 * shape move it only when they are most of the QEMUs attached (and then
 * cost a newcomer's first save one more round, counted).  A tie keeps
 * the guess as it was. */
static void
learn_shape (VgicdSession *s, gboolean plpis, guint apr)
{
  VgicdDaemon *d = s->daemon;
  guint votes[2][5] = { { 0 } };
  gboolean best_plpis = d->guess_plpis;
  guint best_apr = CLAMP (d->guess_apr, 1, 4);
  g_autoptr (GHashTable) voted = g_hash_table_new (NULL, NULL);

  s->shape_known = TRUE;
  s->known_plpis = plpis;
  s->known_apr = CLAMP (apr, 1, 4);
  for (guint i = 0; i < d->sessions->len; i++)
    {
      const VgicdSession *t = g_ptr_array_index (d->sessions, i);

      if (t->shape_known && g_hash_table_add (voted, GINT_TO_POINTER (t->pid)))
        votes[t->known_plpis ? 1 : 0][t->known_apr]++;
    }
  /* s itself, if it is not (or no longer) in the list */
  if (!g_ptr_array_find (d->sessions, s, NULL) &&
      g_hash_table_add (voted, GINT_TO_POINTER (s->pid)))
    votes[plpis ? 1 : 0][s->known_apr]++;
  for (guint p = 0; p < 2; p++)
    for (guint a = 1; a <= 4; a++)
      if (votes[p][a] >= 2 && votes[p][a] > votes[best_plpis ? 1 : 0][best_apr])
        best_plpis = p, best_apr = a;
  d->guess_plpis = best_plpis;
  d->guess_apr = best_apr;
}

/* Round 1 (and maybe the guessed round 2) was read: finish the save, or
 * read the round 2 the guess missed. */
static GVariant *
save_first_read (VgicdSession *s, VgicList *results, gboolean guess_ran)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicValues) first = vgic_plan_save_inputs (s->shape, results->entries,
                                                        s->round1_len, &error);
  g_autoptr (VgicList) second = NULL;
  const char *from;
  gboolean plpis;
  guint apr;

  if (first)
    second = vgic_plan_save_second (s->shape, first, &error);
  if (!second || !vgic_plan_save_shape (s->shape, first, &plpis, &apr, &error))
    return step_fail (s, "save", error->message);
  learn_shape (s, plpis, apr);
  from = guess_ran && s->guess == s->last_second ? "its last save's" : "the guess";
  g_clear_pointer (&s->last_second, vgic_list_unref);
  s->last_second = vgic_list_ref (second);

  if (guess_ran && vgic_list_same_accesses (second, s->guess))
    {
      s->reads = vgic_list_ref (results);
      return save_done (s);
    }

  /* The guess was wrong (or failed in the kernel): read round 2 as it
   * should be.  Logged and counted, as every slower path is. */
  s->daemon->totals.second_rounds++;
  vgicd_session_log (s, G_LOG_LEVEL_MESSAGE, "VGICD_OPERATION", "save",
                     "VM %s: this VM's LPI and APR registers (LPIs %s, %u APRs "
                     "per group on vCPU 0) differ from %s; reading them in a second round",
                     s->name, plpis ? "yes" : "no", apr, from);
  vgic_list_truncate (results, s->round1_len);
  s->reads = vgic_list_ref (results);
  s->op = OP_SAVE_SECOND;
  return step_run (s, second, FALSE);
}

static void
begin_op (VgicdSession *s)
{
  vgicd_steps_reset (s);
  s->op_start = g_get_monotonic_time ();
  s->op_ioctls = 0;
  s->op_calls = 1;	/* the call that began it */
  s->op_ns = 0;
  s->op_busy = 0;
  s->op_fallback = FALSE;
  s->op_fields = FALSE;
  s->step_via = NULL;
}

/* Mode off: QEMU takes its own path for @operation (a save, or a load of
 * its own fields; a record can only be loaded here, so it never is). */
static GVariant *
declined (VgicdSession *s, const char *operation)
{
  g_autofree char *msg = g_strdup_printf ("%s declined: mode is off (%s)", operation,
                                          s->daemon->mode == VGICD_MODE_OFF ? "host"
                                          : s->vm_mode_source);

  s->daemon->totals.declined++;
  op_outcome (s, G_LOG_LEVEL_MESSAGE, operation, VGICD_OUTCOME_DECLINED, 0, 0, msg);
  op_end (s);
  return step_simple (VGICD_ACTION_DECLINED, NULL, NULL);
}

/* The checks of a save's first step share its answer's packet
 * (VGICD_CHANNEL_MAX) with a few small keys: 48 KiB is 1,535 vCPUs,
 * three times KVM's most.  A larger VM's save takes vgicd's answer. */
#define LAST_IF_BYTES_MAX (48 * 1024)

static GVariant *
start_save (VgicdSession *s, gboolean fields)
{
  g_autoptr (VgicList) plan = NULL;

  begin_op (s);
  s->op_fields = fields;
  if (vgicd_session_mode (s) == VGICD_MODE_OFF)
    return declined (s, "save");
  /* Round 1, then round 2 as this VM's last save (or load) found it, or
   * as most VMs on the host have it (learn_shape()). */
  plan = vgic_list_new (s->window->capacity);
  vgic_list_append (plan, s->first_plan->entries, s->first_plan->len);
  /* A record carries every SPI's route; QEMU's fields have room for the
   * routes QEMU's own accesses reach only (the quirk in vgic-plan.c). */
  if (!fields)
    vgic_list_append (plan, s->routes_plan->entries, s->routes_plan->len);
  s->round1_len = plan->len;
  if (s->last_second)
    s->guess = vgic_list_ref (s->last_second);
  else
    s->guess = vgic_plan_save_guess (s->shape, s->daemon->guess_plpis,
                                     CLAMP (s->daemon->guess_apr, 1, 4));
  vgic_list_append (plan, s->guess->entries, s->guess->len);
  s->op = OP_SAVE_FIRST;
  /* A save into QEMU's fields ends when the guess holds: vgicd's answer to
   * its Next is then done, with nothing in it the peer needs (the values
   * are the ones it read).  So the step says what round 1 must read for
   * the guess to hold, and a peer on the channel that sees that ends the
   * save there, a round trip early, taking the answer before its next
   * call, as after a restore's last writes.  vgicd still judges the
   * report and logs the save; a record's save needs vgicd's answer (the
   * record), so it has no such step. */
  if (fields && s->peer_channel &&
      (s->shape->nr_vcpus + 1) * sizeof (VgicSaveCheck) <= LAST_IF_BYTES_MAX)
    {
      guint n = 0;
      g_autofree VgicSaveCheck *checks = vgic_plan_save_checks (s->shape, s->first_plan,
                                                                s->guess, &n);

      if (checks)
        return step_run_checked (s, plan, FALSE, checks, n);
    }
  return step_run (s, plan, FALSE);
}

/* ------------------------------------------------------------------ */
/* Load                                                               */
/* ------------------------------------------------------------------ */

static GVariant *
load_done (VgicdSession *s)
{
  g_autofree char *msg = NULL;

  op_succeeded (s, &s->load, &s->daemon->totals.loads);
  s->daemon->totals.record_loads += !s->op_fields;
  s->daemon->totals.bytes_loaded += s->record_len;
  msg = g_strdup_printf ("restored %u writes in %u ioctls (%s), %.3f ms in the kernel, "
                         "%.3f ms in vgicd%s", s->step->len - s->step->n_guards, s->op_ioctls,
                         s->step_via, s->op_ns / 1e6, busy_stop (s) / 1e3,
                         s->op_fields ? ", from QEMU's own fields (no record)" : "");
  op_outcome (s, G_LOG_LEVEL_MESSAGE, "load", VGICD_OUTCOME_OK,
              s->step->len - s->step->n_guards, s->record_len, msg);
  op_end (s);
  return step_simple (VGICD_ACTION_DONE, NULL, NULL);
}

#define GUARDED_VCPUS_MAX 2048

/* The state written carries the routes QEMU misses: a version 2 record.
 * (A version 1 record, or QEMU's own restore, leaves them as the
 * destination has them.) */
static gboolean
state_has_routes (VgicdSession *s)
{
  return s->record && s->record->routes;
}

/* The writes that restore s->state.  QEMU's own restore was checked, write
 * for write, against the restore order: it is the plan of its values, not
 * made again. */
static VgicList *
restore_writes (VgicdSession *s, GError **error)
{
  if (s->list_plan)
    return vgic_list_ref (s->list_plan);
  return vgic_plan_restore_write (s->shape, s->state, state_has_routes (s), error);
}

/* The state to write is known and judged (s->state): lay out the restore. */
static GVariant *
start_restore (VgicdSession *s)
{
  g_autoptr (GError) error = NULL;

  /* A guard costs its step's answer 24 bytes, which must fit one channel
   * packet: a VM of more vCPUs than that allows (far beyond KVM's 512)
   * takes the restore in two rounds, its reads judged by vgicd. */
  if (s->peer_guards && s->shape->nr_vcpus <= GUARDED_VCPUS_MAX)
    {
      g_autoptr (VgicList) guards = vgic_validate_guards (s->shape, s->state);
      g_autoptr (VgicList) write = restore_writes (s, &error);
      gboolean plpis = FALSE;
      guint apr = 1;

      if (!write)
        return load_refused (s, error);
      /* The source's shape is the best guess for this VM's next save, and
       * for this host's. */
      if (vgic_plan_save_shape (s->shape, s->state, &plpis, &apr, NULL))
        learn_shape (s, plpis, apr);
      g_clear_pointer (&s->last_second, vgic_list_unref);
      s->last_second = vgic_plan_save_second (s->shape, s->state, NULL);
      /* One list: the guard reads, then the writes. */
      vgic_list_append (guards, write->entries, write->len);
      s->op = OP_LOAD_WRITE;
      return step_run (s, guards, TRUE);
    }
  s->op = OP_LOAD_CHECK;
  {
    /* The guards' reads, without the guards: vgicd judges the values
     * itself (destination_fits()). */
    g_autoptr (VgicList) guards = vgic_validate_guards (s->shape, s->state);
    g_autoptr (VgicList) check = vgic_list_new_from (guards->entries, guards->len);

    return step_run (s, check, FALSE);
  }
}

/* A record arrived (in a message or in the window): check all of it, then
 * lay out the restore. */
static GVariant *
start_load (VgicdSession *s, const guint8 *bytes, gsize len)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicRecord) record = vgic_record_parse (bytes, len, &error);

  /* Everything is checked before the first access is planned. */
  if (!record || !vgic_validate_record (record, s->shape, s->first_plan, &error))
    return load_refused (s, error);
  s->record = g_steal_pointer (&record);
  s->record_len = len;
  s->state = s->record->values;
  return start_restore (s);
}

/* QEMU's own restore arrived in the window (@count writes): check that it
 * is exactly vgicd's, then lay it out as vgicd's. */
static GVariant *
start_load_list (VgicdSession *s, guint32 count)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicList) writes = NULL;

  s->op_fields = TRUE;
  s->record_len = 0;
  if (vgicd_session_mode (s) == VGICD_MODE_OFF)
    return declined (s, "load");
  if (count == 0 || count > s->window->capacity)
    {
      g_autofree char *msg = g_strdup_printf ("QEMU's restore refused, nothing written: %u "
                                              "writes do not fit the window (%u)", count,
                                              s->window->capacity);
      return step_fail_why (s, "load", VGICD_REASON_REFUSED, msg);
    }
  /* Private copy first: the peer can still write to the window.  Checked,
   * that copy is the plan the restore lays out. */
  writes = vgic_list_new_from (s->window->entries, count);
  s->list_state = vgic_validate_restore_list (s->shape, writes, &error);
  if (!s->list_state)
    return load_refused (s, error);
  s->list_plan = g_steal_pointer (&writes);
  s->state = s->list_state;
  return start_restore (s);
}

/* Do the destination's answers to the guards' reads (@reads, already
 * taken out of the window) take the record? */
static gboolean
destination_fits (VgicdSession *s, const VgicList *reads, GError **error)
{
  g_autoptr (VgicValues) check = vgic_values_new (reads->entries, reads->len, error);

  return check && vgic_validate_destination (s->shape, s->state, check, error);
}

/* The guards did not hold: name the difference, from what was read. */
static GVariant *
guard_failed (VgicdSession *s, guint32 index)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicList) reads = step_collect (s, s->step->n_guards, &error);
  g_autofree char *what = NULL;
  g_autofree char *msg = NULL;

  if (!reads || !destination_fits (s, reads, &error))
    return load_refused (s, error);
  /* vgicd's guards and its own check disagree: a vgicd bug. */
  if (index < s->step->n_guards)
    what = vgic_reg_describe (s->step->entries[index].group, s->step->entries[index].attr);
  msg = g_strdup_printf ("the peer refused guard %u (%s) that vgicd's check accepts; "
                         "nothing written", index, what ? what : "?");
  return step_fail (s, "load", msg);
}

/* ------------------------------------------------------------------ */
/* Next                                                               */
/* ------------------------------------------------------------------ */

/* The error a peer reported, in words.  The peer can send any int32:
 * only a kernel errno (-1 to -4095) is one, and negating INT32_MIN, which
 * g_strerror (-err) would do, is undefined behaviour. */
static char *
peer_error_text (gint32 err)
{
  if (err < 0 && err >= -4095)
    return g_strdup (g_strerror (-err));
  return g_strdup_printf ("error %d, which is not a kernel errno", (int) err);
}

/* The peer's report on a failed step: name the register, say how far it
 * got, and what that means for the VM.  @index is a window position. */
static GVariant *
step_failed_in_kernel (VgicdSession *s, guint32 done, gint32 err, guint32 index)
{
  g_autofree char *what = NULL;
  g_autofree char *msg = NULL;
  g_autofree char *why = peer_error_text (err);
  const char *operation = op_name (s->op);
  guint guards = s->step->n_guards;

  if (index < s->step->len)
    what = vgic_reg_describe (s->step->entries[index].group, s->step->entries[index].attr);
  else
    what = g_strdup_printf ("entry %u", index);

  if (s->op == OP_LOAD_WRITE && index >= guards && done == 0)
    msg = g_strdup_printf ("restore failed writing %s (entry %u of %u): %s; nothing was "
                           "written, so this VM's vGIC is as it was but not restored: fail "
                           "the migration and keep the source running",
                           what, index - guards, s->step->len - guards, why);
  else if (s->op == OP_LOAD_WRITE && index >= guards)
    msg = g_strdup_printf ("restore failed writing %s (entry %u of %u): %s; %u writes "
                           "were applied, so this VM's vGIC is partly restored: fail the "
                           "migration and keep the source running",
                           what, index - guards, s->step->len - guards, why, done);
  else
    msg = g_strdup_printf ("%s failed reading %s (entry %u of %u): %s; nothing was changed",
                           operation, what, index, s->step->len, why);
  return step_fail_why (s, operation, VGICD_REASON_DEVICE, msg);
}

static GVariant *
next_step (VgicdSession *s, GVariant *report)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicList) results = NULL;
  guint32 done = 0, index = 0, ioctls = 0, guard_bad = G_MAXUINT32;
  guint expect;
  gint32 err = 0;
  guint64 ns = 0;

  if (s->op == OP_NONE)
    return step_simple (VGICD_ACTION_FAIL, VGICD_STEP_MESSAGE,
                        g_variant_new_string ("Next called with no save or load in progress"));

  g_variant_lookup (report, VGICD_REPORT_DONE, "u", &done);
  g_variant_lookup (report, VGICD_REPORT_ERROR, "i", &err);
  g_variant_lookup (report, VGICD_REPORT_ERROR_INDEX, "u", &index);
  g_variant_lookup (report, VGICD_REPORT_IOCTLS, "u", &ioctls);
  g_variant_lookup (report, VGICD_REPORT_NS, "t", &ns);
  g_variant_lookup (report, VGICD_REPORT_GUARD_FAILED, "u", &guard_bad);
  /* The peer's figures, summed without wrapping (they are its own VM's, for
   * ListSessions and the journal; the host's estimate takes vgicd's own,
   * vgicd_history_estimate()). */
  s->op_ioctls = ioctls > G_MAXUINT - s->op_ioctls ? G_MAXUINT : s->op_ioctls + ioctls;
  s->op_ns = ns > G_MAXUINT64 - s->op_ns ? G_MAXUINT64 : s->op_ns + ns;

  if (s->step->n_guards && guard_bad != G_MAXUINT32)
    return guard_failed (s, guard_bad);
  if (err != 0)
    {
      /* A kernel without the batch group that the probe missed: run the
       * same step one by one, logged and counted. */
      if (err == -ENXIO && done == 0 && g_strcmp0 (s->step_via, VGICD_VIA_BATCH) == 0)
        {
          g_autoptr (VgicList) again = vgic_list_ref (s->step);
          s->kernel_batch = FALSE;
          return step_run (s, again, s->step_write);
        }
      /* The guessed part of a save failed (an APR the vCPU does not have):
       * round 1 is complete, so plan round 2 from it. */
      if (s->op == OP_SAVE_FIRST && index >= s->round1_len && done >= s->round1_len)
        {
          results = step_collect (s, s->round1_len, &error);
          if (!results)
            return step_fail (s, "save", error->message);
          return save_first_read (s, results, FALSE);
        }
      return step_failed_in_kernel (s, done, err, index);
    }
  expect = s->step->len - s->step->n_guards;
  if (done != expect)
    {
      g_autofree char *msg = g_strdup_printf ("the executor reported %u of %u entries done "
                                              "and no error", done, expect);
      return step_fail (s, op_name (s->op), msg);
    }
  /* Writes that all succeeded leave nothing to read back: the kernel took
   * them from the peer's private copy, whatever the window holds now. */
  if (s->op == OP_LOAD_WRITE)
    return load_done (s);
  results = step_collect (s, s->step->len, &error);
  if (!results)
    return step_fail (s, op_name (s->op), error->message);
  if (s->op == OP_LOAD_CHECK)
    {
      g_autoptr (VgicList) write = NULL;

      if (!destination_fits (s, results, &error) || !(write = restore_writes (s, &error)))
        return load_refused (s, error);
      s->op = OP_LOAD_WRITE;
      return step_run (s, write, TRUE);
    }
  if (s->op == OP_SAVE_FIRST)
    return save_first_read (s, results, TRUE);
  g_assert (s->op == OP_SAVE_SECOND);
  vgic_list_append (s->reads, results->entries, results->len);
  return save_done (s);
}

/* ------------------------------------------------------------------ */
/* Entry points                                                       */
/* ------------------------------------------------------------------ */

/* Each call is timed, for vgicd's own time on the operation (busy_stop()). */
static void
handler_begin (VgicdSession *s)
{
  s->handler_start = g_get_monotonic_time ();
}

static GVariant *
handler_end (VgicdSession *s, GVariant *step)
{
  busy_stop (s);
  return step;
}

GVariant *
vgicd_steps_save (VgicdSession *s)
{
  handler_begin (s);
  return handler_end (s, start_save (s, FALSE));
}

GVariant *
vgicd_steps_save_fields (VgicdSession *s)
{
  handler_begin (s);
  return handler_end (s, start_save (s, TRUE));
}

GVariant *
vgicd_steps_load_list (VgicdSession *s, guint32 count)
{
  handler_begin (s);
  begin_op (s);
  return handler_end (s, start_load_list (s, count));
}

/* A record longer than any VM's on this host (the attach info's
 * record-max), refused on its size alone: libvgicd sends just the size of
 * one (LoadWindow), so that the refusal is counted and kept here with the
 * others instead of staying in the peer. */
static GVariant *
refuse_too_long (VgicdSession *s, gsize size)
{
  const gsize max = vgicd_relay_record_max (s->daemon->config->max_vcpus);
  g_autofree char *msg = NULL;

  if (size <= max)
    return NULL;
  msg = g_strdup_printf ("record refused, nothing written: it is %" G_GSIZE_FORMAT " bytes, "
                         "longer than any VM's record vgicd takes on this host (%" G_GSIZE_FORMAT
                         " bytes, MaxVcpus=%u)", size, max, s->daemon->config->max_vcpus);
  return step_fail_why (s, "load", VGICD_REASON_REFUSED, msg);
}

GVariant *
vgicd_steps_load (VgicdSession *s, const guint8 *record, gsize len)
{
  GVariant *refused;

  handler_begin (s);
  begin_op (s);
  if ((refused = refuse_too_long (s, len)))
    return handler_end (s, refused);
  return handler_end (s, start_load (s, record, len));
}

GVariant *
vgicd_steps_load_window (VgicdSession *s, guint32 size)
{
  g_autofree guint8 *bytes = NULL;
  GVariant *refused;

  handler_begin (s);
  begin_op (s);
  if ((refused = refuse_too_long (s, size)))
    return handler_end (s, refused);
  if (size == 0 || size > s->window->size)
    {
      g_autofree char *msg = g_strdup_printf ("record refused, nothing written: %u bytes "
                                              "do not fit the window (%" G_GSIZE_FORMAT
                                              " bytes)", size, s->window->size);
      return handler_end (s, step_fail_why (s, "load", VGICD_REASON_REFUSED, msg));
    }
  /* Private copy first: the peer can still write to the window. */
  bytes = g_memdup2 (s->window->entries, size);
  return handler_end (s, start_load (s, bytes, size));
}

GVariant *
vgicd_steps_next (VgicdSession *s, GVariant *report)
{
  handler_begin (s);
  if (s->op != OP_NONE)
    s->op_calls++;
  return handler_end (s, next_step (s, report));
}
