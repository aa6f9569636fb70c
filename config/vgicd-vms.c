/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-vms.c - per-VM choices (see vgicd-vms.h).
 *
 * Runtime file (written by the hook, read by vgicd):
 *
 *   /run/vgicd/vms/UUID.conf
 *   [vm]
 *   Name=the domain's name (for a person reading the folder)
 *   Choice=wanted|required|off
 *
 * Static policy (written by the operator):
 *
 *   /etc/vgicd/vms.conf
 *   [uuid 0b6c...]      or      [name web-1]
 *   Mode=auto|single|off
 *   Record=true|false
 */
#include "vgicd-vms.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const choice_names[] = {
  [VGICD_VM_DEFAULT] = "default",
  [VGICD_VM_WANTED] = "wanted",
  [VGICD_VM_REQUIRED] = "required",
  [VGICD_VM_OFF] = "off",
};

const char *
vgicd_vm_choice_to_string (VgicdVmChoice choice)
{
  return (guint) choice < G_N_ELEMENTS (choice_names) ? choice_names[choice] : "invalid";
}

gboolean
vgicd_vms_uuid_ok (const char *uuid)
{
  gsize n = 0;

  if (!uuid || !*uuid)
    return FALSE;
  for (const char *p = uuid; *p; p++, n++)
    if (!g_ascii_isxdigit (*p) && *p != '-')
      return FALSE;
  return n <= 64;
}

gboolean
vgicd_vms_lookup (const char *vms_conf, const char *vms_dir, VgicdMode host,
                  gboolean host_record, const char *uuid, const char *name, VgicdVmPolicy *policy,
                  char *buf, gsize buf_size, GError **error)
{
  g_autoptr (GKeyFile) runtime = g_key_file_new ();
  g_autoptr (GKeyFile) file = g_key_file_new ();
  GError *local = NULL;
  VgicdMode m;
  gboolean found;

  policy->mode = host;
  policy->source = "host";
  policy->record = host_record;

  /* The domain's own choice, from its metadata, by UUID. */
  if (vms_dir && vgicd_vms_uuid_ok (uuid))
    {
      g_autofree char *path = g_strdup_printf ("%s/%s.conf", vms_dir, uuid);
      g_autofree char *choice = NULL;

      if (g_key_file_load_from_file (runtime, path, G_KEY_FILE_NONE, &local))
        {
          choice = g_key_file_get_string (runtime, "vm", "Choice", NULL);
          if (choice && g_str_equal (g_strstrip (choice), "off"))
            {
              policy->mode = VGICD_MODE_OFF;
              policy->source = "domain metadata";
            }
        }
      else if (!g_error_matches (local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
        {
          g_set_error (error, local->domain, local->code, "cannot read %s: %s", path,
                       local->message);
          g_error_free (local);
          return FALSE;
        }
      g_clear_error (&local);
    }

  /* The host's static policy, by UUID, then by name. */
  if (!vms_conf || !g_key_file_load_from_file (file, vms_conf, G_KEY_FILE_NONE, &local))
    {
      if (!local || g_error_matches (local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
        {
          g_clear_error (&local);
          return TRUE;
        }
      g_set_error (error, local->domain, local->code, "cannot read %s: %s", vms_conf,
                   local->message);
      g_error_free (local);
      return FALSE;
    }
  for (int by = 0; by < 2; by++)
    {
      const char *key = by ? name : uuid;
      g_autofree char *group = NULL;
      gboolean has_record = FALSE;

      if (!key || !*key)
        continue;
      group = g_strdup_printf ("%s %s", by ? "name" : "uuid", key);

      if (!vgicd_config_read_mode (file, vms_conf, group, &m, &found, error) ||
          !vgicd_config_read_bool (file, vms_conf, group, "Record", &policy->record,
                                   &has_record, error))
        return FALSE;
      if (found && vgicd_mode_stricter (m, policy->mode) != policy->mode)
        {
          policy->mode = vgicd_mode_stricter (m, policy->mode);
          g_snprintf (buf, buf_size, "%s [%s]", vms_conf, group);
          policy->source = buf;
        }
      found |= has_record;
      if (found)
        break;
    }
  return TRUE;
}

gboolean
vgicd_vms_write (const char *vms_dir, const char *uuid, const char *name,
                 VgicdVmChoice choice, GError **error)
{
  g_autofree char *path = NULL;
  g_autofree char *data = NULL;
  g_autoptr (GKeyFile) file = NULL;
  gsize len;

  if (!vgicd_vms_uuid_ok (uuid))
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "\"%s\" is not a UUID", uuid ? uuid : "");
      return FALSE;
    }
  path = g_strdup_printf ("%s/%s.conf", vms_dir, uuid);
  if (choice == VGICD_VM_DEFAULT)
    {
      if (unlink (path) < 0 && errno != ENOENT)
        {
          g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno),
                       "cannot remove %s: %s", path, g_strerror (errno));
          return FALSE;
        }
      return TRUE;
    }
  if (g_mkdir_with_parents (vms_dir, 0755) < 0)
    {
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno),
                   "cannot create %s: %s", vms_dir, g_strerror (errno));
      return FALSE;
    }
  file = g_key_file_new ();
  g_key_file_set_string (file, "vm", "Name", name ? name : "");
  g_key_file_set_string (file, "vm", "Choice", vgicd_vm_choice_to_string (choice));
  data = g_key_file_to_data (file, &len, NULL);
  return g_file_set_contents_full (path, data, len, G_FILE_SET_CONTENTS_CONSISTENT,
                                   0644, error);
}
