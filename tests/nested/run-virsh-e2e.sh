#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# run-virsh-e2e.sh - the virsh tier: libvirt, the project's arm64 packages
# and AppArmor, inside an arm64 machine (L1) booted at EL2 under
# qemu-system-aarch64 (TCG) on the patched 6.12 kernel, with systemd as its
# PID 1 and a real KVM guest (L2) that libvirt starts confined.
#
# From a fresh Debian 12 machine, as root:
#   bash tests/nested/run-virsh-e2e.sh [--timeout SECONDS] [--vcpus N] [--vcpus-big N]
#        [--scenarios f,b,e,d,c] [--stack trixie|backports]
#
# --stack backports runs the same scenarios on the newest stack Debian
# ships: L1 and L2 on the patched 7.3 kernel (trixie-backports' source and
# kernel-patch/7.3), libvirt 12.9 and the stock QEMU 11.1 from
# trixie-backports (virsh/rootfs.sh --stack), everything else trixie's.
# Host A's patched QEMU stays 10.0 (qemu-patch/ has no 11.1 series: see
# its README), so (d)'s mixed fleet crosses from patched 10.0 to stock
# 11.1 on the 10.0 machine type.  Logs go to $VGICD_BUILD/virsh-e2e-backports.
#
# Scenario (a) always runs; --scenarios names the others to run (default:
# all, as CI runs it).  The rest are reported as
# not run.
#
# L1 is Debian 13 arm64 (virsh/rootfs.sh: systemd, udev, AppArmor, libvirt,
# Debian's stock qemu-system-arm), on a copy-on-write view of a cached disk
# image.  A second disk carries what this machine built: the project's
# trixie/arm64 packages (tests/debian/build-chroot.sh), the patched minimal
# QEMU (qemu-patch/build-qemu.sh), the guest's kernel and initramfs, and
# virsh/l1-run.sh, which systemd runs at boot (systemd.run=) and which
# prints E2E-CHECK lines on the console.  What it checks is listed at the
# top of virsh/l1-run.sh.
#
# Environment: VGICD_CACHE (default /var/cache/vgicd), VGICD_BUILD (logs
# go to $VGICD_BUILD/virsh-e2e), NESTED_PATCHED_IMAGE (a prebuilt patched
# kernel), VGICD_VIRSH_DEBS (a folder with the trixie/arm64 packages;
# default: build them).
# Exit status: 0 when every check passed, 1 otherwise.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib/common.sh"
. "$HERE/lib/initramfs.sh"
. "$HERE/lib/kernel.sh"
. "$HERE/lib/boot.sh"
cd "$VGICD_ROOT"

TIMEOUT=${VGICD_VIRSH_TIMEOUT:-3600}
VCPUS=4
VCPUS_BIG=32
SCENARIOS=f,b,e,d,c
STACK=trixie
while [ $# -gt 0 ]; do
	case $1 in
	--timeout) TIMEOUT=$2; shift 2 ;;
	--vcpus) VCPUS=$2; shift 2 ;;
	--vcpus-big) VCPUS_BIG=$2; shift 2 ;;
	--scenarios)
		echo "$2" | grep -qxE '[fbedc](,[fbedc])*' ||
			{ echo "run-virsh-e2e.sh: --scenarios takes a comma-separated list of f, b, e, d, c" >&2; exit 2; }
		SCENARIOS=$2; shift 2 ;;
	--stack)
		case ${2:-} in trixie | backports) ;; *) echo "run-virsh-e2e.sh: --stack takes trixie or backports" >&2; exit 2 ;; esac
		STACK=$2; shift 2 ;;
	-h | --help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
	*) echo "run-virsh-e2e.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" -eq 0 ] || { echo "run-virsh-e2e.sh: run it as root" >&2; exit 2; }

NESTED_OUT=$VGICD_BUILD/virsh-e2e
if [ "$STACK" = backports ]; then
	NESTED_BASE=7.3
	NESTED_OUT=$VGICD_BUILD/virsh-e2e-backports
	# scripts/test.sh's background build is the 6.12 kernel.
	unset NESTED_PATCHED_ENV
fi
mkdir -p "$NESTED_OUT"
T_START=$(nested_clock)

step_begin "packages"
need_packages "${PKGS_VIRSH[@]}" "${PKGS_NESTED[@]}"
step_end

step_begin "the project's trixie/arm64 packages"
DEBS=${VGICD_VIRSH_DEBS:-}
if [ -z "$DEBS" ]; then
	bash tests/debian/build-chroot.sh trixie arm64 >"$NESTED_OUT/build-chroot.log" 2>&1 ||
		{ tail -n 30 "$NESTED_OUT/build-chroot.log" >&2; nested_die "build-chroot.sh trixie arm64 failed"; }
	DEBS=$VGICD_CACHE/deb-chroot/trixie-arm64
fi
ls "$DEBS"/vgicd_*_arm64.deb "$DEBS"/libvgicd0_*_arm64.deb >/dev/null ||
	nested_die "no vgicd and libvgicd0 arm64 packages in $DEBS"
(cd "$DEBS" && ls vgicd_*_arm64.deb libvgicd0_*_arm64.deb)
step_end

step_begin "patched QEMU (qemu-patch/build-qemu.sh)"
QEMU_OUT=$VGICD_CACHE/qemu/out
bash qemu-patch/build-qemu.sh "$QEMU_OUT" >"$NESTED_OUT/build-qemu.log" 2>&1 ||
	{ tail -n 30 "$NESTED_OUT/build-qemu.log" >&2; nested_die "build-qemu.sh failed (log $NESTED_OUT/build-qemu.log)"; }
step_end

# The nested tiers' kernel: its config has what a booted Debian host
# needs (kernel-patch/config/arm64-l1-host.config).
step_begin "patched $NESTED_BASE kernel (kernel-patch/build-kernel.sh)"
nested_patched_kernel
[ -z "$PATCHED_MISSING" ] || nested_die "$PATCHED_MISSING"
[ -f "$PATCHED_IMAGE" ] || nested_die "no patched kernel image ($PATCHED_IMAGE)"
echo "patched kernel: $PATCHED_IMAGE"
step_end

step_begin "L1 root (Debian 13 arm64, $STACK stack, virsh/rootfs.sh)"
ROOTFS=$(bash "$HERE/virsh/rootfs.sh" --stack "$STACK")
# The disk image of that tree, made once per tree (its name is the tree's
# key); every boot writes to a throw-away overlay (snapshot=on).
ROOT_IMG=$ROOTFS.ext4
if [ ! -s "$ROOT_IMG" ]; then
	heavy mke2fs -q -t ext4 -L vgicd-l1 -E root_owner=0:0 -d "$ROOTFS" "$ROOT_IMG.tmp" 6G
	mv "$ROOT_IMG.tmp" "$ROOT_IMG"
fi
echo "L1 root: $ROOT_IMG ($(du -h "$ROOT_IMG" | cut -f1) used)"
step_end

step_begin "payload disk"
BUSYBOX=$(nested_busybox)
PAY=$NESTED_OUT/payload
rm -rf "$PAY"
mkdir -p "$PAY/debs" "$PAY/l2"
cp "$DEBS"/vgicd_*_arm64.deb "$DEBS"/libvgicd0_*_arm64.deb "$PAY/debs/"
cp "$QEMU_OUT/qemu-system-aarch64" "$PAY/qemu-patched"
cp "$PATCHED_IMAGE" "$PAY/l2/Image"
install -m 0755 "$HERE/virsh/l1-run.sh" "$PAY/l1-run.sh"
install -m 0644 "$HERE/lib/e2e-lines.sh" "$PAY/e2e-lines.sh"
stage=$NESTED_OUT/rootfs-l2
initramfs_init "$stage"
initramfs_busybox "$stage" "$BUSYBOX"
initramfs_file "$stage" "$HERE/virsh/guest-init.sh" /init 0755
initramfs_pack "$stage" "$PAY/l2/initrd"
rm -f "$NESTED_OUT/payload.ext4"
mke2fs -q -t ext4 -L payload -E root_owner=0:0 -d "$PAY" "$NESTED_OUT/payload.ext4" 256M
step_end

step_begin "boot L1 + scenarios"
LOG=$NESTED_OUT/console.log
echo "booting $PATCHED_IMAGE with $ROOT_IMG (console: $LOG, timeout ${TIMEOUT}s)"
rc=0
heavy timeout --kill-after=10 "$TIMEOUT" \
	qemu-system-aarch64 -M virt,virtualization=on,gic-version=3 \
	-cpu "$NESTED_CPU" -smp 2 -m 4G -accel tcg,thread=multi \
	-nographic -no-reboot -nic none \
	-drive "file=$ROOT_IMG,format=raw,if=virtio,snapshot=on" \
	-drive "file=$NESTED_OUT/payload.ext4,format=raw,if=virtio,readonly=on" \
	-kernel "$PATCHED_IMAGE" \
	-append "console=ttyAMA0 root=/dev/vda rw rootwait panic=-1 loglevel=4 systemd.show_status=0 systemd.mount-extra=/dev/vdb:/payload:ext4:ro systemd.run=/payload/l1-run.sh systemd.run_success_action=poweroff systemd.run_failure_action=poweroff systemd.setenv=VIRSH_VCPUS=$VCPUS systemd.setenv=VIRSH_VCPUS_BIG=$VCPUS_BIG systemd.setenv=VIRSH_SCENARIOS=$SCENARIOS systemd.setenv=VIRSH_STACK=$STACK" \
	</dev/null >"$LOG" 2>&1 || rc=$?
step_end
[ $rc -ne 124 ] || echo "L1 timed out after ${TIMEOUT}s"

tr -d '\r' <"$LOG" | grep -aE '^E2E-(CHECK|TIME|TABLE|HOOK|DONE)|^E2E: .*not run: scenarios' || true
print_step_times
printf '  %-44s %7.1f s (%.1f s waiting for the heavy-work lock)\n' "total" \
	"$(echo "$(nested_clock) - $T_START" | bc)" "$(heavy_waited)"
done_line=$(tr -d '\r' <"$LOG" | grep -a '^E2E-DONE:' | tail -n 1)
if [ "$rc" -ne 0 ] || [ "$done_line" != "E2E-DONE: fails=0" ]; then
	echo "virsh tier: FAIL (L1 status $rc, ${done_line:-no E2E-DONE line}; console $LOG)"
	exit 1
fi
echo "virsh tier: PASS (scenarios a,$SCENARIOS; $STACK stack)"
