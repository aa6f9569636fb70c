/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-qemu-fields.c - QEMU's GICv3 fields as the KVM register values its
 * load writes (see vgic-qemu-fields.h).
 *
 * Each value here is what kvm_arm_gicv3_put() of QEMU 10.0 computes for
 * one register from its fields: bitmaps word for word, priorities four to
 * a register (byte n at bits 8n), trigger modes as ICFGR's odd bits,
 * group 1 non-secure state for the CPU interface's group 1 registers.
 */
#include "vgic-qemu-fields.h"

#include "vgic-error.h"
#include "vgic-regs.h"

void
vgic_qemu_gic_free (VgicQemuGic *gic)
{
  if (!gic)
    return;
  g_free (gic->cpus);
  g_free (gic);
}

/* QEMU's half_shuffle32(): bit i of the low half to bit 2i. */
static uint32_t
half_shuffle (uint32_t x)
{
  uint32_t r = 0;

  for (guint i = 0; i < 16; i++)
    r |= ((x >> i) & 1u) << (2 * i);
  return r;
}

/* GICD_ICFGR for the 16 IRQs from @irq: edge-triggered is 0b10. */
static uint32_t
icfgr (const uint32_t *edge, guint irq)
{
  return half_shuffle (edge[irq / 32] >> (irq % 32)) << 1;
}

static uint32_t
priorities (const uint8_t *p)
{
  return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 |
         (uint32_t) p[3] << 24;
}

static void
add_cpu (VgicList *l, const VgicQemuCpu *c, uint32_t m)
{
  /* The APRs QEMU writes: as many per group as PRIbits asks. */
  const guint apr = vgic_icc_ctlr_apr_count (c->icc_ctlr_el1[VGIC_QEMU_NS]);

  vgic_list_add (l, VGIC_GRP_REDIST, vgic_attr (m, GICR_PROPBASER), (uint32_t) c->gicr_propbaser);
  vgic_list_add (l, VGIC_GRP_REDIST, vgic_attr (m, GICR_PROPBASER + 4), c->gicr_propbaser >> 32);
  vgic_list_add (l, VGIC_GRP_REDIST, vgic_attr (m, GICR_PENDBASER), (uint32_t) c->gicr_pendbaser);
  vgic_list_add (l, VGIC_GRP_REDIST, vgic_attr (m, GICR_PENDBASER + 4), c->gicr_pendbaser >> 32);
  vgic_list_add (l, VGIC_GRP_REDIST, vgic_attr (m, GICR_CTLR), c->gicr_ctlr);
  vgic_list_add (l, VGIC_GRP_REDIST, vgic_attr (m, GICR_STATUSR), c->gicr_statusr[VGIC_QEMU_NS]);
  vgic_list_add (l, VGIC_GRP_REDIST, vgic_attr (m, GICR_WAKER), c->gicr_waker);
  vgic_list_add (l, VGIC_GRP_REDIST, vgic_attr (m, GICR_IGROUPR0), c->gicr_igroupr0);
  vgic_list_add (l, VGIC_GRP_REDIST, vgic_attr (m, GICR_ISENABLER0), c->gicr_ienabler0);
  vgic_list_add (l, VGIC_GRP_REDIST, vgic_attr (m, GICR_ICFGR1),
                 half_shuffle (c->edge_trigger >> 16) << 1);
  vgic_list_add (l, VGIC_GRP_LEVEL, vgic_attr_level (m, 0), c->level);
  vgic_list_add (l, VGIC_GRP_REDIST, vgic_attr (m, GICR_ISPENDR0), c->gicr_ipendr0);
  vgic_list_add (l, VGIC_GRP_REDIST, vgic_attr (m, GICR_ISACTIVER0), c->gicr_iactiver0);
  for (guint i = 0; i < GIC_INTERNAL; i += 4)
    vgic_list_add (l, VGIC_GRP_REDIST, vgic_attr (m, GICR_IPRIORITYR + i),
                   priorities (&c->gicr_ipriorityr[i]));
  vgic_list_add (l, VGIC_GRP_SYSREG, vgic_attr (m, ICC_SRE_EL1), c->icc_sre_el1);
  vgic_list_add (l, VGIC_GRP_SYSREG, vgic_attr (m, ICC_CTLR_EL1), c->icc_ctlr_el1[VGIC_QEMU_NS]);
  vgic_list_add (l, VGIC_GRP_SYSREG, vgic_attr (m, ICC_IGRPEN0_EL1), c->icc_igrpen[VGIC_QEMU_G0]);
  vgic_list_add (l, VGIC_GRP_SYSREG, vgic_attr (m, ICC_IGRPEN1_EL1),
                 c->icc_igrpen[VGIC_QEMU_G1NS]);
  vgic_list_add (l, VGIC_GRP_SYSREG, vgic_attr (m, ICC_PMR_EL1), c->icc_pmr_el1);
  vgic_list_add (l, VGIC_GRP_SYSREG, vgic_attr (m, ICC_BPR0_EL1), c->icc_bpr[VGIC_QEMU_G0]);
  vgic_list_add (l, VGIC_GRP_SYSREG, vgic_attr (m, ICC_BPR1_EL1), c->icc_bpr[VGIC_QEMU_G1NS]);
  for (guint i = 0; i < apr; i++)
    {
      vgic_list_add (l, VGIC_GRP_SYSREG, vgic_attr (m, ICC_AP0R_EL1 (i)),
                     c->icc_apr[VGIC_QEMU_G0][i]);
      vgic_list_add (l, VGIC_GRP_SYSREG, vgic_attr (m, ICC_AP1R_EL1 (i)),
                     c->icc_apr[VGIC_QEMU_G1NS][i]);
    }
}

VgicValues *
vgic_qemu_fields_values (const VgicQemuGic *gic, const VgicShape *shape, GError **error)
{
  g_autoptr (VgicList) l = vgic_list_new (1024);
  const guint nr_irqs = shape->nr_irqs;

  if (gic->nr_cpus != shape->nr_vcpus)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_SHAPE_MISMATCH,
                   "QEMU's fields hold %u vCPUs, the VM has %u", gic->nr_cpus,
                   shape->nr_vcpus);
      return NULL;
    }
  if (nr_irqs > VGIC_QEMU_MAXIRQ)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_INVALID_SHAPE,
                   "%u IRQs: QEMU's fields hold %u at most", nr_irqs, VGIC_QEMU_MAXIRQ);
      return NULL;
    }

  vgic_list_add (l, VGIC_GRP_DIST, vgic_attr (0, GICD_CTLR), gic->gicd_ctlr);
  vgic_list_add (l, VGIC_GRP_DIST, vgic_attr (0, GICD_STATUSR), gic->gicd_statusr[VGIC_QEMU_NS]);
  for (guint cpu = 0; cpu < gic->nr_cpus; cpu++)
    add_cpu (l, &gic->cpus[cpu], shape->mpidrs[cpu]);

  for (guint irq = GIC_INTERNAL; irq < nr_irqs; irq += 32)
    {
      const guint w = irq / 32;

      vgic_list_add (l, VGIC_GRP_DIST, vgic_attr (0, GICD_ISENABLER + w * 4), gic->enabled[w]);
      vgic_list_add (l, VGIC_GRP_DIST, vgic_attr (0, GICD_IGROUPR + w * 4), gic->group[w]);
      vgic_list_add (l, VGIC_GRP_LEVEL, vgic_attr_level (shape->mpidrs[0], irq), gic->level[w]);
      vgic_list_add (l, VGIC_GRP_DIST, vgic_attr (0, GICD_ISPENDR + w * 4), gic->pending[w]);
      vgic_list_add (l, VGIC_GRP_DIST, vgic_attr (0, GICD_ISACTIVER + w * 4), gic->active[w]);
    }
  /* QEMU 10.0 writes each IRQ's route as two words at 0x6000 + 4n and
   * 0x6000 + 4n + 4: word n ends as the low half of irouter[n], but for
   * the last IRQ's high half, one word further. */
  for (guint irq = GIC_INTERNAL; irq <= nr_irqs; irq++)
    vgic_list_add (l, VGIC_GRP_DIST, vgic_attr (0, GICD_IROUTER + 4 * irq),
                   irq < nr_irqs ? (uint32_t) gic->gicd_irouter[irq]
                                 : (uint32_t) (gic->gicd_irouter[irq - 1] >> 32));
  for (guint irq = GIC_INTERNAL; irq < nr_irqs; irq += 16)
    vgic_list_add (l, VGIC_GRP_DIST, vgic_attr (0, GICD_ICFGR + irq / 4),
                   icfgr (gic->edge_trigger, irq));
  for (guint irq = GIC_INTERNAL; irq < nr_irqs; irq += 4)
    vgic_list_add (l, VGIC_GRP_DIST, vgic_attr (0, GICD_IPRIORITYR + irq),
                   priorities (&gic->gicd_ipriority[irq]));

  return vgic_values_new (l->entries, l->len, error);
}
