# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# tests/nested/lib/common.sh - what the nested tiers add to the project's
# shell library (scripts/lib/common.sh: paths, the heavy-work lock, step
# timing, packages, the private apt state): their cache folder, their
# messages, and the busybox every tier's initramfs starts from.  Sourced,
# not run.

NESTED_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../../scripts/lib/common.sh
. "$NESTED_LIB/../../../scripts/lib/common.sh"

NESTED_CACHE=${NESTED_CACHE:-$VGICD_CACHE/nested}
mkdir -p "$NESTED_CACHE"

nested_log() {
	printf '[nested] %s\n' "$*" >&2
}

nested_die() {
	printf '[nested] ERROR: %s\n' "$*" >&2
	exit 1
}

# nested_clock - seconds since the epoch, with fractions (for durations).
nested_clock() {
	date +%s.%N
}

# nested_busybox - print the path of Debian 12's arm64 static busybox,
# fetched into the cache and unpacked there once.  Debian 12's in every
# tier and every L1: trixie's is merged-/usr, and one binary keeps the
# initramfs the same whichever stack a tier runs.  A subshell, so the
# caller's private apt state stays current; every step is checked by hand,
# because a command substitution does not inherit errexit.
nested_busybox() (
	local deb bb=$NESTED_CACHE/busybox/bin/busybox
	deb_apt_init bookworm-arm64 arm64 || exit
	deb_apt_update || exit
	deb=$(deb_download "$NESTED_CACHE/debs" busybox-static) || exit
	deb_extract "$deb" "$NESTED_CACHE/busybox" || exit
	[ -x "$bb" ] || nested_die "$(basename "$deb") has no bin/busybox"
	printf '%s\n' "$bb"
)
