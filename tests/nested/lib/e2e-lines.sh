# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=sh
# e2e-lines.sh - the report lines of the end-to-end tiers' L1 scripts
# (e2e/l1-init.sh, virsh/l1-run.sh), which their host-side runners read
# from the console.  POSIX sh: sourced inside L1 by busybox's sh and by
# Debian's dash.
#   E2E: [UPTIME] TEXT               progress
#   E2E-TIME: PHASE SECONDS          L1's uptime at the phase's end
#   E2E-CHECK: PASS|FAIL NAME[ :: DETAIL]
# The sourcing script sets FAILS=0 and defines diag, which check calls
# after a failure (each tier knows what is worth printing then).

up() { cut -d' ' -f1 /proc/uptime; }
say() { echo "E2E: [$(up)] $*"; }
stamp() { echo "E2E-TIME: $1 $(up)"; }
check() {	# check NAME PASS|FAIL DETAIL
	echo "E2E-CHECK: $2 $1${3:+ :: $3}"
	[ "$2" = PASS ] || { FAILS=$((FAILS + 1)); diag; }
}
