# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/nested/lib/common.sh - what every nested-tier script shares: where the
# caches live, timing, the heavy-work lock, messages.  Sourced, not run.
#
# Uses scripts/lib/common.sh for the repository paths, step timing and
# need_packages/enable_arm64.

NESTED_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../../scripts/lib/common.sh
. "$NESTED_LIB/../../../scripts/lib/common.sh"

# Downloads and caches live outside the repository.
VGICD_CACHE=${VGICD_CACHE:-/var/cache/vgicd}
NESTED_CACHE=${NESTED_CACHE:-$VGICD_CACHE/nested}
mkdir -p "$NESTED_CACHE"

# Heavy work (kernel builds, long QEMU boots, big compiles) is serialised
# across everyone sharing this machine's two cores.
HEAVY_LOCK=${HEAVY_LOCK:-/var/lock/vgicd-heavy.lock}

# heavy CMD... - run CMD holding the machine-wide heavy-work lock.
heavy() {
	flock "$HEAVY_LOCK" "$@"
}

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
