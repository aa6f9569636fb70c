/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicctl-exposition.c - `vgicctl metrics --json`: the Prometheus text
 * exposition vgicd answers (GetMetrics, what MetricsTextfile= writes)
 * parsed into families of samples, so that a script reads figures rather
 * than scraping text.  Only what the text format 0.0.4 has: # HELP and
 * # TYPE lines, and samples NAME[{LABEL="VALUE",...}] VALUE [TIMESTAMP].
 */
#include <string.h>

#include "vgicctl-json.h"

typedef struct {
  char *name;
  char *type;
  char *help;
  JsonArray *samples;
} Family;

static void
family_free (gpointer data)
{
  Family *f = data;

  g_free (f->name);
  g_free (f->type);
  g_free (f->help);
  json_array_unref (f->samples);
  g_free (f);
}

typedef struct {
  GPtrArray *order;	/* Family *, in the text's order */
  GHashTable *by_name;	/* name -> Family * (borrowed from order) */
} Families;

static Family *
family_get (Families *fs, const char *name)
{
  Family *f = g_hash_table_lookup (fs->by_name, name);

  if (!f)
    {
      f = g_new0 (Family, 1);
      f->name = g_strdup (name);
      f->type = g_strdup ("untyped");
      f->help = g_strdup ("");
      f->samples = json_array_new ();
      g_ptr_array_add (fs->order, f);
      g_hash_table_insert (fs->by_name, f->name, f);
    }
  return f;
}

/* The family a sample belongs to: its own name's, or for the series of a
 * histogram or summary (_bucket, _sum, _count) the name without the
 * suffix, when that family was declared. */
static Family *
family_of_sample (Families *fs, const char *sample)
{
  static const char *const suffixes[] = { "_bucket", "_sum", "_count", NULL };
  Family *f = g_hash_table_lookup (fs->by_name, sample);

  if (f)
    return f;
  for (guint i = 0; suffixes[i]; i++)
    if (g_str_has_suffix (sample, suffixes[i]))
      {
        g_autofree char *base = g_strndup (sample, strlen (sample) - strlen (suffixes[i]));

        f = g_hash_table_lookup (fs->by_name, base);
        if (f && (g_str_equal (f->type, "histogram") || g_str_equal (f->type, "summary")))
          return f;
      }
  return family_get (fs, sample);
}

/* The # HELP text's escapes: \\ and \n. */
static char *
unescape_help (const char *s)
{
  GString *out = g_string_new (NULL);

  for (; *s; s++)
    if (s[0] == '\\' && s[1] == 'n')
      g_string_append_c (out, '\n'), s++;
    else if (s[0] == '\\' && s[1] == '\\')
      g_string_append_c (out, '\\'), s++;
    else
      g_string_append_c (out, *s);
  return g_string_free (out, FALSE);
}

static void
comment (Families *fs, char *line)
{
  /* "# HELP name text" or "# TYPE name type"; other comments are no
   * metric's. */
  g_auto (GStrv) parts = g_strsplit (g_strchug (line + 1), " ", 3);
  Family *f;

  if (g_strv_length (parts) < 3 ||
      (!g_str_equal (parts[0], "HELP") && !g_str_equal (parts[0], "TYPE")))
    return;
  f = family_get (fs, parts[1]);
  if (g_str_equal (parts[0], "HELP"))
    {
      g_free (f->help);
      f->help = unescape_help (parts[2]);
    }
  else
    {
      g_free (f->type);
      f->type = g_strdup (g_strstrip (parts[2]));
    }
}

static gboolean
is_name_char (char c, gboolean first)
{
  return g_ascii_isalpha (c) || c == '_' || c == ':' || (!first && g_ascii_isdigit (c));
}

/* {label="value",...}: *p at the brace, left after the closing one */
static gboolean
labels (const char **p, JsonObject *o)
{
  const char *s = *p + 1;

  for (;;)
    {
      const char *start;
      g_autofree char *name = NULL;
      GString *value;

      while (*s == ' ' || *s == ',')
        s++;
      if (*s == '}')
        break;
      start = s;
      while (is_name_char (*s, s == start))
        s++;
      if (s == start || *s != '=' || s[1] != '"')
        return FALSE;
      name = g_strndup (start, s - start);
      s += 2;
      value = g_string_new (NULL);
      for (; *s && *s != '"'; s++)
        {
          if (*s == '\\' && s[1])
            {
              s++;
              g_string_append_c (value, *s == 'n' ? '\n' : *s);
            }
          else
            g_string_append_c (value, *s);
        }
      if (*s != '"')
        {
          g_string_free (value, TRUE);
          return FALSE;
        }
      s++;
      json_object_set_string_member (o, name, value->str);
      g_string_free (value, TRUE);
    }
  *p = s + 1;
  return TRUE;
}

/* A sample's value: an integer stays one, +Inf, -Inf and NaN are strings
 * (JSON has no word for them). */
static JsonNode *
value_node (const char *token)
{
  gint64 i;
  double d;
  char *end;

  if (g_str_equal (token, "+Inf") || g_str_equal (token, "-Inf") ||
      g_str_equal (token, "NaN"))
    return json_node_init_string (json_node_alloc (), token);
  if (g_ascii_string_to_signed (token, 10, G_MININT64, G_MAXINT64, &i, NULL))
    return json_node_init_int (json_node_alloc (), i);
  d = g_ascii_strtod (token, &end);
  if (end == token || *end)
    return NULL;
  return json_node_init_double (json_node_alloc (), d);
}

static gboolean
sample (Families *fs, char *line)
{
  const char *p = line;
  g_autofree char *name = NULL;
  g_autoptr (JsonObject) labels_o = json_object_new ();
  g_autoptr (JsonObject) s = json_object_new ();
  g_auto (GStrv) rest = NULL;
  JsonNode *value;

  while (is_name_char (*p, p == line))
    p++;
  if (p == line)
    return FALSE;
  name = g_strndup (line, p - line);
  if (*p == '{' && !labels (&p, labels_o))
    return FALSE;
  rest = g_strsplit_set (g_strchug (line + (p - line)), " \t", 0);
  if (!rest[0] || !(value = value_node (rest[0])))
    return FALSE;
  json_object_set_string_member (s, "name", name);
  json_object_set_object_member (s, "labels", g_steal_pointer (&labels_o));
  json_object_set_member (s, "value", value);
  json_array_add_object_element (family_of_sample (fs, name)->samples, g_steal_pointer (&s));
  return TRUE;
}

/* vgicctl_json_from_exposition() - see vgicctl-json.h */
JsonNode *
vgicctl_json_from_exposition (const char *text, GError **error)
{
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  g_autoptr (GPtrArray) order = g_ptr_array_new_with_free_func (family_free);
  g_autoptr (GHashTable) by_name = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr (JsonArray) out = json_array_new ();
  Families fs = { order, by_name };

  for (guint i = 0; lines[i]; i++)
    {
      char *line = g_strstrip (lines[i]);

      if (!*line)
        continue;
      if (*line == '#')
        comment (&fs, line);
      else if (!sample (&fs, line))
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                       "line %u of vgicd's metrics is not a sample: %s", i + 1, line);
          return NULL;
        }
    }
  for (guint i = 0; i < order->len; i++)
    {
      Family *f = order->pdata[i];
      g_autoptr (JsonObject) o = json_object_new ();

      json_object_set_string_member (o, "name", f->name);
      json_object_set_string_member (o, "type", f->type);
      json_object_set_string_member (o, "help", f->help);
      json_object_set_array_member (o, "samples", json_array_ref (f->samples));
      json_array_add_object_element (out, g_steal_pointer (&o));
    }
  return json_node_init_array (json_node_alloc (), out);
}
