/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-prefault.c - memory a save or a restore will write (the shared
 * window, libvgicd's private copy of it) made writable in this process's
 * page tables when it is set up, not at a save's or a restore's first
 * write.
 *
 * MAP_POPULATE fills a shared mapping's page tables as a read would (the
 * kernel does not dirty shared pages "for nothing": populate_vma_page_range()
 * in mm/gup.c), so the first write to each page is still a fault.
 * MADV_POPULATE_WRITE (Linux 5.14) maps them writable.  Under a hypervisor
 * that builds its own page tables from the guest's on first access (shadow
 * paging, as this project's CI machines run under), a page's first access
 * through this mapping is still an exit to the hypervisor, which only an
 * access pays: so each page's first byte is then written back with its own
 * value, which also does the whole job on a kernel that refuses the madvise.
 * Measured in such a guest (a window of 160 vCPUs, 47 pages): libvgicd's
 * first filling of a fresh window with QEMU's writes took 300 µs after
 * MAP_POPULATE, and after MADV_POPULATE_WRITE alone; 12 µs once every page
 * was written at attach, as the same filling again takes (7 to 12 µs).
 * vgicd's side reads and writes its plans through its own mapping and pays
 * the same at a session's first operation.  Both are inside a migration's
 * downtime, and the first save or restore of a session is the one a
 * migration runs.
 *
 * Run only before the other side has anything in flight in the window (at
 * its creation, and at attach): a byte written back while the other side
 * writes it could undo that write.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <unistd.h>

#include "vgic-prefault.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

void
vgic_prefault_write (void *addr, gsize size)
{
  long page = sysconf (_SC_PAGESIZE);

  if (size == 0)
    return;
  (void) madvise (addr, size, MADV_POPULATE_WRITE);
  for (gsize i = 0; i < size; i += (gsize) page)
    {
      volatile guint8 *p = (guint8 *) addr + i;

      *p = *p;
    }
}
