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

# heavy CMD... - run CMD holding the machine-wide heavy-work lock.  The
# seconds spent waiting for the lock add up in HEAVY_WAITED (so that the
# timings can tell waiting from working).
HEAVY_WAITED=0
heavy() {
	local t0 got rc=0 stamp
	stamp=$(mktemp)
	t0=$(nested_clock)
	flock "$HEAVY_LOCK" sh -c 'date +%s.%N > "$0"; exec "$@"' "$stamp" "$@" || rc=$?
	got=$(cat "$stamp")
	rm -f "$stamp"
	[ -z "$got" ] || HEAVY_WAITED=$(echo "$HEAVY_WAITED + $got - $t0" | bc)
	return $rc
}

# nested_step_begin NAME / nested_step_end - scripts/lib/common.sh's step
# timing, plus the time the step spent waiting for the heavy-work lock.
nested_step_begin() {
	NESTED_STEP_WAIT0=$HEAVY_WAITED
	step_begin "$@"
}

nested_step_end() {
	local waited
	step_end
	waited=$(echo "$HEAVY_WAITED - $NESTED_STEP_WAIT0" | bc)
	if [ "$(echo "$waited >= 0.5" | bc)" = 1 ]; then
		STEP_TIMES[-1]+=$(printf ' (%.1f s of it waiting for the heavy-work lock)' "$waited")
	fi
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
