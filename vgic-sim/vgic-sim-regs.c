/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-sim-regs.c - the distributor and redistributor register files as
 * userspace sees them through DIST_REGS / REDIST_REGS (Linux 6.1
 * vgic-mmio-v3.c, vgic-mmio.c: vgic_uaccess and the uaccess_* handlers).
 *
 * As in KVM, each frame is a sorted table of regions.  An access that finds
 * no region, is not 32-bit aligned, or addresses an IRQ at or above nr_irqs
 * (per-IRQ regions only) reads 0 and ignores the write without an error:
 * vgic_uaccess_read/write return 0 when vgic_get_mmio_region() fails; only
 * HAS_DEVICE_ATTR turns that into -ENXIO.
 */
#include <errno.h>

#include "vgic-regs.h"
#include "vgic-sim-shm.h"

typedef guint32 (*RegRead) (VgicSimShm *m, guint32 vcpu, guint32 addr);
typedef int (*RegWrite) (VgicSimShm *m, guint32 vcpu, guint32 addr, guint32 val);

typedef struct {
  guint32 offset;
  guint32 len;
  guint32 bits_per_irq;	/* 0: not a per-IRQ region */
  RegRead read;
  RegWrite write;
} Region;

/* VGIC_ADDR_TO_INTID(): the first IRQ a per-IRQ register offset covers.
 * The mask is the size of the whole register array, whose base is aligned
 * to it, so the base offset drops out. */
static guint32
addr_to_intid (guint32 addr, guint32 bits_per_irq)
{
  return ((addr & (bits_per_irq * 1024 / 8 - 1)) * 8) / bits_per_irq;
}

/* ------------------------------------------------------------------ */
/* Trivial handlers                                                   */
/* ------------------------------------------------------------------ */

static guint32
read_raz (VgicSimShm *m, guint32 vcpu, guint32 addr)
{
  return 0;
}

/* GICD_STATUSR is vgic_mmio_read_rao in 6.1: it reads all ones. */
static guint32
read_rao (VgicSimShm *m, guint32 vcpu, guint32 addr)
{
  return 0xffffffffu;
}

static int
write_wi (VgicSimShm *m, guint32 vcpu, guint32 addr, guint32 val)
{
  return 0;
}

/* GICD_PIDR2 / GICR_PIDR2 at 0xFFE8 report a GICv3; other ID regs read 0. */
static guint32
read_idregs (VgicSimShm *m, guint32 vcpu, guint32 addr)
{
  return (addr & 0xffff) == 0xFFE8 ? 0x3b : 0;
}

/* ------------------------------------------------------------------ */
/* Per-IRQ bitmaps                                                    */
/* ------------------------------------------------------------------ */

typedef enum { F_GROUP, F_ENABLED, F_PENDING, F_ACTIVE } Field;

static guint8 *
field_of (VgicSimIrq *irq, Field f)
{
  switch (f)
    {
    case F_GROUP: return &irq->group;
    case F_ENABLED: return &irq->enabled;
    case F_PENDING: return &irq->pending;
    case F_ACTIVE: default: return &irq->active;
    }
}

static guint32
read_bits (VgicSimShm *m, guint32 vcpu, guint32 addr, Field f)
{
  guint32 intid = addr_to_intid (addr, 1), value = 0;

  for (guint32 i = 0; i < 32; i++)
    if (*field_of (vgic_sim_irq (m, vcpu, intid + i), f))
      value |= 1u << i;
  return value;
}

/* @how: 'r' replaces every bit, 's' sets the set bits, 'c' clears them.
 * @queue: which IRQs then go through vgic_queue_irq_unlock(), as the
 * kernel's handler does: 0 none, 's' those of the set bits, 'a' all 32. */
static void
write_bits (VgicSimShm *m, guint32 vcpu, guint32 addr, guint32 val, Field f,
            char how, char queue)
{
  guint32 intid = addr_to_intid (addr, 1);

  for (guint32 i = 0; i < 32; i++)
    {
      guint8 *bit = field_of (vgic_sim_irq (m, vcpu, intid + i), f);
      gboolean set = (val >> i) & 1;

      if (how == 'r')
        *bit = set;
      else if (set)
        *bit = how == 's';
      if (queue == 'a' || (queue == 's' && set))
        vgic_sim_queue_irq (m, vcpu, intid + i);
    }
}

static guint32
read_group (VgicSimShm *m, guint32 vcpu, guint32 addr)
{
  return read_bits (m, vcpu, addr, F_GROUP);
}

static int
write_group (VgicSimShm *m, guint32 vcpu, guint32 addr, guint32 val)
{
  /* vgic_mmio_write_group() queues every IRQ of the word. */
  write_bits (m, vcpu, addr, val, F_GROUP, 'r', 'a');
  return 0;
}

/* ISENABLER and ICENABLER both read the enable bits. */
static guint32
read_enable (VgicSimShm *m, guint32 vcpu, guint32 addr)
{
  return read_bits (m, vcpu, addr, F_ENABLED);
}

static int
write_senable (VgicSimShm *m, guint32 vcpu, guint32 addr, guint32 val)
{
  /* vgic_uaccess_write_senable() queues each IRQ it enables. */
  write_bits (m, vcpu, addr, val, F_ENABLED, 's', 's');
  return 0;
}

static int
write_cenable (VgicSimShm *m, guint32 vcpu, guint32 addr, guint32 val)
{
  write_bits (m, vcpu, addr, val, F_ENABLED, 'c', 0);
  return 0;
}

/* vgic_uaccess_read_pending(): with a GICv3 model userspace sees the
 * pending latch only, not the line level (saved separately, LEVEL_INFO). */
static guint32
read_pending (VgicSimShm *m, guint32 vcpu, guint32 addr)
{
  return read_bits (m, vcpu, addr, F_PENDING);
}

/* vgic_v3_uaccess_write_pending(): the latch is *replaced* by the written
 * bits, whatever the IRQ's configuration, so that userspace need not
 * restore ICFGR first.  (ICPENDR is RAZ/WI for userspace.) */
static int
write_pending (VgicSimShm *m, guint32 vcpu, guint32 addr, guint32 val)
{
  /* __set_pending() queues each IRQ whose latch it sets; clearing the
   * others takes nothing off a list. */
  write_bits (m, vcpu, addr, val, F_PENDING, 'r', 's');
  return 0;
}

static guint32
read_active (VgicSimShm *m, guint32 vcpu, guint32 addr)
{
  return read_bits (m, vcpu, addr, F_ACTIVE);
}

static int
write_sactive (VgicSimShm *m, guint32 vcpu, guint32 addr, guint32 val)
{
  /* vgic_mmio_change_active() queues an IRQ it makes active. */
  write_bits (m, vcpu, addr, val, F_ACTIVE, 's', 's');
  return 0;
}

static int
write_cactive (VgicSimShm *m, guint32 vcpu, guint32 addr, guint32 val)
{
  write_bits (m, vcpu, addr, val, F_ACTIVE, 'c', 0);
  return 0;
}

/* ------------------------------------------------------------------ */
/* Priority, configuration, routing                                   */
/* ------------------------------------------------------------------ */

static guint32
read_priority (VgicSimShm *m, guint32 vcpu, guint32 addr)
{
  guint32 intid = addr_to_intid (addr, 8), value = 0;

  for (guint32 i = 0; i < 4; i++)
    value |= (guint32) vgic_sim_irq (m, vcpu, intid + i)->priority << (8 * i);
  return value;
}

/* KVM keeps VGIC_PRI_BITS (5) bits of priority: GENMASK(7, 3). */
static int
write_priority (VgicSimShm *m, guint32 vcpu, guint32 addr, guint32 val)
{
  guint32 intid = addr_to_intid (addr, 8);

  for (guint32 i = 0; i < 4; i++)
    vgic_sim_irq (m, vcpu, intid + i)->priority = (val >> (8 * i)) & 0xf8;
  return 0;
}

static guint32
read_config (VgicSimShm *m, guint32 vcpu, guint32 addr)
{
  guint32 intid = addr_to_intid (addr, 2), value = 0;

  for (guint32 i = 0; i < 16; i++)
    if (vgic_sim_irq (m, vcpu, intid + i)->edge)
      value |= 2u << (2 * i);
  return value;
}

/* SGI and PPI configuration is read-only: "the arch timer code relies on
 * PPIs being level triggered" (vgic_mmio_write_config). */
static int
write_config (VgicSimShm *m, guint32 vcpu, guint32 addr, guint32 val)
{
  guint32 intid = addr_to_intid (addr, 2);

  for (guint32 i = 0; i < 16; i++)
    if (intid + i >= GIC_INTERNAL)
      vgic_sim_irq (m, vcpu, intid + i)->edge = (val >> (2 * i + 1)) & 1;
  return 0;
}

/* IROUTER<n> is at 0x6000 + 8n; the word at +4 (Aff3) is RAZ/WI in KVM.
 * QEMU's 0x6000 + 4n addressing therefore lands on IRQ n/2, lo or hi. */
static guint32
read_irouter (VgicSimShm *m, guint32 vcpu, guint32 addr)
{
  VgicSimIrq *irq = vgic_sim_irq (m, vcpu, addr_to_intid (addr, 64));

  if (!irq || (addr & 4))
    return 0;
  return irq->route;
}

/* Only Aff0..Aff2 are kept ("we only care about and preserve Aff0, Aff1
 * and Aff2").  The target becomes the vCPU of that affinity, or none
 * (kvm_mpidr_to_vcpu()); an IRQ already on a list stays there. */
static int
write_irouter (VgicSimShm *m, guint32 vcpu, guint32 addr, guint32 val)
{
  guint32 intid = addr_to_intid (addr, 64);
  VgicSimIrq *irq = vgic_sim_irq (m, vcpu, intid);

  if (irq && !(addr & 4))
    {
      irq->route = val & 0xffffff;
      vgic_sim_queue (m, vcpu, intid)->target =
        (gint16) vgic_sim_route_target (m, irq->route);
    }
  return 0;
}

/* ------------------------------------------------------------------ */
/* GICD_CTLR, TYPER, IIDR, TYPER2                                     */
/* ------------------------------------------------------------------ */

#define GICD_CTLR_ENABLE_SS_G1 (1u << 1)
#define GICD_TYPER_LPIS (1u << 17)
#define GICD_TYPER2_NASSGICAP (1u << 8)
#define GICD_IIDR_REVISION_MASK (0xfu << 12)
#define KVM_PRODUCT_ID 0x4bu	/* 'K' */
#define ARM_IMPLEMENTER 0x43bu

static guint32
read_misc (VgicSimShm *m, guint32 vcpu, guint32 addr)
{
  guint32 value = 0;

  switch (addr & 0x0c)
    {
    case GICD_CTLR:
      if (m->enabled)
        value |= GICD_CTLR_ENABLE_SS_G1;
      value |= GICD_CTLR_ARE_NS | GICD_CTLR_DS;
      if (m->nassgireq)
        value |= GICD_CTLR_NASSGIREQ;
      return value;
    case GICD_TYPER:
      value = (m->nr_irqs >> 5) - 1;
      if (m->has_its)
        value |= (16u - 1) << 19 | GICD_TYPER_LPIS;
      else
        value |= (10u - 1) << 19;
      return value;
    case GICD_TYPER2:
      return m->gicv4_1 ? GICD_TYPER2_NASSGICAP : 0;
    case GICD_IIDR:
    default:
      return (KVM_PRODUCT_ID << 24) | (m->implementation_rev << 12) |
             ARM_IMPLEMENTER;
    }
}

/* vgic_mmio_uaccess_write_v3_misc() */
static int
write_misc (VgicSimShm *m, guint32 vcpu, guint32 addr, guint32 val)
{
  guint32 reg;

  switch (addr & 0x0c)
    {
    case GICD_TYPER2:
      /* Userspace may only write back what it read. */
      return val == read_misc (m, vcpu, addr) ? 0 : -EINVAL;
    case GICD_IIDR:
      /* Everything but the revision must match; the revision picks the
       * implementation_rev (2 or 3) the VM was created with. */
      reg = read_misc (m, vcpu, addr);
      if ((reg ^ val) & ~GICD_IIDR_REVISION_MASK)
        return -EINVAL;
      reg = (val & GICD_IIDR_REVISION_MASK) >> 12;
      if (reg != 2 && reg != 3)
        return -EINVAL;
      m->implementation_rev = reg;
      return 0;
    case GICD_CTLR:
      /* Set directly, without the MMIO path's "nASSGIreq is RO while the
       * distributor stays enabled" rule; only a GICv4.1 keeps nASSGIreq. */
      if (!m->gicv4_1)
        val &= ~GICD_CTLR_NASSGIREQ;
      m->enabled = (val & GICD_CTLR_ENABLE_SS_G1) != 0;
      m->nassgireq = (val & GICD_CTLR_NASSGIREQ) != 0;
      return 0;
    default:
      return 0;	/* GICD_TYPER: "at best for documentation purposes" */
    }
}

/* ------------------------------------------------------------------ */
/* Redistributor RD frame                                             */
/* ------------------------------------------------------------------ */

static VgicSimCpu *
cpu_of (VgicSimShm *m, guint32 vcpu)
{
  return &vgic_sim_slot (m, vcpu)->s;
}

/* The implementation revision 3 advertises GICR_CTLR.{IR,CES}. */
static guint32
read_rctlr (VgicSimShm *m, guint32 vcpu, guint32 addr)
{
  guint32 val = cpu_of (m, vcpu)->lpis_enabled ? GICR_CTLR_ENABLE_LPIS : 0;

  if (m->implementation_rev >= 3)
    val |= GICR_CTLR_IR | GICR_CTLR_CES;
  return val;
}

/* Only EnableLPIs is writable, and only with an ITS.  (The disable path's
 * transient RWP state is not modelled: it completes at once.) */
static int
write_rctlr (VgicSimShm *m, guint32 vcpu, guint32 addr, guint32 val)
{
  if (m->has_its)
    cpu_of (m, vcpu)->lpis_enabled = (val & GICR_CTLR_ENABLE_LPIS) != 0;
  return 0;
}

static guint32
read_riidr (VgicSimShm *m, guint32 vcpu, guint32 addr)
{
  return (KVM_PRODUCT_ID << 24) | ARM_IMPLEMENTER;
}

/* GICR_TYPER: Aff2..Aff0 (Aff3 is dropped in 6.1), Processor_Number = vCPU
 * id, PLPIS with an ITS, Last for the last redistributor of the (single,
 * contiguous) region.  Writes are ignored. */
static guint32
read_rtyper (VgicSimShm *m, guint32 vcpu, guint32 addr)
{
  guint64 value = (guint64) (cpu_of (m, vcpu)->mpidr & 0xffffff) << 32;

  value |= (guint64) (vcpu & 0xffff) << 8;
  if (m->has_its)
    value |= GICR_TYPER_PLPIS;
  if (vcpu == m->nr_vcpus - 1)
    value |= GICR_TYPER_LAST;
  return (guint32) (value >> ((addr & 4) * 8));
}

/* GIC_BASER field values. */
#define CACHE_nCnB 0ULL
#define CACHE_SameAsInner 0ULL
#define CACHE_nC 1ULL
#define CACHE_RaWb 3ULL
#define SH_Inner 1ULL
#define SH_Outer 2ULL

static guint64
set_field (guint64 reg, guint shift, guint64 mask, guint64 v)
{
  return (reg & ~(mask << shift)) | (v << shift);
}

/* vgic_sanitise_*: no outer shareable, no non-cacheable inner, outer is
 * SameAsInner or nC; then clear RES0 bits. */
static guint64
sanitise_baser (guint64 reg)
{
  guint64 sh = (reg >> 10) & 3, inner = (reg >> 7) & 7, outer = (reg >> 56) & 7;

  if (sh == SH_Outer)
    reg = set_field (reg, 10, 3, SH_Inner);
  if (inner == CACHE_nCnB || inner == CACHE_nC)
    reg = set_field (reg, 7, 7, CACHE_RaWb);
  if (outer != CACHE_SameAsInner && outer != CACHE_nC)
    reg = set_field (reg, 56, 7, CACHE_SameAsInner);
  return reg;
}

#define BITS(hi, lo) ((~0ULL >> (63 - (hi))) & ~((1ULL << (lo)) - 1))

guint64
vgic_sim_sanitise_propbaser (guint64 reg)
{
  return sanitise_baser (reg) & ~(BITS (63, 59) | BITS (55, 52) | BITS (6, 5));
}

guint64
vgic_sim_sanitise_pendbaser (guint64 reg)
{
  return sanitise_baser (reg) & ~(BITS (63, 63) | BITS (61, 59) | BITS (55, 52) |
                                  BITS (15, 12) | BITS (6, 0));
}

/* update_64bit_reg() for a 32-bit access at @addr */
static guint64
update_half (guint64 reg, guint32 addr, guint32 val)
{
  guint shift = (addr & 4) * 8;

  return (reg & ~(0xffffffffULL << shift)) | ((guint64) val << shift);
}

static guint32
read_propbase (VgicSimShm *m, guint32 vcpu, guint32 addr)
{
  return (guint32) (m->propbaser >> ((addr & 4) * 8));
}

/* "Storing a value with LPIs already enabled is undefined": KVM ignores
 * the write if *this* redistributor has EnableLPIs set, although the
 * register itself is one per VM. */
static int
write_propbase (VgicSimShm *m, guint32 vcpu, guint32 addr, guint32 val)
{
  if (!cpu_of (m, vcpu)->lpis_enabled)
    m->propbaser = vgic_sim_sanitise_propbaser (update_half (m->propbaser, addr, val));
  return 0;
}

/* PTZ (bit 62) is stored but always reads as 0. */
static guint32
read_pendbase (VgicSimShm *m, guint32 vcpu, guint32 addr)
{
  guint64 v = cpu_of (m, vcpu)->pendbaser & ~(1ULL << 62);

  return (guint32) (v >> ((addr & 4) * 8));
}

static int
write_pendbase (VgicSimShm *m, guint32 vcpu, guint32 addr, guint32 val)
{
  VgicSimCpu *c = cpu_of (m, vcpu);

  if (!c->lpis_enabled)
    c->pendbaser = vgic_sim_sanitise_pendbaser (update_half (c->pendbaser, addr, val));
  return 0;
}

/* ------------------------------------------------------------------ */
/* The tables (vgic_v3_dist_registers, vgic_v3_rd_registers)           */
/* ------------------------------------------------------------------ */

/* A per-IRQ register array whose private part (the first 32 IRQs, held by
 * the redistributors) is RAZ/WI in the distributor. */
#define SHARED(off, bpi, rd, wr) \
  { (off), (bpi) * 32 / 8, (bpi), read_raz, write_wi }, \
  { (off) + (bpi) * 32 / 8, (bpi) * (1024 - 32) / 8, (bpi), (rd), (wr) }

static const Region dist_regions[] = {
  { GICD_CTLR, 16, 0, read_misc, write_misc },
  { GICD_STATUSR, 4, 0, read_rao, write_wi },
  SHARED (GICD_IGROUPR, 1, read_group, write_group),
  SHARED (GICD_ISENABLER, 1, read_enable, write_senable),
  SHARED (GICD_ICENABLER, 1, read_enable, write_cenable),
  SHARED (GICD_ISPENDR, 1, read_pending, write_pending),
  SHARED (GICD_ICPENDR, 1, read_raz, write_wi),
  SHARED (GICD_ISACTIVER, 1, read_active, write_sactive),
  SHARED (GICD_ICACTIVER, 1, read_active, write_cactive),
  SHARED (GICD_IPRIORITYR, 8, read_priority, write_priority),
  SHARED (0x0800 /* GICD_ITARGETSR */, 8, read_raz, write_wi),
  SHARED (GICD_ICFGR, 2, read_config, write_config),
  SHARED (GICD_IGRPMODR, 1, read_raz, write_wi),
  SHARED (GICD_IROUTER, 64, read_irouter, write_irouter),
  { GICD_IDREGS, 48, 0, read_idregs, write_wi },
};

static const Region redist_regions[] = {
  { GICR_CTLR, 4, 0, read_rctlr, write_rctlr },
  { GICR_IIDR, 4, 0, read_riidr, write_wi },
  { GICR_TYPER, 8, 0, read_rtyper, write_wi },
  { GICR_STATUSR, 4, 0, read_raz, write_wi },
  { GICR_WAKER, 4, 0, read_raz, write_wi },
  { GICR_PROPBASER, 8, 0, read_propbase, write_propbase },
  { GICR_PENDBASER, 8, 0, read_pendbase, write_pendbase },
  /* INVLPIR/INVALLR act only on enabled LPIs, which are not modelled. */
  { 0x00A0 /* GICR_INVLPIR */, 8, 0, read_raz, write_wi },
  { 0x00B0 /* GICR_INVALLR */, 8, 0, read_raz, write_wi },
  { 0x00C0 /* GICR_SYNCR */, 4, 0, read_raz, write_wi },
  { 0xFFD0 /* GICR_IDREGS */, 48, 0, read_idregs, write_wi },
  { GICR_IGROUPR0, 4, 0, read_group, write_group },
  { GICR_ISENABLER0, 4, 0, read_enable, write_senable },
  { GICR_ICENABLER0, 4, 0, read_enable, write_cenable },
  { GICR_ISPENDR0, 4, 0, read_pending, write_pending },
  { GICR_ICPENDR0, 4, 0, read_raz, write_wi },
  { GICR_ISACTIVER0, 4, 0, read_active, write_sactive },
  { GICR_ICACTIVER0, 4, 0, read_active, write_cactive },
  { GICR_IPRIORITYR, 32, 0, read_priority, write_priority },
  { GICR_ICFGR0, 8, 0, read_config, write_config },
  { GICR_IGRPMODR0, 4, 0, read_raz, write_wi },
  { GICR_NSACR, 4, 0, read_raz, write_wi },
};

/* vgic_get_mmio_region() for a 32-bit access: every region here allows
 * 32-bit accesses, so what remains is alignment and the nr_irqs bound. */
static const Region *
find_region (VgicSimShm *m, gboolean redist, guint32 addr)
{
  const Region *r = redist ? redist_regions : dist_regions;
  gsize n = redist ? G_N_ELEMENTS (redist_regions) : G_N_ELEMENTS (dist_regions);

  for (gsize i = 0; i < n; i++)
    {
      if (addr < r[i].offset || addr >= r[i].offset + r[i].len)
        continue;
      if (addr & 3)
        return NULL;
      if (r[i].bits_per_irq && addr_to_intid (addr, r[i].bits_per_irq) >= m->nr_irqs)
        return NULL;
      return &r[i];
    }
  return NULL;
}

static int
uaccess (VgicSimShm *m, gboolean redist, guint32 vcpu, gboolean write,
         guint32 addr, guint32 *val)
{
  const Region *r = find_region (m, redist, addr);

  if (!r)
    {
      if (!write)
        *val = 0;
      return 0;
    }
  if (write)
    return r->write (m, vcpu, addr, *val);
  *val = r->read (m, vcpu, addr);
  return 0;
}

int
vgic_sim_dist_uaccess (VgicSimShm *m, gboolean write, guint32 offset,
                       guint32 *val)
{
  /* DIST uses vCPU 0: only shared IRQs are reachable anyway. */
  return uaccess (m, FALSE, 0, write, offset, val);
}

int
vgic_sim_redist_uaccess (VgicSimShm *m, guint32 vcpu, gboolean write,
                         guint32 offset, guint32 *val)
{
  return uaccess (m, TRUE, vcpu, write, offset, val);
}

int
vgic_sim_regs_has (VgicSimShm *m, gboolean redist, guint32 offset)
{
  return find_region (m, redist, offset) ? 0 : -ENXIO;
}

/* vgic_{read,write}_irq_line_level_info(): SGIs and IRQs at or above
 * nr_irqs are skipped.  The level is stored whatever the configuration
 * ("to avoid dependency that VM should restore irq config before line
 * level"), but only level-configured IRQs report it. */
void
vgic_sim_line_level (VgicSimShm *m, guint32 vcpu, gboolean write,
                     guint32 intid, guint32 *val)
{
  guint32 out = 0;

  for (guint32 i = 0; i < 32; i++)
    {
      VgicSimIrq *irq;

      if (intid + i < 16 || intid + i >= m->nr_irqs)
        continue;
      irq = vgic_sim_irq (m, vcpu, intid + i);
      if (write)
        {
          irq->level = (*val >> i) & 1;
          /* vgic_write_irq_line_level_info() queues each IRQ whose line
           * it raises. */
          if (irq->level)
            vgic_sim_queue_irq (m, vcpu, intid + i);
        }
      else if (!irq->edge && irq->level)
        out |= 1u << i;
    }
  if (!write)
    *val = out;
}
