/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicctl-json.c - vgicctl's --json output: GVariant answers as json-glib
 * nodes, and the printer (json-glib's generator, which does the escaping).
 *
 * The walk from GVariant is ours rather than json_gvariant_serialize()'s
 * because the schema must not depend on json-glib's choices: a histogram's
 * +Inf bound has to become null (json-glib would print "inf", which is no
 * JSON), and a string-keyed dictionary must be an object whatever its
 * value type.
 */
#include "vgicctl-json.h"

#include <math.h>
#include <stdio.h>

static gboolean
is_string_keyed_dict (GVariant *value)
{
  const GVariantType *type = g_variant_get_type (value);

  return g_variant_type_is_array (type) &&
         g_variant_type_is_dict_entry (g_variant_type_element (type)) &&
         g_variant_type_equal (g_variant_type_key (g_variant_type_element (type)),
                               G_VARIANT_TYPE_STRING);
}

static JsonNode *
int_node (gint64 v)
{
  return json_node_init_int (json_node_alloc (), v);
}

/* vgicctl_json_from_variant() - see vgicctl-json.h */
JsonNode *
vgicctl_json_from_variant (GVariant *value)
{
  switch (g_variant_classify (value))
    {
    case G_VARIANT_CLASS_BOOLEAN:
      return json_node_init_boolean (json_node_alloc (), g_variant_get_boolean (value));
    case G_VARIANT_CLASS_BYTE:
      return int_node (g_variant_get_byte (value));
    case G_VARIANT_CLASS_INT16:
      return int_node (g_variant_get_int16 (value));
    case G_VARIANT_CLASS_UINT16:
      return int_node (g_variant_get_uint16 (value));
    case G_VARIANT_CLASS_INT32:
      return int_node (g_variant_get_int32 (value));
    case G_VARIANT_CLASS_UINT32:
      return int_node (g_variant_get_uint32 (value));
    case G_VARIANT_CLASS_INT64:
      return int_node (g_variant_get_int64 (value));
    case G_VARIANT_CLASS_UINT64:
      /* json-glib's integers are signed: the counters stay far below
       * 2^63, and a value above it is clamped rather than turned negative. */
      return int_node ((gint64) MIN (g_variant_get_uint64 (value), (guint64) G_MAXINT64));
    case G_VARIANT_CLASS_DOUBLE:
      {
        double d = g_variant_get_double (value);

        if (!isfinite (d))
          return json_node_init_null (json_node_alloc ());
        return json_node_init_double (json_node_alloc (), d);
      }
    case G_VARIANT_CLASS_STRING:
    case G_VARIANT_CLASS_OBJECT_PATH:
    case G_VARIANT_CLASS_SIGNATURE:
      return json_node_init_string (json_node_alloc (), g_variant_get_string (value, NULL));
    case G_VARIANT_CLASS_VARIANT:
      {
        g_autoptr (GVariant) inner = g_variant_get_variant (value);

        return vgicctl_json_from_variant (inner);
      }
    case G_VARIANT_CLASS_MAYBE:
      {
        g_autoptr (GVariant) inner = g_variant_get_maybe (value);

        return inner ? vgicctl_json_from_variant (inner)
                     : json_node_init_null (json_node_alloc ());
      }
    case G_VARIANT_CLASS_ARRAY:
    case G_VARIANT_CLASS_TUPLE:
      {
        gsize n = g_variant_n_children (value);

        if (is_string_keyed_dict (value))
          {
            g_autoptr (JsonObject) o = json_object_new ();

            for (gsize i = 0; i < n; i++)
              {
                g_autoptr (GVariant) child = g_variant_get_child_value (value, i);
                g_autoptr (GVariant) key = g_variant_get_child_value (child, 0);
                g_autoptr (GVariant) val = g_variant_get_child_value (child, 1);

                json_object_set_member (o, g_variant_get_string (key, NULL),
                                        vgicctl_json_from_variant (val));
              }
            return json_node_init_object (json_node_alloc (), o);
          }
        else
          {
            g_autoptr (JsonArray) a = json_array_sized_new (n);

            for (gsize i = 0; i < n; i++)
              {
                g_autoptr (GVariant) child = g_variant_get_child_value (value, i);

                json_array_add_element (a, vgicctl_json_from_variant (child));
              }
            return json_node_init_array (json_node_alloc (), a);
          }
      }
    case G_VARIANT_CLASS_HANDLE:
    case G_VARIANT_CLASS_DICT_ENTRY:
    default:
      /* Manager1 sends neither; null rather than a guess. */
      return json_node_init_null (json_node_alloc ());
    }
}

/* vgicctl_json_print() - see vgicctl-json.h */
void
vgicctl_json_print (JsonNode *node, VgicctlJson format)
{
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autofree char *text = NULL;

  json_generator_set_root (gen, node);
  json_generator_set_pretty (gen, format == VGICCTL_JSON_PRETTY);
  json_generator_set_indent (gen, 2);
  text = json_generator_to_data (gen, NULL);
  printf ("%s\n", text);
}

void
vgicctl_json_print_builder (JsonBuilder *b, VgicctlJson format)
{
  g_autoptr (JsonNode) root = json_builder_get_root (b);

  vgicctl_json_print (root, format);
}
