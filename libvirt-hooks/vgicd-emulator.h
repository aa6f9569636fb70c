/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-emulator.h - can a host's QEMU take vgicd's property?  Asked of the
 * binary itself, and remembered by its path and identity, because the hook
 * runs at every start and incoming migration and QEMU takes tens of
 * milliseconds (seconds under emulation) to answer.
 */
#pragma once

#include <glib.h>

/* Where the answers are kept when the caller names no folder. */
#define VGICD_EMULATOR_CACHE "/run/vgicd/emulators"

/**
 * vgicd_emulator_has_vgicd() - does @emulator's kvm-arm-gicv3 device have
 * the "vgicd" property?
 * @emulator: the QEMU binary (a domain's <emulator>)
 * @cache_dir: where to remember the answer (NULL: VGICD_EMULATOR_CACHE); a
 *	folder that cannot be written only costs the next call a new probe
 * @why: (out) (optional): when FALSE, why: no such device, no such
 *	property, or the binary could not be run
 *
 * Runs `EMULATOR -nodefaults -machine none -device kvm-arm-gicv3,help`,
 * bounded to 10 s, unless an answer for the same binary (path, device,
 * inode, size and modification time) is remembered.
 */
gboolean vgicd_emulator_has_vgicd (const char *emulator, const char *cache_dir, char **why);
