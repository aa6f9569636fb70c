/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-check-config.c - the configuration check: vgicd.conf, its drop-ins,
 * the state file and vms.conf, each problem with its file, line and key,
 * through the library (what vgicd logs at start and reload) and through
 * the real `vgicd --check-config` (its output and exit status, what
 * ExecReload= and the package's postinst rely on).
 */
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "test-files.h"
#include "vgicd-config.h"
#include "vgicd-vms.h"

static char *tmpdir;

static char *
write_file (const char *name, const char *text)
{
  char *path = g_build_filename (tmpdir, name, NULL);
  g_autofree char *dir = g_path_get_dirname (path);
  g_autoptr (GError) error = NULL;

  g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
  g_file_set_contents (path, text, -1, &error);
  g_assert_no_error (error);
  return path;
}

/* find() - the problem at @file:@line, asserting its level and that its
 * message has @words */
static const VgicdDiag *
find (const VgicdDiags *diags, const char *file, guint line, VgicdDiagLevel level,
      const char *words)
{
  for (guint i = 0; i < diags->items->len; i++)
    {
      const VgicdDiag *d = diags->items->pdata[i];

      if (g_str_equal (d->file, file) && d->line == line)
        {
          if (d->level != level || !strstr (d->message, words))
            g_error ("%s:%u: %s \"%s\", expected %s with \"%s\"", file, line,
                     vgicd_diag_level_to_string (d->level), d->message,
                     vgicd_diag_level_to_string (level), words);
          return d;
        }
    }
  g_error ("no problem reported at %s:%u (expected \"%s\")", file, line, words);
  return NULL;
}

static void
dump (const VgicdDiags *diags)
{
  for (guint i = 0; i < diags->items->len; i++)
    {
      g_autofree char *s = vgicd_diag_to_string (diags->items->pdata[i]);

      g_test_message ("%s", s);
    }
}

/* Every kind of problem in vgicd.conf, at its line; a refused value leaves
 * the default, and a later line of a repeated key wins as GKeyFile has it. */
static void
test_vgicd_conf_lines (void)
{
  g_autofree char *path = write_file ("lines/vgicd.conf",
                                      "# a comment\n"		/* 1 */
                                      "[vgcid]\n"		/* 2 */
                                      "Mode=off\n"		/* 3 */
                                      "[vgicd]\n"		/* 4 */
                                      "Mdoe=single\n"		/* 5 */
                                      "MaxVcpus=99999\n"		/* 6 */
                                      "Probe=maybe\n"		/* 7 */
                                      "History=8\n"		/* 8 */
                                      "History=9\n"		/* 9 */
                                      "this is no key\n"		/* 10 */
                                      "Zzyzx=1\n");		/* 11 */
  g_autoptr (VgicdDiags) diags = vgicd_diags_new ();
  g_autoptr (VgicdConfig) config = vgicd_config_check (path, diags);
  const VgicdDiag *d;

  dump (diags);
  find (diags, path, 2, VGICD_DIAG_WARNING, "unknown group [vgcid] ignored; did you mean [vgicd]?");
  d = find (diags, path, 5, VGICD_DIAG_WARNING, "unknown key [vgicd] Mdoe ignored; did you mean Mode?");
  g_assert_cmpstr (d->key, ==, "Mdoe");
  d = find (diags, path, 6, VGICD_DIAG_ERROR, "[vgicd] MaxVcpus=99999 is not a number in 1..4096");
  g_assert_cmpstr (d->group, ==, "vgicd");
  g_assert_cmpstr (d->key, ==, "MaxVcpus");
  find (diags, path, 7, VGICD_DIAG_ERROR, "Probe=maybe is not a boolean");
  find (diags, path, 9, VGICD_DIAG_WARNING, "History is set again (also on line 8)");
  find (diags, path, 10, VGICD_DIAG_ERROR, "\"this is no key\" is not KEY=VALUE");
  find (diags, path, 11, VGICD_DIAG_WARNING, "unknown key [vgicd] Zzyzx ignored (known: Mode, ");
  g_assert_cmpuint (diags->errors, ==, 3);
  g_assert_cmpuint (diags->warnings, ==, 4);
  /* [vgcid]'s Mode=off did not apply; the refused values kept defaults. */
  g_assert_cmpint (config->mode, ==, VGICD_MODE_AUTO);
  g_assert_cmpuint (config->max_vcpus, ==, 512);
  g_assert_cmpuint (config->history, ==, 9);
}

/* vgicd_config_load() refuses the same file naming the first error's line,
 * and says there are more. */
static void
test_load_names_line (void)
{
  g_autofree char *path = write_file ("load/vgicd.conf", "[vgicd]\n\nMode=fast\nProbe=x\n");
  g_autofree char *want = g_strdup_printf ("%s:3: [vgicd] Mode=fast is not a mode", path);
  g_autoptr (GError) error = NULL;

  g_assert_null (vgicd_config_load (path, &error));
  g_assert_nonnull (error);
  g_assert_true (g_str_has_prefix (error->message, want));
  g_assert_nonnull (strstr (error->message, "vgicd --check-config lists them"));
}

/* Drop-ins: read after the file, in name order, each over the one before;
 * only *.conf; their problems name the drop-in. */
static void
test_dropins (void)
{
  g_autofree char *path = write_file ("drop/vgicd.conf", "[vgicd]\nMaxVcpus=100\nHistory=5\n");
  g_autoptr (VgicdConfig) config = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicdDiags) diags = vgicd_diags_new ();
  g_autofree char *bad = NULL;

  g_free (write_file ("drop/vgicd.conf.d/50-a.conf", "[vgicd]\nMaxVcpus=200\n"));
  g_free (write_file ("drop/vgicd.conf.d/60-b.conf", "[vgicd]\nMaxVcpus=300\n"));
  /* Not a drop-in: only NAME.conf is read. */
  g_free (write_file ("drop/vgicd.conf.d/70-c.conf.dpkg-old", "[vgicd]\nMode=x\n"));
  config = vgicd_config_load (path, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (config->max_vcpus, ==, 300);
  g_assert_cmpuint (config->history, ==, 5);
  g_assert_cmpstr (config->path, ==, path);

  bad = write_file ("drop/vgicd.conf.d/55-bad.conf", "[vgicd]\n#\nMode=fast\n");
  g_clear_pointer (&config, vgicd_config_free);
  config = vgicd_config_check (path, diags);
  dump (diags);
  find (diags, bad, 3, VGICD_DIAG_ERROR, "Mode=fast is not a mode");
  g_assert_cmpuint (diags->errors, ==, 1);
}

/* vms.conf: each group alone; unknown groups and keys warned, values and
 * UUIDs that can match no VM are errors, lines no group owns too. */
static void
test_vms_conf (void)
{
  g_autofree char *path = write_file ("vms/vms.conf",
                                      "[nmae web-1]\n"					/* 1 */
                                      "Mode=off\n"					/* 2 */
                                      "[uuid not-a-uuid]\n"				/* 3 */
                                      "Mode=off\n"					/* 4 */
                                      "[uuid 0b6c2f0e-1c2d-4e5f-8a9b-0c1d2e3f4a5b]\n"	/* 5 */
                                      "Mode=fast\n"					/* 6 */
                                      "Recrod=true\n"					/* 7 */
                                      "[name db]\n"					/* 8 */
                                      "Mode=single\n"					/* 9 */
                                      "Record=yes\n"					/* 10 */
                                      "[uuid 0B6C2F0E-1C2D-4E5F-8A9B-0C1D2E3F4A5B]\n"	/* 11 */
                                      "[name ok]\n"					/* 12 */
                                      "Mode=off\n"					/* 13 */
                                      "Record=true\n");					/* 14 */
  g_autofree char *orphan = write_file ("vms2/vms.conf", "Mode=off\n[name a]\nMode=off\n"
                                        "[uuid x\nMode=off\n");
  g_autoptr (VgicdDiags) diags = vgicd_diags_new ();
  g_autoptr (VgicdDiags) diags2 = vgicd_diags_new ();

  vgicd_vms_check (path, diags);
  dump (diags);
  find (diags, path, 1, VGICD_DIAG_WARNING, "unknown group [nmae web-1] ignored; did you mean [name ...]?");
  find (diags, path, 3, VGICD_DIAG_ERROR, "\"not-a-uuid\" is not a UUID");
  find (diags, path, 6, VGICD_DIAG_ERROR, "Mode=fast is not a mode; accepted values: auto, single, off; the VM runs with vgicd off");
  find (diags, path, 7, VGICD_DIAG_WARNING, "unknown key [uuid 0b6c2f0e-1c2d-4e5f-8a9b-0c1d2e3f4a5b] Recrod ignored; did you mean Record?");
  find (diags, path, 10, VGICD_DIAG_ERROR, "Record=yes is not a boolean");
  find (diags, path, 11, VGICD_DIAG_WARNING, "in lower case");
  g_assert_cmpuint (diags->errors, ==, 3);
  g_assert_cmpuint (diags->warnings, ==, 3);

  vgicd_vms_check (orphan, diags2);
  dump (diags2);
  find (diags2, orphan, 1, VGICD_DIAG_ERROR, "is outside any group; read by no VM's lookup");
  find (diags2, orphan, 4, VGICD_DIAG_ERROR, "group header \"[uuid x\" does not parse");
  g_assert_cmpuint (diags2->errors, ==, 2);
}

/* run_check() - the real vgicd --check-config ARGS: its stderr, and its
 * exit status in *@status */
static char *
run_check (int *status, const char *const *args)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autofree char *out = NULL, *err = NULL;
  g_autoptr (GError) error = NULL;
  int wait;

  g_ptr_array_add (argv, (char *) g_getenv ("VGICD"));
  for (guint i = 0; args[i]; i++)
    g_ptr_array_add (argv, (char *) args[i]);
  g_ptr_array_add (argv, NULL);
  g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
                &wait, &error);
  g_assert_no_error (error);
  /* Nothing on standard output: the problems are diagnostics. */
  g_assert_cmpstr (out, ==, "");
  g_assert_true (WIFEXITED (wait));
  *status = WEXITSTATUS (wait);
  g_test_message ("exit %d:\n%s", *status, err);
  return g_steal_pointer (&err);
}

/* The daemon's own --check-config: what it would load, or the FILEs. */
static void
test_vgicd_binary (void)
{
  g_autofree char *conf = write_file ("bin/vgicd.conf", "[vgcid]\nMode=off\n[vgicd]\nMode=fast\n");
  g_autofree char *state = write_file ("bin/state.conf", "[vgicd]\nMode=single\n");
  g_autofree char *vms = write_file ("bin/vms.conf", "[uuid nope]\nMode=off\n");
  g_autofree char *good = write_file ("good/vgicd.conf", "[vgicd]\nMode=single\n");
  g_autofree char *none = g_build_filename (tmpdir, "good", "vms.conf", NULL);
  g_autofree char *want_group = g_strdup_printf ("%s:1: warning: unknown group [vgcid]", conf);
  g_autofree char *want_mode = g_strdup_printf ("%s:4: error: [vgicd] Mode=fast is not a mode",
                                                conf);
  g_autofree char *want_uuid = g_strdup_printf ("%s:1: error: [uuid nope]: \"nope\" is not a UUID",
                                                vms);
  g_autofree char *err = NULL;
  int status;

  {
    const char *args[] = { "--config", conf, "--state", state, "--vms-conf", vms,
                           "--check-config", NULL };

    err = run_check (&status, args);
    g_assert_cmpint (status, ==, 1);
    g_assert_nonnull (strstr (err, want_group));
    g_assert_nonnull (strstr (err, want_mode));
    g_assert_nonnull (strstr (err, want_uuid));
    g_clear_pointer (&err, g_free);
  }
  {
    /* FILEs: each alone, vms.conf by its name. */
    const char *args[] = { "--check-config", vms, NULL };

    err = run_check (&status, args);
    g_assert_cmpint (status, ==, 1);
    g_assert_nonnull (strstr (err, want_uuid));
    g_assert_null (strstr (err, conf));
    g_clear_pointer (&err, g_free);
  }
  {
    /* A clean configuration: nothing said, status 0 (as sshd -t). */
    const char *args[] = { "--config", good, "--state", state, "--vms-conf", none,
                           "--check-config", NULL };

    err = run_check (&status, args);
    g_assert_cmpint (status, ==, 0);
    g_assert_cmpstr (err, ==, "");
    g_clear_pointer (&err, g_free);
  }
  {
    /* Warnings alone do not fail it. */
    g_autofree char *warn = write_file ("warn/vgicd.conf", "[vgicd]\nMdoe=off\n");
    const char *args[] = { "--check-config", warn, NULL };

    err = run_check (&status, args);
    g_assert_cmpint (status, ==, 0);
    g_assert_nonnull (strstr (err, "warning: unknown key [vgicd] Mdoe ignored"));
    g_clear_pointer (&err, g_free);
  }
  {
    /* A FILE that is not there is an error, not "all defaults". */
    const char *args[] = { "--check-config", "/nonexistent/vgicd.conf", NULL };

    err = run_check (&status, args);
    g_assert_cmpint (status, ==, 1);
    g_assert_nonnull (strstr (err, "/nonexistent/vgicd.conf: error: cannot read"));
  }
}

/* The files the package ships pass the check. */
static void
test_shipped_files_pass (void)
{
  const char *src = g_getenv ("SRCDIR");
  g_autofree char *conf = g_build_filename (src, "data", "vgicd.conf", NULL);
  g_autofree char *vms = g_build_filename (src, "data", "vms.conf", NULL);
  const char *args[] = { "--check-config", conf, vms, NULL };
  g_autofree char *err = NULL;
  int status;

  err = run_check (&status, args);
  g_assert_cmpint (status, ==, 0);
  g_assert_cmpstr (err, ==, "");
}

int
main (int argc, char **argv)
{
  int ret;

  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("vgicd-check-XXXXXX", NULL);
  g_assert_nonnull (tmpdir);

  g_test_add_func ("/check/vgicd-conf-lines", test_vgicd_conf_lines);
  g_test_add_func ("/check/load-names-line", test_load_names_line);
  g_test_add_func ("/check/dropins", test_dropins);
  g_test_add_func ("/check/vms-conf", test_vms_conf);
  g_test_add_func ("/check/vgicd-binary", test_vgicd_binary);
  g_test_add_func ("/check/shipped-files", test_shipped_files_pass);
  ret = g_test_run ();
  test_remove_tree (tmpdir);
  g_free (tmpdir);
  return ret;
}
