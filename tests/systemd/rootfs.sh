#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# rootfs.sh - print the path of a minimal Debian 12 root file system that
# boots under systemd-nspawn, building it first if the cache lacks it.
#
#   tests/systemd/rootfs.sh            # path on stdout, progress on stderr
#
# The tree lives under ${VGICD_CACHE:-/var/cache/vgicd}/nspawn, outside the
# repository, keyed by a hash of everything that goes into it (package list,
# suite, mirrors), so changing the list builds a new one and an unchanged
# list costs nothing.  It is built read-only-by-convention: run-nspawn.sh
# boots it with --volatile=overlay, so no test ever writes into it.
#
# The mirrors are this machine's own apt sources (deb822 file below), read
# at run time: the repository names no archive host.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib/common.sh"

DEBIAN_SOURCES=${VGICD_APT_SOURCES:-$DEBIAN_SOURCES}
SUITE=bookworm
CACHE=$VGICD_CACHE/nspawn
# What a vgicd host needs, and nothing else: systemd as PID 1 with its
# journal, the system bus, the daemon's libraries, and procps for kill(1)
# (vgicd.service's ExecReload=; every Debian host has it, minbase does not).
# util-linux (setpriv, for the unprivileged checks) and dpkg (for
# --from-deb) are in minbase already.
PACKAGES=systemd,systemd-sysv,dbus,procps,libglib2.0-0,libsystemd0,libjson-glib-1.0-0
# Bump to force a rebuild when the recipe below changes.
RECIPE=2

[ -r "$DEBIAN_SOURCES" ] || { echo "rootfs.sh: cannot read $DEBIAN_SOURCES (the apt sources to build from)" >&2; exit 1; }
mapfile -t MIRRORS < <(deb_sources_lines)
[ ${#MIRRORS[@]} -gt 0 ] || { echo "rootfs.sh: no deb sources in $DEBIAN_SOURCES" >&2; exit 1; }

key=$(printf '%s\n' "$RECIPE" "$SUITE" "$PACKAGES" "${DEB_SCRATCH_ROOT_OPTS[@]}" "${MIRRORS[@]}" | sha256sum | cut -c1-12)
# build_root ROOT - the tree, by mmdebstrap.  The mirrors also go into its
# apt sources, so that --from-deb can apt-get a package's missing
# dependencies inside the container.  The hostname and machine-id are
# fixed so that every boot looks the same.  Only the download and unpack
# are heavy; a warm cache takes no lock.
build_root() {
	command -v mmdebstrap >/dev/null || { echo "rootfs.sh: mmdebstrap is not installed (apt-get install mmdebstrap)" >&2; exit 1; }
	echo "rootfs.sh: building $CACHE/rootfs-$key (mmdebstrap $SUITE, about a minute)" >&2
	heavy mmdebstrap --quiet --variant=minbase --include="$PACKAGES" \
		"${DEB_SCRATCH_ROOT_OPTS[@]}" \
		--customize-hook='echo vgicd-test > "$1/etc/hostname"' \
		--customize-hook='rm -f "$1/etc/machine-id"; : > "$1/etc/machine-id"' \
		"$SUITE" "$1" "${MIRRORS[@]}" >&2
}
deb_cached_root "$CACHE/rootfs-$key" build_root
