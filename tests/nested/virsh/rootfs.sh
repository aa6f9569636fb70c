#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# rootfs.sh - print the path of the Debian 13 (trixie) arm64 root file
# system of the virsh tier's L1 machine, building it first if the cache
# lacks it.
#
#   tests/nested/virsh/rootfs.sh [--stack trixie|backports]
#                                      # path on stdout, progress on stderr
#
# --stack backports (run-virsh-e2e.sh --stack): the same trixie root with
# trixie-backports among its sources and libvirt and QEMU taken from it
# (an apt pin on their source packages, which stays in the tree as an
# operator's would), and everything else from trixie: what a host that
# takes the newest libvirt and QEMU from backports runs.
#
# What an arm64 KVM host of the project's users has, from Debian's archive:
# systemd as PID 1 with udev and the system bus, AppArmor and its profiles,
# libvirt's daemon with the QEMU driver, and Debian's stock qemu-system-arm.
# Not the project's packages: L1 installs them itself with dpkg -i, where
# their maintainer scripts meet a booted systemd and a kernel with AppArmor
# (the operator's path), as it installs the patched QEMU.  The libraries
# those packages depend on are here, so dpkg -i needs no archive.
#
# The tree is built by mmdebstrap on this amd64 machine: the arm64
# maintainer scripts run under qemu-user-static through binfmt_misc (the
# qemu-aarch64 entry is registered if the kernel lacks it, with the F flag,
# so that it works inside the chroot).  It lives under
# ${VGICD_CACHE:-/var/cache/vgicd}/nested/virsh, keyed by a hash of
# everything that goes into it, and is only read afterwards: each run
# copies it into a fresh disk image (mke2fs -d).  The mirrors are this
# machine's apt sources, read at run time.
#
# What L1 never reads is not unpacked: manuals, translations and
# documentation (copyrights kept), and udev's hardware database (L1's udev
# then names no device vendors, which nothing in the tier reads).  The tree
# shrinks from 384 to 294 MiB and its disk image with it; the build's CPU
# time does not (9m05s against 9m08s of user time: it is dpkg and the
# maintainer scripts, emulated, not the files).
set -euo pipefail
. "$(dirname "$0")/../../../scripts/lib/common.sh"

STACK=trixie
while [ $# -gt 0 ]; do
	case $1 in
	--stack) STACK=${2:-}; shift 2 ;;
	-h | --help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
	*) echo "rootfs.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
case $STACK in
trixie | backports) ;;
*) echo "rootfs.sh: --stack takes trixie or backports" >&2; exit 2 ;;
esac
SUITE=trixie
CACHE=$VGICD_CACHE/nested/virsh
# Bump to force a rebuild when the recipe below changes.
RECIPE=2
# The backports stack's pin: libvirt's and QEMU's binary packages (all of
# them, or apt would mix a 12.9 daemon with 11.3 drivers) from
# trixie-backports, which apt otherwise only takes when asked by name.
PIN=()
[ "$STACK" = trixie ] ||
	PIN=('Package: src:libvirt src:qemu' "Pin: release n=$SUITE-backports" 'Pin-Priority: 990')
PACKAGES=(
	systemd-sysv udev dbus procps iproute2 kmod
	apparmor
	libvirt-daemon-system libvirt-daemon-driver-qemu libvirt-clients
	qemu-system-arm
	# vgicd's and libvgicd0's dependencies (their Depends:, minus the above)
	libglib2.0-0t64 libsystemd0 libvirt0 libxml2 libjson-glib-1.0-0
)
IFS=, INCLUDE="${PACKAGES[*]}"
unset IFS

mapfile -t MIRRORS < <(deb_suite_lines "$SUITE")
[ ${#MIRRORS[@]} -gt 0 ] || { echo "rootfs.sh: no deb sources in $DEBIAN_SOURCES" >&2; exit 1; }
STACK_OPTS=()
if [ ${#PIN[@]} -gt 0 ]; then
	# The main archive's line renamed to trixie-backports (the host's
	# -updates and -security lines have no backports counterpart).
	n=${#MIRRORS[@]}
	mapfile -t -O "$n" MIRRORS < <(deb_suite_lines "$SUITE-backports" | awk -v s="$SUITE-backports" '$4 == s')
	[ ${#MIRRORS[@]} -gt "$n" ] || { echo "rootfs.sh: no main archive line for $SUITE-backports" >&2; exit 1; }
	# Written before apt's first update, so the pin decides what mmdebstrap
	# installs (the hook's printf arguments quoted for the shell it runs in).
	STACK_OPTS=(--setup-hook="mkdir -p \"\$1/etc/apt/preferences.d\" && printf '%s\\n' $(printf '%q ' "${PIN[@]}")> \"\$1/etc/apt/preferences.d/vgicd-stack.pref\"")
fi
key=$(printf '%s\n' "$RECIPE" "$SUITE" "$INCLUDE" "${DEB_SCRATCH_ROOT_OPTS[@]}" "${MIRRORS[@]}" "${STACK_OPTS[@]}" | sha256sum | cut -c1-12)
# build_root ROOT - the tree, by mmdebstrap.  First binfmt_misc: mounted,
# and qemu-aarch64 registered (qemu-user-static's own line, which names its
# interpreter and the F flag).  The hostname and machine-id are fixed so
# that every boot looks the same; the disk is /dev/vda.  Nothing in the
# tree starts on its own beyond what Debian enables: L1's test unit
# (run-virsh-e2e.sh) is added per run.
build_root() {
	conf=/usr/lib/binfmt.d/qemu-aarch64.conf
	[ -r "$conf" ] || { echo "rootfs.sh: no $conf (package qemu-user-static)" >&2; exit 1; }
	if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
		mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc ||
			{ echo "rootfs.sh: cannot mount binfmt_misc (arm64 maintainer scripts cannot run here)" >&2; exit 1; }
	fi
	if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
		cat "$conf" >/proc/sys/fs/binfmt_misc/register ||
			{ echo "rootfs.sh: cannot register qemu-aarch64 with binfmt_misc" >&2; exit 1; }
		echo "rootfs.sh: registered qemu-aarch64 with binfmt_misc" >&2
	fi
	echo "rootfs.sh: building $CACHE/rootfs-$key (mmdebstrap $SUITE arm64, ${#PACKAGES[@]} packages and their dependencies)" >&2
	heavy mmdebstrap --quiet --mode=root --variant=minbase --architectures=arm64 \
		"${DEB_SCRATCH_ROOT_OPTS[@]}" \
		--include="$INCLUDE" \
		--aptopt='APT::Install-Recommends "false"' \
		--aptopt='Acquire::Languages "none"' \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-include=/usr/share/doc/*/copyright' \
		--dpkgopt='path-exclude=/usr/lib/udev/hwdb.d/*' \
		"${STACK_OPTS[@]}" \
		--customize-hook='echo vgicd-l1 > "$1/etc/hostname"' \
		--customize-hook='rm -f "$1/etc/machine-id"; echo 5b2f6c6e0d9d4c3aa1f2b4f3c0e1d2a7 > "$1/etc/machine-id"' \
		--customize-hook='echo "/dev/vda / ext4 rw,relatime 0 1" > "$1/etc/fstab"' \
		"$SUITE" "$1" "${MIRRORS[@]}" >&2
}
deb_cached_root "$CACHE/rootfs-$key" build_root
