/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-record.h - the vGIC state record: the versioned, self-describing blob
 * that carries a VM's vGIC state in QEMU's migration stream.
 *
 * The byte layout, version rules and limits are specified in
 * docs/state-record.md; this file is the only code that knows them.
 */
#pragma once

#include <glib.h>

#include "vgic-list.h"
#include "vgic-shape.h"
#include "vgic-values.h"

/* The newest format version this vgicd writes and understands.  Version 2
 * is version 1 with the routes QEMU's addressing misses
 * (vgic_plan_save_routes()); a writer uses it only when one of those routes
 * is not 0 (docs/state-record.md, "Versions"). */
#define VGIC_RECORD_VERSION 2
#define VGIC_RECORD_VERSION_ROUTES 2

typedef struct {
  guint16 version;	/* format version the record was written in */
  gboolean routes;	/* it carries every SPI's route (version 2) */
  VgicShape *shape;	/* the VM the record was saved from */
  VgicList *entries;	/* every (group, attr, value), in the record's order */
  VgicValues *values;	/* the same, indexed: set once vgic_validate_record()
			 * has accepted the record (NULL before) */
} VgicRecord;

void vgic_record_free (VgicRecord *record);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VgicRecord, vgic_record_free)

/**
 * vgic_record_encode() - serialise a save
 * @shape: the VM that was saved
 * @entries: the accesses of both save rounds, with the values read, in any
 *	order, with or without vgic_plan_save_routes()'s.  An offset read
 *	twice (QEMU's overlapping GICD_IROUTER words) may appear twice with
 *	the same value; it is stored once (the entries are indexed with
 *	vgic_values_from_reads(), not vgic_values_new())
 * @n: number of entries
 * @error: set if the entries are not exactly a save of @shape (a register
 *	missing or unexpected, two reads of one register that disagree, or a
 *	32-bit register with high bits)
 *
 * The record lists each register once, in save-plan order (the order of its
 * first read).  The output is canonical: the same shape and values always
 * give the same bytes, so decoding a record and encoding its values again
 * reproduces it.  Its version is the lowest that holds the state: 2 when
 * the routes were read and one of them is not 0, else 1 (without them),
 * which an older destination can load too.
 *
 * Return: the record, or NULL with @error set.
 */
GBytes *vgic_record_encode (const VgicShape *shape, const VgicEntry *entries, gsize n,
                            GError **error);

/**
 * vgic_record_encode_run() - vgic_record_encode() for reads made exactly as
 *	planned
 * @shape: the VM that was saved
 * @entries: the reads, in plan order: vgic_plan_save_first() of @shape,
 *	optionally vgic_plan_save_routes(), then
 *	vgic_plan_save_second() for the values of the first part, with the
 *	same group and attr as the plan at every index.  The caller vouches
 *	for that (vgicd's session laid the plan out and checked every result
 *	against it); the encoder then skips planning the save again
 * @n: number of entries
 * @error: set if two reads of one register disagree, or for a 32-bit
 *	register with high bits
 *
 * Return: the same bytes as vgic_record_encode(), or NULL with @error set.
 */
GBytes *vgic_record_encode_run (const VgicShape *shape, const VgicEntry *entries, gsize n,
                                GError **error);

/**
 * vgic_record_parse() - read a record's bytes, without judging what they say
 * @data: the bytes
 * @len: their number
 * @error: set, naming what is wrong, for a wrong magic, a version from the
 *	future or unknown flags (VGICD_ERROR_UNSUPPORTED); truncation, trailing
 *	bytes, an absurd count or a failed checksum (VGICD_ERROR_BAD_RECORD)
 *
 * Nothing is allocated in proportion to a count before the count has been
 * checked against the limits and the length.  The record's @values stay
 * NULL: pass it to vgic_validate_record() before using what it holds.
 *
 * Return: the record, or NULL with @error set.
 */
VgicRecord *vgic_record_parse (const guint8 *data, gsize len, GError **error);

/**
 * vgic_record_decode() - parse a record and check it on its own terms
 * (vgic_validate_record() with no VM): for vgicctl dump and the tests
 * @error: as for vgic_record_parse(); an impossible shape
 *	(VGICD_ERROR_INVALID_SHAPE); a register missing, duplicated, unexpected
 *	or a 32-bit one with high bits (VGICD_ERROR_REGISTER_SET); an unknown
 *	group or entries out of plan order (VGICD_ERROR_BAD_RECORD)
 */
VgicRecord *vgic_record_decode (const guint8 *data, gsize len, GError **error);

/**
 * vgic_record_load() - parse a record and check that it fits @vm (vCPU
 * count, every MPIDR in order, nr_irqs) as well, before any plan is made
 * from it; with @vm NULL, vgic_record_decode()
 * @error: as for vgic_record_decode(), or VGICD_ERROR_SHAPE_MISMATCH
 */
VgicRecord *vgic_record_load (const guint8 *data, gsize len, const VgicShape *vm,
                              GError **error);

/**
 * vgic_record_encoded_size() - bytes of a record for @shape with @n entries
 */
gsize vgic_record_encoded_size (const VgicShape *shape, gsize n);
