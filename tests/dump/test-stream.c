/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-stream.c - `vgicctl dump` of a migration stream: finding and reading
 * the arm_gicv3 section (vgicctl-stream.c), and QEMU's fields as register
 * values (vgic-qemu-fields.c).
 *
 * The streams here are written by a small encoder of QEMU's savevm format
 * (big-endian fields, subsections, the section footer) around fields with
 * a distinct value in every slot, so that a field read from the wrong
 * offset fails.  A decoy "arm_gicv3" header inside guest RAM checks that
 * only a section that parses to its footer is taken.  The layout itself is
 * checked against QEMU on real streams by the QEMU tier (tests/nested/e2e:
 * the same state dumped from vgicd's record and from QEMU's fields).
 */
#include <string.h>

#include "vgic-error.h"
#include "vgic-plan.h"
#include "vgic-qemu-fields.h"
#include "vgic-regs.h"
#include "vgicctl-stream.h"

/* ---- the encoder ------------------------------------------------------- */

static void
u8 (GByteArray *b, guint8 v)
{
  g_byte_array_append (b, &v, 1);
}

static void
u32 (GByteArray *b, guint32 v)
{
  guint8 x[4] = { v >> 24, v >> 16, v >> 8, v };

  g_byte_array_append (b, x, 4);
}

static void
u64 (GByteArray *b, guint64 v)
{
  u32 (b, v >> 32);
  u32 (b, (guint32) v);
}

static void
str8 (GByteArray *b, const char *s)
{
  u8 (b, strlen (s));
  g_byte_array_append (b, (const guint8 *) s, strlen (s));
}

static void
sub (GByteArray *b, const char *name)
{
  u8 (b, 0x05);
  str8 (b, name);
  u32 (b, 1);
}

static void
header (GByteArray *b, guint8 type, guint32 id, const char *name)
{
  u8 (b, type);
  u32 (b, id);
  str8 (b, name);
  u32 (b, 0);	/* instance */
  u32 (b, 1);	/* version */
}

/* A GIC whose every slot holds a distinct value. */
static VgicQemuGic *
patterned_gic (guint nr_cpus)
{
  VgicQemuGic *g = g_new0 (VgicQemuGic, 1);
  guint32 k = 1;

  g->gicd_ctlr = 0x52;
  g->gicd_statusr[0] = k++, g->gicd_statusr[1] = k++;
  for (guint i = 0; i < VGIC_QEMU_BMP_WORDS; i++)
    {
      g->group[i] = k++ * 0x01010101u;
      g->grpmod[i] = k++;
      g->enabled[i] = k++ * 0x00100001u;
      g->pending[i] = k++;
      g->active[i] = k++;
      g->level[i] = k++;
      g->edge_trigger[i] = k++ * 0x9e3779b9u;
    }
  for (guint i = 0; i < VGIC_QEMU_MAXIRQ; i++)
    {
      g->gicd_ipriority[i] = (guint8) (i * 7 + 3);
      g->gicd_irouter[i] = (guint64) (0x100 + i) << 32 | (0x10000 + i);
    }
  for (guint i = 0; i < VGIC_QEMU_NSACR_WORDS; i++)
    g->gicd_nsacr[i] = k++;
  g->nr_cpus = nr_cpus;
  g->cpus = g_new0 (VgicQemuCpu, nr_cpus);
  for (guint c = 0; c < nr_cpus; c++)
    {
      VgicQemuCpu *p = &g->cpus[c];

      p->level = k++, p->gicr_ctlr = k++, p->gicr_statusr[0] = k++, p->gicr_statusr[1] = k++;
      p->gicr_waker = k++, p->gicr_propbaser = (guint64) k++ << 33 | 0x7;
      p->gicr_pendbaser = (guint64) k++ << 34, p->gicr_igroupr0 = k++;
      p->gicr_ienabler0 = k++, p->gicr_ipendr0 = k++, p->gicr_iactiver0 = k++;
      p->edge_trigger = 0xa5a50000u | k++, p->gicr_igrpmodr0 = k++, p->gicr_nsacr = k++;
      for (guint i = 0; i < 32; i++)
        p->gicr_ipriorityr[i] = (guint8) (c * 32 + i);
      p->icc_ctlr_el1[0] = k++;
      /* PRIbits 4 (5 priority bits): one APR a group; vCPU 1: PRIbits 5, two */
      p->icc_ctlr_el1[1] = c == 1 ? 5u << ICC_CTLR_EL1_PRIBITS_SHIFT : 4u << ICC_CTLR_EL1_PRIBITS_SHIFT;
      p->icc_pmr_el1 = k++;
      for (guint i = 0; i < 3; i++)
        p->icc_bpr[i] = k++, p->icc_igrpen[i] = k++;
      for (guint i = 0; i < 3; i++)
        for (guint j = 0; j < 4; j++)
          p->icc_apr[i][j] = k++;
      p->icc_ctlr_el3 = k++;
      p->icc_sre_el1 = c == 1 ? 0x1 : 0x7;
    }
  return g;
}

typedef struct {
  const guint8 *record;
  gsize record_len;
  const char *extra_cpu_sub;	/* an unknown vCPU subsection, or NULL */
  gboolean cut;			/* no footer */
  guint decoys;			/* guest RAM holding this many more headers */
} Options;

static void
gic_section (GByteArray *b, const VgicQemuGic *g, guint32 id, const Options *o)
{
  header (b, 0x04, id, "arm_gicv3");
  u32 (b, g->gicd_ctlr);
  u32 (b, g->gicd_statusr[0]), u32 (b, g->gicd_statusr[1]);
  const guint32 *bmps[] = { g->group, g->grpmod, g->enabled, g->pending, g->active, g->level,
                            g->edge_trigger };
  for (guint m = 0; m < G_N_ELEMENTS (bmps); m++)
    for (guint i = 0; i < VGIC_QEMU_BMP_WORDS; i++)
      u32 (b, bmps[m][i]);
  g_byte_array_append (b, g->gicd_ipriority, VGIC_QEMU_MAXIRQ);
  for (guint i = 0; i < VGIC_QEMU_MAXIRQ; i++)
    u64 (b, g->gicd_irouter[i]);
  for (guint i = 0; i < VGIC_QEMU_NSACR_WORDS; i++)
    u32 (b, g->gicd_nsacr[i]);
  for (guint c = 0; c < g->nr_cpus; c++)
    {
      const VgicQemuCpu *p = &g->cpus[c];

      u32 (b, p->level), u32 (b, p->gicr_ctlr), u32 (b, p->gicr_statusr[0]);
      u32 (b, p->gicr_statusr[1]), u32 (b, p->gicr_waker), u64 (b, p->gicr_propbaser);
      u64 (b, p->gicr_pendbaser), u32 (b, p->gicr_igroupr0), u32 (b, p->gicr_ienabler0);
      u32 (b, p->gicr_ipendr0), u32 (b, p->gicr_iactiver0), u32 (b, p->edge_trigger);
      u32 (b, p->gicr_igrpmodr0), u32 (b, p->gicr_nsacr);
      g_byte_array_append (b, p->gicr_ipriorityr, 32);
      u64 (b, p->icc_ctlr_el1[0]), u64 (b, p->icc_ctlr_el1[1]), u64 (b, p->icc_pmr_el1);
      for (guint i = 0; i < 3; i++)
        u64 (b, p->icc_bpr[i]);
      for (guint i = 0; i < 3; i++)
        for (guint j = 0; j < 4; j++)
          u64 (b, p->icc_apr[i][j]);
      for (guint i = 0; i < 3; i++)
        u64 (b, p->icc_igrpen[i]);
      u64 (b, p->icc_ctlr_el3);
      if (c == 1)
        {
          /* EL2 state (skipped by the reader), then ICC_SRE_EL1 */
          sub (b, "arm_gicv3_cpu/virt");
          for (guint i = 0; i < 30; i++)
            u64 (b, 0xdead0000 + i);
          sub (b, "arm_gicv3_cpu/sre_el1");
          u64 (b, p->icc_sre_el1);
        }
      if (o->extra_cpu_sub && c == 0)
        {
          sub (b, o->extra_cpu_sub);
          u32 (b, 0);
        }
    }
  sub (b, "arm_gicv3/gicd_no_migration_shift_bug");
  u8 (b, 1);
  if (o->record)
    {
      sub (b, "arm_gicv3/vgicd");
      u32 (b, o->record_len);
      g_byte_array_append (b, o->record, o->record_len);
    }
  if (o->cut)
    return;
  u8 (b, 0x7e);
  u32 (b, id);
}

/* A stream: the configuration, "RAM" holding a decoy header, the GIC, a
 * device after it, the end. */
static GByteArray *
stream (const VgicQemuGic *g, const Options *o)
{
  GByteArray *b = g_byte_array_new ();
  static const guint8 magic[] = { 'Q', 'E', 'V', 'M', 0, 0, 0, 3 };

  g_byte_array_append (b, magic, sizeof magic);
  u8 (b, 0x07);
  u32 (b, 9);
  g_byte_array_append (b, (const guint8 *) "virt-10.0", 9);
  header (b, 0x01, 1, "ram");
  for (guint i = 0; i < 4096; i++)
    u8 (b, (guint8) (i * 31));
  /* a guest that filled its memory with a GIC section's first bytes, one
   * every 64 */
  for (guint i = 0; i < o->decoys; i++)
    {
      header (b, 0x04, 13, "arm_gicv3");
      for (guint j = 23; j < 64; j++)
        u8 (b, 0);
    }
  /* a guest page that holds a GIC section's first bytes */
  header (b, 0x04, 13, "arm_gicv3");
  for (guint i = 0; i < 3000; i++)
    u8 (b, 0);
  u8 (b, 0x10);	/* ... */
  gic_section (b, g, 13, o);
  header (b, 0x04, 14, "timer");
  u64 (b, 1), u64 (b, 2);
  u8 (b, 0x7e);
  u32 (b, 14);
  u8 (b, 0x10);	/* QEMU_VM_EOF */
  return b;
}

static void
assert_same_gic (const VgicQemuGic *a, const VgicQemuGic *b)
{
  g_assert_cmpuint (a->nr_cpus, ==, b->nr_cpus);
  /* everything before nr_cpus, then each vCPU */
  g_assert_cmpmem (a, G_STRUCT_OFFSET (VgicQemuGic, nr_cpus), b,
                   G_STRUCT_OFFSET (VgicQemuGic, nr_cpus));
  g_assert_cmpmem (a->cpus, a->nr_cpus * sizeof (VgicQemuCpu), b->cpus,
                   b->nr_cpus * sizeof (VgicQemuCpu));
}

/* ---- tests -------------------------------------------------------------- */

static void
test_round_trip (void)
{
  g_autoptr (VgicQemuGic) g = patterned_gic (3);
  Options o = { 0 };
  g_autoptr (GByteArray) b = stream (g, &o);
  g_auto (VgicctlStream) s = { 0 };
  g_autoptr (GError) error = NULL;

  g_assert_true (vgicctl_stream_detect (b->data, b->len));
  g_assert_true (vgicctl_stream_read (b->data, b->len, &s, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (s.container, ==, "QEMU migration stream");
  g_assert_cmpstr (s.machine, ==, "virt-10.0");
  g_assert_cmpuint (s.section_id, ==, 13);
  g_assert_null (s.record);
  assert_same_gic (g, s.gic);
}

static void
test_record (void)
{
  g_autoptr (VgicQemuGic) g = patterned_gic (1);
  static const guint8 rec[] = "VGICDREC and the rest of a record";
  Options o = { .record = rec, .record_len = sizeof rec };
  g_autoptr (GByteArray) b = stream (g, &o);
  g_auto (VgicctlStream) s = { 0 };
  g_autoptr (GError) error = NULL;

  g_assert_true (vgicctl_stream_read (b->data, b->len, &s, &error));
  g_assert_no_error (error);
  g_assert_cmpmem (s.record, s.record_len, rec, sizeof rec);
  g_assert_true (s.record >= b->data && s.record < b->data + b->len);
  assert_same_gic (g, s.gic);
}

/* libvirt's header and XML before the stream; compressed: refused. */
static void
test_libvirt (void)
{
  g_autoptr (VgicQemuGic) g = patterned_gic (2);
  Options o = { 0 };
  g_autoptr (GByteArray) inner = stream (g, &o);
  const char *xml = "<domain type='kvm'><name>QEVM</name></domain>";

  for (guint32 compressed = 0; compressed < 2; compressed++)
    {
      g_autoptr (GByteArray) b = g_byte_array_new ();
      g_auto (VgicctlStream) s = { 0 };
      g_autoptr (GError) error = NULL;
      guint32 words[20] = { 2, (guint32) strlen (xml) + 1, 1, compressed };

      g_byte_array_append (b, (const guint8 *) "LibvirtQemudSave", 16);
      g_byte_array_append (b, (const guint8 *) words, sizeof words);	/* host order */
      g_byte_array_append (b, (const guint8 *) xml, strlen (xml) + 1);
      g_byte_array_append (b, inner->data, inner->len);
      g_assert_true (vgicctl_stream_detect (b->data, b->len));
      if (!compressed)
        {
          g_assert_true (vgicctl_stream_read (b->data, b->len, &s, &error));
          g_assert_no_error (error);
          g_assert_cmpstr (s.container, ==, "libvirt save image");
          assert_same_gic (g, s.gic);
        }
      else
        {
          g_assert_false (vgicctl_stream_read (b->data, b->len, &s, &error));
          g_assert_error (error, VGICD_ERROR, VGICD_ERROR_UNSUPPORTED);
          g_assert_nonnull (strstr (error->message, "compressed"));
          g_assert_null (s.gic);
        }
    }
}

static void
test_errors (void)
{
  g_autoptr (VgicQemuGic) g = patterned_gic (2);
  Options cut = { .cut = TRUE }, unknown = { .extra_cpu_sub = "arm_gicv3_cpu/future" };
  g_autoptr (GByteArray) b1 = stream (g, &cut);
  g_autoptr (GByteArray) b2 = stream (g, &unknown);
  g_auto (VgicctlStream) s1 = { 0 };
  g_auto (VgicctlStream) s2 = { 0 };
  g_auto (VgicctlStream) s3 = { 0 };
  g_autoptr (GError) e1 = NULL;
  g_autoptr (GError) e2 = NULL;
  g_autoptr (GError) e3 = NULL;
  static const guint8 not_a_stream[] = "VGICDREC........";

  /* without its footer, neither the section nor the decoy is taken */
  g_assert_false (vgicctl_stream_read (b1->data, b1->len, &s1, &e1));
  g_assert_error (e1, VGICD_ERROR, VGICD_ERROR_BAD_RECORD);
  g_assert_nonnull (strstr (e1->message, "no arm_gicv3 section"));
  g_assert_null (s1.gic);
  g_assert_false (vgicctl_stream_read (b2->data, b2->len, &s2, &e2));
  g_assert_error (e2, VGICD_ERROR, VGICD_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (e2->message, "arm_gicv3_cpu/future"));
  g_assert_false (vgicctl_stream_detect (not_a_stream, sizeof not_a_stream));
  g_assert_false (vgicctl_stream_read (not_a_stream, sizeof not_a_stream, &s3, &e3));
  g_assert_nonnull (strstr (e3->message, "not a QEMU migration stream"));
}

/* A guest whose memory is full of the GIC section's first bytes (100,000
 * of them here, 6.4 MB; a 1 GiB guest holds 16 million): each costs the
 * reader a megabyte of parsing before it fails, so they are tried from the
 * last back, at most 64, and the GIC's own section, after the RAM, is the
 * first tried.  Trying them all took 34 s for these two streams. */
static void
test_decoys (void)
{
  g_autoptr (VgicQemuGic) g = patterned_gic (2);
  Options o = { .decoys = 100000 }, cut = { .decoys = 100000, .cut = TRUE };
  g_autoptr (GByteArray) b1 = stream (g, &o);
  g_autoptr (GByteArray) b2 = stream (g, &cut);
  g_auto (VgicctlStream) s1 = { 0 };
  g_auto (VgicctlStream) s2 = { 0 };
  g_autoptr (GError) e1 = NULL;
  g_autoptr (GError) e2 = NULL;
  gint64 t0 = g_get_monotonic_time ();

  g_assert_true (vgicctl_stream_read (b1->data, b1->len, &s1, &e1));
  g_assert_no_error (e1);
  assert_same_gic (s1.gic, g);
  g_assert_cmpuint (s1.offset, >, 100000 * 64);
  /* Without the GIC's footer, none is taken, and the error says why. */
  g_assert_false (vgicctl_stream_read (b2->data, b2->len, &s2, &e2));
  g_assert_error (e2, VGICD_ERROR, VGICD_ERROR_BAD_RECORD);
  g_assert_nonnull (strstr (e2->message, "among the last 64 of the 100002 places"));
  g_assert_null (s2.gic);
  g_test_message ("two streams of %u bytes, 100,002 headers each: read in %.2f s", b1->len,
                  (g_get_monotonic_time () - t0) / 1e6);
}

/* The fields' values are exactly the registers QEMU's put writes with a
 * value (the planner mirrors it access for access), and hold the bytes,
 * bits and words they should. */
static void
test_fields_values (void)
{
  g_autoptr (VgicQemuGic) g = patterned_gic (2);
  g_autoptr (VgicShape) shape = vgic_shape_new (288, 2, NULL, NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicValues) v = vgic_qemu_fields_values (g, shape, &error);
  g_autoptr (VgicList) state = NULL;
  g_autoptr (VgicValues) full = NULL;
  g_autoptr (VgicList) writes = NULL;
  guint64 x;
  guint distinct = 0;
  g_autoptr (GHashTable) seen = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);

  g_assert_no_error (error);
  g_assert_nonnull (v);
  /* priorities: byte n of a register at bits 8n */
  g_assert_true (vgic_values_lookup (v, VGIC_GRP_DIST, vgic_attr (0, GICD_IPRIORITYR + 36), &x));
  g_assert_cmphex (x, ==, (guint32) g->gicd_ipriority[36] | (guint32) g->gicd_ipriority[37] << 8 |
                   (guint32) g->gicd_ipriority[38] << 16 | (guint32) g->gicd_ipriority[39] << 24);
  /* trigger: IRQ 48's edge bit at ICFGR3 bit 1 */
  g_assert_true (vgic_values_lookup (v, VGIC_GRP_DIST, vgic_attr (0, GICD_ICFGR + 12), &x));
  g_assert_cmpuint ((x >> 1) & 1, ==, (g->edge_trigger[1] >> 16) & 1);
  /* routes: word n is irouter[n]'s low half; the last one a high half */
  g_assert_true (vgic_values_lookup (v, VGIC_GRP_DIST, vgic_attr (0, GICD_IROUTER + 4 * 40), &x));
  g_assert_cmphex (x, ==, (guint32) g->gicd_irouter[40]);
  g_assert_true (vgic_values_lookup (v, VGIC_GRP_DIST, vgic_attr (0, GICD_IROUTER + 4 * 288), &x));
  g_assert_cmphex (x, ==, (guint32) (g->gicd_irouter[287] >> 32));
  /* vCPU 1's APRs: PRIbits 5, two a group; group 1 is QEMU's G1NS */
  g_assert_true (vgic_values_lookup (v, VGIC_GRP_SYSREG, vgic_attr (shape->mpidrs[1],
                                                                    ICC_AP1R_EL1 (1)), &x));
  g_assert_cmphex (x, ==, g->cpus[1].icc_apr[VGIC_QEMU_G1NS][1]);
  g_assert_false (vgic_values_lookup (v, VGIC_GRP_SYSREG, vgic_attr (shape->mpidrs[1],
                                                                     ICC_AP1R_EL1 (2)), &x));
  g_assert_true (vgic_values_lookup (v, VGIC_GRP_SYSREG, vgic_attr (shape->mpidrs[1],
                                                                    ICC_SRE_EL1), &x));
  g_assert_cmphex (x, ==, 0x1);

  /* Against the planner's restore (with LPIs, so that it writes the
   * bases): every write it makes with a value is one of the fields'
   * values, the same one, and there are no others. */
  state = vgic_list_new (vgic_values_size (v) + 2 * shape->nr_vcpus);
  for (gsize i = 0; i < vgic_values_size (v); i++)
    vgic_list_append (state, vgic_values_at (v, i), 1);
  for (guint c = 0; c < shape->nr_vcpus; c++)
    {
      vgic_list_add (state, VGIC_GRP_REDIST, vgic_attr (shape->mpidrs[c], GICR_TYPER),
                     GICR_TYPER_PLPIS | (c == shape->nr_vcpus - 1 ? GICR_TYPER_LAST : 0));
      vgic_list_add (state, VGIC_GRP_REDIST, vgic_attr (shape->mpidrs[c], GICR_TYPER + 4),
                     shape->mpidrs[c]);
    }
  full = vgic_values_new (state->entries, state->len, &error);
  g_assert_no_error (error);
  writes = vgic_plan_restore_write (shape, full, FALSE, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < writes->len; i++)
    {
      const VgicEntry *w = &writes->entries[i];
      gint64 *key;

      if (!vgic_values_lookup (v, w->group, w->attr, &x))
        {
          /* only the clear-alls (ICENABLER, ICPENDR, ICACTIVER) */
          g_assert_cmphex (w->value, ==, 0xffffffffu);
          continue;
        }
      g_assert_cmphex (w->value, ==, x);
      key = g_new (gint64, 1);
      *key = (gint64) (w->attr ^ ((guint64) w->group << 60));
      if (g_hash_table_add (seen, key))
        distinct++;
    }
  g_assert_cmpuint (distinct, ==, vgic_values_size (v));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/stream/round-trip", test_round_trip);
  g_test_add_func ("/stream/record", test_record);
  g_test_add_func ("/stream/libvirt", test_libvirt);
  g_test_add_func ("/stream/errors", test_errors);
  g_test_add_func ("/stream/decoys", test_decoys);
  g_test_add_func ("/stream/fields-values", test_fields_values);
  return g_test_run ();
}
