/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicctl-json.c - GVariant to JSON, for vgicctl's --json output.
 *
 * g_variant_print() is not JSON (it writes 'strings', uint64 prefixes, and
 * <variants>), and json-glib is one more dependency for two commands, so
 * this prints the few types the Manager1 API uses by hand.
 */
#include "vgicctl-json.h"

#include <math.h>

static void
append_string (GString *out, const char *s)
{
  g_string_append_c (out, '"');
  /* D-Bus strings are valid UTF-8, which JSON takes as is; only the quote,
   * the backslash and control characters need escaping. */
  for (const guchar *p = (const guchar *) s; *p; p++)
    switch (*p)
      {
      case '"': g_string_append (out, "\\\""); break;
      case '\\': g_string_append (out, "\\\\"); break;
      case '\b': g_string_append (out, "\\b"); break;
      case '\f': g_string_append (out, "\\f"); break;
      case '\n': g_string_append (out, "\\n"); break;
      case '\r': g_string_append (out, "\\r"); break;
      case '\t': g_string_append (out, "\\t"); break;
      default:
        if (*p < 0x20 || *p == 0x7f)
          g_string_append_printf (out, "\\u%04x", *p);
        else
          g_string_append_c (out, (char) *p);
      }
  g_string_append_c (out, '"');
}

static gboolean
is_string_keyed_dict (GVariant *value)
{
  const GVariantType *type = g_variant_get_type (value);

  return g_variant_type_is_array (type) &&
         g_variant_type_is_dict_entry (g_variant_type_element (type)) &&
         g_variant_type_equal (g_variant_type_key (g_variant_type_element (type)),
                               G_VARIANT_TYPE_STRING);
}

/* vgicctl_json_append() - see vgicctl-json.h */
void
vgicctl_json_append (GString *out, GVariant *value)
{
  switch (g_variant_classify (value))
    {
    case G_VARIANT_CLASS_BOOLEAN:
      g_string_append (out, g_variant_get_boolean (value) ? "true" : "false");
      return;
    case G_VARIANT_CLASS_BYTE:
      g_string_append_printf (out, "%u", g_variant_get_byte (value));
      return;
    case G_VARIANT_CLASS_INT16:
      g_string_append_printf (out, "%d", g_variant_get_int16 (value));
      return;
    case G_VARIANT_CLASS_UINT16:
      g_string_append_printf (out, "%u", g_variant_get_uint16 (value));
      return;
    case G_VARIANT_CLASS_INT32:
      g_string_append_printf (out, "%d", g_variant_get_int32 (value));
      return;
    case G_VARIANT_CLASS_UINT32:
      g_string_append_printf (out, "%u", g_variant_get_uint32 (value));
      return;
    case G_VARIANT_CLASS_INT64:
      g_string_append_printf (out, "%" G_GINT64_FORMAT, g_variant_get_int64 (value));
      return;
    case G_VARIANT_CLASS_UINT64:
      g_string_append_printf (out, "%" G_GUINT64_FORMAT, g_variant_get_uint64 (value));
      return;
    case G_VARIANT_CLASS_DOUBLE:
      {
        double d = g_variant_get_double (value);
        char buf[G_ASCII_DTOSTR_BUF_SIZE];

        if (isfinite (d))
          g_string_append (out, g_ascii_dtostr (buf, sizeof buf, d));
        else
          g_string_append (out, "null");
        return;
      }
    case G_VARIANT_CLASS_STRING:
    case G_VARIANT_CLASS_OBJECT_PATH:
    case G_VARIANT_CLASS_SIGNATURE:
      append_string (out, g_variant_get_string (value, NULL));
      return;
    case G_VARIANT_CLASS_VARIANT:
      {
        g_autoptr (GVariant) inner = g_variant_get_variant (value);

        vgicctl_json_append (out, inner);
        return;
      }
    case G_VARIANT_CLASS_ARRAY:
    case G_VARIANT_CLASS_TUPLE:
      {
        gboolean dict = is_string_keyed_dict (value);
        gsize n = g_variant_n_children (value);

        g_string_append_c (out, dict ? '{' : '[');
        for (gsize i = 0; i < n; i++)
          {
            g_autoptr (GVariant) child = g_variant_get_child_value (value, i);

            if (i)
              g_string_append (out, ", ");
            if (dict)
              {
                g_autoptr (GVariant) key = g_variant_get_child_value (child, 0);
                g_autoptr (GVariant) val = g_variant_get_child_value (child, 1);

                append_string (out, g_variant_get_string (key, NULL));
                g_string_append (out, ": ");
                vgicctl_json_append (out, val);
              }
            else
              vgicctl_json_append (out, child);
          }
        g_string_append_c (out, dict ? '}' : ']');
        return;
      }
    case G_VARIANT_CLASS_MAYBE:
      {
        g_autoptr (GVariant) inner = g_variant_get_maybe (value);

        if (inner)
          vgicctl_json_append (out, inner);
        else
          g_string_append (out, "null");
        return;
      }
    case G_VARIANT_CLASS_HANDLE:
    case G_VARIANT_CLASS_DICT_ENTRY:
    default:
      g_string_append (out, "null");
      return;
    }
}
