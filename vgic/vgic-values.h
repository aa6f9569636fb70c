/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-values.h - a set of register values keyed by (group, attr): what a
 * save round read, or what a state record carries.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "vgic-list.h"

typedef struct _VgicValues VgicValues;

/**
 * vgic_values_new() - index @n accesses by (group, attr)
 * @entries: accesses with their values (error fields are ignored)
 * @n: number of entries
 * @error: set if an access appears twice, or if a 32-bit register carries a
 *	value with bits above 31 (only CPU_SYSREGS values are 64-bit)
 *
 * Return: the set, or NULL with @error set.
 */
VgicValues *vgic_values_new (const VgicEntry *entries,
                             gsize n, GError **error);
/**
 * vgic_values_from_reads() - index what a save read, where one register may
 *	have been read more than once
 * @entries: the reads, with their values
 * @n: number of entries
 * @error: set if two reads of one register disagree (the VM was not paused),
 *	or for a 32-bit register with high bits set
 *
 * QEMU 10.0 reads GICD_IROUTER at 0x6000 + 4n and 0x6000 + 4n + 4 for each
 * SPI n, so the "hi" word of IRQ n is the "lo" word of IRQ n + 1: a save
 * reads S - 1 offsets twice.  The state keeps one value per register; a
 * restore writes it at both places, as QEMU does.
 *
 * Return: the set, or NULL with @error set.
 */
VgicValues *vgic_values_from_reads (const VgicEntry *entries,
                                    gsize n, GError **error);
void vgic_values_free (VgicValues *values);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VgicValues, vgic_values_free)

/**
 * vgic_values_lookup() - find the value of one access
 * Return: TRUE and *@value set when present.
 */
gboolean vgic_values_lookup (const VgicValues *values, uint32_t group,
                             uint64_t attr, uint64_t *value);

/**
 * vgic_values_get() - like vgic_values_lookup(), but a missing register is an
 * error that names it
 */
gboolean vgic_values_get (const VgicValues *values, uint32_t group,
                          uint64_t attr, uint64_t *value, GError **error);

/* Number of values; the i-th in the order they were given (the first of
 * repeated reads); the i-th in (group, attr) order (sorted on first use). */
gsize vgic_values_size (const VgicValues *values);
const VgicEntry *vgic_values_at (const VgicValues *values, gsize i);
const VgicEntry *vgic_values_index (const VgicValues *values,
                                                      gsize i);
