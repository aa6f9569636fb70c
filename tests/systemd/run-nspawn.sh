#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# run-nspawn.sh - vgicd under a real systemd: boots a minimal Debian 12 in
# systemd-nspawn, installs vgicd into it, and checks what an operator relies
# on: socket activation, Type=notify and its STATUS=, the hardened unit
# running as its own user, vgicctl over the container's real system bus (and
# its policy refusing an unprivileged mode change), the mode saved in the
# state directory, not in the configuration file, the journal fields of a
# save, reload by SIGHUP and a clean stop.
#
#   tests/systemd/run-nspawn.sh                  # build tree (meson install)
#   tests/systemd/run-nspawn.sh --from-deb DIR   # the .debs in DIR instead
#       (vgicd's and libvgicd0's; -dev and -dbgsym packages are skipped;
#        tests/debian/build-deb.sh leaves them in /var/cache/vgicd/deb)
#   tests/systemd/run-nspawn.sh --keep           # leave the container up
#
# Root only (mmdebstrap, nspawn, nsenter).  It takes the heavy-work lock
# itself, only around the steps that need it.  The root file system is cached
# under ${VGICD_CACHE:-/var/cache/vgicd}/nspawn (rootfs.sh); the build goes to
# ${VGICD_BUILD:-_build}/nspawn, configured as a package would be (--prefix
# /usr, --sysconfdir /etc).  The container boots with --volatile=overlay, so
# the cached tree is never written to.  Heavy steps (mmdebstrap, compiling)
# take the heavy-work lock; a warm run takes no lock.
#
# The QEMU stand-in is vgicd-sim-client (libvgicd + vgic-sim): it runs in
# the container's namespaces through nsenter, as root, which is what
# vgic-sim's seccomp supervisor needs.
#
# Exit status: 0 when every check passed, 1 otherwise.  Timings at the end.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib/common.sh"

FROM_DEB=
KEEP=
while [ $# -gt 0 ]; do
	case $1 in
	--from-deb) FROM_DEB=$(realpath "${2:?--from-deb needs a directory}"); shift 2 ;;
	--from-deb=*) FROM_DEB=$(realpath "${1#*=}"); shift ;;
	--keep) KEEP=1; shift ;;
	-h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "run-nspawn.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" -eq 0 ] || { echo "run-nspawn.sh: run it as root (mmdebstrap, systemd-nspawn)" >&2; exit 2; }
if [ -n "$FROM_DEB" ] && ! compgen -G "$FROM_DEB/*.deb" >/dev/null; then
	echo "run-nspawn.sh: no .deb in $FROM_DEB" >&2
	exit 2
fi

BUILD=$VGICD_BUILD/nspawn
STAGE=$VGICD_BUILD/nspawn-stage	# bound read-only at /srv/vgicd-test
LOGS=$VGICD_BUILD/nspawn-logs
MACHINE=vgicd-test-$$
ADDRESS=unix:path=/run/vgicd/vgicd.sock
CLIENT=/srv/vgicd-test/bin/vgicd-sim-client
CHECKS=()
FAILED=0
NSPAWN_PID=
CT=

# ---------------------------------------------------------------- helpers

# in_ct CMD... - run CMD inside the container, as root, clean environment.
in_ct() {
	nsenter -t "$CT" -a -- /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		LANG=C.UTF-8 SYSTEMD_PAGER=cat SYSTEMD_COLORS=0 TERM=dumb "$@"
}

# check NAME FUNCTION - run one check, keep going when it fails.
check() {
	local name=$1 t0 t1 rc=0
	shift
	t0=$(date +%s.%N)
	printf '\n--- %s\n' "$name"
	# Not "( ... ) || rc=$?": set -e does not apply inside a || list.
	set +e
	( set -e; "$@" )
	rc=$?
	set -e
	t1=$(date +%s.%N)
	if [ $rc -eq 0 ]; then
		CHECKS+=("$(printf 'ok    %-58s %6.2f s' "$name" "$(echo "$t1 - $t0" | bc)")")
	else
		CHECKS+=("$(printf 'FAIL  %-58s %6.2f s' "$name" "$(echo "$t1 - $t0" | bc)")")
		FAILED=$((FAILED + 1))
	fi
}

# expect WHAT GOT WANTED - compare, say what differed.
expect() {
	if [ "$2" != "$3" ]; then
		echo "!! $1: got \"$2\", want \"$3\""
		return 1
	fi
	echo "   $1: $2"
}

# expect_match WHAT TEXT REGEX
# grep reads TEXT from a here-string, not from a pipe: under pipefail, a
# grep that stops at its first match (-q, -m1) can leave a writer on the
# other end of a pipe to die of SIGPIPE, which set -e then takes for a
# failed check, silently (a busy cold run did, with the match there).
expect_match() {
	if ! grep -Eq -- "$3" <<<"$2"; then
		echo "!! $1: no match for /$3/ in:"
		printf '%s\n' "$2" | sed 's/^/     /'
		return 1
	fi
	local line
	line=$(grep -E -m1 -- "$3" <<<"$2" | sed 's/^ *//')
	case $line in "$1"*) echo "   $line" ;; *) echo "   $1: $line" ;; esac
}

# run_rc CMD... - run CMD, print its output, set RC to its exit status.
run_rc() {
	RC=0
	OUT=$("$@" 2>&1) || RC=$?
	printf '%s\n' "$OUT" | sed 's/^/   | /'
}

cleanup() {
	local rc=$?
	if [ -n "$NSPAWN_PID" ] && kill -0 "$NSPAWN_PID" 2>/dev/null; then
		if [ -n "$KEEP" ] && [ -n "$CT" ]; then
			echo "container left running: nsenter -t $CT -a /bin/bash; stop: kill $NSPAWN_PID"
			return $rc
		fi
		# SIGTERM makes nspawn power the container off cleanly.
		kill -TERM "$NSPAWN_PID" 2>/dev/null || true
		for _ in $(seq 100); do kill -0 "$NSPAWN_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$NSPAWN_PID" 2>/dev/null || true
	fi
	return $rc
}
trap cleanup EXIT

# ------------------------------------------------------- build and stage

step_begin "host packages"
need_packages "${PKGS_BUILD[@]}" "${PKGS_NSPAWN[@]}"
step_end

step_begin "root file system (cached)"
ROOTFS=$("$(dirname "$0")/rootfs.sh")
echo "rootfs: $ROOTFS"
step_end

step_begin "build${FROM_DEB:+ (the test client only)}"
setup_args=(--prefix=/usr --sysconfdir=/etc --localstatedir=/var --buildtype=debugoptimized)
# The container has no libvirt; vgicctl enable|disable are not tested here.
grep -q "option('libvirt'" "$VGICD_ROOT/meson_options.txt" && setup_args+=(-Dlibvirt=disabled)
targets=()
[ -n "$FROM_DEB" ] && targets=(tests/systemd/vgicd-sim-client)
if [ ! -f "$BUILD/build.ninja" ]; then
	heavy meson setup "$BUILD" "${setup_args[@]}" >/dev/null
fi
if ! ninja -C "$BUILD" -n "${targets[@]}" | grep -q 'no work to do'; then
	heavy ninja -C "$BUILD" "${targets[@]}"
fi
rm -rf "$STAGE"
mkdir -p "$STAGE/bin" "$LOGS"
cp "$BUILD/tests/systemd/vgicd-sim-client" "$STAGE/bin/"
if [ -n "$FROM_DEB" ]; then
	# What a host runs: not the -dev package (it would pull in the whole
	# GLib development stack) nor debug symbols.
	mkdir "$STAGE/debs"
	for deb in "$FROM_DEB"/*.deb; do
		case $(dpkg-deb -f "$deb" Package) in
		*-dev|*-dbgsym|*-dbg) echo "   skipped $(basename "$deb")" ;;
		*) cp "$deb" "$STAGE/debs/"; echo "   $(basename "$deb")" ;;
		esac
	done
else
	DESTDIR="$STAGE/root" meson install -C "$BUILD" --no-rebuild --quiet
	(cd "$STAGE/root" && find . -type f -o -type l | sort | sed 's/^\./   /')
fi
step_end

# ------------------------------------------------------------------ boot

step_begin "boot the container"
systemd-nspawn --quiet --boot --directory="$ROOTFS" --machine="$MACHINE" \
	--register=no --keep-unit --volatile=overlay --console=read-only \
	--bind-ro="$STAGE:/srv/vgicd-test" >"$LOGS/console.log" 2>&1 &
NSPAWN_PID=$!
for _ in $(seq 300); do
	CT=$(pgrep -P "$NSPAWN_PID" 2>/dev/null | head -1) || true
	[ -n "$CT" ] && [ "$(cat "/proc/$CT/comm" 2>/dev/null)" = systemd ] && break
	CT=
	kill -0 "$NSPAWN_PID" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$CT" ]; then
	echo "!! the container did not start; its console said:" >&2
	tail -20 "$LOGS/console.log" >&2
	exit 1
fi
# systemctl needs PID 1's private socket before it can wait for anything.
for _ in $(seq 300); do
	nsenter -t "$CT" -a -- test -S /run/systemd/private 2>/dev/null && break
	sleep 0.1
done
state=$(timeout 60 nsenter -t "$CT" -a -- systemctl is-system-running --wait 2>&1) || true
echo "container PID 1 is $CT on the host; system $state"
if [ "$state" != running ]; then
	in_ct systemctl --failed --no-legend || true
	[ "$state" = degraded ] || { tail -20 "$LOGS/console.log" >&2; exit 1; }
fi
step_end

if [ -n "$FROM_DEB" ]; then
	SOURCE="the .debs in $FROM_DEB"
else
	SOURCE="the build tree ($BUILD)"
fi
step_begin "install $SOURCE"
if [ -n "$FROM_DEB" ]; then
	# The packages' maintainer scripts do what a host install does
	# (sysusers, tmpfiles, daemon-reload).  With dependencies the tree
	# lacks, apt installs them first,
	# from the mirrors rootfs.sh built the tree from, as
	# `apt install ./vgicd_*.deb` would on a host.
	apt_install='DEBIAN_FRONTEND=noninteractive apt-get -y -q install --no-install-recommends'
	if ! in_ct sh -c "$apt_install --no-download /srv/vgicd-test/debs/*.deb" >/dev/null 2>&1; then
		echo "   dependencies to download: apt-get update"
		in_ct sh -c "apt-get -qq update && $apt_install /srv/vgicd-test/debs/*.deb" |
			grep -v '^Get:\|^Selecting\|^Preparing\|^Unpacking\|^(Reading\|^Reading\|^Building\|^  \|^The following\|^Need to\|^After this'
	fi
	for deb in "$STAGE"/debs/*.deb; do
		pkg=$(dpkg-deb -f "$deb" Package)
		echo "   $pkg: $(in_ct dpkg-query -W -f '${Status} ${Version}' "$pkg")"
	done
else
	# What a package's maintainer scripts would do after unpacking.
	# --keep-directory-symlink: the tree has /lib/systemd/system (systemd's
	# pkg-config on Debian 12), the container's /lib is a symlink to usr/lib.
	in_ct sh -c 'tar -C /srv/vgicd-test/root -cf - . | tar -C / -xf - --keep-directory-symlink'
	in_ct ldconfig
	in_ct systemd-sysusers vgicd.conf
	in_ct systemd-tmpfiles --create vgicd.conf
	in_ct systemctl daemon-reload
	in_ct systemctl reload dbus.service
	# systemd's package trigger on its catalog folder, as dpkg runs it.
	in_ct journalctl --update-catalog
fi
echo "   vgicd user: $(in_ct getent passwd vgicd); $(in_ct stat -c '/etc/vgicd %U:%G %a' /etc/vgicd)"
step_end

# ---------------------------------------------------------------- checks

vgicd_json() {	# journalctl -u vgicd as JSON, one entry a line
	in_ct journalctl --sync 2>/dev/null || true
	in_ct journalctl -u vgicd.service -o json --no-pager
}

# json_has FILTER... - the journal (stdin) has an entry with every FIELD=REGEX
json_has() {
	python3 -c '
import json, re, sys
want = [a.split("=", 1) for a in sys.argv[1:]]
for line in sys.stdin:
    e = json.loads(line)
    if all(isinstance(e.get(k), str) and re.fullmatch(v, e[k]) for k, v in want):
        print("   " + " ".join("%s=%s" % (k, e[k]) for k in sorted(e) if k.startswith("VGICD_")))
        sys.exit(0)
sys.exit(1)' "$@"
}

# journal_has FILTER... - vgicd's journal has such an entry within 5 s:
# vgicd writes an operation's record just after its answer, so the client
# that asked may have exited first.  The JSON is read whole and searched
# from a here-string, not through a pipe: json_has stops at its match, and
# under pipefail a journalctl still writing would die of SIGPIPE and fail
# the check (see expect_match).
journal_has() {
	local json
	for _ in $(seq 50); do
		json=$(vgicd_json)
		json_has "$@" <<<"$json" && return 0
		sleep 0.1
	done
	echo "!! no entry in vgicd's journal with $*"
	return 1
}

c_socket() {
	in_ct systemctl enable --now vgicd.socket
	expect "vgicd.socket" "$(in_ct systemctl is-active vgicd.socket)" active
	expect "vgicd.service before any QEMU" "$(in_ct systemctl is-active vgicd.service || true)" inactive
	expect "socket mode and owner" "$(in_ct stat -c '%a %U %G' /run/vgicd/vgicd.sock)" "660 root kvm"
	expect "enabled" "$(in_ct systemctl is-enabled vgicd.socket)" enabled
}

c_activation() {
	run_rc in_ct "$CLIENT" --name nspawn-vm "$ADDRESS"
	expect "client exit status" "$RC" 0
	expect_match "client" "$OUT" '^save: .* via batch'
	expect "vgicd.service after the first connection" "$(in_ct systemctl is-active vgicd.service)" active
}

c_status() {
	local out
	# STATUS= follows the session's close, which vgicd sees a moment later,
	# and goes out at most once a second.
	for _ in $(seq 50); do
		out=$(in_ct systemctl status vgicd.service --no-pager --lines=0 || true)
		grep -q '0 session(s), 1 saves, 1 loads' <<<"$out" && break
		sleep 0.1
	done
	printf '%s\n' "$out" | sed 's/^/   | /'
	expect_match "Active" "$out" 'Active: active \(running\)'
	# This x86 host cannot be probed, and a VM's claim (vgic-sim's batch
	# group) is its own, never the host's.
	expect_match "Status" "$out" 'Status: "mode auto, kernel batch unknown, 0 session\(s\), 1 saves, 1 loads"'
}

c_unprivileged() {
	local pid uid status
	pid=$(in_ct systemctl show -P MainPID vgicd.service)
	uid=$(in_ct id -u vgicd)
	status=$(in_ct cat "/proc/$pid/status")
	expect_match "uid" "$status" "^Uid:\s+$uid\s+$uid\s+$uid\s+$uid$"
	expect_match "no capabilities" "$status" '^CapEff:\s+0+$'
	expect_match "bounding set empty" "$status" '^CapBnd:\s+0+$'
	expect_match "no new privileges" "$status" '^NoNewPrivs:\s+1$'
	expect_match "seccomp filter" "$status" '^Seccomp:\s+2$'
	in_ct systemd-analyze security vgicd.service --no-pager | tail -1 | sed 's/^/   (booted) /'
	# The unit's resource limits reach the running process and its cgroup.
	expect_match "descriptor limit" "$(in_ct cat "/proc/$pid/limits")" \
		'^Max open files\s+8192\s+8192\s+files'
	expect "MemoryMax" "$(in_ct systemctl show -P MemoryMax vgicd.service)" 1073741824
	expect "TasksMax" "$(in_ct systemctl show -P TasksMax vgicd.service)" 512
}

c_vgicctl_root() {
	run_rc in_ct vgicctl status
	expect "vgicctl status" "$RC" 0
	expect_match "mode" "$OUT" '^Mode: +auto$'
	expect_match "totals" "$OUT" '^Totals: +1 saves, 1 loads'
	run_rc in_ct vgicctl stats --json
	expect "vgicctl stats" "$RC" 0
	expect_match "stats" "$OUT" '"saves": *1'
	run_rc in_ct vgicctl sessions
	expect "vgicctl sessions" "$RC" 0
}

c_vgicctl_nobody() {
	run_rc in_ct setpriv --reuid=nobody --regid=nogroup --clear-groups vgicctl status
	expect "vgicctl status as nobody" "$RC" 0
	run_rc in_ct setpriv --reuid=nobody --regid=nogroup --clear-groups vgicctl mode single
	expect "vgicctl mode single as nobody (exit status)" "$RC" 4
	expect_match "refusal" "$OUT" 'permission denied'
	expect "mode afterwards" "$(in_ct vgicctl mode)" auto
}

c_mode() {
	run_rc in_ct vgicctl mode single
	expect "vgicctl mode single" "$RC" 0
	expect "vgicctl mode" "$(in_ct vgicctl mode)" single
	# Persisted through ProtectSystem=strict, in vgicd's state directory;
	# the configuration file is root's and stays as it was.
	expect_match "state file" "$(in_ct cat /var/lib/vgicd/state.conf)" '^Mode=single$'
	expect "state file owner" "$(in_ct stat -c '%U %a' /var/lib/vgicd/state.conf)" "vgicd 644"
	expect "vgicd.conf owner" "$(in_ct stat -c '%U' /etc/vgicd/vgicd.conf)" "root"
	expect "vgicd.conf's Mode=" "$(in_ct sed -n 's/^Mode=//p' /etc/vgicd/vgicd.conf)" "auto"
}

c_journal() {
	local json
	journal_has VGICD_OPERATION=save VGICD_VM=nspawn-vm \
		VGICD_UUID=5e1f7c2a-0000-4000-8000-00000000feed 'VGICD_IOCTLS=[1-9][0-9]*' \
		VGICD_VIA=batch 'VGICD_DURATION_NS=[0-9]+' 'VGICD_EXEC_NS=[0-9]+' ||
		{ echo "!! no save entry with the VGICD_* fields; vgicd logged:"; \
		  in_ct journalctl -u vgicd.service --no-pager -o cat | sed 's/^/     /'; return 1; }
	json=$(vgicd_json)
	json_has VGICD_OPERATION=load VGICD_VM=nspawn-vm 'VGICD_IOCTLS=[1-9][0-9]*' <<<"$json"
	json_has 'VGICD_MODE=single' 'VGICD_CALLER_UID=0' <<<"$json"
	# Monitoring selects outcomes by MESSAGE_ID (daemon/vgicd-catalog.h),
	# and journalctl -x explains each from the installed catalog.
	json_has MESSAGE_ID=b72f7a0c89a94420b3ccee11c29d15ee \
		VGICD_VM=nspawn-vm VGICD_OUTCOME=ok 'VGICD_CALLS=[1-9]' 'VGICD_REGISTERS=[1-9][0-9]*' \
		<<<"$json"
	json_has MESSAGE_ID=d2787ad7e4564149bd429a2942042776 \
		VGICD_VM=nspawn-vm VGICD_OUTCOME=ok <<<"$json"
	expect_match "journalctl -x: the catalog's entry" \
		"$(in_ct journalctl -x -u vgicd.service MESSAGE_ID=b72f7a0c89a94420b3ccee11c29d15ee --no-pager)" \
		'Subject: vgicd saved the vGIC of VM nspawn-vm'
	# One figure of vgicd's own time: the "ms in vgicd" of a save's or a
	# load's line is its VGICD_BUSY_NS; an attach or a detach did no
	# operation, so it carries none (not the previous operation's).
	printf '%s\n' "$json" | python3 -c '
import json, re, sys
bad = seen = 0
for line in sys.stdin:
    e = json.loads(line)
    if e.get("VGICD_VM") != "nspawn-vm" or not isinstance(e.get("MESSAGE"), str):
        continue
    op, busy, m = e.get("VGICD_OPERATION"), e.get("VGICD_BUSY_NS"), re.search(r"([0-9.]+) ms in vgicd", e["MESSAGE"])
    if m:
        seen += 1
        if "%.3f" % (int(busy) / 1e6) != m.group(1):
            bad += 1
            print("!! %s: the line says %s ms in vgicd, VGICD_BUSY_NS=%s" % (op, m.group(1), busy))
    elif op in ("attach", "detach"):
        seen += 1
        if (busy, e.get("VGICD_IOCTLS"), e.get("VGICD_EXEC_NS")) != ("0", "0", "0"):
            bad += 1
            print("!! %s carries VGICD_BUSY_NS=%s VGICD_IOCTLS=%s VGICD_EXEC_NS=%s" % (op, busy, e.get("VGICD_IOCTLS"), e.get("VGICD_EXEC_NS")))
print("   VGICD_BUSY_NS against the lines: %d entries, %d wrong" % (seen, bad))
sys.exit(1 if bad or seen < 4 else 0)'
}

# The save of a QEMU that has gone, through the system bus as an operator
# reads it after a migration: vgicctl history.
c_history() {
	expect_match "no session left" "$(in_ct vgicctl sessions)" 'No VM is attached'
	run_rc in_ct vgicctl history nspawn-vm --json
	expect "vgicctl history --json" "$RC" 0
	printf '%s\n' "$OUT" | head -c 600 | sed 's/^/   | /'
	echo
	expect_match "the save" "$OUT" '"direction": ?"save", ?"path": ?"batch", ?"stream": ?"record", ?"outcome": ?"ok"'
	expect_match "the load" "$OUT" '"direction": ?"load", ?"path": ?"batch"'
	run_rc in_ct vgicctl history
	expect_match "the table" "$OUT" 'nspawn-vm +save batch'
}

# MetricsTextfile= under the hardened unit, as an operator sets it up:
# node_exporter's folder, writable through a drop-in, the file replaced
# whole; vgicctl metrics prints the same figures.
c_metrics() {
	local dir=/var/lib/prometheus/node-exporter file
	# As the operations guide says: the folder stays root's (node_exporter's
	# package owns it); the package's opt-in tmpfiles ACL and unit drop-in.
	in_ct mkdir -p "$dir" /etc/systemd/system/vgicd.service.d /etc/vgicd/vgicd.conf.d
	in_ct ln -s /usr/share/vgicd/textfile/vgicd-textfile.tmpfiles /etc/tmpfiles.d/vgicd-textfile.conf
	run_rc in_ct systemd-tmpfiles --create vgicd-textfile.conf
	expect "systemd-tmpfiles --create" "$RC" 0
	# ls marks a folder with an ACL with "+" (the container has no getfacl).
	expect_match "an ACL on the folder" "$(in_ct ls -ld "$dir")" '^d[-r][-w][-x][-r][-w][-x][-r][-w][-x]\+ '
	expect "the folder's owner unchanged" "$(in_ct stat -c %U "$dir")" root
	in_ct ln -s /usr/share/vgicd/textfile/vgicd-textfile.service.conf \
		/etc/systemd/system/vgicd.service.d/textfile.conf
	in_ct sh -c "printf '[vgicd]\nMetricsTextfile=$dir/vgicd.prom\n' >/etc/vgicd/vgicd.conf.d/metrics.conf"
	in_ct systemctl daemon-reload
	run_rc in_ct systemctl restart vgicd.service
	expect "restart with MetricsTextfile=" "$RC" 0
	run_rc in_ct "$CLIENT" --name nspawn-vm-metrics "$ADDRESS"
	expect "client exit status" "$RC" 0
	for _ in $(seq 30); do
		file=$(in_ct cat "$dir/vgicd.prom" 2>/dev/null || true)
		grep -q '^vgicd_operations_total{direction="save",outcome="ok"} 1$' <<<"$file" && break
		sleep 0.1
	done
	expect_match "the textfile" "$file" '^vgicd_operations_total\{direction="save",outcome="ok"\} 1$'
	expect_match "a histogram" "$file" '^vgicd_operation_duration_seconds_count\{direction="save",path="single"\} 1$'
	expect "its owner" "$(in_ct stat -c '%U %a' "$dir/vgicd.prom")" "vgicd 644"
	expect "nothing else in the folder" "$(in_ct ls "$dir")" "vgicd.prom"
	expect_match "vgicctl metrics" "$(in_ct vgicctl metrics)" '^vgicd_operations_total\{direction="save",outcome="ok"\} 1$'
}

c_reload() {
	local pid
	pid=$(in_ct systemctl show -P MainPID vgicd.service)
	# A runtime-only change, which the reload must drop: the file says single.
	in_ct vgicctl mode off --runtime >/dev/null
	expect "mode before the reload" "$(in_ct vgicctl mode)" off
	run_rc in_ct systemctl reload vgicd.service
	expect "systemctl reload" "$RC" 0
	expect "active after the reload" "$(in_ct systemctl is-active vgicd.service)" active
	expect "same process" "$(in_ct systemctl show -P MainPID vgicd.service)" "$pid"
	for _ in $(seq 20); do [ "$(in_ct vgicctl mode)" = single ] && break; sleep 0.1; done
	expect "mode re-read from the file" "$(in_ct vgicctl mode)" single
	expect_match "journal" "$(in_ct journalctl -u vgicd.service --no-pager -o cat)" \
		'configuration reloaded from /etc/vgicd/vgicd.conf: mode single'
}

c_reload_refused() {
	local pid out
	pid=$(in_ct systemctl show -P MainPID vgicd.service)
	in_ct mkdir -p /etc/vgicd/vgicd.conf.d
	printf '[vgicd]\n# a typo\nMode=fast\n' | in_ct tee /etc/vgicd/vgicd.conf.d/90-bad.conf >/dev/null
	run_rc in_ct systemctl reload vgicd.service
	expect "systemctl reload of a bad file fails" "$([ "$RC" -ne 0 ] && echo failed)" failed
	expect "still active" "$(in_ct systemctl is-active vgicd.service)" active
	expect "same process" "$(in_ct systemctl show -P MainPID vgicd.service)" "$pid"
	expect "mode kept" "$(in_ct vgicctl mode)" single
	out=$(in_ct journalctl -u vgicd.service --no-pager -o cat)
	expect_match "the check's line in the unit's log" "$out" \
		'^/etc/vgicd/vgicd.conf.d/90-bad.conf:3: error: \[vgicd\] Mode=fast is not a mode'
	run_rc in_ct vgicctl check
	expect "vgicctl check exit status" "$RC" 3
	expect_match "vgicctl check" "$OUT" \
		'^/etc/vgicd/vgicd.conf.d/90-bad.conf:3: error: \[vgicd\] Mode=fast is not a mode'
	in_ct rm /etc/vgicd/vgicd.conf.d/90-bad.conf
	run_rc in_ct vgicctl check
	expect "vgicctl check once fixed" "$RC:$OUT" "0:"
	run_rc in_ct systemctl reload vgicd.service
	expect "systemctl reload once fixed" "$RC" 0
}

c_bus_activation() {
	# c_stop left both units stopped: no QEMU, nobody started vgicd.
	expect "service before" "$(in_ct systemctl is-active vgicd.service)" inactive
	run_rc in_ct vgicctl status
	expect "vgicctl status on an idle host" "$RC" 0
	expect_match "answered by vgicd" "$OUT" '^Mode: '
	expect "started by the bus" "$(in_ct systemctl is-active vgicd.service)" active
	expect "with its socket" "$(in_ct systemctl is-active vgicd.socket)" active
	in_ct systemctl stop vgicd.socket vgicd.service
}

# The hook's off switch survives an upgrade (from the .debs only): the
# package's link comes back with each upgrade, LibvirtHook=false in the
# conffile stays.  The newer version is the same vgicd .deb repacked with
# a higher version, which dpkg installs as an upgrade.
c_hook_off() {
	local hook=/etc/libvirt/hooks/qemu.d/50-vgicd xml uuid v1 v2
	xml=$VGICD_ROOT/tests/libvirt/fixtures/aarch64-optin.xml
	uuid=$(sed -n 's|.*<uuid>\(.*\)</uuid>.*|\1|p' "$xml")
	run_rc in_ct "$hook" aarch64-optin prepare begin - < "$xml"
	expect "hook on: prepare" "$RC" 0
	expect "hook on: the domain's choice recorded" \
		"$(in_ct test -e "/run/vgicd/vms/$uuid.conf" && echo yes)" yes
	in_ct "$hook" aarch64-optin release end - < "$xml"
	in_ct sed -i 's/^#LibvirtHook=true$/LibvirtHook=false/' /etc/vgicd/vgicd.conf
	expect "switched off in the conffile" \
		"$(in_ct grep -c '^LibvirtHook=false$' /etc/vgicd/vgicd.conf)" 1
	# What an admin tried before there was a switch: the link, deleted.
	in_ct rm "$hook"
	v1=$(in_ct dpkg-query -W -f '${Version}' vgicd)
	in_ct sh -c 'rm -rf /tmp/newer && dpkg-deb -R /srv/vgicd-test/debs/vgicd_*.deb /tmp/newer &&
		sed -i "s/^Version: .*/&+newer1/" /tmp/newer/DEBIAN/control &&
		dpkg-deb -b /tmp/newer /tmp/vgicd-newer.deb >/dev/null'
	run_rc in_ct dpkg -i /tmp/vgicd-newer.deb
	expect "dpkg -i of a newer version" "$RC" 0
	v2=$(in_ct dpkg-query -W -f '${Version}' vgicd)
	expect "upgraded" "$v2" "$v1+newer1"
	expect "the deleted link is back (why it is no switch)" "$(in_ct test -L "$hook" && echo yes)" yes
	expect "the switch is still off" \
		"$(in_ct grep -c '^LibvirtHook=false$' /etc/vgicd/vgicd.conf)" 1
	run_rc in_ct "$hook" aarch64-optin prepare begin - < "$xml"
	expect "hook off: prepare" "$RC:$OUT" "0:"
	expect "hook off: nothing recorded" \
		"$(in_ct test -e "/run/vgicd/vms/$uuid.conf" || echo none)" none
	in_ct sed -i 's/^LibvirtHook=false$/#LibvirtHook=true/' /etc/vgicd/vgicd.conf
}

# vgicd's package does not pull libvirt in (from the .debs only): vgicctl
# loads libvirt's client library for enable|disable, and says what to
# install where it is missing.
c_no_libvirt() {
	expect "vgicd's Depends name no libvirt" \
		"$(dpkg-deb -f "$STAGE"/debs/vgicd_*.deb Depends | grep -c libvirt)" 0
	expect "libvirt0 not installed" \
		"$(in_ct dpkg-query -W -f '${Status}' libvirt0 2>/dev/null | grep -c 'ok installed')" 0
	run_rc in_ct vgicctl enable some-domain
	expect "vgicctl enable without libvirt: exit status" "$RC" 2
	expect_match "says what is missing" "$OUT" \
		"^vgicctl: enable some-domain: libvirt's client library is not installed .*apt install libvirt0"
}

c_single() {
	run_rc in_ct "$CLIENT" --name nspawn-vm2 "$ADDRESS"
	expect "client exit status" "$RC" 0
	expect_match "client" "$OUT" '^save: .* via single'
	journal_has VGICD_OPERATION=save VGICD_VM=nspawn-vm2 VGICD_VIA=single
}

c_stop() {
	run_rc in_ct systemctl stop vgicd.service
	expect "systemctl stop" "$RC" 0
	expect "state" "$(in_ct systemctl show -P ActiveState vgicd.service)" inactive
	expect "result" "$(in_ct systemctl show -P Result vgicd.service)" success
	expect "exit status" "$(in_ct systemctl show -P ExecMainStatus vgicd.service)" 0
	expect "socket still listening" "$(in_ct systemctl is-active vgicd.socket)" active
	# The next QEMU starts it again.
	run_rc in_ct "$CLIENT" --name nspawn-vm3 "$ADDRESS"
	expect "client after the stop" "$RC" 0
	expect "re-activated" "$(in_ct systemctl is-active vgicd.service)" active
	in_ct systemctl stop vgicd.socket vgicd.service
	expect "result of the final stop" "$(in_ct systemctl show -P Result vgicd.service)" success
	expect "socket file removed" "$(in_ct test -e /run/vgicd/vgicd.sock && echo present || echo absent)" absent
	# vgicd itself warned of nothing ("operator API unavailable", a failed
	# reload, ...).  systemd's own lines about the unit are shown, not
	# judged: inside nspawn, PrivateNetwork= cannot configure loopback.
	local warnings
	warnings=$(in_ct journalctl _COMM=vgicd -p warning --no-pager -o cat)
	in_ct journalctl -u vgicd.service _PID=1 -p warning --no-pager -o cat | sort | uniq -c |
		sed 's/^ */   (systemd) /'
	expect "vgicd's warnings" "$warnings" ""
}

step_begin "checks"
check "socket enabled: listening as root:kvm 0660, service idle" c_socket
check "first QEMU connection starts vgicd; save+load match" c_activation
check "systemctl status: active (running) with its STATUS=" c_status
check "runs as vgicd, no capabilities, NoNewPrivs, seccomp" c_unprivileged
check "vgicctl status/stats/sessions as root (system bus)" c_vgicctl_root
check "as nobody: status allowed, mode change refused (exit 4)" c_vgicctl_nobody
check "vgicctl mode single persists to /var/lib/vgicd/state.conf" c_mode
check "journal: VGICD_* fields of a save, a load, an attach and a detach" c_journal
check "vgicctl history: the save of a QEMU that has gone" c_history
check "systemctl reload (SIGHUP) re-reads the file, same PID" c_reload
check "a bad drop-in: reload refused, configuration kept; vgicctl check" c_reload_refused
check "mode single: the next save goes one by one" c_single
check "MetricsTextfile= through a drop-in; vgicctl metrics" c_metrics
check "systemctl stop: clean; the socket re-activates it" c_stop
check "vgicctl on an idle host: the bus starts vgicd (D-Bus activation)" c_bus_activation
[ -z "$FROM_DEB" ] || check "the hook switched off stays off across an upgrade (dpkg -i)" c_hook_off
[ -z "$FROM_DEB" ] || check "no libvirt0 with vgicd; vgicctl enable says what to install" c_no_libvirt
step_end

in_ct journalctl -b --no-pager -o short-monotonic >"$LOGS/journal.log" 2>&1 || true

printf '\nChecks (%s):\n' "$SOURCE"
printf '  %s\n' "${CHECKS[@]}"
print_step_times
printf '\nLogs: %s (console.log, journal.log)\n' "$LOGS"
if [ $FAILED -ne 0 ]; then
	echo "run-nspawn.sh: $FAILED check(s) failed"
	exit 1
fi
echo "run-nspawn.sh: all ${#CHECKS[@]} checks passed"
