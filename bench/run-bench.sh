#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# run-bench.sh - README's benchmark: the vGIC's save and restore against
# vCPUs (8 to 512) on QEMU 10.0's own path, through vgicd one by one and
# batched, on vgic-sim; vgicd with a fleet of VMs attached; the table, the
# fitted exponents, each target met or missed, and the plot.
#
# From a fresh Debian 12 machine, as root (it installs what it needs):
#   bash bench/run-bench.sh [--quick] [--out DIR] [--runs N] [--sizes N,N]
#
#   --quick   3 runs and a fleet of 16 (CI: about a minute), every size
#   --out     where bench.md, bench.json and bench.png go
#             (default $VGICD_BUILD/bench: _build/bench)
# When the nested tiers have left results in $VGICD_BUILD/nested and
# $VGICD_BUILD/qemu-e2e, their tables are added beside the sim's.  The run
# holds the heavy-work lock, so that no other heavy step shares the cores
# with what it times.  It fails only when a destination or a record is wrong
# (bench-scaling) or the output lacks a part (report.py --check).
set -euo pipefail
. "$(dirname "$0")/../scripts/lib/common.sh"
cd "$VGICD_ROOT"

OUT=$VGICD_BUILD/bench
SIZES=8,16,32,64,128,160,256,512
ARGS=()
while [ $# -gt 0 ]; do
	case $1 in
	--quick) ARGS+=(--runs 3 --fleet 16); shift ;;
	--runs) ARGS+=(--runs "$2"); shift 2 ;;
	--sizes) SIZES=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "run-bench.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done

need_packages "${PKGS_BUILD[@]}" "${PKGS_BENCH[@]}"
meson_setup "$VGICD_BUILD/gcc"
# The whole build: bench-scaling runs the vgicd built beside it.
heavy ninja -C "$VGICD_BUILD/gcc" >/dev/null
mkdir -p "$OUT"
t0=$(date +%s)
heavy "$VGICD_BUILD/gcc/bench/bench-scaling" --sizes "$SIZES" --json "$OUT/raw.json" "${ARGS[@]}"
/usr/bin/python3 bench/report.py --in "$OUT/raw.json" --out "$OUT" \
	--nested "$VGICD_BUILD/nested" --qemu-e2e "$VGICD_BUILD/qemu-e2e"
echo
cat "$OUT/bench.md"
echo
/usr/bin/python3 bench/report.py --check "$OUT" --sizes "$SIZES"
echo "bench: $(($(date +%s) - t0)) s; $OUT/bench.md, bench.json, bench.png"
