# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# common.sh - the project's shell library: every script sources this file,
# and only this file, from scripts/lib.  Sourced, not run.
#
#   paths       VGICD_ROOT (the repository), VGICD_BUILD (build output,
#               ignored by git), VGICD_CACHE (downloads and caches, outside
#               the repository)
#   heavy.sh    the machine-wide heavy-work lock: heavy CMD..., heavy_script
#   steps.sh    step timing: step_begin NAME, step_end, print_step_times
#   packages.sh need_packages PKG..., enable_arm64, and every tier's package
#               list (PKGS_*), declared in one place
#   background.sh  builds a late step needs, run early beside the others:
#               bg_start NAME LOG CMD..., bg_wait NAME, bg_stop_all
#   debian-apt.sh  a private apt state for other Debian suites and
#               architectures (deb_apt_init, deb_download, ...)
#   meson_setup DIR ARGS...
#               configure the build folder DIR (--reconfigure when it is one)
#   vgicd_export_tree DEST [head]
#               the project's files into DEST (a build's copy of the source)

VGICD_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VGICD_ROOT=$(cd "$VGICD_LIB/../.." && pwd)
VGICD_BUILD=${VGICD_BUILD:-$VGICD_ROOT/_build}
VGICD_CACHE=${VGICD_CACHE:-/var/cache/vgicd}

# shellcheck source=heavy.sh
. "$VGICD_LIB/heavy.sh"
# shellcheck source=steps.sh
. "$VGICD_LIB/steps.sh"
# shellcheck source=packages.sh
. "$VGICD_LIB/packages.sh"
# shellcheck source=background.sh
. "$VGICD_LIB/background.sh"
# shellcheck source=debian-apt.sh
. "$VGICD_LIB/debian-apt.sh"

# meson_setup DIR ARGS... - meson setup of the project's build folder DIR
# with ARGS: on a folder that is one already, --reconfigure, so a rerun
# keeps what it built and still takes ARGS (a plain setup refuses the
# folder).  Quiet, but for a failure: meson writes its errors to stdout,
# so its output is kept and shown then.
meson_setup() {
	local dir=$1 opts=() out
	shift
	[ ! -f "$dir/build.ninja" ] || opts=(--reconfigure)
	out=$(meson setup "${opts[@]}" "$dir" "$VGICD_ROOT" "$@" 2>&1) || {
		printf '%s\n' "$out" | tail -n 20 >&2
		echo "meson setup of $dir failed (the whole log: $dir/meson-logs/meson-log.txt)" >&2
		return 1
	}
}

# vgicd_export_tree DEST [head] - copy the tree into DEST: with "head" the
# last commit (git archive), otherwise the working tree as git sees it
# (tracked files and untracked ones it does not ignore, minus deleted ones),
# so that a build of uncommitted work builds what would be committed.
vgicd_export_tree() {
	local dest=$1 head=${2:-}
	mkdir -p "$dest"
	if [ -n "$head" ]; then
		git -C "$VGICD_ROOT" archive HEAD | tar -x -C "$dest"
	else
		git -C "$VGICD_ROOT" ls-files -z --cached --others --exclude-standard |
			(cd "$VGICD_ROOT" && xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh) |
			tar -C "$VGICD_ROOT" --null -T - -c | tar -x -C "$dest"
	fi
}
