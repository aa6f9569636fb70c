#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# l1-run.sh - the virsh tier's scenarios, run inside L1 (Debian 13 arm64
# booted with systemd as PID 1 on the patched kernel, AppArmor enforcing;
# with VIRSH_STACK=backports, libvirt and the stock QEMU from
# trixie-backports and the kernel 7.3)
# as the unit systemd-run-generator makes of the kernel command line's
# systemd.run=; L1 powers off when it ends.  It prints, on the console:
#   E2E-CHECK: PASS|FAIL NAME[ :: DETAIL]
#   E2E-TIME: PHASE SECONDS          (L1's uptime at the phase's end)
#   E2E-HOOK: HOST DOMAIN: CALLS     (the qemu hook calls, in order)
#   E2E-TABLE: ...                   ((b)'s downtimes)
#   E2E-DONE: fails=N
# and E2E-DIAG lines after a failure.  run-virsh-e2e.sh reads them.
#
# The payload disk (/dev/vdb, mounted read-only on /payload) holds what
# the host built: debs/ (the project's trixie/arm64 packages), qemu-patched (the
# patched minimal QEMU; its libvgicd.so.0 is libvgicd0's), l2/Image and
# l2/initrd (the guest), and this script.
#
# Theory of operation: host A is L1's own system instance (systemd's
# libvirtd, the packaged vgicd.socket, the real /run/vgicd), as on an
# operator's host after `dpkg -i`.  Its emulator is the patched QEMU,
# bind-mounted over /usr/bin/qemu-system-aarch64 as the patched Debian
# package would install it, so that libvirt's AppArmor profiles see the
# path they were written for.  Host B is a second libvirtd, virtlogd and
# vgicd in mount namespaces of their own (below).
#
# Checks, in order: L1 itself (systemd PID 1 with no failed unit, AppArmor
# on and enforcing, libvirtd confined, /dev/kvm); the operator's install
# (dpkg -i, the vgicd user from sysusers, vgicd.socket enabled and
# listening, vgicd's profiles loaded in enforce mode, the hook in place);
# host A's patched QEMU linking libvgicd0's library; the stack's versions
# (l1.stack); both hosts up and confined; scenario (a): a domain with no
# vgicd edits starts on A, runs confined under its per-VM profile as
# libvirt-qemu and attaches to A's vgicd; it migrates live to B, A's
# vgicd logs a save and B's a load, the guest's counter and its virtio
# interrupt count keep growing on B, no AppArmor denial, no taint in
# either domain log but libvirt's host-cpu,
# the hook calls of each host (E2E-HOOK lines); (f): the packages
# upgraded while that domain runs on B, and its migration back through
# vgicd; (b): a larger domain (VIRSH_VCPUS_BIG, default 32) migrated
# through vgicd, with the mode off on both hosts and with vgicd stopped on
# both, libvirt's downtime and the GIC section's times of each (E2E-TABLE
# lines); (e): vgicctl enable --required and disable
# against libvirt A, and B's hook refusing the required domain while B's
# vgicd is stopped; (d): B on Debian's stock QEMU, both directions, and a
# definition vgicctl touched starting there; (c): the AppArmor rule for
# QEMU removed, then restored.  VIRSH_SCENARIOS (default f,b,e,d,c)
# narrows what runs after (a); the rest is said to be not run.
exec >/dev/console 2>&1
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8
P=/payload
FAILS=0
VCPUS=${VIRSH_VCPUS:-4}
# The scenarios after (a), which always runs: all of them unless the
# kernel command line narrows them (run-virsh-e2e.sh --scenarios).
SCENARIOS=${VIRSH_SCENARIOS:-f,b,e,d,c}

expect() {	# expect NAME DETAIL COMMAND...
	n=$1 d=$2
	shift 2
	if "$@"; then check "$n" PASS "$d"; else check "$n" FAIL "$d"; fi
}
diag() {
	echo "E2E-DIAG: ---- at $(up) s"
	systemctl --no-pager --failed 2>&1 | sed 's/^/E2E-DIAG: failed | /'
	journalctl -q --no-pager -n 40 -u vgicd.service -u vgicd.socket -u libvirtd.service \
		-u vgicd-b.service -u libvirtd-b.service -u virtlogd-b.service 2>&1 |
		sed 's/^/E2E-DIAG: journal | /'
	dmesg | grep -i 'apparmor="DENIED"' | tail -n 10 | sed 's/^/E2E-DIAG: denied | /'
}
want() {	# want X - whether scenario X is to run (a skip is said, once)
	case ",$SCENARIOS," in *",$1,"*) return 0 ;; esac
	say "($1) not run: scenarios $SCENARIOS"
	return 1
}
finish() {
	artifacts | sed 's/^/E2E: denied, shared-profile artifact (not counted) | /'
	stamp end
	echo "E2E-DONE: fails=$FAILS"
	sync
	exit 0
}

# run-virsh-e2e.sh mounts it with systemd.mount-extra= (this script is on it).
mountpoint -q $P || { echo "E2E-DONE: fails=1 (no payload disk on $P)"; exit 1; }
# up, say, stamp, check (the E2E lines): lib/e2e-lines.sh, on the payload.
# shellcheck source=../lib/e2e-lines.sh
. $P/e2e-lines.sh

# --- the host ----------------------------------------------------------------
# This unit is one of the boot's jobs, so "is-system-running --wait" would
# wait for itself: wait instead until no job but this one is left.
for _ in $(seq 300); do
	[ "$(systemctl list-jobs --no-legend | grep -vc kernel-command-line)" -eq 0 ] && break
	sleep 1
done
stamp boot
failed=$(systemctl --failed --no-legend --plain | awk '{print $1}' | tr '\n' ' ')
jobs=$(systemctl list-jobs --no-legend | grep -v kernel-command-line | awk '{print $2}' | tr '\n' ' ')
expect l1.systemd "systemd PID 1 ($(readlink /proc/1/exe)); jobs left: ${jobs:-none}; failed: ${failed:-none}" \
	test -z "$failed$jobs"
aa_enabled=$(cat /sys/module/apparmor/parameters/enabled 2>/dev/null)
aa_enforced=$(grep -c '(enforce)$' /sys/kernel/security/apparmor/profiles 2>/dev/null)
expect l1.apparmor "enabled=$aa_enabled, ${aa_enforced:-0} profiles in enforce mode" \
	test "$aa_enabled" = Y -a "${aa_enforced:-0}" -gt 0
expect l1.libvirtd-confined "$(grep -E '^(/usr/sbin/)?libvirtd ' /sys/kernel/security/apparmor/profiles)" \
	grep -qE '^(/usr/sbin/)?libvirtd \(enforce\)$' /sys/kernel/security/apparmor/profiles
expect l1.kvm "/dev/kvm: $(ls -l /dev/kvm 2>&1)" [ -c /dev/kvm ]

# --- the operator's install --------------------------------------------------
say "dpkg -i $(cd $P/debs && ls ./*.deb | tr '\n' ' ')"
if dpkg -i $P/debs/libvgicd0_*.deb $P/debs/vgicd_*.deb >/tmp/dpkg.log 2>&1; then
	check pkg.install PASS "$(dpkg-query -W -f='${Package} ${Version} ${Status}, ' libvgicd0 vgicd)"
else
	check pkg.install FAIL "$(tail -n 5 /tmp/dpkg.log | tr '\n' ' ')"
fi
sed 's/^/E2E: dpkg | /' /tmp/dpkg.log
expect pkg.sysusers "$(getent passwd vgicd)" sh -c 'getent passwd vgicd >/dev/null'
expect pkg.socket "vgicd.socket: $(systemctl is-enabled vgicd.socket) $(systemctl is-active vgicd.socket)" \
	systemctl -q is-active vgicd.socket
expect pkg.apparmor "$(grep -E 'vgicd' /sys/kernel/security/apparmor/profiles | tr '\n' ' ')" \
	grep -qx 'vgicd (enforce)' /sys/kernel/security/apparmor/profiles
expect pkg.hook "$(ls -l /etc/libvirt/hooks/qemu.d/ 2>&1 | tail -n +2 | tr '\n' ' ')" \
	[ -x /etc/libvirt/hooks/qemu.d/50-vgicd ]
# The operator's metrics: node_exporter's textfile folder, made writable
# for vgicd's hardened unit by a drop-in (vgicd.conf(5)); AppArmor's
# vgicd profile allows the file and its temporary sibling.
PROM=/var/lib/prometheus/node-exporter
mkdir -p $PROM /etc/systemd/system/vgicd.service.d
chown vgicd: $PROM
printf '[Service]\nReadWritePaths=%s\n' $PROM >/etc/systemd/system/vgicd.service.d/metrics.conf
echo "MetricsTextfile=$PROM/vgicd.prom" >>/etc/vgicd/vgicd.conf
systemctl daemon-reload
stamp install

# --- host A's emulator: the patched QEMU --------------------------------------
mkdir -p /usr/lib/vgicd-e2e
cp /usr/bin/qemu-system-aarch64 /usr/lib/vgicd-e2e/qemu-stock
cp $P/qemu-patched /usr/lib/vgicd-e2e/qemu-patched
mount --bind /usr/lib/vgicd-e2e/qemu-patched /usr/bin/qemu-system-aarch64
expect qemu.patched "$(/usr/bin/qemu-system-aarch64 --version | head -n 1); $(ldd /usr/bin/qemu-system-aarch64 | grep -o 'libvgicd[^ ]* => [^ ]*')" \
	sh -c 'ldd /usr/bin/qemu-system-aarch64 | grep -q "libvgicd.so.0 => /" && /usr/bin/qemu-system-aarch64 --version >/dev/null'
# The stack this L1 was built for (run-virsh-e2e.sh --stack): its kernel,
# libvirt and stock QEMU are the versions that stack ships, so that a run
# says what it tested (an apt pin that stopped matching would otherwise
# leave a backports run on trixie's libvirt without a word).
qemu_version() { "$1" --version 2>&1 | awk 'NR == 1 {print $4}'; }	# 10.0.13
l1_kernel=$(uname -r)
l1_libvirt=$(libvirtd --version 2>&1 | awk '{print $NF}')
l1_stock=$(qemu_version /usr/lib/vgicd-e2e/qemu-stock)
case ${VIRSH_STACK:-trixie} in
backports) want_stack='7.3.*:12.9.*:11.1.*' ;;
*) want_stack='6.12.*:11.3.*:10.0.*' ;;
esac
expect l1.stack "${VIRSH_STACK:-trixie}: kernel $l1_kernel, libvirt $l1_libvirt, stock QEMU $l1_stock, patched QEMU $(qemu_version /usr/bin/qemu-system-aarch64)" \
	sh -c "case '$l1_kernel:$l1_libvirt:$l1_stock' in $want_stack) exit 0 ;; esac; exit 1"

# jmsg UNIT OPERATION VM - the MESSAGEs of UNIT's journal entries with
# VGICD_OPERATION=OPERATION for VM (vgicd's structured fields).
jmsg() {
	journalctl -q --no-pager -o cat -u "$1" VGICD_OPERATION="$2" VGICD_VM="$3" 2>/dev/null
}
has_msg() { [ -n "$(jmsg "$@")" ]; }
# nmsg UNIT OPERATION VM - how many saves or loads UNIT ran for VM (its
# "declined" notices carry the same fields, and are not counted)
nmsg() { jmsg "$@" | grep -v ' declined: ' | grep -c .; }
# migrate FROM TO DOMAIN - virsh migrate --live between the two hosts
# (URIs), the data over loopback (both are this machine); virsh's output
# in /tmp/migrate.log.
migrate() {
	virsh -c "$1" migrate --live "$3" "$2" --migrateuri tcp://127.0.0.1 \
		--listen-address 127.0.0.1 >/tmp/migrate.log 2>&1
}
# migrate_watch FROM TO DOMAIN PIDFILE - migrate, and meanwhile set
# WATCHED to "PID: LABEL" of the destination's QEMU (PIDFILE is the
# destination libvirt's) as first seen: QEMU writes its pid file itself,
# so after its exec, under the label libvirt gave it.
migrate_watch() {
	WATCHED=
	migrate "$1" "$2" "$3" &
	mw=$!
	# libvirt writes the pid file from its forked child before that child
	# execs QEMU under the per-VM profile, so the first label seen may
	# still be libvirtd's own: keep looking until the child has moved to
	# a libvirt-UUID profile (then stop) or the migration ends (the last
	# label seen is what the check reports).
	mw_done=
	while kill -0 $mw 2>/dev/null; do
		if [ -z "$mw_done" ] && mp=$(cat "$4" 2>/dev/null) && [ -n "$mp" ]; then
			WATCHED="$mp: $(cat /proc/"$mp"/attr/current 2>/dev/null)"
			case "$WATCHED" in *': libvirt-'*) mw_done=1 ;; esac
		fi
		sleep 0.2
	done
	wait $mw
}
# denials - how many AppArmor denials the kernel has logged so far, but
# one kind this layout makes and a pair of real hosts cannot: one kernel
# holds one profile per name, so when B's libvirt loads a domain's
# libvirt-UUID for its incoming QEMU, A's QEMU of that domain runs under
# B's version of it, which names B's domain folder
# (/var/lib/libvirt/qemu/domain-ID-NAME, IDs differ per host), and A's
# QEMU is refused its own folder as it exits.  Those are counted apart
# (artifacts) and printed; a denial that involves vgicd is never one.
artifact_re='profile="libvirt-[0-9a-f-]*" name="/var/lib/libvirt/qemu/domain-[0-9]*-'
denials() { dmesg | grep 'apparmor="DENIED"' | grep -v "$artifact_re" | grep -c .; }
# no_denial NAME - the check that no counted denial was logged so far
no_denial() { nd_n=$(denials); expect "$1" "$nd_n AppArmor denials" [ "$nd_n" -eq 0 ]; }
artifacts() { dmesg | grep 'apparmor="DENIED"' | grep "$artifact_re" | grep -v vgicd; }

# --- host B ------------------------------------------------------------------
# A second libvirtd and vgicd on the same machine, each a transient systemd
# service whose mount namespace puts B's folders on the paths a host has
# (/etc/libvirt, /run/libvirt, /var/lib/libvirt, /var/log/libvirt,
# /var/cache/libvirt, /run/vgicd).  B's vgicd listens in /srv/b/run-vgicd,
# so B's QEMUs, started by B's libvirtd in its namespace, find it on
# /run/vgicd/vgicd.sock.  B's copies are made before A runs a domain.
# A tracer in the hook folder, before 50-vgicd (names run in order): each
# host's libvirtd logs every qemu hook call it makes into its own
# /run/libvirt (libvirtd's profile runs hooks under its own, which may
# write there).  It prints nothing, so libvirt passes the XML on unchanged.
cat >/etc/libvirt/hooks/qemu.d/00-e2e-trace <<'EOF_T'
#!/bin/sh
# The virsh tier's tracer: DOMAIN OPERATION SUB-OPERATION EXTRA, with uptime.
read -r t _ </proc/uptime
echo "$t $*" >>/run/libvirt/e2e-hook-calls.log
while read -r _; do :; done
exit 0
EOF_T
chmod 0755 /etc/libvirt/hooks/qemu.d/00-e2e-trace
# hooks HOST DOMAIN - the calls host HOST (A or B) made for DOMAIN, one line.
hooks() {
	f=/run/libvirt/e2e-hook-calls.log
	[ "$1" = A ] || f=$B/run-libvirt/e2e-hook-calls.log
	awk -v d="$2" '$2 == d { printf "%s%s %s", sep, $3, $4; sep = ", " }' $f 2>/dev/null
}

B=/srv/b
BIND="/srv/b/etc-libvirt:/etc/libvirt /srv/b/run-libvirt:/run/libvirt /srv/b/lib-libvirt:/var/lib/libvirt /srv/b/log-libvirt:/var/log/libvirt /srv/b/cache-libvirt:/var/cache/libvirt /srv/b/run-vgicd:/run/vgicd"
URI_A=qemu:///system
URI_B="qemu+unix:///system?socket=$B/run-libvirt/libvirt-sock"
mkdir -p $B/run-libvirt $B/run-vgicd
cp -a /etc/libvirt $B/etc-libvirt
cp -a /var/lib/libvirt $B/lib-libvirt
cp -a /var/cache/libvirt $B/cache-libvirt
cp -a /var/log/libvirt $B/log-libvirt
find $B/log-libvirt -type f -delete
cp -a /etc/vgicd $B/etc-vgicd
chown --reference=/run/vgicd $B/run-vgicd 2>/dev/null
chmod --reference=/run/vgicd $B/run-vgicd 2>/dev/null
# Both hosts confine their QEMUs with AppArmor, said rather than detected
# (libvirt would fall back to none on a host where AppArmor is off), and
# run them as Debian's libvirt-qemu user (qemu.conf's default).
sed -i 's/^#* *security_driver *=.*/security_driver = "apparmor"/' /etc/libvirt/qemu.conf
expect l1.security-driver "qemu.conf: $(grep -E '^(security_driver|user|group) *=' /etc/libvirt/qemu.conf | tr '\n' ' ')" \
	grep -qx 'security_driver = "apparmor"' /etc/libvirt/qemu.conf
cp /etc/libvirt/qemu.conf $B/etc-libvirt/qemu.conf
# Each host its own host UUID: libvirt refuses to migrate to itself.
uuid_conf() { sed -i '/^host_uuid *=/d' "$1"; echo "host_uuid = \"$2\"" >>"$1"; }
uuid_conf /etc/libvirt/libvirtd.conf 6a3f4b6e-0000-4000-8000-00000000000a
uuid_conf $B/etc-libvirt/libvirtd.conf 6a3f4b6e-0000-4000-8000-00000000000b
systemctl restart libvirtd.service
# B's vgicd: the packaged units, copied with B's socket path, state
# folder and configuration, off the system bus (the name is A's).
vgicd_b_units() {
	u=/usr/lib/systemd/system
	sed -e 's/^Requires=vgicd.socket/Requires=vgicd-b.socket/' \
		-e 's/^After=vgicd.socket/After=vgicd-b.socket/' \
		-e 's|^ExecStart=\(.*\)|ExecStart=\1 --no-system-bus|' \
		-e 's/^StateDirectory=vgicd$/StateDirectory=vgicd-b/' \
		-e '/^\[Install\]/,$d' $u/vgicd.service >/etc/systemd/system/vgicd-b.service
	printf '%s\n' '# Host B: its configuration and state on the paths of a host.' \
		'BindReadOnlyPaths=/srv/b/etc-vgicd:/etc/vgicd' \
		'BindPaths=/var/lib/vgicd-b:/var/lib/vgicd' >>/etc/systemd/system/vgicd-b.service
	sed -e "s|^ListenStream=.*|ListenStream=$B/run-vgicd/vgicd.sock|" \
		-e '/^\[Install\]/,$d' $u/vgicd.socket >/etc/systemd/system/vgicd-b.socket
	systemctl daemon-reload && systemctl start vgicd-b.socket
}
expect b.vgicd "vgicd-b.socket: $(vgicd_b_units 2>&1; systemctl is-active vgicd-b.socket)" \
	systemctl -q is-active vgicd-b.socket
# B's virtlogd (QEMU's stdio goes through it, to B's /var/log/libvirt);
# not socket-activated, it makes its own socket in B's /run/libvirt.  Its
# pid file and libvirtd's move there too: A's hold the default ones.
systemd-run -q --unit=virtlogd-b --property=BindPaths="$BIND" \
	/usr/sbin/virtlogd --pid-file /run/libvirt/virtlogd.pid
# One machine has one systemd-machined, and both libvirtds would register
# their first domain with it as "qemu-1-NAME": B's libvirtd is kept off
# the system bus (an empty /run/dbus), so it puts its QEMUs in cgroups of
# its own (Delegate=yes) as on a host without machined, and takes no polkit
# decisions (its unix socket: root only, auth none).
mkdir -p $B/run-dbus
printf '%s\n' 'auth_unix_rw = "none"' 'unix_sock_rw_perms = "0700"' >>$B/etc-libvirt/libvirtd.conf
# libvirt keeps what it probed of an emulator in /var/cache/libvirt, valid
# while the binary's path and ctime (in seconds) stay the same.  B's two
# emulators are copies made in the same second, bound in turn on one path,
# so at a switch B's probe of the emulator it leaves is put aside, and the
# one of the emulator it takes is put back if B made one before (else
# libvirt probes it afresh), as two hosts would each keep their own;
# otherwise B would run the stock QEMU with the patched one's capabilities
# (and say so in virsh version).  Put back, not probed again: a probe of
# QEMU under TCG costs about 30 s of L1's time.
B_EMULATOR=
caps_stash() { echo "$B/caps-stash/$(printf '%s' "${1:-default}" | cksum | cut -d' ' -f1)"; }
libvirtd_b() {	# libvirtd_b [EXTRA_BIND] - (re)start B's libvirtd, wait until it answers
	systemctl stop libvirtd-b.service 2>/dev/null
	systemctl reset-failed libvirtd-b.service 2>/dev/null
	if [ "${1:-}" != "$B_EMULATOR" ]; then
		caps=$B/cache-libvirt/qemu/capabilities leaving=$(caps_stash "$B_EMULATOR") taking=$(caps_stash "${1:-}")
		mkdir -p $B/caps-stash
		rm -rf "$leaving"
		[ ! -d "$caps" ] || mv "$caps" "$leaving"
		[ ! -d "$taking" ] || mv "$taking" "$caps"
	fi
	B_EMULATOR=${1:-}
	systemd-run -q --unit=libvirtd-b --property=BindPaths="$BIND /srv/b/run-dbus:/run/dbus${1:+ $1}" \
		--property=Delegate=yes \
		/usr/sbin/libvirtd --config /etc/libvirt/libvirtd.conf --pid-file /run/libvirt/libvirtd.pid
	for _ in $(seq 150); do
		virsh -q -c "$URI_B" version >/dev/null 2>&1 && return 0
		systemctl -q is-failed libvirtd-b.service && return 1
		sleep 1
	done
	return 1
}
libvirtd_b
expect b.libvirtd "$(virsh -q -c "$URI_B" version 2>&1 | tr '\n' ' ')" virsh -q -c "$URI_B" version
label_b=$(cat /proc/"$(systemctl show -P MainPID libvirtd-b.service)"/attr/current 2>/dev/null)
expect b.libvirtd-confined "libvirtd-b: $label_b" sh -c "case '$label_b' in *libvirtd*'(enforce)') exit 0 ;; esac; exit 1"
stamp hosts

# --- a confined domain on A ------------------------------------------------
dom_xml() {	# dom_xml NAME VCPUS CONSOLE [QEMU_ARGS] - QEMU_ARGS: extra arguments (a taint)
	cat <<-EOF
	<domain type='kvm' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
	  <name>$1</name>
	  <memory unit='MiB'>256</memory>
	  <vcpu>$2</vcpu>
	  <os>
	    <type arch='aarch64' machine='virt'>hvm</type>
	    <kernel>$IMG/l2-Image</kernel>
	    <initrd>$IMG/l2-initrd</initrd>
	    <cmdline>console=ttyAMA0 loglevel=3 panic=-1</cmdline>
	  </os>
	  <features><gic version='3'/></features>
	  <cpu mode='host-passthrough'/>
	  <on_reboot>destroy</on_reboot>
	  <devices>
	    <emulator>/usr/bin/qemu-system-aarch64</emulator>
	    <serial type='file'>
	      <source path='$3'/>
	      <target type='system-serial' port='0'><model name='pl011'/></target>
	    </serial>
	    <rng model='virtio'><backend model='random'>/dev/urandom</backend></rng>
	    <controller type='usb' model='none'/>
	    <memballoon model='none'/>
	  </devices>
	EOF
	if [ -n "${4:-}" ]; then
		echo "  <qemu:commandline>"
		for qa in $4; do echo "    <qemu:arg value='$qa'/>"; done
		echo "  </qemu:commandline>"
	fi
	echo "</domain>"
}
# gic_ms save|load LOG - the GIC section's save or load time (ms) of the
# last migration in a domain log, from QEMU's trace events (log backend;
# libvirt's -msg timestamp=on makes them "PID@SECONDS:EVENT ARGS"): the
# save from savevm_section_start to savevm_section_end of arm_gicv3, the
# load from its vmstate_load to vmstate_load_state_end "arm_gicv3 end/".
gic_ms() {
	awk -v op="$1" '
	match($0, /^[0-9]+@[0-9]+\.[0-9]+:[a-z0-9_]+ /) {
		split(substr($0, 1, RLENGTH - 1), f, /[@:]/)
		t = f[2] + 0; ev = f[3]; args = substr($0, RLENGTH + 1)
		name = args; sub(/,.*/, "", name)
		gic = name ~ /^(.*\/)?arm_gicv3$/
		if (op == "save" && ev == "savevm_section_start" && gic) s = t
		else if (op == "save" && ev == "savevm_section_end" && gic && s != "") { r = (t - s) * 1000; s = "" }
		else if (op == "load" && ev == "vmstate_load" && gic) s = t
		else if (op == "load" && ev == "vmstate_load_state_end" && args ~ /^arm_gicv3 end\// && s != "") { r = (t - s) * 1000; s = "" }
	}
	END { if (r != "") printf "%.1f\n", r; else print "n/a" }' "$2" 2>/dev/null
}
# ticks CONSOLE - the guest's last whole "L2-TICK N virtio=M" line: QEMU
# writes the serial port a character at a time, so the file's last line may
# be cut (a tick number is whole once a space follows it).
ticks() { grep -a 'L2-TICK [0-9][0-9]* virtio=[0-9]' "$1" 2>/dev/null | tail -n 1; }
wait_tick() {	# wait_tick CONSOLE MIN_N TIMEOUT - until a tick >= MIN_N
	wt_t=0
	while :; do
		wt_k=$(ticks "$1" | awk '{print $2}')
		[ -n "$wt_k" ] && [ "$wt_k" -ge "$2" ] && return 0
		[ $wt_t -lt "$3" ] || return 1
		sleep 2
		wt_t=$((wt_t + 2))
	done
}

# The guest's kernel and initramfs where an operator keeps images (libvirt
# gives them to QEMU's user and to the domain's AppArmor profile), on both
# hosts, as shared storage would have them.
IMG=/var/lib/libvirt/images
for d in $IMG $B/lib-libvirt/images; do
	cp $P/l2/Image $d/l2-Image
	cp $P/l2/initrd $d/l2-initrd
done
con=/var/log/libvirt/qemu/l2a.console
dom_xml l2a "$VCPUS" $con >/tmp/l2a.xml
if virsh -q define /tmp/l2a.xml >/tmp/virsh.log 2>&1 && virsh -q start l2a >>/tmp/virsh.log 2>&1; then
	check a.start PASS "l2a ($VCPUS vCPUs) started on A"
else
	check a.start FAIL "$(tr '\n' ' ' </tmp/virsh.log)"
fi
wait_tick $con 3 600
expect a.guest-runs "$(ticks $con)" wait_tick $con 3 0
pid=$(cat /run/libvirt/qemu/l2a.pid 2>/dev/null)
label=$(cat /proc/"$pid"/attr/current 2>/dev/null)
expect a.confined "QEMU pid $pid: $label" sh -c "case '$label' in libvirt-*' (enforce)') exit 0 ;; esac; exit 1"
expect a.attached "$(jmsg vgicd.service attach l2a | tail -n 1)" \
	has_msg vgicd.service attach l2a
vgicctl sessions 2>&1 | sed 's/^/E2E: vgicctl sessions | /'
no_denial a.no-denial
dmesg | grep 'apparmor="DENIED"' | sed 's/^/E2E: denied | /'
stamp a-start

# (a) A -> B, live, through vgicd on both sides (the host-wide default).
n0=$(ticks $con | awk '{print $2}')
v0=$(ticks $con | sed 's/.*virtio=//')
if migrate_watch $URI_A "$URI_B" l2a $B/run-libvirt/qemu/l2a.pid; then
	check a.migrate PASS "virsh migrate --live l2a A -> B"
else
	check a.migrate FAIL "$(tr '\n' ' ' </tmp/migrate.log)"
fi
stamp a-migrate
expect a.saved-on-A "$(jmsg vgicd.service save l2a | tail -n 1)" has_msg vgicd.service save l2a
expect a.loaded-on-B "$(jmsg vgicd-b.service load l2a | tail -n 1)" has_msg vgicd-b.service load l2a
# What A's vgicd keeps of l2a now that its QEMU has left A: the save, as an
# operator reads it after the migration (vgicctl history), its journal
# entry explained by the packaged catalog (dpkg's trigger on systemd's
# catalog folder), and the metrics textfile node_exporter would read.
saved_and_gone() {	# saved_and_gone JSON - l2a's save kept, l2a detached
	# (vgicctl's compact JSON has no space after ':' or ',')
	printf '%s\n' "$1" |
		grep -Eq '"direction": ?"save", ?"path": ?"batch", ?"stream": ?"fields", ?"outcome": ?"ok"' ||
		return 1
	! vgicctl sessions --json | grep -Eq '"name": ?"l2a"'
}
for _ in $(seq 20); do
	vgicctl sessions --json | grep -Eq '"name": ?"l2a"' || break
	sleep 0.5
done
hist=$(vgicctl history l2a --json 2>&1)
printf '%s\n' "$hist" | sed 's/^/E2E: vgicctl history l2a --json | /'
vgicctl history 2>&1 | sed 's/^/E2E: vgicctl history | /'
expect a.history-on-A "$(printf '%s' "$hist" | cut -c1-300)" saved_and_gone "$hist"
expect a.journal-catalog-on-A \
	"$(journalctl -x -q --no-pager -u vgicd.service MESSAGE_ID=b72f7a0c89a94420b3ccee11c29d15ee VGICD_VM=l2a | grep -m1 'Subject:')" \
	sh -c "journalctl -x -q --no-pager -u vgicd.service MESSAGE_ID=b72f7a0c89a94420b3ccee11c29d15ee VGICD_VM=l2a | grep -q 'Subject: vgicd saved the vGIC of VM l2a'"
sleep 2	# the textfile follows a change within a second
expect a.metrics-textfile-on-A "$(grep -E '^vgicd_(operations_total\{direction="save",outcome="ok"\}|operation_duration_seconds_count)' $PROM/vgicd.prom 2>&1 | tr '\n' ' ')" \
	grep -qE '^vgicd_operation_duration_seconds_count\{direction="save",path="batch"\} [1-9]' $PROM/vgicd.prom
conb=$B/log-libvirt/qemu/l2a.console
wait_tick $conb $((n0 + 3)) 300
expect a.guest-runs-on-B "before: tick $n0 virtio=$v0; after: $(ticks $conb)" wait_tick $conb $((n0 + 3)) 0
# B's QEMU under its per-VM profile, as seen while the migration ran
# (when B loaded the state).  Both hosts share one kernel, where the
# profile's name (libvirt-UUID) is one object: when A's libvirt unloads
# it at the migration's end, B's QEMU loses it (a limit of two hosts on
# one machine, not of a real pair), so the label after is only printed.
pidb=$(cat $B/run-libvirt/qemu/l2a.pid 2>/dev/null)
say "B's QEMU after the migration: $(cat /proc/"$pidb"/attr/current 2>/dev/null)"
expect a.confined-on-B "B's QEMU during the migration, pid $WATCHED" \
	sh -c "case '$WATCHED' in *': libvirt-'*' (enforce)') exit 0 ;; esac; exit 1"
v1=$(ticks $conb | sed 's/.*virtio=//')
expect a.interrupts-on-B "virtio interrupts $v0 -> $v1" [ "${v1:-0}" -gt "${v0:-0}" ]
# libvirt taints every host-passthrough domain "host-cpu" (the CPU model an
# arm64 KVM guest has); what vgicd must never cause is the others
# (custom-argv, hook-script, custom-monitor...).
taints=$(grep -ho 'is tainted: [a-z-]*' /var/log/libvirt/qemu/l2a.log $B/log-libvirt/qemu/l2a.log 2>/dev/null |
	sed 's/is tainted: //' | sort | uniq -c | tr -s ' \n' ' ')
expect a.no-taint "taints in the two domain logs: ${taints:-none}" \
	sh -c "! grep -h 'is tainted' /var/log/libvirt/qemu/l2a.log $B/log-libvirt/qemu/l2a.log | grep -qv 'is tainted: host-cpu\$'"
no_denial a.no-denial-after
dmesg | grep 'apparmor="DENIED"' | sed 's/^/E2E: denied | /'
# The hook calls of (a) on each host, in order (the closing note's
# sequence): B is asked at "migrate begin" before it prepares the
# incoming QEMU; A releases the domain after the migration.
ha=$(hooks A l2a) hb=$(hooks B l2a)
echo "E2E-HOOK: A l2a: $ha"
echo "E2E-HOOK: B l2a: $hb"
expect a.hooks-A "A: $ha" sh -c "echo '$ha' | grep -q 'prepare begin.*release end'"
expect a.hooks-B "B: $hb" sh -c "echo '$hb' | grep -q 'migrate begin.*prepare begin'"
stamp a-done

# (f) Upgrade under a running domain: a newer build of both packages
# (the same files, a higher version: what an operator's next
# `apt-get upgrade` brings) installed with dpkg -i while l2a runs on B.
# The maintainer scripts restart vgicd.socket, so A's vgicd restarts; B's
# units are this tier's copies, which dpkg does not know, so they get the
# same restart by hand.  l2a lost its session with B's vgicd; the next
# migration (B -> A) must still go through vgicd on both sides
# (operations.md §9: QEMU attaches again when the migration is set up).
if want f; then
	oldv=$(dpkg-query -W -f='${Version}' vgicd)
	newv=$oldv+e2e1
	rm -rf /tmp/f && mkdir -p /tmp/f
	for p in libvgicd0 vgicd; do
		dpkg-deb -R $P/debs/${p}_*.deb /tmp/f/$p
		sed -i -e "s/^Version: .*/Version: $newv/" -e "s/(= $oldv)/(= $newv)/g" /tmp/f/$p/DEBIAN/control
		dpkg-deb -b /tmp/f/$p /tmp/f/${p}_${newv}_arm64.deb >/dev/null
	done
	inv0=$(systemctl show -P InvocationID vgicd.socket)
	ns=$(nmsg vgicd-b.service save l2a)
	nl=$(nmsg vgicd.service load l2a)
	if dpkg -i /tmp/f/libvgicd0_${newv}_arm64.deb /tmp/f/vgicd_${newv}_arm64.deb >/tmp/dpkg-f.log 2>&1; then
		check f.upgrade PASS "$oldv -> $(dpkg-query -W -f='${Version}' vgicd), l2a running on B: $(virsh -c "$URI_B" domstate l2a 2>&1)"
	else
		check f.upgrade FAIL "$(tail -n 5 /tmp/dpkg-f.log | tr '\n' ' ')"
	fi
	sed 's/^/E2E: dpkg | /' /tmp/dpkg-f.log
	inv1=$(systemctl show -P InvocationID vgicd.socket)
	expect f.socket-restarted "vgicd.socket invocation $inv0 -> $inv1, $(systemctl is-active vgicd.socket)" \
		test "$inv0" != "$inv1" -a "$(systemctl is-active vgicd.socket)" = active
	systemctl restart vgicd-b.socket
	nt=$(ticks $conb | awk '{print $2}')
	if migrate "$URI_B" $URI_A l2a && wait_tick $con $((${nt:-0} + 2)) 300; then
		check f.migrate PASS "l2a B -> A after the upgrade: $(ticks $con)"
	else
		check f.migrate FAIL "$(tr '\n' ' ' </tmp/migrate.log) $(ticks $con)"
	fi
	expect f.through-vgicd "B's vgicd: $(jmsg vgicd-b.service save l2a | tail -n 1); A's: $(jmsg vgicd.service load l2a | tail -n 1)" \
		test "$(nmsg vgicd-b.service save l2a)" -gt "$ns" -a "$(nmsg vgicd.service load l2a)" -gt "$nl"
	no_denial f.no-denial
	stamp f-done
fi

virsh -q destroy l2a >/dev/null 2>&1
virsh -q -c "$URI_B" destroy l2a >/dev/null 2>&1

# (b) The larger domain, migrated three times: through vgicd on both hosts
# (A -> B, the default mode); with vgicd's mode off on both (B -> A): "off"
# declines saves and loads of QEMU's own fields (operations.md section 7;
# only a state record is still loaded), so QEMU's own path on both sides,
# each decline logged; and with vgicd stopped on both (A -> B), as on hosts
# without vgicd.  Each with the downtime as libvirt reports it (domjobinfo
# --completed on the source) and the GIC section's own save and load times
# from QEMU's trace events in the two domain logs, read after each run
# (gic_ms takes a log's last of each kind).  A libvirt domain gets trace
# events only through extra QEMU arguments (<qemu:commandline>, which
# libvirt taints custom-argv, and which go along with the migration): this
# measuring domain has them, (a)'s has none.
# jobinfo DST SRC DOMAIN - "downtime total setup" (ms) of the domain's
# last completed migration, asked of the destination, else of the source.
# libvirt keeps the figures on both sides, but a source whose domain was
# transient (it came in by migration, without --persistent) forgets them
# when the domain leaves.
if want b; then
	jobinfo() {
		for ji in "$1" "$2"; do
			ji=$(virsh -c "$ji" domjobinfo --completed "$3" 2>/dev/null | awk -F: '
				/^Total downtime/ { d = $2 + 0 } /^Time elapsed:/ { t = $2 + 0 } /^Setup time/ { s = $2 + 0 }
				END { print d + 0, t + 0, s + 0 }')
			[ "${ji%% *}" = 0 ] || break
		done
		echo "$ji"
	}
	vmode() {	# vmode MODE - vgicd's mode on both hosts
		vgicctl mode "$1" --runtime >/dev/null
		sed -i "s/^#*Mode=.*/Mode=$1/" $B/etc-vgicd/vgicd.conf
		grep -q "^Mode=$1\$" $B/etc-vgicd/vgicd.conf || echo "Mode=$1" >>$B/etc-vgicd/vgicd.conf
		! systemctl -q is-active vgicd-b.service || systemctl reload vgicd-b.service
	}
	ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a > 0) printf "%.2f", a / b; else print "n/a" }'; }
	BIG=${VIRSH_VCPUS_BIG:-32}
	conbig=/var/log/libvirt/qemu/l2big.console
	conbigb=$B/log-libvirt/qemu/l2big.console
	logbig=/var/log/libvirt/qemu/l2big.log
	logbigb=$B/log-libvirt/qemu/l2big.log
	TRACE="-trace savevm_section_start -trace savevm_section_end -trace vmstate_load -trace vmstate_load_state_end"
	dom_xml l2big "$BIG" $conbig "$TRACE" >/tmp/l2big.xml
	if virsh -q define /tmp/l2big.xml >/tmp/virsh.log 2>&1 && virsh -q start l2big >>/tmp/virsh.log 2>&1 &&
		wait_tick $conbig 3 900; then
		check b.start PASS "l2big ($BIG vCPUs) runs on A: $(ticks $conbig)"
	else
		check b.start FAIL "$(tr '\n' ' ' </tmp/virsh.log) $(ticks $conbig)"
	fi
	stamp b-start

	# 1. Through vgicd on both.
	vmode auto
	migrate $URI_A "$URI_B" l2big && has_msg vgicd.service save l2big && has_msg vgicd-b.service load l2big
	rc=$?
	on=$(jobinfo "$URI_B" $URI_A l2big)
	gs_on=$(gic_ms save $logbig) gl_on=$(gic_ms load $logbigb)
	check b.vgicd-migrate "$([ $rc = 0 ] && echo PASS || echo FAIL)" "A -> B through vgicd: downtime/total/setup $(echo $on | tr " " /) ms; $(jmsg vgicd.service save l2big | tail -n 1)"
	stamp b-vgicd

	# 2. Mode off on both: each vgicd declines (a notice each), neither runs
	# the state.
	vmode off
	ns=$(nmsg vgicd-b.service save l2big) nl=$(nmsg vgicd.service load l2big)
	nb=$(ticks $conbigb | awk '{print $2}')
	migrate "$URI_B" $URI_A l2big && wait_tick $conbig $((${nb:-0} + 2)) 300 &&
		[ "$(nmsg vgicd-b.service save l2big)" = "$ns" ] && [ "$(nmsg vgicd.service load l2big)" = "$nl" ] &&
		jmsg vgicd-b.service save l2big | grep -q 'VM l2big: save declined: mode is off' &&
		jmsg vgicd.service load l2big | grep -q 'VM l2big: load declined: mode is off'
	rc=$?
	mo=$(jobinfo $URI_A "$URI_B" l2big)
	gs_mo=$(gic_ms save $logbigb) gl_mo=$(gic_ms load $logbig)
	check b.mode-off-migrate "$([ $rc = 0 ] && echo PASS || echo FAIL)" "B -> A, mode off: downtime/total/setup $(echo $mo | tr " " /) ms; $(jmsg vgicd-b.service save l2big | grep ' declined: ' | tail -n 1); $(jmsg vgicd.service load l2big | grep ' declined: ' | tail -n 1) $(tr '\n' ' ' </tmp/migrate.log)"
	vmode auto
	stamp b-mode-off

	# 3. vgicd stopped on both: QEMU's own path on both sides.
	systemctl stop vgicd.socket vgicd.service vgicd-b.socket vgicd-b.service
	ns=$(nmsg vgicd.service save l2big) nl=$(nmsg vgicd-b.service load l2big)
	na=$(ticks $conbig | awk '{print $2}')
	migrate $URI_A "$URI_B" l2big && wait_tick $conbigb $((${na:-0} + 2)) 300 &&
		[ "$(nmsg vgicd.service save l2big)" = "$ns" ] && [ "$(nmsg vgicd-b.service load l2big)" = "$nl" ]
	rc=$?
	none=$(jobinfo "$URI_B" $URI_A l2big)
	gs_none=$(gic_ms save $logbig) gl_none=$(gic_ms load $logbigb)
	check b.no-vgicd-migrate "$([ $rc = 0 ] && echo PASS || echo FAIL)" "A -> B, no vgicd on either host: downtime/total/setup $(echo $none | tr " " /) ms $(tr '\n' ' ' </tmp/migrate.log)"
	systemctl start vgicd.socket vgicd-b.socket

	f1() { echo "$1" | cut -d' ' -f"$2"; }
	echo "E2E-TABLE: b $BIG vCPUs | | no vgicd | mode off | vgicd | no vgicd / vgicd"
	echo "E2E-TABLE: b $BIG vCPUs | libvirt's total downtime ms | $(f1 "$none" 1) | $(f1 "$mo" 1) | $(f1 "$on" 1) | $(ratio "$(f1 "$none" 1)" "$(f1 "$on" 1)")"
	echo "E2E-TABLE: b $BIG vCPUs | GIC section save ms | $gs_none | $gs_mo | $gs_on | $(ratio "$gs_none" "$gs_on")"
	echo "E2E-TABLE: b $BIG vCPUs | GIC section load ms | $gl_none | $gl_mo | $gl_on | $(ratio "$gl_none" "$gl_on")"
	echo "E2E-TABLE: b $BIG vCPUs | setup ms | $(f1 "$none" 3) | $(f1 "$mo" 3) | $(f1 "$on" 3) |"
	echo "E2E-TABLE: b $BIG vCPUs | migration total ms | $(f1 "$none" 2) | $(f1 "$mo" 2) | $(f1 "$on" 2) |"
	expect b.gic-times "save $gs_none / $gs_mo / $gs_on ms, load $gl_none / $gl_mo / $gl_on ms (no vgicd / mode off / vgicd, trace events)" \
		sh -c "! echo '$gs_none $gs_mo $gs_on $gl_none $gl_mo $gl_on' | grep -q n/a"
	stamp b-done
	virsh -q -c "$URI_B" destroy l2big >/dev/null 2>&1
fi

# (e) vgicctl against libvirt A: enable --required on a running domain
# (its definition and its live metadata), then a migration towards B with
# B's vgicd stopped: B's hook refuses it with its message and the domain
# keeps running on A; disable takes the metadata away again.
if want e; then
	cone=/var/log/libvirt/qemu/l2e.console
	dom_xml l2e 4 $cone >/tmp/l2e.xml
	virsh -q define /tmp/l2e.xml >/dev/null 2>&1 && virsh -q start l2e >/dev/null 2>&1 && wait_tick $cone 2 600
	expect e.enable "$(vgicctl enable l2e --required 2>&1 | tr '\n' ' ')" \
		sh -c 'virsh dumpxml l2e | grep -q "required=.yes."'
	systemctl stop vgicd-b.socket vgicd-b.service
	if migrate $URI_A "$URI_B" l2e; then
		check e.refused FAIL "l2e migrated to B although B's vgicd is stopped"
	else
		check e.refused PASS "virsh: $(tr '\n' ' ' </tmp/migrate.log)"
	fi
	expect e.hook-message "the refusal names the domain and the remedy" \
		sh -c "grep -q \"domain 'l2e'\" /tmp/migrate.log && grep -q 'vgicd.socket' /tmp/migrate.log"
	expect e.still-on-A "l2e on A: $(virsh domstate l2e 2>&1)" [ "$(virsh domstate l2e 2>/dev/null)" = running ]
	systemctl start vgicd-b.socket
	# disable is an explicit "off" (vgicctl-libvirt.c), not the default back:
	# the definition and the live metadata both say mode off, not required.
	expect e.disable "$(vgicctl disable l2e 2>&1 | tr '\n' ' ')" \
		sh -c 'for f in --inactive ""; do virsh dumpxml $f l2e | grep -q "mode=.off." || exit 1
			! virsh dumpxml $f l2e | grep -q "required=.yes." || exit 1; done'
	no_denial e.no-denial
	virsh -q destroy l2e >/dev/null 2>&1
	stamp e-done
fi

# (d) Mixed fleet: B's emulator becomes Debian's stock QEMU (a bind mount
# in B's libvirtd namespace, as a host that never got the patched package).
# A domain in the default mode goes A -> B (A's save batched through
# vgicd, B's stock QEMU loads QEMU's own fields) and back B -> A (A's load
# batched); a definition vgicctl edited starts on B.
if want d; then
	libvirtd_b /usr/lib/vgicd-e2e/qemu-stock:/usr/bin/qemu-system-aarch64
	hv_b=$(virsh -q -c "$URI_B" version 2>&1 | grep hypervisor)
	expect d.stock-on-B "$hv_b (the stock binary: $l1_stock)" \
		sh -c "case '$hv_b' in *'QEMU $l1_stock') exit 0 ;; esac; exit 1"
	cond=/var/log/libvirt/qemu/l2d.console
	dom_xml l2d 4 $cond >/tmp/l2d.xml
	virsh -q define /tmp/l2d.xml >/dev/null 2>&1 && virsh -q start l2d >/dev/null 2>&1 && wait_tick $cond 2 600
	nd=$(nmsg vgicd.service save l2d)
	migrate $URI_A "$URI_B" l2d
	rc=$?
	nt=$(ticks $cond | awk '{print $2}')
	expect d.to-stock "rc $rc; A's vgicd: $(jmsg vgicd.service save l2d | tail -n 1); on B: $(ticks $B/log-libvirt/qemu/l2d.console) $(tr '\n' ' ' </tmp/migrate.log)" \
		test "$rc" = 0 -a "$(nmsg vgicd.service save l2d)" -gt "$nd"
	# What B's QEMU said when its load failed (libvirt's message keeps only
	# the last line).
	[ "$rc" = 0 ] || tail -n 8 $B/log-libvirt/qemu/l2d.log 2>&1 | sed 's/^/E2E-DIAG: B l2d.log | /'
	wait_tick $B/log-libvirt/qemu/l2d.console $((${nt:-0} + 2)) 300
	expect d.runs-on-stock "$(ticks $B/log-libvirt/qemu/l2d.console)" wait_tick $B/log-libvirt/qemu/l2d.console $((${nt:-0} + 2)) 0
	nt=$(ticks $B/log-libvirt/qemu/l2d.console | awk '{print $2}')
	migrate "$URI_B" $URI_A l2d
	rc=$?
	wait_tick $cond $((${nt:-0} + 2)) 300
	expect d.from-stock "rc $rc; A's vgicd: $(jmsg vgicd.service load l2d | tail -n 1); on A: $(ticks $cond) $(tr '\n' ' ' </tmp/migrate.log)" \
		test "$rc" = 0 -a -n "$(jmsg vgicd.service load l2d)"
	virsh -q destroy l2d >/dev/null 2>&1
	# A definition vgicctl touched (enable, then disable: what an operator's
	# tooling leaves), defined and started on B's stock QEMU.
	vgicctl enable l2d >/dev/null 2>&1
	vgicctl disable l2d >/dev/null 2>&1
	virsh dumpxml --inactive l2d >/tmp/l2d-touched.xml
	vgicctl enable l2d >/dev/null 2>&1
	virsh dumpxml --inactive l2d >/tmp/l2d-enabled.xml
	virsh -q undefine l2d >/dev/null 2>&1
	sed 's/<name>l2d</<name>l2t</; /<uuid>/d; s/l2d.console/l2t.console/' /tmp/l2d-enabled.xml >/tmp/l2t.xml
	if virsh -q -c "$URI_B" define /tmp/l2t.xml >/tmp/virsh.log 2>&1 && virsh -q -c "$URI_B" start l2t >>/tmp/virsh.log 2>&1 &&
		wait_tick $B/log-libvirt/qemu/l2t.console 2 600; then
		check d.touched-starts PASS "vgicctl-enabled definition runs on B's stock QEMU: $(ticks $B/log-libvirt/qemu/l2t.console)"
	else
		check d.touched-starts FAIL "$(tr '\n' ' ' </tmp/virsh.log)"
	fi
	virsh -q -c "$URI_B" destroy l2t >/dev/null 2>&1
	no_denial d.no-denial
	libvirtd_b
	stamp d-done
fi

# (c) The AppArmor rule for QEMU removed (abstractions/libvirt-qemu.d/vgicd:
# both hosts share one kernel and one /etc/apparmor.d, so B's incoming
# QEMU gets its profile without it).  operations.md §11: a confined QEMU
# that cannot reach vgicd on a destination whose hook reached vgicd fails
# the incoming migration, and the domain keeps running on A.  Then the
# rule is restored and the migration succeeds.
if want c; then
	rule=/etc/apparmor.d/abstractions/libvirt-qemu.d/vgicd
	conc=/var/log/libvirt/qemu/l2c.console
	dom_xml l2c 4 $conc >/tmp/l2c.xml
	virsh -q define /tmp/l2c.xml >/dev/null 2>&1 && virsh -q start l2c >/dev/null 2>&1 && wait_tick $conc 2 600
	d0=$(dmesg | grep -c 'apparmor="DENIED"')
	# Emptied rather than moved away: apparmor_parser keeps compiled policy
	# in a cache it trusts while no file it includes is newer than the cache,
	# so a removed file would leave the rule in force (an operator who takes
	# a rule out meets the same: edit the file, or run apparmor_parser with
	# --skip-cache).  The restore below writes the file anew for that reason.
	cp -p $rule /tmp/vgicd-aa-rule
	echo "# the vgicd rules, removed by the virsh tier's scenario (c)" >$rule
	# What a QEMU profile compiles to now: the abstraction, expanded, must no
	# longer name vgicd.
	printf '%s\n' 'abi <abi/4.0>,' 'include <tunables/global>' 'profile e2e-c {' \
		'  include <abstractions/libvirt-qemu>' '}' >/tmp/e2e-c.profile
	apparmor_parser -p /tmp/e2e-c.profile >/tmp/e2e-c.expanded 2>&1
	nlines=$(grep -c . /tmp/e2e-c.expanded) nrules=$(grep -v '^[[:space:]]*#' /tmp/e2e-c.expanded | grep -c vgicd)
	expect c.rule-gone "the expanded libvirt-qemu abstraction ($nlines lines) names vgicd $nrules times" \
		[ "$nlines" -gt 100 -a "$nrules" -eq 0 ]
	# Whether QEMU's profile mediates AF_UNIX: only then can it refuse QEMU's
	# connect() to vgicd's socket.  The kernel must (Ubuntu's do, 7.3 does;
	# Debian 13's 6.12 has no unix socket mediation), and so must the policy
	# features the profile is compiled against: its abi rule's, or, as
	# libvirt's per-VM profiles have none, parser.conf's policy-features
	# pin (Debian pins a set without af_unix, so its libvirt QEMUs stay
	# unmediated on a kernel that could), or the kernel's when nothing pins.
	afunix=no kafunix=no
	ls -d /sys/kernel/security/apparmor/features/network*/af_unix >/dev/null 2>&1 && kafunix=yes
	vmprof=$(ls /etc/apparmor.d/libvirt/libvirt-"$(virsh domuuid l2c 2>/dev/null | head -n 1)" 2>/dev/null)
	abi=$(sed -n 's/^[[:space:]]*abi[[:space:]]*<\([^>]*\)>.*/\1/p' "${vmprof:-/dev/null}" | head -n 1)
	if [ -n "$abi" ]; then
		features=/etc/apparmor.d/$abi
	else
		features=$(sed -n 's/^[[:space:]]*policy-features=//p' /etc/apparmor/parser.conf 2>/dev/null | tail -n 1)
	fi
	if [ $kafunix = yes ] && { [ -z "$features" ] || grep -q 'af_unix' "$features" 2>/dev/null; }; then
		afunix=yes
	fi
	say "(c) AppArmor features: $(ls /sys/kernel/security/apparmor/features | tr '\n' ' '); af_unix in the kernel: $kafunix; QEMU's profile ${vmprof:-(none found)} compiled against ${features:-the features of the kernel}${abi:+ (its abi rule)}; af_unix mediation of QEMU: $afunix"
	migrate $URI_A "$URI_B" l2c
	rc=$?
	denied=$(dmesg | grep 'apparmor="DENIED"' | tail -n +$((d0 + 1)) | grep -m1 vgicd)
	if [ $afunix = yes ]; then
		expect c.denial "$denied" [ -n "$denied" ]
		expect c.as-documented "migrate rc $rc: $(tr '\n' ' ' </tmp/migrate.log); on A: $(virsh domstate l2c 2>&1)" \
			test "$rc" != 0 -a "$(virsh domstate l2c 2>/dev/null)" = running
	else
		# Nothing to refuse the connect: the migration goes through vgicd with
		# or without the rule, and no denial may name vgicd.
		expect c.no-af-unix "QEMU's unix sockets are not mediated here (kernel: $kafunix): migrate rc $rc, B's vgicd: $(jmsg vgicd-b.service load l2c | tail -n 1); denial naming vgicd: ${denied:-none}" \
			test "$rc" = 0 -a -z "$denied" -a -n "$(jmsg vgicd-b.service load l2c)"
	fi
	cat /tmp/vgicd-aa-rule >$rule
	virsh -c "$URI_B" domstate l2c >/dev/null 2>&1 && migrate "$URI_B" $URI_A l2c
	n=$(denials)
	migrate $URI_A "$URI_B" l2c
	rc=$?
	expect c.restored "rule back: migrate rc $rc, B's vgicd: $(jmsg vgicd-b.service load l2c | tail -n 1), $(( $(denials) - n )) new denials" \
		test "$rc" = 0 -a "$(denials)" -eq "$n" -a -n "$(jmsg vgicd-b.service load l2c)"
	virsh -q -c "$URI_B" destroy l2c >/dev/null 2>&1
	virsh -q destroy l2c >/dev/null 2>&1
	stamp c-done
fi
finish
