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

SOURCES=${VGICD_APT_SOURCES:-/etc/apt/sources.list.d/debian.sources}
SUITE=bookworm
CACHE=${VGICD_CACHE:-/var/cache/vgicd}/nspawn
# What a vgicd host needs, and nothing else: systemd as PID 1 with its
# journal, the system bus, the daemon's libraries, and procps for kill(1)
# (vgicd.service's ExecReload=; every Debian host has it, minbase does not).
# util-linux (setpriv, for the unprivileged checks) and dpkg (for
# --from-deb) are in minbase already.
PACKAGES=systemd,systemd-sysv,dbus,procps,libglib2.0-0,libsystemd0
# Bump to force a rebuild when the recipe below changes.
RECIPE=1

# One "deb URI SUITE COMPONENTS" line per suite of each deb822 stanza.
mirror_lines() {
	awk '
	function flush() {
		if (uris != "" && types ~ /(^| )deb( |$)/)
			for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++)
				print "deb " u[i] " " s[j] " " comps
		uris = ""; types = ""; comps = "main"; nu = ns = 0
	}
	BEGIN { comps = "main" }
	/^[ \t]*#/ { next }
	/^[ \t]*$/ { flush(); next }
	/^Types:/ { $1 = ""; types = $0 }
	/^URIs:/ { $1 = ""; uris = $0; nu = split(uris, u, " ") }
	/^Suites:/ { $1 = ""; ns = split($0, s, " ") }
	/^Components:/ { $1 = ""; sub(/^ /, ""); comps = $0 }
	END { flush() }' "$SOURCES"
}

[ -r "$SOURCES" ] || { echo "rootfs.sh: cannot read $SOURCES (the apt sources to build from)" >&2; exit 1; }
mapfile -t MIRRORS < <(mirror_lines)
[ ${#MIRRORS[@]} -gt 0 ] || { echo "rootfs.sh: no deb sources in $SOURCES" >&2; exit 1; }

key=$(printf '%s\n' "$RECIPE" "$SUITE" "$PACKAGES" "${MIRRORS[@]}" | sha256sum | cut -c1-12)
dest=$CACHE/rootfs-$key
if [ -f "$dest/.vgicd-rootfs-done" ]; then
	echo "$dest"
	exit 0
fi

command -v mmdebstrap >/dev/null || { echo "rootfs.sh: mmdebstrap is not installed (apt-get install mmdebstrap)" >&2; exit 1; }
mkdir -p "$CACHE"
tmp=$(mktemp -d "$CACHE/.rootfs-$key.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "rootfs.sh: building $dest (mmdebstrap $SUITE, about a minute)" >&2
t0=$(date +%s)
# The mirrors also go into the tree's apt sources, so that --from-deb can
# apt-get a package's missing dependencies inside the container.  The
# hostname and machine-id are fixed so that every boot looks the same.
# Only the download and unpack are heavy; a warm cache above takes no lock.
flock "${VGICD_HEAVY_LOCK:-/var/lock/vgicd-heavy.lock}" \
mmdebstrap --quiet --variant=minbase --include="$PACKAGES" \
	--customize-hook='echo vgicd-test > "$1/etc/hostname"' \
	--customize-hook='rm -f "$1/etc/machine-id"; : > "$1/etc/machine-id"' \
	"$SUITE" "$tmp/root" "${MIRRORS[@]}" >&2
touch "$tmp/root/.vgicd-rootfs-done"
rm -rf "$dest"
mv "$tmp/root" "$dest"
echo "rootfs.sh: built in $(( $(date +%s) - t0 )) s, $(du -sh "$dest" | cut -f1)" >&2
echo "$dest"
