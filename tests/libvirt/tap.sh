# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# tap.sh - the TAP helpers the hook's shell tests share (sourced; $T is
# the test's scratch folder, whose err file a failure shows).
#
#   ok DESCRIPTION; not_ok DESCRIPTION [LINE...]; check DESCRIPTION COMMAND...
#   tap_end: the plan, and the status (0 when nothing failed)

N=0
FAILS=0
ok() { N=$((N + 1)); echo "ok $N - $1"; }
not_ok() {
	N=$((N + 1)); FAILS=$((FAILS + 1)); echo "not ok $N - $1"
	shift
	for l in "$@"; do echo "# $l"; done
	[ -s "$T/err" ] && sed 's/^/#   stderr: /' "$T/err"
	return 0
}
check() { # check DESCRIPTION COMMAND...
	local d=$1
	shift
	if "$@"; then ok "$d"; else not_ok "$d" "failed: $*"; fi
}
tap_end() {
	echo "1..$N"
	[ "$FAILS" = 0 ]
}
