/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicctl-json.h - vgicctl's --json output, through json-glib: the D-Bus
 * answers of org.vgicd.Manager1 turned into JSON nodes, and the printer
 * that writes a node in the format --json asked for.
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

#include "vgicctl.h"

/**
 * vgicctl_json_from_variant() - @value as a JSON node
 *
 * Dictionaries keyed by strings (a{sv}, a{s*}) become objects in their
 * order, other arrays and tuples arrays, integers numbers, booleans
 * true/false, strings (and object paths) strings; a variant is unwrapped,
 * an empty maybe is null.  A double that is not finite (a histogram's
 * +Inf bound) becomes null: JSON has no word for it.
 */
JsonNode *vgicctl_json_from_variant (GVariant *value);

/* vgicctl_json_print() - @node on standard output in @format, one newline
 * after it; @format is never VGICCTL_JSON_NONE */
void vgicctl_json_print (JsonNode *node, VgicctlJson format);

/* vgicctl_json_print_builder() - the root of @b, printed as above */
void vgicctl_json_print_builder (JsonBuilder *b, VgicctlJson format);

/**
 * vgicctl_json_from_exposition() - the Prometheus text exposition (what
 * GetMetrics answers) as an array of families, each
 * {"name", "type", "help", "samples": [{"name", "labels": {}, "value"}]},
 * in the text's order; a sample whose family has no # TYPE or # HELP line
 * gets a family of its own with "untyped" and "".  A value is a number,
 * or the string "+Inf", "-Inf" or "NaN".  Lines that are no sample (other
 * comments, blank lines) are skipped; a sample line that cannot be parsed
 * sets @error (vgicd's text is always well-formed; this is a check).
 */
JsonNode *vgicctl_json_from_exposition (const char *text, GError **error);
