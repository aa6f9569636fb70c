/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-sim-sysregs.c - the ICC_*_EL1 registers userspace reaches through
 * CPU_SYSREGS (Linux 6.1 arch/arm64/kvm/vgic-sys-reg-v3.c).  Values are
 * u64.  Most registers are fields of the vCPU's VMCR; the quirks below are
 * the kernel's and are kept on purpose.
 */
#include <errno.h>

#include "vgic-regs.h"
#include "vgic-sim-shm.h"

/* The sysreg id is op0..op2 only: attr[31:16] are ignored (attr_to_id). */
static guint32
sysreg_of (guint64 attr)
{
  return (guint32) (attr & KVM_DEV_ARM_VGIC_SYSREG_INSTR_MASK);
}

gboolean
vgic_sim_sysreg_known (guint64 attr)
{
  guint32 r = sysreg_of (attr);

  for (guint i = 0; i < 4; i++)
    if (r == ICC_AP0R_EL1 (i) || r == ICC_AP1R_EL1 (i))
      return TRUE;
  return r == ICC_PMR_EL1 || r == ICC_BPR0_EL1 || r == ICC_BPR1_EL1 ||
         r == ICC_CTLR_EL1 || r == ICC_SRE_EL1 || r == ICC_IGRPEN0_EL1 ||
         r == ICC_IGRPEN1_EL1;
}

/* vgic_v3_max_apr_idx(): from num_pri_bits, which ICC_CTLR_EL1 can shrink. */
static guint
max_apr_idx (const VgicSimCpu *c)
{
  return c->pri_bits == 7 ? 3 : c->pri_bits == 6 ? 1 : 0;
}

static guint64
get_ctlr (VgicSimShm *m, const VgicSimCpu *c)
{
  guint64 val = 0;

  val |= (guint64) (c->pri_bits - 1) << ICC_CTLR_EL1_PRIBITS_SHIFT;
  val |= (guint64) c->id_bits << ICC_CTLR_EL1_IDBITS_SHIFT;
  val |= VGIC_SIM_HOST_SEIS ? ICC_CTLR_EL1_SEIS : 0;
  val |= VGIC_SIM_HOST_A3V ? ICC_CTLR_EL1_A3V : 0;
  val |= c->cbpr ? ICC_CTLR_EL1_CBPR : 0;
  val |= c->eoimode ? ICC_CTLR_EL1_EOIMODE : 0;
  return val;
}

/* set_gic_ctlr(): PRIbits and IDbits may not exceed what the vCPU has, and
 * a smaller value *shrinks* it.  Note the order: num_pri_bits and
 * num_id_bits are updated before SEIS/A3V are checked, so a write refused
 * for SEIS/A3V has already changed them - as in the kernel. */
static int
set_ctlr (VgicSimCpu *c, guint64 val)
{
  guint pri = (guint) ((val & ICC_CTLR_EL1_PRIBITS_MASK) >> ICC_CTLR_EL1_PRIBITS_SHIFT) + 1;
  guint id = (guint) ((val & ICC_CTLR_EL1_IDBITS_MASK) >> ICC_CTLR_EL1_IDBITS_SHIFT);

  if (pri > c->pri_bits)
    return -EINVAL;
  c->pri_bits = (guint8) pri;
  if (id > c->id_bits)
    return -EINVAL;
  c->id_bits = (guint8) id;
  if (!!(val & ICC_CTLR_EL1_SEIS) != VGIC_SIM_HOST_SEIS ||
      !!(val & ICC_CTLR_EL1_A3V) != VGIC_SIM_HOST_A3V)
    return -EINVAL;
  c->cbpr = (val & ICC_CTLR_EL1_CBPR) != 0;
  c->eoimode = (val & ICC_CTLR_EL1_EOIMODE) != 0;
  return 0;
}

static int
get (VgicSimShm *m, VgicSimCpu *c, guint32 r, guint64 *val)
{
  if (r == ICC_CTLR_EL1)
    *val = get_ctlr (m, c);
  else if (r == ICC_PMR_EL1)
    *val = c->pmr;
  else if (r == ICC_BPR0_EL1)
    *val = c->bpr0;
  else if (r == ICC_BPR1_EL1)
    /* With CBPR, BPR1 reads as BPR0 + 1, saturated at 7. */
    *val = c->cbpr ? MIN (c->bpr0 + 1u, 7u) : c->bpr1;
  else if (r == ICC_IGRPEN0_EL1)
    *val = c->grpen0;
  else if (r == ICC_IGRPEN1_EL1)
    *val = c->grpen1;
  else if (r == ICC_SRE_EL1)
    /* vgic_sre is fixed at SRE|DFB|DIB for a GICv3 guest. */
    *val = ICC_SRE_EL1_SRE | (1u << 1) | (1u << 2);
  else
    {
      /* AP0Rn / AP1Rn: n = op2 & 3; n above the maximum is refused even
       * though HAS_DEVICE_ATTR reports the register. */
      guint idx = r & 3;
      gboolean ap1 = r == ICC_AP1R_EL1 (idx);

      if (idx > max_apr_idx (c))
        return -EINVAL;
      *val = ap1 ? c->ap1r[idx] : c->ap0r[idx];
    }
  return 0;
}

static int
set (VgicSimShm *m, VgicSimCpu *c, guint32 r, guint64 val)
{
  if (r == ICC_CTLR_EL1)
    return set_ctlr (c, val);
  if (r == ICC_PMR_EL1)
    c->pmr = val & 0xff;
  else if (r == ICC_BPR0_EL1)
    c->bpr0 = val & 7;
  else if (r == ICC_BPR1_EL1)
    {
      /* Ignored while CBPR is set: BPR1 is then an alias of BPR0. */
      if (!c->cbpr)
        c->bpr1 = val & 7;
    }
  else if (r == ICC_IGRPEN0_EL1)
    c->grpen0 = val & 1;
  else if (r == ICC_IGRPEN1_EL1)
    c->grpen1 = val & 1;
  else if (r == ICC_SRE_EL1)
    /* Only validated: SRE must be set; the value is not stored. */
    return (val & ICC_SRE_EL1_SRE) ? 0 : -EINVAL;
  else
    {
      guint idx = r & 3;
      gboolean ap1 = r == ICC_AP1R_EL1 (idx);

      if (idx > max_apr_idx (c))
        return -EINVAL;
      /* vgic_ap{0,1}r[] are u32: bits [63:32] are dropped. */
      if (ap1)
        c->ap1r[idx] = (guint32) val;
      else
        c->ap0r[idx] = (guint32) val;
    }
  return 0;
}

int
vgic_sim_sysreg_access (VgicSimShm *m, guint32 vcpu, gboolean write,
                        guint64 attr, guint64 *val)
{
  VgicSimCpu *c = &vgic_sim_slot (m, vcpu)->s;
  guint32 r = sysreg_of (attr);

  g_assert (vgic_sim_sysreg_known (attr));
  return write ? set (m, c, r, *val) : get (m, c, r, val);
}
