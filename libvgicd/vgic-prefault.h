/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgic-prefault.h - memory that a save or a restore will write, made
 * writable in this process's page tables at setup (vgic-prefault.c).
 */
#pragma once

#include <glib.h>

void vgic_prefault_write (void *addr, gsize size);
