/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vgicd-emulator.h - can a host's QEMU take vgicd's property?  Asked of the
 * binary itself, and remembered by its path and identity, because the hook
 * runs at every start and incoming migration and QEMU takes tens of
 * milliseconds (seconds under emulation) to answer.
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

/* libvirt's QEMU settings, and the user QEMU runs as when they name none
 * (Debian's and Ubuntu's libvirt builds; libvirt's own default is "qemu",
 * which distributions that use it set in qemu.conf). */
#define VGICD_QEMU_CONF "/etc/libvirt/qemu.conf"
#define VGICD_QEMU_USER "libvirt-qemu"

/* Where the answers are kept when the caller names no folder. */
#define VGICD_EMULATOR_CACHE "/run/vgicd/emulators"

/**
 * vgicd_emulator_has_vgicd() - does @emulator's kvm-arm-gicv3 device have
 * the "vgicd" property?
 * @emulator: the QEMU binary (a domain's <emulator>)
 * @cache_dir: where to remember the answer (NULL: VGICD_EMULATOR_CACHE); a
 *	folder that cannot be written only costs the next call a new probe
 * @qemu_conf: libvirt's qemu.conf, for the user to run it as (NULL:
 *	VGICD_QEMU_CONF)
 * @why: (out) (optional): when FALSE, why: not on the allow-list, no such
 *	device, no such property, or the binary could not be run
 *
 * Runs `EMULATOR -nodefaults -machine none -device kvm-arm-gicv3,help`,
 * bounded to 10 s, unless an answer for the same binary (path, device,
 * inode, size and modification time) is remembered; only for an @emulator
 * on the allow-list, from the descriptor it was stamped by, as QEMU's
 * user, with an empty environment (see vgicd-emulator.c).
 */
gboolean vgicd_emulator_has_vgicd (const char *emulator, const char *cache_dir,
                                   const char *qemu_conf, char **why);

/* vgicd_emulator_allowed() - may the hook run @path (the allow-list)? */
gboolean vgicd_emulator_allowed (const char *path);

/* vgicd_emulator_allow_list() - the allow-list's patterns, NULL-terminated
 * ('*': the rest of one path component) */
const char *const *vgicd_emulator_allow_list (void);

/**
 * vgicd_emulator_qemu_user() - the user and group libvirt runs QEMU as,
 * read from @qemu_conf's `user =` and `group =` as libvirt reads them
 * (names or libvirt's "+N"); VGICD_QEMU_USER and its primary group when
 * the file or the setting is absent
 * @name: (out): the user's name, for messages
 */
gboolean vgicd_emulator_qemu_user (const char *qemu_conf, uid_t *uid, gid_t *gid,
                                   char **name, char **why);
