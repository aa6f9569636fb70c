# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# lib.sh - shared pieces of qemu-patch/build-check.sh and build-qemu.sh:
# the base a series is for, a private apt state for its Debian suite, the
# QEMU source, a meson >= 1.5, the aarch64 libvgicd, and applying the
# series.  Sourced, not run.
#
# Nothing here touches /etc/apt or the system's package lists: Debian's
# suites are reached through private apt states (scripts/lib/debian-apt.sh) whose
# single .sources file is written at run time from the URIs and Signed-By of
# /etc/apt/sources.list.d/debian.sources.  Everything fetched or built lives
# under $QP_CACHE, outside the repository.

QP_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
QP_ROOT=$(cd "$QP_DIR/.." && pwd)
QP_SOURCES=${QP_SOURCES:-/etc/apt/sources.list.d/debian.sources}
QP_PY=/usr/bin/python3		# not the pyenv python3 first in PATH

# The project's shell library: the heavy-work lock, step timing, packages
# (PKGS_QEMU) and the private apt state.
. "$QP_ROOT/scripts/lib/common.sh"
QP_CACHE=$VGICD_CACHE/qemu

# qp_base BASE - the QEMU a series is for, and where everything of it goes:
#   10.0  Debian 13's qemu (suite stable), the series in this folder: what
#         the tiers build and boot (the default)
#   10.2  Debian unstable's 1:10.2.2+ds-1, the series in 10.2/: the newest
#         QEMU source the archive serves (README.md, "QEMU 11.1"); the
#         tiers build it when asked (run-qemu-e2e.sh --qemu-base 10.2,
#         build-debian-qemu.sh --base=10.2), CI does not
# Sets QP_BASE, QP_QEMU_VERSION (the upstream version the series applies
# to), QP_SUITE and QP_SOURCE_PKG (what apt-get source fetches: the
# version pinned where the suite lists several), QP_SERIES_DIR, and
# QP_BASE_CACHE (the source and check folders: $QP_CACHE for 10.0, as
# before, $QP_CACHE/BASE for another).
qp_base() {
	case $1 in
	10.0) QP_QEMU_VERSION=10.0.13 QP_SUITE=stable QP_SOURCE_PKG=qemu
	      QP_SERIES_DIR=$QP_DIR QP_BASE_CACHE=$QP_CACHE ;;
	10.2) QP_QEMU_VERSION=10.2.2 QP_SUITE=unstable QP_SOURCE_PKG=qemu=1:10.2.2+ds-1
	      QP_SERIES_DIR=$QP_DIR/10.2 QP_BASE_CACHE=$QP_CACHE/10.2 ;;
	*) echo "no QEMU series for base '$1' (10.0 or 10.2)" >&2; return 2 ;;
	esac
	QP_BASE=$1
}
qp_base 10.0

# qp_apt_setup [SUITE] - write the private .sources (deb + deb-src, SUITE,
# default stable) from the main archive stanza of debian.sources, and
# update its lists once a day at most.
qp_apt_setup() {
	local suite=${1:-stable}
	DEBIAN_SOURCES=$QP_SOURCES DEB_APT_ROOT=$QP_CACHE/apt \
		deb_apt_init "$suite" "$(dpkg --print-architecture)" "$suite" "deb deb-src"
	deb_apt_update
}

qp_apt() {
	"${DEB_APT[@]}" "$@"
}

# qp_meson - set QP_MESON to a meson >= 1.5 (QEMU 10.0 needs it).  Debian
# 12 has 1.0; stable's meson .deb is arch-independent Python, so it is
# unpacked into the cache and run with /usr/bin/python3.
qp_meson() {
	local v dir=$QP_CACHE/meson
	if command -v meson >/dev/null &&
		v=$(meson --version 2>/dev/null) &&
		dpkg --compare-versions "$v" ge 1.5; then
		QP_MESON=$(command -v meson)
		QP_PYTHONPATH=
		return 0
	fi
	if [ ! -x "$dir/usr/bin/meson" ]; then
		qp_apt_setup
		rm -rf "$dir" "$QP_CACHE/meson-deb"
		mkdir -p "$QP_CACHE/meson-deb"
		(cd "$QP_CACHE/meson-deb" && qp_apt download meson)
		dpkg -x "$QP_CACHE"/meson-deb/meson_*.deb "$dir"
	fi
	# Only QEMU's configure and ninja see this meson (qp_qemu_env): the
	# project's own builds keep the system's.
	QP_PYTHONPATH=$dir/usr/lib/python3/dist-packages
	QP_MESON=$dir/usr/bin/meson
	echo "meson: $(qp_qemu_env "$QP_PY" "$QP_MESON" --version) (Debian stable's, in $dir)"
}

# qp_qemu_env CMD... - run CMD (QEMU's configure, ninja) with the meson
# found by qp_meson, ccache for the cross compiler, and the cache's ccache
# directory.
qp_qemu_env() {
	env ${QP_PYTHONPATH:+PYTHONPATH="$QP_PYTHONPATH"} \
		PATH="/usr/lib/ccache:$PATH" \
		CCACHE_DIR="$QP_CACHE/ccache" CCACHE_DEPEND=1 CCACHE_BASEDIR="$QP_CACHE" \
		PKG_CONFIG_LIBDIR="$QP_PKG_CONFIG_LIBDIR" \
		"$@"
}

# qp_qemu_source - unpack the base's qemu source package (qp_base) into
# $QP_BASE_CACHE/src/pristine (once), as a git repository with one commit.
# Sets QP_PRISTINE.
qp_qemu_source() {
	local src=$QP_BASE_CACHE/src
	QP_PRISTINE=$src/pristine
	if [ -d "$QP_PRISTINE/.git" ] &&
		git -C "$QP_PRISTINE" rev-parse -q --verify refs/tags/pristine >/dev/null; then
		return 0
	fi
	qp_apt_setup "$QP_SUITE"
	rm -rf "$src"
	mkdir -p "$src/dl"
	(cd "$src/dl" && qp_apt source --download-only "$QP_SOURCE_PKG" >/dev/null)
	local dsc
	dsc=$(ls "$src"/dl/qemu_*.dsc)
	case $dsc in
	*"_1:$QP_QEMU_VERSION"+* | *"_$QP_QEMU_VERSION"+*) ;;
	*) echo "warning: Debian $QP_SUITE's qemu is $(basename "$dsc"), the series is for $QP_QEMU_VERSION" >&2 ;;
	esac
	# Debian's source as it builds, patches applied: they touch none of the
	# series' files, but one of them (disable-pycotap.patch) lets configure
	# run from the +ds tarball, which has no python/wheels.  apt has checked
	# the files against the signed index; dpkg-source has no keyring for the
	# .dsc's own signature, hence its noise, kept in dpkg-source.log.
	dpkg-source -x "$dsc" "$QP_PRISTINE" >/dev/null 2>"$src/dpkg-source.log"
	rm -rf "$QP_PRISTINE/.pc"
	git -C "$QP_PRISTINE" init -q
	git -C "$QP_PRISTINE" add -A -f .
	git -C "$QP_PRISTINE" -c user.name=vgicd -c user.email=vgicd@localhost \
		commit -q -m "QEMU $(basename "$dsc" .dsc) (Debian source, pristine)"
	git -C "$QP_PRISTINE" tag pristine
}

# qp_series - the series' patches, in order, one per line: every
# NNNN-*.patch but the cover letter (0000-cover-letter.patch has no diff,
# and git am and quilt would refuse it).
qp_series() {
	local p
	for p in "$QP_SERIES_DIR"/[0-9][0-9][0-9][0-9]-*.patch; do
		case $p in *cover-letter*) continue ;; esac
		printf '%s\n' "$p"
	done
}

# qp_apply_series DIR - DIR becomes the pristine source plus the series, one
# commit per patch.  git am applies with exact context (no fuzz) and is told
# to refuse whitespace errors; a patch that does not apply fails the run.
# Nothing is touched when DIR already holds this exact series.
qp_apply_series() {
	local dir=$1 sum
	local -a series
	mapfile -t series < <(qp_series)
	sum=$(cat "${series[@]}" | sha256sum | cut -d' ' -f1)
	if [ -f "$dir/.git/vgicd-series" ] && [ "$(cat "$dir/.git/vgicd-series")" = "$sum" ]; then
		echo "series already applied in $dir"
		return 0
	fi
	if [ ! -d "$dir/.git" ]; then
		rm -rf "$dir"
		git clone -q --no-hardlinks "$QP_PRISTINE" "$dir"
	fi
	git -C "$dir" am --abort >/dev/null 2>&1 || true
	git -C "$dir" checkout -q -f -B vgicd pristine
	if ! git -C "$dir" -c user.name=vgicd -c user.email=vgicd@localhost \
		am -q --whitespace=error "${series[@]}"; then
		echo "the series does not apply to $(git -C "$dir" log -1 --format=%s pristine)" >&2
		git -C "$dir" am --abort >/dev/null 2>&1 || true
		return 1
	fi
	echo "$sum" >"$dir/.git/vgicd-series"
	git -C "$dir" log --oneline pristine..HEAD
}

# qp_libvgicd_aarch64 - build the project for aarch64 (the same build
# directory as scripts/test.sh) and install it into $QP_CACHE/libvgicd-aarch64,
# with a libvgicd.pc that points there, in $QP_CACHE/pkgconfig-aarch64.
# The install is replaced only when it changed, so that QEMU's build does
# not see a new libvgicd.h on every run.
QP_LIBVGICD=$QP_CACHE/libvgicd-aarch64
QP_PKG_CONFIG_LIBDIR=$QP_CACHE/pkgconfig-aarch64:/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig
# One at a time: scripts/test.sh runs the packaging check in the
# background while the nested tiers build QEMU, and both install here.
qp_libvgicd_aarch64() {
	local fd rc=0
	mkdir -p "$QP_CACHE"
	exec {fd}>>"$QP_CACHE/libvgicd-aarch64.lock"
	flock "$fd"
	qp_libvgicd_aarch64_locked {fd}>&- || rc=$?
	exec {fd}>&-
	return $rc
}

qp_libvgicd_aarch64_locked() {
	local b=${VGICD_BUILD:-$QP_ROOT/_build}/aarch64 pc
	if [ ! -f "$b/build.ninja" ]; then
		(cd "$QP_ROOT" && heavy meson setup "$b" --werror -Dlibvirt=enabled \
			--cross-file cross/aarch64-linux-gnu.ini >/dev/null)
	fi
	if ! heavy ninja -C "$b" >"$QP_CACHE/libvgicd-aarch64.log" 2>&1; then
		tail -n 30 "$QP_CACHE/libvgicd-aarch64.log" >&2
		return 1
	fi
	rm -rf "$QP_LIBVGICD.new"
	meson install -C "$b" --no-rebuild --quiet --destdir "$QP_LIBVGICD.new" >/dev/null
	if diff -r -q "$QP_LIBVGICD.new" "$QP_LIBVGICD" >/dev/null 2>&1; then
		rm -rf "$QP_LIBVGICD.new"
	else
		rm -rf "$QP_LIBVGICD"
		mv "$QP_LIBVGICD.new" "$QP_LIBVGICD"
	fi
	pc=$(find "$QP_LIBVGICD" -name libvgicd.pc | head -n 1)
	[ -n "$pc" ] || { echo "no libvgicd.pc in $QP_LIBVGICD" >&2; return 1; }
	mkdir -p "$QP_CACHE/pkgconfig-aarch64"
	sed "s|^prefix=|prefix=$QP_LIBVGICD|" "$pc" >"$QP_CACHE/pkgconfig-aarch64/libvgicd.pc.new"
	if cmp -s "$QP_CACHE/pkgconfig-aarch64/libvgicd.pc.new" "$QP_CACHE/pkgconfig-aarch64/libvgicd.pc"; then
		rm "$QP_CACHE/pkgconfig-aarch64/libvgicd.pc.new"
	else
		mv "$QP_CACHE/pkgconfig-aarch64/libvgicd.pc.new" "$QP_CACHE/pkgconfig-aarch64/libvgicd.pc"
	fi
	echo "libvgicd $(PKG_CONFIG_LIBDIR=$QP_PKG_CONFIG_LIBDIR aarch64-linux-gnu-pkg-config --modversion libvgicd) for aarch64 in $QP_LIBVGICD"
}

# What Debian stable's dpkg-buildflags adds for arm64 to what QEMU's own
# build already sets (-O2, -fstack-protector-strong, _FORTIFY_SOURCE):
# pointer authentication and BTI, and stack clash protection.  The stock
# qemu-system-aarch64 the end-to-end tier compares against carries them
# (its ELF notes say "AArch64 feature: BTI, PAC"), and on a kernel that
# enables pointer authentication for userland every non-leaf function pays
# for it, so the patched QEMU is built the same way.  The flags are kept
# once, as c_args of the project's aarch64 cross file, which builds
# libvgicd and vgicd; here they are read from it.
QP_DEB_CFLAGS=$(sed -n "s/^c_args = \[\(.*\)\]\$/\1/p" "$QP_ROOT/cross/aarch64-linux-gnu.ini" | tr -d "',")
[ -n "$QP_DEB_CFLAGS" ] || { echo "lib.sh: no c_args in cross/aarch64-linux-gnu.ini" >&2; exit 1; }

# qp_configure SRC BUILD [OPTION...] - configure a minimal, KVM-only,
# cross-built qemu-system-aarch64 (docs/kernel-interface.md) in BUILD, unless
# BUILD was configured with the same options (ninja then re-runs meson by
# itself when the series changed a meson file).
qp_configure() {
	local src=$1 build=$2 args
	shift 2
	args=(--cross-prefix=aarch64-linux-gnu- --target-list=aarch64-softmmu
		--enable-kvm --disable-tcg --without-default-features
		--without-default-devices --with-devices-aarch64=vgicd-minimal
		--enable-fdt=system --disable-docs --disable-download
		--disable-install-blobs --python="$QP_PY"
		--extra-cflags="$QP_DEB_CFLAGS" "$@")
	# configure takes a name under configs/devices/aarch64-softmmu/; the
	# file is a dependency of every build directory (ninja re-runs meson
	# when it changes), so it is written before an already configured build
	# returns, and only when it differs, to leave its mtime be otherwise.
	# A base may add devices of its own (its series folder's
	# devices-aarch64.mak).
	local mak=$src/configs/devices/aarch64-softmmu/vgicd-minimal.mak devs=("$QP_DIR/devices-aarch64.mak")
	[ "$QP_SERIES_DIR" = "$QP_DIR" ] || [ ! -f "$QP_SERIES_DIR/devices-aarch64.mak" ] ||
		devs+=("$QP_SERIES_DIR/devices-aarch64.mak")
	cat "${devs[@]}" >"$mak.new"
	if cmp -s "$mak.new" "$mak"; then rm "$mak.new"; else mv "$mak.new" "$mak"; fi
	if [ -f "$build/build.ninja" ] && [ -f "$build/vgicd-configure" ] &&
		[ "$(cat "$build/vgicd-configure")" = "${args[*]}" ]; then
		echo "$build: already configured"
		return 0
	fi
	rm -rf "$build"
	mkdir -p "$build"
	if ! (cd "$build" && heavy qp_qemu_env "$src/configure" "${args[@]}" >configure.log 2>&1); then
		tail -n 30 "$build/configure.log" >&2
		return 1
	fi
	grep -E 'vgicd support|KVM support' "$build/configure.log" | sed 's/^ */  /'
	echo "${args[*]}" >"$build/vgicd-configure"
}
