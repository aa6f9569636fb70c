# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# tests/nested/lib/common.sh - what the nested tiers add to the project's
# shell library (scripts/lib/common.sh: paths, the heavy-work lock, step
# timing, packages, the private apt state): their cache folder and their
# messages.  Sourced, not run.

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
