/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* vgic-direct.c - save and restore without vgicd (see vgic-direct.h). */
#include "vgic-direct.h"
#include "vgic-regs.h"

typedef VgicEntry Entry;

/* Run one round; sum its figures into @total; name a failing register. */
static gboolean
run_round (int fd, VgicList *plan, VgicExecDir dir, VgicExecVia via,
           VgicExecReport *total, GError **error)
{
  Entry *e = plan->entries;
  VgicExecReport r;
  gboolean ok = vgic_exec_run (fd, e, plan->len, dir, via, &r);

  total->done += r.done;
  total->ioctls += r.ioctls;
  total->ns += r.ns;
  if (!ok)
    {
      g_autofree char *reg = vgic_reg_describe (e[r.error_index].group,
                                                e[r.error_index].attr);
      total->error = r.error;
      total->error_index = r.error_index;
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_KERNEL, "%s of %s failed: %s",
                   dir == VGIC_EXEC_READ ? "read" : "write", reg, g_strerror (-r.error));
    }
  return ok;
}

VgicList *
vgic_direct_save (const VgicShape *shape, int fd, VgicExecVia via,
                  VgicExecReport *report, GError **error)
{
  g_autoptr (VgicList) all = vgic_plan_save_first (shape);
  g_autoptr (VgicList) second = NULL;
  g_autoptr (VgicValues) inputs = NULL;
  VgicExecReport total = { 0 };
  gboolean ok;

  ok = run_round (fd, all, VGIC_EXEC_READ, via, &total, error) &&
       (inputs = vgic_plan_save_inputs (shape, all->entries, all->len, error)) &&
       (second = vgic_plan_save_second (shape, inputs, error)) &&
       run_round (fd, second, VGIC_EXEC_READ, via, &total, error);
  if (report)
    *report = total;
  if (!ok)
    return NULL;
  vgic_list_append (all, second->entries, second->len);
  return g_steal_pointer (&all);
}

gboolean
vgic_direct_restore (const VgicShape *shape, int fd, const VgicValues *state,
                     VgicExecVia via, VgicExecReport *report, GError **error)
{
  g_autoptr (VgicList) check = vgic_plan_restore_check (shape);
  g_autoptr (VgicList) writes = NULL;
  g_autoptr (VgicValues) checked = NULL;
  VgicExecReport total = { 0 };
  gboolean ok;

  ok = run_round (fd, check, VGIC_EXEC_READ, via, &total, error) &&
       (checked = vgic_values_new (check->entries, check->len, error)) &&
       vgic_validate_destination (shape, state, checked, error) &&
       (writes = vgic_plan_restore_write (shape, state, error)) &&
       run_round (fd, writes, VGIC_EXEC_WRITE, via, &total, error);
  if (report)
    *report = total;
  return ok;
}
