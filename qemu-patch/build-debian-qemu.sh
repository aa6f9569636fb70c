#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# build-debian-qemu.sh - the production QEMU: Debian 13's own qemu source
# package with the series added to its quilt stack, built for arm64 by
# Debian's own debian/rules, in a clean trixie chroot.
#
#   bash qemu-patch/build-debian-qemu.sh [--check] [--targets=all|arm|aarch64]
#                                        [--libvgicd-debs=DIR] [--base=10.0|10.2]
#
# Without --check: the .debs of Debian's qemu-system-arm (and of every
# package its exact-version dependencies tie to it) for arm64, version
# DEBIAN+vgicdN, in ${VGICD_CACHE:-/var/cache/vgicd}/qemu/debian/out
# (qemu/10.2/debian/out for --base=10.2).
# With --check (CI, scripts/test.sh): only that the whole quilt stack
# applies with no fuzz and that Debian's configure step of the system
# build ends with "vgicd support: YES"; nothing is compiled.
#
# Theory of operation
#
# Debian's qemu packaging decides its configure options in debian/control:
# a comment "# --enable-FOO<TAB>ARCH..." above each build dependency, which
# debian/extract-config-opts turns into options of the system build (b/qemu)
# only; the microvm, xen and static user builds never read them.  So vgicd
# is enabled the way Debian enables every optional library: one comment and
# one build dependency, "libvgicd-dev (>= the version of libvgicd/meson.build) [arm64]", in debian/control
# and in debian/control-in (which the clean target regenerates it from).
# arm64 only: the series refuses --enable-vgicd on other hosts (the KVM
# GICv3 exists nowhere else), and it would only make every other
# architecture build-depend on a library it never links.  The option is
# off unless asked for, so "--enable-vgicd" is what makes the package
# vgicd's; a missing libvgicd then fails the build instead of giving a
# QEMU without vgicd under vgicd's version.
#
# The series goes into debian/patches/vgicd/, after Debian's own patches in
# debian/patches/series; the source is unpacked without Debian's patches
# applied (dpkg-source --skip-patches) so that "quilt push -a --fuzz=0"
# proves the whole stack, Debian's and ours, applies with exact context.
# Whatever qemu-patch/NNNN-*.patch holds (not the cover letter) goes in.
#
# The version gets "+vgicdN" (changelog entry written here, distribution
# trixie): above Debian's own build of the same source, so apt prefers it,
# below Debian's next upload (0+deb13u2 sorts above 0+deb13u1+vgicd1), so a
# security update replaces it with stock QEMU until this script is run again
# on the new source.  That trade-off is docs/operations.md's (§1, "When
# Debian updates QEMU").
#
# The build is a cross build from amd64 (dpkg-buildpackage --host-arch
# arm64, profile "cross") in a trixie chroot made by mmdebstrap, with
# amd64 and arm64 enabled, kept in the cache.  Debian's profiles drop what
# an arm64 KVM host does not need from it: nocheck, pkg.qemu.omit-user
# (the static qemu-user builds), pkg.qemu.omit-vdso-build-dep (the vdso
# only matters to qemu-user).  Only the architecture-dependent packages are
# built (-B): qemu-system-data is Architecture: all and Debian's own build
# of it satisfies qemu-system-arm's "qemu-system-data (>> 10.0.13+ds~)".
# Everything built from b/qemu is rebuilt, because Debian ties it together
# with exact versions: qemu-system-arm needs qemu-system-common
# (= ${binary:Version}), and the modules (qemu-block-extra,
# qemu-system-gui, qemu-system-modules-*) only load into the QEMU they were
# built with (--enable-module-upgrades checks the build stamp).
#
# --targets narrows Debian's system build for a quicker, smaller result:
# "arm" builds only qemu-system-arm's two emulators (aarch64, arm) and the
# packages tied to it, "aarch64" only qemu-system-aarch64; "all" (the
# default) is Debian's build unchanged.  It overrides three make
# variables of Debian's rules on the command line (MAKEFLAGS):
# system-packages, system-archlist-arm and QEMU_CONFIGURE_OPTIONS
# (--target-list), and leaves the other qemu-system-* packages out with
# debhelper's DH_OPTIONS.  A host that keeps other qemu-system-* packages
# installed needs "all" (they depend on qemu-system-common of their own
# version).
#
# libvgicd-dev and libvgicd0 for arm64 come from --libvgicd-debs=DIR (the
# project's packages, built anywhere), or else are cross-built here from
# this tree's debian/ in the same chroot; either way they are served to apt
# from a local repository inside the chroot.  For --check, libvgicd is the
# aarch64 cross build of qp_libvgicd_aarch64 (what build-check.sh builds
# anyway), seen through PKG_CONFIG_PATH: configure only reads its .pc.
#
# --base=10.2 builds Debian unstable's 10.2.2 source (the version lib.sh's
# qp_base pins) with qemu-patch/10.2/ the same way, for trixie, in the same
# trixie chroot: a backport, as trixie-backports' own QEMU is built.  The
# source is the one build-check.sh and build-qemu.sh fetch (qp_qemu_source,
# apt's private unstable state, checked against the signed index), not the
# chroot's apt: the chroot has trixie's suites only, so every build
# dependency comes from trixie, as on the host the packages are for.
#
# Everything lives under $VGICD_CACHE/qemu/debian (the chroot; 10.0's work
# and out) and $VGICD_CACHE/qemu/10.2/debian; the repository is only
# read.  The heavy steps (mmdebstrap, apt, configure, the builds) take the
# heavy-work lock; the mirror is the host's, read from
# /etc/apt/sources.list.d/debian.sources, with trixie for its suites.
#
# Exit status: 0 when the stack applied (and configured, or built).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

CHECK=
TARGETS=all
LIBVGICD_DEBS=
BASE=10.0
for arg in "$@"; do
	case $arg in
	--check) CHECK=1 ;;
	--targets=all | --targets=arm | --targets=aarch64) TARGETS=${arg#--targets=} ;;
	--libvgicd-debs=*) LIBVGICD_DEBS=$(realpath "${arg#*=}") ;;
	--base=10.0 | --base=10.2) BASE=${arg#--base=} ;;
	*)
		echo "usage: $0 [--check] [--targets=all|arm|aarch64] [--libvgicd-debs=DIR] [--base=10.0|10.2]" >&2
		exit 2
		;;
	esac
done
qp_base "$BASE"
[ "$(id -u)" -eq 0 ] || { echo "$0: run it as root (mmdebstrap, chroot)" >&2; exit 2; }

SUITE=trixie			# Debian 13, the host the packages are for
HOST_ARCH=arm64
# Bump when a series changes for the same Debian source.
case $BASE in 10.0) VGICD_SUFFIX=+vgicd3 ;; *) VGICD_SUFFIX=+vgicd1 ;; esac
DQ=$QP_CACHE/debian		# the chroots, shared by every base
BQ=$QP_BASE_CACHE/debian	# the base's work and out ($DQ for 10.0)
# The check and the full build have their own trees: a --check (CI, on every
# change) must not wipe a full build's hour of objects, nor one in progress.
if [ -n "$CHECK" ]; then WORK=$BQ/check; else WORK=$BQ/work; fi
# Debian's profiles that an arm64 KVM host's build does without (see above).
PROFILES=cross,nocheck,pkg.qemu.omit-user,pkg.qemu.omit-vdso-build-dep
LIBVGICD_VERSION=$(sed -n "s/^  version: '\(.*\)',\$/\1/p" "$QP_ROOT/libvgicd/meson.build")
[ -n "$LIBVGICD_VERSION" ] || { echo "no version in libvgicd/meson.build" >&2; exit 1; }

T0=$(date +%s.%N)
mkdir -p "$DQ"

# in_chroot CMD... - run CMD in the chroot, in its own mount and PID
# namespaces (the mounts and any leftover process go when it ends), with
# $WORK at /build.
in_chroot() {
	unshare --mount --propagation private --pid --fork --mount-proc="$ROOT/proc" \
		sh -c 'mount --rbind /dev "$1/dev" && mount --bind "$2" "$1/build" &&
			r=$1 && shift 2 && exec chroot "$r" /usr/bin/env -i \
			PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 \
			DEBIAN_FRONTEND=noninteractive "$@"' \
		sh "$ROOT" "$WORK" "$@"
}

# chroot_apt ARGS... - apt-get in the chroot, quiet unless it fails.
chroot_apt() {
	local log=$WORK/apt.log
	if ! heavy in_chroot apt-get -q -y --no-install-recommends "$@" >"$log" 2>&1; then
		tail -n 40 "$log" >&2
		return 1
	fi
}

# make_chroot - ROOT: a trixie buildd chroot for amd64 with arm64 added,
# with the cross toolchain and quilt, built once per recipe.  Its apt
# sources are the host's mirrors with trixie's suites (main, updates,
# security), deb and deb-src.
make_chroot() {
	local key tmp lines=()
	mapfile -t lines < <(deb_suite_lines "$SUITE" deb-src)
	[ ${#lines[@]} -gt 0 ] || { echo "no deb sources in $DEBIAN_SOURCES" >&2; return 1; }
	# Bump RECIPE when what goes into the chroot changes.
	local recipe=1 include=crossbuild-essential-arm64,quilt,fakeroot,apt-utils,pkgconf
	key=$(printf '%s\n' "$recipe" "$SUITE" "$include" "${DEB_SCRATCH_ROOT_OPTS[@]}" "${lines[@]}" | sha256sum | cut -c1-12)
	ROOT=$DQ/chroot-$key
	if [ -f "$ROOT/.vgicd-chroot-done" ]; then
		echo "chroot: $ROOT (cached)"
		return 0
	fi
	command -v mmdebstrap >/dev/null || { echo "mmdebstrap is not installed" >&2; return 1; }
	tmp=$DQ/.chroot-$key.tmp
	rm -rf "$tmp"
	heavy mmdebstrap --quiet --variant=buildd --architectures=amd64,$HOST_ARCH \
		--include="$include" "${DEB_SCRATCH_ROOT_OPTS[@]}" \
		--customize-hook='mkdir -p "$1/build"' \
		"$SUITE" "$tmp" "${lines[@]}"
	touch "$tmp/.vgicd-chroot-done"
	rm -rf "$ROOT"
	mv "$tmp" "$ROOT"
	echo "chroot: $ROOT ($(du -sh "$ROOT" | cut -f1))"
}

# fetch_source - for 10.0, the newest qemu source of trixie's suites
# (security updates included: apt-get source takes the highest version);
# for another base, the version qp_base pins, as qp_qemu_source fetched it
# from its suite.  Into $WORK/dl, once per version.  Sets DSC (its path in
# the chroot) and DEB_VER.
fetch_source() {
	local name f
	heavy in_chroot apt-get -q update >"$WORK/apt.log" 2>&1 ||
		{ tail -n 20 "$WORK/apt.log" >&2; return 1; }
	mkdir -p "$WORK/dl"
	if [ "$BASE" != 10.0 ]; then
		qp_qemu_source
		for f in "$QP_BASE_CACHE"/src/dl/qemu_*; do
			[ -f "$WORK/dl/${f##*/}" ] || cp "$f" "$WORK/dl/"
		done
		name=$(cd "$WORK/dl" && ls qemu_*.dsc)
		[ "$(printf '%s\n' "$name" | wc -l)" = 1 ] ||
			{ echo "more than one .dsc in $WORK/dl: $name" >&2; return 1; }
	else
		name=$(in_chroot apt-get -q source --print-uris qemu | sed -n "s/^'[^']*' \(qemu_[^ ]*\.dsc\) .*/\1/p")
	fi
	[ -n "$name" ] || { echo "no qemu source package in $SUITE" >&2; return 1; }
	if [ ! -f "$WORK/dl/$name" ]; then
		in_chroot sh -c 'cd /build/dl && apt-get -q source --download-only qemu' \
			>"$WORK/dl.log" 2>&1 || { tail -n 20 "$WORK/dl.log" >&2; return 1; }
	fi
	DEB_VER=$(sed -n 's/^Version: //p' "$WORK/dl/$name")
	echo "qemu source: $DEB_VER"
	case $DEB_VER in
	*":$QP_QEMU_VERSION+"*) ;;
	*) echo "warning: the series is for QEMU $QP_QEMU_VERSION, Debian has $DEB_VER" >&2 ;;
	esac
	DSC=/build/dl/$name
}

# prepare_source - unpack the source into $WORK/qemu (afresh each run,
# Debian's patches not applied), add the series to the quilt stack, push
# the whole stack with fuzz 0, then make the packaging changes: the build
# dependency and configure option in debian/control{,-in}, and the
# changelog entry.  Sets SRC (path in the chroot) and VERSION.
prepare_source() {
	local dir=$WORK/qemu p n=0 date
	rm -rf "$dir"
	in_chroot dpkg-source --skip-patches -x "$DSC" /build/qemu \
		>"$WORK/dpkg-source.log" 2>&1 ||
		{ cat "$WORK/dpkg-source.log" >&2; return 1; }
	mkdir -p "$dir/debian/patches/vgicd"
	for p in $(qp_series); do
		cp "$p" "$dir/debian/patches/vgicd/"
		echo "vgicd/$(basename "$p")" >>"$dir/debian/patches/series"
		n=$((n + 1))
	done
	echo "debian/patches/series: $(grep -vc '^vgicd/' "$dir/debian/patches/series") of Debian's, then $n of the series"
	# quilt prints each hunk that needed an offset; --fuzz=0 fails any
	# hunk whose context differs.  The log is kept for the report.
	if ! in_chroot sh -c 'cd /build/qemu && QUILT_PATCHES=debian/patches quilt push -a --fuzz=0' \
		>"$WORK/quilt.log" 2>&1; then
		tail -n 30 "$WORK/quilt.log" >&2
		echo "the quilt stack does not apply with fuzz 0 (log: $WORK/quilt.log)" >&2
		return 1
	fi
	# An offset is not fuzz (the context matched, lines earlier or later);
	# Debian's own patches have some, the series should have none.
	awk '/^Applying patch/ { vgicd = ($3 ~ /\/vgicd\//); n[vgicd]++ }
		/\(offset / { o[vgicd]++ }
		END { printf "quilt push -a --fuzz=0: %d of Debian'"'"'s patches (%d hunks at an offset), %d of the series (%d at an offset)\n", n[0], o[0], n[1], o[1] }' \
		"$WORK/quilt.log"

	# The build dependency and its configure option, in Debian's own form
	# (see the top): Build-Depends-Arch ends where Build-Depends-Indep
	# starts.
	for p in control-in control; do
		grep -q '^Build-Depends-Indep:' "$dir/debian/$p" ||
			{ echo "debian/$p: no Build-Depends-Indep: to add libvgicd-dev before" >&2; return 1; }
		sed -i "/^Build-Depends-Indep:/i\\
# vgicd: the KVM GICv3 saved and restored through vgicd (qemu-patch/ of vgicd)\\
# --enable-vgicd	arm64\\
 libvgicd-dev (>= $LIBVGICD_VERSION) [arm64]," "$dir/debian/$p"
	done
	# Keep debian/control newer than control-in, as it came: the clean
	# target would otherwise regenerate it (to the same text).
	touch "$dir/debian/control"

	VERSION=$DEB_VER$VGICD_SUFFIX
	# The entry's date: the series' last commit, so that a rebuild of the
	# same tree makes the same changelog.
	date=$(git -C "$QP_ROOT" log -1 --format=%ct -- qemu-patch 2>/dev/null || date +%s)
	{
		printf 'qemu (%s) %s; urgency=medium\n\n' "$VERSION" "$SUITE"
		printf '  * Add the vgicd series (%d patches, vgicd %s qemu-patch/): the KVM\n' "$n" "$LIBVGICD_VERSION"
		printf '    GICv3 saves and restores the in-kernel vGIC through vgicd, batched.\n'
		printf '  * Build-Depends-Arch: libvgicd-dev (>= %s) [arm64]; configure\n' "$LIBVGICD_VERSION"
		printf '    --enable-vgicd on arm64 (the system build only).\n\n'
		printf ' -- vgicd maintainers <maintainers@vgicd.example>  %s\n\n' "$(LC_ALL=C date -R -u -d "@$date")"
		cat "$dir/debian/changelog"
	} >"$dir/debian/changelog.new"
	mv "$dir/debian/changelog.new" "$dir/debian/changelog"
	echo "version: $VERSION"
	SRC=/build/qemu
}

# build_deps DIR PROFILES - install DIR's Build-Depends{,-Arch} for arm64 in
# the chroot (apt-get build-dep on the unpacked source).
build_deps() {
	chroot_apt build-dep --arch-only --host-architecture "$HOST_ARCH" -P "$2" "$1"
}

# libvgicd_for_configure - the check's libvgicd: the aarch64 cross build of
# this tree (qp_libvgicd_aarch64), copied to /build/libvgicd with a .pc that
# points there.  Sets PCDIR (in the chroot).
libvgicd_for_configure() {
	local pc prefix
	qp_libvgicd_aarch64
	rm -rf "$WORK/libvgicd"
	cp -a "$QP_LIBVGICD" "$WORK/libvgicd"
	pc=$(cd "$WORK/libvgicd" && find . -name libvgicd.pc | head -n 1)
	prefix=$(sed -n 's/^prefix=//p' "$WORK/libvgicd/$pc")
	sed -i "s|^prefix=.*|prefix=/build/libvgicd$prefix|" "$WORK/libvgicd/$pc"
	PCDIR=/build/libvgicd/$(dirname "${pc#./}")
}

# libvgicd_debs - libvgicd0 and libvgicd-dev for arm64 in a local apt
# repository at /build/repo: from --libvgicd-debs, or cross-built from this
# tree's debian/ (dpkg-buildpackage -a arm64 -B, nocheck) in the chroot.
libvgicd_debs() {
	local repo=$WORK/repo src=$WORK/vgicd-src
	rm -rf "$repo"
	mkdir -p "$repo"
	if [ -n "$LIBVGICD_DEBS" ]; then
		cp "$LIBVGICD_DEBS"/libvgicd0_*_"$HOST_ARCH".deb "$LIBVGICD_DEBS"/libvgicd-dev_*_"$HOST_ARCH".deb "$repo/"
	else
		rm -rf "$src" "$WORK"/vgicd_* "$WORK"/*vgicd*.deb
		# The working tree as git sees it (tracked and untracked, not
		# ignored), as tests/debian/build-deb.sh copies it.
		vgicd_export_tree "$src"
		build_deps /build/vgicd-src nocheck
		if ! heavy in_chroot sh -c 'cd /build/vgicd-src &&
			DEB_BUILD_OPTIONS="nocheck parallel=2" dpkg-buildpackage -a '"$HOST_ARCH"' -B -us -uc -Pnocheck' \
			>"$WORK/vgicd-build.log" 2>&1; then
			tail -n 40 "$WORK/vgicd-build.log" >&2
			return 1
		fi
		mv "$WORK"/libvgicd0_*_"$HOST_ARCH".deb "$WORK"/libvgicd-dev_*_"$HOST_ARCH".deb "$repo/"
	fi
	in_chroot sh -c 'cd /build/repo && apt-ftparchive packages . > Packages'
	echo "deb [trusted=yes] file:/build/repo ./" >"$ROOT/etc/apt/sources.list.d/vgicd-local.list"
	heavy in_chroot apt-get -q update >"$WORK/apt.log" 2>&1 ||
		{ tail -n 20 "$WORK/apt.log" >&2; return 1; }
	(cd "$repo" && ls ./*.deb)
}

# The local repository is only there while a build runs.
drop_local_repo() {
	[ -z "${ROOT:-}" ] || rm -f "$ROOT/etc/apt/sources.list.d/vgicd-local.list"
}
trap drop_local_repo EXIT

# narrow_targets - MAKEFLAGS and DH_OPTIONS for --targets (see the top).
narrow_targets() {
	local p keep
	NARROW_MAKEFLAGS=
	NARROW_DH=
	case $TARGETS in
	all) return 0 ;;
	arm) NARROW_MAKEFLAGS="system-packages=arm QEMU_CONFIGURE_OPTIONS=--target-list=aarch64-softmmu,arm-softmmu" ;;
	aarch64) NARROW_MAKEFLAGS="system-packages=arm system-archlist-arm=aarch64 QEMU_CONFIGURE_OPTIONS=--target-list=aarch64-softmmu" ;;
	esac
	# The qemu-system-* of other targets.  Not the qemu-system metapackage:
	# Debian's rules build the system emulators only when it is among the
	# packages built (enable-system); its .deb is dropped afterwards, as it
	# depends on all of them.
	keep=" qemu-system qemu-system-arm qemu-system-common qemu-system-gui qemu-system-data "
	for p in $(sed -n 's/^Package: \(qemu-system.*\)/\1/p' "$WORK/qemu/debian/control"); do
		case $keep in *" $p "*) continue ;; esac
		case $p in qemu-system-modules-*) continue ;; esac
		NARROW_DH+=" -N$p"
	done
	echo "targets: $TARGETS (make $NARROW_MAKEFLAGS; DH_OPTIONS$NARROW_DH)"
}

step_begin "packages"
need_packages "${PKGS_QEMU_DEB[@]}"
step_end
step_begin "chroot ($SUITE, amd64 + $HOST_ARCH)"; make_chroot; step_end
mkdir -p "$WORK"
if [ "$BASE" = 10.0 ]; then FROM=$SUITE; else FROM="$QP_SUITE, $QP_SOURCE_PKG"; fi
step_begin "qemu source ($FROM)"; fetch_source; step_end
step_begin "series into Debian's quilt stack"; prepare_source; step_end

if [ -n "$CHECK" ]; then
	step_begin "build dependencies (configure)"
	# libvgicd-dev is not in the archive: the check's libvgicd is the cross
	# build (libvgicd_for_configure), so it is left out of build-dep here.
	sed -i 's/^ libvgicd-dev (>= [^)]*) \[arm64\],$/# (libvgicd-dev: the check uses PKG_CONFIG_PATH)/' \
		"$WORK/qemu/debian/control"
	build_deps "$SRC" "$PROFILES"
	step_end
	step_begin "libvgicd for aarch64"; libvgicd_for_configure; step_end
	step_begin "debian/rules configure-qemu (arm64)"
	rm -rf "$WORK/qemu/b"
	if ! heavy in_chroot sh -c 'cd /build/qemu &&
		PKG_CONFIG_PATH='"$PCDIR"' DEB_BUILD_PROFILES="'"${PROFILES//,/ }"'" DEB_BUILD_OPTIONS="nocheck parallel=2" \
		dpkg-architecture -a '"$HOST_ARCH"' -c debian/rules configure-qemu' \
		>"$WORK/configure.log" 2>&1; then
		tail -n 40 "$WORK/configure.log" >&2
		exit 1
	fi
	grep -E '^ *(vgicd support|vgicd address|KVM support)' "$WORK/configure.log" | sed 's/^ */  /'
	grep -q '^ *vgicd support *: *YES' "$WORK/configure.log" ||
		{ echo "Debian's configure did not enable vgicd (log: $WORK/configure.log)" >&2; exit 1; }
	grep -qx '#define CONFIG_VGICD' "$WORK/qemu/b/qemu/config-host.h" ||
		{ echo "config-host.h has no CONFIG_VGICD" >&2; exit 1; }
	step_end
	print_step_times
	printf '  %-44s %7.1f s\n' "total" "$(echo "$(date +%s.%N) - $T0" | bc)"
	echo
	echo "build-debian-qemu --check: the series applies in $DEB_VER's quilt stack (fuzz 0), and its system build configures with vgicd"
	exit 0
fi

step_begin "libvgicd packages for $HOST_ARCH"; libvgicd_debs; step_end
step_begin "build dependencies"; build_deps "$SRC" "$PROFILES"; step_end
narrow_targets
# The build runs in two calls of dpkg-buildpackage: build-arch (-T), then
# the binary packages on the same tree (-nc; Debian's build stamps make
# build-arch a no-op the second time).  Between them, a narrowed build
# drops the lines of debian/*.install that name a module it did not make
# (drop_unbuilt_modules): dh_install aborts on a missing file.
dpkg_build() {
	heavy in_chroot sh -c 'cd /build/qemu &&
		MAKEFLAGS="'"$NARROW_MAKEFLAGS"'" DH_OPTIONS="'"$NARROW_DH"'" \
		DEB_BUILD_OPTIONS="nocheck parallel=2" \
		dpkg-buildpackage -a '"$HOST_ARCH"' -B -us -uc -P'"$PROFILES"' "$@"' sh "$@" \
		>>"$WORK/build.log" 2>&1 && return 0
	tail -n 60 "$WORK/build.log" >&2
	echo "the build failed (log: $WORK/build.log)" >&2
	exit 1
}

# drop_unbuilt_modules - for a narrowed build, the module lines of
# debian/*.install whose module is not in b/qemu.  Debian's lists are for
# every target: the PCI VGA devices (hw-display-virtio-vga, its -gl
# variant, hw-display-qxl) are built for targets with a VGA, and aarch64
# and arm have none.  Each dropped line is printed.
drop_unbuilt_modules() {
	local f line mod n=0
	[ "$TARGETS" != all ] || return 0
	for f in "$WORK"/qemu/debian/*.install; do
		while IFS= read -r line; do
			case $line in 'usr/lib/${DEB_HOST_MULTIARCH}/qemu/'*.so) ;; *) continue ;; esac
			mod=${line##*/}
			[ ! -e "$WORK/qemu/b/qemu/$mod" ] || continue
			grep -vxF -- "$line" "$f" >"$f.new" || true
			mv "$f.new" "$f"
			echo "not built for $TARGETS: $mod (dropped from $(basename "$f"))"
			n=$((n + 1))
		done <"$f"
	done
	echo "modules not built for $TARGETS: $n"
}

step_begin "dpkg-buildpackage -a $HOST_ARCH -B ($TARGETS)"
rm -f "$WORK"/qemu*_"$HOST_ARCH".* "$WORK"/qemu-*.deb "$WORK/build.log"
dpkg_build -T build-arch
drop_unbuilt_modules
dpkg_build -nc
step_end
OUT=$BQ/out
rm -rf "$OUT"
mkdir -p "$OUT"
mv "$WORK"/*.deb "$WORK"/qemu_*_"$HOST_ARCH".* "$OUT/"
cp "$WORK"/repo/*.deb "$OUT/"
[ "$TARGETS" = all ] || rm -f "$OUT"/qemu-system_*.deb
print_step_times
printf '  %-44s %7.1f s\n' "total" "$(echo "$(date +%s.%N) - $T0" | bc)"
echo
(cd "$OUT" && for d in qemu-system-arm_*.deb; do
	dpkg-deb -f "$d" Package Version Depends
done)
echo
echo "build-debian-qemu: $(cd "$OUT" && ls ./*.deb | wc -l) packages in $OUT"
