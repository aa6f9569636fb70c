/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicctl-state.c - the readiness vgicctl status reports: a monitoring
 * check, a deployment script or an orchestrator wants one word, not nine
 * lines.  Only conditions vgicd itself states are used, never a counter's
 * history (a failure an hour ago says nothing about now):
 *
 *   - Mode off: vgicd declines every save, QEMU takes its own path, so
 *     vgicd is up but not doing its job (perhaps on purpose: the reason
 *     says which mode, the operator decides);
 *   - Mode auto with KernelBatch "no": vgicd's own probe found no vGIC
 *     batch group, so every operation falls back to one register per
 *     ioctl (correct, without the speed-up); "unknown" is no finding and
 *     mode single is the operator's choice, so neither degrades;
 *   - configuration errors (CheckConfig): vgicd would refuse the file at
 *     its next reload or restart, or a VM runs with vgicd off.
 */
#include "vgicctl-state.h"

static const char *
prop (GVariantDict *props, const char *key)
{
  const char *s = NULL;

  return g_variant_dict_lookup (props, key, "&s", &s) ? s : "";
}

/* vgicctl_state_judge() - see vgicctl-state.h */
const char *
vgicctl_state_judge (GVariantDict *props, int config_errors, char **reason)
{
  const char *mode = prop (props, "Mode");
  const char *batch = prop (props, "KernelBatch");
  g_autoptr (GPtrArray) why = g_ptr_array_new_with_free_func (g_free);

  if (g_str_equal (mode, "off"))
    g_ptr_array_add (why, g_strdup ("mode off: vgicd declines saves, QEMU saves the vGIC "
                                    "its own way"));
  if (g_str_equal (mode, "auto") && g_str_equal (batch, "no"))
    g_ptr_array_add (why, g_strdup ("the kernel has no vGIC batch group: saves and loads "
                                    "run one register per ioctl"));
  if (config_errors > 0)
    g_ptr_array_add (why, g_strdup_printf ("the configuration has %d error%s "
                                           "(vgicctl check)", config_errors,
                                           config_errors == 1 ? "" : "s"));
  if (why->len)
    {
      g_ptr_array_add (why, NULL);
      *reason = g_strjoinv ("; ", (char **) why->pdata);
      return "degraded";
    }
  *reason = g_strdup_printf ("vgicd answers, mode %s, kernel batch %s", mode, batch);
  return "ok";
}
