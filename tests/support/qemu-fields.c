/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * qemu-fields.c - the patched QEMU's fields path, played (see the header).
 */
#include "qemu-fields.h"

#include "figures.h"
#include "vgic-error.h"
#include "vgic-plan.h"

VgicList *
qemu_fields_get_order (const VgicShape *shape, const VgicList *save)
{
  g_autoptr (VgicList) first = vgic_plan_save_first (shape);
  g_autoptr (VgicList) head = NULL;
  g_autoptr (VgicList) second = NULL;

  g_return_val_if_fail (save->len >= first->len, NULL);
  head = vgic_list_new_from (save->entries, first->len);
  second = vgic_list_new_from (save->entries + first->len, save->len - first->len);
  return vgic_plan_save_qemu_order (head, second);
}

gboolean
qemu_fields_get (VgicdClient *c, const VgicList *get, VgicList **reads, QemuFieldsTimes *t,
                 GError **error)
{
  g_autoptr (VgicdRegs) regs = NULL;
  /* QEMU's fields: memory it has before the save (its GICv3State), so
   * made and touched before the clock starts. */
  g_autoptr (VgicList) out = vgic_list_new_from (get->entries, get->len);
  gint64 t0 = g_get_monotonic_time ();

  *t = (QemuFieldsTimes) { 0 };
  if (!vgicd_client_save_fields (c, &regs, error))
    return FALSE;
  t->call_ms = figures_ms_since (t0);
  t0 = g_get_monotonic_time ();
  for (guint i = 0; i < get->len; i++)
    {
      uint64_t v;

      if (vgicd_regs_lookup (regs, get->entries[i].group, get->entries[i].attr, &v))
        out->entries[i].value = v;
      else
        t->missed++;
    }
  t->qemu_ms = figures_ms_since (t0);
  if (t->missed)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET,
                   "%u registers QEMU's get reads were not read by vgicd", t->missed);
      return FALSE;
    }
  *reads = g_steal_pointer (&out);
  return TRUE;
}

gboolean
qemu_fields_put (VgicdClient *c, const VgicList *put, QemuFieldsTimes *t, GError **error)
{
  VgicdAccess *writes;
  size_t room = 0;
  gint64 t0 = g_get_monotonic_time ();

  *t = (QemuFieldsTimes) { 0 };
  /* Collected where the patched QEMU collects them: in the room the
   * client lends, touched at attach. */
  writes = vgicd_client_load_list_buffer (c, &room);
  if (!writes || room < put->len)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET,
                   "%u writes do not fit the client's room for them (%zu)", put->len, room);
      return FALSE;
    }
  for (guint i = 0; i < put->len; i++)
    writes[i] = (VgicdAccess) { put->entries[i].group, put->entries[i].attr,
                                put->entries[i].value };
  t->qemu_ms = figures_ms_since (t0);
  t0 = g_get_monotonic_time ();
  if (!vgicd_client_load_list (c, writes, put->len, error))
    return FALSE;
  t->call_ms = figures_ms_since (t0);
  return TRUE;
}
