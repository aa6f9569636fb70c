/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gen-session-corpus.c - write the seed programs of fuzz-session.c into a
 * folder: one per path a peer can take through a session (an honest save
 * and load by D-Bus and by the step channel, QEMU's fields, each way a
 * report can be wrong, a record mutated past its checksum, re-attaching
 * mid-operation, the host's mode, raw Attach arguments and raw packets).
 * libFuzzer starts from these; the replay test runs them in every build.
 *
 *   gen-session-corpus DIR    (after a change to the program's format)
 */
#include <gio/gio.h>
#include <stdio.h>

#include "vgicd/protocol.h"

/* Program bytes, as fuzz-session.c reads them. */
enum {
  F_CHANNEL = 1, F_GUARDS = 2, F_RECORD_WINDOW = 4, F_SINGLE = 8, F_OFF = 16,
  F_BATCH = 32, F_RECORD = 64, F_RAW_ATTACH = 128,
};
enum {
  OP_SAVE, OP_SAVE_FIELDS, OP_LOAD, OP_LOAD_WINDOW, OP_LOAD_LIST, OP_NEXT, OP_NEXT_RAW,
  OP_PACKET, OP_CHANNEL, OP_SCRIBBLE, OP_REATTACH, OP_BYSTANDER, OP_MODE,
};
/* OP_CHANNEL's methods */
enum { CH_SAVE, CH_SAVE_FIELDS, CH_NEXT, CH_LOAD_WINDOW, CH_LOAD_LIST = 7 };

static void
add (GByteArray *a, guint8 b)
{
  g_byte_array_append (a, &b, 1);
}

static void
add16 (GByteArray *a, guint16 v)
{
  add (a, v & 0xff);
  add (a, v >> 8);
}

/* 4 vCPUs, 96 IRQs, seed 7, PRIbits 5, PLPIS */
static GByteArray *
program (guint8 flags)
{
  GByteArray *a = g_byte_array_new ();

  add (a, flags);
  add (a, 3);
  add (a, 1);
  add (a, 7);
  add (a, 0);
  add (a, 1);
  return a;
}

/* Honest Next, @n times (a save takes two, three with a second round). */
static void
next (GByteArray *a, guint n, guint8 how, guint8 arg)
{
  for (guint i = 0; i < n; i++)
    {
      add (a, OP_NEXT);
      add (a, how);
      add (a, arg);
    }
}

static void
channel_next (GByteArray *a, guint n)
{
  for (guint i = 0; i < n; i++)
    {
      add (a, OP_CHANNEL);
      add (a, CH_NEXT);
      add (a, 0);
      add (a, 0);
    }
}

static void
write_seed (const char *dir, const char *name, GByteArray *a)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = g_build_filename (dir, name, NULL);

  if (!g_file_set_contents (path, (const char *) a->data, a->len, &error))
    g_error ("%s", error->message);
  g_byte_array_unref (a);
}

int
main (int argc, char **argv)
{
  const char *dir;
  GByteArray *a;

  if (argc != 2)
    {
      fprintf (stderr, "usage: %s DIR\n", argv[0]);
      return 2;
    }
  dir = argv[1];
  g_mkdir_with_parents (dir, 0755);

  /* A save and a load of its record, by D-Bus, with guards. */
  a = program (F_BATCH | F_GUARDS);
  add (a, OP_SAVE);
  next (a, 3, 0, 0);
  add (a, OP_LOAD);
  add (a, 0);		/* the record as it is */
  next (a, 3, 0, 0);
  write_seed (dir, "seed-save-load-dbus", a);

  /* The same through the step channel, the record in the window. */
  a = program (F_BATCH | F_GUARDS | F_CHANNEL | F_RECORD_WINDOW);
  add (a, OP_CHANNEL);
  add (a, CH_SAVE);
  channel_next (a, 3);
  add (a, OP_CHANNEL);
  add (a, CH_LOAD_WINDOW);
  add (a, 0);
  channel_next (a, 3);
  write_seed (dir, "seed-save-load-channel", a);

  /* LoadWindow by D-Bus; a peer without guards (the TYPER reads first). */
  a = program (F_BATCH | F_RECORD_WINDOW);
  add (a, OP_SAVE);
  next (a, 3, 0, 0);
  add (a, OP_LOAD_WINDOW);
  add (a, 0);
  add (a, 0);		/* the record's own size */
  next (a, 3, 0, 0);
  write_seed (dir, "seed-load-window-unguarded", a);

  /* QEMU's fields: SaveFields, then LoadList of QEMU's own restore. */
  a = program (F_BATCH | F_GUARDS);
  add (a, OP_SAVE);
  next (a, 3, 0, 0);
  add (a, OP_SAVE_FIELDS);
  next (a, 3, 0, 0);
  add (a, OP_LOAD_LIST);
  add (a, 0);		/* honest */
  add (a, 0);		/* unchanged */
  next (a, 3, 0, 0);
  write_seed (dir, "seed-fields", a);

  /* Each way a report can be wrong, once in a save and once in a load. */
  for (guint how = 1; how < 8; how++)
    {
      g_autofree char *name = g_strdup_printf ("seed-bad-report-%u", how);

      a = program (F_BATCH | F_GUARDS);
      add (a, OP_SAVE);
      next (a, 1, (guint8) how, 5);
      add (a, OP_SAVE);
      next (a, 3, 0, 0);
      add (a, OP_LOAD);
      add (a, 0);
      next (a, 1, (guint8) how, 3);
      write_seed (dir, name, a);
    }

  /* A record mutated past its checksum (one byte, CRC recomputed). */
  a = program (F_BATCH | F_GUARDS);
  add (a, OP_SAVE);
  next (a, 3, 0, 0);
  add (a, OP_LOAD);
  add (a, 14);		/* mutate (14 % 3 == 2), fix the CRC (14 & 8) */
  add (a, 0);		/* one flip */
  add16 (a, 40);
  add (a, 0x10);
  next (a, 3, 0, 0);
  write_seed (dir, "seed-mutated-record", a);

  /* QEMU's list with one value changed. */
  a = program (F_BATCH | F_GUARDS);
  add (a, OP_SAVE);
  next (a, 3, 0, 0);
  add (a, OP_LOAD_LIST);
  add (a, 0);
  add (a, 1);
  add16 (a, 9);
  add (a, 0xff);
  next (a, 3, 0, 0);
  write_seed (dir, "seed-list-changed", a);

  /* Re-attach in the middle of a save; bystanders; the host's mode. */
  a = program (F_BATCH | F_GUARDS | F_CHANNEL | F_RECORD_WINDOW);
  add (a, OP_BYSTANDER);
  add (a, OP_BYSTANDER);
  add (a, OP_SAVE);
  next (a, 1, 0, 0);
  add (a, OP_REATTACH);
  add (a, OP_SAVE);
  next (a, 3, 0, 0);
  add (a, OP_MODE);
  add (a, 2);
  add (a, OP_SAVE);
  add (a, OP_MODE);
  add (a, 1);
  add (a, OP_SAVE);
  next (a, 3, 0, 0);
  write_seed (dir, "seed-reattach-mode", a);

  /* Next with no operation, Save twice, the window scribbled mid-step. */
  a = program (F_BATCH | F_SINGLE);
  next (a, 1, 0, 0);
  add (a, OP_SAVE);
  add (a, OP_SAVE);
  add (a, OP_SCRIBBLE);
  add16 (a, 8);
  add (a, 8);
  for (int i = 0; i < 8; i++)
    add (a, 0xee);
  next (a, 3, 0, 0);
  write_seed (dir, "seed-out-of-order", a);

  /* A report of the wrong types, by D-Bus. */
  {
    GVariantBuilder b;
    g_autoptr (GVariant) v = NULL;

    g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
    g_variant_builder_add (&b, "{sv}", VGICD_REPORT_DONE, g_variant_new_string ("12"));
    g_variant_builder_add (&b, "{sv}", VGICD_REPORT_ERROR, g_variant_new_uint32 (1));
    v = g_variant_ref_sink (g_variant_builder_end (&b));
    a = program (F_BATCH);
    add (a, OP_SAVE);
    add (a, OP_NEXT_RAW);
    add16 (a, (guint16) g_variant_get_size (v));
    g_byte_array_append (a, g_variant_get_data (v), g_variant_get_size (v));
    write_seed (dir, "seed-raw-report", a);
  }

  /* Raw packets on the channel: an unknown method, then a short one. */
  {
    VgicdChannelHeader h = { .method = 9 };

    a = program (F_BATCH | F_CHANNEL | F_RECORD_WINDOW);
    add (a, OP_PACKET);
    add16 (a, sizeof h);
    g_byte_array_append (a, (const guint8 *) &h, sizeof h);
    write_seed (dir, "seed-packet-unknown", a);
    a = program (F_BATCH | F_CHANNEL | F_RECORD_WINDOW);
    add (a, OP_PACKET);
    add16 (a, 3);
    add (a, 1);
    add (a, 0);
    add (a, 0);
    write_seed (dir, "seed-packet-short", a);
  }

  /* Attach's a{sv} as bytes: a valid one with a UUID and a 2-vCPU VM. */
  {
    GVariantBuilder b;
    g_autoptr (GVariant) v = NULL;
    const guint32 mpidrs[] = { 0, 1 };
    const char *features[] = { VGICD_FEATURE_GUARDS, NULL };

    g_variant_builder_init (&b, G_VARIANT_TYPE_VARDICT);
    g_variant_builder_add (&b, "{sv}", VGICD_VM_NAME, g_variant_new_string ("raw"));
    g_variant_builder_add (&b, "{sv}", VGICD_VM_UUID,
                           g_variant_new_string ("4d7f0c2e-0000-4000-8000-00000000b9aa"));
    g_variant_builder_add (&b, "{sv}", VGICD_VM_NR_IRQS, g_variant_new_uint32 (64));
    g_variant_builder_add (&b, "{sv}", VGICD_VM_MPIDRS,
                           g_variant_new_fixed_array (G_VARIANT_TYPE_UINT32, mpidrs, 2,
                                                      sizeof (guint32)));
    g_variant_builder_add (&b, "{sv}", VGICD_VM_KERNEL_BATCH, g_variant_new_boolean (TRUE));
    g_variant_builder_add (&b, "{sv}", VGICD_VM_KERNEL_BATCH_ABI,
                           g_variant_new_string (VGICD_BATCH_ABI_FOREIGN));
    g_variant_builder_add (&b, "{sv}", VGICD_VM_FEATURES, g_variant_new_strv (features, -1));
    v = g_variant_ref_sink (g_variant_builder_end (&b));
    a = g_byte_array_new ();
    add (a, F_RAW_ATTACH);
    add16 (a, (guint16) g_variant_get_size (v));
    g_byte_array_append (a, g_variant_get_data (v), g_variant_get_size (v));
    add (a, 7);		/* seed */
    add (a, 0);		/* PRIbits 5 */
    add (a, 1);		/* PLPIS */
    add (a, OP_SAVE);
    next (a, 3, 0, 0);
    add (a, OP_LOAD);
    add (a, 0);
    next (a, 3, 0, 0);
    write_seed (dir, "seed-raw-attach", a);
  }
  return 0;
}
