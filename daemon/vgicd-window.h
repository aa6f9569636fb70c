/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-window.h - the shared window: a sealed memfd through which vgicd
 * hands access lists to libvgicd and gets the results back.
 */
#pragma once

#include <glib.h>

#include "vgicd/kvm-vgic-batch.h"

typedef struct {
  int fd;
  struct kvm_vgic_batch_entry *entries;	/* the shared mapping */
  guint32 capacity;			/* entries */
  gsize size;				/* bytes */
} VgicdWindow;

/**
 * vgicd_window_new() - create a window for @capacity entries
 *
 * The memfd is sealed against shrinking and growing (and further sealing),
 * so that neither side can truncate it under the other and turn an access
 * into SIGBUS.  Both sides write to it, so it is not write-sealed: each side
 * copies what it reads out of it before trusting it.
 */
VgicdWindow *vgicd_window_new (guint32 capacity, GError **error);
void vgicd_window_free (VgicdWindow *window);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (VgicdWindow, vgicd_window_free)
