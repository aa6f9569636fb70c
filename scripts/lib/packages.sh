# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# packages.sh - the Debian packages each tier needs, declared here and
# nowhere else, and need_packages to install the missing ones.  Sourced
# (by common.sh).
#
# Each list is complete for its tier on a fresh minimal Debian 12 root
# (../shared/tools/fresh-root checks that): a package that only happens to
# be on a developer's machine is a failure on a new one.  Where a package
# is there for a reason that is not obvious, the reason is beside it.

# shellcheck disable=SC2034  # the lists are for the scripts that source this

# Building the project, and its meson test suites.
PKGS_BUILD=(build-essential meson ninja-build pkg-config libglib2.0-dev libsystemd-dev
	libxml2-dev libvirt-dev libxml2-utils scdoc dbus systemd bc python3
	python3-yaml	# tests/monitoring: the alerting rules, read as data
	libjson-glib-dev	# vgicctl --json
	bash-completion		# where vgicctl's completion goes (its completionsdir)
	procps		# kill(1): vgicd.service's ExecReload=, checked by the units test
	shellcheck)	# the scripts suite
# The benchmark's plot (bench/run-bench.sh: gnuplot's pngcairo terminal).
PKGS_BENCH=(gnuplot-nox)
# The clang build and libFuzzer (scripts/test.sh).
PKGS_FUZZ=(clang libclang-rt-14-dev)
# The aarch64 cross build of the project, and qemu-user for its tests.
PKGS_CROSS=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross libglib2.0-dev:arm64
	libsystemd-dev:arm64 libxml2-dev:arm64 libvirt-dev:arm64 libjson-glib-dev:arm64 qemu-user)
# A booted systemd in nspawn (tests/systemd/run-nspawn.sh).
PKGS_NSPAWN=(mmdebstrap systemd-container
	procps)		# pgrep: finding the container's PID 1
# The Debian packages (tests/debian/build-deb.sh).
PKGS_DEB=(dpkg-dev debhelper dh-apparmor lintian fakeroot)
# The Debian packages built in clean chroots of Debian 12 and 13, native and
# cross (tests/debian/build-chroot.sh).  Everything else (debhelper, the
# build dependencies, lintian) is installed inside the chroot, from the
# suite built for.
PKGS_CHROOT=(mmdebstrap
	dpkg-dev	# dpkg-parsechangelog: the version, before any chroot exists
	git)		# the tree's files, for the source package
# Compiling the AppArmor profiles and the SELinux module of Debian 12 and 13
# with their own tools, unpacked (tests/security/check-policies.sh).
PKGS_POLICY=(make m4 dpkg-dev)
# Two libvirtd (tests/libvirt/run-libvirtd.sh).
PKGS_LIBVIRT=(libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients qemu-system-x86
	qemu-system-arm)
# The QEMU series' build check and the patched QEMU (qemu-patch/).
PKGS_QEMU=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross pkgconf:arm64 libglib2.0-dev:arm64
	zlib1g-dev:arm64 libfdt-dev:arm64 libpixman-1-dev:arm64 libsystemd-dev:arm64
	ccache ninja-build meson pkg-config dpkg-dev git bc python3-venv
	libxml2-dev:arm64 libvirt-dev:arm64	# the aarch64 hook the QEMU e2e tier runs
	libjson-glib-dev:arm64)	# vgicctl, which the same cross build configures
# QEMU's own tests on the series and its base, a native TCG build
# (qemu-patch/check-qemu-tests.sh): the host's compiler and libraries, and
# sphinx for the docs (QEMU 10 wants sphinx >= 3.4.3 and its rtd theme).
# The -dev packages name the host's architecture: PKGS_QEMU's arm64 ones
# would otherwise pass for installed.
PKGS_QEMU_TESTS=(gcc make ccache ninja-build pkg-config git bc python3-venv
	python3-sphinx python3-sphinx-rtd-theme
	ipxe-qemu	# the network boot ROMs, which Debian's +ds source leaves out
	libglib2.0-dev zlib1g-dev libfdt-dev libpixman-1-dev)
PKGS_QEMU_TESTS=("${PKGS_QEMU_TESTS[@]/%-dev/-dev:$(dpkg --print-architecture)}")
# Debian 13's qemu packaging with the series (qemu-patch/build-debian-qemu.sh):
# the host only makes the trixie chroot; quilt, the cross toolchain and
# qemu's build dependencies are installed inside it, not here.
PKGS_QEMU_DEB=(mmdebstrap
	"${PKGS_QEMU[@]}")	# --check's libvgicd: the aarch64 cross build (qp_libvgicd_aarch64)
# The kernel series and its selftest (kernel-patch/build-kernel.sh).
PKGS_KERNEL=(linux-source-6.1 gcc-aarch64-linux-gnu libc6-dev-arm64-cross ccache make
	flex bison bc libssl-dev libelf-dev xz-utils git perl python3 cpio util-linux
	rsync)		# the selftest's make headers_install
# The operator's kernel packages (kernel-patch/build-debian-kernel.sh):
# Debian's arm64 config built with `make bindeb-pkg`.
PKGS_KERNEL_DEB=(gcc-aarch64-linux-gnu
	gcc-arm-linux-gnueabihf	# the 32-bit compat vDSO Debian's config has (COMPAT_VDSO)
	make flex bison bc libelf-dev xz-utils git perl
	python3 cpio rsync
	libssl-dev		# certs/extract-cert and scripts/sign-file on the build host
	libssl-dev:arm64	# a cross linux-headers package rebuilds sign-file for arm64
	dwarves			# pahole: Debian's config has BTF (DEBUG_INFO_BTF)
	kmod			# depmod, run by modules_install
	dpkg-dev debhelper	# dpkg-buildpackage and the dh_* of the generated debian/rules
	time)			# /usr/bin/time: --measure's CPU times
# Booting arm64 kernels under TCG (the nested tiers, run-selftest.sh).
PKGS_BOOT=(qemu-system-arm cpio
	ipxe-qemu)	# efi-virtio.rom, which qemu-system-arm only recommends
# The nested tiers' aarch64 userland.
PKGS_NESTED=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross libglib2.0-dev:arm64
	libsystemd-dev:arm64 libjson-glib-dev:arm64 bc python3)

# virsh migrate inside the nested arm64 machine (tests/nested/run-virsh-e2e.sh):
# its Debian 13 arm64 root is made with mmdebstrap on this amd64 host, whose
# maintainer scripts run under qemu-user through binfmt_misc; mke2fs -d
# (e2fsprogs) turns it into L1's disk without a loop mount.
# mmdebstrap wants arch-test to see that arm64 runs here.
PKGS_VIRSH_ROOT=(mmdebstrap arch-test qemu-user-static)
PKGS_VIRSH=("${PKGS_VIRSH_ROOT[@]}" e2fsprogs
	"${PKGS_BOOT[@]}" "${PKGS_CHROOT[@]}" "${PKGS_QEMU[@]}" "${PKGS_KERNEL[@]}")
# need_packages PKG... - install the Debian packages that are missing (an
# :arm64 one adds the architecture first).  apt-get update runs at most
# once per run (the mark is exported to the scripts this one starts), and
# only if something is missing, so a warm machine pays nothing.
need_packages() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "missing packages: ${missing[*]} (run as root to install them)" >&2
		return 1
	fi
	case " ${missing[*]}" in *:arm64*) enable_arm64 ;; esac
	if [ -z "${APT_UPDATED:-}" ]; then
		# No install on stale lists: stop here, with or without set -e.
		host_apt_get update -qq || return 1
		export APT_UPDATED=1
	fi
	echo "installing: ${missing[*]}"
	host_apt_get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# need_promtool - put promtool first on PATH: the rule checker of Debian's
# prometheus package (tests/monitoring), unpacked from that package into
# $VGICD_CACHE/promtool/VERSION.  Not installed: the package would also
# install and start a Prometheus server on the machine running the tests.
need_promtool() {
	local root=${VGICD_CACHE:-/var/cache/vgicd}/promtool version dir
	version=$(apt-cache policy prometheus 2>/dev/null | awk '/Candidate:/ { print $2 }')
	if [ -z "$version" ] || [ "$version" = "(none)" ]; then
		if [ -z "${APT_UPDATED:-}" ]; then
			host_apt_get update -qq || return 1
			export APT_UPDATED=1
		fi
		version=$(apt-cache policy prometheus | awk '/Candidate:/ { print $2 }')
	fi
	[ -n "$version" ] && [ "$version" != "(none)" ] ||
		{ echo "need_promtool: no prometheus package in this machine's apt sources" >&2; return 1; }
	dir=$root/${version//:/%3a}
	if [ ! -x "$dir/usr/bin/promtool" ]; then
		rm -rf "$dir.tmp" && mkdir -p "$dir.tmp" && chmod 755 "$dir.tmp"
		# apt-get download writes as _apt where it can (the folder is 755
		# root: it falls back to root, with a notice that is no error).
		(cd "$dir.tmp" && host_apt_get download -qq "prometheus=$version" 2>&1 |
			grep -v 'Download is performed unsandboxed' >&2) || true
		dpkg-deb -x "$dir.tmp"/prometheus_*.deb "$dir.tmp/root" &&
			mkdir -p "$dir/usr/bin" &&
			cp "$dir.tmp/root/usr/bin/promtool" "$dir/usr/bin/" &&
			rm -rf "$dir.tmp" ||
			{ echo "need_promtool: cannot unpack prometheus $version" >&2; return 1; }
	fi
	PATH=$dir/usr/bin:$PATH
	export PATH
}

# The locks of this host's apt and dpkg.  On a fresh cloud machine
# unattended-upgrades or cloud-init hold them for minutes after boot, so
# host_apt_get waits for them, up to VGICD_APT_LOCK_TIMEOUT seconds, rather
# than fail at once.
VGICD_APT_LOCK_TIMEOUT=${VGICD_APT_LOCK_TIMEOUT:-300}
APT_LOCKS=(/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock
	/var/cache/apt/archives/lock)

# apt_lock_holders - "  FILE: PID (COMMAND)" for each of APT_LOCKS that a
# process holds, one a line; nothing when they are all free.  apt and dpkg
# lock with fcntl(2), which /proc/locks lists by inode.
apt_lock_holders() {
	local f maj min ino id pid
	for f in "${APT_LOCKS[@]}"; do
		# The lock's MAJOR:MINOR:INODE, as /proc/locks writes it.
		read -r maj min ino < <(stat -c '%Hd %Ld %i' "$f" 2>/dev/null) || continue
		id=$(printf '%02x:%02x:%s' "$maj" "$min" "$ino")
		pid=$(awk -v id="$id" '$2 != "->" && $6 == id { print $5; exit }' /proc/locks)
		[ -n "$pid" ] || continue
		echo "  $f: $pid ($(cat "/proc/$pid/comm" 2>/dev/null || echo "?"))"
	done
}

# apt_locks_wait WHAT DEADLINE - wait until none of APT_LOCKS is held, or
# until $SECONDS reaches DEADLINE: says that WHAT waits and for whom, and
# at the deadline fails naming the holder.
apt_locks_wait() {
	local what=$1 deadline=$2 t0=$SECONDS holders waiting=
	while holders=$(apt_lock_holders) && [ -n "$holders" ]; do
		if [ $SECONDS -ge "$deadline" ]; then
			printf '%s\n' "$what: apt's lock is still held after $VGICD_APT_LOCK_TIMEOUT s, by:" \
				"$holders" "(let it finish, or wait longer: VGICD_APT_LOCK_TIMEOUT=SECONDS)" >&2
			return 1
		fi
		[ -n "$waiting" ] || printf '%s\n' "$what: waiting for apt's lock, up to $VGICD_APT_LOCK_TIMEOUT s (VGICD_APT_LOCK_TIMEOUT); held by:" \
			"$holders" >&2
		waiting=1
		sleep 1
	done
	[ -z "$waiting" ] || echo "$what: apt's lock is free after $((SECONDS - t0)) s" >&2
}

# host_apt_get ARGS... - apt-get ARGS on this host's own apt state, waiting
# up to VGICD_APT_LOCK_TIMEOUT seconds for its locks (apt_locks_wait).  apt
# waits for the dpkg lock itself (DPkg::Lock::Timeout) but apt-get update
# does not wait for the lists lock, so the wait is here, before apt-get
# runs, and again if apt-get failed while a lock is held (taken in
# between).  Not for the private apt states of debian-apt.sh, which
# nothing else locks.
host_apt_get() {
	local deadline=$((SECONDS + VGICD_APT_LOCK_TIMEOUT))
	while :; do
		apt_locks_wait "apt-get $1" "$deadline" || return 1
		DEBIAN_FRONTEND=noninteractive \
			apt-get -o DPkg::Lock::Timeout=$((deadline > SECONDS ? deadline - SECONDS : 0)) "$@" &&
			return 0
		# Failed: unless someone took the lock in between, that is the answer.
		[ -n "$(apt_lock_holders)" ] || return 1
	done
}

# enable_arm64 - add the arm64 foreign architecture (for the cross builds'
# -dev packages); the next need_packages updates the lists.  dpkg does
# not lock for it (tried: it succeeds while another process holds both
# dpkg locks), so it waits for apt's locks first, as apt-get does: an apt
# or dpkg run by someone else would otherwise see the architectures change
# under it.
enable_arm64() {
	if ! dpkg --print-foreign-architectures | grep -qx arm64; then
		apt_locks_wait "dpkg --add-architecture" $((SECONDS + VGICD_APT_LOCK_TIMEOUT)) || return 1
		dpkg --add-architecture arm64
		APT_UPDATED=
	fi
}
