#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# build-check.sh - does the QEMU series still apply and compile?
#
# From a fresh Debian 12 machine (root, Debian's archive reachable):
#   1. fetches QEMU's source from Debian stable's qemu source package, and a
#      meson >= 1.5 from Debian stable's meson package (lib.sh);
#   2. applies qemu-patch/*.patch with git am, which refuses any fuzz;
#   3. cross-builds the project's libvgicd for aarch64 and installs it into
#      the cache, for QEMU's pkg-config;
#   4. cross-configures a minimal KVM-only qemu-system-aarch64 twice, with
#      --enable-vgicd and with --disable-vgicd, warnings as errors, and
#      compiles the objects of every C file the series touches.
# Everything lands in ${VGICD_CACHE:-/var/cache/vgicd}/qemu; the repository
# is only read.  Heavy steps take /var/lock/vgicd-heavy.lock.
#
# Options: --full  also link qemu-system-aarch64 (the vgicd build).
# Exit status: 0 when everything applied and compiled.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

FULL=
for arg in "$@"; do
	case $arg in
	--full) FULL=1 ;;
	*) echo "usage: $0 [--full]" >&2; exit 2 ;;
	esac
done

T0=$(qp_now)
mkdir -p "$QP_CACHE"
rm -f "$QP_CACHE/.lock-waits"

qp_begin "packages"
qp_need_packages \
	gcc-aarch64-linux-gnu libc6-dev-arm64-cross pkgconf:arm64 \
	libglib2.0-dev:arm64 zlib1g-dev:arm64 libfdt-dev:arm64 \
	libpixman-1-dev:arm64 libsystemd-dev:arm64 \
	ccache ninja-build meson pkg-config dpkg-dev git bc python3-venv
qp_end
qp_begin "meson >= 1.5"; qp_meson; qp_end
qp_begin "QEMU source (Debian stable)"; qp_qemu_source; qp_end
qp_begin "apply the series"; qp_apply_series "$QP_CACHE/check/src"; qp_end
qp_begin "libvgicd for aarch64"; qp_libvgicd_aarch64; qp_end

# check_build NAME VGICD_OPTION - configure (when needed) and compile the
# objects of the C files the series changes.
check_build() {
	local name=$1 opt=$2 build=$QP_CACHE/check/build-$1 files targets f obj objs=()
	qp_begin "configure ($name)"
	qp_configure "$QP_CACHE/check/src" "$build" "$opt" --enable-werror --disable-debug-info
	qp_end
	qp_begin "compile changed objects ($name)"
	files=$(git -C "$QP_CACHE/check/src" diff --name-only pristine HEAD -- '*.c')
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
	qp_heavy qp_qemu_env ninja --quiet -C "$build" "${objs[@]}"
	qp_end
}

check_build vgicd --enable-vgicd
check_build novgicd --disable-vgicd
if [ -n "$FULL" ]; then
	qp_begin "link qemu-system-aarch64 (vgicd)"
	qp_heavy qp_qemu_env ninja -C "$QP_CACHE/check/build-vgicd" qemu-system-aarch64
	qp_end
fi

qp_print_times
printf '  %-40s %7.1f s\n' "total" "$(echo "$(qp_now) - $T0" | bc)"
echo
echo "build-check: the series applies to QEMU $QP_QEMU_VERSION and compiles with and without vgicd"
