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

/*
 * Theory of operation (vms.conf): GKeyFile refuses a whole file for one
 * syntax error, and a file refused whole would let every VM it sets apart
 * run in the host's mode: the policy would fail open.  So the file is cut
 * here into its groups, line by line (a line whose first non-blank
 * character is '[' opens a group, as GKeyFile reads it), and each group is
 * parsed alone by GKeyFile, which keeps GKeyFile's syntax, escapes and
 * UTF-8 checks.  A group that does not parse, or holds a bad value, costs
 * only its own VM, which gets mode off (the most restrictive, always
 * allowed); a line no group owns (a key before the first group, a group
 * header that does not parse, and the lines under it) could concern any
 * VM, so every VM gets mode off until the file is fixed.  Each is logged
 * with file, line and key at every lookup (each attach), and counted.
 */
static guint broken_total;

guint
vgicd_vms_broken_total (void)
{
  return g_atomic_int_get (&broken_total);
}

/* fail_closed() - @policy becomes off, naming @conf:@line as the reason */
static void
fail_closed (VgicdVmPolicy *policy, const char *conf, guint line, const char *what,
             char *buf, gsize buf_size)
{
  g_atomic_int_inc (&broken_total);
  g_warning ("%s:%u: %s; the VMs it may concern run with vgicd off until it is fixed",
             conf, line, what);
  policy->mode = VGICD_MODE_OFF;
  g_snprintf (buf, buf_size, "%s:%u unreadable (fails closed)", conf, line);
  policy->source = buf;
}

/* key_of() - the key a line sets (up to '=' or the end), for messages */
static char *
key_of (const char *line)
{
  const char *eq = strchr (line, '=');
  g_autofree char *key = eq ? g_strndup (line, eq - line) : g_strdup (line);

  g_strstrip (key);
  if (strlen (key) > 64)
    key[64] = '\0';
  return g_strescape (key, NULL);
}

/* line_of_key() - the line of @lines[first..last) that sets @key (1-based) */
static guint
line_of_key (char **lines, guint first, guint last, const char *key)
{
  for (guint i = last; i-- > first;)
    {
      g_autofree char *k = key_of (lines[i]);

      if (strchr (lines[i], '=') && g_str_equal (k, key))
        return i + 1;
    }
  return first + 1;
}

/* group_header() - the group @line opens, or NULL if it is not a header */
static char *
group_header (const char *line)
{
  g_autofree char *l = g_strstrip (g_strdup (line));
  gsize n = strlen (l);

  if (n < 2 || l[0] != '[' || l[n - 1] != ']')
    return NULL;
  return g_strndup (l + 1, n - 2);
}

/* apply_group() - apply the group @lines[first..last) (first is its header)
 * to @policy; FALSE (policy made off) when it does not parse */
static gboolean
apply_group (char **lines, guint first, guint last, const char *conf, const char *group,
             VgicdVmPolicy *policy, gboolean *found, char *buf, gsize buf_size)
{
  g_autoptr (GKeyFile) file = g_key_file_new ();
  g_autoptr (GString) text = g_string_new (NULL);
  g_autoptr (GError) error = NULL;
  gboolean has_mode = FALSE, has_record = FALSE;
  VgicdMode m;

  /* One line at a time, so that the line GKeyFile refuses is known. */
  for (guint i = first; i < last; i++)
    {
      g_string_append (text, lines[i]);
      g_string_append_c (text, '\n');
      if (!g_key_file_load_from_data (file, text->str, text->len, G_KEY_FILE_NONE, &error))
        {
          g_autofree char *key = key_of (lines[i]);
          g_autofree char *what = g_strdup_printf ("[%s] key \"%s\": %s", group, key,
                                                   error->message);

          fail_closed (policy, conf, i + 1, what, buf, buf_size);
          return FALSE;
        }
    }
  if (!vgicd_config_read_mode (file, NULL, group, &m, &has_mode, &error) ||
      !vgicd_config_read_bool (file, NULL, group, "Record", &policy->record, &has_record,
                               &error))
    {
      const char *key = has_mode || !g_key_file_has_key (file, group, "Mode", NULL) ?
                        "Record" : "Mode";
      g_autofree char *what = g_strdup_printf ("[%s] key \"%s\": %s", group, key,
                                               error->message);

      fail_closed (policy, conf, line_of_key (lines, first, last, key), what, buf, buf_size);
      return FALSE;
    }
  if (has_mode && vgicd_mode_stricter (m, policy->mode) != policy->mode)
    {
      policy->mode = vgicd_mode_stricter (m, policy->mode);
      g_snprintf (buf, buf_size, "%s [%s]", conf, group);
      policy->source = buf;
    }
  *found |= has_mode || has_record;
  return TRUE;
}

/* static_policy() - apply /etc/vgicd/vms.conf's groups for @uuid, else
 * @name, to @policy (see the theory of operation above) */
static gboolean
static_policy (const char *vms_conf, const char *uuid, const char *name,
               VgicdVmPolicy *policy, char *buf, gsize buf_size, GError **error)
{
  g_autofree char *data = NULL;
  g_auto (GStrv) lines = NULL;
  GError *local = NULL;
  guint n;

  if (!g_file_get_contents (vms_conf, &data, NULL, &local))
    {
      if (g_error_matches (local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
        {
          g_clear_error (&local);
          return TRUE;
        }
      g_set_error (error, local->domain, local->code, "cannot read %s: %s", vms_conf,
                   local->message);
      g_error_free (local);
      return FALSE;
    }
  lines = g_strsplit (data, "\n", -1);
  n = g_strv_length (lines);

  /* A line no group owns: fails closed for every VM. */
  for (guint i = 0, in_group = FALSE; i < n; i++)
    {
      const char *l = lines[i] + strspn (lines[i], " \t\r");
      g_autofree char *group = NULL;

      if (*l == '[' && !(group = group_header (lines[i])))
        {
          g_autofree char *what = g_strdup_printf ("group header \"%s\" does not parse",
                                                   g_strstrip (lines[i]));

          fail_closed (policy, vms_conf, i + 1, what, buf, buf_size);
          return TRUE;
        }
      in_group |= group != NULL;
      if (!in_group && *l && *l != '#')
        {
          g_autofree char *key = key_of (l);
          g_autofree char *what = g_strdup_printf ("key \"%s\" outside any group", key);

          fail_closed (policy, vms_conf, i + 1, what, buf, buf_size);
          return TRUE;
        }
    }

  /* By UUID, then by name: the first that has groups for the VM decides. */
  for (int by = 0; by < 2; by++)
    {
      const char *key = by ? name : uuid;
      g_autofree char *want = NULL;
      gboolean found = FALSE;

      if (!key || !*key)
        continue;
      want = g_strdup_printf ("%s %s", by ? "name" : "uuid", key);
      for (guint i = 0; i < n; i++)
        {
          g_autofree char *group = group_header (lines[i]);
          guint end = i + 1;

          if (!group || !g_str_equal (group, want))
            continue;
          while (end < n && lines[end][strspn (lines[end], " \t\r")] != '[')
            end++;
          if (!apply_group (lines, i, end, vms_conf, group, policy, &found, buf, buf_size))
            return TRUE;
        }
      if (found)
        break;
    }
  return TRUE;
}

gboolean
vgicd_vms_lookup (const char *vms_conf, const char *vms_dir, VgicdMode host,
                  gboolean host_record, const char *uuid, const char *name, VgicdVmPolicy *policy,
                  char *buf, gsize buf_size, GError **error)
{
  g_autoptr (GKeyFile) runtime = g_key_file_new ();
  GError *local = NULL;

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
  if (!vms_conf)
    return TRUE;
  return static_policy (vms_conf, uuid, name, policy, buf, buf_size, error);
}

/* uuid_canonical() - 8-4-4-4-12 hex digits, as libvirt and QEMU print a
 * UUID; *@upper set when a digit is in upper case */
static gboolean
uuid_canonical (const char *uuid, gboolean *upper)
{
  *upper = FALSE;
  if (strlen (uuid) != 36)
    return FALSE;
  for (guint i = 0; i < 36; i++)
    {
      gboolean dash = i == 8 || i == 13 || i == 18 || i == 23;

      if (dash ? uuid[i] != '-' : !g_ascii_isxdigit (uuid[i]))
        return FALSE;
      *upper |= g_ascii_isupper (uuid[i]);
    }
  return TRUE;
}

/* check_group() - the problems of one [uuid ...] or [name ...] group */
static void
check_group (const VgicdConfFile *conf, const char *group, guint line, VgicdDiags *diags)
{
  static const char *const kinds[] = { "uuid", "name", NULL };
  static const char *const known[] = { "Mode", "Record", NULL };
  const char *path = vgicd_conf_file_path (conf);
  GKeyFile *keys = vgicd_conf_file_keys (conf);
  const char *space = strchr (group, ' ');
  g_autofree char *kind = space ? g_strndup (group, space - group) : g_strdup (group);
  const char *id = space ? space + 1 : "";
  g_autoptr (GError) error = NULL;
  gboolean upper, found, record;
  VgicdMode mode;

  if (!g_strv_contains (kinds, kind))
    {
      const char *close = vgicd_conf_closest (kind, kinds);

      vgicd_diags_add (diags, VGICD_DIAG_WARNING, path, line, group, NULL,
                       "unknown group [%s] ignored%s%s%s (vms.conf's groups are [uuid UUID] "
                       "and [name NAME])", group, close ? "; did you mean [" : "",
                       close ? close : "", close ? " ...]?" : "");
      return;
    }
  if (!*id)
    {
      vgicd_diags_add (diags, VGICD_DIAG_ERROR, path, line, group, NULL,
                       "[%s] names no VM: write [%s %s]", group, kind,
                       g_str_equal (kind, "uuid") ? "UUID" : "NAME");
      return;
    }
  if (g_str_equal (kind, "uuid") && !uuid_canonical (id, &upper))
    {
      vgicd_diags_add (diags, VGICD_DIAG_ERROR, path, line, group, NULL,
                       "[%s]: \"%s\" is not a UUID (8-4-4-4-12 hex digits, as virsh domuuid "
                       "prints it); the group matches no VM", group, id);
      return;
    }
  if (g_str_equal (kind, "uuid") && upper)
    vgicd_diags_add (diags, VGICD_DIAG_WARNING, path, line, group, NULL,
                     "[%s]: QEMU gives vgicd its UUID in lower case, so this group matches "
                     "no VM; write it in lower case", group);

  vgicd_conf_check_keys (conf, group, known, diags);
  if (!vgicd_config_read_mode (keys, NULL, group, &mode, &found, &error))
    {
      vgicd_diags_add (diags, VGICD_DIAG_ERROR, path,
                       vgicd_conf_file_key_line (conf, group, "Mode"), group, "Mode",
                       "%s; the VM runs with vgicd off until it is fixed", error->message);
      g_clear_error (&error);
    }
  if (!vgicd_config_read_bool (keys, NULL, group, "Record", &record, &found, &error))
    vgicd_diags_add (diags, VGICD_DIAG_ERROR, path,
                     vgicd_conf_file_key_line (conf, group, "Record"), group, "Record",
                     "%s; the VM runs with vgicd off until it is fixed", error->message);
}

/* vgicd_vms_check() - see vgicd-vms.h */
void
vgicd_vms_check (const char *vms_conf, VgicdDiags *diags)
{
  g_autoptr (VgicdConfFile) conf = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);
  const char *const *groups;
  const guint *lines;

  conf = vgicd_conf_file_read (vms_conf, "read by no VM's lookup: every VM runs with vgicd "
                               "off until it is fixed", diags, &error);
  if (!conf)
    {
      if (!g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_NOENT))
        vgicd_diags_add (diags, VGICD_DIAG_ERROR, vms_conf, 0, NULL, NULL,
                         "cannot read it: %s; every VM runs in the host's mode", error->message);
      return;
    }
  groups = vgicd_conf_file_groups (conf, &lines);
  for (guint i = 0; groups[i]; i++)
    {
      /* A repeated group is one group (its keys merge): checked once. */
      if (!g_hash_table_add (seen, (gpointer) groups[i]))
        continue;
      check_group (conf, groups[i], lines[i], diags);
    }
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
