/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-shape.c - VM shape checks.
 */
#include "vgic-shape.h"

VgicShape *
vgic_shape_new (uint32_t nr_irqs, uint32_t nr_vcpus, const uint32_t *mpidrs,
                GError **error)
{
  g_autoptr (VgicShape) shape = NULL;

  if (nr_vcpus == 0 || nr_vcpus > VGIC_MAX_VCPUS)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_INVALID_SHAPE,
                   "%u vCPUs is out of range (1..%u)", nr_vcpus, VGIC_MAX_VCPUS);
      return NULL;
    }
  shape = g_new0 (VgicShape, 1);
  shape->nr_irqs = nr_irqs;
  shape->nr_vcpus = nr_vcpus;
  shape->mpidrs = g_new (uint32_t, nr_vcpus);
  for (uint32_t i = 0; i < nr_vcpus; i++)
    shape->mpidrs[i] = mpidrs ? mpidrs[i] : vgic_default_mpidr (i);
  if (!vgic_shape_check (shape, error))
    return NULL;
  return g_steal_pointer (&shape);
}

VgicShape *
vgic_shape_copy (const VgicShape *shape)
{
  VgicShape *copy = g_new0 (VgicShape, 1);

  *copy = *shape;
  copy->mpidrs = g_memdup2 (shape->mpidrs, sizeof (uint32_t) * shape->nr_vcpus);
  return copy;
}

void
vgic_shape_free (VgicShape *shape)
{
  if (!shape)
    return;
  g_free (shape->mpidrs);
  g_free (shape);
}

static int
cmp_u32 (gconstpointer a, gconstpointer b)
{
  uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;

  return x < y ? -1 : x > y;
}

gboolean
vgic_shape_check (const VgicShape *shape, GError **error)
{
  g_autofree uint32_t *sorted = NULL;

  if (shape->nr_irqs < VGIC_MIN_IRQS || shape->nr_irqs > VGIC_MAX_IRQS ||
      shape->nr_irqs % 32 != 0)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_INVALID_SHAPE,
                   "nr_irqs %u is not a multiple of 32 in %u..%u",
                   shape->nr_irqs, VGIC_MIN_IRQS, VGIC_MAX_IRQS);
      return FALSE;
    }
  if (shape->nr_vcpus == 0 || shape->nr_vcpus > VGIC_MAX_VCPUS)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_INVALID_SHAPE,
                   "%u vCPUs is out of range (1..%u)", shape->nr_vcpus,
                   VGIC_MAX_VCPUS);
      return FALSE;
    }
  /* KVM resolves an attr's mpidr to the first vCPU with that affinity: two
   * vCPUs sharing one would make the second unreachable. */
  sorted = g_memdup2 (shape->mpidrs, sizeof (uint32_t) * shape->nr_vcpus);
  qsort (sorted, shape->nr_vcpus, sizeof (uint32_t), cmp_u32);
  for (uint32_t i = 1; i < shape->nr_vcpus; i++)
    if (sorted[i] == sorted[i - 1])
      {
        g_set_error (error, VGICD_ERROR, VGICD_ERROR_INVALID_SHAPE,
                     "two vCPUs share the affinity 0x%08x", sorted[i]);
        return FALSE;
      }
  return TRUE;
}

gboolean
vgic_shape_match (const VgicShape *want, const VgicShape *got, GError **error)
{
  if (want->nr_vcpus != got->nr_vcpus)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_SHAPE_MISMATCH,
                   "the record is for %u vCPUs but this VM has %u",
                   got->nr_vcpus, want->nr_vcpus);
      return FALSE;
    }
  if (want->nr_irqs != got->nr_irqs)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_SHAPE_MISMATCH,
                   "the record is for %u IRQs but this VM has %u",
                   got->nr_irqs, want->nr_irqs);
      return FALSE;
    }
  for (uint32_t i = 0; i < want->nr_vcpus; i++)
    if (want->mpidrs[i] != got->mpidrs[i])
      {
        g_set_error (error, VGICD_ERROR, VGICD_ERROR_SHAPE_MISMATCH,
                     "vCPU %u has affinity 0x%08x in the record but 0x%08x "
                     "in this VM", i, got->mpidrs[i], want->mpidrs[i]);
        return FALSE;
      }
  return TRUE;
}
