/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-dump.c - a state record as a text table for people (`vgicctl dump`).
 *
 * The record is a flat set of (group, attr, value) registers; this file turns
 * it back into per-IRQ and per-vCPU facts.  Every value is looked up by the
 * attr the save plan reads it with (vgic-plan.c): DIST attrs carry mpidr 0,
 * REDIST, CPU_SYSREGS and per-vCPU LEVEL_INFO attrs carry the vCPU's
 * affinity, and the SPI line levels carry vCPU 0's affinity.  Anything the
 * record lacks prints as "?" instead of failing, so that a damaged or partial
 * record can still be looked at.
 *
 * Routes need care.  QEMU 10.0 (and so vgicd, on purpose; see the top of
 * vgic-plan.c) reads GICD_IROUTER<n> at 0x6000 + 4n and 0x6000 + 4n + 4,
 * but KVM decodes an offset o as the route of IRQ (o - 0x6000) / 8, with only
 * the lower word (o % 8 == 0) meaningful and the upper word RAZ.  QEMU's
 * accesses therefore reach the real routes of SPIs 32..nr_irqs/2 only; a
 * version 2 record adds the others at their architected offsets, a version
 * 1 record has none of them.  Either way this dump reads each route at
 * KVM's offset, the way KVM stored it, not the way QEMU meant it.
 */
#include <inttypes.h>
#include <string.h>

#include "vgic-dump.h"
#include "vgic-regs.h"

/* Field values of an IRQ row: 0/1 or a byte, or one of these. */
#define MISSING (-1)		/* the register is not in the record: "?" */
#define NOT_CARRIED (-2)	/* a route the record cannot hold: "-" */

/* KVM keeps Aff2.Aff1.Aff0 of a route and drops the rest (vgic-mmio-v3.c). */
#define IROUTER_AFF_MASK 0x00ffffffu

#define ICC_SRE_EL1_DFB		(1ULL << 1)
#define ICC_SRE_EL1_DIB		(1ULL << 2)

/* Physical address fields of PROPBASER [51:12] and PENDBASER [51:16]. */
#define PROPBASER_PA_MASK	0x000ffffffffff000ULL
#define PENDBASER_PA_MASK	0x000fffffffff0000ULL
#define PROPBASER_IDBITS_MASK	0x1fULL
#define PENDBASER_PTZ		(1ULL << 62)

typedef struct {
  const VgicShape *shape;
  const VgicValues *values;
  gboolean routes;	/* the record carries every SPI's route (version 2) */
  gboolean qemu_fields;	/* the values are QEMU's fields, not a record's */
  GString *out;
} Dump;

/* The state of one IRQ, each field 0/1 (priority: 0..255), or MISSING. */
typedef struct {
  int group, enabled, pending, active, priority, edge, level;
  gint64 route;		/* affinity, MISSING or NOT_CARRIED (SPIs only) */
} IrqState;

static gboolean
lookup (const Dump *d, uint32_t group, uint64_t attr, uint64_t *value)
{
  return vgic_values_lookup (d->values, group, attr, value);
}

/* Bit @bit of a register, or MISSING. */
static int
reg_bit (const Dump *d, uint32_t group, uint64_t attr, guint bit)
{
  uint64_t v;

  return lookup (d, group, attr, &v) ? (int) ((v >> bit) & 1) : MISSING;
}

/* Byte @byte of a register (priorities: 8 bits per IRQ), or MISSING. */
static int
reg_byte (const Dump *d, uint32_t group, uint64_t attr, guint byte)
{
  uint64_t v;

  return lookup (d, group, attr, &v) ? (int) ((v >> (8 * byte)) & 0xff) : MISSING;
}

static const char *
fmt_bit (int v)
{
  return v == MISSING ? "?" : v ? "1" : "0";
}

static const char *
fmt_prio (int v, char buf[8])
{
  if (v == MISSING)
    return "?";
  g_snprintf (buf, 8, "0x%02x", (guint) v);
  return buf;
}

static const char *
fmt_config (int edge)
{
  return edge == MISSING ? "?" : edge ? "edge" : "level";
}

/* Affinity packed Aff3.Aff2.Aff1.Aff0, as a.b.c.d. */
static const char *
fmt_aff (uint32_t aff, char buf[16])
{
  g_snprintf (buf, 16, "%u.%u.%u.%u", aff >> 24, (aff >> 16) & 0xff,
              (aff >> 8) & 0xff, aff & 0xff);
  return buf;
}

/* ------------------------------------------------------------------ */
/* Reading IRQ state out of the bitmap registers                      */
/* ------------------------------------------------------------------ */

/* SGI or PPI @irq (0..31) of vCPU @cpu, from its redistributor. */
static IrqState
private_irq (const Dump *d, uint32_t cpu, guint irq)
{
  uint32_t m = d->shape->mpidrs[cpu];
  IrqState s;

  s.group = reg_bit (d, VGIC_GRP_REDIST, vgic_attr (m, GICR_IGROUPR0), irq);
  s.enabled = reg_bit (d, VGIC_GRP_REDIST, vgic_attr (m, GICR_ISENABLER0), irq);
  s.pending = reg_bit (d, VGIC_GRP_REDIST, vgic_attr (m, GICR_ISPENDR0), irq);
  s.active = reg_bit (d, VGIC_GRP_REDIST, vgic_attr (m, GICR_ISACTIVER0), irq);
  s.priority = reg_byte (d, VGIC_GRP_REDIST, vgic_attr (m, GICR_IPRIORITYR + (irq & ~3u)),
                         irq & 3);
  /* SGIs are always edge-triggered; QEMU saves only ICFGR1 (the PPIs). */
  s.edge = irq < 16 ? 1
                    : reg_bit (d, VGIC_GRP_REDIST, vgic_attr (m, GICR_ICFGR1),
                               2 * (irq - 16) + 1);
  s.level = reg_bit (d, VGIC_GRP_LEVEL, vgic_attr_level (m, 0), irq);
  s.route = NOT_CARRIED;
  return s;
}

/*
 * The route of SPI @irq as KVM holds it: the lower word of IROUTER<irq>,
 * at 0x6000 + 8 * irq.  QEMU's reads cover offsets 0x6000 + 4k for k in
 * 32..nr_irqs, so in a version 1 record that word is there only when
 * 2 * irq <= nr_irqs; a version 2 record has it for every SPI.
 */
static gint64
spi_route (const Dump *d, guint irq)
{
  uint64_t v;

  if (2 * irq > d->shape->nr_irqs && !d->routes)
    return NOT_CARRIED;
  if (!lookup (d, VGIC_GRP_DIST, vgic_attr (0, GICD_IROUTER + 8 * irq), &v))
    return MISSING;
  return (gint64) (v & IROUTER_AFF_MASK);
}

/* SPI @irq (32..nr_irqs-1), from the distributor. */
static IrqState
spi (const Dump *d, guint irq)
{
  uint32_t word = (irq / 32) * 4;
  uint32_t bit = irq % 32;
  IrqState s;

  s.group = reg_bit (d, VGIC_GRP_DIST, vgic_attr (0, GICD_IGROUPR + word), bit);
  s.enabled = reg_bit (d, VGIC_GRP_DIST, vgic_attr (0, GICD_ISENABLER + word), bit);
  s.pending = reg_bit (d, VGIC_GRP_DIST, vgic_attr (0, GICD_ISPENDR + word), bit);
  s.active = reg_bit (d, VGIC_GRP_DIST, vgic_attr (0, GICD_ISACTIVER + word), bit);
  s.priority = reg_byte (d, VGIC_GRP_DIST, vgic_attr (0, GICD_IPRIORITYR + (irq & ~3u)),
                         irq & 3);
  /* Two bits per IRQ; the upper one is "edge-triggered". */
  s.edge = reg_bit (d, VGIC_GRP_DIST, vgic_attr (0, GICD_ICFGR + (irq / 16) * 4),
                    2 * (irq % 16) + 1);
  /* SPI levels ignore the mpidr; the plan reads them with vCPU 0's. */
  s.level = reg_bit (d, VGIC_GRP_LEVEL, vgic_attr_level (d->shape->mpidrs[0], irq - bit),
                     bit);
  s.route = spi_route (d, irq);
  return s;
}

/*
 * The state an unused SPI is summarised in.  A MISSING field is never
 * quiet: an operator must see a row with "?" in it.
 */
static gboolean
spi_is_quiet (const IrqState *s)
{
  return s->group == 0 && s->enabled == 0 && s->pending == 0 && s->active == 0 &&
         s->priority == 0 && s->edge == 0 && s->level == 0 &&
         (s->route == 0 || s->route == NOT_CARRIED);
}

/* The index of the vCPU KVM delivers a route to, or -1 for none. */
static gint64
route_target (const Dump *d, uint32_t route)
{
  for (uint32_t cpu = 0; cpu < d->shape->nr_vcpus; cpu++)
    if (d->shape->mpidrs[cpu] == route)
      return cpu;
  return -1;
}

/* ------------------------------------------------------------------ */
/* Tables                                                             */
/* ------------------------------------------------------------------ */

#define SPI_COLUMNS "  %5s %3s %7s %7s %6s %4s %-6s %5s %-15s %s\n"
#define PRIVATE_COLUMNS "    %5s %-4s %3s %7s %7s %6s %4s %-6s %5s\n"

static void
spi_row (const Dump *d, guint irq, const IrqState *s)
{
  char num[12], prio[8], route[16], target[12];

  g_snprintf (num, sizeof num, "%u", irq);
  if (s->route == NOT_CARRIED)
    {
      g_strlcpy (route, "-", sizeof route);
      g_strlcpy (target, "-", sizeof target);
    }
  else if (s->route == MISSING)
    {
      g_strlcpy (route, "?", sizeof route);
      g_strlcpy (target, "?", sizeof target);
    }
  else
    {
      gint64 cpu = route_target (d, (uint32_t) s->route);

      fmt_aff ((uint32_t) s->route, route);
      /* No vCPU with that affinity: KVM would not deliver the SPI. */
      if (cpu < 0)
        g_strlcpy (target, "none", sizeof target);
      else
        g_snprintf (target, sizeof target, "%" G_GINT64_FORMAT, cpu);
    }
  g_string_append_printf (d->out, SPI_COLUMNS, num, fmt_bit (s->group),
                          fmt_bit (s->enabled), fmt_bit (s->pending),
                          fmt_bit (s->active), fmt_prio (s->priority, prio),
                          fmt_config (s->edge), fmt_bit (s->level), route, target);
}

/* Append "a-b" or "a" to a comma-separated list of IRQ ranges. */
static void
append_range (GString *list, guint first, guint last)
{
  if (list->len)
    g_string_append (list, ", ");
  if (first == last)
    g_string_append_printf (list, "%u", first);
  else
    g_string_append_printf (list, "%u-%u", first, last);
}

/*
 * Append @text (words separated by single spaces) on lines indented four
 * spaces and wrapped to fit 80 columns: for lists of IRQ ranges, which can
 * run to hundreds of items.
 */
static void
append_wrapped (GString *out, const char *text)
{
  const gsize indent = 4, width = 80;
  g_auto (GStrv) words = g_strsplit (text, " ", -1);
  gsize col = 0;

  for (guint i = 0; words[i]; i++)
    {
      gsize len = strlen (words[i]);

      if (col == 0 || col + 1 + len > width)
        {
          if (col)
            g_string_append_c (out, '\n');
          g_string_append_printf (out, "%*s", (int) indent, "");
          col = indent;
        }
      else
        {
          g_string_append_c (out, ' ');
          col++;
        }
      g_string_append (out, words[i]);
      col += len;
    }
  g_string_append_c (out, '\n');
}

static void
dump_spis (const Dump *d, VgicDumpFlags flags)
{
  const uint32_t n = d->shape->nr_irqs;
  g_autoptr (GString) quiet = g_string_new (NULL);
  guint n_quiet = 0, run_start = 0;
  gboolean in_run = FALSE;

  g_string_append_printf (d->out, "\nDistributor: SPIs %u-%u\n", GIC_INTERNAL, n - 1);
  g_string_append_printf (d->out, SPI_COLUMNS, "IRQ", "grp", "enabled", "pending",
                          "active", "prio", "config", "level", "route", "vCPU");
  for (guint irq = GIC_INTERNAL; irq < n; irq++)
    {
      IrqState s = spi (d, irq);
      gboolean hide = !(flags & VGIC_DUMP_ALL_IRQS) && spi_is_quiet (&s);

      if (hide)
        {
          n_quiet++;
          if (!in_run)
            run_start = irq, in_run = TRUE;
          continue;
        }
      if (in_run)
        append_range (quiet, run_start, irq - 1), in_run = FALSE;
      spi_row (d, irq, &s);
    }
  if (in_run)
    append_range (quiet, run_start, n - 1);

  if (n_quiet)
    {
      g_string_append_printf (d->out,
                              "  Not listed: %u quiet SPIs (disabled, not pending or "
                              "active, group 0,\n"
                              "    priority 0, level-sensitive, line low, route 0 or "
                              "not carried):\n", n_quiet);
      append_wrapped (d->out, quiet->str);
    }
  if (d->routes)
    g_string_append_printf (d->out,
      "  Note: every SPI's route is carried.  QEMU 10.0 reads GICD_IROUTER<n> at\n"
      "    0x6000+4n and 0x6000+4n+4 instead of 0x6000+8n, which KVM takes as the\n"
      "    routes of SPIs %u-%u only; this version 2 record also holds the routes\n"
      "    of SPIs %u-%u, at their architected offsets, and a restore through\n"
      "    vgicd writes them.  \"vCPU\" is the vCPU the route names (\"none\":\n"
      "    no vCPU has that affinity).\n",
      GIC_INTERNAL, n / 2, n / 2 + 1, n - 1);
  else if (d->qemu_fields)
    g_string_append_printf (d->out,
      "  Note: routes are carried for SPIs %u-%u only (\"-\" marks the others).\n"
      "    These are QEMU's own fields, which QEMU 10.0 fills by reading\n"
      "    GICD_IROUTER<n> at 0x6000+4n and 0x6000+4n+4 instead of 0x6000+8n.  KVM\n"
      "    takes offset 0x6000+8m as the route of IRQ m, so those reads reach the\n"
      "    routes of SPIs 32..nr_irqs/2 only, and a load from these fields leaves\n"
      "    the others as the destination VM has them (vgicd's record, Record=true,\n"
      "    carries them all).  \"vCPU\" is the vCPU the route names (\"none\": no\n"
      "    vCPU has that affinity).\n",
      GIC_INTERNAL, n / 2);
  else
    g_string_append_printf (d->out,
      "  Note: routes are carried for SPIs %u-%u only (\"-\" marks the others).\n"
      "    QEMU 10.0 reads GICD_IROUTER<n> at 0x6000+4n and 0x6000+4n+4 instead of\n"
      "    0x6000+8n.  KVM takes offset 0x6000+8m as the route of IRQ m (the upper\n"
      "    word reads as zero), so QEMU's accesses reach the routes of SPIs\n"
      "    32..nr_irqs/2 only.  vgicd reads the others too, and writes a version 2\n"
      "    record when one of them is set; this version 1 record has none set\n"
      "    (or an older vgicd, which did not read them, wrote it), and a restore\n"
      "    leaves those routes as the destination VM has them.  \"vCPU\" is the\n"
      "    vCPU the route names (\"none\": no vCPU has that affinity).\n",
      GIC_INTERNAL, n / 2);
}

static void
dump_private_irqs (const Dump *d, uint32_t cpu)
{
  g_string_append (d->out, "  SGIs and PPIs\n");
  g_string_append_printf (d->out, PRIVATE_COLUMNS, "IRQ", "type", "grp", "enabled",
                          "pending", "active", "prio", "config", "level");
  for (guint irq = 0; irq < GIC_INTERNAL; irq++)
    {
      IrqState s = private_irq (d, cpu, irq);
      char num[12], prio[8];

      g_snprintf (num, sizeof num, "%u", irq);
      g_string_append_printf (d->out, PRIVATE_COLUMNS, num, irq < 16 ? "SGI" : "PPI",
                              fmt_bit (s.group), fmt_bit (s.enabled),
                              fmt_bit (s.pending), fmt_bit (s.active),
                              fmt_prio (s.priority, prio), fmt_config (s.edge),
                              fmt_bit (s.level));
    }
}

/* ------------------------------------------------------------------ */
/* Registers                                                          */
/* ------------------------------------------------------------------ */

/*
 * One "NAME  0xVALUE  decoded" line for a 32-bit register; @decode (may be
 * NULL) appends the decoded fields, and is not called when the register is
 * missing.
 */
typedef void (*Decode32) (GString *out, uint32_t v);
typedef void (*Decode64) (GString *out, uint64_t v);

static void
reg32_line (const Dump *d, const char *indent, const char *name, uint32_t group,
            uint64_t attr, Decode32 decode)
{
  uint64_t v;

  if (!lookup (d, group, attr, &v))
    {
      g_string_append_printf (d->out, "%s%-16s ?\n", indent, name);
      return;
    }
  g_string_append_printf (d->out, "%s%-16s 0x%08x", indent, name, (uint32_t) v);
  if (decode)
    {
      g_string_append (d->out, "  ");
      decode (d->out, (uint32_t) v);
    }
  g_string_append_c (d->out, '\n');
}

static void
print64_line (const Dump *d, const char *indent, const char *name, gboolean have,
              uint64_t v, Decode64 decode)
{
  if (!have)
    {
      g_string_append_printf (d->out, "%s%-16s ?\n", indent, name);
      return;
    }
  g_string_append_printf (d->out, "%s%-16s 0x%" PRIx64, indent, name, v);
  if (decode)
    {
      g_string_append (d->out, "  ");
      decode (d->out, v);
    }
  g_string_append_c (d->out, '\n');
}

static void
decode_gicd_ctlr (GString *out, uint32_t v)
{
  g_string_append_printf (out, "EnableGrp1=%u ARE=%u DS=%u nASSGIreq=%u",
                          !!(v & GICD_CTLR_ENABLE_G1), !!(v & GICD_CTLR_ARE_NS),
                          !!(v & GICD_CTLR_DS), !!(v & GICD_CTLR_NASSGIREQ));
}

static void
decode_gicd_typer (GString *out, uint32_t v)
{
  guint itlines = v & GICD_TYPER_ITLINES_MASK;
  guint idbits = (v >> GICD_TYPER_IDBITS_SHIFT) & GICD_TYPER_IDBITS_MASK;

  g_string_append_printf (out, "ITLinesNumber=%u (up to %u IRQs) IDbits=%u "
                          "(%u-bit INTIDs) LPIS=%u",
                          itlines, 32 * (itlines + 1), idbits, idbits + 1,
                          !!(v & GICD_TYPER_LPIS));
}

static void
decode_gicr_ctlr (GString *out, uint32_t v)
{
  g_string_append_printf (out, "EnableLPIs=%u", !!(v & GICR_CTLR_ENABLE_LPIS));
}

static void
decode_gicr_typer (GString *out, uint64_t v)
{
  char aff[16];

  g_string_append_printf (out, "PLPIS=%u Last=%u Affinity=%s",
                          !!(v & GICR_TYPER_PLPIS), !!(v & GICR_TYPER_LAST),
                          fmt_aff ((uint32_t) (v >> 32), aff));
}

static void
decode_propbaser (GString *out, uint64_t v)
{
  g_string_append_printf (out, "PA=0x%" PRIx64 " IDbits=%u",
                          (uint64_t) (v & PROPBASER_PA_MASK),
                          (guint) (v & PROPBASER_IDBITS_MASK));
}

static void
decode_pendbaser (GString *out, uint64_t v)
{
  g_string_append_printf (out, "PA=0x%" PRIx64 " PTZ=%u",
                          (uint64_t) (v & PENDBASER_PA_MASK), !!(v & PENDBASER_PTZ));
}

static void
decode_icc_sre (GString *out, uint64_t v)
{
  g_string_append_printf (out, "SRE=%u DFB=%u DIB=%u", !!(v & ICC_SRE_EL1_SRE),
                          !!(v & ICC_SRE_EL1_DFB), !!(v & ICC_SRE_EL1_DIB));
}

static void
decode_icc_ctlr (GString *out, uint64_t v)
{
  guint pri = (guint) ((v & ICC_CTLR_EL1_PRIBITS_MASK) >> ICC_CTLR_EL1_PRIBITS_SHIFT);
  guint id = (guint) ((v & ICC_CTLR_EL1_IDBITS_MASK) >> ICC_CTLR_EL1_IDBITS_SHIFT);

  /* The fields hold "bits - 1" and a code; spell out what they mean, since
   * that is what decides the APR count and what a destination must match. */
  g_string_append_printf (out, "CBPR=%u EOImode=%u PRIbits=%u (%u bits) "
                          "IDbits=%u (%s) SEIS=%u A3V=%u",
                          !!(v & ICC_CTLR_EL1_CBPR), !!(v & ICC_CTLR_EL1_EOIMODE),
                          pri, pri + 1, id,
                          id == 0 ? "16 bits" : id == 1 ? "24 bits" : "reserved",
                          !!(v & ICC_CTLR_EL1_SEIS), !!(v & ICC_CTLR_EL1_A3V));
}

/*
 * A 64-bit redistributor register, which the record holds as two 32-bit
 * words (lo at @off, hi at @off + 4).  Nothing is printed when neither word
 * is there: PROPBASER/PENDBASER are saved only with PLPIS, GICR_TYPER only
 * for vCPU 0.
 */
static void
redist64_line (const Dump *d, uint32_t mpidr, const char *name, uint32_t off,
               Decode64 decode)
{
  uint64_t lo = 0, hi = 0;
  gboolean have_lo = lookup (d, VGIC_GRP_REDIST, vgic_attr (mpidr, off), &lo);
  gboolean have_hi = lookup (d, VGIC_GRP_REDIST, vgic_attr (mpidr, off + 4), &hi);

  if (!have_lo && !have_hi)
    return;
  print64_line (d, "    ", name, have_lo && have_hi, (hi << 32) | lo, decode);
}

static void
sysreg_line (const Dump *d, uint32_t mpidr, const char *name, uint32_t enc,
             Decode64 decode)
{
  uint64_t v = 0;
  gboolean have = lookup (d, VGIC_GRP_SYSREG, vgic_attr (mpidr, enc), &v);

  print64_line (d, "    ", name, have, v, decode);
}

static void
dump_header (const Dump *d, const char *title)
{
  const VgicShape *shape = d->shape;
  uint64_t typer_lo;
  char aff[16];

  g_string_append_printf (d->out, "%s\n", title);
  g_string_append_printf (d->out, "  %-16s %u (32 private, SPIs 32-%u)\n", "IRQs",
                          shape->nr_irqs, shape->nr_irqs - 1);
  g_string_append_printf (d->out, "  %-16s %u (affinities in vCPU index order):",
                          "vCPUs", shape->nr_vcpus);
  for (uint32_t cpu = 0; cpu < shape->nr_vcpus; cpu++)
    {
      /* Eight to a line keeps a 160-vCPU VM readable. */
      g_string_append (d->out, cpu % 8 == 0 ? "\n    " : "  ");
      g_string_append (d->out, fmt_aff (shape->mpidrs[cpu], aff));
    }
  g_string_append_c (d->out, '\n');

  /* QEMU and the planner take LPI support from vCPU 0's GICR_TYPER. */
  if (lookup (d, VGIC_GRP_REDIST, vgic_attr (shape->mpidrs[0], GICR_TYPER), &typer_lo))
    g_string_append_printf (d->out, "  %-16s %s (GICR_TYPER.PLPIS of vCPU 0)\n", "LPIs",
                            (typer_lo & GICR_TYPER_PLPIS) ? "on" : "off");
  else
    g_string_append_printf (d->out, "  %-16s ? (GICR_TYPER of vCPU 0 missing)\n", "LPIs");

  reg32_line (d, "  ", "GICD_CTLR", VGIC_GRP_DIST, vgic_attr (0, GICD_CTLR), decode_gicd_ctlr);
  reg32_line (d, "  ", "GICD_TYPER", VGIC_GRP_DIST, vgic_attr (0, GICD_TYPER), decode_gicd_typer);
  reg32_line (d, "  ", "GICD_STATUSR", VGIC_GRP_DIST, vgic_attr (0, GICD_STATUSR), NULL);
}

static void
dump_vcpu (const Dump *d, uint32_t cpu)
{
  const uint32_t m = d->shape->mpidrs[cpu];
  char aff[16];

  g_string_append_printf (d->out, "\nvCPU %u: affinity %s\n", cpu, fmt_aff (m, aff));

  g_string_append (d->out, "  Redistributor\n");
  redist64_line (d, m, "GICR_TYPER", GICR_TYPER, decode_gicr_typer);
  reg32_line (d, "    ", "GICR_CTLR", VGIC_GRP_REDIST, vgic_attr (m, GICR_CTLR), decode_gicr_ctlr);
  reg32_line (d, "    ", "GICR_STATUSR", VGIC_GRP_REDIST, vgic_attr (m, GICR_STATUSR), NULL);
  reg32_line (d, "    ", "GICR_WAKER", VGIC_GRP_REDIST, vgic_attr (m, GICR_WAKER), NULL);
  redist64_line (d, m, "GICR_PROPBASER", GICR_PROPBASER, decode_propbaser);
  redist64_line (d, m, "GICR_PENDBASER", GICR_PENDBASER, decode_pendbaser);

  dump_private_irqs (d, cpu);

  g_string_append (d->out, "  CPU interface\n");
  sysreg_line (d, m, "ICC_SRE_EL1", ICC_SRE_EL1, decode_icc_sre);
  sysreg_line (d, m, "ICC_CTLR_EL1", ICC_CTLR_EL1, decode_icc_ctlr);
  sysreg_line (d, m, "ICC_IGRPEN0_EL1", ICC_IGRPEN0_EL1, NULL);
  sysreg_line (d, m, "ICC_IGRPEN1_EL1", ICC_IGRPEN1_EL1, NULL);
  sysreg_line (d, m, "ICC_PMR_EL1", ICC_PMR_EL1, NULL);
  sysreg_line (d, m, "ICC_BPR0_EL1", ICC_BPR0_EL1, NULL);
  sysreg_line (d, m, "ICC_BPR1_EL1", ICC_BPR1_EL1, NULL);
  /* Show the APRs the record has rather than what ICC_CTLR_EL1.PRIbits
   * implies: the save read exactly those, and a mismatch would show. */
  for (guint group = 0; group < 2; group++)
    for (guint i = 0; i < 4; i++)
      {
        uint32_t enc = group ? ICC_AP1R_EL1 (i) : ICC_AP0R_EL1 (i);
        uint64_t v;
        char name[16];

        g_snprintf (name, sizeof name, "ICC_AP%uR%u_EL1", group, i);
        if (lookup (d, VGIC_GRP_SYSREG, vgic_attr (m, enc), &v))
          print64_line (d, "    ", name, TRUE, v, NULL);
      }
}

char *
vgic_dump_state (const VgicShape *shape, const VgicValues *values, gboolean routes,
                 const char *title, VgicDumpFlags flags)
{
  g_autoptr (GString) out = NULL;
  Dump d;

  g_return_val_if_fail (shape != NULL && values != NULL && title != NULL, NULL);
  g_return_val_if_fail (shape->nr_vcpus > 0 && shape->nr_irqs >= VGIC_MIN_IRQS, NULL);

  out = g_string_new (NULL);
  d = (Dump) { .shape = shape, .values = values, .routes = routes,
               .qemu_fields = !!(flags & VGIC_DUMP_QEMU_FIELDS), .out = out };
  dump_header (&d, title);
  dump_spis (&d, flags);
  for (uint32_t cpu = 0; cpu < shape->nr_vcpus; cpu++)
    dump_vcpu (&d, cpu);
  return g_string_free (g_steal_pointer (&out), FALSE);
}

char *
vgic_dump_record (const VgicRecord *record, VgicDumpFlags flags)
{
  g_autofree char *title = NULL;

  g_return_val_if_fail (record != NULL, NULL);
  title = g_strdup_printf ("vGIC state record, format version %u", record->version);
  return vgic_dump_state (record->shape, record->values, record->routes, title, flags);
}
