#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# check-policies.sh - compile every AppArmor profile and the SELinux module
# vgicd ships, with Debian 12's and Debian 13's own tools and against their
# own libvirt and reference-policy files.
#
#   bash tests/security/check-policies.sh [BUILDDIR]
#
# BUILDDIR (default $VGICD_BUILD/gcc, configured if missing) gives what an
# install ships: `meson install --tags apparmor,selinux` into a stage.
# Downloads (Debian packages, read through scripts/lib/debian-apt.sh, no
# mirror named) are cached in ${VGICD_CACHE:-/var/cache/vgicd}/security;
# work files go to a temporary folder.
#
# Theory of operation
#
#   This machine's kernel has no AppArmor and no SELinux, so nothing is
#   loaded: apparmor_parser -QK compiles the policy to its binary form and
#   stops before the kernel (-S writes it to stdout, counted), and the
#   SELinux module is built into a .pp.  Both are the suites' own binaries,
#   unpacked from their .debs and run through the unpacked dynamic loader,
#   so Debian 13's apparmor_parser 4.1 runs here as it would there.
#
#   For each suite (bookworm, trixie), a tree is made like a host's
#   /etc/apparmor.d: the apparmor package's files, libvirt's (its QEMU
#   abstraction, libvirtd's profile, the VM profile template), then
#   vgicd's staged install; debian/vgicd.postinst runs against it
#   (DPKG_ROOT), as dpkg would, and adds Debian 12's local include or,
#   on 13, leaves the local file alone.  Then:
#     - every shipped profile compiles, and so does a VM profile made the
#       way libvirt's virt-aa-helper makes one (TEMPLATE.qemu, renamed);
#     - each compiles twice: with the suite's feature set, and with that
#       set plus the kernel's AF_UNIX mediation (network/af_unix), where
#       the unix rules are compiled rather than dropped;
#     - the VM profile's preprocessed text (-p) holds vgicd's socket rule,
#       and, as a control, a tree without vgicd's files gives one that
#       does not (so the check is able to fail);
#     - libvirtd's shipped profile still runs /usr/sbin/* under their own
#       profiles (PUx), which is how it may run the hook;
#     - postinst is idempotent, and postrm purge takes its line out again;
#       on 13, a Debian 12 line left from before an upgrade is removed.
#   The SELinux module is built with each suite's selinux-policy-dev
#   headers, checkmodule and semodule_package.
#
# Exit status: 0 when all of it holds, 1 otherwise (each failure printed).
set -euo pipefail
case ${1:-} in
-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
. "$(dirname "$0")/../../scripts/lib/common.sh"

BUILD=${1:-$VGICD_BUILD/gcc}
CACHE=$VGICD_CACHE/security
WORK=$(mktemp -d /tmp/vgicd-policies.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
FAILS=0

ok() { printf '  ok    %s\n' "$*"; }
bad() { printf '  FAIL  %s\n' "$*"; FAILS=$((FAILS + 1)); }
not() { ! "$@"; }
check() {	# check DESCRIPTION CMD... - one assertion
	local what=$1
	shift
	if "$@" >"$WORK/check.out" 2>&1; then ok "$what"; else bad "$what"; sed 's/^/        /' "$WORK/check.out"; fi
}

step_begin "packages"
need_packages "${PKGS_BUILD[@]}" "${PKGS_POLICY[@]}"
step_end

step_begin "what an install ships (meson install --tags apparmor,selinux)"
if [ ! -f "$BUILD/build.ninja" ]; then
	meson setup "$BUILD" >/dev/null
fi
ninja -C "$BUILD" >/dev/null
STAGE=$WORK/stage
meson install -C "$BUILD" --no-rebuild --destdir "$STAGE" --tags apparmor,selinux >/dev/null
SHIPPED_AA=$(find "$STAGE" -type d -name apparmor.d | head -n1)
SHIPPED_SE=$(find "$STAGE" -type d -path '*/vgicd/selinux' | head -n1)
if [ -z "$SHIPPED_AA" ] || [ -z "$SHIPPED_SE" ]; then
	echo "check-policies: nothing staged from $BUILD" >&2
	exit 1
fi
(cd "$SHIPPED_AA" && find . -type f | sort | sed 's|^\./|  /etc/apparmor.d/|')
(cd "$SHIPPED_SE" && find . -type f | sort | sed 's|^\./|  (selinux) |')
PROFILES=()
for f in "$SHIPPED_AA"/*; do
	[ -f "$f" ] && PROFILES+=("$(basename "$f")")
done
step_end

# suite_root SUITE NAME PKG... - unpack PKG... of SUITE into $CACHE/SUITE/NAME
# (once per set of .debs); print the root.
suite_root() {
	local suite=$1 name=$2 root deb debs=()
	shift 2
	root=$CACHE/$suite/$name
	deb_apt_init "security-$suite-$ARCH" "$ARCH" "$suite"
	deb_apt_update
	for p in "$@"; do
		deb=$(deb_download "$CACHE/$suite/debs" "$p")
		debs+=("$(basename "$deb")")
	done
	if [ ! -f "$root.stamp" ] || [ "$(cat "$root.stamp")" != "${debs[*]}" ]; then
		rm -rf "$root"
		mkdir -p "$root"
		for d in "${debs[@]}"; do dpkg-deb -x "$CACHE/$suite/debs/$d" "$root"; done
		printf '%s\n' "${debs[*]}" > "$root.stamp"
	fi
	printf '%s\n' "$root"
}

# in_root ROOT PROGRAM ARGS... - run ROOT's PROGRAM (a path inside ROOT; a
# Debian 12 package may have it without the leading /usr) with ROOT's
# dynamic loader and libraries.
in_root() {
	local root=$1 prog=$2 ld
	shift 2
	ld=$(find "$root/lib" "$root/usr/lib" -name 'ld-linux*.so.*' 2>/dev/null | head -n1)
	[ -e "$root$prog" ] || prog=${prog#/usr}
	"$ld" --library-path "$root/lib/$MULTIARCH:$root/usr/lib/$MULTIARCH" "$root$prog" "$@"
}

# wrapper ROOT PROGRAM - print the path of a script that runs in_root ROOT
# PROGRAM (for make's CHECKMODULE= and SEMOD_PKG=).
wrapper() {
	local w
	w=$WORK/bin/$(basename "$1")-$(basename "$2")
	mkdir -p "$WORK/bin"
	{
		echo '#!/usr/bin/env bash'
		declare -f in_root
		printf 'MULTIARCH=%q
in_root %q %q "$@"\n' "$MULTIARCH" "$1" "$2"
	} > "$w"
	chmod +x "$w"
	printf '%s\n' "$w"
}

# aa_compiles ROOT PARSER-ARGS... - ROOT's apparmor_parser compiles the
# profile (-QKS: to binary policy, on stdout, kernel untouched) and writes
# some policy; its size is printed.
aa_compiles() {
	local root=$1 out
	shift
	out=$(in_root "$root" /usr/sbin/apparmor_parser -QKS "$@" | wc -c) || return 1
	echo "$out bytes of policy"
	[ "$out" -gt 0 ]
}

# aa_expands_to TEXT ROOT PARSER-ARGS... - the preprocessed profile (-p:
# every include expanded) holds TEXT.
aa_expands_to() {
	local text=$1 root=$2 out
	shift 2
	out=$(in_root "$root" /usr/sbin/apparmor_parser -p "$@") || return 1
	grep -qF -- "$text" <<<"$out"
}

# aa_expands_without TEXT ROOT PARSER-ARGS... - it does not.
aa_expands_without() {
	local text=$1 root=$2 out
	shift 2
	out=$(in_root "$root" /usr/sbin/apparmor_parser -p "$@") || return 1
	! grep -qF -- "$text" <<<"$out"
}

# aa_tree SUITE AAROOT DEST [with-vgicd] - DEST is /etc/apparmor.d as on a
# host of SUITE with libvirt (and vgicd) installed; prints nothing.
aa_tree() {
	local aaroot=$2 dest=$3 with=${4:-}
	rm -rf "$dest"
	mkdir -p "$dest"
	cp -a "$aaroot/etc/apparmor.d/." "$dest/"
	# What libvirt's own postinst adds (dh_apparmor, and on Debian 12 an
	# empty local include for each of its abstractions).
	mkdir -p "$dest/local/abstractions"
	for f in usr.sbin.libvirtd usr.lib.libvirt.virt-aa-helper; do
		[ -e "$dest/local/$f" ] || : > "$dest/local/$f"
	done
	if ! grep -q 'libvirt-qemu\.d' "$dest/abstractions/libvirt-qemu"; then
		for f in "$dest"/abstractions/libvirt-*; do
			[ -f "$f" ] && : > "$dest/local/abstractions/$(basename "$f")"
		done
	fi
	if [ -n "$with" ]; then
		cp -a "$SHIPPED_AA/." "$dest/"
	fi
}

# vm_profile TREE - write TREE/libvirt/libvirt-UUID as virt-aa-helper does
# (the template, renamed; its .files include left empty); print its path.
vm_profile() {
	local tree=$1 uuid=5a1c0de5-0000-4000-8000-00000000cafe
	sed "s/LIBVIRT_TEMPLATE/libvirt-$uuid/" "$tree/libvirt/TEMPLATE.qemu" > "$tree/libvirt/libvirt-$uuid"
	printf '%s\n' "$tree/libvirt/libvirt-$uuid"
}

check_suite() {
	local suite=$1 aaroot seroot features tree plain vm p f
	step_begin "$suite: AppArmor"
	aaroot=$(suite_root "$suite" apparmor apparmor libapparmor1 libc6 libstdc++6 libgcc-s1 \
		libvirt-daemon-system libvirt-daemon libvirt-daemon-driver-qemu)
	echo "  apparmor_parser: $(in_root "$aaroot" /usr/sbin/apparmor_parser --version | head -n1)"
	features=$WORK/$suite-features
	cp "$aaroot/usr/share/apparmor-features/features" "$features"
	{ cat "$features"; printf 'network {af_unix {yes\n}\n}\n'; } > "$features-unix"

	tree=$WORK/$suite/apparmor.d
	aa_tree "$suite" "$aaroot" "$tree" with-vgicd
	local qemu_abs=$tree/abstractions/libvirt-qemu local_file=$tree/local/abstractions/libvirt-qemu
	check "libvirt's QEMU abstraction is there" test -f "$qemu_abs"
	local dotd=
	grep -q 'libvirt-qemu\.d' "$qemu_abs" && dotd=1
	if [ -n "$dotd" ]; then
		echo "  libvirt's extension point: abstractions/libvirt-qemu.d/ (Debian 13 style)"
	else
		echo "  libvirt's extension point: local/abstractions/libvirt-qemu only (Debian 12 style)"
	fi

	# dpkg's configure, as on a host: twice, to see it is idempotent.
	DPKG_ROOT=$WORK/$suite-root sh -c 'mkdir -p "$DPKG_ROOT/etc" && ln -sfn "$1" "$DPKG_ROOT/etc/apparmor.d"' sh "$tree"
	DPKG_ROOT=$WORK/$suite-root sh "$VGICD_ROOT/debian/vgicd.postinst" configure
	DPKG_ROOT=$WORK/$suite-root sh "$VGICD_ROOT/debian/vgicd.postinst" configure
	if [ -n "$dotd" ]; then
		check "postinst leaves local/abstractions/libvirt-qemu alone" \
			test ! -s "$local_file"
	else
		check "postinst adds one local include line" \
			test "$(grep -cxF 'include if exists <abstractions/vgicd-qemu>' "$local_file")" = 1
	fi

	vm=$(vm_profile "$tree")
	for p in "${PROFILES[@]}" "libvirt/$(basename "$vm")" usr.sbin.libvirtd; do
		for f in "$features" "$features-unix"; do
			check "compiles: $p (features: $(basename "$f" | sed "s/^$suite-//"))" \
				aa_compiles "$aaroot" -M "$f" -I "$tree" "$tree/$p"
		done
	done
	check "the VM profile holds vgicd's socket rule" \
		aa_expands_to "run/vgicd/vgicd.sock rw" "$aaroot" -I "$tree" "$vm"
	check "the VM profile holds the unix rules to reach vgicd" \
		aa_expands_to "peer=(label=vgicd)" "$aaroot" -I "$tree" "$vm"

	# The control: libvirt without vgicd.
	plain=$WORK/$suite/plain.d
	aa_tree "$suite" "$aaroot" "$plain"
	vm=$(vm_profile "$plain")
	check "control: without vgicd the VM profile has no vgicd rule" \
		aa_expands_without vgicd "$aaroot" -I "$plain" "$vm"

	check "libvirtd's profile runs /usr/sbin/* under their own profiles" \
		grep -qE '^[[:space:]]*/usr/sbin/\*[[:space:]]+PUx,' "$tree/usr.sbin.libvirtd"

	# Purge; and (13) the line a Debian 12 install left, before the upgrade.
	DPKG_ROOT=$WORK/$suite-root sh "$VGICD_ROOT/debian/vgicd.postrm" purge
	check "postrm purge leaves no vgicd line in the local include" \
		not grep -qs vgicd "$local_file"
	if [ -n "$dotd" ]; then
		mkdir -p "$(dirname "$local_file")"
		printf '# site rule\n# Added by the vgicd package: the rules a QEMU needs to reach vgicd.\ninclude if exists <abstractions/vgicd-qemu>\n' > "$local_file"
		DPKG_ROOT=$WORK/$suite-root sh "$VGICD_ROOT/debian/vgicd.postinst" triggered /etc/apparmor.d/abstractions/libvirt-qemu
		check "after an upgrade to libvirt-qemu.d, the old line goes, the site's stays" \
			test "$(cat "$local_file")" = "# site rule"
	fi
	step_end

	step_begin "$suite: SELinux"
	seroot=$(suite_root "$suite" selinux selinux-policy-dev checkpolicy semodule-utils \
		libsepol2 libselinux1 libpcre2-8-0 libc6)
	rm -rf "$WORK/$suite-se"
	cp -a "$SHIPPED_SE" "$WORK/$suite-se"
	local hdr=$seroot/usr/share/selinux/devel/include
	echo "  reference policy: $(tr ' ' '\n' < "$seroot.stamp" | grep '^selinux-policy-dev_')"
	check "the module builds (vgicd.pp)" \
		make -s -C "$WORK/$suite-se" -f "$hdr/Makefile" HEADERDIR="$hdr" NAME=default TYPE=mcs \
			CHECKMODULE="$(wrapper "$seroot" /usr/bin/checkmodule) -M" \
			SEMOD_PKG="$(wrapper "$seroot" /usr/bin/semodule_package)" vgicd.pp
	check "vgicd.pp is written" test -s "$WORK/$suite-se/vgicd.pp"
	step_end
}


ARCH=$(dpkg --print-architecture)
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
for suite in bookworm trixie; do
	check_suite "$suite"
done

print_step_times
echo
if [ "$FAILS" -eq 0 ]; then
	echo "check-policies: every shipped profile and the SELinux module compile (bookworm, trixie)"
else
	echo "check-policies: $FAILS check(s) failed" >&2
	exit 1
fi
