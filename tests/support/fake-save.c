/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fake-save.c - saves made up without a device (see fake-save.h). */
#include "fake-save.h"
#include "vgic-regs.h"

typedef VgicEntry Entry;

/* splitmix64 finaliser: a deterministic PRNG step. */
static uint64_t
mix64 (uint64_t x)
{
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void
fake_save_fill (VgicList *reads, guint32 seed, gboolean plpis, guint pri_bits)
{
  for (guint i = 0; i < reads->len; i++)
    {
      Entry *e = &reads->entries[i];
      uint32_t low = vgic_attr_low (e->attr);

      e->value = mix64 (mix64 (seed ^ ((uint64_t) e->group << 60)) ^ e->attr);
      if (e->group != KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS)
        e->value &= 0xffffffffu;
      if (e->group == KVM_DEV_ARM_VGIC_GRP_REDIST_REGS && low == GICR_TYPER)
        e->value = plpis ? (e->value | GICR_TYPER_PLPIS) : (e->value & ~GICR_TYPER_PLPIS);
      if (e->group == KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS && low == ICC_CTLR_EL1)
        e->value = (e->value & ~ICC_CTLR_EL1_PRIBITS_MASK) |
                   ((uint64_t) (pri_bits - 1) << ICC_CTLR_EL1_PRIBITS_SHIFT);
      /* What every kernel reads for a GICv3 guest (SRE, DFB, DIB): a state
       * whose SRE is clear is one the kernel refuses to restore. */
      if (e->group == KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS && low == ICC_SRE_EL1)
        e->value = ICC_SRE_EL1_SRE | 0x6;
      if (e->group == KVM_DEV_ARM_VGIC_GRP_DIST_REGS && low == GICD_TYPER)
        e->value = (e->value & ~0x1fULL) | 31;
    }
}

VgicList *
fake_save_routes (const VgicShape *shape, gboolean plpis, guint pri_bits, guint32 seed,
                  gboolean zero_routes)
{
  guint n_first;
  g_autoptr (VgicList) save = fake_save (shape, plpis, pri_bits, seed, &n_first);
  g_autoptr (VgicList) routes = vgic_plan_save_routes (shape);
  VgicList *out = vgic_list_new (save->len + routes->len);

  if (!zero_routes)
    fake_save_fill (routes, seed, plpis, pri_bits);
  vgic_list_append (out, save->entries, n_first);
  vgic_list_append (out, routes->entries, routes->len);
  vgic_list_append (out, save->entries + n_first, save->len - n_first);
  return out;
}

VgicList *
fake_save (const VgicShape *shape, gboolean plpis, guint pri_bits, guint32 seed,
           guint *n_first)
{
  g_autoptr (GError) error = NULL;
  VgicList *reads = vgic_plan_save_first (shape);
  g_autoptr (VgicValues) first = NULL;
  g_autoptr (VgicList) second = NULL;

  fake_save_fill (reads, seed, plpis, pri_bits);
  first = vgic_values_from_reads (reads->entries, reads->len, &error);
  g_assert_no_error (error);
  second = vgic_plan_save_second (shape, first, &error);
  g_assert_no_error (error);
  fake_save_fill (second, seed, plpis, pri_bits);
  if (n_first)
    *n_first = reads->len;
  vgic_list_append (reads, second->entries, second->len);
  return reads;
}
