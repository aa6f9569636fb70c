/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-log.c - how a session writes to the journal.
 *
 * Every record about a VM carries VGICD_VM (and the outcome of an operation
 * VGICD_UUID, VGICD_OPERATION and its figures as well), so that an operator
 * can select one VM's history with `journalctl VGICD_VM=name`, and
 * monitoring can take the figures without parsing prose.  The MESSAGE is
 * the same facts for a person, starting with "VM name:".
 *
 * Each is charged to the session's process, which caused it: past its
 * share (LogLinesPerProcess=, vgicd-logshare.c) it is counted and not
 * written, and the next one written says how many were not.
 */
#include "vgicd-catalog.h"
#include "vgicd-session-private.h"

/* May @s's process write a line now?  On TRUE, *@line is @message as the
 * line says it: "VM name: " before it unless it @has_vm already, and what
 * was not logged before it after (vgicd_log_shares_line()). */
static gboolean
charge (VgicdSession *s, const char *message, gboolean has_vm, char **line)
{
  g_autofree char *said = has_vm ? g_strdup (message)
                                 : g_strdup_printf ("VM %s: %s", s->name, message);

  *line = vgicd_log_shares_line (s->daemon ? s->daemon->log_shares : NULL, s->pid, s->name,
                                 said);
  return *line != NULL;
}

void
vgicd_session_log_op (VgicdSession *s, GLogLevelFlags level, const char *operation,
                      const char *message)
{
  g_autofree char *dur = g_strdup_printf ("%" G_GINT64_FORMAT,
                                          s->op_start ? (g_get_monotonic_time () - s->op_start) * 1000 : 0);
  g_autofree char *ioctls = g_strdup_printf ("%u", s->op_ioctls);
  g_autofree char *exec_ns = g_strdup_printf ("%" G_GUINT64_FORMAT, s->op_ns);
  g_autofree char *busy_ns = g_strdup_printf ("%" G_GINT64_FORMAT, s->op_busy * 1000);
  g_autofree char *line = NULL;

  if (!charge (s, message, FALSE, &line))
    return;
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
                    "VGICD_STREAM", s->op_fields ? "fields" : "record",
                    "MESSAGE", "%s", line);
}

/* The MESSAGE_ID of each kind of outcome: data/vgicd.catalog explains each
 * (`journalctl -x`), and monitoring can select on them. */
static const char *
message_id (const VgicdOp *op)
{
  if (g_str_equal (op->outcome, VGICD_OUTCOME_OK))
    return g_str_equal (op->direction, "save") ? VGICD_MESSAGE_SAVED : VGICD_MESSAGE_LOADED;
  if (g_str_equal (op->outcome, VGICD_OUTCOME_REFUSED))
    return VGICD_MESSAGE_REFUSED;
  if (g_str_equal (op->outcome, VGICD_OUTCOME_DECLINED))
    return VGICD_MESSAGE_DECLINED;
  return VGICD_MESSAGE_FAILED;
}

void
vgicd_session_log_outcome (VgicdSession *s, GLogLevelFlags level, const VgicdOp *op,
                           const char *message)
{
  g_autofree char *dur = g_strdup_printf ("%" G_GUINT64_FORMAT, op->duration_ns);
  g_autofree char *ioctls = g_strdup_printf ("%u", op->ioctls);
  g_autofree char *calls = g_strdup_printf ("%u", op->calls);
  g_autofree char *exec_ns = g_strdup_printf ("%" G_GUINT64_FORMAT, op->kernel_ns);
  g_autofree char *busy_ns = g_strdup_printf ("%" G_GUINT64_FORMAT, op->busy_ns);
  g_autofree char *regs = g_strdup_printf ("%u", op->registers);
  g_autofree char *bytes = g_strdup_printf ("%" G_GUINT64_FORMAT, op->bytes);
  g_autofree char *single = g_strdup_printf ("%" G_GUINT64_FORMAT, op->single_ns);
  g_autofree char *line = NULL;

  if (!charge (s, message, FALSE, &line))
    return;
  g_log_structured (G_LOG_DOMAIN, level,
                    "MESSAGE_ID", message_id (op),
                    "VGICD_VM", s->name,
                    "VGICD_UUID", s->uuid,
                    "VGICD_OPERATION", op->direction,
                    "VGICD_OUTCOME", op->outcome,
                    "VGICD_DURATION_NS", dur,
                    "VGICD_EXEC_NS", exec_ns,
                    "VGICD_BUSY_NS", busy_ns,
                    "VGICD_IOCTLS", ioctls,
                    "VGICD_CALLS", calls,
                    "VGICD_REGISTERS", regs,
                    "VGICD_BYTES", bytes,
                    "VGICD_VIA", op->path,
                    "VGICD_STREAM", op->stream,
                    "VGICD_SINGLE_NS", single,
                    "VGICD_SINGLE_ESTIMATED", op->single_estimated ? "1" : "0",
                    "MESSAGE", "%s", line);
}

void
vgicd_session_log (VgicdSession *s, GLogLevelFlags level, const char *field,
                   const char *value, const char *format, ...)
{
  g_autofree char *message = NULL, *line = NULL;
  va_list ap;

  va_start (ap, format);
  message = g_strdup_vprintf (format, ap);
  va_end (ap);
  /* Its callers' format says "VM name: " itself. */
  if (!charge (s, message, TRUE, &line))
    return;
  if (field && g_str_equal (field, "VGICD_FALLBACK"))
    g_log_structured (G_LOG_DOMAIN, level, "MESSAGE_ID", VGICD_MESSAGE_FALLBACK,
                      "VGICD_VM", s->name, "VGICD_UUID", s->uuid, field, value,
                      "MESSAGE", "%s", line);
  else if (field)
    g_log_structured (G_LOG_DOMAIN, level, "VGICD_VM", s->name, field, value,
                      "MESSAGE", "%s", line);
  else
    g_log_structured (G_LOG_DOMAIN, level, "VGICD_VM", s->name,
                      "MESSAGE", "%s", line);
}
