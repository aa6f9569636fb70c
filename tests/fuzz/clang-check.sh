#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# clang-check.sh - the clang build of everything, warnings as errors, with
# the libFuzzer targets, then the record corpus replayed under libFuzzer.
#
#   tests/fuzz/clang-check.sh BUILD_DIR [MESON_OPTION...]
#
# Sets up BUILD_DIR with clang and -Dfuzzing=true (reconfigures it when it
# exists: meson keeps the compiler it was set up with), builds every
# target (the project's code must build clean with clang as with gcc),
# and runs fuzz-record with -runs=0: each file of tests/fuzz/corpus once
# under libFuzzer, ASan and UBSan.  scripts/test.sh runs it; the
# time-boxed fuzzing is tests/fuzz/run-fuzzer.sh.  Exit status: 0 when the
# build and the replay pass.
set -eu
case ${1:-} in
-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac

build=${1:?usage: $0 BUILD_DIR [MESON_OPTION...]}
shift
src=$(cd "$(dirname "$0")/../.." && pwd)
# CC only counts when BUILD_DIR is new: meson keeps a directory's compiler.
reconfigure=
[ ! -f "$build/build.ninja" ] || reconfigure=--reconfigure
CC=clang meson setup $reconfigure "$build" "$src" --werror -Dfuzzing=true "$@" >/dev/null
ninja -C "$build"
"$build/tests/fuzz/fuzz-record" -runs=0 "$src/tests/fuzz/corpus"
