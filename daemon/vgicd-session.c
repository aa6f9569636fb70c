/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-session.c - org.vgicd.Session1: drives one VM's save or restore.
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
 *   save:  [round 1 reads + guessed round 2] → done(record)
 *          ([round 2 reads] in between when the guess was wrong)
 *   load:  validate the whole record against the VM
 *          → [guarded writes: TYPER reads, checked by the peer, then writes]
 *          → done
 *          (a peer without guards: [TYPER reads] → [writes] → done)
 *
 * Every call to vgicd costs a round trip through two processes and their
 * D-Bus threads, which is most of what vgicd adds to the kernel's time.  So
 * a save reads round 2 (the LPI bases and the APRs, whose presence depends
 * on round 1's values) in the same list as round 1, assuming the shape the
 * last save found (it is a property of the host and of the VM's ITS); the
 * values of round 1 then confirm the guess, or a second round reads what
 * it missed, logged and counted.  And a restore hands the peer the checks
 * QEMU makes on the destination (GICD_TYPER, GICR_TYPER) as guards: the
 * peer reads them, compares them with the ranges vgicd gave, and writes
 * nothing unless all hold.
 *
 * A load validates the record (shape, register set, checksum, version)
 * before it lays out a single write, so a record that does not fit changes
 * nothing.  A failure part-way through the writes is reported with the
 * register, how many writes were applied, and that the destination is now
 * partly written: the migration must fail.
 */
#include <errno.h>
#include <glib-unix.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vgicd/protocol.h"
#include "vgic-plan.h"
#include "vgic-record.h"
#include "vgic-regs.h"
#include "vgicd-dbus.h"
#include "vgicd-session.h"
#include "vgicd-window.h"


typedef struct kvm_vgic_batch_entry Entry;

typedef enum {
  OP_NONE,
  OP_SAVE_FIRST,	/* round 1 and the guessed round 2 */
  OP_SAVE_SECOND,	/* round 2, when the guess was wrong */
  OP_LOAD_CHECK,	/* the TYPER reads (a peer without guards) */
  OP_LOAD_WRITE,	/* the writes, after the guards if the peer has them */
} Op;

typedef struct {
  guint64 ns;		/* executor time, summed over steps */
  guint ioctls;
  const char *via;
  guint64 count;
} OpStats;

struct _VgicdSession {
  VgicdDaemon *daemon;
  GDBusConnection *connection;
  VgicdDbusSession1 *skeleton;
  char *path;
  uid_t uid;
  pid_t pid;

  char *name;
  char *uuid;
  VgicShape *shape;
  gboolean kernel_batch;
  gboolean peer_guards;		/* the peer checks guards before writes */
  gboolean peer_record_window;	/* the peer takes a saved record from the window */
  gboolean peer_channel;	/* the peer calls through a step channel */
  int channel_fd;		/* vgicd's end of it, or -1 */
  int peer_channel_fd;		/* the peer's end, until Attach passes it on */
  GSource *channel_source;
  VgicdWindow *window;
  gint64 attached_usec;

  /* The operation in progress. */
  Op op;
  GArray *step;		/* what was laid into the window, kept private */
  gboolean step_write;
  const char *step_via;
  guint step_guard;	/* entries at the head of the step that are guard reads */
  GArray *guards;	/* VgicGuard per guard entry */
  GArray *guess;	/* save: the guessed round 2 that follows them */
  GArray *last_second;	/* round 2 as this VM's last save or load found it */
  GArray *first_plan;	/* round 1 of a save: the shape's, planned at attach */
  GArray *reads;	/* save: everything read so far */
  VgicRecord *record;	/* load: the validated record */
  gsize record_len;
  gint64 op_start;
  guint op_ioctls;
  guint64 op_ns;
  gboolean op_fallback;
  gint64 op_busy;	/* µs vgicd spent on the operation, handlers before this one */
  gint64 handler_start;	/* when the handler running now started */

  OpStats save, load;
};

static guint next_session_id;

/* ------------------------------------------------------------------ */
/* Logging                                                            */
/* ------------------------------------------------------------------ */

/* One structured record per operation outcome: the journal gets the VM,
 * the operation and its figures as fields, stderr a readable line. */
static void
log_op (VgicdSession *s, GLogLevelFlags level, const char *operation,
        const char *message)
{
  g_autofree char *dur = g_strdup_printf ("%" G_GINT64_FORMAT,
                                          s->op_start ? (g_get_monotonic_time () - s->op_start) * 1000 : 0);
  g_autofree char *ioctls = g_strdup_printf ("%u", s->op_ioctls);
  g_autofree char *exec_ns = g_strdup_printf ("%" G_GUINT64_FORMAT, s->op_ns);
  g_autofree char *busy_ns = g_strdup_printf ("%" G_GINT64_FORMAT, s->op_busy * 1000);
  g_autofree char *line = g_strdup_printf ("VM %s: %s", s->name, message);

  /* MESSAGE goes last: its format consumes the remaining arguments. */
  g_log_structured (G_LOG_DOMAIN, level,
                    "VGICD_VM", s->name,
                    "VGICD_UUID", s->uuid,
                    "VGICD_OPERATION", operation,
                    "VGICD_DURATION_NS", dur,
                    "VGICD_EXEC_NS", exec_ns,
                    "VGICD_BUSY_NS", busy_ns,
                    "VGICD_IOCTLS", ioctls,
                    "VGICD_VIA", s->step_via ? s->step_via : "-",
                    "MESSAGE", "%s", line);
}

/* ------------------------------------------------------------------ */
/* Steps                                                              */
/* ------------------------------------------------------------------ */

/* Milliseconds vgicd has spent on the operation so far. */
static double
busy_ms (VgicdSession *s)
{
  return (s->op_busy + g_get_monotonic_time () - s->handler_start) / 1e3;
}

static GVariant *
step_simple (const char *action, const char *key, GVariant *value)
{
  GVariantBuilder b;

  g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&b, "{sv}", "action", g_variant_new_string (action));
  if (key)
    g_variant_builder_add (&b, "{sv}", key, value);
  return g_variant_builder_end (&b);
}

static void
op_reset (VgicdSession *s)
{
  s->op = OP_NONE;
  s->step_guard = 0;
  g_clear_pointer (&s->guards, g_array_unref);
  g_clear_pointer (&s->guess, g_array_unref);
  g_clear_pointer (&s->step, g_array_unref);
  g_clear_pointer (&s->reads, g_array_unref);
  g_clear_pointer (&s->record, vgic_record_free);
}

/* Give up on the operation in progress: count it, log it, say so.
 * @reason: "refused" (nothing was touched), "device" (the kernel failed),
 * or "internal". */
static GVariant *
step_fail_why (VgicdSession *s, const char *operation, const char *reason,
               const char *message)
{
  GVariantBuilder b;

  s->daemon->totals.failures++;
  log_op (s, G_LOG_LEVEL_WARNING, operation, message);
  op_reset (s);
  s->op_start = 0;
  vgicd_daemon_changed (s->daemon);
  g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&b, "{sv}", "action", g_variant_new_string ("fail"));
  g_variant_builder_add (&b, "{sv}", "reason", g_variant_new_string (reason));
  g_variant_builder_add (&b, "{sv}", "message", g_variant_new_string (message));
  return g_variant_builder_end (&b);
}

static GVariant *
step_fail (VgicdSession *s, const char *operation, const char *message)
{
  return step_fail_why (s, operation, "internal", message);
}

static const char *
op_name (Op op)
{
  return op == OP_SAVE_FIRST || op == OP_SAVE_SECOND ? "save" : "load";
}

/* Which path a step takes: the mode, and what the executor found. */
static const char *
choose_via (VgicdSession *s)
{
  if (s->daemon->mode == VGICD_MODE_SINGLE)
    return "single";
  if (!s->kernel_batch)
    {
      if (!s->op_fallback)
        {
          /* No silent fallback: logged and counted once per operation. */
          s->op_fallback = TRUE;
          s->daemon->totals.fallbacks++;
          g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE,
                            "VGICD_VM", s->name,
                            "VGICD_FALLBACK", "single",
                            "MESSAGE", "VM %s: the kernel has no vGIC batch group; "
                            "running one register per ioctl", s->name);
        }
      return "single";
    }
  return "batch";
}

/* Lay @plan into the window and answer the step that runs it. */
static GVariant *
step_run (VgicdSession *s, GArray *plan, gboolean write)
{
  GVariantBuilder b;

  /* The window holds the largest round of this shape by construction. */
  g_assert (plan->len <= s->window->capacity);
  memcpy (s->window->entries, plan->data, plan->len * sizeof (Entry));
  g_clear_pointer (&s->step, g_array_unref);
  s->step = g_array_ref (plan);
  s->step_write = write;
  s->step_via = choose_via (s);

  g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add (&b, "{sv}", "action",
                         g_variant_new_string (write ? "write" : "read"));
  g_variant_builder_add (&b, "{sv}", "count",
                         g_variant_new_uint32 (plan->len - s->step_guard));
  g_variant_builder_add (&b, "{sv}", "via", g_variant_new_string (s->step_via));
  /* A restore's writes are its last step: when they all succeed, the
   * answer to Next is done, and the peer need not wait for it. */
  if (write && s->op == OP_LOAD_WRITE)
    g_variant_builder_add (&b, "{sv}", "last", g_variant_new_boolean (TRUE));
  if (s->step_guard)
    {
      GVariantBuilder r;

      g_variant_builder_init (&r, G_VARIANT_TYPE ("a(ttt)"));
      for (guint i = 0; i < s->guards->len; i++)
        {
          const VgicGuard *g = &g_array_index (s->guards, VgicGuard, i);
          g_variant_builder_add (&r, "(ttt)", g->mask, g->min, g->max);
        }
      g_variant_builder_add (&b, "{sv}", "guard", g_variant_new_uint32 (s->step_guard));
      g_variant_builder_add (&b, "{sv}", "guard-ranges", g_variant_builder_end (&r));
    }
  return g_variant_builder_end (&b);
}

/* Lay @guards' reads, then @writes, and answer a write step that has the
 * peer check the reads against @ranges before it writes. */
static GVariant *
step_run_guarded (VgicdSession *s, GArray *reads, GArray *ranges, GArray *writes)
{
  g_autoptr (GArray) all = g_array_sized_new (FALSE, FALSE, sizeof (Entry),
                                              reads->len + writes->len);

  g_array_append_vals (all, reads->data, reads->len);
  g_array_append_vals (all, writes->data, writes->len);
  g_clear_pointer (&s->guards, g_array_unref);
  s->guards = g_array_ref (ranges);
  s->step_guard = reads->len;
  return step_run (s, all, TRUE);
}

/* Take the results of a read step (or of a write step's guards) out of the
 * window, checking that the peer changed nothing but values and errors.
 * Write steps leave nothing to take: see next_step(). */
static GArray *
step_collect (VgicdSession *s, guint n, GError **error)
{
  GArray *out = g_array_sized_new (FALSE, FALSE, sizeof (Entry), n);

  g_assert (n <= s->step->len);
  g_array_append_vals (out, s->window->entries, n);
  for (guint i = 0; i < out->len; i++)
    {
      const Entry *got = &g_array_index (out, Entry, i);
      const Entry *sent = &g_array_index (s->step, Entry, i);

      if (got->group != sent->group || got->attr != sent->attr)
        {
          g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED,
                       "the executor changed entry %u of the window; refusing its results", i);
          g_array_unref (out);
          return NULL;
        }
      if (got->group != KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS && got->value > G_MAXUINT32)
        {
          g_autofree char *what = vgic_reg_describe (got->group, got->attr);
          g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED,
                       "the executor returned a 64-bit value for the 32-bit %s", what);
          g_array_unref (out);
          return NULL;
        }
    }
  return out;
}

static GVariant *
save_done (VgicdSession *s)
{
  g_autoptr (GError) error = NULL;
  /* s->reads are round 1 and round 2 exactly as planned: each step's
   * results were checked against what was laid out (step_collect()). */
  g_autoptr (GBytes) record = vgic_record_encode_run (s->shape,
                                                      (Entry *) (void *) s->reads->data,
                                                      s->reads->len, &error);
  g_autofree char *msg = NULL;
  GVariant *value;
  const char *key;
  gsize size;

  if (!record)
    return step_fail (s, "save", error->message);
  size = g_bytes_get_size (record);
  s->save.ns = s->op_ns;
  s->save.ioctls = s->op_ioctls;
  s->save.via = s->step_via;
  s->save.count++;
  s->daemon->totals.saves++;
  s->daemon->totals.bytes_saved += size;
  /* The record goes back through the window when the peer takes it from
   * there: it is the largest thing a save moves, and a D-Bus message would
   * copy it several times on each side. */
  if (s->peer_record_window && size <= s->window->size)
    {
      memcpy (s->window->entries, g_bytes_get_data (record, NULL), size);
      key = "record-size";
      value = g_variant_new_uint32 ((guint32) size);
    }
  else
    {
      key = "record";
      value = g_variant_new_from_bytes (G_VARIANT_TYPE_BYTESTRING, record, TRUE);
    }
  msg = g_strdup_printf ("saved %u registers in %u ioctls (%s), %.3f ms in the kernel, "
                         "%.3f ms in vgicd, record %" G_GSIZE_FORMAT " bytes",
                         s->reads->len, s->op_ioctls, s->step_via, s->op_ns / 1e6,
                         busy_ms (s), size);
  log_op (s, G_LOG_LEVEL_MESSAGE, "save", msg);
  op_reset (s);
  s->op_start = 0;
  vgicd_daemon_changed (s->daemon);
  return step_simple ("done", key, value);
}

static GVariant *
load_done (VgicdSession *s)
{
  g_autofree char *msg = NULL;

  s->load.ns = s->op_ns;
  s->load.ioctls = s->op_ioctls;
  s->load.via = s->step_via;
  s->load.count++;
  s->daemon->totals.loads++;
  s->daemon->totals.bytes_loaded += s->record_len;
  msg = g_strdup_printf ("restored %u writes in %u ioctls (%s), %.3f ms in the kernel, "
                         "%.3f ms in vgicd", s->step->len - s->step_guard, s->op_ioctls,
                         s->step_via, s->op_ns / 1e6, busy_ms (s));
  log_op (s, G_LOG_LEVEL_MESSAGE, "load", msg);
  op_reset (s);
  s->op_start = 0;
  vgicd_daemon_changed (s->daemon);
  return step_simple ("done", NULL, NULL);
}

/* The peer's report on a failed step: name the register, say how far it
 * got, and what that means for the VM.  @index is a window position. */
static GVariant *
step_failed_in_kernel (VgicdSession *s, guint32 done, gint32 err, guint32 index)
{
  g_autofree char *what = NULL;
  g_autofree char *msg = NULL;
  const char *operation = op_name (s->op);

  if (index < s->step->len)
    {
      const Entry *e = &g_array_index (s->step, Entry, index);
      what = vgic_reg_describe (e->group, e->attr);
    }
  else
    what = g_strdup_printf ("entry %u", index);

  if (s->op == OP_LOAD_WRITE && index >= s->step_guard)
    msg = g_strdup_printf ("restore failed writing %s (entry %u of %u): %s; %u writes "
                           "were applied, so this VM's vGIC is partly restored: fail the "
                           "migration and keep the source running",
                           what, index - s->step_guard, s->step->len - s->step_guard,
                           g_strerror (-err), done);
  else
    msg = g_strdup_printf ("%s failed reading %s (entry %u of %u): %s; nothing was changed",
                           operation, what, index, s->step->len, g_strerror (-err));
  return step_fail_why (s, operation, "device", msg);
}

/* Remember the shape a save or a restore found: the next save guesses it. */
static void
learn_shape (VgicdSession *s, gboolean plpis, guint apr)
{
  s->daemon->guess_plpis = plpis;
  s->daemon->guess_apr = apr;
}

/* Round 1 (and maybe the guessed round 2) was read: finish the save, or
 * read the round 2 the guess missed. */
static GVariant *
save_first_read (VgicdSession *s, GArray *results, gboolean guess_ran)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicValues) first = vgic_plan_save_inputs (s->shape,
                                                        (Entry *) (void *) results->data,
                                                        s->first_plan->len, &error);
  g_autoptr (GArray) second = NULL;
  const char *from;
  gboolean plpis;
  guint apr;

  if (first)
    second = vgic_plan_save_second (s->shape, first, &error);
  if (!second || !vgic_plan_save_shape (s->shape, first, &plpis, &apr, &error))
    return step_fail (s, "save", error->message);
  learn_shape (s, plpis, apr);
  from = guess_ran && s->guess == s->last_second ? "its last save's" : "the guess";
  g_clear_pointer (&s->last_second, g_array_unref);
  s->last_second = g_array_ref (second);

  if (guess_ran && second->len == s->guess->len)
    {
      guint i;

      for (i = 0; i < second->len; i++)
        {
          const Entry *want = &g_array_index (second, Entry, i);
          const Entry *got = &g_array_index (s->guess, Entry, i);

          if (want->group != got->group || want->attr != got->attr)
            break;
        }
      if (i == second->len)
        {
          s->reads = g_array_ref (results);
          return save_done (s);
        }
    }

  /* The guess was wrong (or failed in the kernel): read round 2 as it
   * should be.  Logged and counted, as every slower path is. */
  s->daemon->totals.second_rounds++;
  g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_MESSAGE,
                    "VGICD_VM", s->name,
                    "VGICD_OPERATION", "save",
                    "MESSAGE", "VM %s: this VM's LPI and APR registers (LPIs %s, %u APRs "
                    "per group on vCPU 0) differ from %s; reading them in a second round",
                    s->name, plpis ? "yes" : "no", apr,
                    from);
  g_array_set_size (results, s->first_plan->len);
  s->reads = g_array_ref (results);
  s->op = OP_SAVE_SECOND;
  return step_run (s, second, FALSE);
}

/* The guards did not hold: name the difference, from what was read. */
static GVariant *
guard_failed (VgicdSession *s, guint32 index)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GArray) reads = NULL;
  g_autoptr (VgicValues) check = NULL;
  g_autoptr (GArray) write = NULL;
  g_autofree char *msg = NULL;

  reads = step_collect (s, s->step_guard, &error);
  if (reads)
    check = vgic_values_new ((Entry *) (void *) reads->data, reads->len, &error);
  if (check)
    write = vgic_plan_restore_write (s->shape, s->record->values, check, &error);
  if (write)
    {
      /* vgicd's ranges and its own check disagree: a vgicd bug. */
      g_autofree char *what = NULL;
      if (index < s->step_guard)
        {
          const Entry *e = &g_array_index (s->step, Entry, index);
          what = vgic_reg_describe (e->group, e->attr);
        }
      msg = g_strdup_printf ("the peer refused guard %u (%s) that vgicd's check accepts; "
                             "nothing written", index, what ? what : "?");
      return step_fail_why (s, "load", "internal", msg);
    }
  msg = g_strdup_printf ("record refused, nothing written: %s", error->message);
  return step_fail_why (s, "load", "refused", msg);
}

static GVariant *
next_step (VgicdSession *s, GVariant *report)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GArray) results = NULL;
  guint32 done = 0, index = 0, ioctls = 0, guard_bad = G_MAXUINT32;
  guint expect;
  gint32 err = 0;
  guint64 ns = 0;

  if (s->op == OP_NONE)
    return step_simple ("fail", "message",
                        g_variant_new_string ("Next called with no save or load in progress"));

  g_variant_lookup (report, "done", "u", &done);
  g_variant_lookup (report, "error", "i", &err);
  g_variant_lookup (report, "error-index", "u", &index);
  g_variant_lookup (report, "ioctls", "u", &ioctls);
  g_variant_lookup (report, "ns", "t", &ns);
  g_variant_lookup (report, "guard-failed", "u", &guard_bad);
  s->op_ioctls += ioctls;
  s->op_ns += ns;

  if (s->step_guard && guard_bad != G_MAXUINT32)
    return guard_failed (s, guard_bad);
  if (err != 0)
    {
      /* A kernel without the batch group that the probe missed: run the
       * same step one by one, logged and counted. */
      if (err == -ENXIO && done == 0 && g_strcmp0 (s->step_via, "batch") == 0)
        {
          g_autoptr (GArray) again = g_array_ref (s->step);
          s->kernel_batch = FALSE;
          return step_run (s, again, s->step_write);
        }
      /* The guessed part of a save failed (an APR the vCPU does not have):
       * round 1 is complete, so plan round 2 from it. */
      if (s->op == OP_SAVE_FIRST && index >= s->first_plan->len &&
          done >= s->first_plan->len)
        {
          results = step_collect (s, s->first_plan->len, &error);
          if (!results)
            return step_fail (s, "save", error->message);
          return save_first_read (s, results, FALSE);
        }
      return step_failed_in_kernel (s, done, err, index);
    }
  expect = s->step->len - s->step_guard;
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

  switch (s->op)
    {
    case OP_SAVE_FIRST:
      return save_first_read (s, results, TRUE);
    case OP_SAVE_SECOND:
      g_array_append_vals (s->reads, results->data, results->len);
      return save_done (s);
    case OP_LOAD_CHECK:
      {
        g_autoptr (VgicValues) check = vgic_values_new ((Entry *) (void *) results->data,
                                                        results->len, &error);
        g_autoptr (GArray) write = NULL;

        if (check)
          write = vgic_plan_restore_write (s->shape, s->record->values, check, &error);
        if (!write)
          {
            g_autofree char *msg = g_strdup_printf ("record refused, nothing written: %s",
                                                    error->message);
            return step_fail_why (s, "load", "refused", msg);
          }
        s->op = OP_LOAD_WRITE;
        return step_run (s, write, TRUE);
      }
    case OP_LOAD_WRITE:
      return load_done (s);
    case OP_NONE:
    default:
      g_assert_not_reached ();
    }
}

/* ------------------------------------------------------------------ */
/* D-Bus methods                                                      */
/* ------------------------------------------------------------------ */

static void
begin_op (VgicdSession *s)
{
  op_reset (s);
  s->op_start = g_get_monotonic_time ();
  s->op_ioctls = 0;
  s->op_ns = 0;
  s->op_busy = 0;
  s->op_fallback = FALSE;
  s->step_via = NULL;
}

static GVariant *
start_save (VgicdSession *s)
{
  g_autoptr (GArray) plan = NULL;

  begin_op (s);
  if (s->daemon->mode == VGICD_MODE_OFF)
    {
      s->daemon->totals.declined++;
      log_op (s, G_LOG_LEVEL_MESSAGE, "save", "save declined: mode is off");
      s->op_start = 0;
      vgicd_daemon_changed (s->daemon);
      return step_simple ("declined", NULL, NULL);
    }
  /* Round 1, then round 2 as this VM's last save (or load) found it, or
   * as the host's last save did. */
  plan = g_array_sized_new (FALSE, FALSE, sizeof (Entry), s->window->capacity);
  g_array_append_vals (plan, s->first_plan->data, s->first_plan->len);
  if (s->last_second)
    s->guess = g_array_ref (s->last_second);
  else
    s->guess = vgic_plan_save_guess (s->shape, s->daemon->guess_plpis,
                                     CLAMP (s->daemon->guess_apr, 1, 4));
  g_array_append_vals (plan, s->guess->data, s->guess->len);
  s->op = OP_SAVE_FIRST;
  return step_run (s, plan, FALSE);
}

/* A record arrived (in a message or in the window): check all of it, then
 * lay out the restore. */
static GVariant *
start_load (VgicdSession *s, const guint8 *bytes, gsize len)
{
  g_autoptr (GError) error = NULL;

  /* Everything is checked before the first access is planned. */
  s->record = vgic_record_load_planned (bytes, len, s->shape, s->first_plan, &error);
  if (!s->record)
    {
      g_autofree char *msg = g_strdup_printf ("record refused, nothing written: %s",
                                              error->message);
      return step_fail_why (s, "load", "refused", msg);
    }
  s->record_len = len;
  if (s->peer_guards)
    {
      g_autoptr (GArray) ranges = NULL;
      g_autoptr (GArray) reads = vgic_plan_restore_guards (s->shape, s->record->values,
                                                           &ranges);
      g_autoptr (GArray) write = vgic_plan_restore_guarded (s->shape, s->record->values,
                                                            &error);
      gboolean plpis = FALSE;
      guint apr = 1;

      if (!write)
        {
          g_autofree char *msg = g_strdup_printf ("record refused, nothing written: %s",
                                                  error->message);
          return step_fail_why (s, "load", "refused", msg);
        }
      /* The source's shape is the best guess for this VM's next save, and
       * for this host's. */
      if (vgic_plan_save_shape (s->shape, s->record->values, &plpis, &apr, NULL))
        learn_shape (s, plpis, apr);
      g_clear_pointer (&s->last_second, g_array_unref);
      s->last_second = vgic_plan_save_second (s->shape, s->record->values, NULL);
      s->op = OP_LOAD_WRITE;
      return step_run_guarded (s, reads, ranges, write);
    }
  s->op = OP_LOAD_CHECK;
  {
    g_autoptr (GArray) check = vgic_plan_restore_check (s->shape);
    return step_run (s, check, FALSE);
  }
}

/* The methods, whichever way they came (D-Bus or the step channel). */

static GVariant *
call_save (VgicdSession *s)
{
  return start_save (s);
}

static GVariant *
call_load (VgicdSession *s, const guint8 *bytes, gsize len)
{
  begin_op (s);
  return start_load (s, bytes, len);
}

static GVariant *
call_load_window (VgicdSession *s, guint32 size)
{
  g_autofree guint8 *bytes = NULL;

  begin_op (s);
  if (size == 0 || size > s->window->size)
    {
      g_autofree char *msg = g_strdup_printf ("record refused, nothing written: %u bytes "
                                              "do not fit the window (%" G_GSIZE_FORMAT
                                              " bytes)", size, s->window->size);
      return step_fail_why (s, "load", "refused", msg);
    }
  /* Private copy first: the peer can still write to the window. */
  bytes = g_memdup2 (s->window->entries, size);
  return start_load (s, bytes, size);
}

/* Time each call, for the "ms in vgicd" of the operation's log line. */
#define TIMED(s, expr)                                                         \
  ({                                                                           \
    gint64 t0_ = (s)->handler_start = g_get_monotonic_time ();                 \
    GVariant *step_ = (expr);                                                  \
    (s)->op_busy += g_get_monotonic_time () - t0_;                             \
    step_;                                                                     \
  })

static gboolean
on_save (VgicdDbusSession1 *skel, GDBusMethodInvocation *inv, gpointer data)
{
  VgicdSession *s = data;

  vgicd_dbus_session1_complete_save (skel, inv, TIMED (s, call_save (s)));
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
on_load (VgicdDbusSession1 *skel, GDBusMethodInvocation *inv, GVariant *record,
         gpointer data)
{
  VgicdSession *s = data;
  gsize len = 0;
  const guint8 *bytes = g_variant_get_fixed_array (record, &len, 1);

  vgicd_dbus_session1_complete_load (skel, inv, TIMED (s, call_load (s, bytes, len)));
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
on_load_window (VgicdDbusSession1 *skel, GDBusMethodInvocation *inv, guint size,
                gpointer data)
{
  VgicdSession *s = data;

  vgicd_dbus_session1_complete_load_window (skel, inv, TIMED (s, call_load_window (s, size)));
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
on_next (VgicdDbusSession1 *skel, GDBusMethodInvocation *inv, GVariant *report,
         gpointer data)
{
  VgicdSession *s = data;

  vgicd_dbus_session1_complete_next (skel, inv, TIMED (s, next_step (s, report)));
  return G_DBUS_METHOD_INVOCATION_HANDLED;
}

/* ------------------------------------------------------------------ */
/* The step channel                                                   */
/* ------------------------------------------------------------------ */

/*
 * A D-Bus call costs a round trip through both processes' D-Bus threads:
 * the caller hands its message to its connection's worker thread, which
 * writes it; vgicd's worker reads it and hands it to vgicd's main thread;
 * the reply goes back the same way.  Under emulation that is several
 * milliseconds per call, more than the kernel spends on a whole batch.  A
 * peer that asks for it ("channel" in Attach's features) gets a
 * SOCK_SEQPACKET socket for Save, LoadWindow and Next: one packet each
 * way, read and answered on vgicd's main thread.  The packets carry the
 * same GVariants as the D-Bus methods (see VgicdChannelMethod).
 */
static void
channel_close (VgicdSession *s)
{
  if (s->channel_source)
    {
      g_source_destroy (s->channel_source);
      g_clear_pointer (&s->channel_source, g_source_unref);
    }
  if (s->channel_fd >= 0)
    close (s->channel_fd);
  s->channel_fd = -1;
}

static void
channel_refuse (VgicdSession *s, const char *why)
{
  g_log_structured (G_LOG_DOMAIN, G_LOG_LEVEL_WARNING,
                    "VGICD_VM", s->name,
                    "MESSAGE", "VM %s: closing the step channel: %s", s->name, why);
  channel_close (s);
}

/* A call's arguments, as a GVariant that owns a copy of them. */
static GVariant *
channel_args (const GVariantType *type, const guint8 *data, gsize len)
{
  g_autoptr (GBytes) bytes = g_bytes_new (data, len);

  return g_variant_ref_sink (g_variant_new_from_bytes (type, bytes, FALSE));
}

static gboolean
on_channel (gint fd, GIOCondition cond, gpointer data)
{
  VgicdSession *s = data;
  g_autofree guint8 *buf = g_malloc (VGICD_CHANNEL_MAX);
  g_autoptr (GVariant) args = NULL;
  g_autoptr (GVariant) reply = NULL;
  GVariant *step = NULL;
  VgicdChannelHeader h;
  ssize_t n;

  n = recv (fd, buf, VGICD_CHANNEL_MAX, MSG_TRUNC | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return G_SOURCE_CONTINUE;
  if (n <= 0)
    {
      /* The peer closed it (QEMU exited, or gave up on a call); the D-Bus
       * connection's end takes the session. */
      channel_close (s);
      return G_SOURCE_REMOVE;
    }
  if ((gsize) n < sizeof h || n > VGICD_CHANNEL_MAX)
    {
      channel_refuse (s, "a packet of a size no method has");
      return G_SOURCE_REMOVE;
    }
  memcpy (&h, buf, sizeof h);
  switch (h.method)
    {
    case VGICD_CHANNEL_SAVE:
      step = TIMED (s, call_save (s));
      break;
    case VGICD_CHANNEL_LOAD_WINDOW:
      args = channel_args (G_VARIANT_TYPE ("(u)"), buf + sizeof h, n - sizeof h);
      {
        guint32 size;
        g_variant_get (args, "(u)", &size);
        step = TIMED (s, call_load_window (s, size));
      }
      break;
    case VGICD_CHANNEL_NEXT:
      args = channel_args (G_VARIANT_TYPE ("(a{sv})"), buf + sizeof h, n - sizeof h);
      {
        g_autoptr (GVariant) report = g_variant_get_child_value (args, 0);
        step = TIMED (s, next_step (s, report));
      }
      break;
    default:
      channel_refuse (s, "an unknown method");
      return G_SOURCE_REMOVE;
    }

  reply = g_variant_ref_sink (g_variant_new ("(@a{sv})", step));
  if ((gsize) g_variant_get_size (reply) > VGICD_CHANNEL_MAX ||
      send (fd, g_variant_get_data (reply), g_variant_get_size (reply), MSG_NOSIGNAL) < 0)
    {
      channel_refuse (s, "the answer could not be sent");
      return G_SOURCE_REMOVE;
    }
  return G_SOURCE_CONTINUE;
}

/* Make the channel; the peer's end is returned for Attach to pass on. */
static int
channel_open (VgicdSession *s, GError **error)
{
  int sv[2];

  if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
    {
      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno),
                   "cannot make the step channel: %s", g_strerror (errno));
      return -1;
    }
  s->channel_fd = sv[0];
  s->channel_source = g_unix_fd_source_new (sv[0], G_IO_IN | G_IO_HUP | G_IO_ERR);
  g_source_set_callback (s->channel_source, G_SOURCE_FUNC (on_channel), s, NULL);
  g_source_attach (s->channel_source, NULL);
  return sv[1];
}

int
vgicd_session_take_peer_channel (VgicdSession *s)
{
  int fd = s->peer_channel_fd;

  s->peer_channel_fd = -1;
  return fd;
}

/* ------------------------------------------------------------------ */
/* Life cycle                                                         */
/* ------------------------------------------------------------------ */

static gboolean
parse_vm (VgicdSession *s, GVariant *vm, GError **error)
{
  g_autoptr (GVariant) mpidrs = NULL;
  guint32 nr_irqs = 0;
  gsize n = 0;
  const guint32 *aff;

  if (!g_variant_lookup (vm, "name", "s", &s->name) ||
      !g_variant_lookup (vm, "nr-irqs", "u", &nr_irqs) ||
      !(mpidrs = g_variant_lookup_value (vm, "mpidrs", G_VARIANT_TYPE ("au"))))
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_INVALID_SHAPE,
                   "Attach needs \"name\" (s), \"nr-irqs\" (u) and \"mpidrs\" (au)");
      return FALSE;
    }
  if (!g_variant_lookup (vm, "uuid", "s", &s->uuid))
    s->uuid = g_strdup ("");
  g_variant_lookup (vm, "kernel-batch", "b", &s->kernel_batch);
  {
    g_autofree const char **features = NULL;

    if (g_variant_lookup (vm, "features", "^a&s", &features))
      {
        s->peer_guards = g_strv_contains (features, "guards");
        s->peer_record_window = g_strv_contains (features, "record-window");
        /* The channel's packets are small: a record cannot travel in one,
         * so only a peer that takes it from the window gets a channel. */
        s->peer_channel = g_strv_contains (features, "channel") && s->peer_record_window;
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

VgicdSession *
vgicd_session_new (VgicdDaemon *daemon, GDBusConnection *connection, GVariant *vm,
                   uid_t uid, pid_t pid, GError **error)
{
  VgicdSession *s = g_new0 (VgicdSession, 1);
  g_autofree char *msg = NULL;
  guint32 capacity;

  s->channel_fd = s->peer_channel_fd = -1;
  s->daemon = daemon;
  s->uid = uid;
  s->pid = pid;
  if (!parse_vm (s, vm, error))
    {
      vgicd_session_free (s);
      return NULL;
    }
  /* The largest step of any operation on this shape: a restore's writes
   * with LPIs and four APRs per group, after its guards (a save, even with
   * its guessed round 2, is smaller; so is its record). */
  capacity = vgic_plan_restore_count (s->shape, TRUE, 4) + 8;
  s->window = vgicd_window_new (capacity, error);
  if (!s->window)
    {
      vgicd_session_free (s);
      return NULL;
    }
  /* Round 1 of a save depends on the shape alone: planned once, here,
   * rather than inside each save's or load's downtime. */
  s->first_plan = vgic_plan_save_first (s->shape);
  s->connection = g_object_ref (connection);
  s->path = g_strdup_printf ("/org/vgicd/Session1/%u", ++next_session_id);
  s->skeleton = vgicd_dbus_session1_skeleton_new ();
  g_signal_connect (s->skeleton, "handle-save", G_CALLBACK (on_save), s);
  g_signal_connect (s->skeleton, "handle-load", G_CALLBACK (on_load), s);
  g_signal_connect (s->skeleton, "handle-load-window", G_CALLBACK (on_load_window), s);
  g_signal_connect (s->skeleton, "handle-next", G_CALLBACK (on_next), s);
  if (!g_dbus_interface_skeleton_export (G_DBUS_INTERFACE_SKELETON (s->skeleton),
                                         connection, s->path, error))
    {
      vgicd_session_free (s);
      return NULL;
    }
  if (s->peer_channel)
    {
      s->peer_channel_fd = channel_open (s, error);
      if (s->peer_channel_fd < 0)
        {
          vgicd_session_free (s);
          return NULL;
        }
    }
  s->attached_usec = g_get_real_time ();

  /* What the executor found is the freshest word on the kernel. */
  if (daemon->kernel_batch != (s->kernel_batch ? 1 : 0))
    {
      daemon->kernel_batch = s->kernel_batch ? 1 : 0;
      g_free (daemon->kernel_batch_source);
      daemon->kernel_batch_source = g_strdup_printf ("executor of VM %s", s->name);
    }
  g_ptr_array_add (daemon->sessions, s);
  daemon->totals.sessions_total++;
  msg = g_strdup_printf ("attached: %u vCPUs, %u IRQs, kernel batch %s, %s, pid %d uid %u",
                         s->shape->nr_vcpus, s->shape->nr_irqs,
                         s->kernel_batch ? "yes" : "no",
                         s->peer_channel ? "step channel" : "D-Bus steps", (int) pid, (guint) uid);
  log_op (s, G_LOG_LEVEL_MESSAGE, "attach", msg);
  vgicd_daemon_changed (daemon);
  return s;
}

void
vgicd_session_free (VgicdSession *s)
{
  if (!s)
    return;
  if (s->daemon && g_ptr_array_remove (s->daemon->sessions, s))
    {
      if (s->op != OP_NONE)
        log_op (s, G_LOG_LEVEL_WARNING, op_name (s->op),
                "the peer went away in the middle of an operation");
      else
        log_op (s, G_LOG_LEVEL_MESSAGE, "detach", "detached");
      vgicd_daemon_changed (s->daemon);
    }
  if (s->skeleton)
    {
      g_dbus_interface_skeleton_unexport (G_DBUS_INTERFACE_SKELETON (s->skeleton));
      g_object_unref (s->skeleton);
    }
  op_reset (s);
  channel_close (s);
  if (s->peer_channel_fd >= 0)
    close (s->peer_channel_fd);
  g_clear_pointer (&s->last_second, g_array_unref);
  g_clear_pointer (&s->first_plan, g_array_unref);
  g_clear_object (&s->connection);
  vgicd_window_free (s->window);
  vgic_shape_free (s->shape);
  g_free (s->name);
  g_free (s->uuid);
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

GVariant *
vgicd_session_get_info (VgicdSession *s, gint channel_handle)
{
  GVariantBuilder b;

  g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
  if (channel_handle >= 0)
    g_variant_builder_add (&b, "{sv}", "channel", g_variant_new_handle (channel_handle));
  g_variant_builder_add (&b, "{sv}", "window-entries", g_variant_new_uint32 (s->window->capacity));
  g_variant_builder_add (&b, "{sv}", "mode",
                         g_variant_new_string (vgicd_mode_to_string (s->daemon->mode)));
  g_variant_builder_add (&b, "{sv}", "protocol", g_variant_new_uint32 (2));
  {
    static const char *const features[] = { "load-window", NULL };
    g_variant_builder_add (&b, "{sv}", "features", g_variant_new_strv (features, -1));
  }
  g_variant_builder_add (&b, "{sv}", "version", g_variant_new_string (PACKAGE_VERSION));
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
  g_variant_builder_add (&b, "{sv}", "saves", g_variant_new_uint64 (s->save.count));
  g_variant_builder_add (&b, "{sv}", "loads", g_variant_new_uint64 (s->load.count));
  g_variant_builder_add (&b, "{sv}", "last-save-ns", g_variant_new_uint64 (s->save.ns));
  g_variant_builder_add (&b, "{sv}", "last-save-ioctls", g_variant_new_uint32 (s->save.ioctls));
  g_variant_builder_add (&b, "{sv}", "last-save-via", g_variant_new_string (s->save.via ? s->save.via : ""));
  g_variant_builder_add (&b, "{sv}", "last-load-ns", g_variant_new_uint64 (s->load.ns));
  g_variant_builder_add (&b, "{sv}", "last-load-ioctls", g_variant_new_uint32 (s->load.ioctls));
  g_variant_builder_add (&b, "{sv}", "last-load-via", g_variant_new_string (s->load.via ? s->load.via : ""));
  g_variant_builder_add (&b, "{sv}", "attached-usec", g_variant_new_uint64 ((guint64) s->attached_usec));
  return g_variant_builder_end (&b);
}
