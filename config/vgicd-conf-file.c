/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-conf-file.c - a key file read with its line numbers, and the
 * problems found in it (see vgicd-conf-file.h).
 *
 * Theory of operation: GKeyFile refuses a whole file for one bad line and
 * keeps no line numbers, so neither the operator nor a check can be told
 * where a problem is.  Here each line is classified first (blank or
 * comment, group header, key line) and each header or key line is given to
 * GKeyFile alone, which keeps GKeyFile's own syntax; a line it refuses is
 * reported at its line and left out, and the lines that parsed are then
 * loaded together into one GKeyFile, from which the callers read values as
 * before.  Beside it, the line of every group header and of the last line
 * that sets each key (GKeyFile keeps the last of a repeated key, and merges
 * a repeated group), so that a value refused later is reported at its line.
 */
#ifndef G_LOG_DOMAIN
#define G_LOG_DOMAIN "vgicd"
#endif

#include "vgicd-conf-file.h"

#include "vgicd-catalog.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

struct _VgicdConfFile {
  char *path;
  GKeyFile *keys;
  GPtrArray *groups;		/* every header's group, in file order */
  GArray *group_lines;		/* guint, the line of each */
  GHashTable *key_lines;	/* "group\nkey" -> GUINT_TO_POINTER (line) */
};

static void
diag_free (gpointer data)
{
  VgicdDiag *d = data;

  g_free (d->file);
  g_free (d->group);
  g_free (d->key);
  g_free (d->message);
  g_free (d);
}

VgicdDiags *
vgicd_diags_new (void)
{
  VgicdDiags *diags = g_new0 (VgicdDiags, 1);

  diags->items = g_ptr_array_new_with_free_func (diag_free);
  return diags;
}

void
vgicd_diags_free (VgicdDiags *diags)
{
  if (!diags)
    return;
  g_ptr_array_unref (diags->items);
  g_free (diags);
}

void
vgicd_diags_add (VgicdDiags *diags, VgicdDiagLevel level, const char *file, guint line,
                 const char *group, const char *key, const char *format, ...)
{
  VgicdDiag *d = g_new0 (VgicdDiag, 1);
  va_list ap;

  d->level = level;
  d->file = g_strdup (file);
  d->line = line;
  d->group = g_strdup (group);
  d->key = g_strdup (key);
  va_start (ap, format);
  d->message = g_strdup_vprintf (format, ap);
  va_end (ap);
  g_ptr_array_add (diags->items, d);
  if (level == VGICD_DIAG_ERROR)
    diags->errors++;
  else
    diags->warnings++;
}

static gint
compare_diags (gconstpointer a, gconstpointer b, gpointer data)
{
  const VgicdDiag *x = *(const VgicdDiag *const *) a, *y = *(const VgicdDiag *const *) b;
  GHashTable *order = data;
  guint fx = GPOINTER_TO_UINT (g_hash_table_lookup (order, x->file));
  guint fy = GPOINTER_TO_UINT (g_hash_table_lookup (order, y->file));

  if (fx != fy)
    return fx < fy ? -1 : 1;
  return x->line < y->line ? -1 : x->line > y->line;
}

void
vgicd_diags_sort (VgicdDiags *diags)
{
  g_autoptr (GHashTable) order = g_hash_table_new (g_str_hash, g_str_equal);

  /* Files in the order they were read; lines in order within each (a
   * file's problems are found in passes: syntax, groups, keys, values).
   * GLib's sort is stable: problems of one line keep their order. */
  for (guint i = 0; i < diags->items->len; i++)
    {
      const VgicdDiag *d = diags->items->pdata[i];

      if (!g_hash_table_contains (order, d->file))
        g_hash_table_insert (order, d->file, GUINT_TO_POINTER (g_hash_table_size (order)));
    }
  g_ptr_array_sort_with_data (diags->items, compare_diags, order);
}

const char *
vgicd_diag_level_to_string (VgicdDiagLevel level)
{
  return level == VGICD_DIAG_ERROR ? "error" : "warning";
}

/* "FILE:LINE: [LEVEL: ]MESSAGE[SUFFIX]", the one shape of a problem's line
 * (no LINE for a file that could not be read) */
static char *
located (const VgicdDiag *d, gboolean with_level, const char *suffix)
{
  g_autofree char *where = d->line ? g_strdup_printf ("%s:%u", d->file, d->line)
                                   : g_strdup (d->file);

  return g_strdup_printf ("%s: %s%s%s%s", where,
                          with_level ? vgicd_diag_level_to_string (d->level) : "",
                          with_level ? ": " : "", d->message, suffix);
}

char *
vgicd_diag_to_string (const VgicdDiag *d)
{
  return located (d, TRUE, "");
}

void
vgicd_diags_log (VgicdDiags *diags)
{
  vgicd_diags_sort (diags);
  for (guint i = 0; i < diags->items->len; i++)
    {
      const VgicdDiag *d = diags->items->pdata[i];
      g_autofree char *line = g_strdup_printf ("%u", d->line);
      /* No level word in MESSAGE: the journal's priority says it. */
      g_autofree char *message = located (d, FALSE, "");

      g_log_structured (G_LOG_DOMAIN,
                        d->level == VGICD_DIAG_ERROR ? G_LOG_LEVEL_WARNING : G_LOG_LEVEL_MESSAGE,
                        "MESSAGE_ID", VGICD_MESSAGE_CONFIG_PROBLEM,
                        "VGICD_CONFIG_FILE", d->file,
                        "VGICD_CONFIG_LINE", line,
                        "VGICD_CONFIG_KEY", d->key ? d->key : "",
                        "MESSAGE", "%s", message);
    }
}

gboolean
vgicd_diags_set_error (const VgicdDiags *diags, GError **error)
{
  for (guint i = 0; i < diags->items->len; i++)
    {
      const VgicdDiag *d = diags->items->pdata[i];
      g_autofree char *message = NULL;

      if (d->level != VGICD_DIAG_ERROR)
        continue;
      message = located (d, FALSE, diags->errors > 1
                                   ? " (and more: vgicd --check-config lists them)" : "");
      g_set_error_literal (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, message);
      return FALSE;
    }
  return TRUE;
}

void
vgicd_conf_file_free (VgicdConfFile *file)
{
  if (!file)
    return;
  g_free (file->path);
  g_clear_pointer (&file->keys, g_key_file_free);
  g_clear_pointer (&file->groups, g_ptr_array_unref);
  g_clear_pointer (&file->group_lines, g_array_unref);
  g_clear_pointer (&file->key_lines, g_hash_table_unref);
  g_free (file);
}

/* parse_alone() - @text through GKeyFile on its own; the key file, or NULL */
static GKeyFile *
parse_alone (const char *text)
{
  g_autoptr (GKeyFile) k = g_key_file_new ();

  if (!g_key_file_load_from_data (k, text, -1, G_KEY_FILE_NONE, NULL))
    return NULL;
  return g_steal_pointer (&k);
}

/* printable() - @line as a message may quote it: escaped, and cut */
static char *
printable (const char *line)
{
  g_autofree char *cut = g_strndup (line, 80);

  g_strstrip (cut);
  return g_strescape (cut, NULL);
}

VgicdConfFile *
vgicd_conf_file_read (const char *path, const char *orphans, VgicdDiags *diags,
                      GError **error)
{
  g_autoptr (VgicdConfFile) file = g_new0 (VgicdConfFile, 1);
  g_autoptr (GString) text = g_string_new (NULL);
  g_autofree char *data = NULL;
  g_auto (GStrv) lines = NULL;
  GError *local = NULL;
  const char *group = NULL;	/* the group the lines are in (a header that parsed) */
  gboolean orphaned = FALSE;	/* under a header that did not parse */
  struct stat st;
  gsize len;

  if (stat (path, &st) == 0 && S_ISREG (st.st_mode) && st.st_size > VGICD_CONF_FILE_MAX)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "%s is %lld bytes, more than a configuration file may be (%d)", path,
                   (long long) st.st_size, VGICD_CONF_FILE_MAX);
      return NULL;
    }
  if (!g_file_get_contents (path, &data, &len, &local))
    {
      g_propagate_error (error, local);
      return NULL;
    }
  if (len > VGICD_CONF_FILE_MAX)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "%s is more than a configuration file may be (%d bytes)", path,
                   VGICD_CONF_FILE_MAX);
      return NULL;
    }
  if (memchr (data, '\0', len))
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "%s holds a NUL byte: it is not a text file", path);
      return NULL;
    }

  file->path = g_strdup (path);
  file->groups = g_ptr_array_new_null_terminated (0, g_free, TRUE);
  file->group_lines = g_array_new (FALSE, FALSE, sizeof (guint));
  file->key_lines = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);

  lines = g_strsplit (data, "\n", -1);
  for (guint i = 0; lines[i]; i++)
    {
      const char *l = lines[i] + strspn (lines[i], " \t\r\v\f");
      guint line = i + 1;

      if (*l == '\0' || *l == '#')
        continue;
      if (*l == '[')
        {
          g_autoptr (GKeyFile) alone = parse_alone (lines[i]);
          g_autofree char *start = alone ? g_key_file_get_start_group (alone) : NULL;

          if (!start)
            {
              g_autofree char *shown = printable (lines[i]);

              vgicd_diags_add (diags, VGICD_DIAG_ERROR, path, line, NULL, NULL,
                               "group header \"%s\" does not parse; it and the lines up "
                               "to the next group are %s", shown, orphans);
              group = NULL;
              orphaned = TRUE;
              continue;
            }
          g_ptr_array_add (file->groups, g_strdup (start));
          g_array_append_val (file->group_lines, line);
          group = file->groups->pdata[file->groups->len - 1];
          orphaned = FALSE;
          g_string_append_printf (text, "%s\n", lines[i]);
          continue;
        }
      if (orphaned)
        continue;	/* said once, at its header */
      if (!group)
        {
          g_autofree char *shown = printable (lines[i]);

          vgicd_diags_add (diags, VGICD_DIAG_ERROR, path, line, NULL, NULL,
                           "\"%s\" is outside any group; %s", shown, orphans);
          continue;
        }
      {
        g_autofree char *probe = g_strdup_printf ("[x]\n%s\n", lines[i]);
        g_autoptr (GKeyFile) alone = parse_alone (probe);
        g_auto (GStrv) keys = alone ? g_key_file_get_keys (alone, "x", NULL, NULL) : NULL;
        g_autofree char *where = NULL;
        gpointer before;

        if (!keys || !keys[0])
          {
            g_autofree char *shown = printable (lines[i]);

            vgicd_diags_add (diags, VGICD_DIAG_ERROR, path, line, group, NULL,
                             "[%s] \"%s\" is not KEY=VALUE, a [group] or a # comment",
                             group, shown);
            continue;
          }
        where = g_strdup_printf ("%s\n%s", group, keys[0]);
        if (g_hash_table_lookup_extended (file->key_lines, where, NULL, &before))
          vgicd_diags_add (diags, VGICD_DIAG_WARNING, path, line, group, keys[0],
                           "[%s] %s is set again (also on line %u); this line's value "
                           "applies", group, keys[0], GPOINTER_TO_UINT (before));
        g_hash_table_replace (file->key_lines, g_steal_pointer (&where),
                              GUINT_TO_POINTER (line));
        g_string_append_printf (text, "%s\n", lines[i]);
      }
    }

  file->keys = g_key_file_new ();
  if (!g_key_file_load_from_data (file->keys, text->str, text->len, G_KEY_FILE_NONE, &local))
    {
      /* Every line passed alone; together they should too.  If not, the
       * file is refused whole rather than read in part. */
      vgicd_diags_add (diags, VGICD_DIAG_ERROR, path, 0, NULL, NULL,
                       "does not parse as a whole: %s", local->message);
      g_clear_error (&local);
      g_key_file_free (file->keys);
      file->keys = g_key_file_new ();
    }
  return g_steal_pointer (&file);
}

const char *
vgicd_conf_file_path (const VgicdConfFile *file)
{
  return file->path;
}

GKeyFile *
vgicd_conf_file_keys (const VgicdConfFile *file)
{
  return file->keys;
}

const char *const *
vgicd_conf_file_groups (const VgicdConfFile *file, const guint **lines)
{
  static const char *const none[] = { NULL };

  /* An empty array may have no storage yet, NULL-terminated or not. */
  if (!file->groups->len)
    {
      if (lines)
        *lines = NULL;
      return none;
    }
  if (lines)
    *lines = (const guint *) (gpointer) file->group_lines->data;
  return (const char *const *) file->groups->pdata;
}

guint
vgicd_conf_file_group_line (const VgicdConfFile *file, const char *group)
{
  for (guint i = 0; i < file->groups->len; i++)
    if (g_str_equal (file->groups->pdata[i], group))
      return g_array_index (file->group_lines, guint, i);
  return 0;
}

guint
vgicd_conf_file_key_line (const VgicdConfFile *file, const char *group, const char *key)
{
  g_autofree char *where = g_strdup_printf ("%s\n%s", group, key);

  return GPOINTER_TO_UINT (g_hash_table_lookup (file->key_lines, where));
}

/* distance() - Levenshtein distance of @a and @b, case ignored, or a
 * number above 2 as soon as it is known to be */
static guint
distance (const char *a, const char *b)
{
  gsize la = strlen (a), lb = strlen (b);
  g_autofree guint *row = NULL;

  if (la > 64 || lb > 64 || (la > lb ? la - lb : lb - la) > 2)
    return 3;
  row = g_new (guint, lb + 1);
  for (gsize j = 0; j <= lb; j++)
    row[j] = j;
  for (gsize i = 1; i <= la; i++)
    {
      guint diag = row[0];

      row[0] = i;
      for (gsize j = 1; j <= lb; j++)
        {
          guint up = row[j];
          guint cost = g_ascii_tolower (a[i - 1]) != g_ascii_tolower (b[j - 1]);

          row[j] = MIN (MIN (row[j] + 1, row[j - 1] + 1), diag + cost);
          diag = up;
        }
    }
  return row[lb];
}

const char *
vgicd_conf_closest (const char *typo, const char *const *names)
{
  const char *best = NULL;
  guint best_d = 3;

  for (guint i = 0; names[i]; i++)
    {
      guint d = distance (typo, names[i]);

      /* A distance as long as the name is any other word ("K" for "Mode"). */
      if (d < best_d && d < strlen (names[i]))
        {
          best = names[i];
          best_d = d;
        }
    }
  return best;
}

void
vgicd_conf_check_keys (const VgicdConfFile *file, const char *group,
                       const char *const *known, VgicdDiags *diags)
{
  g_auto (GStrv) keys = g_key_file_get_keys (file->keys, group, NULL, NULL);
  g_autofree char *names = g_strjoinv (", ", (char **) known);

  for (guint i = 0; keys && keys[i]; i++)
    {
      const char *close;

      if (g_strv_contains (known, keys[i]))
        continue;
      close = vgicd_conf_closest (keys[i], known);
      if (close)
        vgicd_diags_add (diags, VGICD_DIAG_WARNING, file->path,
                         vgicd_conf_file_key_line (file, group, keys[i]), group, keys[i],
                         "unknown key [%s] %s ignored; did you mean %s?", group, keys[i],
                         close);
      else
        vgicd_diags_add (diags, VGICD_DIAG_WARNING, file->path,
                         vgicd_conf_file_key_line (file, group, keys[i]), group, keys[i],
                         "unknown key [%s] %s ignored (known: %s)", group, keys[i], names);
    }
}
