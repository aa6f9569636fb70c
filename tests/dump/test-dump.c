/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-dump.c - the human-readable dump of a state record (vgic-dump.c).
 *
 * A record with known content is built the way vgicd builds one: the
 * planner's two save rounds, all zero, with chosen bits set in chosen
 * registers, then encoded and decoded.  The tests parse the dump back (a
 * table row into named columns, a register line into fields) and check the
 * decoded fields of those IRQs and vCPUs, and of their neighbours, so that a
 * wrong bit, byte, word, vCPU or IROUTER offset fails.
 */
#include <string.h>

#include "fake-save.h"
#include "vgic-dump.h"
#include "vgic-plan.h"
#include "vgic-record.h"
#include "vgic-regs.h"

#define GRP_DIST KVM_DEV_ARM_VGIC_GRP_DIST_REGS
#define GRP_REDIST KVM_DEV_ARM_VGIC_GRP_REDIST_REGS
#define GRP_SYSREG KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS
#define GRP_LEVEL KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO

typedef VgicEntry Entry;

/* Non-default affinities: vCPU 0 is not 0.0.0.0, so a dump that used the
 * wrong mpidr for a vCPU, or vCPU 0's for the distributor, shows "?". */
#define M0 0x00000100u	/* 0.0.1.0 */
#define M1 0x00010203u	/* 0.1.2.3 */
#define NR_IRQS 96

/* ------------------------------------------------------------------ */
/* Building the known record                                          */
/* ------------------------------------------------------------------ */

typedef struct {
  uint32_t group;
  uint64_t attr;
  uint64_t bits;	/* OR-ed into the register */
  guint hits;
} Setting;

#define D(off, v) { GRP_DIST, vgic_attr (0, (off)), (v), 0 }
#define R(m, off, v) { GRP_REDIST, vgic_attr ((m), (off)), (v), 0 }
#define S(m, enc, v) { GRP_SYSREG, vgic_attr ((m), (enc)), (v), 0 }
#define L(m, intid, v) { GRP_LEVEL, vgic_attr_level ((m), (intid)), (v), 0 }

/* Route of SPI n as KVM addresses it (0x6000 + 8n). */
#define KVM_IROUTER(n) (GICD_IROUTER + 8 * (n))

static Setting *
known_settings (gsize *n, gboolean plpis)
{
  const Setting settings[] = {
    D (GICD_CTLR, GICD_CTLR_ENABLE_G1 | GICD_CTLR_ARE_NS | GICD_CTLR_DS),
    D (GICD_TYPER, 31 | (15u << 19) | (1u << 17)),
    /* SPI 40: group 1, enabled, pending, priority 0xa0, edge. */
    D (GICD_IGROUPR + 4, 1u << 8),
    D (GICD_ISENABLER + 4, 1u << 8),
    D (GICD_ISPENDR + 4, 1u << 8),
    D (GICD_IPRIORITYR + 40, 0xa0),
    D (GICD_ICFGR + 8, 1u << 17),
    /* SPI 41: active, priority 0x10, level, line high. */
    D (GICD_ISACTIVER + 4, 1u << 9),
    D (GICD_IPRIORITYR + 40, 0x10u << 8),
    L (M0, 32, 1u << 9),
    /* Routes, at KVM's offsets: SPI 33 → vCPU 1, SPI 45 → no vCPU, SPI 48
     * (nr_irqs/2, the last one carried) → vCPU 0. */
    D (KVM_IROUTER (33), M1),
    D (KVM_IROUTER (45), 0x000005),
    D (KVM_IROUTER (48), M0),
    /* Traps: QEMU's "lo word of SPI 33" (KVM: a RAZ word of IRQ 16), and
     * the upper word of KVM's IROUTER<33>.  Neither is a route. */
    D (GICD_IROUTER + 4 * 33, 0x7),
    D (KVM_IROUTER (33) + 4, 0xff),
    /* SPIs 60-63: quiet but for one field each (line level, priority,
     * group, edge), so that none of them may be summarised. */
    L (M0, 32, 1u << 28),
    D (GICD_IPRIORITYR + 60, 0x08u << 8),
    D (GICD_IGROUPR + 4, 1u << 30),
    D (GICD_ICFGR + 12, 1u << 31),
    /* SPI 90: enabled, beyond the carried routes. */
    D (GICD_ISENABLER + 8, 1u << 26),

    R (M0, GICR_TYPER, (plpis ? GICR_TYPER_PLPIS : 0) | GICR_TYPER_LAST),
    R (M0, GICR_TYPER + 4, M0),
    /* vCPU 0, SGI 3: group 1, enabled, pending, priority 0x30. */
    R (M0, GICR_IGROUPR0, 1u << 3),
    R (M0, GICR_ISENABLER0, 1u << 3),
    R (M0, GICR_ISPENDR0, 1u << 3),
    R (M0, GICR_IPRIORITYR + 0, 0x30u << 24),
    /* vCPU 1, PPI 27: active, priority 0x80, level, line high; PPI 26 edge. */
    R (M1, GICR_ISACTIVER0, 1u << 27),
    R (M1, GICR_IPRIORITYR + 24, 0x80u << 24),
    L (M1, 0, 1u << 27),
    R (M1, GICR_ICFGR1, 1u << 21),
    R (M1, GICR_CTLR, GICR_CTLR_ENABLE_LPIS),

    S (M0, ICC_SRE_EL1, 0x7),
    S (M1, ICC_SRE_EL1, 0x7),
    S (M0, ICC_PMR_EL1, 0xf0),
    S (M1, ICC_PMR_EL1, 0x80),
    /* vCPU 0: 5 priority bits (1 APR per group), CBPR; vCPU 1: 7 bits
     * (4 APRs), EOImode. */
    S (M0, ICC_CTLR_EL1, ICC_CTLR_EL1_CBPR | (4ULL << ICC_CTLR_EL1_PRIBITS_SHIFT) |
                         ICC_CTLR_EL1_A3V),
    S (M1, ICC_CTLR_EL1, ICC_CTLR_EL1_EOIMODE | (6ULL << ICC_CTLR_EL1_PRIBITS_SHIFT) |
                         ICC_CTLR_EL1_A3V),
    S (M0, ICC_IGRPEN1_EL1, 1),
    /* Round 2. */
    S (M0, ICC_AP0R_EL1 (0), 0x1),
    S (M1, ICC_AP1R_EL1 (2), 0x4),
  };
  const Setting lpi_settings[] = {
    R (M1, GICR_PROPBASER, 0x1234500f),
    R (M1, GICR_PROPBASER + 4, 0x1),
    R (M1, GICR_PENDBASER, 0x00010000),
    R (M1, GICR_PENDBASER + 4, 0x40000000),
  };
  GArray *all = g_array_new (FALSE, FALSE, sizeof (Setting));

  g_array_append_vals (all, settings, G_N_ELEMENTS (settings));
  if (plpis)
    g_array_append_vals (all, lpi_settings, G_N_ELEMENTS (lpi_settings));
  *n = all->len;
  return (Setting *) (void *) g_array_free (all, FALSE);
}

static void
apply (VgicList *reads, Setting *settings, gsize n)
{
  for (guint i = 0; i < reads->len; i++)
    {
      Entry *e = &reads->entries[i];

      for (gsize j = 0; j < n; j++)
        if (e->group == settings[j].group && e->attr == settings[j].attr)
          {
            e->value |= settings[j].bits;
            settings[j].hits++;
          }
    }
}

static VgicRecord *
encode_decode (const VgicShape *shape, VgicList *reads)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) bytes = vgic_record_encode (shape, reads->entries,
                                                 reads->len, &error);
  gsize len;
  const guint8 *data;
  VgicRecord *record;

  g_assert_no_error (error);
  data = g_bytes_get_data (bytes, &len);
  record = vgic_record_decode (data, len, &error);
  g_assert_no_error (error);
  g_assert_nonnull (record);
  return record;
}

/* The known record: 2 vCPUs, 96 IRQs, zero but for known_settings(). */
static VgicRecord *
known_record (gboolean plpis)
{
  const uint32_t mpidrs[] = { M0, M1 };
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicShape) shape = vgic_shape_new (NR_IRQS, 2, mpidrs, &error);
  g_autoptr (VgicList) reads = NULL;
  g_autoptr (VgicList) second = NULL;
  g_autoptr (VgicValues) first = NULL;
  g_autofree Setting *settings = NULL;
  gsize n;

  g_assert_no_error (error);
  settings = known_settings (&n, plpis);
  reads = vgic_plan_save_first (shape);
  apply (reads, settings, n);
  first = vgic_values_from_reads (reads->entries, reads->len, &error);
  g_assert_no_error (error);
  second = vgic_plan_save_second (shape, first, &error);
  g_assert_no_error (error);
  apply (second, settings, n);
  /* A setting that hit nothing is a typo in this test, not a pass. */
  for (gsize j = 0; j < n; j++)
    if (settings[j].hits == 0)
      g_error ("setting %" G_GSIZE_FORMAT " matches no register of the save", j);
  vgic_list_append (reads, second->entries, second->len);
  return encode_decode (shape, reads);
}

static char *
known_dump (gboolean plpis, VgicDumpFlags flags)
{
  g_autoptr (VgicRecord) record = known_record (plpis);
  char *text = vgic_dump_record (record, flags);

  g_assert_nonnull (text);
  if (g_test_verbose ())
    g_printerr ("%s", text);
  return text;
}

/* ------------------------------------------------------------------ */
/* Parsing the dump back                                              */
/* ------------------------------------------------------------------ */

/* Whitespace-separated tokens of @line. */
static char **
tokens (const char *line)
{
  g_auto (GStrv) parts = g_strsplit_set (line, " \t", -1);
  GPtrArray *out = g_ptr_array_new ();

  for (guint i = 0; parts[i]; i++)
    if (*parts[i])
      g_ptr_array_add (out, g_strdup (parts[i]));
  g_ptr_array_add (out, NULL);
  return (char **) g_ptr_array_free (out, FALSE);
}

/*
 * The lines of the section whose heading (a line in column 0) starts with
 * @heading, up to the next heading.  Fails the test if there is none.
 */
static GPtrArray *
section (const char *text, const char *heading)
{
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  GPtrArray *out = g_ptr_array_new_with_free_func (g_free);
  gboolean in = FALSE;

  for (guint i = 0; lines[i]; i++)
    {
      gboolean is_heading = lines[i][0] != '\0' && lines[i][0] != ' ';

      if (is_heading && in)
        break;
      if (is_heading && g_str_has_prefix (lines[i], heading))
        in = TRUE;
      else if (in)
        g_ptr_array_add (out, g_strdup (lines[i]));
    }
  if (!in)
    g_error ("no section \"%s\" in the dump", heading);
  return out;
}

/*
 * The first table in section @heading: IRQ number → row, a row being column
 * name → value.  Every row must have as many values as the header has names.
 */
static GHashTable *
parse_table (const char *text, const char *heading)
{
  g_autoptr (GPtrArray) lines = section (text, heading);
  GHashTable *table = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL,
                                             (GDestroyNotify) g_hash_table_unref);
  g_auto (GStrv) header = NULL;
  guint i = 0;

  for (; i < lines->len && !header; i++)
    {
      g_auto (GStrv) t = tokens (lines->pdata[i]);
      if (t[0] && g_str_equal (t[0], "IRQ"))
        header = g_steal_pointer (&t);
    }
  g_assert_nonnull (header);
  for (; i < lines->len; i++)
    {
      g_auto (GStrv) t = tokens (lines->pdata[i]);
      GHashTable *row;
      char *end;
      guint64 num;

      if (!t[0])
        break;
      num = g_ascii_strtoull (t[0], &end, 10);
      if (*end)
        break;	/* the end of the table */
      g_assert_cmpuint (g_strv_length (t), ==, g_strv_length (header));
      g_assert_false (g_hash_table_contains (table, GUINT_TO_POINTER (num)));
      row = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
      for (guint c = 0; header[c]; c++)
        g_hash_table_insert (row, g_strdup (header[c]), g_strdup (t[c]));
      g_hash_table_insert (table, GUINT_TO_POINTER (num), row);
    }
  return table;
}

/* The row for @irq in the first table of section @heading, or NULL. */
static GHashTable *
find_row (const char *text, const char *heading, guint irq)
{
  g_autoptr (GHashTable) table = parse_table (text, heading);
  GHashTable *row = g_hash_table_lookup (table, GUINT_TO_POINTER (irq));

  return row ? g_hash_table_ref (row) : NULL;
}

/* Number of rows of the first table in section @heading. */
static guint
count_rows (const char *text, const char *heading)
{
  g_autoptr (GHashTable) table = parse_table (text, heading);

  return g_hash_table_size (table);
}

/* Assert that the columns of @row are exactly @expect ("name=value ..."). */
static void
assert_row (GHashTable *row, const char *expect)
{
  g_auto (GStrv) pairs = tokens (expect);

  g_assert_nonnull (row);
  for (guint i = 0; pairs[i]; i++)
    {
      g_auto (GStrv) kv = g_strsplit (pairs[i], "=", 2);
      const char *got = g_hash_table_lookup (row, kv[0]);

      if (!got)
        g_error ("no column %s", kv[0]);
      if (!g_str_equal (got, kv[1]))
        g_error ("column %s: expected %s, got %s", kv[0], kv[1], got);
    }
}

#define ASSERT_SPI(text, irq, expect)					\
  G_STMT_START {							\
    g_autoptr (GHashTable) row_ = find_row ((text), "Distributor:", (irq)); \
    if (!row_)								\
      g_error ("no row for SPI %u", (guint) (irq));			\
    assert_row (row_, (expect));					\
  } G_STMT_END

#define ASSERT_PRIVATE(text, cpu_heading, irq, expect)			\
  G_STMT_START {							\
    g_autoptr (GHashTable) row_ = find_row ((text), (cpu_heading), (irq)); \
    if (!row_)								\
      g_error ("no row for IRQ %u under %s", (guint) (irq), (cpu_heading)); \
    assert_row (row_, (expect));					\
  } G_STMT_END

/*
 * The tokens after the name of the register line @name in section
 * @heading (first token == @name); NULL if the section has no such line.
 */
static char **
reg_line (const char *text, const char *heading, const char *name)
{
  g_autoptr (GPtrArray) lines = section (text, heading);

  for (guint i = 0; i < lines->len; i++)
    {
      g_auto (GStrv) t = tokens (lines->pdata[i]);

      if (t[0] && g_str_equal (t[0], name))
        return g_strdupv (t + 1);
    }
  return NULL;
}

/* Assert that register line @name shows @value and every field in @fields. */
static void
assert_reg (const char *text, const char *heading, const char *name,
            const char *value, const char *fields)
{
  g_auto (GStrv) got = reg_line (text, heading, name);
  g_auto (GStrv) want = tokens (fields ? fields : "");

  if (!got)
    g_error ("no %s line under %s", name, heading);
  g_assert_nonnull (got[0]);
  if (!g_str_equal (got[0], value))
    g_error ("%s under %s: expected %s, got %s", name, heading, value, got[0]);
  for (guint i = 0; want[i]; i++)
    if (!g_strv_contains ((const char *const *) got + 1, want[i]))
      g_error ("%s under %s: no field %s", name, heading, want[i]);
}

/*
 * The paragraph of @text that starts on the line containing @needle: that
 * line and its continuation lines (indented four or more, not table rows),
 * joined with single spaces; NULL if no line contains @needle.
 */
static char *
paragraph (const char *text, const char *needle)
{
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);

  for (guint i = 0; lines[i]; i++)
    {
      GString *para;

      if (!strstr (lines[i], needle))
        continue;
      para = g_string_new (g_strstrip (lines[i]));
      for (guint j = i + 1; lines[j] && g_str_has_prefix (lines[j], "    "); j++)
        {
          g_string_append_c (para, ' ');
          g_string_append (para, g_strstrip (lines[j]));
        }
      return g_string_free (para, FALSE);
    }
  return NULL;
}

/* ------------------------------------------------------------------ */
/* Tests                                                              */
/* ------------------------------------------------------------------ */

#define HEADER "vGIC state record"
#define VCPU0 "vCPU 0:"
#define VCPU1 "vCPU 1:"

static void
test_header (void)
{
  g_autofree char *text = known_dump (TRUE, VGIC_DUMP_NONE);
  g_autoptr (GPtrArray) head = NULL;
  g_auto (GStrv) vcpus = NULL;
  g_autofree char *first = NULL;

  g_assert_true (g_str_has_prefix (text, "vGIC state record, format version 1\n"));
  assert_reg (text, HEADER, "IRQs", "96", NULL);
  assert_reg (text, HEADER, "vCPUs", "2", NULL);
  /* The affinities follow on the next line, in index order. */
  head = section (text, HEADER);
  for (guint i = 0; i < head->len && !vcpus; i++)
    {
      g_auto (GStrv) t = tokens (head->pdata[i]);

      if (t[0] && g_str_equal (t[0], "vCPUs"))
        {
          g_assert_cmpuint (i + 1, <, head->len);
          vcpus = tokens (head->pdata[i + 1]);
        }
    }
  g_assert_nonnull (vcpus);
  g_assert_cmpuint (g_strv_length (vcpus), ==, 2);
  g_assert_cmpstr (vcpus[0], ==, "0.0.1.0");
  g_assert_cmpstr (vcpus[1], ==, "0.1.2.3");

  assert_reg (text, HEADER, "LPIs", "on", NULL);
  assert_reg (text, HEADER, "GICD_CTLR", "0x00000052",
              "EnableGrp1=1 ARE=1 DS=1 nASSGIreq=0");
  assert_reg (text, HEADER, "GICD_TYPER", "0x007a001f",
              "ITLinesNumber=31 1024 IDbits=15 (16-bit LPIS=1");
  assert_reg (text, HEADER, "GICD_STATUSR", "0x00000000", NULL);

  /* Sections in order: header, distributor, vCPU 0, vCPU 1. */
  first = g_strdup (strstr (text, "\nDistributor: SPIs 32-95\n"));
  g_assert_nonnull (first);
  g_assert_true (strstr (text, "\nvCPU 0: affinity 0.0.1.0\n") >
                 strstr (text, "\nDistributor:"));
  g_assert_true (strstr (text, "\nvCPU 1: affinity 0.1.2.3\n") >
                 strstr (text, "\nvCPU 0:"));
}

static void
test_spis (void)
{
  g_autofree char *text = known_dump (TRUE, VGIC_DUMP_NONE);

  ASSERT_SPI (text, 40, "grp=1 enabled=1 pending=1 active=0 prio=0xa0 config=edge "
                        "level=0 route=0.0.0.0 vCPU=none");
  ASSERT_SPI (text, 41, "grp=0 enabled=0 pending=0 active=1 prio=0x10 config=level "
                        "level=1 route=0.0.0.0 vCPU=none");
  /* Read at KVM's offset 0x6000 + 8n, not QEMU's 0x6000 + 4n (0x7 there). */
  ASSERT_SPI (text, 33, "grp=0 enabled=0 pending=0 active=0 prio=0x00 config=level "
                        "level=0 route=0.1.2.3 vCPU=1");
  ASSERT_SPI (text, 45, "route=0.0.0.5 vCPU=none");
  ASSERT_SPI (text, 48, "route=0.0.1.0 vCPU=0");
  ASSERT_SPI (text, 60, "grp=0 enabled=0 pending=0 active=0 prio=0x00 config=level "
                        "level=1 route=- vCPU=-");
  ASSERT_SPI (text, 61, "grp=0 prio=0x08 config=level level=0");
  ASSERT_SPI (text, 62, "grp=1 prio=0x00 config=level level=0");
  ASSERT_SPI (text, 63, "grp=0 prio=0x00 config=edge level=0");
  ASSERT_SPI (text, 90, "grp=0 enabled=1 pending=0 active=0 prio=0x00 config=level "
                        "level=0 route=- vCPU=-");
}

static void
test_spis_summarised (void)
{
  g_autofree char *text = known_dump (TRUE, VGIC_DUMP_NONE);
  g_autofree char *summary = paragraph (text, "Not listed:");

  /* 64 SPIs, of which 33, 40, 41, 45, 48, 60-63 and 90 are not quiet. */
  g_assert_cmpuint (count_rows (text, "Distributor:"), ==, 10);
  for (guint irq = 32; irq < NR_IRQS; irq++)
    {
      g_autoptr (GHashTable) row = find_row (text, "Distributor:", irq);
      gboolean shown = irq == 33 || irq == 40 || irq == 41 || irq == 45 ||
                       irq == 48 || (irq >= 60 && irq <= 63) || irq == 90;

      if (shown != (row != NULL))
        g_error ("SPI %u is %s", irq, row ? "listed" : "not listed");
    }
  g_assert_nonnull (summary);
  g_assert_true (g_str_has_prefix (summary, "Not listed: 54 quiet SPIs ("));
  g_assert_true (g_str_has_suffix (summary,
                                   "carried): 32, 34-39, 42-44, 46-47, 49-59, 64-89, 91-95"));
}

static void
test_spis_all (void)
{
  g_autofree char *text = known_dump (TRUE, VGIC_DUMP_ALL_IRQS);
  g_autofree char *summary = paragraph (text, "Not listed:");

  g_assert_null (summary);
  g_assert_cmpuint (count_rows (text, "Distributor:"), ==, NR_IRQS - 32);
  ASSERT_SPI (text, 32, "grp=0 enabled=0 pending=0 active=0 prio=0x00 config=level "
                        "level=0 route=0.0.0.0 vCPU=none");
  ASSERT_SPI (text, 49, "grp=0 enabled=0 pending=0 active=0 prio=0x00 config=level "
                        "level=0 route=- vCPU=-");
  ASSERT_SPI (text, 95, "route=- vCPU=-");
  /* The same decoded fields as without the flag. */
  ASSERT_SPI (text, 40, "grp=1 enabled=1 pending=1 active=0 prio=0xa0 config=edge");
  ASSERT_SPI (text, 41, "active=1 prio=0x10 level=1");
}

/* The known record as a version 2 record: vgicd also read the routes QEMU
 * misses, and two of them are set (SPI 90 → vCPU 1, SPI 95 → no vCPU). */
static VgicRecord *
known_record_routes (void)
{
  const uint32_t mpidrs[] = { M0, M1 };
  Setting high[] = { D (KVM_IROUTER (90), M1), D (KVM_IROUTER (95), 0x000005) };
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicShape) shape = vgic_shape_new (NR_IRQS, 2, mpidrs, &error);
  g_autoptr (VgicList) reads = NULL, routes = NULL, second = NULL;
  g_autoptr (VgicValues) first = NULL;
  g_autofree Setting *settings = NULL;
  gsize n;

  g_assert_no_error (error);
  settings = known_settings (&n, TRUE);
  reads = vgic_plan_save_first (shape);
  apply (reads, settings, n);
  first = vgic_values_from_reads (reads->entries, reads->len, &error);
  g_assert_no_error (error);
  second = vgic_plan_save_second (shape, first, &error);
  g_assert_no_error (error);
  apply (second, settings, n);
  routes = vgic_plan_save_routes (shape);
  apply (routes, high, G_N_ELEMENTS (high));
  g_assert_cmpuint (high[0].hits, ==, 1);
  g_assert_cmpuint (high[1].hits, ==, 1);
  vgic_list_append (reads, routes->entries, routes->len);
  vgic_list_append (reads, second->entries, second->len);
  return encode_decode (shape, reads);
}

/* A version 2 record shows the route of every SPI, where a version 1
 * record shows "-" above nr_irqs / 2, and says so under the table. */
static void
test_routes_v2 (void)
{
  g_autoptr (VgicRecord) record = known_record_routes ();
  g_autofree char *text = vgic_dump_record (record, VGIC_DUMP_NONE);
  g_autofree char *all = vgic_dump_record (record, VGIC_DUMP_ALL_IRQS);
  g_autofree char *note = paragraph (text, "Note:");

  if (g_test_verbose ())
    g_printerr ("%s", text);
  g_assert_cmpuint (record->version, ==, 2);
  g_assert_true (g_str_has_prefix (text, "vGIC state record, format version 2\n"));
  /* The routes QEMU reaches, as in version 1. */
  ASSERT_SPI (text, 33, "route=0.1.2.3 vCPU=1");
  ASSERT_SPI (text, 48, "route=0.0.1.0 vCPU=0");
  /* Those above nr_irqs / 2, carried now. */
  ASSERT_SPI (text, 90, "grp=0 enabled=1 pending=0 active=0 prio=0x00 config=level "
                        "level=0 route=0.1.2.3 vCPU=1");
  ASSERT_SPI (text, 95, "route=0.0.0.5 vCPU=none");
  ASSERT_SPI (text, 60, "level=1 route=0.0.0.0 vCPU=none");
  ASSERT_SPI (all, 80, "route=0.0.0.0 vCPU=none");
  g_assert_null (strstr (all, "route=-"));
  g_assert_nonnull (note);
  g_assert_true (g_str_has_prefix (note, "Note: every SPI's route is carried."));
  g_assert_nonnull (strstr (note, "routes of SPIs 32-48 only"));
  g_assert_nonnull (strstr (note, "of SPIs 49-95, at their architected offsets"));
}

static void
test_route_note (void)
{
  g_autofree char *text = known_dump (TRUE, VGIC_DUMP_NONE);
  g_autofree char *note = paragraph (text, "Note:");
  const char *dist = strstr (text, "\nDistributor:");
  const char *vcpu0 = strstr (text, "\nvCPU 0:");

  g_assert_nonnull (note);
  g_assert_true (g_str_has_prefix (note, "Note: routes are carried for SPIs 32-48 "
                                         "only (\"-\" marks the others)."));
  g_assert_nonnull (strstr (note, "0x6000+4n and 0x6000+4n+4 instead of 0x6000+8n"));
  /* Once, under the SPI table. */
  g_assert_true (strstr (text, "Note:") > dist && strstr (text, "Note:") < vcpu0);
  g_assert_null (strstr (strstr (text, "Note:") + 1, "Note:"));
}

static void
test_private_irqs (void)
{
  g_autofree char *text = known_dump (TRUE, VGIC_DUMP_NONE);

  g_assert_cmpuint (count_rows (text, VCPU0), ==, 32);
  g_assert_cmpuint (count_rows (text, VCPU1), ==, 32);
  ASSERT_PRIVATE (text, VCPU0, 3, "type=SGI grp=1 enabled=1 pending=1 active=0 "
                                  "prio=0x30 config=edge level=0");
  ASSERT_PRIVATE (text, VCPU0, 4, "type=SGI grp=0 enabled=0 pending=0 prio=0x00");
  ASSERT_PRIVATE (text, VCPU0, 2, "prio=0x00");
  ASSERT_PRIVATE (text, VCPU1, 3, "type=SGI grp=0 enabled=0 pending=0 prio=0x00 "
                                  "config=edge");
  ASSERT_PRIVATE (text, VCPU1, 27, "type=PPI grp=0 enabled=0 pending=0 active=1 "
                                   "prio=0x80 config=level level=1");
  ASSERT_PRIVATE (text, VCPU0, 27, "type=PPI active=0 prio=0x00 config=level level=0");
  ASSERT_PRIVATE (text, VCPU1, 26, "type=PPI active=0 prio=0x00 config=edge level=0");
  ASSERT_PRIVATE (text, VCPU0, 26, "config=level");
  ASSERT_PRIVATE (text, VCPU1, 31, "config=level active=0");
}

static void
test_redistributors (void)
{
  g_autofree char *text = known_dump (TRUE, VGIC_DUMP_NONE);
  g_auto (GStrv) typer1 = NULL;

  assert_reg (text, VCPU0, "GICR_TYPER", "0x10000000011", "PLPIS=1 Last=1 Affinity=0.0.1.0");
  /* Only vCPU 0's GICR_TYPER is saved. */
  typer1 = reg_line (text, VCPU1, "GICR_TYPER");
  g_assert_null (typer1);
  assert_reg (text, VCPU0, "GICR_CTLR", "0x00000000", "EnableLPIs=0");
  assert_reg (text, VCPU1, "GICR_CTLR", "0x00000001", "EnableLPIs=1");
  assert_reg (text, VCPU1, "GICR_WAKER", "0x00000000", NULL);
  assert_reg (text, VCPU1, "GICR_PROPBASER", "0x11234500f", "PA=0x112345000 IDbits=15");
  assert_reg (text, VCPU1, "GICR_PENDBASER", "0x4000000000010000", "PA=0x10000 PTZ=1");
  assert_reg (text, VCPU0, "GICR_PROPBASER", "0x0", "PA=0x0 IDbits=0");
}

static void
test_cpu_interfaces (void)
{
  g_autofree char *text = known_dump (TRUE, VGIC_DUMP_NONE);
  g_auto (GStrv) ap0r1 = NULL;

  assert_reg (text, VCPU0, "ICC_PMR_EL1", "0xf0", NULL);
  assert_reg (text, VCPU1, "ICC_PMR_EL1", "0x80", NULL);
  assert_reg (text, VCPU0, "ICC_SRE_EL1", "0x7", "SRE=1 DFB=1 DIB=1");
  assert_reg (text, VCPU0, "ICC_CTLR_EL1", "0x8401",
              "CBPR=1 EOImode=0 PRIbits=4 IDbits=0 SEIS=0 A3V=1");
  assert_reg (text, VCPU1, "ICC_CTLR_EL1", "0x8602",
              "CBPR=0 EOImode=1 PRIbits=6 IDbits=0 SEIS=0 A3V=1");
  assert_reg (text, VCPU0, "ICC_IGRPEN0_EL1", "0x0", NULL);
  assert_reg (text, VCPU0, "ICC_IGRPEN1_EL1", "0x1", NULL);
  assert_reg (text, VCPU1, "ICC_IGRPEN1_EL1", "0x0", NULL);
  assert_reg (text, VCPU0, "ICC_BPR0_EL1", "0x0", NULL);
  assert_reg (text, VCPU0, "ICC_BPR1_EL1", "0x0", NULL);
  /* 5 priority bits: one APR per group; 7 bits: four. */
  assert_reg (text, VCPU0, "ICC_AP0R0_EL1", "0x1", NULL);
  assert_reg (text, VCPU0, "ICC_AP1R0_EL1", "0x0", NULL);
  ap0r1 = reg_line (text, VCPU0, "ICC_AP0R1_EL1");
  g_assert_null (ap0r1);
  assert_reg (text, VCPU1, "ICC_AP0R3_EL1", "0x0", NULL);
  assert_reg (text, VCPU1, "ICC_AP1R2_EL1", "0x4", NULL);
  assert_reg (text, VCPU1, "ICC_AP1R0_EL1", "0x0", NULL);
}

static void
test_no_lpis (void)
{
  g_autofree char *text = known_dump (FALSE, VGIC_DUMP_NONE);

  assert_reg (text, HEADER, "LPIs", "off", NULL);
  assert_reg (text, VCPU0, "GICR_TYPER", "0x10000000010", "PLPIS=0 Last=1");
  g_assert_null (strstr (text, "PROPBASER"));
  g_assert_null (strstr (text, "PENDBASER"));
}

/* A register the record lacks shows as "?", and never hides an SPI. */
static void
test_missing_registers (void)
{
  g_autoptr (VgicRecord) full = known_record (TRUE);
  g_autoptr (VgicList) kept = vgic_list_new (0);
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicRecord) partial = g_new0 (VgicRecord, 1);
  g_autofree char *text = NULL;

  for (gsize i = 0; i < vgic_values_size (full->values); i++)
    {
      const Entry *e = vgic_values_index (full->values, i);

      if ((e->group == GRP_DIST && e->attr == vgic_attr (0, GICD_ISENABLER + 4)) ||
          (e->group == GRP_SYSREG && e->attr == vgic_attr (M0, ICC_PMR_EL1)) ||
          (e->group == GRP_DIST && e->attr == vgic_attr (0, KVM_IROUTER (34))))
        continue;
      vgic_list_append (kept, e, 1);
    }
  g_assert_cmpuint (kept->len, ==, vgic_values_size (full->values) - 3);
  partial->version = 1;
  partial->shape = vgic_shape_copy (full->shape);
  partial->values = vgic_values_new (kept->entries, kept->len, &error);
  g_assert_no_error (error);

  text = vgic_dump_record (partial, VGIC_DUMP_NONE);
  ASSERT_SPI (text, 40, "grp=1 enabled=? pending=1 prio=0xa0");
  /* Quiet but for the unknown enable bit: listed. */
  ASSERT_SPI (text, 50, "grp=0 enabled=? pending=0 route=-");
  ASSERT_SPI (text, 34, "enabled=? route=? vCPU=?");
  {
    g_autoptr (GHashTable) row = find_row (text, "Distributor:", 70);
    g_assert_null (row);	/* another ISENABLER word: quiet */
  }
  assert_reg (text, VCPU0, "ICC_PMR_EL1", "?", NULL);
  assert_reg (text, VCPU1, "ICC_PMR_EL1", "0x80", NULL);
}

/* A big record with made-up values: every row is there, nothing is "?",
 * and the enable bit and priority of every IRQ match the registers. */
static void
test_random_record (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicShape) shape = vgic_shape_new (1024, 4, NULL, &error);
  g_autoptr (VgicList) reads = NULL;
  g_autoptr (VgicRecord) record = NULL;
  g_autofree char *text = NULL;
  g_autoptr (GHashTable) spis = NULL;

  g_assert_no_error (error);
  reads = fake_save (shape, TRUE, 7, 0x5eed, NULL);
  record = encode_decode (shape, reads);
  text = vgic_dump_record (record, VGIC_DUMP_ALL_IRQS);
  g_assert_null (strchr (text, '?'));
  spis = parse_table (text, "Distributor:");
  g_assert_cmpuint (g_hash_table_size (spis), ==, 1024 - 32);

  for (guint irq = 32; irq < 1024; irq++)
    {
      GHashTable *row = g_hash_table_lookup (spis, GUINT_TO_POINTER (irq));
      uint64_t en, prio;
      g_autofree char *want = NULL;

      g_assert_true (vgic_values_lookup (record->values, GRP_DIST,
                                         vgic_attr (0, GICD_ISENABLER + irq / 8 - irq / 8 % 4),
                                         &en));
      g_assert_true (vgic_values_lookup (record->values, GRP_DIST,
                                         vgic_attr (0, GICD_IPRIORITYR + irq - irq % 4),
                                         &prio));
      want = g_strdup_printf ("enabled=%u prio=0x%02x",
                              (guint) ((en >> (irq % 32)) & 1),
                              (guint) ((prio >> (8 * (irq % 4))) & 0xff));
      assert_row (row, want);
    }
  for (guint cpu = 0; cpu < 4; cpu++)
    {
      g_autofree char *heading = g_strdup_printf ("vCPU %u:", cpu);
      g_auto (GStrv) ap = reg_line (text, heading, "ICC_AP1R3_EL1");

      g_assert_cmpuint (count_rows (text, heading), ==, 32);
      g_assert_nonnull (ap);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/dump/header", test_header);
  g_test_add_func ("/dump/spis", test_spis);
  g_test_add_func ("/dump/spis-summarised", test_spis_summarised);
  g_test_add_func ("/dump/spis-all", test_spis_all);
  g_test_add_func ("/dump/route-note", test_route_note);
  g_test_add_func ("/dump/routes-v2", test_routes_v2);
  g_test_add_func ("/dump/private-irqs", test_private_irqs);
  g_test_add_func ("/dump/redistributors", test_redistributors);
  g_test_add_func ("/dump/cpu-interfaces", test_cpu_interfaces);
  g_test_add_func ("/dump/no-lpis", test_no_lpis);
  g_test_add_func ("/dump/missing-registers", test_missing_registers);
  g_test_add_func ("/dump/random-record", test_random_record);
  return g_test_run ();
}
