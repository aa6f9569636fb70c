/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-regs.c - names for vGIC accesses, so that every error a person reads
 * and every dump says which register and which vCPU it is about; and the
 * one check of a single access that needs them, its value's width.
 */
#include "vgic-regs.h"

const char *
vgic_group_name (uint32_t group)
{
  switch (group)
    {
    case KVM_DEV_ARM_VGIC_GRP_ADDR: return "ADDR";
    case KVM_DEV_ARM_VGIC_GRP_DIST_REGS: return "DIST_REGS";
    case KVM_DEV_ARM_VGIC_GRP_NR_IRQS: return "NR_IRQS";
    case KVM_DEV_ARM_VGIC_GRP_CTRL: return "CTRL";
    case KVM_DEV_ARM_VGIC_GRP_REDIST_REGS: return "REDIST_REGS";
    case KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS: return "CPU_SYSREGS";
    case KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO: return "LEVEL_INFO";
    case KVM_DEV_ARM_VGIC_GRP_ITS_REGS: return "ITS_REGS";
    case KVM_DEV_ARM_VGIC_GRP_BATCH_REGS: return "BATCH_REGS";
    default: return "?";
    }
}

typedef struct {
  uint32_t base;
  uint32_t len;		/* bytes */
  uint32_t bits_per_irq;	/* 0: a single register */
  const char *name;
} RegRange;

static const RegRange dist_ranges[] = {
  { GICD_CTLR, 4, 0, "GICD_CTLR" },
  { GICD_TYPER, 4, 0, "GICD_TYPER" },
  { GICD_IIDR, 4, 0, "GICD_IIDR" },
  { GICD_TYPER2, 4, 0, "GICD_TYPER2" },
  { GICD_STATUSR, 4, 0, "GICD_STATUSR" },
  { GICD_IGROUPR, 0x80, 1, "GICD_IGROUPR" },
  { GICD_ISENABLER, 0x80, 1, "GICD_ISENABLER" },
  { GICD_ICENABLER, 0x80, 1, "GICD_ICENABLER" },
  { GICD_ISPENDR, 0x80, 1, "GICD_ISPENDR" },
  { GICD_ICPENDR, 0x80, 1, "GICD_ICPENDR" },
  { GICD_ISACTIVER, 0x80, 1, "GICD_ISACTIVER" },
  { GICD_ICACTIVER, 0x80, 1, "GICD_ICACTIVER" },
  { GICD_IPRIORITYR, 0x400, 8, "GICD_IPRIORITYR" },
  { GICD_ICFGR, 0x100, 2, "GICD_ICFGR" },
  { GICD_IGRPMODR, 0x80, 1, "GICD_IGRPMODR" },
  { GICD_NSACR, 0x100, 2, "GICD_NSACR" },
  { GICD_IROUTER, 0x2000, 64, "GICD_IROUTER" },
};

static const RegRange redist_ranges[] = {
  { GICR_CTLR, 4, 0, "GICR_CTLR" },
  { GICR_IIDR, 4, 0, "GICR_IIDR" },
  { GICR_TYPER, 4, 0, "GICR_TYPER lo" },
  { GICR_TYPER + 4, 4, 0, "GICR_TYPER hi" },
  { GICR_STATUSR, 4, 0, "GICR_STATUSR" },
  { GICR_WAKER, 4, 0, "GICR_WAKER" },
  { GICR_PROPBASER, 4, 0, "GICR_PROPBASER lo" },
  { GICR_PROPBASER + 4, 4, 0, "GICR_PROPBASER hi" },
  { GICR_PENDBASER, 4, 0, "GICR_PENDBASER lo" },
  { GICR_PENDBASER + 4, 4, 0, "GICR_PENDBASER hi" },
  { GICR_IGROUPR0, 4, 0, "GICR_IGROUPR0" },
  { GICR_ISENABLER0, 4, 0, "GICR_ISENABLER0" },
  { GICR_ICENABLER0, 4, 0, "GICR_ICENABLER0" },
  { GICR_ISPENDR0, 4, 0, "GICR_ISPENDR0" },
  { GICR_ICPENDR0, 4, 0, "GICR_ICPENDR0" },
  { GICR_ISACTIVER0, 4, 0, "GICR_ISACTIVER0" },
  { GICR_ICACTIVER0, 4, 0, "GICR_ICACTIVER0" },
  { GICR_IPRIORITYR, 0x20, 8, "GICR_IPRIORITYR" },
  { GICR_ICFGR0, 4, 0, "GICR_ICFGR0" },
  { GICR_ICFGR1, 4, 0, "GICR_ICFGR1" },
  { GICR_IGRPMODR0, 4, 0, "GICR_IGRPMODR0" },
  { GICR_NSACR, 4, 0, "GICR_NSACR" },
};

static char *
describe_offset (const RegRange *ranges, gsize n, uint32_t off)
{
  for (gsize i = 0; i < n; i++)
    {
      const RegRange *r = &ranges[i];

      if (off < r->base || off >= r->base + r->len)
        continue;
      if (r->bits_per_irq == 0)
        return off == r->base ? g_strdup (r->name)
                              : g_strdup_printf ("%s+%u", r->name, off - r->base);
      if (r->bits_per_irq == 64)
        {
          /* One 64-bit register per IRQ, accessed as two words. */
          uint32_t irq = (off - r->base) / 8;
          return g_strdup_printf ("%s<%u> %s", r->name, irq,
                                  (off & 4) ? "hi" : "lo");
        }
      uint32_t n_word = (off - r->base) / 4;
      uint32_t first = (off - r->base) * 8 / r->bits_per_irq;
      uint32_t last = first + 32 / r->bits_per_irq - 1;
      return g_strdup_printf ("%s%u (IRQs %u-%u)%s", r->name, n_word, first, last,
                              (off & 3) ? " misaligned" : "");
    }
  return g_strdup_printf ("offset 0x%x", off);
}

static const char *
sysreg_name (uint32_t enc)
{
  switch (enc)
    {
    case ICC_PMR_EL1: return "ICC_PMR_EL1";
    case ICC_BPR0_EL1: return "ICC_BPR0_EL1";
    case ICC_AP0R_EL1 (0): return "ICC_AP0R0_EL1";
    case ICC_AP0R_EL1 (1): return "ICC_AP0R1_EL1";
    case ICC_AP0R_EL1 (2): return "ICC_AP0R2_EL1";
    case ICC_AP0R_EL1 (3): return "ICC_AP0R3_EL1";
    case ICC_AP1R_EL1 (0): return "ICC_AP1R0_EL1";
    case ICC_AP1R_EL1 (1): return "ICC_AP1R1_EL1";
    case ICC_AP1R_EL1 (2): return "ICC_AP1R2_EL1";
    case ICC_AP1R_EL1 (3): return "ICC_AP1R3_EL1";
    case ICC_BPR1_EL1: return "ICC_BPR1_EL1";
    case ICC_CTLR_EL1: return "ICC_CTLR_EL1";
    case ICC_SRE_EL1: return "ICC_SRE_EL1";
    case ICC_IGRPEN0_EL1: return "ICC_IGRPEN0_EL1";
    case ICC_IGRPEN1_EL1: return "ICC_IGRPEN1_EL1";
    default: return NULL;
    }
}

static char *
describe_mpidr (uint32_t mpidr)
{
  return g_strdup_printf ("vCPU %u.%u.%u.%u", mpidr >> 24, (mpidr >> 16) & 0xff,
                          (mpidr >> 8) & 0xff, mpidr & 0xff);
}

char *
vgic_reg_describe (uint32_t group, uint64_t attr)
{
  uint32_t low = vgic_attr_low (attr);
  g_autofree char *cpu = describe_mpidr (vgic_attr_mpidr (attr));

  switch (group)
    {
    case KVM_DEV_ARM_VGIC_GRP_DIST_REGS:
      return describe_offset (dist_ranges, G_N_ELEMENTS (dist_ranges), low);
    case KVM_DEV_ARM_VGIC_GRP_REDIST_REGS:
      {
        g_autofree char *reg = describe_offset (redist_ranges,
                                                G_N_ELEMENTS (redist_ranges), low);
        return g_strdup_printf ("%s of %s", reg, cpu);
      }
    case KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS:
      {
        const char *name = sysreg_name (low & KVM_DEV_ARM_VGIC_SYSREG_INSTR_MASK);
        if (name && (low >> 16) == 0)
          return g_strdup_printf ("%s of %s", name, cpu);
        return g_strdup_printf ("sysreg 0x%x of %s", low, cpu);
      }
    case KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO:
      {
        uint32_t intid = low & KVM_DEV_ARM_VGIC_LINE_LEVEL_INTID_MASK;
        uint32_t info = (uint32_t) ((attr & KVM_DEV_ARM_VGIC_LINE_LEVEL_INFO_MASK)
                                    >> KVM_DEV_ARM_VGIC_LINE_LEVEL_INFO_SHIFT);
        if (info != VGIC_LEVEL_INFO_LINE_LEVEL)
          return g_strdup_printf ("level info %u, IRQ %u of %s", info, intid, cpu);
        if (intid < GIC_INTERNAL)
          return g_strdup_printf ("line level of IRQs %u-%u of %s", intid,
                                  intid + 31, cpu);
        return g_strdup_printf ("line level of IRQs %u-%u", intid, intid + 31);
      }
    default:
      return g_strdup_printf ("group %u (%s) attr 0x%" G_GINT64_MODIFIER "x",
                              group, vgic_group_name (group), attr);
    }
}

gboolean
vgic_reg_check_width (const struct kvm_vgic_batch_entry *e, GError **error)
{
  if (vgic_entry_value_fits (e->group, e->value))
    return TRUE;

  g_autofree char *what = vgic_reg_describe (e->group, e->attr);
  g_set_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET,
               "%s is a 32-bit register but carries 0x%" G_GINT64_MODIFIER "x",
               what, (guint64) e->value);
  return FALSE;
}
