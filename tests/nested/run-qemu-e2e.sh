#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# run-qemu-e2e.sh - the QEMU end-to-end tier: the patched qemu-system-aarch64
# (qemu-patch/) and Debian stable's stock arm64 QEMU 10.0, run with KVM
# inside an arm64 machine booted at EL2 under qemu-system-aarch64 (TCG), on
# the patched kernel (kernel-patch/), with a real vgicd on the well-known
# socket.  No QEMU is given a vgicd argument: the patched one uses the
# host's vgicd by default.
#
# From a fresh Debian 12 machine, as root:
#   bash tests/nested/run-qemu-e2e.sh [--quick] [--timeout SECONDS]
#        [--sizes-a 4,16] [--size-b 4|0] [--sizes-c 64,128] [--reps 3]
#        [--enforce-target] [--c-vmdesc on|off] [--sizes-d 64,128] [--d-hops 3]
#        [--size-e 4|0] [--qemu-base 10.0|10.2] [--qemu-deb DIR] [--fetch-only]
#
#   (a) a running L2 guest (4 and 16 vCPUs; --quick: 4) is saved with vgicd
#       off (stream A) and through vgicd (B); B is loaded through vgicd into
#       a second patched QEMU, which saves with vgicd off (C).  A's and C's
#       GIC and ITS device sections must be identical (analyze-migration.py
#       of the QEMU source package), and the guest must keep running after
#       cont; `vgicctl dump` of every stream reads the same GIC state from
#       the stock and patched QEMUs' fields, and from vgicd's record the
#       same registers again (files/*.dump.txt);
#   (b) B into the stock QEMU fails (unknown subsection) and the source
#       stays alive; A loads into the patched QEMU with vgicd by QEMU's own
#       path; with an explicit vgicd address that is unreachable the patched
#       QEMU starts (warning) and saves by its own path; on a host without
#       vgicd it starts and saves by its own path without a word; the stock
#       QEMU, given the same command line as the patched one on this host
#       with vgicd, boots the guest and migrates it live to another stock
#       QEMU; libvirt's hook (aarch64) removes the argument of earlier
#       versions for the stock QEMU only, and writes nothing otherwise;
#   (c) the GIC section's save and load times (QEMU trace events) at 64 and
#       128 vCPUs (--quick: 128), stock vs patched through vgicd, the median
#       of --reps runs each (--quick: 1).  Target at 128: patched <= 1/20 of
#       stock both ways; reported, and a failure only with --enforce-target.
#       When (e) runs, which brings trixie-backports' stock QEMU 11.1 in,
#       (c) times that one too, as the newer QEMU's baseline (not in the
#       target).  --c-vmdesc off is a diagnostic: the QEMUs of (c) run
#       with -machine suppress-vmdesc=on, so the sections leave out QEMU's
#       JSON description of the stream (the default, on, is what libvirt
#       and users run);
#   (d) the vGIC's share of a live migration's downtime: a running L2 guest
#       (64 and 128 vCPUs, one of them online; --quick: 64) migrated live
#       --d-hops times (--quick: 2) on the stock QEMU and on the patched one
#       through vgicd: query-migrate's downtime, setup-time and
#       downtime-bytes, the source's stop to the destination's start, and
#       the GIC section's save and load, side by side;
#   (e) the rolling upgrade across QEMU versions (4 vCPUs; 0: none): a
#       running L2 guest migrated live on the 10.0 machine type between
#       Debian's stock QEMU 10.0, the patched 10.0 through vgicd and
#       trixie-backports' stock QEMU 11.1, every ordered pair (--quick: the
#       patched QEMU to and from each QEMU of another version); the GIC and
#       ITS sections each side holds afterwards must be equal, and the
#       guest must run on.
#
# --qemu-base 10.2 builds the patched QEMU from qemu-patch/10.2/ (Debian
# unstable's 10.2.2) instead of the 10.0 series: (a) to (d) then run that
# QEMU where they say "patched", and every scenario runs on the 10.0
# machine type (virt-10.0), which the stock 10.0 also runs: on 10.2's own,
# its streams do not load into the stock 10.0 ("Machine type received is
# 'virt-10.2' and local is 'virt-10.0'").  (e) then has four QEMUs: the
# patched 10.0 (built too) stays P10 and the patched 10.2 is P10.2, both
# served by the one vgicd (--quick: P10.2 to and from S10, P10 and S11).
# A run to look at, not one CI makes.
#
# --qemu-deb DIR runs, where the scenarios say "patched", the QEMU of
# Debian's own packaging instead of build-qemu.sh's minimal build: the
# qemu-system-aarch64 of DIR's qemu-system-arm_*_arm64.deb, as
# qemu-patch/build-debian-qemu.sh makes it (its out folder; --qemu-base
# names the series it carries).  Its libraries come from the stock QEMUs'
# Debian roots, as theirs do; vgicd and libvgicd.so.0 are this tree's, as
# always.  Not in CI either.
#
# --fetch-only installs the packages and fetches the downloads (busybox,
# the stock QEMUs' Debian roots: give it the --size-e of the run to come)
# into the cache, then exits: scripts/test.sh runs it while the patched
# kernel still builds, so that the tier's own run finds them there.
#
# Environment: VGICD_CACHE (default /var/cache/vgicd), VGICD_BUILD (default
# _build; logs and streams go to $VGICD_BUILD/qemu-e2e),
# NESTED_PATCHED_IMAGE (a prebuilt patched kernel).
# Exit status: 0 when every check passed, 1 otherwise.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib/common.sh"
. "$HERE/lib/initramfs.sh"
. "$HERE/lib/kernel.sh"
. "$HERE/lib/boot.sh"
cd "$VGICD_ROOT"

SIZES_A=4,16 SIZE_B=4 SIZES_C=64,128 REPS=3 SIZES_D=64,128 D_HOPS=3 SIZE_E=4 E_ALL=1
TIMEOUT=${VGICD_E2E_TIMEOUT:-3600}
ENFORCE=
QUICK=
C_VMDESC=on
QEMU_BASE=10.0
QEMU_DEB=
E2E_MACHINE=
FETCH_ONLY=
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1; SIZES_A=4; SIZES_C=128; REPS=1; SIZES_D=64; D_HOPS=2; E_ALL=0; shift ;;
	--reps) REPS=$2; shift 2 ;;
	--timeout) TIMEOUT=$2; shift 2 ;;
	--enforce-target) ENFORCE=1; shift ;;
	--sizes-a) SIZES_A=$2; shift 2 ;;
	--size-b) SIZE_B=$2; shift 2 ;;
	--sizes-c) SIZES_C=$2; shift 2 ;;
	--sizes-d) SIZES_D=$2; shift 2 ;;
	--d-hops) D_HOPS=$2; shift 2 ;;
	--size-e) SIZE_E=$2; shift 2 ;;
	--qemu-base)
		case ${2:-} in 10.0 | 10.2) QEMU_BASE=$2 ;; *) echo "run-qemu-e2e.sh: --qemu-base takes 10.0 or 10.2" >&2; exit 2 ;; esac
		[ "$QEMU_BASE" = 10.0 ] || E2E_MACHINE=" e2e_machine=virt-10.0"
		shift 2 ;;
	--qemu-deb) QEMU_DEB=$(realpath "$2"); shift 2 ;;
	--fetch-only) FETCH_ONLY=1; shift ;;
	--c-vmdesc)
		case $2 in on | off) C_VMDESC=$2 ;; *) echo "run-qemu-e2e.sh: --c-vmdesc takes on or off" >&2; exit 2 ;; esac
		shift 2 ;;
	-h | --help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
	*) echo "run-qemu-e2e.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done

NESTED_OUT=$VGICD_BUILD/qemu-e2e
E2E_CACHE=$NESTED_CACHE/e2e
mkdir -p "$NESTED_OUT" "$E2E_CACHE"
T_START=$(nested_clock)

step_begin "packages"
need_packages "${PKGS_BOOT[@]}" "${PKGS_NESTED[@]}"
step_end

# qemu_root ROOT VERSION NAME APT_ARGS... - what `apt-get install APT_ARGS`
# brings in the private apt state (DEB_APT), downloaded into
# $E2E_CACHE/NAME-debs and unpacked into ROOT; again only when VERSION, the
# qemu-system-arm it is for, changed.  The number of packages in
# QEMU_ROOT_DEBS.
qemu_root() {
	local root=$1 version=$2 debs=$E2E_CACHE/$3-debs log=$NESTED_OUT/$3-download.log deb
	shift 3
	if [ ! -f "$root.stamp" ] || [ "$(cat "$root.stamp")" != "$version" ]; then
		rm -rf "$debs" "$root"
		mkdir -p "$debs/partial" "$root"
		"${DEB_APT[@]}" -o "Dir::Cache::archives=$debs" install --download-only -y "$@" >"$log" 2>&1 ||
			{ tail -n 20 "$log" >&2; nested_die "downloading ${*: -1} $version (arm64) failed (log $log)"; }
		for deb in "$debs"/*.deb; do
			dpkg-deb -x "$deb" "$root"
		done
		echo "$version" >"$root.stamp"
	fi
	QEMU_ROOT_DEBS=$(find "$debs" -maxdepth 1 -name '*.deb' | wc -l)
}

step_begin "downloads (busybox-static; Debian stable's arm64 QEMU)"
BUSYBOX=$(nested_busybox)
# Debian stable's qemu-system-arm and everything it depends on, resolved by
# apt on a private, empty state (no maintainer scripts, nothing installed).
deb_apt_init trixie-arm64 arm64 trixie
deb_apt_update
STOCK_VERSION=$(deb_version qemu-system-arm)
STOCK_ROOT=$E2E_CACHE/stock-root
qemu_root "$STOCK_ROOT" "$STOCK_VERSION" stock --no-install-recommends qemu-system-arm
echo "stock QEMU: qemu-system-arm $STOCK_VERSION (arm64, Debian stable), $QEMU_ROOT_DEBS packages"
# (e): trixie-backports' qemu-system-arm (QEMU 11.1) and what it needs, from
# trixie and trixie-backports (-t: backports' version wherever it has one;
# a few libraries are newer there, and the L1's library path takes them
# first, which the older QEMUs' binaries accept).
STOCK11_ROOT=
if [ "$SIZE_E" != 0 ]; then
	deb_apt_init trixie-bpo-arm64 arm64 "trixie trixie-backports"
	deb_apt_update
	STOCK11_VERSION=$(deb_apt_cache policy qemu-system-arm | sed -n 's/^ *\([^ ]*~bpo[^ ]*\) .*/\1/p' | head -n 1)
	[ -n "$STOCK11_VERSION" ] || nested_die "trixie-backports has no qemu-system-arm for arm64"
	STOCK11_ROOT=$E2E_CACHE/stock11-root
	qemu_root "$STOCK11_ROOT" "$STOCK11_VERSION" stock11 -t trixie-backports --no-install-recommends qemu-system-arm
	echo "stock QEMU 11.1: qemu-system-arm $STOCK11_VERSION (arm64, trixie-backports), $QEMU_ROOT_DEBS packages"
fi
step_end
if [ -n "$FETCH_ONLY" ]; then
	print_step_times
	exit 0
fi

# The patched QEMU and the aarch64 vgicd.  build-qemu.sh takes the
# heavy-work lock around its heavy steps itself.
step_begin "patched QEMU (qemu-patch/build-qemu.sh --base $QEMU_BASE)"
if [ "$QEMU_BASE" = 10.0 ]; then QEMU_OUT=$VGICD_CACHE/qemu/out; else QEMU_OUT=$VGICD_CACHE/qemu/$QEMU_BASE/out; fi
bash qemu-patch/build-qemu.sh --base "$QEMU_BASE" "$QEMU_OUT" >"$NESTED_OUT/build-qemu.log" 2>&1 ||
	{ tail -n 30 "$NESTED_OUT/build-qemu.log" >&2; nested_die "build-qemu.sh failed (log $NESTED_OUT/build-qemu.log)"; }
ANALYZE=$VGICD_CACHE/qemu/src/pristine/scripts/analyze-migration.py
[ -f "$ANALYZE" ] || nested_die "no $ANALYZE (the QEMU source build-qemu.sh unpacks)"
VGICD_BIN=$(find "$QEMU_OUT/vgicd" -path '*/sbin/vgicd' -type f | head -n 1)
[ -n "$VGICD_BIN" ] || nested_die "no vgicd in $QEMU_OUT/vgicd"
VGICCTL_BIN=$(find "$QEMU_OUT/vgicd" -path '*/bin/vgicctl' -type f | head -n 1)
[ -n "$VGICCTL_BIN" ] || nested_die "no vgicctl in $QEMU_OUT/vgicd"
HOOK_BIN=$(find "$QEMU_OUT/vgicd" -path '*/sbin/vgicd-qemu-hook' -type f | head -n 1)
[ -n "$HOOK_BIN" ] || nested_die "no vgicd-qemu-hook in $QEMU_OUT/vgicd (the aarch64 build needs -Dlibvirt=enabled)"
grep -E 'waited|vgicd support' "$NESTED_OUT/build-qemu.log" | sort -u || true
# (e) on another base: the patched 10.0 too, as the QEMU the fleet upgrades
# from (the same vgicd serves both; the one of $QEMU_OUT is shipped).
QEMU10_OUT=
if [ "$QEMU_BASE" != 10.0 ] && [ "$SIZE_E" != 0 ]; then
	QEMU10_OUT=$VGICD_CACHE/qemu/out
	bash qemu-patch/build-qemu.sh --base 10.0 "$QEMU10_OUT" >"$NESTED_OUT/build-qemu-10.0.log" 2>&1 ||
		{ tail -n 30 "$NESTED_OUT/build-qemu-10.0.log" >&2; nested_die "build-qemu.sh --base 10.0 failed (log $NESTED_OUT/build-qemu-10.0.log)"; }
	echo "patched QEMU 10.0 for (e): $QEMU10_OUT/qemu-system-aarch64"
fi
# --qemu-deb: Debian's packaged QEMU in the minimal build's place.
PATCHED_BIN=$QEMU_OUT/qemu-system-aarch64
if [ -n "$QEMU_DEB" ]; then
	deb=$(find "$QEMU_DEB" -maxdepth 1 -name 'qemu-system-arm_*_arm64.deb' | head -n 1)
	[ -n "$deb" ] || nested_die "no qemu-system-arm_*_arm64.deb in $QEMU_DEB"
	rm -rf "$NESTED_OUT/qemu-deb-root"
	dpkg-deb -x "$deb" "$NESTED_OUT/qemu-deb-root"
	PATCHED_BIN=$NESTED_OUT/qemu-deb-root/usr/bin/qemu-system-aarch64
	echo "patched QEMU: Debian's packaging, $(basename "$deb") (Depends: $(dpkg-deb -f "$deb" Depends | grep -o 'libvgicd0[^,]*'))"
fi
step_end

step_begin "patched kernel (kernel-patch/build-kernel.sh)"
nested_patched_kernel
[ -z "$PATCHED_MISSING" ] || nested_die "no patched kernel: $PATCHED_MISSING"
echo "patched kernel: $PATCHED_IMAGE"
step_end

step_begin "initramfs (L1 and L2)"
READELF=aarch64-linux-gnu-readelf
aarch64-linux-gnu-gcc -static -O2 -Wall -Wextra -Werror -o "$NESTED_OUT/qmp" "$HERE/e2e/qmp.c"
# L2: busybox and a counter.
stage=$NESTED_OUT/rootfs-l2
initramfs_init "$stage"
initramfs_busybox "$stage" "$BUSYBOX"
initramfs_file "$stage" "$HERE/e2e/guest-init.sh" /init 0755
initramfs_pack "$stage" "$NESTED_OUT/l2.cpio"
# L1: one set of libraries for everything, Debian stable's first (the stock
# QEMU needs them; the patched QEMU and vgicd, built on Debian 12, run on
# them too), then the host's arm64 ones for what stable's set lacks.
INITRAMFS_LIBPATH="$QEMU_OUT:$STOCK_ROOT/usr/lib/aarch64-linux-gnu:$STOCK_ROOT/usr/lib:$INITRAMFS_LIBPATH"
[ -z "$STOCK11_ROOT" ] ||
	INITRAMFS_LIBPATH="$STOCK11_ROOT/usr/lib/aarch64-linux-gnu:$STOCK11_ROOT/usr/lib:$INITRAMFS_LIBPATH"
stage=$NESTED_OUT/rootfs-l1
initramfs_init "$stage"
initramfs_busybox "$stage" "$BUSYBOX"
initramfs_elf "$stage" "$STOCK_ROOT/usr/bin/qemu-system-aarch64" /usr/bin/qemu-system-stock
initramfs_elf "$stage" "$PATCHED_BIN" /usr/bin/qemu-system-patched
[ -z "$QEMU10_OUT" ] ||
	initramfs_elf "$stage" "$QEMU10_OUT/qemu-system-aarch64" /usr/bin/qemu-system-patched10
[ -z "$STOCK11_ROOT" ] ||
	initramfs_elf "$stage" "$STOCK11_ROOT/usr/bin/qemu-system-aarch64" /usr/bin/qemu-system-stock11
initramfs_elf "$stage" "$VGICD_BIN" /usr/sbin/vgicd
initramfs_elf "$stage" "$HOOK_BIN" /usr/sbin/vgicd-qemu-hook
initramfs_elf "$stage" "$VGICCTL_BIN" /usr/bin/vgicctl
initramfs_file "$stage" "$NESTED_OUT/qmp" /usr/bin/qmp 0755
initramfs_file "$stage" "$PATCHED_IMAGE" /l2/Image
initramfs_file "$stage" "$NESTED_OUT/l2.cpio" /l2/initrd
initramfs_file "$stage" "$HERE/e2e/l1-init.sh" /init 0755
initramfs_file "$stage" "$HERE/lib/e2e-lines.sh" /lib/e2e-lines.sh 0644
initramfs_pack "$stage" "$NESTED_OUT/l1.cpio"
echo "L1 initramfs: $(du -h "$NESTED_OUT/l1.cpio" | cut -f1), $(find "$stage" -type f | wc -l) files"
step_end

step_begin "boot L1 + scenarios (a) ${SIZES_A}, (b) ${SIZE_B}, (c) ${SIZES_C}, (d) ${SIZES_D:-none}, (e) ${SIZE_E}"
LOG=$NESTED_OUT/console.log
echo "booting $PATCHED_IMAGE (console: $LOG, timeout ${TIMEOUT}s)"
rc=0
NESTED_SMP=2 NESTED_MEM=3G nested_boot "$PATCHED_IMAGE" "$NESTED_OUT/l1.cpio" "$LOG" "$TIMEOUT" \
	"loglevel=3 e2e_a=$SIZES_A e2e_b=$SIZE_B e2e_c=$SIZES_C e2e_reps=$REPS e2e_c_vmdesc=$C_VMDESC e2e_d=${SIZES_D:-0} e2e_d_hops=$D_HOPS e2e_e=$SIZE_E e2e_e_all=$E_ALL e2e_pbase=$QEMU_BASE$E2E_MACHINE" || rc=$?
step_end
[ $rc -ne 124 ] || echo "L1 timed out after ${TIMEOUT}s"

step_begin "analysis (analyze-migration.py, vgicctl dump, trace events)"
arc=0
# A native vgicctl for `vgicctl dump` of the streams: the test command's
# build when it is there, else one built for this (vgicctl alone).
VGICCTL=$VGICD_BUILD/gcc/vgicctl/vgicctl
if [ ! -x "$VGICCTL" ]; then
	[ -f "$VGICD_BUILD/e2e-host/build.ninja" ] ||
		heavy meson setup "$VGICD_BUILD/e2e-host" "$VGICD_ROOT" -Dman=disabled >/dev/null
	heavy ninja -C "$VGICD_BUILD/e2e-host" vgicctl/vgicctl >/dev/null
	VGICCTL=$VGICD_BUILD/e2e-host/vgicctl/vgicctl
fi
/usr/bin/python3 "$HERE/e2e/analyze.py" --log "$LOG" --out "$NESTED_OUT/files" --vgicctl "$VGICCTL" \
	--analyze "$ANALYZE" --a "$SIZES_A" --b "$SIZE_B" --c "$SIZES_C" --reps "$REPS" \
	--c-vmdesc "$C_VMDESC" --d "$SIZES_D" --d-hops "$D_HOPS" --e "$SIZE_E" --e-all "$E_ALL" --e-patched "$QEMU_BASE" \
	--results "$NESTED_OUT/results.json" ${ENFORCE:+--enforce-target} || arc=$?
step_end

print_step_times
T_END=$(nested_clock)
printf '  %-44s %7.1f s (%.1f s waiting for the heavy-work lock)\n' "total" \
	"$(echo "$T_END - $T_START" | bc)" "$(heavy_waited)"
if [ $rc -ne 0 ] || [ $arc -ne 0 ]; then
	echo "qemu e2e tier: FAIL (L1 status $rc, analysis status $arc; console $LOG)"
	exit 1
fi
echo "qemu e2e tier: PASS"
