#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# run-fuzzer.sh - fuzz the state record decoder for a given time.
#
#   tests/fuzz/run-fuzzer.sh SECONDS [BUILD_DIR]
#
# Sets up BUILD_DIR (default: build-fuzz in the source tree) with clang,
# -Dfuzzing=true and ASan+UBSan, builds only the fuzz target, and runs one
# libFuzzer worker (these machines have 2 cores, shared) for SECONDS, starting
# from the committed seeds in tests/fuzz/corpus/.  New inputs go to
# BUILD_DIR/fuzz-corpus, crashes to BUILD_DIR/fuzz-artifacts/.  To keep a
# finding as a regression seed, fix the bug, then copy the artifact into
# tests/fuzz/corpus/: the 'fuzz' meson test replays it in every build.
set -eu

secs=${1:?usage: $0 SECONDS [BUILD_DIR]}
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${2:-$src/build-fuzz}

if [ ! -f "$build/build.ninja" ]; then
	# fuzzer-no-link instruments vgic-core for coverage; only the target
	# itself links libFuzzer's main().
	CC=clang meson setup "$build" "$src" -Dfuzzing=true \
		-Db_sanitize=address,undefined -Db_lundef=false \
		-Dc_args=-fsanitize=fuzzer-no-link
fi
ninja -C "$build" tests/fuzz/fuzz-record

mkdir -p "$build/fuzz-corpus" "$build/fuzz-artifacts"
log="$build/fuzz-record.log"
status=0
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
"$build/tests/fuzz/fuzz-record" \
	-max_total_time="$secs" -print_final_stats=1 \
	-dict="$src/tests/fuzz/record.dict" -max_len=16384 -rss_limit_mb=2048 \
	-artifact_prefix="$build/fuzz-artifacts/" \
	"$build/fuzz-corpus" "$src/tests/fuzz/corpus" 2>&1 | tee "$log" || status=1

# tee hides the fuzzer's exit status: a crash is an artifact file.
echo "---"
grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "$log" || true
if ls "$build/fuzz-artifacts/"* >/dev/null 2>&1; then
	echo "FINDINGS in $build/fuzz-artifacts/:"
	ls -l "$build/fuzz-artifacts/"
	exit 1
fi
echo "no findings"
exit $status
