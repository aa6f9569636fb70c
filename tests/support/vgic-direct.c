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
vgic_direct_save (const VgicShape *shape, int fd, VgicExecVia via, gboolean routes,
                  VgicExecReport *report, GError **error)
{
  g_autoptr (VgicList) all = vgic_plan_save_first (shape);
  g_autoptr (VgicList) second = NULL;
  g_autoptr (VgicValues) inputs = NULL;
  VgicExecReport total = { 0 };
  gboolean ok;

  /* The routes go where vgicd's save reads them: after round 1. */
  if (routes)
    {
      g_autoptr (VgicList) lost = vgic_plan_save_routes (shape);
      g_autoptr (VgicList) with = vgic_list_new (all->len + lost->len);

      vgic_list_append (with, all->entries, all->len);
      vgic_list_append (with, lost->entries, lost->len);
      g_clear_pointer (&all, vgic_list_unref);
      all = g_steal_pointer (&with);
    }
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

/* The values vgic_validate_destination() judges, from QEMU's reads
 * (@check: the TYPERs).  QEMU does not read the CPU interfaces before it
 * writes (the kernel refuses an ICC_CTLR_EL1 it cannot take as the write
 * comes), so, to keep this path's accesses QEMU's, each vCPU's is taken to
 * be the state's own, which passes vgicd's guard. */
static VgicValues *
qemu_checked (const VgicShape *shape, const VgicValues *state, const VgicList *check,
              GError **error)
{
  g_autoptr (VgicList) all = vgic_list_new_from (check->entries, check->len);

  for (guint cpu = 0; cpu < shape->nr_vcpus; cpu++)
    {
      const uint64_t attr = vgic_attr (shape->mpidrs[cpu], ICC_CTLR_EL1);
      uint64_t v = 0;

      vgic_values_lookup (state, KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS, attr, &v);
      vgic_list_add (all, KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS, attr, v);
    }
  return vgic_values_new (all->entries, all->len, error);
}

gboolean
vgic_direct_restore (const VgicShape *shape, int fd, const VgicValues *state,
                     gboolean routes, VgicExecVia via, VgicExecReport *report,
                     GError **error)
{
  g_autoptr (VgicList) check = vgic_plan_restore_check (shape);
  g_autoptr (VgicList) writes = NULL;
  g_autoptr (VgicValues) checked = NULL;
  VgicExecReport total = { 0 };
  gboolean ok;

  ok = run_round (fd, check, VGIC_EXEC_READ, via, &total, error) &&
       (checked = qemu_checked (shape, state, check, error)) &&
       vgic_validate_destination (shape, state, checked, error) &&
       (writes = vgic_plan_restore_write (shape, state, routes, error)) &&
       run_round (fd, writes, VGIC_EXEC_WRITE, via, &total, error);
  if (report)
    *report = total;
  return ok;
}
