/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-regs.c - what a save into QEMU's fields read (VgicdRegs), for
 * QEMU's get to take its values from, and the storage it lives in.
 *
 * QEMU's get looks each register up once (each overlapping IROUTER word
 * twice, back to back), inside the migration's downtime: about 7,000
 * lookups at 160 vCPUs, 18,000 at 512.  Its order is vgicd's read order
 * but for the LPI bases and the APRs, which vgicd reads last and QEMU per
 * vCPU.  So a VgicdRegs is the reads as libvgicd collected them, with a
 * cursor: a lookup that finds its register at the cursor takes that read
 * and moves the cursor on, one compare.  The first lookup the cursor does
 * not answer builds an index of the reads' positions (open addressing, at
 * most half full), which answers it and every later miss and puts the
 * cursor after the read it found, so that the lookups after it hit again.
 * A hash table of the reads, with a key and a value allocated for each,
 * cost QEMU 9.3 M instructions a save at 160 vCPUs (24 M at 512); this
 * costs 1.5 M (3.5 M), the index built at the first LPI base included.
 *
 * A register read twice keeps its last value, as that table (replacing on
 * insert) did.  In one step vgicd reads a register twice only back to
 * back (QEMU's overlapping IROUTER words), and the cursor answers with the
 * later of such reads.  A register is read again apart only by a second
 * step (round 2, after a wrong guess): the reads of more than one step are
 * looked up in the index alone, whose position for a register is its last
 * read.
 *
 * The storage, the reads and the index, is the client's, made when it
 * attaches and touched then: a first touch inside a save would be page
 * faults inside the downtime (188 of them for a save at 512 vCPUs, 10 to
 * 15 µs each in a VM), as map_window() says of the window and the work
 * buffer.  It is lent to each save's VgicdRegs, by reference; a save that
 * finds the last one still alive (QEMU keeps it, or frees it later) takes
 * fresh memory instead, and a VgicdRegs may outlive its client.
 *
 * The registers are vgicd's to choose.  With a fixed hash, a vgicd that
 * meant harm could choose them all in one probe sequence and make each of
 * QEMU's lookups walk the table; so the hash is multiply-shift by an odd
 * multiplier drawn for each client.
 */
#include <string.h>

#include "vgicd-client-private.h"

typedef struct kvm_vgic_batch_entry Entry;

struct _VgicdRegsStore {
  gint refs;		/* the client's, and a VgicdRegs's while one holds it */
  GArray *reads;	/* Entry: a save's reads */
  guint32 *slots;	/* the index: a position in @reads + 1, 0 = empty */
  guint bits;		/* log2 of how many @slots there are (0: none yet) */
  guint64 mult;		/* the hash's multiplier, odd */
};

struct _VgicdRegs {
  VgicdRegsStore *store;
  const Entry *e;	/* store->reads */
  guint n;
  gboolean apart;	/* a register may be read again apart: no cursor */
  guint cursor;		/* the read the next lookup most likely wants */
  gboolean indexed;	/* store->slots[0 .. 1 << bits) index @e */
  guint bits;
  guint distinct;	/* how many registers @e holds, once indexed */
};

/* About twice the slots of @n entries, so that a probe sequence stays
 * short. */
static guint
index_bits (guint64 n)
{
  guint bits = 4;

  while ((1ull << bits) < 2 * n)
    bits++;
  return bits;
}

static VgicdRegsStore *
store_new (guint32 entries)
{
  VgicdRegsStore *store = g_new0 (VgicdRegsStore, 1);

  store->refs = 1;
  store->reads = g_array_sized_new (FALSE, FALSE, sizeof (Entry), entries);
  store->mult = ((guint64) g_random_int () << 32 | g_random_int ()) | 1;
  return store;
}

VgicdRegsStore *
vgicd_regs_store_new (guint32 entries)
{
  VgicdRegsStore *store = store_new (entries);
  gsize bytes;

  /* Every page written now (g_new0() of a large block would map zero
   * pages and leave the first touch to the save). */
  g_array_set_size (store->reads, entries);
  memset (store->reads->data, 0, (gsize) entries * sizeof (Entry));
  g_array_set_size (store->reads, 0);
  store->bits = index_bits (entries);
  bytes = sizeof (guint32) << store->bits;
  store->slots = g_malloc (bytes);
  memset (store->slots, 0, bytes);
  return store;
}

void
vgicd_regs_store_unref (VgicdRegsStore *store)
{
  if (!store || !g_atomic_int_dec_and_test (&store->refs))
    return;
  g_array_unref (store->reads);
  g_free (store->slots);
  g_free (store);
}

VgicdRegsStore *
vgicd_regs_store_for_save (VgicdRegsStore *store, guint32 entries)
{
  VgicdRegsStore *fresh;

  if (store && g_atomic_int_get (&store->refs) == 1)
    {
      g_atomic_int_inc (&store->refs);
      g_array_set_size (store->reads, 0);
      return store;
    }
  fresh = store_new (entries);
  if (store)
    fresh->mult = store->mult;
  return fresh;
}

GArray *
vgicd_regs_store_reads (VgicdRegsStore *store)
{
  return store->reads;
}

VgicdRegs *
vgicd_regs_new (VgicdRegsStore *store, guint steps)
{
  VgicdRegs *regs = g_new0 (VgicdRegs, 1);

  regs->store = store;
  regs->e = (const Entry *) (const void *) store->reads->data;
  regs->n = store->reads->len;
  regs->apart = steps > 1;
  return regs;
}

static inline guint
slot_of (const VgicdRegs *regs, guint32 group, guint64 attr)
{
  return (guint) (((attr ^ ((guint64) group << 56)) * regs->store->mult) >> (64 - regs->bits));
}

/* Index every read, the last read of a register winning, in the store's
 * slots (larger ones if the reads outgrew them: a second round's). */
static void
regs_index (VgicdRegs *regs)
{
  VgicdRegsStore *store = regs->store;
  guint mask;

  regs->bits = index_bits (regs->n);
  if (store->bits < regs->bits)
    {
      g_free (store->slots);
      store->slots = g_new0 (guint32, 1u << regs->bits);
      store->bits = regs->bits;
    }
  else
    memset (store->slots, 0, sizeof (guint32) << regs->bits);
  mask = (1u << regs->bits) - 1;
  for (guint i = 0; i < regs->n; i++)
    {
      const Entry *e = &regs->e[i];
      guint s = slot_of (regs, e->group, e->attr);

      while (store->slots[s] && !(regs->e[store->slots[s] - 1].group == e->group &&
                                  regs->e[store->slots[s] - 1].attr == e->attr))
        s = (s + 1) & mask;
      regs->distinct += store->slots[s] == 0;
      store->slots[s] = i + 1;
    }
  regs->indexed = TRUE;
}

gboolean
vgicd_regs_lookup (const VgicdRegs *regs, uint32_t group, uint64_t attr, uint64_t *value)
{
  /* The cursor and the index make a lookup faster, and change no answer. */
  VgicdRegs *r = (VgicdRegs *) regs;
  const Entry *e = r->e;
  const guint32 *slots;
  guint c = r->cursor, mask;

  if (!r->apart && c < r->n && e[c].group == group && e[c].attr == attr)
    {
      guint last = c;

      while (last + 1 < r->n && e[last + 1].group == group && e[last + 1].attr == attr)
        last++;
      *value = e[last].value;
      r->cursor = c + 1;
      return TRUE;
    }
  if (!r->indexed)
    regs_index (r);
  slots = r->store->slots;
  mask = (1u << r->bits) - 1;
  for (guint s = slot_of (r, group, attr); slots[s]; s = (s + 1) & mask)
    if (e[slots[s] - 1].group == group && e[slots[s] - 1].attr == attr)
      {
        *value = e[slots[s] - 1].value;
        r->cursor = slots[s];
        return TRUE;
      }
  return FALSE;
}

guint
vgicd_regs_count (const VgicdRegs *regs)
{
  VgicdRegs *r = (VgicdRegs *) regs;

  /* The index counts them as it goes; QEMU's get, whose order misses the
   * cursor at its first LPI base or APR, has built it already. */
  if (!r->indexed)
    regs_index (r);
  return r->distinct;
}

void
vgicd_regs_free (VgicdRegs *regs)
{
  if (!regs)
    return;
  vgicd_regs_store_unref (regs->store);
  g_free (regs);
}
