/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* vgic-list.c - lists of vGIC accesses (see vgic-list.h). */
#include "vgic-list.h"

#include <string.h>

VgicList *
vgic_list_new (guint reserve)
{
  VgicList *list = g_new0 (VgicList, 1);

  list->ref = 1;
  list->alloc = MAX (reserve, 1);
  list->entries = g_new (VgicEntry, list->alloc);
  return list;
}

VgicList *
vgic_list_new_from (const VgicEntry *entries, guint n)
{
  VgicList *list = vgic_list_new (n);

  vgic_list_append (list, entries, n);
  return list;
}

VgicList *
vgic_list_ref (VgicList *list)
{
  g_atomic_int_inc (&list->ref);
  return list;
}

void
vgic_list_unref (VgicList *list)
{
  if (!list || !g_atomic_int_dec_and_test (&list->ref))
    return;
  g_free (list->entries);
  g_free (list->guards);
  g_free (list);
}

void
vgic_list_grow (VgicList *list, guint need)
{
  guint alloc = list->alloc;

  if (need <= alloc)
    return;
  while (alloc < need)
    alloc = alloc > G_MAXUINT / 2 ? need : 2 * alloc;
  list->entries = g_renew (VgicEntry, list->entries, alloc);
  list->alloc = alloc;
}

void
vgic_list_append (VgicList *list, const VgicEntry *entries, guint n)
{
  g_return_if_fail (n <= G_MAXUINT - list->len);

  /* @entries may lie in the list itself, which growing moves. */
  if (n && entries >= list->entries && entries < list->entries + list->len)
    {
      gsize at = (gsize) (entries - list->entries);

      vgic_list_grow (list, list->len + n);
      entries = list->entries + at;
    }
  else
    vgic_list_grow (list, list->len + n);
  if (n)
    memcpy (list->entries + list->len, entries, (gsize) n * sizeof (VgicEntry));
  list->len += n;
}

void
vgic_list_truncate (VgicList *list, guint len)
{
  g_return_if_fail (len <= list->len);

  list->len = len;
  list->n_guards = MIN (list->n_guards, len);
}

void
vgic_list_set_guards (VgicList *list, const VgicGuard *guards, guint n)
{
  g_return_if_fail (n <= list->len);

  g_free (list->guards);
  list->guards = n ? g_memdup2 (guards, (gsize) n * sizeof (VgicGuard)) : NULL;
  list->n_guards = n;
}

gboolean
vgic_list_same_accesses (const VgicList *a, const VgicList *b)
{
  if (a->len != b->len)
    return FALSE;
  for (guint i = 0; i < a->len; i++)
    if (a->entries[i].group != b->entries[i].group ||
        a->entries[i].attr != b->entries[i].attr)
      return FALSE;
  return TRUE;
}
