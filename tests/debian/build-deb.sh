#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# build-deb.sh - build the Debian packages (dpkg-buildpackage -b -us -uc) from
# a copy of the tree, then run lintian on the result.
#
#   bash tests/debian/build-deb.sh [--head] [--nocheck]
#
# The copy and every build product go to ${VGICD_CACHE:-/var/cache/vgicd}/deb,
# never into the repository.  The copy is the working tree (tracked and
# untracked files git does not ignore), or with --head the last commit.
# --nocheck skips the test suite inside the build.  Runs under the
# heavy-work lock, as a whole.  Exit status: non-zero when the build
# fails or lintian reports an error.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib/common.sh"

HEAD=
NOCHECK=
for a in "$@"; do
	case $a in
	--head) HEAD=1 ;;
	--nocheck) NOCHECK=1 ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "usage: $0 [--head] [--nocheck] (see --help)" >&2; exit 2 ;;
	esac
done
heavy_script "$@"

T_START=$(date +%s.%N)

step_begin "packages"
need_packages "${PKGS_BUILD[@]}" "${PKGS_DEB[@]}"
step_end

OUT=$VGICD_CACHE/deb
VERSION=$(dpkg-parsechangelog -l "$VGICD_ROOT/debian/changelog" -S Version)
SRC=$OUT/vgicd-$VERSION

step_begin "copy the tree to $SRC"
rm -rf "$OUT"
vgicd_export_tree "$SRC" "$HEAD"
step_end

step_begin "dpkg-buildpackage -b -us -uc"
rc=0
(
	cd "$SRC"
	export DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-} parallel=2${NOCHECK:+ nocheck}"
	dpkg-buildpackage -b -us -uc
) > "$OUT/build.log" 2>&1 || rc=$?
step_end
if [ $rc -ne 0 ]; then
	tail -60 "$OUT/build.log"
	echo "build-deb: dpkg-buildpackage failed (exit $rc); the whole log is $OUT/build.log" >&2
	exit $rc
fi
grep -E "^dpkg-gensymbols|^dpkg-shlibdeps: warning|^dh_missing" "$OUT/build.log" || true

CHANGES=$(ls "$OUT"/vgicd_"$VERSION"_*.changes)
echo
echo "Packages:"
for deb in "$OUT"/*.deb; do
	printf '  %-48s %8s bytes\n' "$(basename "$deb")" "$(stat -c %s "$deb")"
done
echo
echo "vgicd's files:"
dpkg-deb -c "$OUT"/vgicd_"$VERSION"_*.deb | awk '{print "  " $1 " " $6 ($7 ? " " $7 " " $8 : "")}' | grep -v '/$'

step_begin "lintian"
lintian --info --display-info --tag-display-limit 0 "$CHANGES" > "$OUT/lintian.log" 2>&1 || true
step_end
echo
echo "lintian (by severity; overrides are explained in debian/*.lintian-overrides):"
for sev in E W I P; do
	n=$(grep -c "^$sev: " "$OUT/lintian.log" || true)
	printf '  %s: %s\n' "$sev" "$n"
done
grep -E '^[EWI]: ' "$OUT/lintian.log" | sed 's/^/  /' || true

print_step_times
printf '  %-44s %7.1f s\n' total "$(echo "$(date +%s.%N) - $T_START" | bc)"

if grep -q '^E: ' "$OUT/lintian.log"; then
	echo "build-deb: lintian reports errors" >&2
	exit 1
fi
echo "build-deb: OK ($OUT)"
