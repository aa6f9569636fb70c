#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# run-fuzzer.sh - run the libFuzzer targets for a given time each.
#
#   tests/fuzz/run-fuzzer.sh SECONDS [BUILD_DIR [TARGET...]]
#
# TARGET is record (the state record decoder) or session (what a peer sends
# a session: Attach, the Session1 calls, the step channel, the window);
# both by default, one after the other.  Sets up BUILD_DIR (default:
# build-fuzz in the source tree) with clang, -Dfuzzing=true and ASan+UBSan,
# builds only the targets, and runs one libFuzzer worker per target (these
# machines have 2 cores, shared) for SECONDS, starting from the committed
# seeds (tests/fuzz/corpus/, tests/fuzz/session-corpus/).  New inputs go to
# BUILD_DIR/fuzz-corpus-TARGET, crashes to BUILD_DIR/fuzz-artifacts/.  To
# keep a finding as a regression seed, fix the bug, then copy the artifact
# into the target's corpus folder: the fuzz meson tests replay it in every
# build.  Prints each target's executions; exits 1 on any finding.
set -eu
case ${1:-} in
-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac

secs=${1:?usage: $0 SECONDS [BUILD_DIR [TARGET...]]}
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${2:-$src/build-fuzz}
shift
[ $# -eq 0 ] || shift
[ $# -gt 0 ] || set -- record session

if [ ! -f "$build/build.ninja" ]; then
	# fuzzer-no-link instruments the code under test for coverage; only
	# the targets themselves link libFuzzer's main().
	CC=clang meson setup "$build" "$src" -Dfuzzing=true \
		-Db_sanitize=address,undefined -Db_lundef=false \
		-Dc_args=-fsanitize=fuzzer-no-link
fi
targets=''
for t in "$@"; do
	case $t in
	record|session) targets="$targets tests/fuzz/fuzz-$t" ;;
	*) echo "run-fuzzer.sh: unknown target $t (record, session)" >&2; exit 2 ;;
	esac
done
# shellcheck disable=SC2086  # a list of targets
ninja -C "$build" $targets

mkdir -p "$build/fuzz-artifacts"
status=0
for t in "$@"; do
	case $t in
	record) seeds=$src/tests/fuzz/corpus
		set -- -dict="$src/tests/fuzz/record.dict" -max_len=16384 ;;
	session) seeds=$src/tests/fuzz/session-corpus
		set -- -max_len=4096 ;;
	esac
	log="$build/fuzz-$t.log"
	mkdir -p "$build/fuzz-corpus-$t"
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	"$build/tests/fuzz/fuzz-$t" \
		-max_total_time="$secs" -print_final_stats=1 "$@" -rss_limit_mb=2048 \
		-artifact_prefix="$build/fuzz-artifacts/$t-" \
		"$build/fuzz-corpus-$t" "$seeds" >"$log" 2>&1 || status=1
	echo "--- fuzz-$t, $secs s:"
	grep -E 'stat::number_of_executed_units|stat::peak_rss_mb|stat::new_units_added' "$log" || true
	grep -E '^#[0-9]+[[:space:]]+DONE' "$log" || tail -n 20 "$log"
done

if ls "$build/fuzz-artifacts/"* >/dev/null 2>&1; then
	echo "FINDINGS in $build/fuzz-artifacts/:"
	ls -l "$build/fuzz-artifacts/"
	exit 1
fi
[ "$status" -eq 0 ] && echo "no findings"
exit $status
