/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-log.c - how a session writes to the journal.
 *
 * Every record about a VM carries VGICD_VM (and the outcome of an operation
 * VGICD_UUID, VGICD_OPERATION and its figures as well), so that an operator
 * can select one VM's history with `journalctl VGICD_VM=name`, and
 * monitoring can take the figures without parsing prose.  The MESSAGE is
 * the same facts for a person, starting with "VM name:".
 */
#include "vgicd-session-private.h"

void
vgicd_session_log_op (VgicdSession *s, GLogLevelFlags level, const char *operation,
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
                    "VGICD_STREAM", s->op_fields ? "fields" : "record",
                    "MESSAGE", "%s", line);
}

void
vgicd_session_log (VgicdSession *s, GLogLevelFlags level, const char *field,
                   const char *value, const char *format, ...)
{
  g_autofree char *message = NULL;
  va_list ap;

  va_start (ap, format);
  message = g_strdup_vprintf (format, ap);
  va_end (ap);
  if (field)
    g_log_structured (G_LOG_DOMAIN, level, "VGICD_VM", s->name, field, value,
                      "MESSAGE", "%s", message);
  else
    g_log_structured (G_LOG_DOMAIN, level, "VGICD_VM", s->name,
                      "MESSAGE", "%s", message);
}
