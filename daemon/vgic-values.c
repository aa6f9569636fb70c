/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-values.c - sorted (group, attr) → value index.
 *
 * A sorted array rather than a hash table: a 160-vCPU VM has ~7,000 values,
 * a binary search is ~13 compares, and the sorted order is what the record
 * validator needs to report a missing or unexpected register.
 */
#include "vgic-values.h"
#include "vgic-regs.h"
#include "vgic-shape.h"

struct _VgicValues {
  GArray *sorted;	/* struct kvm_vgic_batch_entry */
};

static int
cmp_key (uint32_t ga, uint64_t aa, uint32_t gb, uint64_t ab)
{
  if (ga != gb)
    return ga < gb ? -1 : 1;
  if (aa != ab)
    return aa < ab ? -1 : 1;
  return 0;
}

static int
cmp_entry (gconstpointer a, gconstpointer b)
{
  const struct kvm_vgic_batch_entry *x = a, *y = b;

  return cmp_key (x->group, x->attr, y->group, y->attr);
}

static VgicValues *
values_new (const struct kvm_vgic_batch_entry *entries, gsize n,
            gboolean merge, GError **error)
{
  g_autoptr (GArray) sorted = g_array_sized_new (FALSE, FALSE,
                                                 sizeof (*entries), (guint) n);
  VgicValues *values;
  gsize out = 0;

  g_array_append_vals (sorted, entries, (guint) n);
  g_array_sort (sorted, cmp_entry);
  for (gsize i = 0; i < n; i++)
    {
      struct kvm_vgic_batch_entry *base =
        (struct kvm_vgic_batch_entry *) (void *) sorted->data;
      const struct kvm_vgic_batch_entry *e = &base[i];

      if (out > 0 && cmp_entry (e, &base[out - 1]) == 0)
        {
          g_autofree char *what = vgic_reg_describe (e->group, e->attr);

          if (!merge)
            {
              g_set_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET,
                           "duplicate register: %s appears more than once", what);
              return NULL;
            }
          if (e->value != base[out - 1].value)
            {
              g_set_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET,
                           "%s read twice with different values (0x%" G_GINT64_MODIFIER
                           "x, 0x%" G_GINT64_MODIFIER "x): was the VM running?",
                           what, (guint64) base[out - 1].value, (guint64) e->value);
              return NULL;
            }
          continue;
        }
      if (e->group != KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS && e->value > G_MAXUINT32)
        {
          g_autofree char *what = vgic_reg_describe (e->group, e->attr);
          g_set_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET,
                       "%s is a 32-bit register but carries 0x%" G_GINT64_MODIFIER "x",
                       what, (guint64) e->value);
          return NULL;
        }
      base[out++] = *e;
    }
  g_array_set_size (sorted, (guint) out);
  values = g_new0 (VgicValues, 1);
  values->sorted = g_steal_pointer (&sorted);
  return values;
}

VgicValues *
vgic_values_new (const struct kvm_vgic_batch_entry *entries, gsize n,
                 GError **error)
{
  return values_new (entries, n, FALSE, error);
}

VgicValues *
vgic_values_from_reads (const struct kvm_vgic_batch_entry *entries, gsize n,
                        GError **error)
{
  return values_new (entries, n, TRUE, error);
}

void
vgic_values_free (VgicValues *values)
{
  if (!values)
    return;
  g_array_unref (values->sorted);
  g_free (values);
}

gboolean
vgic_values_lookup (const VgicValues *values, uint32_t group, uint64_t attr,
                    uint64_t *value)
{
  const struct kvm_vgic_batch_entry *base =
    (const struct kvm_vgic_batch_entry *) (void *) values->sorted->data;
  gsize lo = 0, hi = values->sorted->len;

  while (lo < hi)
    {
      gsize mid = lo + (hi - lo) / 2;
      int c = cmp_key (group, attr, base[mid].group, base[mid].attr);

      if (c == 0)
        {
          *value = base[mid].value;
          return TRUE;
        }
      if (c < 0)
        hi = mid;
      else
        lo = mid + 1;
    }
  return FALSE;
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
  return values->sorted->len;
}

const struct kvm_vgic_batch_entry *
vgic_values_index (const VgicValues *values, gsize i)
{
  return &g_array_index (values->sorted, struct kvm_vgic_batch_entry, i);
}
