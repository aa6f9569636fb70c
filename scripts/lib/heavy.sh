# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# heavy.sh - the heavy-work lock: builds, long emulated boots and big
# compiles take it, so that work sharing this machine's two cores never
# runs two at once.  Sourced (by common.sh).
#
#   heavy CMD...          run CMD (a program or a shell function) holding
#                         the lock
#   heavy_script "$@"     at the top of a script that is heavy as a whole:
#                         re-run it under the lock, unless already held
#   heavy_waited          seconds this script has waited for the lock
#
# One lock, $VGICD_HEAVY_LOCK (/var/lock/vgicd-heavy.lock), taken one way.
# It is re-entrant: while it is held, VGICD_HEAVY_HELD=1 is in the
# environment of what runs, and a heavy call there (a script that a heavy
# script runs, say) runs at once instead of waiting for itself.  The lock's
# descriptor is not inherited by what runs, so a daemon started under it
# does not keep it.

VGICD_HEAVY_LOCK=${VGICD_HEAVY_LOCK:-/var/lock/vgicd-heavy.lock}
HEAVY_WAITED=${HEAVY_WAITED:-0}

heavy() {
	local t0 fd rc=0
	if [ -n "${VGICD_HEAVY_HELD:-}" ]; then
		"$@"
		return
	fi
	t0=$(date +%s.%N)
	exec {fd}>>"$VGICD_HEAVY_LOCK"
	flock "$fd"
	HEAVY_WAITED=$(echo "$HEAVY_WAITED + $(date +%s.%N) - $t0" | bc)
	local -x VGICD_HEAVY_HELD=1
	"$@" {fd}>&- || rc=$?
	exec {fd}>&-
	return $rc
}

# heavy_script "$@" - the calling script again, under the lock (the script
# must pass its own arguments).
heavy_script() {
	[ -z "${VGICD_HEAVY_HELD:-}" ] || return 0
	local rc=0
	heavy bash "$0" "$@" || rc=$?
	exit $rc
}

heavy_waited() {
	printf '%.1f\n' "$HEAVY_WAITED"
}
