#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# build-check.sh - does the QEMU series still apply and compile?
#
# From a fresh Debian 12 machine (root, Debian's archive reachable):
#   1. fetches QEMU's source from the base's Debian qemu source package
#      (10.0: stable's; 10.2: unstable's 1:10.2.2+ds-1), and a meson >= 1.5
#      from Debian stable's meson package (lib.sh);
#   2. applies the base's series (qemu-patch/NNNN-*.patch, or
#      qemu-patch/10.2/NNNN-*.patch; not the cover letter) with git am,
#      which refuses any fuzz, and runs the base's own scripts/checkpatch.pl
#      on each patch (errors, or warnings but the linux-headers one, fail);
#   3. cross-builds the project's libvgicd for aarch64 and installs it into
#      the cache, for QEMU's pkg-config;
#   4. cross-configures a minimal KVM-only qemu-system-aarch64 twice, with
#      --enable-vgicd and with --disable-vgicd, warnings as errors, and
#      compiles the objects of every C file the series touches.
# Everything lands in ${VGICD_CACHE:-/var/cache/vgicd}/qemu (10.0) or
# .../qemu/BASE; the repository is only read.  Heavy steps take the
# heavy-work lock (scripts/lib/heavy.sh).
#
#   bash qemu-patch/build-check.sh [--base 10.0|10.2] [--full]
#
# --base  the series to check (default 10.0, the one the tiers build)
# --full  also link qemu-system-aarch64 (the vgicd build: build-qemu.sh)
# Exit status: 0 when everything applied and compiled.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() {
	sed -n 's/^#   //p; s/^# --/--/p' "$0" | sed -n '/build-check.sh \[/,$p' | sed '/^Exit/,$d'
}

FULL=
while [ $# -gt 0 ]; do
	case $1 in
	--full) FULL=1 ;;
	--base) [ $# -ge 2 ] || { usage >&2; exit 2; }
		qp_base "$2" || exit 2
		shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done
CHECK=$QP_BASE_CACHE/check

T0=$(date +%s.%N)
mkdir -p "$QP_CACHE"

step_begin "packages"
need_packages "${PKGS_QEMU[@]}"
step_end
step_begin "meson >= 1.5"; qp_meson; step_end
step_begin "QEMU source (Debian $QP_SUITE)"; qp_qemu_source; step_end
step_begin "apply the series"; qp_apply_series "$CHECK/src"; step_end
step_begin "libvgicd for aarch64"; qp_libvgicd_aarch64; step_end

# check_build NAME VGICD_OPTION - configure (when needed) and compile the
# objects of the C files the series changes.
check_build() {
	local name=$1 opt=$2 build=$CHECK/build-$1 files targets f obj objs=()
	step_begin "configure ($name)"
	qp_configure "$CHECK/src" "$build" "$opt" --enable-werror --disable-debug-info
	step_end
	step_begin "compile changed objects ($name)"
	files=$(git -C "$CHECK/src" diff --name-only pristine HEAD -- '*.c')
	targets=$(qp_qemu_env ninja -C "$build" -t targets all)
	for f in $files; do
		obj=$(sed -n "s|^\([^:]*/${f//\//_}\.o\): .*|\1|p" <<<"$targets" | sed -n 1p)
		if [ -z "$obj" ]; then
			echo "note: $f is not part of this configuration"
			continue
		fi
		objs+=("$obj")
	done
	[ ${#objs[@]} -gt 0 ] || { echo "nothing to compile?" >&2; return 1; }
	echo "compiling: ${objs[*]}"
	heavy qp_qemu_env ninja --quiet -C "$build" "${objs[@]}"
	step_end
}

# checkpatch - QEMU's scripts/checkpatch.pl on each patch, as applied to
# the base.  Errors fail the check, and so do warnings but one: a change to
# linux-headers/ that is not a whole update from a Linux release (the batch
# group is in none yet).
checkpatch() {
	local out bad
	step_begin "checkpatch.pl"
	out=$(cd "$CHECK/src" && perl scripts/checkpatch.pl pristine..HEAD 2>&1) || true
	grep -E '^[0-9]+/[0-9]+ Checking commit|^total:|^(ERROR|WARNING):' <<<"$out" | sed 's/^/  /'
	bad=$(grep -E '^(ERROR|WARNING):' <<<"$out" |
		grep -v "^WARNING: added, moved or deleted file(s) imported from Linux" || true)
	step_end
	if [ -n "$bad" ]; then
		printf '%s\n' "$out" >&2
		echo "checkpatch.pl: the series has errors or warnings (above)" >&2
		return 1
	fi
}

checkpatch
check_build vgicd --enable-vgicd
check_build novgicd --disable-vgicd
if [ -n "$FULL" ]; then
	step_begin "link qemu-system-aarch64 (vgicd)"
	heavy qp_qemu_env ninja -C "$CHECK/build-vgicd" qemu-system-aarch64
	step_end
fi

print_step_times
printf '  %-44s %7.1f s\n' "total" "$(echo "$(date +%s.%N) - $T0" | bc)"
echo
echo "build-check: the series applies to QEMU $QP_QEMU_VERSION and compiles with and without vgicd"
