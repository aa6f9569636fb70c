# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# kernel-patch/lib.sh - the source step that build-kernel.sh (the nested
# tier's kernels) and build-debian-kernel.sh (a host's kernel package)
# share: a Debian linux-source tarball unpacked into a git tree tagged
# `pristine`, with a series applied by `git am` on top.  Sourced; the caller
# defines log() and die() and sets $src (the tree's folder).
#
#   kp_series DIR            the series of DIR into the array `series` (the
#                            cover letter left out); dies if there is none
#   kp_tarball DEB PKG VER   the source tarball of linux-source package DEB
#                            into $VGICD_CACHE/kernel-src, once; sets
#                            `tarball`
#   kp_source_tree PKG VER TARBALL FRESH
#                            $src: PKG VER unpacked and committed (again
#                            when VER changes or FRESH is 1), reset to
#                            pristine and `series` applied when the
#                            series id (VER and every patch's bytes) changes
#   git_src ARGS...          git in $src, with the build's identity

# The results (kp_series, kp_tarball) are the caller's globals.
series=()
tarball=

# kp_series DIR - see the top.
kp_series() {
	local p
	series=()
	for p in "$1"/[0-9][0-9][0-9][0-9]-*.patch; do
		# 0000-cover-letter.patch has no diff: git am would refuse it.
		case $p in *cover-letter*) continue ;; esac
		[ -e "$p" ] && series+=("$p")
	done
	[ ${#series[@]} -gt 0 ] || die "no patches in $1"
}

# kp_tarball DEB PKG VER - see the top.  The package holds the tarball as
# ./usr/src/PKG.tar.xz; it is taken out without installing the package.
kp_tarball() {
	local deb=$1 pkg=$2 ver=$3
	tarball=$VGICD_CACHE/kernel-src/$pkg-$ver.tar.xz
	[ ! -s "$tarball" ] || return 0
	mkdir -p "$VGICD_CACHE/kernel-src"
	dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$pkg.tar.xz" >"$tarball.tmp"
	mv "$tarball.tmp" "$tarball"
}

# gc.auto=0: after the 80,000-file first commit and the series, git would
# start a repack of the whole tree in the background, minutes of CPU
# outside the heavy-work lock, for a tree that is rebuilt or thrown away.
git_src() {
	# shellcheck disable=SC2154 # $src is the caller's (see the top)
	git -C "$src" -c user.name="vgicd build" -c user.email="build@vgicd.invalid" \
		-c gc.auto=0 "$@"
}

# kp_source_tree PKG VER TARBALL FRESH - see the top.  An empty `series`
# leaves the tree pristine.
kp_source_tree() {
	local pkg=$1 ver=$2 tb=$3 fresh=$4 id
	# The source version and every patch's bytes, hashed together: a
	# changed patch must reset the tree and apply the series again.
	id=$({ printf '%s\n' "$pkg $ver"
	       [ ${#series[@]} -eq 0 ] || cat "${series[@]}"; } | sha256sum)
	id=${id%% *}
	if [ "$fresh" = 1 ] || [ ! -d "$src/.git" ] ||
	   [ "$(cat "$src/.git/vgicd-source-version" 2>/dev/null)" != "$ver" ]; then
		log "unpacking $pkg $ver into $src"
		rm -rf "$src" "$src.tmp"
		mkdir -p "$src.tmp"
		tar -C "$src.tmp" -xJf "$tb"
		mv "$src.tmp/$pkg" "$src"
		rmdir "$src.tmp"
		git_src init -q
		# Debian's .gitignore ignores every top-level entry but debian/: -f.
		git_src add -f -A
		git_src commit -q -m "Linux (Debian $pkg $ver)"
		git_src tag pristine
		echo "$ver" >"$src/.git/vgicd-source-version"
	fi
	[ "$(cat "$src/.git/vgicd-series" 2>/dev/null)" != "$id" ] || return 0
	git_src am --abort >/dev/null 2>&1 || true
	git_src reset -q --hard pristine
	git_src clean -q -fdx
	if [ ${#series[@]} -gt 0 ]; then
		log "applying ${#series[@]} patches with git am"
		git_src am -q "${series[@]}" >&2 ||
			{ git_src am --abort || true; die "the series does not apply cleanly to $pkg $ver"; }
	fi
	echo "$id" >"$src/.git/vgicd-series"
}
