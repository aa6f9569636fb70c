/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* vgicd-window.c - the shared window (see vgicd-window.h). */
#define _GNU_SOURCE /* memfd_create, F_ADD_SEALS */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vgic-prefault.h"
#include "vgic-shape.h"
#include "vgicd-window.h"

VgicdWindow *
vgicd_window_new (guint32 capacity, GError **error)
{
  g_autoptr (VgicdWindow) w = g_new0 (VgicdWindow, 1);

  w->fd = -1;
  w->capacity = capacity;
  w->size = (gsize) capacity * sizeof (struct kvm_vgic_batch_entry);
  w->fd = memfd_create ("vgicd-window", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (w->fd < 0 || ftruncate (w->fd, (off_t) w->size) < 0 ||
      fcntl (w->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
    {
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED,
                   "cannot create the shared window (%" G_GSIZE_FORMAT " bytes): %s",
                   w->size, g_strerror (errno));
      return NULL;
    }
  w->entries = mmap (NULL, w->size, PROT_READ | PROT_WRITE, MAP_SHARED, w->fd, 0);
  if (w->entries == MAP_FAILED)
    {
      w->entries = NULL;
      g_set_error (error, VGICD_ERROR, VGICD_ERROR_FAILED,
                   "cannot map the shared window: %s", g_strerror (errno));
      return NULL;
    }
  /* Populated now, for writing: vgicd writes its plans here, and a first
   * touch inside a save or a restore would be page faults inside the
   * downtime (vgic-prefault.c). */
  vgic_prefault_write (w->entries, w->size);
  return g_steal_pointer (&w);
}

void
vgicd_window_free (VgicdWindow *w)
{
  if (!w)
    return;
  if (w->entries)
    munmap (w->entries, w->size);
  if (w->fd >= 0)
    close (w->fd);
  g_free (w);
}
