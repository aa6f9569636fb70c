# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# debian-apt.sh - Debian packages of other suites and architectures (arm64
# binaries, stable's sources), without touching the host's apt
# configuration, and without naming a mirror: the URIs and Signed-By are
# read, at run time, from the host's /etc/apt/sources.list.d/debian.sources.
# Sourced (by common.sh).
#
#   deb_apt_init bookworm-arm64 arm64            # the host's suites, for arm64
#   deb_apt_init trixie-arm64 arm64 stable       # one other suite, component main
#   deb_apt_init tsec-arm64 arm64 trixie-security   # (from the host's security stanza)
#   deb_apt_init stable amd64 stable "deb deb-src"   # with sources (qemu-patch/)
#   deb_apt_update                               # at most once a day
#   deb="$(deb_download "$dir" busybox-static)"  # path of the .deb
#   deb_extract "$deb" "$root"
#
# The apt state (lists, cache, an empty dpkg status) is private, under
# $DEB_APT_ROOT/NAME (default $VGICD_CACHE/nested/apt/NAME); nothing in /etc or
# /var/lib/apt changes.  deb_sources_lines gives the same mirrors as
# "deb URI SUITE COMPONENTS" lines, for mmdebstrap; deb_suite_lines those
# of another release.  DEB_SCRATCH_ROOT_OPTS are mmdebstrap's options for
# the roots the tests make and throw away.

DEBIAN_SOURCES=${DEBIAN_SOURCES:-/etc/apt/sources.list.d/debian.sources}

# The test roots (the clean chroots, the nspawn root, the virsh tier's L1
# root, the QEMU packaging chroot) are rebuilt rather than repaired, so
# their dpkg need not fsync each file it unpacks: force-unsafe-io, as
# sbuild-createchroot sets in a buildd chroot.  It stays in the root's
# /etc/dpkg/dpkg.cfg.d/99mmdebstrap, so later installs inside it (the
# Build-Depends, the .debs under test, dpkg -i in L1) go without fsync too.
# Beside CI's background builds, which keep gigabytes of writes in flight,
# an fsync can wait for the journal to flush theirs too: the chroot step
# ran three times slower beside them than alone.  The roots' cache keys
# include these options.
# shellcheck disable=SC2034 # read by the scripts that source this file
DEB_SCRATCH_ROOT_OPTS=(--dpkgopt=force-unsafe-io)

deb_die() {
	echo "debian-apt: ERROR: $*" >&2
	exit 1
}

# deb_sources_stanzas - print the deb822 stanzas of $DEBIAN_SOURCES whose
# Types include "deb", comments dropped, one blank line between stanzas.
deb_sources_stanzas() {
	awk '
		/^[[:space:]]*#/ { next }
		/^[[:space:]]*$/ { if (s != "" && s ~ /(^|\n)Types:[^\n]*(^|[ \t])deb([ \t\n]|$)/) printf "%s\n", s; s = ""; next }
		{ s = s $0 "\n" }
		END { if (s != "" && s ~ /(^|\n)Types:[^\n]*(^|[ \t])deb([ \t\n]|$)/) printf "%s\n", s }
	' "$DEBIAN_SOURCES"
}

# deb_sources_lines - one "deb URI SUITE COMPONENTS" line per suite of each
# deb stanza of $DEBIAN_SOURCES (mmdebstrap's mirror arguments).
deb_sources_lines() {
	awk '
	function flush() {
		if (uris != "" && types ~ /(^| )deb( |$)/)
			for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++)
				print "deb " u[i] " " s[j] " " comps
		uris = ""; types = ""; comps = "main"; nu = ns = 0
	}
	BEGIN { comps = "main" }
	/^[ \t]*#/ { next }
	/^[ \t]*$/ { flush(); next }
	/^Types:/ { $1 = ""; types = $0 }
	/^URIs:/ { $1 = ""; uris = $0; nu = split(uris, u, " ") }
	/^Suites:/ { $1 = ""; ns = split($0, s, " ") }
	/^Components:/ { $1 = ""; sub(/^ /, ""); comps = $0 }
	END { flush() }' "$DEBIAN_SOURCES"
}

# deb_suite_lines SUITE [deb-src] - deb_sources_lines for another release:
# each suite named after the host's codename (bookworm, bookworm-updates,
# bookworm-security) renamed to SUITE's, the archive keyring pinned with
# [signed-by=] (mmdebstrap would otherwise trust whatever the host's apt
# trusts), and with "deb-src" a deb-src line after each deb line.  The
# mirrors and chroots of other suites (mmdebstrap, sources.list) use it.
deb_suite_lines() {
	local suite=$1 src=${2:-} from key
	from=$(sed -n "s/^VERSION_CODENAME=//p" /etc/os-release)
	key=$(deb_sources_field Signed-By)
	[ -n "$key" ] || key=/usr/share/keyrings/debian-archive-keyring.gpg
	deb_sources_lines | awk -v from="$from" -v to="$suite" -v key="$key" -v src="$src" '{
		if (index($3, from) == 1) $3 = to substr($3, length(from) + 1)
		$1 = "deb [signed-by=" key "]"; print
		if (src != "") { $1 = "deb-src [signed-by=" key "]"; print } }'
}

# deb_sources_field FIELD [SUITES_RE] - the value of FIELD in the first deb
# stanza (the main archive), or in the first whose Suites: match the awk
# regex SUITES_RE (-security$: the security archive, on its own host).
deb_sources_field() {
	deb_sources_stanzas | awk -v f="$1" -v re="${2:-}" '
		/^$/ { if (v != "" && (re == "" || ok)) { print v; done = 1; exit } v = ""; ok = 0; next }
		/^Suites:/ { for (i = 2; i <= NF; i++) if (re != "" && $i ~ re) ok = 1 }
		index($0, f ":") == 1 && v == "" { v = $0; sub(/^[^:]*: */, "", v) }
		END { if (!done && v != "" && (re == "" || ok)) print v }'
}

# deb_apt_init NAME ARCH [SUITE [TYPES]] - set up (or reuse) a private apt
# state.  Without SUITE it mirrors the host's stanzas (suites and
# components) for ARCH; with SUITE it uses the main archive's URIs and
# Signed-By with that suite, component main, and TYPES (default "deb";
# "deb deb-src" for apt-get source).  Sets DEB_APT_DIR and the DEB_APT array.
# The state keeps its own binary package cache (pkgcache.bin, whatever the
# host's apt.conf says: Debian's container images turn it off), so that
# each apt-cache call does not parse the Packages list again (0.9 s for
# trixie's arm64 list, 0.25 s from the cache); the source cache, as big
# again, is left out.
deb_apt_init() {
	local name=$1 arch=$2 suite=${3:-} types=${4:-deb}
	local a="${DEB_APT_ROOT:-${VGICD_CACHE:-/var/cache/vgicd}/nested/apt}/$name"

	[ -r "$DEBIAN_SOURCES" ] || deb_die "no $DEBIAN_SOURCES to read the mirror from"
	mkdir -p "$a/parts" "$a/lists/partial" "$a/cache/archives/partial" "$a/prefs"
	[ -f "$a/none.list" ] || : > "$a/none.list"	# its mtime is in the cache's key
	[ -f "$a/status" ] || : > "$a/status"
	if [ -z "$suite" ]; then
		deb_sources_stanzas > "$a/parts/debian.sources.new"
	else
		# A -security suite is on the security archive's host: the
		# host's own security stanza names it.
		local re=
		case $suite in *-security) re='-security$' ;; esac
		[ -n "$(deb_sources_field URIs "$re")" ] ||
			deb_die "$DEBIAN_SOURCES has no stanza for $suite's archive"
		printf 'Types: %s\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n' \
			"$types" "$(deb_sources_field URIs "$re")" "$suite" "$(deb_sources_field Signed-By "$re")" \
			> "$a/parts/debian.sources.new"
	fi
	if ! cmp -s "$a/parts/debian.sources.new" "$a/parts/debian.sources"; then
		mv "$a/parts/debian.sources.new" "$a/parts/debian.sources"
		rm -f "$a/updated"	# the sources changed: update again
	else
		rm -f "$a/parts/debian.sources.new"
	fi
	DEB_APT_DIR=$a
	DEB_APT=(apt-get -q
		-o "Dir::Etc::SourceList=$a/none.list"
		-o "Dir::Etc::SourceParts=$a/parts"
		-o "Dir::Etc::PreferencesParts=$a/prefs"
		-o "Dir::Etc::Preferences=$a/prefs/none"
		-o "Dir::State::Lists=$a/lists"
		-o "Dir::State::Status=$a/status"
		-o "Dir::Cache=$a/cache"
		-o "Dir::Cache::pkgcache=pkgcache.bin" -o "Dir::Cache::srcpkgcache="
		-o "APT::Architecture=$arch"
		-o "APT::Architectures=$arch"
		-o "Acquire::Languages=none"
		-o "APT::Sandbox::User=root")
}

# deb_apt_cache ARGS... - apt-cache on the private state.
deb_apt_cache() {
	local args=("${DEB_APT[@]:1}")
	apt-cache "${args[@]}" "$@"
}

# deb_apt_update [--force] - refresh the private lists when older than a day
# (NESTED_APT_MAX_AGE minutes), or when forced.
deb_apt_update() {
	local max=${NESTED_APT_MAX_AGE:-1440}
	if [ "${1:-}" != --force ] && [ -f "$DEB_APT_DIR/updated" ] &&
		[ -z "$(find "$DEB_APT_DIR/updated" -mmin +"$max")" ]; then
		return 0
	fi
	"${DEB_APT[@]}" update >"$DEB_APT_DIR/update.log" 2>&1 ||
		{ cat "$DEB_APT_DIR/update.log" >&2; deb_die "apt-get update (private state $DEB_APT_DIR) failed"; }
	touch "$DEB_APT_DIR/updated"
}

# deb_version PKG - the candidate version of PKG in the private state.
deb_version() {
	deb_apt_cache show --no-all-versions "$1" 2>/dev/null | sed -n 's/^Version: //p' | head -n1
}

# deb_depends PKG - PKG's Depends, one package name a line (alternatives and
# version constraints dropped).
deb_depends() {
	deb_apt_cache show --no-all-versions "$1" 2>/dev/null | sed -n 's/^Depends: //p' | head -n1 |
		tr ',' '\n' | sed -e 's/|.*//' -e 's/(.*)//' -e 's/[[:space:]]//g' -e '/^$/d'
}

# deb_download DIR PKG - download PKG's candidate into DIR unless already
# there; print the .deb's path.
deb_download() {
	local dir=$1 pkg=$2 info ver arch file
	mkdir -p "$dir"
	info=$(deb_apt_cache show --no-all-versions "$pkg" 2>/dev/null)
	ver=$(sed -n 's/^Version: //p' <<<"$info" | head -n1)
	arch=$(sed -n 's/^Architecture: //p' <<<"$info" | head -n1)
	[ -n "$ver" ] || deb_die "package $pkg not found in $DEB_APT_DIR"
	# apt-get download's naming: the epoch's colon is written as %3a.
	file="${pkg}_${ver//:/%3a}_${arch}.deb"
	if [ ! -s "$dir/$file" ]; then
		(cd "$dir" && "${DEB_APT[@]}" download "$pkg" >"$DEB_APT_DIR/download.log" 2>&1) ||
			{ cat "$DEB_APT_DIR/download.log" >&2; deb_die "apt-get download $pkg failed"; }
		[ -s "$dir/$file" ] || deb_die "apt-get download $pkg: $file not written"
	fi
	printf '%s\n' "$dir/$file"
}

# deb_extract DEB DIR - unpack DEB's files (no maintainer scripts) into DIR,
# once: a stamp next to DIR remembers which .deb it holds.
deb_extract() {
	local deb=$1 dir=$2
	if [ -f "$dir.stamp" ] && [ "$(cat "$dir.stamp")" = "$(basename "$deb")" ]; then
		return 0
	fi
	rm -rf "$dir"
	mkdir -p "$dir"
	dpkg-deb -x "$deb" "$dir"
	basename "$deb" > "$dir.stamp"
}

# deb_cached_root DEST BUILD - print DEST, a root file system kept in a
# cache, after building it if it is missing: BUILD ROOT makes the tree in
# ROOT, a temporary folder beside DEST, which is marked complete and only
# then moved to DEST, so an interrupted build never leaves a DEST that
# looks whole.  BUILD runs with errexit as the caller's script does (not in
# a condition), and the temporary folder goes when the script exits.
DEB_ROOT_TMP=
deb_cached_root() {
	local dest=$1 build=$2 t0
	if [ -f "$dest/.vgicd-rootfs-done" ]; then
		echo "$dest"
		return 0
	fi
	mkdir -p "$(dirname "$dest")"
	DEB_ROOT_TMP=$(mktemp -d "$(dirname "$dest")/.$(basename "$dest").XXXXXX")
	trap 'rm -rf "$DEB_ROOT_TMP"' EXIT
	t0=$(date +%s)
	"$build" "$DEB_ROOT_TMP/root"
	touch "$DEB_ROOT_TMP/root/.vgicd-rootfs-done"
	rm -rf "$dest"
	mv "$DEB_ROOT_TMP/root" "$dest"
	echo "$(basename "$0"): built $dest in $(( $(date +%s) - t0 )) s, $(du -sh "$dest" | cut -f1)" >&2
	echo "$dest"
}
