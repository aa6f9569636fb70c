#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# build-chroot.sh - build the Debian packages for one suite and architecture
# the way Debian's build daemons do: a source package made from the tree,
# built in a clean chroot of that suite that holds only the buildd set and
# the package's Build-Depends, then checked by that suite's own lintian.
# A native build's packages are then installed in the same chroot, vgicd
# run until it has saved its state, and vgicd purged: nothing of it may stay.
#
#   bash tests/debian/build-chroot.sh SUITE ARCH [--head] [--check|--nocheck] [--keep]
#
#   SUITE   a Debian suite: bookworm (12) or trixie (13)
#   ARCH    amd64: a native build; arm64 (or any other): a cross build from
#           this machine's architecture, dpkg-buildpackage --host-arch ARCH
#           -Pcross,nocheck (arm64 binaries cannot run here)
#   --head  the source is the last commit (default: the working tree,
#           tracked and untracked files git does not ignore, as build-deb.sh)
#   --check / --nocheck   run the test suite in the build or not (default:
#           run it in native builds; it adds seconds and a few packages)
#   --keep  leave the unpacked chroot in the work folder, for a look
#
# Everything lives under ${VGICD_CACHE:-/var/cache/vgicd}/deb-chroot, never
# in the repository:
#   chroots/SUITE-ARCH-KEY.tar   the clean chroot (mmdebstrap --variant=buildd),
#                                built on first use and again when its recipe
#                                or the mirrors change, or after 14 days
#   apt/SUITE-ARCH/              the .debs apt downloaded, so a warm run
#                                downloads nothing that did not change
#   SUITE-ARCH/                  the results: .dsc, .tar.xz, .debs, .buildinfo,
#                                .changes, build.log, lintian.log
# The mirrors are this machine's apt sources
# (/etc/apt/sources.list.d/debian.sources), read at run time, with the
# host's codename swapped for SUITE: the repository names no archive host.
#
# Runs under the heavy-work lock, as a whole (every step is a download, an
# unpack or a compile).  Exit status: non-zero when the chroot cannot be
# made, the build fails, the purge leaves vgicd's files behind, or lintian
# reports an error or a warning that debian/*.lintian-overrides does not
# override with its reason.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib/common.sh"

usage() {
	echo "usage: $0 SUITE ARCH [--head] [--check|--nocheck] [--keep]" >&2
	exit 2
}

SUITE=
ARCH=
HEAD=
CHECK=
KEEP=
for a in "$@"; do
	case $a in
	--head) HEAD=1 ;;
	--check) CHECK=1 ;;
	--nocheck) CHECK=0 ;;
	--keep) KEEP=1 ;;
	-h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	-*) usage ;;
	*) if [ -z "$SUITE" ]; then SUITE=$a; elif [ -z "$ARCH" ]; then ARCH=$a; else usage; fi ;;
	esac
done
[ -n "$SUITE" ] && [ -n "$ARCH" ] || usage
[ "$(id -u)" -eq 0 ] || { echo "build-chroot.sh: run it as root (mmdebstrap, chroot)" >&2; exit 2; }

heavy_script "$@"

T_START=$(date +%s.%N)
BUILD_ARCH=$(dpkg --print-architecture)
CROSS=
[ "$ARCH" = "$BUILD_ARCH" ] || CROSS=1
# Cross-built binaries cannot run here, so their tests cannot either.
if [ -n "$CROSS" ]; then
	[ "${CHECK:-0}" = 0 ] || { echo "build-chroot.sh: --check needs a native build" >&2; exit 2; }
	CHECK=0
fi
CHECK=${CHECK:-1}
PROFILES=
[ -n "$CROSS" ] && PROFILES=cross
[ "$CHECK" = 1 ] || PROFILES=${PROFILES:+$PROFILES,}nocheck

TOP=$VGICD_CACHE/deb-chroot
OUT=$TOP/$SUITE-$ARCH
WORK=$TOP/work/$SUITE-$ARCH
ROOT=$WORK/root
APT_CACHE=$TOP/apt/$SUITE-$ARCH
VERSION=$(dpkg-parsechangelog -l "$VGICD_ROOT/debian/changelog" -S Version)

step_begin "packages"
need_packages "${PKGS_CHROOT[@]}"
step_end

# ------------------------------------------------------------ the chroot

# The mirrors: the host's, for SUITE (deb_suite_lines).
mapfile -t MIRRORS < <(deb_suite_lines "$SUITE")
[ ${#MIRRORS[@]} -gt 0 ] || { echo "build-chroot.sh: no deb sources in $DEBIAN_SOURCES" >&2; exit 1; }

# The buildd variant is what Debian's build daemons start from: Essential
# plus build-essential.  A cross chroot also has the host architecture and
# its cross toolchain, as sbuild adds them.  Recommends stay out, as on a
# buildd, so that a missing Build-Depends is not hidden by a recommended
# package.  The lists are kept for the next run's apt-get update.
INCLUDE=
ARCHES=$BUILD_ARCH
if [ -n "$CROSS" ]; then
	INCLUDE=crossbuild-essential-$ARCH
	ARCHES=$BUILD_ARCH,$ARCH
fi
# Bump to force a rebuild when the recipe below changes.
RECIPE=1
MAX_AGE_DAYS=14
key=$(printf '%s\n' "$RECIPE" "$SUITE" "$ARCHES" "$INCLUDE" "${DEB_SCRATCH_ROOT_OPTS[@]}" "${MIRRORS[@]}" | sha256sum | cut -c1-12)
TARBALL=$TOP/chroots/$SUITE-$ARCH-$key.tar

step_begin "clean chroot $SUITE ($ARCHES)"
if [ -f "$TARBALL" ] && [ -z "$(find "$TARBALL" -mtime +"$MAX_AGE_DAYS")" ]; then
	echo "cached: $TARBALL"
else
	mkdir -p "$TOP/chroots"
	rm -f "$TOP/chroots/$SUITE-$ARCH-"*.tar
	printf '  %s\n' "${MIRRORS[@]}"
	mmdebstrap --quiet --mode=root --format=tar --variant=buildd --architectures="$ARCHES" \
		"${DEB_SCRATCH_ROOT_OPTS[@]}" \
		${INCLUDE:+--include="$INCLUDE"} \
		--aptopt='APT::Install-Recommends "false"' \
		--aptopt='Acquire::Languages "none"' \
		--skip=cleanup/apt/lists \
		--customize-hook='chroot "$1" useradd --create-home --shell /bin/bash builder' \
		"$SUITE" "$TARBALL.tmp" "${MIRRORS[@]}"
	mv "$TARBALL.tmp" "$TARBALL"
	echo "built: $TARBALL, $(du -h "$TARBALL" | cut -f1)"
fi
step_end

TIMES_SHOWN=
show_times() {
	[ -z "$TIMES_SHOWN" ] || return 0
	TIMES_SHOWN=1
	print_step_times
	printf '  %-44s %7.1f s\n' total "$(echo "$(date +%s.%N) - $T_START" | bc)"
}

cleanup() {
	local rc=$?
	# A failed run says where its time went too.
	show_times
	# The chroot's mounts live in in_chroot's own mount namespace and went
	# with it, so this removes files only.
	if [ -z "$KEEP" ]; then rm -rf "$WORK"; else echo "chroot kept: $ROOT"; fi
	return $rc
}
trap cleanup EXIT

step_begin "unpack the chroot"
rm -rf "$WORK"
mkdir -p "$ROOT" "$APT_CACHE/partial"
tar -C "$ROOT" -xf "$TARBALL"
# apt inside needs a resolver; the chroot has none of its own.
cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf"
step_end

# in_chroot [--user] CMD... - run CMD in the chroot, as root or (--user) as
# the unprivileged "builder", with a clean environment.  /proc and /dev are
# mounted in a mount namespace of its own, so nothing is left mounted on the
# host whatever happens; apt's download cache is bound from the cache.
in_chroot() {
	local user=()
	if [ "${1:-}" = --user ]; then
		user=(runuser -u builder --)
		shift
	fi
	unshare --mount --pid --fork --kill-child -- bash -c '
		set -e
		root=$1 cache=$2
		shift 2
		mount -t proc proc "$root/proc"
		mount --rbind /dev "$root/dev"
		mount --bind "$cache" "$root/var/cache/apt/archives"
		exec chroot "$root" "$@"' sh "$ROOT" "$APT_CACHE" \
		/usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
		HOME=/root DEBIAN_FRONTEND=noninteractive "${user[@]}" "$@"
}

# apt_log NAME CMD... - run an apt command in the chroot, its output in
# $OUT/NAME.log, shown only when it fails.
apt_log() {
	local name=$1
	shift
	if ! in_chroot "$@" > "$OUT/$name.log" 2>&1; then
		tail -40 "$OUT/$name.log" >&2
		echo "build-chroot.sh: $* failed in the $SUITE chroot; the log is $OUT/$name.log" >&2
		exit 1
	fi
}

rm -rf "$OUT"
mkdir -p "$OUT"

step_begin "apt-get update, dist-upgrade"
# A cached chroot catches up with the suite's updates (point releases,
# security), as a buildd's does before each build.
apt_log apt-update apt-get -q update
apt_log apt-upgrade apt-get -q -y dist-upgrade
step_end

# --------------------------------------------------------------- source

step_begin "source package"
src=$ROOT/build/vgicd-$VERSION
vgicd_export_tree "$src" "$HEAD"
in_chroot chown -R builder:builder /build
# The build starts from what dpkg-source unpacks, as on a buildd, so a file
# that the source package would leave out cannot make the build pass.
in_chroot --user sh -c "cd /build && dpkg-source -b vgicd-$VERSION && \
	dpkg-source -x vgicd_$VERSION.dsc src" > "$OUT/source.log" 2>&1 ||
	{ cat "$OUT/source.log" >&2; exit 1; }
grep '^dpkg-source: info: building' "$OUT/source.log" || true
step_end

step_begin "Build-Depends${PROFILES:+ (profiles $PROFILES)}"
bd=(apt-get -q -y build-dep)
[ -z "$CROSS" ] || bd+=(--host-architecture "$ARCH")
[ -z "$PROFILES" ] || bd+=(--build-profiles "$PROFILES")
apt_log build-deps "${bd[@]}" "/build/vgicd_$VERSION.dsc"
echo "$(grep -c '^Setting up' "$OUT/build-deps.log" || true) packages installed"
step_end

# ---------------------------------------------------------------- build

step_begin "dpkg-buildpackage -b${CROSS:+ --host-arch $ARCH}${PROFILES:+ -P$PROFILES}"
dbp=(dpkg-buildpackage -us -uc -b)
[ -z "$CROSS" ] || dbp+=(--host-arch "$ARCH")
[ -z "$PROFILES" ] || dbp+=(-P"$PROFILES")
opts="parallel=$(nproc)"
[ "$CHECK" = 1 ] || opts+=" nocheck"
# Unprivileged, as on a buildd (Rules-Requires-Root: no) -- except with the
# test suite, which assumes root: the daemon tests' vgicd.conf allows only
# root (AllowUsers), their bus policy lets only root or the vgicd user own
# the name, and the units test has systemd-tmpfiles chown.
as=(--user)
[ "$CHECK" = 0 ] || as=()
rc=0
in_chroot "${as[@]}" env DEB_BUILD_OPTIONS="$opts" sh -c 'cd /build/src && exec "$@"' sh "${dbp[@]}" \
	> "$OUT/build.log" 2>&1 || rc=$?
step_end
if [ $rc -ne 0 ]; then
	tail -60 "$OUT/build.log"
	echo "build-chroot.sh: dpkg-buildpackage failed (exit $rc); the whole log is $OUT/build.log" >&2
	exit $rc
fi
grep -E "^dpkg-gensymbols|^dpkg-shlibdeps: warning|^dh_missing|^Ok: +[0-9]|^Fail: +[0-9]" "$OUT/build.log" || true

cp "$ROOT"/build/*.dsc "$ROOT"/build/*.tar.* "$ROOT"/build/*.deb \
	"$ROOT"/build/*.buildinfo "$ROOT"/build/*.changes "$OUT/"
CHANGES=vgicd_${VERSION}_$ARCH.changes
echo
echo "Packages ($SUITE, $ARCH):"
for deb in "$OUT"/*.deb; do
	printf '  %-48s %8s bytes\n' "$(basename "$deb")" "$(stat -c %s "$deb")"
done

# -------------------------------------------------------------- lintian

step_begin "lintian ($SUITE's)"
# The suite's own lintian, installed after the build so that it cannot
# stand in for a missing Build-Depends.  Source and binaries are checked.
apt_log lintian-install apt-get -q -y install lintian
in_chroot --user sh -c "cd /build && lintian --version && \
	lintian --info --display-info --tag-display-limit 0 $CHANGES vgicd_$VERSION.dsc" \
	> "$OUT/lintian.log" 2>&1 || true
step_end
# Keep the download cache to what the suite still has.
in_chroot apt-get -q autoclean >/dev/null 2>&1 || true

echo
echo "lintian $(head -1 "$OUT/lintian.log") on $SUITE/$ARCH (by severity; overrides are explained in debian/*.lintian-overrides):"
for sev in E W I P; do
	printf '  %s: %s\n' "$sev" "$(grep -c "^$sev: " "$OUT/lintian.log" || true)"
done
grep -E '^[EWI]: ' "$OUT/lintian.log" | sed 's/^/  /' || true

# ------------------------------------------------- install, run, purge

# What `apt-get purge vgicd` leaves, on a host where vgicd ran: the .debs
# installed in the clean chroot (their maintainer scripts run as on a host
# without a running systemd: sysusers and tmpfiles run, units are enabled,
# nothing started), vgicd started as vgicd.service starts it (its user, its
# default paths, its supplementary group kvm, the socket's group; the
# system bus that dbus.service would start; its own --socket for want of
# vgicd.socket), `vgicctl mode` saving the mode in
# /var/lib/vgicd through the running vgicd, and an operator's files in
# /etc/vgicd (vms.conf edited, a copy dpkg does not know).  Then the purge,
# and nothing of vgicd may be left: not /var/lib/vgicd, /etc/vgicd or
# /run/vgicd, no file named after vgicd that no installed package owns
# (the rest of /run, volatile, is not searched).  The vgicd user stays
# (Debian does not remove system users: files elsewhere may still carry
# their ids).
# Native builds only: cross-built binaries cannot run here.
PURGE_SCRIPT=$(cat <<'EOF'
set -eu
fail() { echo "build-chroot.sh: $*" >&2; exit 1; }
debs=$(ls /build/vgicd_*.deb /build/libvgicd0_*.deb)
apt-get -q -y install $debs
mkdir -p /run/dbus
dbus-daemon --system --fork
runuser -u vgicd -g vgicd -G kvm -- vgicd --socket /tmp/vgicd.sock > /tmp/vgicd.log 2>&1 &
vgicd_pid=$!
i=0
until vgicctl status > /dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 100 ] || { cat /tmp/vgicd.log; fail "vgicd did not come up on the system bus in 20 s"; }
	sleep 0.2
done
vgicctl mode single
[ -f /var/lib/vgicd/state.conf ] ||
	fail "vgicctl mode single saved no /var/lib/vgicd/state.conf; the test sets up nothing for purge to remove"
echo "saved by vgicd: $(ls -l /var/lib/vgicd/state.conf)"
printf '\n[name purge-test]\nMode=off\n' >> /etc/vgicd/vms.conf
cp /etc/vgicd/vms.conf /etc/vgicd/vms.conf.before-fleet
kill "$vgicd_pid"
wait "$vgicd_pid" || true
apt-get -q -y purge vgicd
left=
for d in /var/lib/vgicd /etc/vgicd /run/vgicd; do
	if [ -e "$d" ]; then
		echo "build-chroot.sh: apt-get purge vgicd left $d:" >&2
		find "$d" -ls >&2
		left=1
	fi
done
stray=$(find / -xdev \( -path /proc -o -path /dev -o -path /run -o -path /tmp -o -path /build \
	-o -path /var/cache/apt -o -path /var/lib/dpkg -o -path /var/log \) -prune \
	-o -name '*vgicd*' -print | while read -r f; do
		dpkg-query -S "$f" > /dev/null 2>&1 || echo "$f"
	done)
if [ -n "$stray" ]; then
	echo "build-chroot.sh: apt-get purge vgicd left files of vgicd's that no package owns:" >&2
	echo "$stray" >&2
	left=1
fi
[ -z "$left" ] || fail "apt-get purge vgicd does not remove what vgicd made (debian/vgicd.postrm; docs/operations.md §9 says what purge removes)"
getent passwd vgicd > /dev/null || fail "apt-get purge vgicd removed the vgicd user; docs/operations.md §9 says it stays"
echo "purged: /var/lib/vgicd, /etc/vgicd and /run/vgicd gone, no stray vgicd files; the vgicd user stays"
EOF
)
if [ -z "$CROSS" ]; then
	step_begin "install, run vgicd, purge"
	rc=0
	in_chroot sh -c "$PURGE_SCRIPT" > "$OUT/purge.log" 2>&1 || rc=$?
	step_end
	if [ $rc -ne 0 ]; then
		tail -40 "$OUT/purge.log" >&2
		echo "build-chroot.sh: the install, run and purge of the packages failed on $SUITE/$ARCH; the whole log is $OUT/purge.log" >&2
		exit 1
	fi
	grep -E '^(saved by vgicd|purged):' "$OUT/purge.log"
fi

show_times

# Errors and warnings fail; information tags (I:) are reported only.
if grep -qE '^[EW]: ' "$OUT/lintian.log"; then
	echo "build-chroot.sh: lintian reports errors or warnings for $SUITE/$ARCH" >&2
	exit 1
fi
echo "build-chroot.sh: OK ($OUT)"
