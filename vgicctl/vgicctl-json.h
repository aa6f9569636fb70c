/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicctl-json.h - print the D-Bus answers of org.vgicd.Manager1 as JSON for
 * scripts (`vgicctl stats --json`, `vgicctl sessions --json`).
 */
#pragma once

#include <glib.h>

/**
 * vgicctl_json_append() - append @value to @out as JSON
 *
 * Dictionaries (a{sv}, a{s*}) become objects, other arrays and tuples
 * arrays, integers numbers, booleans true/false, strings (and object paths)
 * strings with JSON escaping; a variant is unwrapped.  Doubles that are not
 * finite, and anything else JSON has no word for, become null.
 */
void vgicctl_json_append (GString *out, GVariant *value);
