/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-vms.c - the host's static per-VM policy (/etc/vgicd/vms.conf) fails
 * closed: a malformed group is reported by file, line and key and costs
 * only its own VM, which then runs with vgicd off; the other groups keep
 * applying; a line no group can own turns vgicd off for every VM.
 */
#include <glib/gstdio.h>
#include <string.h>

#include "vgicd-vms.h"

static char *tmpdir;
static GString *logged;

/* vgicd logs through GLib's structured log: keep every warning's text. */
static GLogWriterOutput
capture (GLogLevelFlags level, const GLogField *fields, gsize n, gpointer data)
{
  for (gsize i = 0; i < n; i++)
    if (g_str_equal (fields[i].key, "MESSAGE"))
      g_string_append_printf (logged, "%s\n", (const char *) fields[i].value);
  return G_LOG_WRITER_HANDLED;
}

/* expect_logged() - what was logged since the last call matches @pattern */
static void
expect_logged (const char *pattern)
{
  if (!g_pattern_match_simple (pattern, logged->str))
    {
      g_printerr ("log \"%s\" does not match \"%s\"\n", logged->str, pattern);
      g_assert_not_reached ();
    }
  g_string_truncate (logged, 0);
}

static char *
write_vms (const char *text)
{
  char *path = g_build_filename (tmpdir, "vms.conf", NULL);
  g_autoptr (GError) error = NULL;

  g_file_set_contents (path, text, -1, &error);
  g_assert_no_error (error);
  return path;
}

static VgicdVmPolicy
lookup (const char *conf, const char *uuid, const char *name, char *buf, gsize size)
{
  g_autoptr (GError) error = NULL;
  VgicdVmPolicy p;

  g_assert_true (vgicd_vms_lookup (conf, NULL, VGICD_MODE_AUTO, FALSE, uuid, name, &p,
                                   buf, size, &error));
  g_assert_no_error (error);
  return p;
}

/* One group with a syntax error (a line without "="), one good group with
 * Mode=off: the good one applies, the broken one's VM gets mode off (not
 * auto), and the warning names the file, the line and the key. */
static void
test_broken_group (void)
{
  g_autofree char *conf = write_vms ("# fleet policy\n"
                                     "[name good-vm]\n"
                                     "Mode=off\n"
                                     "\n"
                                     "[name broken-vm]\n"
                                     "Mode=auto\n"
                                     "Record true\n"
                                     "[name other-vm]\n"
                                     "Mode=single\n");
  g_autofree char *expect = g_strdup_printf ("*%s:7*Record*", conf);
  char buf[512];
  VgicdVmPolicy p;

  p = lookup (conf, "", "good-vm", buf, sizeof buf);
  g_assert_cmpstr (logged->str, ==, "");
  g_assert_cmpint (p.mode, ==, VGICD_MODE_OFF);
  p = lookup (conf, "", "other-vm", buf, sizeof buf);
  g_assert_cmpint (p.mode, ==, VGICD_MODE_SINGLE);

  p = lookup (conf, "", "broken-vm", buf, sizeof buf);
  expect_logged (expect);
  g_assert_cmpint (p.mode, ==, VGICD_MODE_OFF);
  g_assert_nonnull (strstr (p.source, ":7"));

  /* A VM the file does not name keeps the host's mode. */
  p = lookup (conf, "", "unnamed-vm", buf, sizeof buf);
  g_assert_cmpint (p.mode, ==, VGICD_MODE_AUTO);
}

/* A value that is not a mode: the group's VM is off, the line is named. */
static void
test_bad_value (void)
{
  g_autofree char *conf = write_vms ("[uuid 0b6c-11]\nRecord=true\nMode=of\n"
                                     "[name fine]\nMode=single\n");
  g_autofree char *expect = g_strdup_printf ("*%s:3*Mode*", conf);
  char buf[512];
  VgicdVmPolicy p;

  p = lookup (conf, "0b6c-11", "by-uuid", buf, sizeof buf);
  expect_logged (expect);
  g_assert_cmpint (p.mode, ==, VGICD_MODE_OFF);
  p = lookup (conf, "", "fine", buf, sizeof buf);
  g_assert_cmpint (p.mode, ==, VGICD_MODE_SINGLE);
}

/* A line outside any group, or a group header that does not parse, could
 * concern any VM: every VM is off until it is fixed. */
static void
test_unowned_line (void)
{
  const char *texts[] = {
    "Mode=auto\n[name a]\nMode=single\n",
    "[name a]\nMode=single\n[name b\nMode=off\n",
  };
  const int lines[] = { 1, 3 };

  for (gsize i = 0; i < G_N_ELEMENTS (texts); i++)
    {
      g_autofree char *conf = write_vms (texts[i]);
      g_autofree char *expect = g_strdup_printf ("*%s:%d*", conf, lines[i]);
      char buf[512];
      VgicdVmPolicy p;

      p = lookup (conf, "", "unnamed-vm", buf, sizeof buf);
      expect_logged (expect);
      g_assert_cmpint (p.mode, ==, VGICD_MODE_OFF);
    }
}

int
main (int argc, char **argv)
{
  int ret;

  g_test_init (&argc, &argv, NULL);
  logged = g_string_new (NULL);
  g_log_set_writer_func (capture, NULL, NULL);
  tmpdir = g_dir_make_tmp ("vgicd-test-vms-XXXXXX", NULL);
  g_assert_nonnull (tmpdir);
  g_test_add_func ("/vms/broken-group", test_broken_group);
  g_test_add_func ("/vms/bad-value", test_bad_value);
  g_test_add_func ("/vms/unowned-line", test_unowned_line);
  ret = g_test_run ();
  {
    g_autofree char *f = g_build_filename (tmpdir, "vms.conf", NULL);
    g_unlink (f);
    g_rmdir (tmpdir);
  }
  return ret;
}
