/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuzz-record.c - libFuzzer target for the state record decoder.
 *
 * The decoder is vgicd's boundary with bytes from another host, so it must
 * never crash, read out of bounds, allocate without bound, or accept a
 * record it would not itself write.  For each input:
 *
 *  - decode it as it is;
 *  - decode it again with the trailing CRC-32C recomputed, because a fuzzer
 *    almost never guesses a checksum, and everything after the checksum
 *    check (shape, register set, order) is the interesting part;
 *  - whenever a decode succeeds, encode the record's values again: the
 *    bytes must be identical (the format is canonical), otherwise abort.
 *
 * Built with -fsanitize=fuzzer only when -Dfuzzing=true; the same file is
 * linked with replay.c into a plain test that runs the seed corpus.
 */
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "vgic-record.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static void
check_round_trip (const guint8 *data, gsize len)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (VgicRecord) record = vgic_record_decode (data, len, &error);
  g_autofree struct kvm_vgic_batch_entry *entries = NULL;
  g_autoptr (GBytes) again = NULL;
  gsize n;

  if (!record)
    {
      /* Every rejection must say something. */
      if (!error || !error->message || !*error->message)
        abort ();
      return;
    }
  n = vgic_values_size (record->values);
  entries = g_new (struct kvm_vgic_batch_entry, MAX (n, 1));
  for (gsize i = 0; i < n; i++)
    entries[i] = *vgic_values_index (record->values, i);
  again = vgic_record_encode (record->shape, entries, n, &error);
  if (!again || g_bytes_get_size (again) != len ||
      memcmp (g_bytes_get_data (again, NULL), data, len) != 0)
    abort ();
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  g_autofree guint8 *fixed = NULL;
  guint32 crc;

  check_round_trip (data, size);
  if (size < 4)
    return 0;
  crc = crc32c (0, data, size - 4);
  fixed = g_memdup2 (data, size);
  for (int i = 0; i < 4; i++)
    fixed[size - 4 + i] = (guint8) (crc >> (8 * i));
  if (memcmp (fixed + size - 4, data + size - 4, 4) != 0)
    check_round_trip (fixed, size);
  return 0;
}
