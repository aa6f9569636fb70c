/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * test-record.c - the state record: CRC-32C, round trips at several shapes,
 * and one test per way a record can be malformed, each asserting the error
 * code and a distinctive part of the message.
 *
 * The malformed records are built by a small writer of this file's own
 * (TRec), written from docs/state-record.md rather than from vgic-record.c,
 * so the tests also hold the encoder to the documented layout.
 */
#include <malloc.h>
#include <string.h>
#include <time.h>

#include "crc32c.h"
#include "fake-save.h"
#include "vgic-plan.h"
#include "vgic-record.h"
#include "vgic-regs.h"

#define GRP_DIST KVM_DEV_ARM_VGIC_GRP_DIST_REGS
#define GRP_REDIST KVM_DEV_ARM_VGIC_GRP_REDIST_REGS
#define GRP_SYSREG KVM_DEV_ARM_VGIC_GRP_CPU_SYSREGS
#define GRP_LEVEL KVM_DEV_ARM_VGIC_GRP_LEVEL_INFO

typedef struct kvm_vgic_batch_entry Entry;

/* ------------------------------------------------------------------ */
/* Making saves                                                       */
/* ------------------------------------------------------------------ */

/* Both rounds of a save of @shape, with made-up values. */
static VgicList *
make_save (const VgicShape *shape, gboolean plpis, guint pri_bits, guint32 seed)
{
  return fake_save (shape, plpis, pri_bits, seed, NULL);
}

static GBytes *
encode_save (const VgicShape *shape, VgicList *reads)
{
  g_autoptr (GError) error = NULL;
  GBytes *bytes = vgic_record_encode (shape, reads->entries,
                                      reads->len, &error);

  g_assert_no_error (error);
  g_assert_nonnull (bytes);
  return bytes;
}

/* A valid record of a small VM (2 vCPUs, 64 IRQs, LPIs, 2 APRs). */
static GBytes *
small_record (VgicShape **shape_out)
{
  g_autoptr (VgicShape) shape = vgic_shape_new (64, 2, NULL, NULL);
  g_autoptr (VgicList) reads = make_save (shape, TRUE, 6, 7);
  GBytes *bytes = encode_save (shape, reads);

  if (shape_out)
    *shape_out = g_steal_pointer (&shape);
  return bytes;
}

/* ------------------------------------------------------------------ */
/* TRec: the documented layout, written independently                 */
/* ------------------------------------------------------------------ */

typedef struct {
  guint8 magic[8];
  guint16 version, header_len;
  guint32 flags, nr_irqs, nr_vcpus, nr_entries, reserved;
  GArray *mpidrs;	/* guint32 */
  GArray *entries;	/* Entry */
} TRec;

static guint32
rd32 (const guint8 *p)
{
  return p[0] | p[1] << 8 | p[2] << 16 | (guint32) p[3] << 24;
}

static guint64
rd64 (const guint8 *p)
{
  return rd32 (p) | (guint64) rd32 (p + 4) << 32;
}

static void
wr (GByteArray *b, guint64 v, guint size)
{
  for (guint i = 0; i < size; i++)
    {
      guint8 c = (guint8) (v >> (8 * i));
      g_byte_array_append (b, &c, 1);
    }
}

static void
trec_clear (TRec *t)
{
  g_clear_pointer (&t->mpidrs, g_array_unref);
  g_clear_pointer (&t->entries, g_array_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (TRec, trec_clear)

static void
trec_parse (TRec *t, GBytes *bytes)
{
  gsize len;
  const guint8 *p = g_bytes_get_data (bytes, &len);
  const guint8 *q;

  g_assert_cmpuint (len, >=, 36);
  memcpy (t->magic, p, 8);
  t->version = (guint16) (p[8] | p[9] << 8);
  t->header_len = (guint16) (p[10] | p[11] << 8);
  t->flags = rd32 (p + 12);
  t->nr_irqs = rd32 (p + 16);
  t->nr_vcpus = rd32 (p + 20);
  t->nr_entries = rd32 (p + 24);
  t->reserved = rd32 (p + 28);
  g_assert_cmpuint (len, ==, 32 + 4 * t->nr_vcpus + 20 * t->nr_entries + 4);
  g_assert_cmphex (rd32 (p + len - 4), ==, crc32c (0, p, len - 4));
  t->mpidrs = g_array_new (FALSE, FALSE, sizeof (guint32));
  t->entries = g_array_new (FALSE, FALSE, sizeof (Entry));
  q = p + 32;
  for (guint32 i = 0; i < t->nr_vcpus; i++, q += 4)
    {
      guint32 m = rd32 (q);
      g_array_append_val (t->mpidrs, m);
    }
  for (guint32 i = 0; i < t->nr_entries; i++, q += 20)
    {
      Entry e = { .group = rd32 (q), .attr = rd64 (q + 4), .value = rd64 (q + 12) };
      g_array_append_val (t->entries, e);
    }
}

/* Serialise with the header's counts as they are (so a test can lie), and a
 * correct CRC unless @bad_crc. */
static GByteArray *
trec_write (const TRec *t, gboolean bad_crc)
{
  GByteArray *b = g_byte_array_new ();
  guint32 crc;

  g_byte_array_append (b, t->magic, 8);
  wr (b, t->version, 2);
  wr (b, t->header_len, 2);
  wr (b, t->flags, 4);
  wr (b, t->nr_irqs, 4);
  wr (b, t->nr_vcpus, 4);
  wr (b, t->nr_entries, 4);
  wr (b, t->reserved, 4);
  for (guint i = 0; i < t->mpidrs->len; i++)
    wr (b, g_array_index (t->mpidrs, guint32, i), 4);
  for (guint i = 0; i < t->entries->len; i++)
    {
      const Entry *e = &g_array_index (t->entries, Entry, i);
      wr (b, e->group, 4);
      wr (b, e->attr, 8);
      wr (b, e->value, 8);
    }
  crc = crc32c (0, b->data, b->len);
  wr (b, bad_crc ? crc ^ 1 : crc, 4);
  return b;
}

/* Decode @b and check the error's code and that its message contains @what. */
static void
assert_rejected (GByteArray *b, gint code, const char *what)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicRecord) r = vgic_record_decode (b->data, b->len, &error);

  g_assert_null (r);
  g_assert_error (error, VGICD_ERROR, code);
  if (!strstr (error->message, what))
    g_error ("message \"%s\" lacks \"%s\"", error->message, what);
  g_test_message ("rejected: %s", error->message);
}

/* ------------------------------------------------------------------ */
/* CRC-32C                                                            */
/* ------------------------------------------------------------------ */

/* The CRC one bit at a time, straight from the definition. */
static guint32
crc32c_bitwise (const guint8 *p, gsize n)
{
  guint32 c = 0xffffffffu;

  while (n--)
    {
      c ^= *p++;
      for (int k = 0; k < 8; k++)
        c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
  return ~c;
}

static void
test_crc32c (void)
{
  guint8 buf[1031];

  g_assert_cmphex (crc32c (0, "123456789", 9), ==, 0xE3069283u);
  g_assert_cmphex (crc32c (0, "", 0), ==, 0);
  g_assert_cmphex (crc32c_table (0, "123456789", 9), ==, 0xE3069283u);
  for (gsize i = 0; i < sizeof buf; i++)
    buf[i] = (guint8) ((i * 2654435761u) >> 13);
  /* Every length and misalignment against the reference, and chaining. */
  for (gsize off = 0; off < 8; off++)
    for (gsize n = 0; n + off <= 300; n++)
      {
        /* crc32c() uses the CPU's instruction where it has one */
        g_assert_cmphex (crc32c (0, buf + off, n), ==, crc32c_bitwise (buf + off, n));
        g_assert_cmphex (crc32c_table (0, buf + off, n), ==, crc32c_bitwise (buf + off, n));
      }
  for (gsize cut = 0; cut <= sizeof buf; cut += 13)
    g_assert_cmphex (crc32c (crc32c (0, buf, cut), buf + cut, sizeof buf - cut), ==,
                     crc32c_bitwise (buf, sizeof buf));
}

/* ------------------------------------------------------------------ */
/* Round trips                                                        */
/* ------------------------------------------------------------------ */

/* What a round trip's save read of the routes QEMU misses. */
enum { ROUTES_NONE, ROUTES_SET, ROUTES_ZERO };

typedef struct {
  guint nr_irqs, nr_vcpus;
  gboolean plpis;
  guint pri_bits;
  gboolean sparse_mpidrs;
  int routes;
} RoundTrip;

/* Is @e one of the routes a version 1 record leaves out (a zero-routes
 * save's, which the encoder drops)? */
static gboolean
dropped (const RoundTrip *rt, const VgicShape *shape, const Entry *e)
{
  return rt->routes == ROUTES_ZERO && vgic_plan_is_route (shape, e->group, e->attr);
}

static void
test_round_trip (gconstpointer data)
{
  const RoundTrip *rt = data;
  g_autoptr (GError) error = NULL;
  g_autofree guint32 *mpidrs = g_new (guint32, rt->nr_vcpus);
  g_autoptr (VgicShape) shape = NULL;
  g_autoptr (VgicList) reads = NULL;
  g_autoptr (GBytes) bytes = NULL, again = NULL;
  g_autoptr (VgicRecord) r = NULL;
  g_auto (TRec) t = { 0 };
  g_autoptr (GArray) flat = g_array_new (FALSE, FALSE, sizeof (Entry));
  guint apr = vgic_icc_ctlr_apr_count ((uint64_t) (rt->pri_bits - 1)
                                       << ICC_CTLR_EL1_PRIBITS_SHIFT);
  guint spis = rt->nr_irqs - 32;
  guint routes, kept;

  for (guint i = 0; i < rt->nr_vcpus; i++)
    mpidrs[i] = rt->sparse_mpidrs ? (i << 8) | 0x01000000 | (i & 3) : vgic_default_mpidr (i);
  shape = vgic_shape_new (rt->nr_irqs, rt->nr_vcpus, mpidrs, &error);
  g_assert_no_error (error);
  if (rt->routes == ROUTES_NONE)
    reads = make_save (shape, rt->plpis, rt->pri_bits, rt->nr_vcpus * 31 + rt->nr_irqs);
  else
    reads = fake_save_routes (shape, rt->plpis, rt->pri_bits, rt->nr_vcpus * 31 + rt->nr_irqs,
                              rt->routes == ROUTES_ZERO);
  routes = rt->routes == ROUTES_NONE ? 0 : vgic_plan_route_count (shape);
  kept = reads->len - (spis - 1) - (rt->routes == ROUTES_ZERO ? routes : 0);
  g_assert_cmpuint (reads->len, ==, vgic_plan_save_count (shape, rt->plpis, apr) + routes);
  /* The routes are SPIs nr_irqs/2 + 1 .. nr_irqs - 1: every SPI route
   * QEMU's offsets (0x6000 + 4k, k <= nr_irqs) miss. */
  g_assert_cmpuint (vgic_plan_route_count (shape), ==, rt->nr_irqs / 2 - 1);
  bytes = encode_save (shape, reads);

  /* One entry per register: the S - 1 IROUTER words read twice are once;
   * routes that are all 0 are left out (version 1). */
  g_assert_cmpuint (g_bytes_get_size (bytes), ==, vgic_record_encoded_size (shape, kept));

  r = vgic_record_decode (g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes), &error);
  g_assert_no_error (error);
  g_assert_cmpuint (r->version, ==, rt->routes == ROUTES_SET ? 2 : 1);
  g_assert_cmpint (r->routes, ==, rt->routes == ROUTES_SET);
  g_assert_cmpuint (r->shape->nr_irqs, ==, rt->nr_irqs);
  g_assert_cmpuint (r->shape->nr_vcpus, ==, rt->nr_vcpus);
  g_assert_cmpmem (r->shape->mpidrs, rt->nr_vcpus * 4, mpidrs, rt->nr_vcpus * 4);
  for (guint i = 0; i < reads->len; i++)
    {
      const Entry *e = &reads->entries[i];
      uint64_t v = 0;

      g_assert_cmpint (vgic_values_lookup (r->values, e->group, e->attr, &v), ==,
                       !dropped (rt, shape, e));
      g_assert_cmphex (v, ==, dropped (rt, shape, e) ? 0 : e->value);
    }
  g_assert_cmpuint (vgic_values_size (r->values), ==, kept);

  /* The documented layout: header fields, and entries in first-read order. */
  trec_parse (&t, bytes);
  g_assert_cmpmem (t.magic, 8, "VGICDREC", 8);
  g_assert_cmpuint (t.version, ==, rt->routes == ROUTES_SET ? 2 : 1);
  g_assert_cmpuint (t.header_len, ==, 32);
  g_assert_cmpuint (t.flags, ==, 0);
  g_assert_cmpuint (t.reserved, ==, 0);
  {
    g_autoptr (GHashTable) seen = g_hash_table_new_full (g_bytes_hash, g_bytes_equal,
                                                         (GDestroyNotify) g_bytes_unref, NULL);
    guint j = 0;

    for (guint i = 0; i < reads->len; i++)
      {
        const Entry *e = &reads->entries[i];
        const Entry *got;
        GBytes *key = g_bytes_new (e, sizeof *e);

        if (g_hash_table_contains (seen, key) || dropped (rt, shape, e))
          {
            g_bytes_unref (key);
            continue;	/* a repeat read: the record keeps the first */
          }
        g_hash_table_add (seen, key);
        got = &g_array_index (t.entries, Entry, j++);
        g_assert_cmpuint (got->group, ==, e->group);
        g_assert_cmphex (got->attr, ==, e->attr);
        g_assert_cmphex (got->value, ==, e->value);
      }
    g_assert_cmpuint (j, ==, t.nr_entries);
  }

  /* decode → encode is the identity, whatever order the values come in. */
  for (gsize i = vgic_values_size (r->values); i-- > 0;)
    g_array_append_vals (flat, vgic_values_index (r->values, i), 1);
  again = vgic_record_encode (r->shape, (const Entry *) (void *) flat->data, flat->len, &error);
  g_assert_no_error (error);
  g_assert_true (g_bytes_equal (bytes, again));
}

/* The 160-vCPU VM of the facts table: size and speed, for the record. */
static void
test_large_timing (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicShape) shape = vgic_shape_new (992, 160, NULL, NULL);
  g_autoptr (VgicList) reads = make_save (shape, TRUE, 5, 1);
  g_autoptr (GBytes) bytes = NULL;
  g_autoptr (VgicRecord) r = NULL;
  gint64 t0, t1, t2;
  const int rounds = 20;

  g_assert_cmpuint (reads->len, ==, 7175);
  t0 = g_get_monotonic_time ();
  for (int i = 0; i < rounds; i++)
    {
      g_clear_pointer (&bytes, g_bytes_unref);
      bytes = encode_save (shape, reads);
    }
  t1 = g_get_monotonic_time ();
  for (int i = 0; i < rounds; i++)
    {
      g_clear_pointer (&r, vgic_record_free);
      r = vgic_record_decode (g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes), &error);
      g_assert_no_error (error);
    }
  t2 = g_get_monotonic_time ();
  g_test_message ("160 vCPUs, N=992, P=1, A=1: %u reads, %" G_GSIZE_FORMAT
                  " entries, %" G_GSIZE_FORMAT " bytes; encode %.3f ms, decode %.3f ms",
                  reads->len, vgic_values_size (r->values), g_bytes_get_size (bytes),
                  (t1 - t0) / 1000.0 / rounds, (t2 - t1) / 1000.0 / rounds);
  g_test_minimized_result ((t2 - t1) / 1000.0 / rounds, "decode ms");
}

/* ------------------------------------------------------------------ */
/* Encode refuses what is not a save                                  */
/* ------------------------------------------------------------------ */

static void
test_encode_refuses (void)
{
  g_autoptr (VgicShape) shape = vgic_shape_new (64, 2, NULL, NULL);
  g_autoptr (VgicList) reads = make_save (shape, FALSE, 5, 3);
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) bytes = NULL;
  Entry *e;

  /* One register short. */
  bytes = vgic_record_encode (shape, reads->entries,
                              reads->len - 1, &error);
  g_assert_null (bytes);
  g_assert_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET);
  g_assert_nonnull (strstr (error->message, "missing register"));
  g_clear_error (&error);

  /* A 32-bit register with high bits. */
  e = &reads->entries[3];
  g_assert_cmpuint (e->group, !=, GRP_SYSREG);
  e->value |= 1ULL << 40;
  bytes = vgic_record_encode (shape, reads->entries,
                              reads->len, &error);
  g_assert_null (bytes);
  g_assert_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET);
  g_assert_nonnull (strstr (error->message, "32-bit register"));
  g_clear_error (&error);
  e->value &= 0xffffffffu;

  /* One more register than a save of this shape reads: the ICC_PMR_EL1 of
   * a vCPU the VM does not have. */
  {
    Entry extra = { .group = GRP_SYSREG, .attr = vgic_attr (0x00ffff00, ICC_PMR_EL1) };
    vgic_list_append (reads, &extra, 1);
  }
  bytes = vgic_record_encode (shape, reads->entries,
                              reads->len, &error);
  g_assert_null (bytes);
  g_assert_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET);
  g_assert_nonnull (strstr (error->message, "unexpected register"));
}

/* ------------------------------------------------------------------ */
/* Decode rejects malformed records                                   */
/* ------------------------------------------------------------------ */

/* Each test takes the small valid record apart, breaks one thing, and puts
 * it back together with a correct CRC (unless the CRC is the point). */
#define BROKEN_RECORD(t)						\
  g_autoptr (GBytes) good_ = small_record (NULL);			\
  g_auto (TRec) t = { 0 };						\
  trec_parse (&t, good_)

static void
test_wrong_magic (void)
{
  BROKEN_RECORD (t);
  g_autoptr (GByteArray) b = NULL;

  t.magic[0] = 'Q';
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_BAD_RECORD, "wrong magic");
}

static void
test_future_version (void)
{
  BROKEN_RECORD (t);
  g_autoptr (GByteArray) b = NULL;

  t.version = VGIC_RECORD_VERSION + 1;
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_UNSUPPORTED, "upgrade vgicd on the destination");
  assert_rejected (b, VGICD_ERROR_UNSUPPORTED, "understands versions up to 2");
}

static void
test_version_zero (void)
{
  BROKEN_RECORD (t);
  g_autoptr (GByteArray) b = NULL;

  t.version = 0;
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_BAD_RECORD, "version 0");
}

static void
test_header_len (void)
{
  BROKEN_RECORD (t);
  g_autoptr (GByteArray) b = NULL;

  t.header_len = 40;
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_BAD_RECORD, "header length 40");
}

static void
test_unknown_flags (void)
{
  BROKEN_RECORD (t);
  g_autoptr (GByteArray) b = NULL;

  t.flags = 0x4;
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_UNSUPPORTED, "unknown flags 0x00000004");
}

static void
test_reserved (void)
{
  BROKEN_RECORD (t);
  g_autoptr (GByteArray) b = NULL;

  t.reserved = 1;
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_BAD_RECORD, "reserved header field");
}

static void
test_truncated (void)
{
  BROKEN_RECORD (t);
  g_autoptr (GByteArray) b = trec_write (&t, FALSE);
  guint full = b->len;
  g_autofree char *want = g_strdup_printf ("need %u bytes, got %u", full, full - 1);

  g_byte_array_set_size (b, full - 1);
  assert_rejected (b, VGICD_ERROR_BAD_RECORD, want);
  g_byte_array_set_size (b, 20);
  assert_rejected (b, VGICD_ERROR_BAD_RECORD, "at least 32 bytes of header, got 20");
  /* Every prefix is refused, as truncated (or, empty, the same). */
  for (guint n = 0; n < full; n++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (VgicRecord) r = vgic_record_decode (g_bytes_get_data (good_, NULL), n, &error);

      g_assert_null (r);
      g_assert_error (error, VGICD_ERROR, VGICD_ERROR_BAD_RECORD);
      g_assert_nonnull (strstr (error->message, "truncated"));
    }
}

static void
test_trailing (void)
{
  BROKEN_RECORD (t);
  g_autoptr (GByteArray) b = trec_write (&t, FALSE);
  g_autofree char *want = g_strdup_printf ("3 trailing bytes: expected %u bytes, got %u",
                                           b->len, b->len + 3);

  g_byte_array_append (b, (const guint8 *) "xyz", 3);
  assert_rejected (b, VGICD_ERROR_BAD_RECORD, want);
}

static void
test_too_many_vcpus (void)
{
  BROKEN_RECORD (t);
  g_autoptr (GByteArray) b = NULL;

  t.nr_vcpus = VGIC_MAX_VCPUS + 1;
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_BAD_RECORD, "4097 vCPUs is out of range");
  t.nr_vcpus = 0;
  g_byte_array_unref (b);
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_BAD_RECORD, "0 vCPUs is out of range");
}

static void
test_nr_irqs_range (void)
{
  BROKEN_RECORD (t);
  g_autoptr (GByteArray) b = NULL;

  t.nr_irqs = 2048;
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_BAD_RECORD, "nr_irqs 2048 is out of range");
  t.nr_irqs = 32;
  g_byte_array_unref (b);
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_BAD_RECORD, "nr_irqs 32 is out of range");
}

static void
test_too_many_entries (void)
{
  BROKEN_RECORD (t);
  g_autoptr (VgicShape) counts = vgic_shape_new (64, 2, NULL, NULL);
  guint max = vgic_plan_save_count (counts, TRUE, 4);
  g_autoptr (GByteArray) b = NULL;
  g_autofree char *want = g_strdup_printf ("%u entries, but a save of 2 vCPUs "
                                           "and 64 IRQs reads at most %u", max + 1, max);

  t.nr_entries = max + 1;
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_BAD_RECORD, want);
}

/* Heap in use, from glibc's allocator; 0 where a sanitizer replaces it. */
static gsize
heap_in_use (void)
{
  struct mallinfo2 mi = mallinfo2 ();

  return mi.uordblks + mi.hblkhd;
}

/* This thread's CPU time in µs: a bound on work done, which a busy
 * machine's scheduling does not move (a wall-clock bound would fail a
 * run that was merely descheduled). */
static gint64
thread_cpu_us (void)
{
  struct timespec ts;

  g_assert_cmpint (clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts), ==, 0);
  return (gint64) ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000;
}

static void
test_huge_count_short_buffer (void)
{
  guint8 hdr[36] = { 'V', 'G', 'I', 'C', 'D', 'R', 'E', 'C', 1, 0, 32, 0 };
  g_autoptr (VgicShape) counts = vgic_shape_new (1024, VGIC_MAX_VCPUS, NULL, NULL);
  guint max = vgic_plan_save_count (counts, TRUE, 4);
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicRecord) r = NULL;
  gsize before, after;
  gint64 t0;

  /* The largest counts the limits allow (a ~3 MB record), in 36 bytes. */
  hdr[16] = 1024 & 0xff, hdr[17] = 1024 >> 8;
  hdr[20] = VGIC_MAX_VCPUS & 0xff, hdr[21] = VGIC_MAX_VCPUS >> 8;
  for (int i = 0; i < 4; i++)
    hdr[24 + i] = (guint8) (max >> (8 * i));
  before = heap_in_use ();
  t0 = thread_cpu_us ();
  r = vgic_record_decode (hdr, sizeof hdr, &error);
  g_assert_cmpint (thread_cpu_us () - t0, <, G_USEC_PER_SEC / 10);
  after = heap_in_use ();
  g_assert_null (r);
  g_assert_error (error, VGICD_ERROR, VGICD_ERROR_BAD_RECORD);
  g_assert_nonnull (strstr (error->message, "truncated"));
  g_assert_nonnull (strstr (error->message, "got 36"));
  /* Only the error message may have been allocated. */
  g_assert_cmpuint (after, <, before + 64 * 1024);

  /* And a count beyond the limits is refused as absurd, not as short. */
  g_clear_error (&error);
  memset (hdr + 24, 0xff, 4);
  r = vgic_record_decode (hdr, sizeof hdr, &error);
  g_assert_error (error, VGICD_ERROR, VGICD_ERROR_BAD_RECORD);
  g_assert_nonnull (strstr (error->message, "4294967295 entries"));
}

static void
test_bad_checksum (void)
{
  BROKEN_RECORD (t);
  g_autoptr (GByteArray) b = trec_write (&t, TRUE);

  assert_rejected (b, VGICD_ERROR_BAD_RECORD, "checksum mismatch");
}

/* Flip each bit of one byte of the body in turn: the CRC catches every one. */
static void
test_every_flip (void)
{
  g_autoptr (GBytes) good = small_record (NULL);
  gsize len;
  const guint8 *p = g_bytes_get_data (good, &len);
  g_autofree guint8 *copy = g_memdup2 (p, len);

  for (gsize i = 32; i < len; i++)
    for (int bit = 0; bit < 8; bit += 3)
      {
        g_autoptr (GError) error = NULL;
        g_autoptr (VgicRecord) r = NULL;

        copy[i] ^= (guint8) (1u << bit);
        r = vgic_record_decode (copy, len, &error);
        g_assert_null (r);
        g_assert_error (error, VGICD_ERROR, VGICD_ERROR_BAD_RECORD);
        g_assert_nonnull (strstr (error->message, "checksum"));
        copy[i] = p[i];
      }
}

static void
test_impossible_shape (void)
{
  BROKEN_RECORD (t);
  g_autoptr (GByteArray) b = NULL;

  g_array_index (t.mpidrs, guint32, 1) = g_array_index (t.mpidrs, guint32, 0);
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_INVALID_SHAPE, "share the affinity");

  /* In range, but not a multiple of 32. */
  g_array_index (t.mpidrs, guint32, 1) = 1;
  t.nr_irqs = 100;
  g_byte_array_unref (b);
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_INVALID_SHAPE, "nr_irqs 100 is not a multiple of 32");
}

static guint
find_entry (const TRec *t, guint32 group, uint32_t low)
{
  for (guint i = 0; i < t->entries->len; i++)
    {
      const Entry *e = &g_array_index (t->entries, Entry, i);
      if (e->group == group && vgic_attr_low (e->attr) == low)
        return i;
    }
  g_assert_not_reached ();
}

static void
test_missing_register (void)
{
  BROKEN_RECORD (t);
  g_autoptr (GByteArray) b = NULL;

  g_array_remove_index (t.entries, find_entry (&t, GRP_DIST, GICD_STATUSR));
  t.nr_entries--;
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_REGISTER_SET, "missing register: GICD_STATUSR");
}

static void
test_duplicate_register (void)
{
  BROKEN_RECORD (t);
  g_autoptr (GByteArray) b = NULL;
  guint i = find_entry (&t, GRP_DIST, GICD_STATUSR);

  /* Same count: the entry after it becomes a second GICD_STATUSR. */
  g_array_index (t.entries, Entry, i + 1) = g_array_index (t.entries, Entry, i);
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_REGISTER_SET, "duplicate register");
}

static void
test_unexpected_register (void)
{
  BROKEN_RECORD (t);
  g_autoptr (GByteArray) b = NULL;
  Entry extra = { .group = GRP_DIST, .attr = vgic_attr (0, GICD_IGRPMODR + 4) };

  /* An extra register (QEMU never saves IGRPMODR). */
  g_array_append_val (t.entries, extra);
  t.nr_entries++;
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_REGISTER_SET, "unexpected register");
}

static void
test_high_bits (void)
{
  BROKEN_RECORD (t);
  g_autoptr (GByteArray) b = NULL;

  g_array_index (t.entries, Entry, find_entry (&t, GRP_DIST, GICD_CTLR)).value = 0x100000012ULL;
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_REGISTER_SET, "is a 32-bit register but carries 0x100000012");
}

static void
test_unknown_group (void)
{
  BROKEN_RECORD (t);
  g_autoptr (GByteArray) b = NULL;

  /* CTRL is a real group, but never state: a record must not reach it. */
  g_array_index (t.entries, Entry, 5).group = KVM_DEV_ARM_VGIC_GRP_CTRL;
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_BAD_RECORD, "entry 5 has unknown group 4");
}

static void
test_out_of_order (void)
{
  BROKEN_RECORD (t);
  g_autoptr (GByteArray) b = NULL;
  Entry tmp = g_array_index (t.entries, Entry, 3);

  g_array_index (t.entries, Entry, 3) = g_array_index (t.entries, Entry, 4);
  g_array_index (t.entries, Entry, 4) = tmp;
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_BAD_RECORD, "entry 3 is ");
  assert_rejected (b, VGICD_ERROR_BAD_RECORD, "out of plan order");
}

/* ------------------------------------------------------------------ */
/* Version 2: the routes QEMU's addressing misses                     */
/* ------------------------------------------------------------------ */

/* A valid version 2 record of the small VM: 64 IRQs, so SPIs 33..63 are
 * the 31 routes QEMU misses, each set. */
#define ROUTES_RECORD(t)						\
  g_autoptr (VgicShape) shape_ = vgic_shape_new (64, 2, NULL, NULL);	\
  g_autoptr (VgicList) reads_ = fake_save_routes (shape_, TRUE, 6, 7, FALSE); \
  g_autoptr (GBytes) good_ = encode_save (shape_, reads_);		\
  g_auto (TRec) t = { 0 };						\
  trec_parse (&t, good_)

static gboolean
is_lost_route (const Entry *e)
{
  const uint32_t low = vgic_attr_low (e->attr);

  return e->group == GRP_DIST && low >= GICD_IROUTER + 8 * 33 &&
         low < GICD_IROUTER + 8 * 64 && low % 8 == 0;
}

static guint
count_lost_routes (const TRec *t)
{
  guint n = 0;

  for (guint i = 0; i < t->entries->len; i++)
    n += is_lost_route (&g_array_index (t->entries, Entry, i));
  return n;
}

/* Written as version 2, with the routes; every one set to 0 is a record
 * no writer makes (it would be version 1): refused, not loaded as if the
 * routes were meant. */
static void
test_routes_all_zero (void)
{
  ROUTES_RECORD (t);
  g_autoptr (GByteArray) b = NULL;

  g_assert_cmpuint (t.version, ==, 2);
  g_assert_cmpuint (count_lost_routes (&t), ==, 31);
  for (guint i = 0; i < t.entries->len; i++)
    if (is_lost_route (&g_array_index (t.entries, Entry, i)))
      g_array_index (t.entries, Entry, i).value = 0;
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_BAD_RECORD, "which a writer stores as version 1");
  assert_rejected (b, VGICD_ERROR_BAD_RECORD, "SPIs 33-63");
}

/* One route left set is enough for version 2. */
static void
test_routes_one_set (void)
{
  ROUTES_RECORD (t);
  g_autoptr (GByteArray) b = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicRecord) r = NULL;
  gboolean kept = FALSE;

  for (guint i = 0; i < t.entries->len; i++)
    if (is_lost_route (&g_array_index (t.entries, Entry, i)))
      {
        if (kept)
          g_array_index (t.entries, Entry, i).value = 0;
        kept = TRUE;
      }
  b = trec_write (&t, FALSE);
  r = vgic_record_decode (b->data, b->len, &error);
  g_assert_no_error (error);
  g_assert_true (r->routes);
}

/* Version 1 has no place for the routes: a v1 header over them is refused
 * by name (an older vgicd would refuse it the same way). */
static void
test_routes_in_version_1 (void)
{
  ROUTES_RECORD (t);
  g_autoptr (GByteArray) b = NULL;

  t.version = 1;
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_REGISTER_SET,
                   "unexpected register: GICD_IROUTER<33> lo is a route only a version 2 "
                   "record carries");
}

/* Version 2 without one of its routes. */
static void
test_routes_missing (void)
{
  ROUTES_RECORD (t);
  g_autoptr (GByteArray) b = NULL;

  for (guint i = t.entries->len; i-- > 0;)
    if (is_lost_route (&g_array_index (t.entries, Entry, i)))
      {
        g_array_remove_index (t.entries, i);
        break;
      }
  t.nr_entries--;
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_REGISTER_SET, "missing register: GICD_IROUTER");
}

/* The routes sit between round 1 and round 2: anywhere else is out of
 * plan order. */
static void
test_routes_out_of_place (void)
{
  ROUTES_RECORD (t);
  g_autoptr (GByteArray) b = NULL;
  guint first = 0;
  Entry route;

  while (!is_lost_route (&g_array_index (t.entries, Entry, first)))
    first++;
  route = g_array_index (t.entries, Entry, first);
  g_array_remove_index (t.entries, first);
  g_array_append_val (t.entries, route);
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_BAD_RECORD, "out of plan order");
}

/* Version 2's bound on entries counts the routes; version 1's does not. */
static void
test_routes_too_many_entries (void)
{
  ROUTES_RECORD (t);
  g_autoptr (GByteArray) b = NULL;
  guint max = vgic_plan_save_count (shape_, TRUE, 4) + 31;
  g_autofree char *want = g_strdup_printf ("%u entries, but a save of 2 vCPUs "
                                           "and 64 IRQs reads at most %u", max + 1, max);

  t.nr_entries = max + 1;
  b = trec_write (&t, FALSE);
  assert_rejected (b, VGICD_ERROR_BAD_RECORD, want);
}

/* ------------------------------------------------------------------ */
/* Load: the record against the attached VM                           */
/* ------------------------------------------------------------------ */

static GBytes *
record_of (guint nr_irqs, guint nr_vcpus, VgicShape **shape_out)
{
  g_autoptr (VgicShape) shape = vgic_shape_new (nr_irqs, nr_vcpus, NULL, NULL);
  g_autoptr (VgicList) reads = make_save (shape, TRUE, 5, 11);
  GBytes *b = encode_save (shape, reads);

  *shape_out = g_steal_pointer (&shape);
  return b;
}

static void
assert_load (GBytes *rec, const VgicShape *vm, gint code, const char *what)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicRecord) r = vgic_record_load (g_bytes_get_data (rec, NULL),
                                               g_bytes_get_size (rec), vm, &error);

  if (!what)
    {
      g_assert_no_error (error);
      g_assert_nonnull (r);
      return;
    }
  g_assert_null (r);
  g_assert_error (error, VGICD_ERROR, code);
  if (!strstr (error->message, what))
    g_error ("message \"%s\" lacks \"%s\"", error->message, what);
}

static void
test_load (void)
{
  g_autoptr (VgicShape) s4 = NULL;
  g_autoptr (GBytes) rec = record_of (288, 4, &s4);
  g_autoptr (VgicShape) vm8 = vgic_shape_new (288, 8, NULL, NULL);
  g_autoptr (VgicShape) vm_irqs = vgic_shape_new (320, 4, NULL, NULL);
  guint32 other[4] = { 0, 1, 2, 0x100 };
  g_autoptr (VgicShape) vm_mpidr = vgic_shape_new (288, 4, other, NULL);

  assert_load (rec, s4, 0, NULL);
  assert_load (rec, vm8, VGICD_ERROR_SHAPE_MISMATCH, "the record is for 4 vCPUs but this VM has 8");
  assert_load (rec, vm_irqs, VGICD_ERROR_SHAPE_MISMATCH, "288 IRQs but this VM has 320");
  assert_load (rec, vm_mpidr, VGICD_ERROR_SHAPE_MISMATCH, "vCPU 3 has affinity 0x00000003");
}

/* ------------------------------------------------------------------ */
/* The encoder's fast path                                            */
/* ------------------------------------------------------------------ */

/* vgic_record_encode_run() trusts that the reads are in plan order, and
 * then must give the very bytes of vgic_record_encode(). */
static void
test_encode_run_same_bytes (void)
{
  static const guint vcpus[] = { 1, 3, 64, 160 };
  static const guint irqs[] = { 64, 288, 992 };
  static const guint pri_bits[] = { 5, 6, 7 };

  for (guint v = 0; v < G_N_ELEMENTS (vcpus); v++)
    for (guint q = 0; q < G_N_ELEMENTS (irqs); q++)
      for (guint b = 0; b < G_N_ELEMENTS (pri_bits); b++)
        for (int plpis = 0; plpis <= 1; plpis++)
          {
            g_autoptr (VgicShape) shape = vgic_shape_new (irqs[q], vcpus[v], NULL, NULL);
            g_autoptr (VgicList) reads = make_save (shape, plpis, pri_bits[b], v + 10 * q);
            g_autoptr (GBytes) slow = encode_save (shape, reads);
            g_autoptr (GError) error = NULL;
            g_autoptr (GBytes) fast = vgic_record_encode_run (shape, reads->entries,
                                                              reads->len, &error);

            g_assert_no_error (error);
            g_assert_true (g_bytes_equal (slow, fast));
          }
}

static void
test_encode_run_refuses (void)
{
  g_autoptr (VgicShape) shape = vgic_shape_new (288, 2, NULL, NULL);
  g_autoptr (VgicList) reads = make_save (shape, TRUE, 5, 9);
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) bytes = NULL;
  guint first = G_MAXUINT, again = G_MAXUINT;

  /* A repeated IROUTER word read with another value: the VM was running. */
  for (guint i = 0; i < reads->len && again == G_MAXUINT; i++)
    for (guint j = 0; j < i && again == G_MAXUINT; j++)
      if (reads->entries[i].group == GRP_DIST && reads->entries[j].group == GRP_DIST &&
          reads->entries[i].attr == reads->entries[j].attr)
        first = j, again = i;
  g_assert_cmpuint (again, !=, G_MAXUINT);
  reads->entries[again].value = reads->entries[first].value ^ 1;
  bytes = vgic_record_encode_run (shape, reads->entries, reads->len, &error);
  g_assert_null (bytes);
  g_assert_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET);
  g_assert_nonnull (strstr (error->message, "read twice with different values"));
  g_assert_nonnull (strstr (error->message, "cannot encode the state record: "));
  g_clear_error (&error);
  reads->entries[again].value = reads->entries[first].value;

  /* High bits in a 32-bit register. */
  reads->entries[1].value |= 1ull << 33;
  bytes = vgic_record_encode_run (shape, reads->entries, reads->len, &error);
  g_assert_null (bytes);
  g_assert_error (error, VGICD_ERROR, VGICD_ERROR_REGISTER_SET);
  g_assert_nonnull (strstr (error->message, "is a 32-bit register"));
  g_clear_error (&error);
  reads->entries[1].value &= G_MAXUINT32;

  /* An impossible shape. */
  {
    VgicShape bad = *shape;

    bad.nr_irqs = 100;
    bytes = vgic_record_encode_run (&bad, reads->entries, reads->len, &error);
    g_assert_null (bytes);
    g_assert_error (error, VGICD_ERROR, VGICD_ERROR_INVALID_SHAPE);
  }
}

int
main (int argc, char **argv)
{
  static const RoundTrip trips[] = {
    { 64, 1, FALSE, 5, FALSE, ROUTES_NONE },
    { 64, 2, TRUE, 6, FALSE, ROUTES_NONE },
    { 288, 4, TRUE, 7, TRUE, ROUTES_NONE },
    { 992, 16, FALSE, 7, FALSE, ROUTES_NONE },
    { 1024, 40, TRUE, 5, TRUE, ROUTES_NONE },
    { 64, 1, FALSE, 5, FALSE, ROUTES_SET },
    { 288, 4, TRUE, 7, TRUE, ROUTES_SET },
    { 992, 16, TRUE, 5, FALSE, ROUTES_SET },
    { 1024, 40, TRUE, 5, TRUE, ROUTES_SET },
    { 992, 16, TRUE, 5, FALSE, ROUTES_ZERO },
  };
  static const char *const routes_name[] = { "", "-routes", "-zero-routes" };

  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/record/crc32c", test_crc32c);
  for (guint i = 0; i < G_N_ELEMENTS (trips); i++)
    {
      g_autofree char *name = g_strdup_printf ("/record/round-trip/%uirqs-%uvcpus-%s-pri%u%s%s",
                                               trips[i].nr_irqs, trips[i].nr_vcpus,
                                               trips[i].plpis ? "lpis" : "nolpis",
                                               trips[i].pri_bits,
                                               trips[i].sparse_mpidrs ? "-sparse" : "",
                                               routes_name[trips[i].routes]);
      g_test_add_data_func (name, &trips[i], test_round_trip);
    }
  g_test_add_func ("/record/large-160vcpus", test_large_timing);
  g_test_add_func ("/record/encode/refuses-non-save", test_encode_refuses);
  g_test_add_func ("/record/encode-run/same-bytes", test_encode_run_same_bytes);
  g_test_add_func ("/record/encode-run/refuses", test_encode_run_refuses);
  g_test_add_func ("/record/decode/wrong-magic", test_wrong_magic);
  g_test_add_func ("/record/decode/future-version", test_future_version);
  g_test_add_func ("/record/decode/version-zero", test_version_zero);
  g_test_add_func ("/record/decode/header-length", test_header_len);
  g_test_add_func ("/record/decode/unknown-flags", test_unknown_flags);
  g_test_add_func ("/record/decode/reserved", test_reserved);
  g_test_add_func ("/record/decode/truncated", test_truncated);
  g_test_add_func ("/record/decode/trailing", test_trailing);
  g_test_add_func ("/record/decode/too-many-vcpus", test_too_many_vcpus);
  g_test_add_func ("/record/decode/nr-irqs-range", test_nr_irqs_range);
  g_test_add_func ("/record/decode/too-many-entries", test_too_many_entries);
  g_test_add_func ("/record/decode/huge-count-short-buffer", test_huge_count_short_buffer);
  g_test_add_func ("/record/decode/bad-checksum", test_bad_checksum);
  g_test_add_func ("/record/decode/every-flip", test_every_flip);
  g_test_add_func ("/record/decode/impossible-shape", test_impossible_shape);
  g_test_add_func ("/record/decode/missing-register", test_missing_register);
  g_test_add_func ("/record/decode/duplicate-register", test_duplicate_register);
  g_test_add_func ("/record/decode/unexpected-register", test_unexpected_register);
  g_test_add_func ("/record/decode/high-bits", test_high_bits);
  g_test_add_func ("/record/decode/unknown-group", test_unknown_group);
  g_test_add_func ("/record/decode/out-of-order", test_out_of_order);
  g_test_add_func ("/record/v2/all-routes-zero", test_routes_all_zero);
  g_test_add_func ("/record/v2/one-route-set", test_routes_one_set);
  g_test_add_func ("/record/v2/routes-in-version-1", test_routes_in_version_1);
  g_test_add_func ("/record/v2/route-missing", test_routes_missing);
  g_test_add_func ("/record/v2/route-out-of-place", test_routes_out_of_place);
  g_test_add_func ("/record/v2/too-many-entries", test_routes_too_many_entries);
  g_test_add_func ("/record/load/shape-mismatch", test_load);
  return g_test_run ();
}
