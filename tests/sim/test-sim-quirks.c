/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-sim-quirks.c - one test per uaccess quirk and error code of
 * docs/kernel-interface.md, each through real ioctl(2) calls on a sim fd.  Each
 * asserts something a model without the quirk would get wrong.
 */
#include <errno.h>
#include <linux/kvm.h>
#include <sys/ioctl.h>

#include "sim-util.h"

#define D(off) vgic_attr (0, (off))
#define R(sim, cpu, off) vgic_attr (vgic_sim_get_mpidr ((sim), (cpu)), (off))

/* ---- unimplemented / misaligned / out of range ---- */

static void
test_unimplemented_offset (void)
{
  g_autoptr (VgicSim) sim = sim_new (2, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  guint32 v = 0x1234;

  /* GICD_NSACR and offset 0x5000 are not in KVM's tables. */
  g_assert_cmpint (sim_get32 (fd, GRP_DIST, D (GICD_NSACR), &v), ==, 0);
  g_assert_cmphex (v, ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (0x5000), 0xffffffff), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (0x5000)), ==, 0);
  g_assert_cmpint (sim_has (fd, GRP_DIST, D (0x5000)), ==, -ENXIO);
  g_assert_cmpint (sim_has (fd, GRP_DIST, D (GICD_NSACR)), ==, -ENXIO);
  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, R (sim, 1, 0x0040), 1), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_REDIST, R (sim, 1, 0x0040)), ==, 0);
  g_assert_cmpint (sim_has (fd, GRP_REDIST, R (sim, 1, 0x0040)), ==, -ENXIO);
  /* ... while implemented ones are present. */
  g_assert_cmpint (sim_has (fd, GRP_DIST, D (GICD_ISENABLER + 4)), ==, 0);
  g_assert_cmpint (sim_has (fd, GRP_REDIST, R (sim, 1, GICR_ISPENDR0)), ==, 0);
}

static void
test_misaligned_offset (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);

  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ISENABLER + 6), 0xffffffff), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_ISENABLER + 4)), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_ISENABLER + 6)), ==, 0);
  g_assert_cmpint (sim_has (fd, GRP_DIST, D (GICD_ISENABLER + 6)), ==, -ENXIO);
}

static void
test_out_of_range_irq (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);

  /* IRQs 64..95 do not exist with nr_irqs = 64. */
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ISENABLER + 8), 0xffffffff), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_ISENABLER + 8)), ==, 0);
  g_assert_cmpint (sim_has (fd, GRP_DIST, D (GICD_ISENABLER + 8)), ==, -ENXIO);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_IROUTER + 8 * 64), 1), ==, 0);
  g_assert_cmpint (sim_has (fd, GRP_DIST, D (GICD_IROUTER + 8 * 64)), ==, -ENXIO);
  g_assert_cmpint (sim_has (fd, GRP_DIST, D (GICD_IROUTER + 8 * 63)), ==, 0);
}

/* ---- pending, enable, active ---- */

static void
test_ispendr_write_replaces_latch (void)
{
  g_autoptr (VgicSim) sim = sim_new (2, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);

  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ISPENDR + 4), 0x5), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ISPENDR + 4), 0x4), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_ISPENDR + 4)), ==, 0x4);

  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, R (sim, 1, GICR_ISPENDR0), 0x5), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, R (sim, 1, GICR_ISPENDR0), 0x4), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_REDIST, R (sim, 1, GICR_ISPENDR0)), ==, 0x4);
  g_assert_cmphex (sim_read32 (fd, GRP_REDIST, R (sim, 0, GICR_ISPENDR0)), ==, 0);
}

static void
test_icpendr_raz_wi (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);

  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ISPENDR + 4), 0xf0), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ICPENDR + 4), 0xffffffff), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_ISPENDR + 4)), ==, 0xf0);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_ICPENDR + 4)), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, R (sim, 0, GICR_ISPENDR0), 0x3), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, R (sim, 0, GICR_ICPENDR0), ~0u), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_REDIST, R (sim, 0, GICR_ISPENDR0)), ==, 0x3);
}

static void
test_enabler_acts_on_set_bits (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);

  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ISENABLER + 4), 0x1), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ISENABLER + 4), 0x2), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_ISENABLER + 4)), ==, 0x3);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ICENABLER + 4), 0x1), ==, 0);
  /* Both registers read the enable bits. */
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_ISENABLER + 4)), ==, 0x2);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_ICENABLER + 4)), ==, 0x2);
  /* SGIs come up enabled: writing 0 to ISENABLER0 changes nothing. */
  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, R (sim, 0, GICR_ISENABLER0), 0), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_REDIST, R (sim, 0, GICR_ISENABLER0)), ==, 0xffff);
}

static void
test_activer_acts_on_set_bits (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);

  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ISACTIVER + 4), 0x5), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ISACTIVER + 4), 0x2), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_ISACTIVER + 4)), ==, 0x7);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ICACTIVER + 4), 0x4), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_ICACTIVER + 4)), ==, 0x3);
}

/* ---- identification and status ---- */

static void
test_gicd_typer_computed (void)
{
  g_autoptr (VgicSim) plain = sim_new (1, 128, FALSE, 5);
  g_autoptr (VgicSim) its = sim_new (1, 256, TRUE, 5);

  g_assert_cmphex (sim_read32 (vgic_sim_get_fd (plain), GRP_DIST, D (GICD_TYPER)),
                   ==, (128 / 32 - 1) | (9u << 19));
  g_assert_cmphex (sim_read32 (vgic_sim_get_fd (its), GRP_DIST, D (GICD_TYPER)),
                   ==, (256 / 32 - 1) | (15u << 19) | (1u << 17));
  g_assert_cmpint (sim_set32 (vgic_sim_get_fd (plain), GRP_DIST, D (GICD_TYPER), 0), ==, 0);
  g_assert_cmphex (sim_read32 (vgic_sim_get_fd (plain), GRP_DIST, D (GICD_TYPER)),
                   ==, (128 / 32 - 1) | (9u << 19));
}

static void
test_gicd_typer2_write_must_match (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  VgicSimConfig c = { .nr_vcpus = 1, .nr_irqs = 64, .gicv4_1 = TRUE };
  g_autoptr (VgicSim) v41 = sim_new_config (&c);
  int fd = vgic_sim_get_fd (sim);

  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_TYPER2)), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_TYPER2), 0), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_TYPER2), 1u << 8), ==, -EINVAL);
  /* A GICv4.1 host reports nASSGIcap, and then 0 does not match. */
  g_assert_cmphex (sim_read32 (vgic_sim_get_fd (v41), GRP_DIST, D (GICD_TYPER2)), ==, 1u << 8);
  g_assert_cmpint (sim_set32 (vgic_sim_get_fd (v41), GRP_DIST, D (GICD_TYPER2), 0), ==, -EINVAL);
}

static void
test_gicd_iidr_revision_rules (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  guint32 iidr = sim_read32 (fd, GRP_DIST, D (GICD_IIDR));

  g_assert_cmphex (iidr, ==, 0x4b00343b);	/* KVM, revision 3, Arm */
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_IIDR), iidr ^ (1u << 24)), ==, -EINVAL);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_IIDR), (iidr & ~0xf000u) | 0x1000), ==, -EINVAL);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_IIDR), (iidr & ~0xf000u) | 0x4000), ==, -EINVAL);
  /* Revision 2 is accepted, and GICR_CTLR then loses IR|CES. */
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_IIDR), (iidr & ~0xf000u) | 0x2000), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_IIDR)), ==, 0x4b00243b);
  g_assert_cmphex (sim_read32 (fd, GRP_REDIST, R (sim, 0, GICR_CTLR)), ==, 0);
}

static void
test_gicd_statusr_reads_ones (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);

  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_STATUSR)), ==, 0xffffffff);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_STATUSR), 0), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_STATUSR)), ==, 0xffffffff);
}

static void
test_gicr_statusr_waker_raz_wi (void)
{
  g_autoptr (VgicSim) sim = sim_new (2, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);

  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, R (sim, 1, GICR_STATUSR), 0xf), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, R (sim, 1, GICR_WAKER), 0x2), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_REDIST, R (sim, 1, GICR_STATUSR)), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_REDIST, R (sim, 1, GICR_WAKER)), ==, 0);
}

static void
test_gicr_typer_computed (void)
{
  const guint32 mpidrs[] = { 0x000100, 0x000101, 0x010000, 0x02010203 };
  VgicSimConfig c = { .nr_vcpus = 4, .mpidrs = mpidrs, .nr_irqs = 64, .has_its = TRUE };
  g_autoptr (VgicSim) sim = sim_new_config (&c);
  g_autoptr (VgicSim) plain = sim_new (2, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);

  for (guint i = 0; i < 4; i++)
    {
      guint32 lo = sim_read32 (fd, GRP_REDIST, vgic_attr (mpidrs[i], GICR_TYPER));
      guint32 hi = sim_read32 (fd, GRP_REDIST, vgic_attr (mpidrs[i], GICR_TYPER + 4));

      g_assert_cmphex (lo, ==, (i << 8) | GICR_TYPER_PLPIS | (i == 3 ? GICR_TYPER_LAST : 0));
      /* Aff3 is not reported (6.1 keeps [23:0]). */
      g_assert_cmphex (hi, ==, mpidrs[i] & 0xffffff);
    }
  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, vgic_attr (mpidrs[0], GICR_TYPER), 0), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_REDIST, vgic_attr (mpidrs[0], GICR_TYPER)), ==,
                   GICR_TYPER_PLPIS);
  /* No ITS: no PLPIS. */
  g_assert_cmphex (sim_read32 (vgic_sim_get_fd (plain), GRP_REDIST, R (plain, 0, GICR_TYPER)), ==, 0);
  g_assert_cmphex (sim_read32 (vgic_sim_get_fd (plain), GRP_REDIST, R (plain, 1, GICR_TYPER)), ==,
                   (1u << 8) | GICR_TYPER_LAST);
}

/* ---- IROUTER ---- */

static void
test_irouter_upper_word_raz_wi (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);

  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_IROUTER + 8 * 40), 0xff010203), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_IROUTER + 8 * 40 + 4), 0xff), ==, 0);
  /* Only [23:0] kept; the upper word reads 0. */
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_IROUTER + 8 * 40)), ==, 0x010203);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_IROUTER + 8 * 40 + 4)), ==, 0);
}

static void
test_irouter_qemu_offsets (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 128, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  g_autoptr (VgicSimState) s = NULL;

  /* QEMU's "IROUTER<41> lo" at 0x6000 + 4*41 is IRQ 20's upper word: a
   * private IRQ's slot in the RAZ/WI part - present, but inert. */
  g_assert_cmpint (sim_has (fd, GRP_DIST, D (GICD_IROUTER + 4 * 41)), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_IROUTER + 4 * 41), 0x5), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_IROUTER + 4 * 41)), ==, 0);
  /* "IROUTER<80> lo" is IRQ 40's lo; "IROUTER<81> lo" IRQ 40's upper word. */
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_IROUTER + 4 * 80), 0x7), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_IROUTER + 4 * 81), 0x9), ==, 0);
  s = vgic_sim_state_get (sim);
  g_assert_cmphex (s->spis[40 - 32].route, ==, 0x7);
  g_assert_cmphex (s->spis[80 - 32].route, ==, 0);
  g_assert_cmphex (s->spis[81 - 32].route, ==, 0);
}

/* ---- LEVEL_INFO ---- */

static void
test_level_info_get_reports_level_only (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  guint64 attr = vgic_attr_level (vgic_sim_get_mpidr (sim, 0), 32);

  /* IRQs 32 and 33 edge (ICFGR2 bits 1 and 3). */
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ICFGR + 8), 0xa), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_LEVEL, attr, 0x3), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_LEVEL, attr), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_LEVEL, attr, 0xc), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_LEVEL, attr), ==, 0xc);
}

static void
test_level_info_set_stores_level_for_edge (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  guint64 attr = vgic_attr_level (vgic_sim_get_mpidr (sim, 0), 32);

  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ICFGR + 8), 0xa), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_LEVEL, attr, 0x3), ==, 0);
  /* Back to level: the level written while edge was kept. */
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ICFGR + 8), 0), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_LEVEL, attr), ==, 0x3);
}

static void
test_level_info_encoding (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  guint32 m = vgic_sim_get_mpidr (sim, 0), v = 0;

  g_assert_cmpint (sim_get32 (fd, GRP_LEVEL, vgic_attr (m, 33), &v), ==, -EINVAL);
  g_assert_cmpint (sim_get32 (fd, GRP_LEVEL, vgic_attr (m, (1u << 10) | 32), &v), ==, -EINVAL);
  g_assert_cmpint (sim_set32 (fd, GRP_LEVEL, vgic_attr (m, (1u << 10) | 32), 1), ==, -EINVAL);
  /* HAS checks the info field only. */
  g_assert_cmpint (sim_has (fd, GRP_LEVEL, vgic_attr (m, 33)), ==, 0);
  g_assert_cmpint (sim_has (fd, GRP_LEVEL, vgic_attr (m, (1u << 10) | 32)), ==, -ENXIO);
}

static void
test_level_info_ppis_per_vcpu (void)
{
  g_autoptr (VgicSim) sim = sim_new (2, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  guint32 m0 = vgic_sim_get_mpidr (sim, 0), m1 = vgic_sim_get_mpidr (sim, 1);

  /* PPIs (16-31) per vCPU; SGI bits (0-15) are skipped. */
  g_assert_cmpint (sim_set32 (fd, GRP_LEVEL, vgic_attr_level (m1, 0), 0xffffffff), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_LEVEL, vgic_attr_level (m1, 0)), ==, 0xffff0000);
  g_assert_cmphex (sim_read32 (fd, GRP_LEVEL, vgic_attr_level (m0, 0)), ==, 0);
  /* SPIs ignore the mpidr.  They start edge (kvm_vgic_dist_init()), and
   * GET reports level-configured ones only: make SPIs 32-47 level first. */
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ICFGR + 8), 0), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_LEVEL, vgic_attr_level (m1, 32), 0x10), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_LEVEL, vgic_attr_level (m0, 32)), ==, 0x10);
}

/* ---- ICC ---- */

#define S(sim, cpu, reg) vgic_attr (vgic_sim_get_mpidr ((sim), (cpu)), (reg))

static void
test_icc_ctlr_bits_may_not_grow (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 7);
  int fd = vgic_sim_get_fd (sim);
  guint64 ctlr = sim_read64 (fd, GRP_SYSREG, S (sim, 0, ICC_CTLR_EL1));
  guint64 pri5 = (ctlr & ~ICC_CTLR_EL1_PRIBITS_MASK) | (4ULL << ICC_CTLR_EL1_PRIBITS_SHIFT);

  g_assert_cmphex ((ctlr & ICC_CTLR_EL1_PRIBITS_MASK) >> ICC_CTLR_EL1_PRIBITS_SHIFT, ==, 6);
  /* Shrink to 5 bits, then growing back is refused. */
  g_assert_cmpint (sim_set64 (fd, GRP_SYSREG, S (sim, 0, ICC_CTLR_EL1), pri5), ==, 0);
  g_assert_cmphex (sim_read64 (fd, GRP_SYSREG, S (sim, 0, ICC_CTLR_EL1)), ==, pri5);
  g_assert_cmpint (sim_set64 (fd, GRP_SYSREG, S (sim, 0, ICC_CTLR_EL1), ctlr), ==, -EINVAL);
  /* IDbits may not grow either. */
  g_assert_cmpint (sim_set64 (fd, GRP_SYSREG, S (sim, 0, ICC_CTLR_EL1),
                              pri5 | ICC_CTLR_EL1_IDBITS_MASK), ==, -EINVAL);
}

static void
test_icc_ctlr_seis_a3v_must_match (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  guint64 ctlr = sim_read64 (fd, GRP_SYSREG, S (sim, 0, ICC_CTLR_EL1));

  g_assert_cmpint (sim_set64 (fd, GRP_SYSREG, S (sim, 0, ICC_CTLR_EL1), ctlr), ==, 0);
  g_assert_cmpint (sim_set64 (fd, GRP_SYSREG, S (sim, 0, ICC_CTLR_EL1),
                              ctlr ^ ICC_CTLR_EL1_A3V), ==, -EINVAL);
  g_assert_cmpint (sim_set64 (fd, GRP_SYSREG, S (sim, 0, ICC_CTLR_EL1),
                              ctlr ^ ICC_CTLR_EL1_SEIS), ==, -EINVAL);
}

static void
test_icc_sre_set_needs_sre (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);

  g_assert_cmpint (sim_set64 (fd, GRP_SYSREG, S (sim, 0, ICC_SRE_EL1), 0x6), ==, -EINVAL);
  g_assert_cmpint (sim_set64 (fd, GRP_SYSREG, S (sim, 0, ICC_SRE_EL1), 0x1), ==, 0);
  g_assert_cmphex (sim_read64 (fd, GRP_SYSREG, S (sim, 0, ICC_SRE_EL1)), ==, 0x7);
}

static void
test_icc_bpr1_ignored_while_cbpr (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  guint64 ctlr = sim_read64 (fd, GRP_SYSREG, S (sim, 0, ICC_CTLR_EL1));

  g_assert_cmpint (sim_set64 (fd, GRP_SYSREG, S (sim, 0, ICC_BPR0_EL1), 2), ==, 0);
  g_assert_cmpint (sim_set64 (fd, GRP_SYSREG, S (sim, 0, ICC_CTLR_EL1),
                              ctlr | ICC_CTLR_EL1_CBPR), ==, 0);
  g_assert_cmpint (sim_set64 (fd, GRP_SYSREG, S (sim, 0, ICC_BPR1_EL1), 5), ==, 0);
  g_assert_cmphex (sim_read64 (fd, GRP_SYSREG, S (sim, 0, ICC_BPR1_EL1)), ==, 3);
  g_assert_cmpint (sim_set64 (fd, GRP_SYSREG, S (sim, 0, ICC_CTLR_EL1), ctlr), ==, 0);
  g_assert_cmphex (sim_read64 (fd, GRP_SYSREG, S (sim, 0, ICC_BPR1_EL1)), ==, 0);
  g_assert_cmpint (sim_set64 (fd, GRP_SYSREG, S (sim, 0, ICC_BPR1_EL1), 5), ==, 0);
  g_assert_cmphex (sim_read64 (fd, GRP_SYSREG, S (sim, 0, ICC_BPR1_EL1)), ==, 5);
}

static void
test_icc_apr_index_above_max (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 7);
  int fd = vgic_sim_get_fd (sim);
  guint64 ctlr = sim_read64 (fd, GRP_SYSREG, S (sim, 0, ICC_CTLR_EL1)), v;

  g_assert_cmpint (sim_set64 (fd, GRP_SYSREG, S (sim, 0, ICC_AP1R_EL1 (3)), 1), ==, 0);
  /* Shrink PRIbits to 5: only AP*R0 remain. */
  g_assert_cmpint (sim_set64 (fd, GRP_SYSREG, S (sim, 0, ICC_CTLR_EL1),
                              (ctlr & ~ICC_CTLR_EL1_PRIBITS_MASK) |
                              (4ULL << ICC_CTLR_EL1_PRIBITS_SHIFT)), ==, 0);
  g_assert_cmpint (sim_get64 (fd, GRP_SYSREG, S (sim, 0, ICC_AP1R_EL1 (3)), &v), ==, -EINVAL);
  g_assert_cmpint (sim_set64 (fd, GRP_SYSREG, S (sim, 0, ICC_AP0R_EL1 (1)), 1), ==, -EINVAL);
  g_assert_cmpint (sim_has (fd, GRP_SYSREG, S (sim, 0, ICC_AP0R_EL1 (1))), ==, 0);
  g_assert_cmpint (sim_get64 (fd, GRP_SYSREG, S (sim, 0, ICC_AP0R_EL1 (0)), &v), ==, 0);
}

static void
test_icc_apr_is_u32 (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);

  g_assert_cmpint (sim_set64 (fd, GRP_SYSREG, S (sim, 0, ICC_AP0R_EL1 (0)), 0x100000002ULL), ==, 0);
  g_assert_cmphex (sim_read64 (fd, GRP_SYSREG, S (sim, 0, ICC_AP0R_EL1 (0))), ==, 2);
}

/* ---- errors ---- */

static void
test_efault_bad_pointer (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  void *bad = (void *) 8;

  g_assert_cmpint (ioctl (fd, KVM_GET_DEVICE_ATTR, bad), ==, -1);
  g_assert_cmpint (errno, ==, EFAULT);
  g_assert_cmpint (sim_ioctl (fd, KVM_GET_DEVICE_ATTR, GRP_DIST, D (GICD_CTLR), bad), ==, -EFAULT);
  g_assert_cmpint (sim_ioctl (fd, KVM_SET_DEVICE_ATTR, GRP_DIST, D (GICD_CTLR), bad), ==, -EFAULT);
  g_assert_cmpint (sim_ioctl (fd, KVM_GET_DEVICE_ATTR, GRP_SYSREG, S (sim, 0, ICC_PMR_EL1), bad),
                   ==, -EFAULT);
  g_assert_cmpint (sim_ioctl (fd, KVM_SET_DEVICE_ATTR, GRP_SYSREG, S (sim, 0, ICC_PMR_EL1), bad),
                   ==, -EFAULT);
}

static void
test_einval_bad_mpidr (void)
{
  g_autoptr (VgicSim) sim = sim_new (2, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  guint32 v;

  g_assert_cmpint (sim_get32 (fd, GRP_REDIST, vgic_attr (0xdead, GICR_CTLR), &v), ==, -EINVAL);
  g_assert_cmpint (sim_has (fd, GRP_REDIST, vgic_attr (0xdead, GICR_CTLR)), ==, -EINVAL);
  g_assert_cmpint (sim_get32 (fd, GRP_LEVEL, vgic_attr_level (0xdead, 32), &v), ==, -EINVAL);
  g_assert_cmpint (sim_set64 (fd, GRP_SYSREG, vgic_attr (0xdead, ICC_PMR_EL1), 0), ==, -EINVAL);
  /* DIST ignores the mpidr. */
  g_assert_cmpint (sim_get32 (fd, GRP_DIST, vgic_attr (0xdead, GICD_CTLR), &v), ==, 0);
}

static void
test_enoent_unknown_sysreg (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  guint64 icc_sgi1r = S (sim, 0, VGIC_SYSREG (3, 0, 12, 11, 5)), v;

  g_assert_cmpint (sim_get64 (fd, GRP_SYSREG, icc_sgi1r, &v), ==, -ENOENT);
  g_assert_cmpint (sim_set64 (fd, GRP_SYSREG, icc_sgi1r, 0), ==, -ENOENT);
  g_assert_cmpint (sim_has (fd, GRP_SYSREG, icc_sgi1r), ==, -ENXIO);
}

static void
test_ebusy_vcpu_running (void)
{
  g_autoptr (VgicSim) sim = sim_new (4, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  guint32 v;

  vgic_sim_set_vcpu_running (sim, 2, TRUE);
  g_assert_cmpint (sim_get32 (fd, GRP_DIST, D (GICD_CTLR), &v), ==, -EBUSY);
  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, R (sim, 0, GICR_ISPENDR0), 1), ==, -EBUSY);
  g_assert_cmpint (sim_has (fd, GRP_DIST, D (GICD_CTLR)), ==, 0);
  vgic_sim_set_vcpu_running (sim, 2, FALSE);
  g_assert_cmpint (sim_get32 (fd, GRP_DIST, D (GICD_CTLR), &v), ==, 0);
  /* The refused SET left nothing behind. */
  g_assert_cmphex (sim_read32 (fd, GRP_REDIST, R (sim, 0, GICR_ISPENDR0)), ==, 0);
}

static void
test_ebusy_uninitialized (void)
{
  VgicSimConfig c = { .nr_vcpus = 2, .nr_irqs = 96, .uninitialized = TRUE, .batch = TRUE };
  g_autoptr (VgicSim) sim = sim_new_config (&c);
  int fd = vgic_sim_get_fd (sim);
  guint32 v;

  g_assert_false (vgic_sim_initialized (sim));
  g_assert_cmpint (sim_get32 (fd, GRP_DIST, D (GICD_CTLR), &v), ==, -EBUSY);
  g_assert_cmpint (sim_has (fd, GRP_DIST, D (GICD_CTLR)), ==, 0);
  g_assert_cmphex (sim_read32 (fd, KVM_DEV_ARM_VGIC_GRP_NR_IRQS, 0), ==, 96);
  g_assert_cmpint (sim_has (fd, KVM_DEV_ARM_VGIC_GRP_CTRL, KVM_DEV_ARM_VGIC_CTRL_INIT), ==, 0);
  g_assert_cmpint (sim_ioctl (fd, KVM_SET_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_CTRL,
                              KVM_DEV_ARM_VGIC_CTRL_INIT, NULL), ==, 0);
  g_assert_true (vgic_sim_initialized (sim));
  /* vgic_init: revision 3, SPIs group 1. */
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_IIDR)), ==, 0x4b00343b);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_IGROUPR + 4)), ==, 0xffffffff);
  g_assert_cmpint (sim_ioctl (fd, KVM_SET_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_CTRL,
                              KVM_DEV_ARM_VGIC_CTRL_INIT, NULL), ==, 0);
}

static void
test_enxio_unknown_group_or_ctrl (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);
  guint32 v;

  g_assert_cmpint (sim_get32 (fd, 42, 0, &v), ==, -ENXIO);
  g_assert_cmpint (sim_set32 (fd, 42, 0, 0), ==, -ENXIO);
  g_assert_cmpint (sim_has (fd, 42, 0), ==, -ENXIO);
  g_assert_cmpint (sim_get32 (fd, KVM_DEV_ARM_VGIC_GRP_ITS_REGS, 0, &v), ==, -ENXIO);
  g_assert_cmpint (sim_ioctl (fd, KVM_SET_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_CTRL, 7, NULL), ==, -ENXIO);
  g_assert_cmpint (sim_has (fd, KVM_DEV_ARM_VGIC_GRP_CTRL, 7), ==, -ENXIO);
  g_assert_cmpint (sim_ioctl (fd, KVM_GET_DEVICE_ATTR, KVM_DEV_ARM_VGIC_GRP_CTRL,
                              KVM_DEV_ARM_VGIC_CTRL_INIT, &v), ==, -ENXIO);
}

/* ---- write effects ---- */

static void
test_gicd_ctlr_write_sets_enable (void)
{
  VgicSimConfig c = { .nr_vcpus = 1, .nr_irqs = 64, .gicv4_1 = TRUE };
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  g_autoptr (VgicSim) v41 = sim_new_config (&c);
  int fd = vgic_sim_get_fd (sim), fd41 = vgic_sim_get_fd (v41);
  guint32 all = GICD_CTLR_ENABLE_G1 | GICD_CTLR_NASSGIREQ;

  /* ARE_NS and DS always read 1; nASSGIreq only sticks on a GICv4.1. */
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_CTLR)), ==, 0x50);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_CTLR), all), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_CTLR)), ==, 0x52);
  g_assert_cmpint (sim_set32 (fd41, GRP_DIST, D (GICD_CTLR), all), ==, 0);
  g_assert_cmphex (sim_read32 (fd41, GRP_DIST, D (GICD_CTLR)), ==, 0x152);
  g_assert_cmpint (sim_set32 (fd41, GRP_DIST, D (GICD_CTLR), 0), ==, 0);
  g_assert_cmphex (sim_read32 (fd41, GRP_DIST, D (GICD_CTLR)), ==, 0x50);
}

static void
test_gicr_ctlr_ir_ces_and_lpis (void)
{
  g_autoptr (VgicSim) plain = sim_new (1, 64, FALSE, 5);
  g_autoptr (VgicSim) its = sim_new (1, 64, TRUE, 5);
  int fd = vgic_sim_get_fd (plain), fdi = vgic_sim_get_fd (its);

  g_assert_cmphex (sim_read32 (fd, GRP_REDIST, R (plain, 0, GICR_CTLR)), ==, 0x6);
  /* EnableLPIs only with an ITS. */
  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, R (plain, 0, GICR_CTLR), 1), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_REDIST, R (plain, 0, GICR_CTLR)), ==, 0x6);
  g_assert_cmpint (sim_set32 (fdi, GRP_REDIST, R (its, 0, GICR_CTLR), 1), ==, 0);
  g_assert_cmphex (sim_read32 (fdi, GRP_REDIST, R (its, 0, GICR_CTLR)), ==, 0x7);
}

static void
test_lpi_bases_ignored_once_enabled (void)
{
  g_autoptr (VgicSim) sim = sim_new (2, 64, TRUE, 5);
  int fd = vgic_sim_get_fd (sim);

  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, R (sim, 0, GICR_PROPBASER), 0x10000f80 | 13), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_REDIST, R (sim, 0, GICR_PROPBASER)), ==, 0x10000f80 | 13);
  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, R (sim, 0, GICR_PENDBASER), 0x20000580), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, R (sim, 0, GICR_CTLR), 1), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, R (sim, 0, GICR_PROPBASER), 0x30000f80), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, R (sim, 0, GICR_PENDBASER), 0x40000580), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_REDIST, R (sim, 0, GICR_PROPBASER)), ==, 0x10000f80 | 13);
  g_assert_cmphex (sim_read32 (fd, GRP_REDIST, R (sim, 0, GICR_PENDBASER)), ==, 0x20000580);
  /* PROPBASER is one per VM: vCPU 1 (LPIs off) still writes it. */
  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, R (sim, 1, GICR_PROPBASER), 0x30000f80), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_REDIST, R (sim, 0, GICR_PROPBASER)), ==, 0x30000f80);
}

static void
test_baser_sanitised (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, TRUE, 5);
  int fd = vgic_sim_get_fd (sim);

  /* Outer shareable becomes inner; inner nC becomes RaWb; RES0 cleared. */
  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, R (sim, 0, GICR_PENDBASER), 0x10000880 | 0x7f), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_REDIST, R (sim, 0, GICR_PENDBASER)), ==, 0x10000580);
  /* PTZ (bit 62) is never read back. */
  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, R (sim, 0, GICR_PENDBASER + 4), 0x40000001), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_REDIST, R (sim, 0, GICR_PENDBASER + 4)), ==, 0x1);
}

static void
test_priority_keeps_five_bits (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 7);
  int fd = vgic_sim_get_fd (sim);

  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_IPRIORITYR + 32), 0xffffffff), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_IPRIORITYR + 32)), ==, 0xf8f8f8f8);
  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, R (sim, 0, GICR_IPRIORITYR + 28), 0x01234567), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_REDIST, R (sim, 0, GICR_IPRIORITYR + 28)), ==, 0x00204060);
}

static void
test_private_config_read_only (void)
{
  g_autoptr (VgicSim) sim = sim_new (1, 64, FALSE, 5);
  int fd = vgic_sim_get_fd (sim);

  g_assert_cmphex (sim_read32 (fd, GRP_REDIST, R (sim, 0, GICR_ICFGR0)), ==, 0xaaaaaaaa);
  g_assert_cmpint (sim_set32 (fd, GRP_REDIST, R (sim, 0, GICR_ICFGR1), 0xaaaaaaaa), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_REDIST, R (sim, 0, GICR_ICFGR1)), ==, 0);
  g_assert_cmpint (sim_set32 (fd, GRP_DIST, D (GICD_ICFGR + 8), 0xaaaaaaaa), ==, 0);
  g_assert_cmphex (sim_read32 (fd, GRP_DIST, D (GICD_ICFGR + 8)), ==, 0xaaaaaaaa);
}

int
main (int argc, char **argv)
{
  sim_test_init (&argc, &argv);

  g_test_add_func ("/sim/quirk/unimplemented-offset-raz-wi-no-error", test_unimplemented_offset);
  g_test_add_func ("/sim/quirk/misaligned-offset-raz-wi-no-error", test_misaligned_offset);
  g_test_add_func ("/sim/quirk/out-of-range-irq-raz-wi-no-error", test_out_of_range_irq);
  g_test_add_func ("/sim/quirk/ispendr-write-replaces-latch", test_ispendr_write_replaces_latch);
  g_test_add_func ("/sim/quirk/icpendr-raz-wi", test_icpendr_raz_wi);
  g_test_add_func ("/sim/quirk/enabler-acts-on-set-bits", test_enabler_acts_on_set_bits);
  g_test_add_func ("/sim/quirk/activer-acts-on-set-bits", test_activer_acts_on_set_bits);
  g_test_add_func ("/sim/quirk/gicd-typer-computed-write-ignored", test_gicd_typer_computed);
  g_test_add_func ("/sim/quirk/gicd-typer2-write-must-equal-read", test_gicd_typer2_write_must_match);
  g_test_add_func ("/sim/quirk/gicd-iidr-revision-rules", test_gicd_iidr_revision_rules);
  g_test_add_func ("/sim/quirk/gicd-statusr-reads-ones-ignores-writes", test_gicd_statusr_reads_ones);
  g_test_add_func ("/sim/quirk/gicr-statusr-waker-raz-wi", test_gicr_statusr_waker_raz_wi);
  g_test_add_func ("/sim/quirk/gicr-typer-computed", test_gicr_typer_computed);
  g_test_add_func ("/sim/quirk/irouter-upper-word-raz-wi-keeps-aff-23-0", test_irouter_upper_word_raz_wi);
  g_test_add_func ("/sim/quirk/irouter-qemu-4n-offsets-decode-as-kernel", test_irouter_qemu_offsets);
  g_test_add_func ("/sim/quirk/level-info-get-reports-level-only", test_level_info_get_reports_level_only);
  g_test_add_func ("/sim/quirk/level-info-set-stores-level-for-edge", test_level_info_set_stores_level_for_edge);
  g_test_add_func ("/sim/quirk/level-info-encoding-einval", test_level_info_encoding);
  g_test_add_func ("/sim/quirk/level-info-ppis-per-vcpu-spis-ignore-mpidr", test_level_info_ppis_per_vcpu);
  g_test_add_func ("/sim/quirk/icc-ctlr-pribits-idbits-may-not-grow", test_icc_ctlr_bits_may_not_grow);
  g_test_add_func ("/sim/quirk/icc-ctlr-seis-a3v-must-match", test_icc_ctlr_seis_a3v_must_match);
  g_test_add_func ("/sim/quirk/icc-sre-set-needs-sre", test_icc_sre_set_needs_sre);
  g_test_add_func ("/sim/quirk/icc-bpr1-ignored-while-cbpr", test_icc_bpr1_ignored_while_cbpr);
  g_test_add_func ("/sim/quirk/icc-apr-index-above-max-einval-has-present", test_icc_apr_index_above_max);
  g_test_add_func ("/sim/quirk/icc-apr-is-u32", test_icc_apr_is_u32);
  g_test_add_func ("/sim/quirk/gicd-ctlr-write-sets-enable-and-nassgireq", test_gicd_ctlr_write_sets_enable);
  g_test_add_func ("/sim/quirk/gicr-ctlr-ir-ces-at-rev3-enable-lpis-needs-its", test_gicr_ctlr_ir_ces_and_lpis);
  g_test_add_func ("/sim/quirk/lpi-bases-write-ignored-once-lpis-enabled", test_lpi_bases_ignored_once_enabled);
  g_test_add_func ("/sim/quirk/lpi-bases-sanitised-ptz-reads-zero", test_baser_sanitised);
  g_test_add_func ("/sim/quirk/priority-keeps-5-bits", test_priority_keeps_five_bits);
  g_test_add_func ("/sim/quirk/sgi-ppi-config-read-only", test_private_config_read_only);
  g_test_add_func ("/sim/error/efault-bad-pointer", test_efault_bad_pointer);
  g_test_add_func ("/sim/error/einval-bad-mpidr", test_einval_bad_mpidr);
  g_test_add_func ("/sim/error/enoent-unknown-sysreg-has-enxio", test_enoent_unknown_sysreg);
  g_test_add_func ("/sim/error/ebusy-vcpu-running", test_ebusy_vcpu_running);
  g_test_add_func ("/sim/error/ebusy-uninitialized-ctrl-init", test_ebusy_uninitialized);
  g_test_add_func ("/sim/error/enxio-unknown-group-or-ctrl-attr", test_enxio_unknown_group_or_ctrl);

  return g_test_run ();
}
