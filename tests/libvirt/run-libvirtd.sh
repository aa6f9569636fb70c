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
#   1. a domain with vgicd metadata (required="no") migrates A -> B with
#      vgicd up on B (the real vgicd binary): the hook writes nothing, so B
#      runs libvirt's own definition, with no vgicd argument, and B's domain
#      log shows no custom-argv or hook-script taint; B's hook handed the
#      domain's choice to B's vgicd, A's forgot it when the domain left;
#   2. with vgicd stopped on B, a required domain's migration fails: virsh
#      exits non-zero printing the hook's message, the domain runs on A;
#   3. a required domain does not start on A while A's vgicd is down;
#   4. vgicctl enable refuses the x86 guest; on an aarch64 (TCG) definition
#      enable/disable edit the metadata only, and remove the argument of
#      earlier versions; on a running aarch64 guest enable also changes the
#      live metadata, so that migrating it to B hands the choice to B;
#   5. a domain that still carries that argument migrates to B, whose QEMU
#      has no vgicd property: B's hook removes the argument (and that is
#      the one case where the hook writes, so libvirt taints hook-script);
#   6. the hook calls libvirtd made, in order (every call is logged).
set -euo pipefail
case ${1:-} in
-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac

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
CREATED_RUN_VGICD=
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
		--state "$W/$i/vgicd-state.conf" --vms-conf "$W/$i/etc-vgicd/vms.conf" \
		--vms-dir "$W/$i/run-vgicd/vms" > "$W/$i/vgicd.log" 2>&1 &
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
	[ -n "$CREATED_RUN_VGICD" ] && rmdir /run/vgicd 2>/dev/null
	if [ -n "${KEEP:-}" ]; then echo "work files kept in $W"; else rm -rf "$W"; fi
}
trap cleanup EXIT

# One libvirtd in a private mount namespace: its own /etc/libvirt (with the
# hooks), /run/libvirt, /var/lib/libvirt, /var/log/libvirt,
# /var/cache/libvirt, /etc/vgicd (the hook reads Socket= there) and
# /run/vgicd (the hook hands domains' choices to vgicd there).
libvirtd_start() {
	local i=$1 d=$W/$1 n
	n=$([ "$i" = A ] && echo 1 || echo 2)
	# QEMU capabilities are probed once per instance and kept (20 s cold).
	local cache=${VGICD_CACHE:-/var/cache/vgicd}/libvirt-$i
	mkdir -p "$d"/{etc/hooks/qemu.d,run,lib,log,etc-vgicd,run-vgicd/vms} "$cache"
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
	# Every hook call, in order, with a timestamp.  It runs first and
	# writes nothing, so that libvirt hands 50-vgicd its own XML and uses
	# it as it is unless 50-vgicd writes some.
	cat > "$d/etc/hooks/qemu.d/10-log" <<-EOF
		#!/bin/sh
		echo "\$(date +%s.%N) $i \$*" >> "$W/hooks.log"
		exec cat >/dev/null
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
		mount --bind '$d/run-vgicd' /run/vgicd
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
domain_xml() { # domain_xml NAME ARCH REQUIRED(yes|no|"") [old-arg]
	local name=$1 arch=$2 req=$3 machine=pc emulator=/usr/bin/qemu-system-x86_64 meta='' ns='' cl=''
	if [ "$arch" = aarch64 ]; then
		machine=virt
		emulator=/usr/bin/qemu-system-aarch64
	fi
	[ -n "$req" ] && meta="<metadata><vgicd:vgicd xmlns:vgicd=\"https://vgicd.example/xmlns/1\" required=\"$req\"/></metadata>"
	if [ "${4:-}" = old-arg ]; then
		ns=" xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'"
		cl="<qemu:commandline><qemu:arg value='-global'/><qemu:arg value='kvm-arm-gicv3.vgicd=unix:path=/run/vgicd/vgicd.sock'/></qemu:commandline>"
	fi
	cat <<-EOF
		<domain type='qemu'$ns>
		  <name>$name</name>
		  $meta
		  <memory unit='MiB'>64</memory>
		  <vcpu>1</vcpu>
		  <os><type arch='$arch' machine='$machine'>hvm</type></os>
		  <devices>
		    <emulator>$emulator</emulator>
		    <memballoon model='none'/>
		  </devices>
		  $cl
		</domain>
	EOF
}

uuid_of() { # uuid_of INSTANCE DOMAIN
	V "$1" domuuid "$2" 2>/dev/null | head -1
}

# no_taint INSTANCE DOMAIN KIND - libvirt's domain log has no such taint
no_taint() {
	! grep -q "tainted: $3" "$W/$1/log/qemu/$2.log"
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
if [ ! -d /run/vgicd ]; then
	mkdir /run/vgicd
	CREATED_RUN_VGICD=1
fi
mkdir -p /run/libvirt /var/lib/libvirt /var/log/libvirt /var/cache/libvirt

step_begin "two libvirtd (A, B) and vgicd on both"
libvirtd_start A
libvirtd_start B
vgicd_start A
vgicd_start B
step_end
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
expect "B's running definition has no vgicd argument" \
	bash -c "! grep -q 'kvm-arm-gicv3' '$W/t1-on-B.xml'"
expect "B's running definition keeps the vgicd metadata" grep -q 'vgicd.example/xmlns/1' "$W/t1-on-B.xml"
expect "B's QEMU was started without a vgicd argument" \
	bash -c "! grep -q 'kvm-arm-gicv3' '$W/B/log/qemu/vgicd-t1.log'"
expect "no hook-script taint on B (the hook wrote nothing)" no_taint B vgicd-t1 hook-script
expect "no custom-argv taint on B" no_taint B vgicd-t1 custom-argv
grep -h 'tainted' "$W/B/log/qemu/vgicd-t1.log" | sed 's/^/  (B) /' | sort -u || true
T1_UUID=$(uuid_of B vgicd-t1)
expect "B's hook handed the domain's choice to B's vgicd" \
	grep -qx 'Choice=wanted' "$W/B/run-vgicd/vms/$T1_UUID.conf"
expect "A's hook forgot it when the domain left A" [ ! -e "$W/A/run-vgicd/vms/$T1_UUID.conf" ]
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
domain_xml vgicd-arm aarch64 "" old-arg > "$W/arm.xml"
V A define "$W/arm.xml" >/dev/null
V A dumpxml --inactive vgicd-arm > "$W/arm-before.xml"
expect "the aarch64 definition carries the argument of earlier versions" \
	grep -q 'kvm-arm-gicv3.vgicd=' "$W/arm-before.xml"
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
expect "... says it removed the old argument" grep -q "removed the argument" "$W/out"
V A dumpxml --inactive vgicd-arm > "$W/arm-enabled.xml"
expect "... persistent XML: metadata required=yes" \
	grep -q "<vgicd:vgicd xmlns:vgicd=\"https://vgicd.example/xmlns/1\" required=\"yes\"/>" "$W/arm-enabled.xml"
expect "... persistent XML: no vgicd argument" bash -c "! grep -q kvm-arm-gicv3 '$W/arm-enabled.xml'"
expect "... validates" bash -c "virt-xml-validate '$W/arm-enabled.xml' domain >/dev/null 2>&1"
"$VGICCTL" enable vgicd-arm --allow-tcg --connect "$(uri A)" --json=pretty > "$W/out.json" 2>/dev/null
V A dumpxml --inactive vgicd-arm > "$W/arm-enabled2.xml"
expect "enable again without --required: required=no" grep -q 'required="no"' "$W/arm-enabled2.xml"
echo "  vgicctl --json printed: $(tr -d '\n' < "$W/out.json")"
expect "... --json=pretty: what was done, as JSON (vgicctl(1))" /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["domain"] == "vgicd-arm" and d["command"] == "enable", d
assert d["choice"] == "wanted" and d["previous"] == "required" and d["changed"] is True, d
' "$W/out.json"
rc=0
"$VGICCTL" disable vgicd-arm --connect "$(uri A)" > "$W/out" 2> "$W/err" || rc=$?
V A dumpxml --inactive vgicd-arm > "$W/arm-disabled.xml"
expect "disable: exit 0" [ "$rc" = 0 ]
expect "disable: metadata mode=off" grep -q 'mode="off"' "$W/arm-disabled.xml"
expect "disable: no required= left" bash -c "! grep -q 'required=' '$W/arm-disabled.xml'"
expect "disable: validates" bash -c "virt-xml-validate '$W/arm-disabled.xml' domain >/dev/null 2>&1"
# (The old argument's going takes libvirt's qemu: namespace declaration,
# which only <qemu:commandline> needed, with it.)
expect "disable: nothing else changed" \
	bash -c "diff <(grep -v 'vgicd\\|metadata\\|commandline\\|qemu:arg' '$W/arm-before.xml' | sed 's/ xmlns:qemu=.[^ >]*//') \
		<(grep -v 'vgicd\\|metadata\\|commandline\\|qemu:arg' '$W/arm-disabled.xml' | sed 's/ xmlns:qemu=.[^ >]*//')"

# enable on a running domain changes its live metadata: its next migration
# hands the choice to B's vgicd, through B's hook.
echo "--- test 4" >> "$W/hooks.log"
if timed "start the aarch64 TCG guest on A" V A start vgicd-arm > /dev/null 2> "$W/err"; then
	"$VGICCTL" enable vgicd-arm --allow-tcg --connect "$(uri A)" > "$W/out" 2> "$W/err" || true
	expect "enable on the running domain sets its live metadata" \
		bash -c "virsh -q -c '$(uri A)' dumpxml vgicd-arm | grep -q 'required=\"no\"'"
	if timed "virsh migrate --live aarch64 guest A -> B" migrate vgicd-arm; then
		pass "the aarch64 guest migrated to B"
		ARM_UUID=$(uuid_of B vgicd-arm)
		expect "B's vgicd has the domain's choice" \
			grep -qx 'Choice=wanted' "$W/B/run-vgicd/vms/$ARM_UUID.conf"
		expect "no hook-script taint on B" no_taint B vgicd-arm hook-script
	else
		fail "the aarch64 guest did not migrate: $(cat "$W/migrate.err")"
	fi
else
	echo "  note: the aarch64 TCG guest does not start here: $(cat "$W/err")"
fi
unset VGICD_SOCKET
step_end

step_begin "5. the argument of earlier versions, migrated to a QEMU without vgicd"
# An x86 QEMU has no kvm-arm-gicv3 and only warns about the -global; the
# hook on B asks B's QEMU, which has no vgicd property, and removes it.
domain_xml vgicd-t5 x86_64 no old-arg > "$W/t5.xml"
V A define "$W/t5.xml" >/dev/null
echo "--- test 5" >> "$W/hooks.log"
timed "start t5 on A" V A start vgicd-t5 >/dev/null
if timed "virsh migrate --live t5 A -> B" migrate vgicd-t5; then
	pass "t5 migrated to B"
else
	fail "t5 migration: $(cat "$W/migrate.err")"
fi
V B dumpxml vgicd-t5 > "$W/t5-on-B.xml" 2>/dev/null || true
expect "B's running definition lost the old argument" \
	bash -c "! grep -q 'kvm-arm-gicv3' '$W/t5-on-B.xml'"
expect "B's QEMU was started without it" \
	bash -c "! grep -q 'kvm-arm-gicv3' '$W/B/log/qemu/vgicd-t5.log'"
expect "B's hook cached its QEMU's answer" \
	grep -q '^Vgicd=false' "$W/B/run-vgicd/emulators/emulators.conf"
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
