/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * print-config-keys.c - print vgicd.conf's keys as the code defines them
 * (vgicd_config_keys()), and the "unknown key" message the parser really
 * logs, for check-config-doc.py: the documents are checked against the
 * code itself, never against a second list.
 *
 * Output, tab-separated, one line each:
 *   key NAME GROUP TYPE DEFAULT MIN MAX HELP   (DEFAULT "-" for none,
 *                                              MIN and MAX "-" unless a number)
 *   unknown-key-message MESSAGE                (FILE for the path, K for the key)
 */
#include <glib.h>
#include <glib/gstdio.h>

#include "vgicd-config.h"

static char *logged;

/* Keep the parser's message instead of printing it. */
static GLogWriterOutput
capture (GLogLevelFlags level, const GLogField *fields, gsize n_fields, gpointer data)
{
  for (gsize i = 0; i < n_fields; i++)
    if (g_str_equal (fields[i].key, "MESSAGE") && !logged)
      logged = fields[i].length < 0 ? g_strdup (fields[i].value)
                                    : g_strndup (fields[i].value, fields[i].length);
  return G_LOG_WRITER_HANDLED;
}

/* What vgicd logs for the key K in the file FILE. */
static char *
unknown_key_message (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("vgicd-keys-XXXXXX", &error);
  g_autofree char *path = NULL;
  g_autoptr (GString) message = NULL;
  VgicdConfig *config;

  g_assert_no_error (error);
  path = g_build_filename (dir, "FILE", NULL);
  g_file_set_contents (path, "[vgicd]\nK=1\n", -1, &error);
  g_assert_no_error (error);
  g_log_set_writer_func (capture, NULL, NULL);
  config = vgicd_config_load (path, &error);
  g_assert_no_error (error);
  vgicd_config_free (config);
  g_unlink (path);
  g_rmdir (dir);
  if (!logged)
    g_error ("vgicd_config_load() logged nothing for an unknown key");
  message = g_string_new (logged);
  g_string_replace (message, path, "FILE", 1);
  /* The key is on line 2 here; the documents say LINE. */
  g_string_replace (message, "FILE:2:", "FILE:LINE:", 1);
  return g_string_free (g_steal_pointer (&message), FALSE);
}

int
main (void)
{
  g_autofree char *message = NULL;
  gsize n;
  const VgicdConfigKey *keys = vgicd_config_keys (&n);

  for (gsize i = 0; i < n; i++)
    {
      const VgicdConfigKey *k = &keys[i];
      g_autofree char *min = k->type == VGICD_CONFIG_UINT ? g_strdup_printf ("%u", k->min)
                                                          : g_strdup ("-");
      g_autofree char *max = k->type == VGICD_CONFIG_UINT ? g_strdup_printf ("%u", k->max)
                                                          : g_strdup ("-");

      g_print ("key\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k->name, k->group,
               vgicd_config_type_to_string (k->type),
               k->default_value ? k->default_value : "-", min, max, k->help);
    }
  message = unknown_key_message ();
  g_print ("unknown-key-message\t%s\n", message);
  return 0;
}
