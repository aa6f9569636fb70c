/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicctl-stream.h - the GIC's state in a QEMU migration stream, for
 * `vgicctl dump`: a `virsh save` image, or a stream a migration wrote to a
 * file ("exec:cat > FILE", "file:FILE").
 */
#pragma once

#include <glib.h>

#include "vgic-qemu-fields.h"

typedef struct {
  const char *container;	/* "libvirt save image" or "QEMU migration stream" */
  char *machine;		/* the machine type the stream names, or NULL */
  gsize offset;			/* the arm_gicv3 section's first byte in the file */
  guint32 section_id;
  VgicQemuGic *gic;		/* QEMU's own fields */
  const guint8 *record;		/* vgicd's record (arm_gicv3/vgicd), in the data; or NULL */
  gsize record_len;
} VgicctlStream;

void vgicctl_stream_clear (VgicctlStream *s);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (VgicctlStream, vgicctl_stream_clear)

/* vgicctl_stream_detect() - does @data start as a stream or a save image? */
gboolean vgicctl_stream_detect (const guint8 *data, gsize len);

/**
 * vgicctl_stream_read() - find the arm_gicv3 section of the stream in
 * @data and read it into @out
 *
 * Return: FALSE with @error saying why (no such section, a compressed save
 * image, a section of a layout this vgicctl does not know).
 */
gboolean vgicctl_stream_read (const guint8 *data, gsize len, VgicctlStream *out,
                              GError **error);
