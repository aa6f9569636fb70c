/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * replay.c - run the fuzz target over a corpus without libFuzzer, so that
 * the normal (gcc) build checks every seed and every past finding on each
 * `meson test`.  Usage: replay DIR|FILE...
 *
 * Seeds named valid-* must decode and seeds named bad-* must not, so that a
 * format change that leaves the corpus stale fails here instead of quietly
 * turning every seed into noise (regenerate with gen-corpus).
 */
#include <glib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "vgic-record.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static gboolean
run_file (const char *path, guint *count)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *data = NULL;
  gsize len;

  if (!g_file_get_contents (path, &data, &len, &error))
    {
      fprintf (stderr, "replay: %s\n", error->message);
      return FALSE;
    }
  LLVMFuzzerTestOneInput ((const uint8_t *) data, len);
  (*count)++;

  g_autofree char *base = g_path_get_basename (path);
  gboolean want_valid = g_str_has_prefix (base, "valid-");
  gboolean want_bad = g_str_has_prefix (base, "bad-");
  g_autoptr (VgicRecord) record = NULL;

  if (!want_valid && !want_bad)
    return TRUE;		/* a finding, or a grown corpus entry */
  record = vgic_record_decode ((const guint8 *) data, len, &error);
  if (want_valid && !record)
    {
      fprintf (stderr, "replay: seed %s no longer decodes (%s): regenerate the "
               "corpus with gen-corpus\n", base, error->message);
      return FALSE;
    }
  if (want_bad && record)
    {
      fprintf (stderr, "replay: seed %s decodes but should be rejected\n", base);
      return FALSE;
    }
  return TRUE;
}

int
main (int argc, char **argv)
{
  guint count = 0;

  for (int i = 1; i < argc; i++)
    {
      g_autoptr (GDir) dir = NULL;
      const char *name;

      if (!g_file_test (argv[i], G_FILE_TEST_IS_DIR))
        {
          if (!run_file (argv[i], &count))
            return 1;
          continue;
        }
      dir = g_dir_open (argv[i], 0, NULL);
      while (dir && (name = g_dir_read_name (dir)))
        {
          g_autofree char *path = g_build_filename (argv[i], name, NULL);

          if (g_file_test (path, G_FILE_TEST_IS_REGULAR) && !run_file (path, &count))
            return 1;
        }
    }
  printf ("replayed %u inputs\n", count);
  /* An empty corpus would make this test pass while checking nothing. */
  return count > 0 ? 0 : 1;
}
