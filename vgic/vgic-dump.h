/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-dump.h - the decoder for humans behind `vgicctl dump`: a state record
 * (docs/state-record.md) rendered as a readable text table of every IRQ and
 * every vCPU, with the interesting register fields spelled out.
 *
 * The text is for people, not for scripts: its layout may change between
 * vgicd versions.  Anything a script needs belongs in the D-Bus API.
 */
#pragma once

#include <glib.h>

#include "vgic-record.h"

typedef enum {
  VGIC_DUMP_NONE = 0,
  /* Print one row per SPI, even for SPIs in the quiet state (disabled, not
   * pending or active, group 0, priority 0, level-sensitive, line low, route
   * 0 or not carried).  Without it those are only counted, with their IRQ
   * numbers as ranges, so that the SPIs that matter stand out. */
  VGIC_DUMP_ALL_IRQS = 1 << 0,
  /* The values are QEMU's own fields (vgic-qemu-fields.h), not a record's:
   * the notes say so. */
  VGIC_DUMP_QEMU_FIELDS = 1 << 1,
} VgicDumpFlags;

/**
 * vgic_dump_record() - render a state record as text
 * @record: a record, normally from vgic_record_decode()
 * @flags: VGIC_DUMP_* flags
 *
 * Prints a header (format version, IRQ count, vCPU affinities, LPIs, the
 * decoded GICD_CTLR, GICD_TYPER, GICD_STATUSR), a table of the SPIs, and for
 * each vCPU its redistributor registers, a table of its SGIs and PPIs, and
 * its CPU interface registers.  Values are looked up by (group, attr) in
 * @record->values; a register the record lacks is shown as "?" rather than
 * refused, so a partial record can still be inspected.
 *
 * Return: the text, newly allocated (g_free()); every line ends in '\n'.
 */
char *vgic_dump_record (const VgicRecord *record, VgicDumpFlags flags);

/**
 * vgic_dump_state() - vgic_dump_record() of any register values: those of
 * a record, or QEMU's own fields (vgic-qemu-fields.h)
 * @shape: the VM
 * @values: its registers, as a record keys them
 * @routes: @values hold every SPI's route (a version 2 record), not only
 *	those QEMU 10.0's accesses reach
 * @title: the first line, without its newline
 * @flags: VGIC_DUMP_* flags
 *
 * Return: the text, newly allocated (g_free()).
 */
char *vgic_dump_state (const VgicShape *shape, const VgicValues *values, gboolean routes,
                       const char *title, VgicDumpFlags flags);
