#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# run-libvirtd.sh - the qemu.d hook and `vgicctl enable|disable` against a
# REAL libvirtd: two instances (A and B) on this machine, each in its own
# mount namespace, a small TCG guest live-migrated from A to B.
#
#   bash tests/libvirt/run-libvirtd.sh [BUILDDIR]
#
# As root.  BUILDDIR holds a build with libvirt enabled (default
# $VGICD_BUILD/gcc, built if missing).  Work files go to a temporary folder;
# nothing is written to the repository; libvirt's QEMU capability cache is
# kept in ${VGICD_CACHE:-/var/cache/vgicd}/libvirt-{A,B}.  Heavy (QEMU under
# TCG): it runs under the heavy-work lock, as a whole.
#
# What it checks:
#   1. an opted-in domain (required="no") migrates A -> B with vgicd up on B
#      (the real vgicd binary): B's running definition carries B's
#      -global kvm-arm-gicv3.vgicd=unix:path=... and QEMU got it;
#   2. with vgicd stopped on B, a required domain's migration fails: virsh
#      exits non-zero printing the hook's message, the domain runs on A;
#   3. a required domain does not start on A while A's vgicd is down;
#   4. vgicctl enable refuses the x86 guest; on an aarch64 (TCG) definition
#      enable/disable edit the persistent XML; on a running aarch64 guest
#      enable also changes the live metadata, so migrating it to B gets
#      B's vgicd argument;
#   5. the hook calls libvirtd made, in order (every call is logged).
set -euo pipefail

. "$(dirname "$0")/../../scripts/lib/common.sh"

heavy_script "$@"
if [ "$(id -u)" -ne 0 ]; then
	echo "run-libvirtd.sh: needs root (libvirtd, mount namespaces)" >&2
	exit 77
fi

T_START=$(date +%s.%N)
step_begin "packages"
need_packages "${PKGS_BUILD[@]}" "${PKGS_LIBVIRT[@]}"
id libvirt-qemu >/dev/null 2>&1 ||
	useradd --system --user-group --no-create-home libvirt-qemu
step_end

step_begin "build"
BUILD=${1:-$VGICD_BUILD/gcc}
if [ ! -f "$BUILD/build.ninja" ]; then
	meson setup "$BUILD" "$VGICD_ROOT" -Dlibvirt=enabled >/dev/null
fi
ninja -C "$BUILD" libvirt-hooks/vgicd-qemu-hook daemon/vgicd vgicctl/vgicctl >/dev/null
HOOK=$BUILD/libvirt-hooks/vgicd-qemu-hook
VGICD=$BUILD/daemon/vgicd
VGICCTL=$BUILD/vgicctl/vgicctl
"$VGICCTL" enable --help | grep -q allow-tcg || {
	echo "run-libvirtd.sh: $VGICCTL was built without libvirt" >&2
	exit 1
}
step_end

W=$(mktemp -d /tmp/vgicd-libvirt.XXXXXX)
CREATED_ETC_VGICD=
PASS=0
FAIL=0
pass() { PASS=$((PASS + 1)); echo "  ok   $*"; }
fail() { FAIL=$((FAIL + 1)); echo "  FAIL $*"; }
expect() { # expect DESCRIPTION COMMAND...
	local d=$1
	shift
	if "$@"; then pass "$d"; else fail "$d"; fi
}

uri() { echo "qemu:///system?socket=$W/$1/run/libvirt-sock"; }
V() { # V INSTANCE virsh-args...
	local i=$1
	shift
	virsh -q -c "$(uri "$i")" "$@"
}

declare -A VGICD_PID=()
vgicd_start() {
	local i=$1
	rm -f "$W/$i/vgicd.sock"
	"$VGICD" --no-system-bus --config "$W/$i/etc-vgicd/vgicd.conf" \
		> "$W/$i/vgicd.log" 2>&1 &
	VGICD_PID[$i]=$!
	for _ in $(seq 100); do
		[ -S "$W/$i/vgicd.sock" ] && return 0
		sleep 0.05
	done
	echo "vgicd on $i did not start:" >&2
	cat "$W/$i/vgicd.log" >&2
	return 1
}
vgicd_stop() {
	local i=$1
	[ -n "${VGICD_PID[$i]:-}" ] || return 0
	kill "${VGICD_PID[$i]}" 2>/dev/null || true
	wait "${VGICD_PID[$i]}" 2>/dev/null || true
	VGICD_PID[$i]=
	rm -f "$W/$i/vgicd.sock"
}

cleanup() {
	local i p
	set +e
	for i in A B; do
		[ -S "$W/$i/run/libvirt-sock" ] || continue
		for d in $(V "$i" list --name 2>/dev/null); do
			V "$i" destroy "$d" >/dev/null 2>&1
		done
		if [ -f "$W/$i/run/libvirtd.pid" ]; then
			p=$(cat "$W/$i/run/libvirtd.pid")
			kill "$p" 2>/dev/null
			for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		fi
		# A QEMU left behind (libvirtd killed before destroy).
		for f in "$W/$i"/run/qemu/*.pid; do
			[ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
		done
		vgicd_stop "$i"
	done
	[ -n "$CREATED_ETC_VGICD" ] && rmdir /etc/vgicd 2>/dev/null
	if [ -n "${KEEP:-}" ]; then echo "work files kept in $W"; else rm -rf "$W"; fi
}
trap cleanup EXIT

# One libvirtd in a private mount namespace: its own /etc/libvirt (with the
# hooks), /run/libvirt, /var/lib/libvirt, /var/log/libvirt,
# /var/cache/libvirt and /etc/vgicd (the hook reads Socket= there).
libvirtd_start() {
	local i=$1 d=$W/$1 n
	n=$([ "$i" = A ] && echo 1 || echo 2)
	# QEMU capabilities are probed once per instance and kept (20 s cold).
	local cache=${VGICD_CACHE:-/var/cache/vgicd}/libvirt-$i
	mkdir -p "$d"/{etc/hooks/qemu.d,run,lib,log,etc-vgicd} "$cache"
	cat > "$d/etc/libvirtd.conf" <<-EOF
		host_uuid = "6a3f4b6e-0000-4000-8000-00000000000$n"
		auth_unix_rw = "none"
		auth_unix_ro = "none"
		unix_sock_rw_perms = "0700"
		log_outputs = "3:file:/var/log/libvirt/libvirtd.log"
	EOF
	cat > "$d/etc/qemu.conf" <<-EOF
		user = "root"
		group = "root"
		security_driver = "none"
		dynamic_ownership = 0
		remember_owner = 0
		stdio_handler = "file"
		cgroup_controllers = [ ]
		namespaces = [ ]
	EOF
	# Every hook call, in order, with a timestamp.  It runs first and hands
	# the XML on unchanged, so 50-vgicd gets what libvirt sent.
	cat > "$d/etc/hooks/qemu.d/10-log" <<-EOF
		#!/bin/sh
		echo "\$(date +%s.%N) $i \$*" >> "$W/hooks.log"
		case "\$2" in migrate|restore) exec cat ;; *) exec cat >/dev/null ;; esac
	EOF
	chmod 755 "$d/etc/hooks/qemu.d/10-log"
	# A symlink to the program, as the package installs it.
	ln -s "$(readlink -f "$HOOK")" "$d/etc/hooks/qemu.d/50-vgicd"
	printf '[vgicd]\nSocket=%s\nProbe=false\n' "$d/vgicd.sock" > "$d/etc-vgicd/vgicd.conf"

	unshare -m --propagation private -- sh -ec "
		mount --bind '$d/etc' /etc/libvirt
		mount --bind '$d/run' /run/libvirt
		mount --bind '$d/lib' /var/lib/libvirt
		mount --bind '$d/log' /var/log/libvirt
		mount --bind '$cache' /var/cache/libvirt
		mount --bind '$d/etc-vgicd' /etc/vgicd
		exec libvirtd -d --config /etc/libvirt/libvirtd.conf --pid-file /run/libvirt/libvirtd.pid"
	for _ in $(seq 100); do
		V "$i" version >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "libvirtd $i did not come up" >&2
	tail -20 "$d/log/libvirtd.log" >&2
	return 1
}

# A minimal guest: no disk, no network, no display; the firmware finds
# nothing to boot and the guest idles.  TCG, so any host runs it.
domain_xml() { # domain_xml NAME ARCH REQUIRED(yes|no|"")
	local name=$1 arch=$2 req=$3 machine=pc emulator=/usr/bin/qemu-system-x86_64 meta=
	if [ "$arch" = aarch64 ]; then
		machine=virt
		emulator=/usr/bin/qemu-system-aarch64
	fi
	[ -n "$req" ] && meta="<metadata><vgicd:vgicd xmlns:vgicd=\"https://vgicd.example/xmlns/1\" required=\"$req\"/></metadata>"
	cat <<-EOF
		<domain type='qemu'>
		  <name>$name</name>
		  $meta
		  <memory unit='MiB'>64</memory>
		  <vcpu>1</vcpu>
		  <os><type arch='$arch' machine='$machine'>hvm</type></os>
		  <devices>
		    <emulator>$emulator</emulator>
		    <memballoon model='none'/>
		  </devices>
		</domain>
	EOF
}

migrate() { # migrate DOMAIN - A to B, live; virsh's stderr in $W/migrate.err
	virsh -c "$(uri A)" migrate --live "$1" "qemu+unix:///system?socket=$W/B/run/libvirt-sock" \
		--migrateuri tcp://127.0.0.1 --listen-address 127.0.0.1 2> "$W/migrate.err"
}

timed() { # timed LABEL COMMAND... - run, print how long it took, keep status
	local label=$1 t0 t1 rc=0
	shift
	t0=$(date +%s.%N)
	"$@" || rc=$?
	t1=$(date +%s.%N)
	printf '  time %-44s %6.2f s (exit %d)\n' "$label" "$(echo "$t1 - $t0" | bc)" "$rc" >&2
	return $rc
}

if [ ! -d /etc/vgicd ]; then
	mkdir /etc/vgicd
	CREATED_ETC_VGICD=1
fi
mkdir -p /run/libvirt /var/lib/libvirt /var/log/libvirt /var/cache/libvirt

step_begin "two libvirtd (A, B) and vgicd on both"
libvirtd_start A
libvirtd_start B
vgicd_start A
vgicd_start B
step_end
SOCK_B=$W/B/vgicd.sock
SOCK_A=$W/A/vgicd.sock

step_begin "1. opted-in domain, vgicd up on B: migrate A -> B"
domain_xml vgicd-t1 x86_64 no > "$W/t1.xml"
V A define "$W/t1.xml" >/dev/null
echo "--- test 1" >> "$W/hooks.log"
timed "start t1 on A" V A start vgicd-t1 >/dev/null
if timed "virsh migrate --live t1 A -> B" migrate vgicd-t1; then
	pass "t1 migrated to B"
else
	fail "t1 migration: $(cat "$W/migrate.err")"
fi
expect "t1 runs on B" [ "$(V B domstate vgicd-t1 2>/dev/null)" = running ]
expect "t1 no longer runs on A" [ "$(V A domstate vgicd-t1 2>/dev/null)" = "shut off" ]
V B dumpxml vgicd-t1 > "$W/t1-on-B.xml" 2>/dev/null || true
expect "B's running definition has -global kvm-arm-gicv3.vgicd=unix:path=<B's socket>" \
	grep -Fq -B1 "value='kvm-arm-gicv3.vgicd=unix:path=$SOCK_B'" "$W/t1-on-B.xml"
expect "... right after -global" \
	bash -c "grep -F -B1 \"kvm-arm-gicv3.vgicd=\" '$W/t1-on-B.xml' | head -1 | grep -q \"value='-global'\""
expect "... exactly once" [ "$(grep -c 'kvm-arm-gicv3.vgicd=' "$W/t1-on-B.xml")" = 1 ]
expect "B's running definition keeps the vgicd metadata" grep -q 'vgicd.example/xmlns/1' "$W/t1-on-B.xml"
expect "B's running definition validates (virt-xml-validate)" \
	bash -c "virt-xml-validate '$W/t1-on-B.xml' domain >/dev/null 2>&1"
expect "B's QEMU was started with the argument" \
	grep -Fq -- "-global kvm-arm-gicv3.vgicd=unix:path=$SOCK_B" "$W/B/log/qemu/vgicd-t1.log"
V A dumpxml --inactive vgicd-t1 > "$W/t1-on-A.xml"
expect "A's persistent definition is untouched (no argument)" \
	bash -c "! grep -q kvm-arm-gicv3 '$W/t1-on-A.xml'"
step_end

step_begin "2. required domain, vgicd stopped on B: migration refused"
domain_xml vgicd-t2 x86_64 yes > "$W/t2.xml"
V A define "$W/t2.xml" >/dev/null
echo "--- test 2" >> "$W/hooks.log"
timed "start t2 on A (vgicd up on A)" V A start vgicd-t2 >/dev/null
vgicd_stop B
if timed "virsh migrate --live t2 A -> B (refused)" migrate vgicd-t2; then
	fail "t2 migrated although vgicd is down on B"
else
	pass "virsh migrate exits non-zero"
fi
echo "  virsh printed: $(cat "$W/migrate.err")"
cp "$W/migrate.err" "$W/refusal.txt"
expect "virsh printed the hook's message (domain, host, remedy)" \
	bash -c "grep -q \"refusing incoming migration of domain 'vgicd-t2'\" '$W/migrate.err' &&
		grep -q 'systemctl start vgicd.socket' '$W/migrate.err' &&
		grep -q \"$(hostname)\" '$W/migrate.err'"
expect "t2 still runs on A" [ "$(V A domstate vgicd-t2 2>/dev/null)" = running ]
expect "t2 is not on B" bash -c "! virsh -q -c '$(uri B)' domstate vgicd-t2 >/dev/null 2>&1"
step_end

step_begin "3. required domain, vgicd down on A: start refused"
domain_xml vgicd-t3 x86_64 yes > "$W/t3.xml"
V A define "$W/t3.xml" >/dev/null
vgicd_stop A
echo "--- test 3" >> "$W/hooks.log"
if timed "virsh start t3 on A (refused)" V A start vgicd-t3 > /dev/null 2> "$W/start.err"; then
	fail "t3 started although vgicd is down on A"
else
	pass "virsh start exits non-zero"
fi
echo "  virsh printed: $(cat "$W/start.err")"
expect "virsh start printed the hook's message" \
	grep -q "domain 'vgicd-t3' requires vgicd, but vgicd is not reachable" "$W/start.err"
expect "t3 is not running" [ "$(V A domstate vgicd-t3)" = "shut off" ]
vgicd_start A
vgicd_start B
step_end

step_begin "4. vgicctl enable|disable against libvirtd A"
export VGICD_SOCKET=$SOCK_A
rc=0
"$VGICCTL" enable vgicd-t1 --connect "$(uri A)" > "$W/out" 2> "$W/err" || rc=$?
echo "  vgicctl printed: $(cat "$W/err")"
expect "enable refuses the x86_64 domain (exit 3)" [ "$rc" = 3 ]
expect "... saying why" grep -q "architecture is x86_64, not aarch64" "$W/err"
rc=0
"$VGICCTL" enable no-such-domain --connect "$(uri A)" > "$W/out" 2> "$W/err" || rc=$?
expect "enable of an unknown domain: exit 3" [ "$rc" = 3 ]
rc=0
"$VGICCTL" enable vgicd-t1 --connect "qemu:///system?socket=$W/nowhere" > "$W/out" 2> "$W/err" || rc=$?
expect "libvirt unreachable: exit 2" [ "$rc" = 2 ]

# aarch64 type='kvm' cannot be defined on an x86 host (no KVM for aarch64
# in its capabilities); the edit itself is tested on type='qemu' with
# --allow-tcg.
sed "s/type='qemu'/type='kvm'/" < <(domain_xml vgicd-arm-kvm aarch64 "") > "$W/arm-kvm.xml"
if V A define "$W/arm-kvm.xml" > /dev/null 2> "$W/err"; then
	echo "  note: an aarch64 KVM domain was definable here"
	V A undefine vgicd-arm-kvm >/dev/null
else
	echo "  note: aarch64 type='kvm' is not definable on this host: $(head -1 "$W/err")"
fi
domain_xml vgicd-arm aarch64 "" > "$W/arm.xml"
V A define "$W/arm.xml" >/dev/null
V A dumpxml --inactive vgicd-arm > "$W/arm-before.xml"
rc=0
"$VGICCTL" enable vgicd-arm --connect "$(uri A)" > "$W/out" 2> "$W/err" || rc=$?
expect "enable refuses type='qemu' without --allow-tcg (exit 3)" [ "$rc" = 3 ]
expect "... saying why" grep -q "type is qemu, not kvm" "$W/err"
rc=0
timed "vgicctl enable --required --allow-tcg" \
	"$VGICCTL" enable vgicd-arm --required --allow-tcg --connect "$(uri A)" > "$W/out" 2> "$W/err" || rc=$?
echo "  vgicctl printed: $(cat "$W/out") / $(cat "$W/err")"
expect "enable --required: exit 0" [ "$rc" = 0 ]
expect "... warns that this host's QEMU has no vgicd property" grep -q "QEMU cannot use vgicd" "$W/err"
V A dumpxml --inactive vgicd-arm > "$W/arm-enabled.xml"
expect "... persistent XML: metadata required=yes" \
	grep -q "<vgicd:vgicd xmlns:vgicd=\"https://vgicd.example/xmlns/1\" required=\"yes\"/>" "$W/arm-enabled.xml"
expect "... persistent XML: the argument with this host's socket" \
	grep -Fq "value='kvm-arm-gicv3.vgicd=unix:path=$SOCK_A'" "$W/arm-enabled.xml"
expect "... validates" bash -c "virt-xml-validate '$W/arm-enabled.xml' domain >/dev/null 2>&1"
"$VGICCTL" enable vgicd-arm --allow-tcg --connect "$(uri A)" > /dev/null 2>&1
V A dumpxml --inactive vgicd-arm > "$W/arm-enabled2.xml"
expect "enable again without --required: required=no, still one argument" \
	bash -c "grep -q 'required=\"no\"' '$W/arm-enabled2.xml' &&
		[ \$(grep -c kvm-arm-gicv3.vgicd= '$W/arm-enabled2.xml') = 1 ]"
rc=0
"$VGICCTL" disable vgicd-arm --connect "$(uri A)" > "$W/out" 2> "$W/err" || rc=$?
V A dumpxml --inactive vgicd-arm > "$W/arm-disabled.xml"
expect "disable: exit 0" [ "$rc" = 0 ]
expect "disable gives back the original definition exactly" cmp -s "$W/arm-before.xml" "$W/arm-disabled.xml"
diff "$W/arm-before.xml" "$W/arm-disabled.xml" | head -10 || true

# enable on a running domain changes its live metadata: its next migration
# gets B's argument from B's hook, although A's QEMU was started without.
echo "--- test 4" >> "$W/hooks.log"
if timed "start the aarch64 TCG guest on A" V A start vgicd-arm > /dev/null 2> "$W/err"; then
	"$VGICCTL" enable vgicd-arm --allow-tcg --connect "$(uri A)" > "$W/out" 2> "$W/err" || true
	expect "enable on the running domain sets its live metadata" \
		bash -c "virsh -q -c '$(uri A)' dumpxml vgicd-arm | grep -q 'vgicd.example/xmlns/1'"
	if timed "virsh migrate --live aarch64 guest A -> B" migrate vgicd-arm; then
		pass "the aarch64 guest migrated to B"
		expect "B runs it with B's vgicd argument" \
			bash -c "virsh -q -c '$(uri B)' dumpxml vgicd-arm | grep -Fq 'kvm-arm-gicv3.vgicd=unix:path=$SOCK_B'"
	else
		fail "the aarch64 guest did not migrate: $(cat "$W/migrate.err")"
	fi
else
	echo "  note: the aarch64 TCG guest does not start here: $(cat "$W/err")"
fi
unset VGICD_SOCKET
step_end

echo
echo "Hook calls, in order (instance, domain, operation, sub-operation, extra):"
T0=$(awk '/^[0-9]/ {print $1; exit}' "$W/hooks.log")
awk -v t0="$T0" '/^---/ {print "  " $0; next} {printf "  %+8.3f s  %s\n", $1 - t0, substr($0, index($0, $2))}' "$W/hooks.log"
cp "$W/hooks.log" "${HOOK_LOG_COPY:-/dev/null}" 2>/dev/null || true

print_step_times
printf '  %-44s %7.1f s\n' "total" "$(echo "$(date +%s.%N) - $T_START" | bc)"
echo
echo "run-libvirtd: $PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
