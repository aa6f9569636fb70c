/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gen-corpus.c - write the fuzzer's seed corpus: a few small valid records,
 * and one malformed record per rejection the decoder makes, so that the
 * fuzzer starts from inputs that reach each branch.
 *
 * Usage: gen-corpus DIR.  The output is deterministic and committed in
 * tests/fuzz/corpus/; rerun this after a format change (docs/state-record.md).
 */
#include <stdio.h>
#include <string.h>

#include "crc32c.h"
#include "fake-save.h"
#include "vgic-plan.h"
#include "vgic-record.h"
#include "vgic-regs.h"

/* v1 layout (docs/state-record.md): what the mutations below need. */
#define HDR 32
#define ENTRY 20

typedef VgicEntry Entry;

/* A valid record; @routes: version 2, with the routes QEMU misses, each
 * set (as vgicd saves a VM that routed its high SPIs), else version 1. */
static GByteArray *
valid_as (guint nr_irqs, guint nr_vcpus, const uint32_t *mpidrs, gboolean plpis,
          guint pri_bits, gboolean routes)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicShape) shape = vgic_shape_new (nr_irqs, nr_vcpus, mpidrs, &error);
  g_autoptr (VgicList) reads = NULL;
  g_autoptr (GBytes) bytes = NULL;
  gsize len;
  const guint8 *p;

  g_assert_no_error (error);
  if (routes)
    reads = fake_save_routes (shape, plpis, pri_bits, nr_vcpus * 131 + nr_irqs, FALSE);
  else
    reads = fake_save (shape, plpis, pri_bits, nr_vcpus * 131 + nr_irqs, NULL);
  bytes = vgic_record_encode (shape, reads->entries, reads->len, &error);
  g_assert_no_error (error);
  p = g_bytes_get_data (bytes, &len);
  return g_byte_array_append (g_byte_array_new (), p, (guint) len);
}

static GByteArray *
valid (guint nr_irqs, guint nr_vcpus, const uint32_t *mpidrs, gboolean plpis,
       guint pri_bits)
{
  return valid_as (nr_irqs, nr_vcpus, mpidrs, plpis, pri_bits, FALSE);
}

static void
put32 (guint8 *p, guint32 v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (guint8) (v >> (8 * i));
}

static guint32
get32 (const guint8 *p)
{
  return p[0] | p[1] << 8 | p[2] << 16 | (guint32) p[3] << 24;
}

static void
fix_crc (GByteArray *b)
{
  put32 (b->data + b->len - 4, crc32c (0, b->data, b->len - 4));
}

/* Offset of entry @i in a record. */
static guint
entry_at (const GByteArray *b, guint i)
{
  return HDR + 4 * get32 (b->data + 20) + ENTRY * i;
}

static void
save (const char *dir, const char *name, GByteArray *b)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = g_build_filename (dir, name, NULL);

  if (!g_file_set_contents (path, (const char *) b->data, b->len, &error))
    g_error ("%s", error->message);
  g_byte_array_unref (b);
}

static GByteArray *
copy (const GByteArray *b)
{
  return g_byte_array_append (g_byte_array_new (), b->data, b->len);
}

int
main (int argc, char **argv)
{
  static const uint32_t sparse[2] = { 0x00000100, 0x01020003 };
  const char *dir;
  GByteArray *base, *b;

  if (argc != 2)
    {
      fprintf (stderr, "usage: %s DIR\n", argv[0]);
      return 2;
    }
  dir = argv[1];
  g_mkdir_with_parents (dir, 0755);

  save (dir, "valid-1cpu-64irq", valid (64, 1, NULL, FALSE, 5));
  save (dir, "valid-1cpu-64irq-lpis-apr4", valid (64, 1, NULL, TRUE, 7));
  save (dir, "valid-2cpu-64irq-lpis-apr2", valid (64, 2, NULL, TRUE, 6));
  save (dir, "valid-2cpu-96irq-sparse-mpidr", valid (96, 2, sparse, FALSE, 5));

  save (dir, "valid-v2-2cpu-64irq-routes", valid_as (64, 2, NULL, TRUE, 6, TRUE));
  save (dir, "valid-v2-1cpu-96irq-routes", valid_as (96, 1, NULL, FALSE, 5, TRUE));

  /* Version 2's own refusals: every route 0 (a writer stores version 1),
   * and a version 1 header over the routes. */
  base = valid_as (64, 2, NULL, TRUE, 6, TRUE);
  b = copy (base);
  for (guint i = 0; i < get32 (b->data + 24); i++)
    {
      guint8 *e = b->data + entry_at (b, i);
      guint32 low = get32 (e + 4);

      if (get32 (e) == KVM_DEV_ARM_VGIC_GRP_DIST_REGS && low >= GICD_IROUTER + 8 * 33 &&
          low < GICD_IROUTER + 8 * 64 && low % 8 == 0)
        memset (e + 12, 0, 8);
    }
  fix_crc (b);
  save (dir, "bad-v2-routes-zero", b);
  b = copy (base), b->data[8] = 1, fix_crc (b);
  save (dir, "bad-v1-with-routes", b);
  g_byte_array_unref (base);

  base = valid (64, 2, NULL, TRUE, 6);

  b = copy (base), b->data[0] = 'X';
  save (dir, "bad-magic", b);
  b = copy (base), b->data[8] = VGIC_RECORD_VERSION + 1, fix_crc (b);
  save (dir, "bad-future-version", b);
  b = copy (base), b->data[12] = 1, fix_crc (b);
  save (dir, "bad-unknown-flags", b);
  b = copy (base), g_byte_array_set_size (b, b->len / 2);
  save (dir, "bad-truncated", b);
  b = copy (base), g_byte_array_append (b, (const guint8 *) "\0\0\0\0", 4);
  save (dir, "bad-trailing", b);
  b = copy (base), b->data[b->len - 1] ^= 0x80;
  save (dir, "bad-checksum", b);
  b = copy (base), put32 (b->data + HDR + 4, get32 (b->data + HDR)), fix_crc (b);
  save (dir, "bad-duplicate-mpidr", b);
  b = copy (base), put32 (b->data + 16, 80), fix_crc (b);
  save (dir, "bad-nr-irqs-unaligned", b);
  b = copy (base);
  g_byte_array_remove_range (b, entry_at (b, 3), ENTRY);
  put32 (b->data + 24, get32 (b->data + 24) - 1);
  fix_crc (b);
  save (dir, "bad-missing-register", b);
  b = copy (base), put32 (b->data + entry_at (b, 5), 4), fix_crc (b);
  save (dir, "bad-unknown-group", b);
  b = copy (base), b->data[entry_at (b, 3) + 16] = 1, fix_crc (b);
  save (dir, "bad-high-bits", b);
  {
    guint8 tmp[ENTRY];

    b = copy (base);
    memcpy (tmp, b->data + entry_at (b, 3), ENTRY);
    memmove (b->data + entry_at (b, 3), b->data + entry_at (b, 4), ENTRY);
    memcpy (b->data + entry_at (b, 4), tmp, ENTRY);
    fix_crc (b);
    save (dir, "bad-out-of-order", b);
  }
  /* Huge counts in a header-only buffer. */
  b = copy (base), g_byte_array_set_size (b, HDR + 4);
  put32 (b->data + 20, 4096), put32 (b->data + 24, 0xffffffffu), fix_crc (b);
  save (dir, "bad-huge-counts", b);
  g_byte_array_unref (base);
  return 0;
}
