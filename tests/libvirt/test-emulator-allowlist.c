/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-emulator-allowlist.c - the hook's allow-list of QEMU binaries (in
 * libvirt-hooks/vgicd-emulator.c) and the exec rules of its AppArmor
 * profile name the same paths; which paths it lets through and which not.
 *
 *   PROFILE=security/apparmor/usr.sbin.vgicd-qemu-hook.in test-emulator-allowlist
 */
#include <string.h>

#include "vgicd-emulator.h"

/* Expand AppArmor's {a,b} alternations (not nested) into @out. */
static void
expand (const char *pattern, GPtrArray *out)
{
  const char *open = strchr (pattern, '{');
  const char *close = open ? strchr (open, '}') : NULL;
  g_auto (GStrv) alts = NULL;

  if (!open || !close)
    {
      g_ptr_array_add (out, g_strdup (pattern));
      return;
    }
  {
    g_autofree char *inner = g_strndup (open + 1, close - open - 1);

    alts = g_strsplit (inner, ",", -1);
  }
  for (char **a = alts; *a; a++)
    {
      g_autofree char *head = g_strndup (pattern, open - pattern);
      g_autofree char *next = g_strconcat (head, *a, close + 1, NULL);

      expand (next, out);
    }
}

/* The paths of the profile's exec rules ("PATH rix,"). */
static GPtrArray *
profile_exec_paths (const char *profile)
{
  g_autofree char *data = NULL;
  g_auto (GStrv) lines = NULL;
  g_autoptr (GError) error = NULL;
  GPtrArray *out = g_ptr_array_new_with_free_func (g_free);

  g_file_get_contents (profile, &data, NULL, &error);
  g_assert_no_error (error);
  lines = g_strsplit (data, "\n", -1);
  for (char **l = lines; *l; l++)
    {
      g_auto (GStrv) w = g_strsplit_set (g_strstrip (*l), " \t", -1);

      if (g_strv_length (w) == 2 && strchr (w[1], 'x') && g_str_has_suffix (w[1], ","))
        expand (w[0], out);
    }
  return out;
}

static gboolean
in (GPtrArray *a, const char *s)
{
  return g_ptr_array_find_with_equal_func (a, s, g_str_equal, NULL);
}

static void
test_agrees (void)
{
  const char *profile = g_getenv ("PROFILE");
  g_autoptr (GPtrArray) prof = NULL;
  g_autoptr (GPtrArray) code = g_ptr_array_new ();
  guint differ = 0;

  if (!profile)
    {
      g_test_skip ("PROFILE= names no profile");
      return;
    }
  prof = profile_exec_paths (profile);
  for (const char *const *a = vgicd_emulator_allow_list (); *a; a++)
    g_ptr_array_add (code, (gpointer) *a);
  g_assert_cmpuint (prof->len, >, 0);
  for (guint i = 0; i < code->len; i++)
    if (!in (prof, code->pdata[i]))
      {
        g_printerr ("%s: in the hook's allow-list, not in %s\n", (char *) code->pdata[i],
                    profile);
        differ++;
      }
  for (guint i = 0; i < prof->len; i++)
    if (!in (code, prof->pdata[i]))
      {
        g_printerr ("%s: in %s, not in the hook's allow-list\n", (char *) prof->pdata[i],
                    profile);
        differ++;
      }
  g_assert_cmpuint (differ, ==, 0);
}

static void
test_matches (void)
{
  g_assert_true (vgicd_emulator_allowed ("/usr/bin/qemu-system-aarch64"));
  g_assert_true (vgicd_emulator_allowed ("/usr/local/bin/qemu-system-x86_64"));
  g_assert_true (vgicd_emulator_allowed ("/usr/libexec/qemu-kvm"));
  g_assert_false (vgicd_emulator_allowed ("/usr/bin/qemu-system-"));
  g_assert_false (vgicd_emulator_allowed ("/usr/bin/qemu-system-x/../../../tmp/evil"));
  g_assert_false (vgicd_emulator_allowed ("/usr/bin/../../tmp/qemu-system-aarch64"));
  g_assert_false (vgicd_emulator_allowed ("/tmp/qemu-system-aarch64"));
  g_assert_false (vgicd_emulator_allowed ("/usr/libexec/qemu-kvm2"));
  g_assert_false (vgicd_emulator_allowed ("/bin/sh"));
  g_assert_false (vgicd_emulator_allowed (""));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/emulator/allow-list-agrees-with-apparmor", test_agrees);
  g_test_add_func ("/emulator/allow-list-matches", test_matches);
  return g_test_run ();
}
