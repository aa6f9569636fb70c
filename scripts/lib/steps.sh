# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# steps.sh - where a script's time went.  Sourced (by common.sh).
#
#   step_begin "what"; ...; step_end     one line in STEP_TIMES, with the
#                                        time spent waiting for the
#                                        heavy-work lock, if any
#   print_step_times                     the table
#
# step_end is a separate call rather than a wrapper, so that set -e still
# stops the script inside the step.

STEP_TIMES=()

step_begin() {
	STEP_NAME=$1
	STEP_T0=$(date +%s.%N)
	STEP_WAIT0=$HEAVY_WAITED
	printf '\n==> %s\n' "$STEP_NAME"
}

step_end() {
	local line waited
	line=$(printf '%-44s %7.1f s' "$STEP_NAME" "$(echo "$(date +%s.%N) - $STEP_T0" | bc)")
	waited=$(echo "$HEAVY_WAITED - $STEP_WAIT0" | bc)
	if [ "$(echo "$waited >= 0.5" | bc)" = 1 ]; then
		line+=$(printf ' (%.1f s of it waiting for the heavy-work lock)' "$waited")
	fi
	STEP_TIMES+=("$line")
}

print_step_times() {
	printf '\nWhere the time went:\n'
	printf '  %s\n' "${STEP_TIMES[@]}"
}
