/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-values.c - (group, attr) → value index.
 *
 * The values are kept in the order they were given, with an open-addressing
 * hash index beside them.  A save or a restore of a 256-vCPU VM builds a few
 * of these sets of ~8,000 values and makes ~9,000 lookups in them, all inside
 * the migration's downtime: sorting them first (as this file once did) cost
 * more than everything else vgicd does for an operation, and under emulation
 * (the nested tier runs KVM under TCG) it was tens of milliseconds.  Building
 * the index is one pass; a lookup is a multiply, a shift and usually one
 * compare.
 *
 * The (group, attr) order is still available, sorted on first use, for the
 * callers that list a set in a stable order (vgicctl dump, tests).
 *
 * The hash is fixed and public, and a record comes from another host: its
 * sender can choose (group, attr) pairs that all land on one slot, which
 * made building the index quadratic (574 ms for 512 vCPUs' worth, 5.8 s at
 * 2,048, on vgicd's main thread).  So no probe sequence may pass
 * MAX_PROBE slots: a set whose entries collide that much is refused.  The
 * worst case is then linear (MAX_PROBE compares per entry), and a real
 * vGIC's registers, at most half filling the table, never come near it.
 * Since nothing is ever removed, a key that is present sits within
 * MAX_PROBE slots of where its probe starts, so a lookup stops there too.
 */
#include "vgic-values.h"

#include "vgic-error.h"
#include "vgic-regs.h"

typedef VgicEntry Entry;

#define MAX_PROBE 256

struct _VgicValues {
  GArray *entries;	/* Entry, each (group, attr) once, in insertion order */
  guint32 *slots;	/* index + 1 into entries, 0 = empty */
  guint bits;		/* log2 of the number of slots */
  GArray *sorted;	/* Entry in (group, attr) order, built on demand */
};

static inline guint
slot_of (const VgicValues *values, uint32_t group, uint64_t attr)
{
  /* Fibonacci hashing: the attrs differ in their MPIDR bits (high) and
   * their offsets (low); the multiply mixes both into the top bits. */
  uint64_t h = (attr ^ ((uint64_t) group << 59)) * 0x9E3779B97F4A7C15ull;

  return (guint) (h >> (64 - values->bits));
}

/* The slot holding (group, attr), or the empty slot where it would go;
 * NULL when neither is within MAX_PROBE slots (the theory above). */
static inline guint32 *
find_slot (const VgicValues *values, uint32_t group, uint64_t attr)
{
  const Entry *base = (const Entry *) (void *) values->entries->data;
  guint mask = (1u << values->bits) - 1;
  guint s = slot_of (values, group, attr);

  for (guint probe = 0; probe < MAX_PROBE; probe++, s = (s + 1) & mask)
    {
      guint32 *slot = &values->slots[s];

      if (*slot == 0)
        return slot;
      if (base[*slot - 1].group == group && base[*slot - 1].attr == attr)
        return slot;
    }
  return NULL;
}

static VgicValues *
values_new (const Entry *entries, gsize n, gboolean merge, GError **error)
{
  g_autoptr (VgicValues) values = g_new0 (VgicValues, 1);
  Entry *base;
  guint out = 0;

  /* At most half full, so a probe sequence stays short. */
  values->bits = 4;
  while ((1ull << values->bits) < 2 * (guint64) n)
    values->bits++;
  values->slots = g_new0 (guint32, 1u << values->bits);
  values->entries = g_array_sized_new (FALSE, FALSE, sizeof (Entry), (guint) n);
  g_array_set_size (values->entries, (guint) n);
  base = (Entry *) (void *) values->entries->data;

  for (gsize i = 0; i < n; i++)
    {
      const Entry *e = &entries[i];
      guint32 *slot;

      if (!vgic_reg_check_width (e, error))
        return NULL;
      /* The entries are not yet all in the array: a probe only looks at
       * slots already filled, which point below @out. */
      slot = find_slot (values, e->group, e->attr);
      if (!slot)
        {
          g_autofree char *what = vgic_reg_describe (e->group, e->attr);

          g_set_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET,
                       "entry %" G_GSIZE_FORMAT " (%s) collides with %u others in the "
                       "register index, which no vGIC's registers do: a crafted set",
                       i, what, MAX_PROBE);
          return NULL;
        }
      if (*slot != 0)
        {
          const Entry *first = &base[*slot - 1];
          g_autofree char *what = NULL;

          /* A save reads each of QEMU's overlapping IROUTER words twice
           * (nearly a thousand at 160 vCPUs): naming the register is for
           * the errors only. */
          if (merge && e->value == first->value)
            continue;
          what = vgic_reg_describe (e->group, e->attr);
          if (!merge)
            g_set_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET,
                         "duplicate register: %s appears more than once", what);
          else
            g_set_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET,
                         "%s read twice with different values (0x%" G_GINT64_MODIFIER
                         "x, 0x%" G_GINT64_MODIFIER "x): was the VM running?",
                         what, (guint64) first->value, (guint64) e->value);
          return NULL;
        }
      base[out] = *e;
      base[out].reserved = 0;
      *slot = ++out;
    }
  g_array_set_size (values->entries, out);
  return g_steal_pointer (&values);
}

VgicValues *
vgic_values_new (const Entry *entries, gsize n, GError **error)
{
  return values_new (entries, n, FALSE, error);
}

VgicValues *
vgic_values_from_reads (const Entry *entries, gsize n, GError **error)
{
  return values_new (entries, n, TRUE, error);
}

void
vgic_values_free (VgicValues *values)
{
  if (!values)
    return;
  if (values->entries)
    g_array_unref (values->entries);
  if (values->sorted)
    g_array_unref (values->sorted);
  g_free (values->slots);
  g_free (values);
}

gboolean
vgic_values_lookup (const VgicValues *values, uint32_t group, uint64_t attr,
                    uint64_t *value)
{
  const guint32 *slot = find_slot (values, group, attr);

  if (!slot || *slot == 0)
    return FALSE;
  *value = g_array_index (values->entries, Entry, *slot - 1).value;
  return TRUE;
}

gboolean
vgic_values_get (const VgicValues *values, uint32_t group, uint64_t attr,
                 uint64_t *value, GError **error)
{
  if (vgic_values_lookup (values, group, attr, value))
    return TRUE;

  g_autofree char *what = vgic_reg_describe (group, attr);
  g_set_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET,
               "missing register: %s", what);
  return FALSE;
}

gsize
vgic_values_size (const VgicValues *values)
{
  return values->entries->len;
}

const Entry *
vgic_values_at (const VgicValues *values, gsize i)
{
  return &g_array_index (values->entries, Entry, i);
}

static int
cmp_entry (gconstpointer a, gconstpointer b)
{
  const Entry *x = a, *y = b;

  if (x->group != y->group)
    return x->group < y->group ? -1 : 1;
  if (x->attr != y->attr)
    return x->attr < y->attr ? -1 : 1;
  return 0;
}

const Entry *
vgic_values_index (const VgicValues *values, gsize i)
{
  /* Sorted once, on the first call; the set itself never changes.  vgicd
   * is single-threaded, and so is every other user of a VgicValues. */
  if (!values->sorted)
    {
      VgicValues *v = (VgicValues *) values;

      v->sorted = g_array_sized_new (FALSE, FALSE, sizeof (Entry), v->entries->len);
      g_array_append_vals (v->sorted, v->entries->data, v->entries->len);
      g_array_sort (v->sorted, cmp_entry);
    }
  return &g_array_index (values->sorted, Entry, i);
}
