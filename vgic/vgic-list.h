/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-list.h - VgicList, a list of vGIC accesses: what a plan is, what a
 * step lays into the window, what a save read.
 *
 * The entries are contiguous struct kvm_vgic_batch_entry, so a list is
 * handed to the kernel's batch group (or to the window) as it is.  A list
 * may start with guard reads: conditions on values read from the
 * destination before a restore writes anything, carried with the entries
 * they belong to rather than in an array beside them.
 *
 * Lists are reference-counted: a session keeps a VM's plans across
 * operations and lays the same list into several steps.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "vgicd/kvm-vgic-batch.h"

typedef struct kvm_vgic_batch_entry VgicEntry;

/**
 * VgicGuard - a condition on one value read from the destination before a
 * restore writes anything: min <= (value & mask) <= max.  A mask of 0 is no
 * condition (the read is made because QEMU makes it).
 */
typedef struct {
  guint64 mask, min, max;
} VgicGuard;

/**
 * VgicList - accesses in the order they run
 * @entries: @len accesses, contiguous
 * @len: their number
 * @n_guards: @entries[0 .. @n_guards) are guard reads, @guards[i] the
 *	condition on the value of @entries[i]; 0 for a list without guards
 * @guards: @n_guards conditions, or NULL
 */
typedef struct {
  VgicEntry *entries;
  guint len;
  guint n_guards;
  VgicGuard *guards;
  /*< private >*/
  guint alloc;
  gint ref;
} VgicList;

/* vgic_list_new() - an empty list with room for @reserve entries */
VgicList *vgic_list_new (guint reserve);

/* vgic_list_new_from() - a list of a copy of @n @entries */
VgicList *vgic_list_new_from (const VgicEntry *entries, guint n);

VgicList *vgic_list_ref (VgicList *list);
void vgic_list_unref (VgicList *list);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VgicList, vgic_list_unref)

/* vgic_list_grow() - make room for @need entries (vgic_list_add()'s slow path) */
void vgic_list_grow (VgicList *list, guint need);

/*
 * vgic_list_add() - append one access.  Inline: a save or a restore of a
 * large VM lays out about ten thousand entries inside the downtime, so each
 * is written in place rather than by a library call apiece.
 */
static inline void
vgic_list_add (VgicList *list, uint32_t group, uint64_t attr, uint64_t value)
{
  if (G_UNLIKELY (list->len == list->alloc))
    vgic_list_grow (list, list->len + 1);
  list->entries[list->len++] =
    (VgicEntry) { .group = group, .reserved = 0, .attr = attr, .value = value };
}

/* vgic_list_append() - append @n entries (their values and errors too) */
void vgic_list_append (VgicList *list, const VgicEntry *entries, guint n);

/* vgic_list_truncate() - keep the first @len entries (and guards among them) */
void vgic_list_truncate (VgicList *list, guint len);

/* vgic_list_set_guards() - the first @n entries are guard reads with @guards */
void vgic_list_set_guards (VgicList *list, const VgicGuard *guards, guint n);

/**
 * vgic_list_same_accesses() - do @a and @b access the same registers in the
 * same order (values and errors aside)?
 */
gboolean vgic_list_same_accesses (const VgicList *a, const VgicList *b);
