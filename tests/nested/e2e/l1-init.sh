#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# /init of the QEMU end-to-end tier's L1 machine (run-qemu-e2e.sh): an arm64
# host with KVM, a real vgicd (--no-system-bus, Mode=auto, AllowUsers=root)
# on the well-known socket, the patched qemu-system-aarch64
# (/usr/bin/qemu-system-patched), Debian stable's stock one (/usr/bin/qemu-system-stock)
# and libvirt's qemu hook (/usr/sbin/vgicd-qemu-hook).  No QEMU gets a
# vgicd argument: the patched one uses the host's vgicd by default, and the
# stock one gets the same command line, as the hook and vgicctl now leave
# every domain's.  It runs the scenarios, prints
# E2E-CHECK lines (PASS/FAIL) and ships the migration streams and QEMU
# trace logs to the host on the console (gzip + base64 between
# E2E-FILE-BEGIN/E2E-FILE-END), where they are analysed.
#
# Kernel command line:
#   e2e_a=4,16     vCPU counts of the round trip with a running L2 guest (a)
#   e2e_b=4        vCPU count of the compatibility checks (b); 0: none
#   e2e_c=64,128   vCPU counts of the timed GIC save/load (c)
#   e2e_reps=3     runs of each (c) save and load (the host takes the median)
#   e2e_c_vmdesc=on  off: (c) runs both QEMUs with suppress-vmdesc=on
#   e2e_d=64,128   vCPU counts of the live migrations of a running guest (d)
#   e2e_d_hops=3   live migrations per (d) guest (the host takes the median)
#   e2e_e=4        vCPU count of the live migrations across QEMU versions (e); 0: none
#   e2e_e_all=1    0: (e) only the patched QEMU to and from each QEMU of
#                  another version
#   e2e_pbase=10.0 the version /usr/bin/qemu-system-patched is built on; when
#                  not 10.0, (e) also runs the patched 10.0
#                  (/usr/bin/qemu-system-patched10) as a QEMU of its own
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
/bin/busybox --install -s /bin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run

A=4 B=4 C=64,128 REPS=3 C_VMDESC=on D=64,128 D_HOPS=3 E=4 E_ALL=1 PBASE=10.0
# start()'s machine type ((e) sets the 10.0 one; e2e_machine= another for
# (a) to (d), where the patched QEMU is not 10.0), and its extra -machine
# options ((c) sets them when e2e_c_vmdesc=off).
MACHINE=virt
MOPT=
for p in $(cat /proc/cmdline); do
	case $p in
	e2e_a=*) A=${p#*=} ;;
	e2e_b=*) B=${p#*=} ;;
	e2e_c=*) C=${p#*=} ;;
	e2e_reps=*) REPS=${p#*=} ;;
	e2e_c_vmdesc=*) C_VMDESC=${p#*=} ;;
	e2e_d=*) D=${p#*=} ;;
	e2e_d_hops=*) D_HOPS=${p#*=} ;;
	e2e_e=*) E=${p#*=} ;;
	e2e_e_all=*) E_ALL=${p#*=} ;;
	e2e_machine=*) MACHINE=${p#*=} ;;
	e2e_pbase=*) PBASE=${p#*=} ;;
	esac
done
MACHINE_AD=$MACHINE

Q=/tmp/q			# QMP sockets, consoles, traces, streams
mkdir -p $Q /run/vgicd /etc/vgicd /var/log
PQ=/usr/bin/qemu-system-patched
SQ=/usr/bin/qemu-system-stock
# trixie-backports' stock QEMU 11.1, where the host put it in (for (e))
S11Q=/usr/bin/qemu-system-stock11
# The patched 10.0: $PQ itself, or, when $PQ is built on another base, the
# one the host put in beside it (for (e)).
P10Q=$PQ
[ "$PBASE" = 10.0 ] || P10Q=/usr/bin/qemu-system-patched10
# The patched QEMU's default address (qemu-patch/, -Dvgicd_address).
SOCK=/run/vgicd/vgicd.sock
FAILS=0

# up, say, stamp, check (the E2E lines): lib/e2e-lines.sh
# shellcheck source=../lib/e2e-lines.sh
. /lib/e2e-lines.sh
# diag - on a failure: every QEMU still running, what it waits on, its last
# QMP reply, its vgicd trace events and stderr; vgicd's log.
diag() {
	local f pid t nn
	echo "E2E-DIAG: ---- at $(up) s"
	for f in "$Q"/*.pid; do
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		nn=$(basename "$f" .pid)
		if kill -0 "$pid" 2>/dev/null; then
			echo "E2E-DIAG: $nn (pid $pid) running: $(grep -E '^State' /proc/$pid/status | tr '\t' ' ')"
			for t in /proc/$pid/task/*; do
				echo "E2E-DIAG:   thread $(basename $t) $(cat $t/comm) $(cut -d' ' -f3 $t/stat) wchan=$(cat $t/wchan 2>/dev/null)"
			done
		else
			echo "E2E-DIAG: $nn (pid $pid) exited"
		fi
		[ -f "$Q/$nn.qmp.last" ] && sed "s/^/E2E-DIAG:   qmp | /" "$Q/$nn.qmp.last" | cut -c1-400
		[ -f "$Q/$nn.mig-status" ] && sed "s/^/E2E-DIAG:   mig | /" "$Q/$nn.mig-status" | cut -c1-400
		grep -E 'vgicd|subsection' "$Q/$nn.trace" 2>/dev/null | sed "s/^/E2E-DIAG:   trace | /" | tail -n 8
		grep -v 'recommended cpus' "$Q/$nn.err" 2>/dev/null | sed "s/^/E2E-DIAG:   err | /" | tail -n 8
	done
	tail -n 12 /var/log/vgicd.log | sed 's/^/E2E-DIAG: vgicd | /'
}
finish() {
	echo "E2E-DONE: fails=$FAILS${1:+ ($1)}"
	sync
	poweroff -f
	echo o > /proc/sysrq-trigger
	sleep 30
}
# ship NAME FILE - the file to the host: gzip, base64, on the console.
ship() {
	[ -f "$2" ] || { say "ship: no $2"; return 0; }
	echo "E2E-FILE-BEGIN $1 $(stat -c %s "$2")"
	gzip -c "$2" | base64
	echo "E2E-FILE-END $1"
}
# qmp NAME ARGS... - /usr/bin/qmp on NAME's socket.  It fails at once when
# NAME's QEMU has exited: qmp would retry connecting for 60 s, each time,
# which after a QEMU that died made a failing run crawl.
qmp() {
	local q=$1
	shift
	alive "$q" || { echo "qmp: $q is not running" >&2; return 1; }
	/usr/bin/qmp "$Q/$q.qmp" "$@"
}
# qmpq NAME JSON... - the same, quietly; only the status counts
qmpq() { local q=$1; shift; qmp "$q" "$@" > "$Q/$q.qmp.last" 2>&1; }

# start NAME BINARY VCPUS ARGS... - one QEMU in the background: console
# in $Q/NAME.serial, stderr in $Q/NAME.err, trace (with timestamps) in
# $Q/NAME.trace, QMP on $Q/NAME.qmp; its pid in $Q/NAME.pid.
start() {
	local n=$1 bin=$2 smp=$3 ev
	shift 3
	ev="-trace savevm_section_start -trace savevm_section_end -trace vmstate_load -trace vmstate_subsection_load_bad -trace vm_state_notify"
	# The ends of pre_save and of a state's load: QEMU 11.1 renamed both
	# (vmstate_save_state_pre_save_success, vmstate_load_state_success).
	case $bin in
	"$S11Q") ev="$ev -trace vmstate_save_state_pre_save_success -trace vmstate_load_state_success" ;;
	*) ev="$ev -trace vmstate_save_state_pre_save_res -trace vmstate_load_state_end" ;;
	esac
	case $bin in "$PQ" | "$P10Q") ev="$ev -trace kvm_arm_gicv3_vgicd_*" ;; esac
	rm -f "$Q/$n".*
	# shellcheck disable=SC2086
	$bin -accel kvm -M "$MACHINE,gic-version=3$MOPT" -cpu host -smp "$smp" \
		-nodefaults -no-user-config -display none \
		-serial "file:$Q/$n.serial" -qmp "unix:$Q/$n.qmp,server=on,wait=off" \
		-msg timestamp=on -D "$Q/$n.trace" $ev "$@" \
		> "$Q/$n.out" 2> "$Q/$n.err" &
	echo $! > "$Q/$n.pid"
}
alive() { kill -0 "$(cat "$Q/$1.pid")" 2>/dev/null; }
stop_qemu() {
	local pid i=0
	pid=$(cat "$Q/$1.pid" 2>/dev/null) || return 0
	kill "$pid" 2>/dev/null
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}
# wait_exit NAME SECS - wait for a QEMU to exit by itself; its status in RC.
wait_exit() {
	local pid i=0
	pid=$(cat "$Q/$1.pid")
	while kill -0 "$pid" 2>/dev/null && [ $i -lt $(($2 * 10)) ]; do sleep 0.1; i=$((i + 1)); done
	if kill -0 "$pid" 2>/dev/null; then RC=timeout; return 1; fi
	wait "$pid"
	RC=$?
}
# save NAME FILE - migrate the (stopped) VM NAME to FILE; 0 on completed.
save() {
	qmpq "$1" "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"exec:cat > $2\"}}" &&
		qmp "$1" --wait-migrate 600 > "$Q/$1.mig-status" 2>&1
}
# load NAME FILE - feed FILE to the -incoming defer VM NAME; 0 on completed.
# A missing or empty FILE fails here: QEMU 10.0, fed no byte by exec:cat,
# stays in "setup" until load's 600 s are out.
load() {
	[ -s "$2" ] || { echo "load: no stream in $2" > "$Q/$1.mig-status"; return 1; }
	qmpq "$1" "{\"execute\":\"migrate-incoming\",\"arguments\":{\"uri\":\"exec:cat $2\"}}" &&
		qmp "$1" --wait-migrate 600 > "$Q/$1.mig-status" 2>&1
}
caps() {	# caps NAME CAP=BOOL...
	local q=$1 l= c
	shift
	for c in "$@"; do
		l="$l${l:+,}{\"capability\":\"${c%=*}\",\"state\":${c#*=}}"
	done
	qmpq "$q" "{\"execute\":\"migrate-set-capabilities\",\"arguments\":{\"capabilities\":[$l]}}"
}
# set_conf MODE RECORD - vgicd's host mode and Record=, through its
# configuration and SIGHUP (when it runs and the file changed)
set_conf() {
	local before i=0 conf
	conf=$(printf '[vgicd]\nMode=%s\nSocket=%s\nAllowUsers=root\nProbe=true\nRecord=%s\n' "$1" "$SOCK" "$2")
	[ "$conf" = "$(cat /etc/vgicd/vgicd.conf 2>/dev/null)" ] && return 0
	echo "$conf" > /etc/vgicd/vgicd.conf
	[ -n "$VGICD_PID" ] || return 0
	before=$(grep -c 'configuration reloaded' /var/log/vgicd.log)
	kill -HUP "$VGICD_PID"
	while [ "$(grep -c 'configuration reloaded' /var/log/vgicd.log)" = "$before" ]; do
		i=$((i + 1))
		[ $i -lt 100 ] || { say "vgicd did not reload"; return 1; }
		sleep 0.1
	done
	grep 'configuration reloaded' /var/log/vgicd.log | tail -n 1 | grep -q "mode $1"
}
set_mode() { set_conf "$1" false; }
# ticks NAME - the last L2-TICK number on NAME's console (0 if none)
ticks() {
	local t
	t=$(cat "$Q/$1.serial" 2>/dev/null | tr -d '\r' | grep '^L2-TICK ' | tail -n 1 | cut -d' ' -f2)
	echo "${t:-0}"
}
# wait_ticks NAME MIN SECS - wait until NAME's guest has printed tick MIN
wait_ticks() {
	local i=0
	while [ "$(ticks "$1")" -lt "$2" ]; do
		i=$((i + 1))
		[ $i -lt $(($3 * 2)) ] || return 1
		alive "$1" || return 1
		sleep 0.5
	done
}
has() { grep -q "$2" "$Q/$1.trace" 2>/dev/null; }
# keep NAME PREFIX - ship NAME's trace and stderr as PREFIX.*
keep() {
	ship "$2.trace" "$Q/$1.trace"
	ship "$2.err" "$Q/$1.err"
}

echo "E2E: /init started at $(up) s, kernel $(uname -r), a=$A b=$B c=$C d=$D"
stamp init
[ -c /dev/kvm ] || finish "no /dev/kvm: KVM did not initialise"
echo "E2E: patched: $($PQ --version | head -n 1) (base $PBASE)"
echo "E2E: stock:   $($SQ --version | head -n 1)"

# start_vgicd - vgicd on $SOCK, as vgicd.socket would have it; waits for it.
start_vgicd() {
	vgicd --no-system-bus --config /etc/vgicd/vgicd.conf >> /var/log/vgicd.log 2>&1 &
	VGICD_PID=$!
	local i=0
	while [ ! -S $SOCK ]; do
		i=$((i + 1))
		[ $i -lt 300 ] || return 1
		sleep 0.1
	done
}
# stop_vgicd - no vgicd on this host (and no socket file left behind)
stop_vgicd() {
	kill "$VGICD_PID" 2>/dev/null
	wait "$VGICD_PID" 2>/dev/null
	VGICD_PID=
	rm -f $SOCK
}

set_mode auto
: > /var/log/vgicd.log
start_vgicd || { cat /var/log/vgicd.log; finish "vgicd did not start"; }
sed 's/^/E2E: vgicd | /' /var/log/vgicd.log
stamp vgicd-up

# ---------------------------------------------------------------------------
# (a) the compatibility matrix, with a running L2 guest.  Every pair of
# source and destination among
#   V  the patched QEMU, vgicd up (Record=false, the default)
#   S  Debian's stock QEMU
#   D  the patched QEMU on a host whose vgicd is down
# migrates the guest once, in one chain of QEMUs: each loads the stream
# the one before saved, saves its own (the VM stopped throughout), and
# then runs the guest on for three ticks.  The chain's order,
#   V V S S D D V D S V R V
# holds every ordered pair of V, S, D once, then V -> R (R: the patched
# QEMU with Record=true, which saves vgicd's state record) and R -> V.
# QEMU 10.0 migrates a VM only once ("Can't migrate the vm that was paused
# due to previous migration"), hence a new QEMU per step.  Guest RAM is a
# shared file and x-ignore-shared is on, so the streams carry the devices
# only; the file is copied after each save and put back after the guest
# ran on, so every step resumes the same guest.  The host then compares
# the GIC and ITS sections of every stream but R's (all must be equal:
# the same stopped guest), and checks that only R's carries the
# arm_gicv3/vgicd subsection.  On the way, R's stream is refused by a
# stock QEMU and by D (the source stays alive in a live attempt), each
# with a clear error.  A step whose load fails has its save and run
# reported not run, and the next step loads the last stream saved.
# ---------------------------------------------------------------------------
l2_args() {	# the guest's memory and kernel, the same on every side
	echo "-m 256M -object memory-backend-file,id=ram,size=256M,mem-path=/tmp/ram-$1,share=on -machine memory-backend=ram"
}
KERNEL="-kernel /l2/Image -initrd /l2/initrd"
APPEND="console=ttyAMA0 quiet rdinit=/init"
CHAIN="V V S S D D V D S V R V"
# kind TYPE - the host as a QEMU of TYPE needs it; the binary in BIN
kind() {
	case $1 in
	S | V) set_conf auto false ;;
	R) set_conf auto true ;;
	esac
	case $1 in
	S) BIN=$SQ ;;
	*) BIN=$PQ ;;
	esac
	if [ $1 = D ]; then
		stop_vgicd
	elif [ -z "$VGICD_PID" ]; then
		start_vgicd || check "vgicd-restarts" FAIL "$(tail -n 5 /var/log/vgicd.log)"
	fi
}
# path_load NAME PREV TYPE - how NAME (a TYPE) loaded PREV's stream, or
# empty when it is not how it should have
path_load() {
	local ev
	case $3 in
	S) echo "stock QEMU, one by one" ;;
	D) has "$1" kvm_arm_gicv3_vgicd_load || has "$1" kvm_arm_gicv3_vgicd_attach ||
		echo "no vgicd: QEMU's own put, one by one ($(grep -m1 -o 'vgicd_absent.*' $Q/$1.trace))" ;;
	V | R)
		if [ "$2" = R ]; then ev=kvm_arm_gicv3_vgicd_load; else ev=kvm_arm_gicv3_vgicd_load_fields; fi
		has "$1" "$ev" && grep -q "$ev " $Q/$1.trace &&
			echo "through vgicd: $(grep -m1 "$ev " $Q/$1.trace | sed "s/.*$ev //")" ;;
	esac
}
# path_save NAME TYPE - the same for NAME's save
path_save() {
	case $2 in
	S) echo "stock QEMU, one by one" ;;
	D) has "$1" kvm_arm_gicv3_vgicd_save || has "$1" kvm_arm_gicv3_vgicd_save_fields ||
		echo "no vgicd: QEMU's own get, one by one" ;;
	V) ! has "$1" 'kvm_arm_gicv3_vgicd_save ' && has "$1" kvm_arm_gicv3_vgicd_save_fields &&
		echo "into QEMU's fields, through vgicd: $(grep -m1 kvm_arm_gicv3_vgicd_save_fields $Q/$1.trace | sed 's/.*save_fields //')" ;;
	R) has "$1" 'kvm_arm_gicv3_vgicd_save ' && ! has "$1" kvm_arm_gicv3_vgicd_save_fields &&
		echo "a state record, through vgicd: $(grep -m1 'kvm_arm_gicv3_vgicd_save ' $Q/$1.trace | sed 's/.*vgicd_save //')" ;;
	esac
}
# put_refused N FILE - a state the destination's kernel refuses: FILE (a
# stream of QEMU's own fields, N vCPUs) with vCPU 0's ICC_CTLR_EL1.SEIS
# flipped, which KVM refuses to set when the host's ICH_VTR_EL2.SEIS
# differs.  The patched QEMU, through vgicd (V) and without it (D), must fail
# the incoming migration with the kernel's error and stay up (migrate-incoming
# with exit-on-error=false): the error is on its stderr (10.0's series
# reports it there) or in query-migrate's error-desc (10.2's hands it to
# the migration core, through post_load_errp); the stock QEMU 10.0 aborts on the same stream
# (&error_abort), which is reported, not checked.  The byte to flip comes
# from vgicctl's offset of the GIC section and QEMU 10.0's field layout; the
# dump of the result must differ from the original's in that one field.
put_refused() {
	local n=$1 file=$2 bad=$Q/put-refused.mig sec off b t q err
	sec=$(vgicctl dump "$file" 2>/dev/null | sed -n '1s/.* section [0-9]* at byte \([0-9]*\),.*/\1/p')
	# section header 23 bytes; the distributor's fields 10344; vCPU 0's
	# fields before icc_ctlr_el1[GICV3_NS] 104 (96, then the secure copy);
	# SEIS is bit 14 of that big-endian u64, bit 6 of its byte 6.
	off=$((sec + 23 + 10344 + 104 + 6))
	cp "$file" "$bad"
	b=$(dd if="$bad" bs=1 skip=$off count=1 2>/dev/null | od -An -tu1 | tr -d ' ')
	# shellcheck disable=SC2059
	printf "$(printf '\\%03o' $((b ^ 64)))" | dd of="$bad" bs=1 seek=$off count=1 conv=notrunc 2>/dev/null
	vgicctl dump "$file" | sed 1d > $Q/put-refused.orig.txt
	vgicctl dump "$bad" | sed 1d > $Q/put-refused.bad.txt
	# busybox's diff is unified: a changed line is "-" then "+", and the
	# dump's lines start with a space
	diff -u $Q/put-refused.orig.txt $Q/put-refused.bad.txt | grep '^[-+] ' > $Q/put-refused.diff
	t=$(wc -l < $Q/put-refused.diff)
	if [ -n "$sec" ] && [ "$t" = 2 ] && grep -q '^+.*ICC_CTLR_EL1.*SEIS=1' $Q/put-refused.diff; then
		check "a.put-refused.stream" PASS "vCPU 0's ICC_CTLR_EL1: $(sed 's/  */ /g' $Q/put-refused.diff | cut -c1-40 | tr '\n' ' ')"
		# the host's analysis must find this one bit too (analyze.py)
		ship "a$n-put-refused.mig" "$bad"
	else
		check "a.put-refused.stream" FAIL "section at '${sec}', $t lines differ: $(diff $Q/put-refused.orig.txt $Q/put-refused.bad.txt | head -n 6 | tr '\n' ' ')"
		return
	fi
	for t in V D S; do
		kind $t
		q=pr$t
		# shellcheck disable=SC2086
		start $q $BIN "$n" $mem -append "$APPEND" -incoming defer -S
		caps $q x-ignore-shared=true
		qmpq $q "{\"execute\":\"migrate-incoming\",\"arguments\":{\"uri\":\"exec:cat $bad\",\"exit-on-error\":false}}"
		qmp $q --wait-migrate 120 > $Q/$q.mig-status 2>&1
		sleep 1
		err=$(grep -v -e '^$' -e 'recommended cpus' $Q/$q.err | tr '\n' ' ' | cut -c1-400)
		if [ $t = S ]; then
			if alive $q; then RC=alive; else wait_exit $q 5 || true; fi
			say "put-refused: the stock QEMU on the same stream: ${RC}; stderr: $err"
		elif alive $q && qmp $q '{"execute":"query-status"}' > $Q/$q.status 2>&1 &&
			grep -q '"status": "failed"' $Q/$q.mig-status &&
			grep -Eq 'Failed to restore the vGIC state|could not restore the vGIC' $Q/$q.err $Q/$q.mig-status; then
			check "a.put-refused.$t" PASS "migration failed, QEMU up ($(grep -o '"status": "[a-z-]*"' $Q/$q.status)): $err"
		else
			check "a.put-refused.$t" FAIL "alive=$(alive $q && echo yes || echo no); $(cat $Q/$q.mig-status | tr '\n' ' ' | cut -c1-300); stderr: $err"
		fi
		stop_qemu $q
		keep $q put-refused-$t
	done
	kind V
}
# refused NAME CHECK BINARY FILE WHAT - a QEMU (BINARY, the host as it is)
# must refuse the record stream FILE with an error matching WHAT
refused() {
	# shellcheck disable=SC2086
	start "$1" "$3" "$n" $mem -append "$APPEND" -incoming defer -S
	caps "$1" x-ignore-shared=true
	if ! load "$1" "$4" && wait_exit "$1" 60 && [ "$RC" != 0 ] && grep -q "$5" $Q/$1.err $Q/$1.trace; then
		check "$2" PASS "exit $RC: $(grep -v -e '^$' -e 'recommended cpus' $Q/$1.err | tr '\n' ' ' | cut -c1-300)"
	else
		check "$2" FAIL "exit ${RC:-?}: $(cat $Q/$1.mig-status $Q/$1.err | tr '\n' ' ' | cut -c1-400)"
	fi
	stop_qemu "$1"
	cp /tmp/ram-$n.bak /tmp/ram-$n
}

for n in $(echo "$A" | tr , ' '); do
	say "(a) N=$n: boot the L2 guest on the patched QEMU with vgicd"
	mem="$(l2_args "$n") $KERNEL"
	kind V
	# shellcheck disable=SC2086
	start m${n}_0 $PQ "$n" $mem -append "$APPEND"
	stamp "a$n-started"
	if ! wait_ticks m${n}_0 3 900; then
		check "a$n.boot" FAIL "no L2-TICK 3 within 900 s"
		tail -n 20 $Q/m${n}_0.serial $Q/m${n}_0.err
		stop_qemu m${n}_0
		continue
	fi
	stamp "a$n-booted"
	check "a$n.boot" PASS "$(tr -d '\r' < $Q/m${n}_0.serial | grep -m1 L2-READY), ticking"
	qmpq m${n}_0 '{"execute":"stop"}'
	caps m${n}_0 x-ignore-shared=true
	stopped_at=$(ticks m${n}_0)
	# The patched QEMU, no vgicd argument, attached to the host's vgicd
	if has m${n}_0 kvm_arm_gicv3_vgicd_attach && ! grep -q vgicd $Q/m${n}_0.err; then
		check "a$n.default-attach" PASS "no argument: $(grep -m1 kvm_arm_gicv3_vgicd_attach $Q/m${n}_0.trace | sed 's/.*vgicd_attach //')"
	else
		check "a$n.default-attach" FAIL "trace: $(grep vgicd $Q/m${n}_0.trace | head -n 3); stderr: $(cat $Q/m${n}_0.err)"
	fi
	if save m${n}_0 $Q/a$n-0.mig && p=$(path_save m${n}_0 V) && [ -n "$p" ]; then
		check "a$n.0-V.save" PASS "$p"
	else
		check "a$n.0-V.save" FAIL "$(cat $Q/m${n}_0.mig-status $Q/m${n}_0.err)"
	fi
	stop_qemu m${n}_0
	cp /tmp/ram-$n /tmp/ram-$n.bak
	keep m${n}_0 a$n-0-V
	ship "a$n-0.mig" $Q/a$n-0.mig

	# from: the stream the next step loads, saved by a QEMU of type prev
	# (when step 0's save failed, load finds no stream and says so)
	i=0 prev='' from=$Q/a$n-0.mig
	for t in $CHAIN; do
		if [ $i = 0 ]; then prev=$t; i=1; continue; fi
		q=m${n}_$i
		cell="a$n.$i-$prev-to-$t"
		say "(a) N=$n: step $i, $prev -> $t"
		kind $t
		# shellcheck disable=SC2086
		start $q $BIN "$n" $mem -append "$APPEND" -incoming defer -S
		caps $q x-ignore-shared=true
		if ! load $q "$from"; then
			check "$cell.load" FAIL "$(cat $Q/$q.mig-status $Q/$q.err | tr '\n' ' ' | cut -c1-600); trace: $(grep vgicd $Q/$q.trace | tail -n 3)"
			# Nothing of this step can pass now, and its save and the
			# guest's run would only wait out their timeouts (a QEMU
			# whose load failed may stay up, paused): both are reported
			# not run, and the next step loads the same stream.
			check "a$n.$i-$t.save" FAIL "not run: step $i's load failed"
			check "$cell.guest-runs" FAIL "not run: step $i's load failed"
			stop_qemu $q
			cp /tmp/ram-$n.bak /tmp/ram-$n
			keep $q a$n-$i-$t
			stamp "a$n-step$i"
			i=$((i + 1))
			continue
		fi
		if p=$(path_load $q $prev $t) && [ -n "$p" ]; then
			check "$cell.load" PASS "$p"
		else
			check "$cell.load" FAIL "loaded, not by the path a $t takes; trace: $(grep vgicd $Q/$q.trace | tail -n 3)"
		fi
		if [ $t = R ] && [ "$n" = "$B" ]; then
			# A live attempt of R's stream into the stock QEMU: refused, and
			# the source stays alive (then saves as planned).
			start t$n $SQ "$n" $mem -append "$APPEND" -incoming defer -S
			caps t$n x-ignore-shared=true return-path=true
			qmpq t$n "{\"execute\":\"migrate-incoming\",\"arguments\":{\"uri\":\"unix:$Q/t$n.sock\"}}"
			caps $q return-path=true
			qmpq $q "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"unix:$Q/t$n.sock\"}}" ||
				check "b.record-live.migrate-command" FAIL "$(cat $Q/$q.qmp.last)"
			qmp $q --wait-migrate 600 > $Q/$q.mig-status 2>&1
			src_status=$(grep -o '"status": "[a-z-]*"' $Q/$q.mig-status | head -n 1)
			wait_exit t$n 120 || true
			err=$(grep -v -e '^$' -e 'recommended cpus' $Q/t$n.err | tr '\n' ' ')
			bad=$(grep vmstate_subsection_load_bad $Q/t$n.trace | grep -m1 'arm_gicv3/vgicd' | sed 's/.*load_bad //')
			if [ "$RC" != 0 ] && [ "$RC" != timeout ] && [ -n "$bad" ]; then
				check "b.record-live-into-stock-refused" PASS "stock QEMU exit $RC; its trace: $bad; its stderr: $err"
			else
				check "b.record-live-into-stock-refused" FAIL "stock QEMU exit $RC; trace: ${bad:-none}; stderr: $err"
			fi
			stop_qemu t$n
			if alive $q && qmp $q '{"execute":"query-status"}' > $Q/$q.status 2>&1 &&
				grep -q '"status": "failed"' $Q/$q.mig-status; then
				check "b.record-live-source-alive" PASS "source: migration $src_status, VM $(grep -o '"status": "[a-z-]*"' $Q/$q.status)"
			else
				check "b.record-live-source-alive" FAIL "source alive=$(alive $q && echo yes || echo no), migration $src_status: $(cat $Q/$q.err)"
			fi
			caps $q return-path=false
			keep t$n b-record-live-stock
		fi
		saved=
		save $q $Q/a$n-$i.mig && saved=1
		if [ -n "$saved" ] && p=$(path_save $q $t) && [ -n "$p" ]; then
			check "a$n.$i-$t.save" PASS "$p"
		else
			check "a$n.$i-$t.save" FAIL "$(cat $Q/$q.mig-status $Q/$q.err | tr '\n' ' ' | cut -c1-600)"
		fi
		cp /tmp/ram-$n /tmp/ram-$n.bak
		# The guest goes on, from the state this step restored.
		qmpq $q '{"execute":"cont"}'
		if wait_ticks $q $((stopped_at + 3)) 600; then
			check "$cell.guest-runs" PASS "stopped at tick $stopped_at, tick $(ticks $q) after cont"
		else
			check "$cell.guest-runs" FAIL "stopped at tick $stopped_at, $(ticks $q) after cont; console: $(tail -c 300 $Q/$q.serial)"
		fi
		stop_qemu $q
		cp /tmp/ram-$n.bak /tmp/ram-$n
		keep $q a$n-$i-$t
		ship "a$n-$i.mig" $Q/a$n-$i.mig
		if [ $t = R ] && [ -z "$saved" ]; then
			check "a$n.$i-R-refused" FAIL "not run: R saved no record"
		elif [ $t = R ]; then
			# R's record into the QEMUs that cannot load it: refused.
			kind S
			refused x$n "a$n.$i-R-to-S.refused" $SQ $Q/a$n-$i.mig 'arm_gicv3/vgicd'
			kind D
			refused x$n "a$n.$i-R-to-D.refused" $PQ $Q/a$n-$i.mig 'saved by vgicd'
		fi
		stamp "a$n-step$i"
		# (a stream not saved leaves the next step the one before it)
		[ -z "$saved" ] || prev=$t from=$Q/a$n-$i.mig
		i=$((i + 1))
	done
	[ "$n" = "${A%%,*}" ] && put_refused "$n" $Q/a$n-0.mig
	kind V
	rm -f /tmp/ram-$n /tmp/ram-$n.bak
	if grep -q "into QEMU's own fields" /var/log/vgicd.log && grep -q "from QEMU's own fields" /var/log/vgicd.log; then
		check "a$n.vgicd-log-says-stream" PASS "$(grep -m1 "into QEMU's own fields" /var/log/vgicd.log | cut -c1-200)"
	else
		check "a$n.vgicd-log-says-stream" FAIL "$(tail -n 5 /var/log/vgicd.log)"
	fi
	echo "E2E: vgicd log:"
	tail -n 8 /var/log/vgicd.log | sed 's/^/E2E: vgicd | /'
	stamp "a$n-done"
done
# ---------------------------------------------------------------------------
# (b3) an address set explicitly that nobody listens on: QEMU starts with a
# warning and saves by its own path; the stock QEMU loads that stream.
# ---------------------------------------------------------------------------
# stock_loads CHECK FILE - a fresh stock QEMU (N=$B, paused) loads FILE.
stock_loads() {
	start sl $SQ "$B" -m 128M -S -incoming defer
	if load sl "$2"; then
		check "$1" PASS "completed"
	else
		check "$1" FAIL "$(cat $Q/sl.mig-status $Q/sl.err)"
	fi
	stop_qemu sl
}

if [ "$B" != 0 ]; then
	say "(b) N=$B: the patched QEMU, an explicit vgicd address that is unreachable"
	start u $PQ "$B" -m 128M -S -global "kvm-arm-gicv3.vgicd=unix:path=/run/vgicd/dead.sock"
	qmpq u '{"execute":"query-status"}'
	if alive u && grep -q 'vgicd' $Q/u.err; then
		check "b.unreachable-starts" PASS "warning: $(grep -v -e '^$' -e 'recommended cpus' $Q/u.err | tr '\n' ' ')"
	else
		check "b.unreachable-starts" FAIL "alive=$(alive u && echo yes || echo no); stderr: $(cat $Q/u.err)"
	fi
	if save u $Q/b-unreach.mig && ! has u kvm_arm_gicv3_vgicd_save; then
		check "b.unreachable-saves" PASS "QEMU's own path"
	else
		check "b.unreachable-saves" FAIL "$(cat $Q/u.mig-status $Q/u.err)"
	fi
	stop_qemu u
	stock_loads b.unreachable-stream-loads-in-stock $Q/b-unreach.mig
	ship b-unreach.mig $Q/b-unreach.mig
	keep u b-unreach

	# (b4) no vgicd on the host at all: the patched QEMU, no argument,
	# starts without a word about vgicd (a trace event only), saves by its
	# own path, and the stock QEMU loads the stream.
	say "(b) N=$B: the patched QEMU on a host without vgicd"
	stop_vgicd
	start w $PQ "$B" -m 128M -S
	qmpq w '{"execute":"query-status"}'
	if alive w && ! grep -qi vgicd $Q/w.err && has w kvm_arm_gicv3_vgicd_absent; then
		check "b.no-vgicd-starts-quietly" PASS "$(grep -m1 kvm_arm_gicv3_vgicd_absent $Q/w.trace | sed 's/.*vgicd_absent //'); nothing on stderr about vgicd"
	else
		check "b.no-vgicd-starts-quietly" FAIL "alive=$(alive w && echo yes || echo no); trace: $(grep vgicd $Q/w.trace | head -n 3); stderr: $(cat $Q/w.err)"
	fi
	if save w $Q/b-novgicd.mig && ! has w kvm_arm_gicv3_vgicd_save && has w kvm_arm_gicv3_vgicd_unattached &&
		! grep -qi vgicd $Q/w.err; then
		check "b.no-vgicd-saves-own-path" PASS "QEMU's own path, quietly"
	else
		check "b.no-vgicd-saves-own-path" FAIL "$(cat $Q/w.mig-status $Q/w.err)"
	fi
	stop_qemu w
	stock_loads b.no-vgicd-stream-loads-in-stock $Q/b-novgicd.mig
	keep w b-novgicd
	start_vgicd || check "b.vgicd-restarts" FAIL "$(tail -n 5 /var/log/vgicd.log)"

	# (b5) Debian's stock QEMU with exactly the command line the patched one
	# had (what the hook and vgicctl now leave a domain with), on this host
	# with vgicd: the L2 guest boots, migrates live to a second stock QEMU,
	# and runs on there.
	say "(b) N=$B: the stock QEMU, the same command line, on a host with vgicd"
	mem="$(l2_args stock) $KERNEL"
	# shellcheck disable=SC2086
	start y $SQ "$B" $mem -append "$APPEND"
	if wait_ticks y 3 900; then
		check "b.stock-same-cmdline-starts" PASS "L2 ticking on the stock QEMU"
		# shellcheck disable=SC2086
		start z $SQ "$B" $mem -append "$APPEND" -incoming defer
		caps y x-ignore-shared=true
		caps z x-ignore-shared=true
		qmpq z "{\"execute\":\"migrate-incoming\",\"arguments\":{\"uri\":\"unix:$Q/z.sock\"}}"
		sleep 1
		qmpq y "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"unix:$Q/z.sock\"}}"
		qmp y --wait-migrate 600 > $Q/y.mig-status 2>&1
		at=$(ticks y)
		qmpq z '{"execute":"cont"}'
		if grep -q '"status": "completed"' $Q/y.mig-status && wait_ticks z $((at + 3)) 600; then
			check "b.stock-same-cmdline-migrates" PASS "migrated at tick $at, tick $(ticks z) on the destination"
		else
			check "b.stock-same-cmdline-migrates" FAIL "$(cat $Q/y.mig-status $Q/z.err) ticks: $at -> $(ticks z)"
		fi
		stop_qemu z
	else
		check "b.stock-same-cmdline-starts" FAIL "no L2-TICK 3 within 900 s: $(cat $Q/y.err)"
	fi
	stop_qemu y
	rm -f /tmp/ram-stock

	# (b6) libvirt's hook (the aarch64 build) asks each QEMU about vgicd's
	# property: a domain that still carries the argument of earlier
	# versions loses it on its way into the stock QEMU, keeps it into the
	# patched one (the hook writes nothing), and a domain without it is
	# never written.
	say "(b) the hook against the stock and the patched QEMU"
	# The hook asks only QEMUs on its allow-list (/usr/bin/qemu-system-*,
	# hence the two names), as QEMU's user from libvirt's qemu.conf: here,
	# as this L1's QEMUs run, root (numeric: the initramfs has no passwd).
	printf 'user = "+0"\ngroup = "+0"\n' > $Q/qemu.conf
	export VGICD_EMULATOR_CACHE=$Q/emulators VGICD_VMS_DIR=$Q/vms VGICD_QEMU_CONF=$Q/qemu.conf
	for emu in $SQ $PQ; do
		for arg in with without; do
			x=$Q/dom-$arg.xml
			{
				echo "<domain type='kvm' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>"
				echo "  <name>e2e</name><uuid>5a1c0de5-0000-4000-8000-0000000000e2</uuid>"
				echo "  <memory unit='KiB'>131072</memory><vcpu>1</vcpu>"
				echo "  <os><type arch='aarch64' machine='virt'>hvm</type></os>"
				echo "  <devices><emulator>$emu</emulator></devices>"
				if [ $arg = with ]; then
					echo "  <qemu:commandline><qemu:arg value='-global'/>"
					echo "    <qemu:arg value='kvm-arm-gicv3.vgicd=unix:path=$SOCK'/></qemu:commandline>"
				fi
				echo "</domain>"
			} > "$x"
			out=$Q/hook-$arg.out
			/usr/sbin/vgicd-qemu-hook e2e migrate begin - < "$x" > "$out" 2> "$Q/hook.err"
			hrc=$?
			name="b.hook.$(basename $emu).$arg-old-arg"
			if [ $arg = without ]; then
				if [ $hrc = 0 ] && [ ! -s "$out" ]; then check "$name" PASS "exit 0, nothing written"
				else check "$name" FAIL "exit $hrc, output $(wc -c < "$out") bytes: $(cat $Q/hook.err)"; fi
			elif [ $emu = $SQ ]; then
				if [ $hrc = 0 ] && [ -s "$out" ] && ! grep -q vgicd "$out" && grep -q "<name>e2e</name>" "$out"; then
					check "$name" PASS "argument removed: $(cat $Q/hook.err)"
				else check "$name" FAIL "exit $hrc: $(cat "$out" $Q/hook.err)"; fi
			else
				if [ $hrc = 0 ] && [ ! -s "$out" ]; then check "$name" PASS "exit 0, nothing written (the patched QEMU takes it)"
				else check "$name" FAIL "exit $hrc, output $(wc -c < "$out") bytes: $(cat $Q/hook.err)"; fi
			fi
		done
	done
	c=$Q/emulators/emulators.conf
	if grep -q "^\\[$SQ\\]" $c && grep -q "^\\[$PQ\\]" $c &&
		[ "$(grep -c '^Vgicd=true' $c)" = 1 ] && [ "$(grep -c '^Vgicd=false' $c)" = 1 ]; then
		check "b.hook.answers-cached" PASS "one answer per QEMU: $(grep '^Vgicd=' $c | tr '\n' ' ')"
	else
		check "b.hook.answers-cached" FAIL "$(cat $c 2>&1)"
	fi
	unset VGICD_EMULATOR_CACHE VGICD_VMS_DIR VGICD_QEMU_CONF
fi

# ---------------------------------------------------------------------------
# (c) GIC section save and load times, paused VMs that never ran: stock
# QEMU, and the patched QEMU through vgicd, with QEMU's own fields in the
# stream (the default) and with vgicd's record (Record=true); when the host
# put trixie-backports' stock 11.1 in (for (e)), that one too (stock11), as
# the newer QEMU's baseline.  The host reads the times from the trace
# logs.  With e2e_c_vmdesc=off (a diagnostic) every side runs with
# suppress-vmdesc=on: QEMU then builds no JSON description of the stream,
# which is part of every device section's save.
# ---------------------------------------------------------------------------
[ "$C_VMDESC" = off ] && MOPT=,suppress-vmdesc=on
C_SIDES="stock patched record"
[ -x $S11Q ] && C_SIDES="$C_SIDES stock11"
for n in $(echo "$C" | tr , ' '); do
	for side in $C_SIDES; do
		case $side in stock) bin=$SQ ;; stock11) bin=$S11Q ;; *) bin=$PQ ;; esac
		if [ $side = record ]; then set_conf auto true; else set_conf auto false; fi
		stamp "c$n-$side-started"
		# One save and one load per run, each in a fresh QEMU (QEMU 10.0
		# migrates a VM once); the host reports the median of the runs.
		for r in $(seq 1 "$REPS"); do
			say "(c) N=$n: $side: save ($r of $REPS)"
			# shellcheck disable=SC2086
			start c$n$side-save $bin "$n" -m 128M -S
			if save c$n$side-save $Q/c$n-$side.mig; then
				check "c$n.$side.save.$r" PASS
				saved=1
			else
				check "c$n.$side.save.$r" FAIL "$(cat $Q/c$n$side-save.mig-status $Q/c$n$side-save.err)"
				saved=
			fi
			stop_qemu c$n$side-save
			# (no stream, no load: a stock QEMU fed a missing file waits
			# in "setup" for good)
			if [ -z "$saved" ]; then
				check "c$n.$side.load.$r" FAIL "not run: the save failed"
				rm -f $Q/c$n$side-load.trace
			else
				say "(c) N=$n: $side: load ($r of $REPS)"
				# shellcheck disable=SC2086
				start c$n$side-load $bin "$n" -m 128M -S -incoming defer
				if load c$n$side-load $Q/c$n-$side.mig; then
					check "c$n.$side.load.$r" PASS
				else
					check "c$n.$side.load.$r" FAIL "$(cat $Q/c$n$side-load.mig-status $Q/c$n$side-load.err)"
				fi
				stop_qemu c$n$side-load
			fi
			ship "c$n-$side-save.$r.trace" $Q/c$n$side-save.trace
			ship "c$n-$side-load.$r.trace" $Q/c$n$side-load.trace
			rm -f $Q/c$n-$side.mig
		done
		stamp "c$n-$side-done"
	done
done

# ---------------------------------------------------------------------------
# (d) The vGIC's share of a live migration's downtime: a running L2 guest
# migrated live (its RAM travels; nothing is paused beforehand) from one
# QEMU to a fresh one, D_HOPS times in a chain, on the stock QEMU and on
# the patched QEMU through vgicd (QEMU's own fields, the default).  The
# guest boots with maxcpus=1, so that it boots in TCG's time: its other
# vCPUs stay powered off, but KVM's vGIC has every vCPU's redistributor,
# and those are what the GIC section saves and restores.  The source's
# query-migrate (downtime, setup-time, downtime-bytes) and both sides'
# traces (the GIC section's save and load; the source's stop and the
# destination's start, vm_state_notify) go to the host.
# ---------------------------------------------------------------------------
MOPT=
for n in $(echo "$D" | tr , ' '); do
	[ "$n" = 0 ] && continue
	mem="-m 256M $KERNEL"
	for side in stock patched; do
		if [ $side = stock ]; then bin=$SQ; else bin=$PQ; fi
		set_conf auto false
		[ -n "$VGICD_PID" ] || start_vgicd || check "d.vgicd-up" FAIL "$(tail -n 5 /var/log/vgicd.log)"
		say "(d) N=$n: $side: boot the L2 guest (maxcpus=1)"
		stamp "d$n-$side-started"
		# shellcheck disable=SC2086
		start d$n${side}_0 $bin "$n" $mem -append "$APPEND maxcpus=1"
		if ! wait_ticks d$n${side}_0 3 900; then
			check "d$n.$side.boot" FAIL "no L2-TICK 3 within 900 s: $(tail -c 300 $Q/d$n${side}_0.err)"
			stop_qemu d$n${side}_0
			continue
		fi
		check "d$n.$side.boot" PASS "L2 ticking, $n vCPUs, one online"
		stamp "d$n-$side-booted"
		for h in $(seq 1 "$D_HOPS"); do
			src=d$n${side}_$((h - 1)) dst=d$n${side}_$h
			# shellcheck disable=SC2086
			start $dst $bin "$n" $mem -append "$APPEND maxcpus=1" -incoming "unix:$Q/$dst.sock"
			i=0
			while [ ! -S $Q/$dst.sock ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
			qmpq $src "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"unix:$Q/$dst.sock\"}}"
			moved=
			if qmp $src --wait-migrate 900 > $Q/$src.mig-status 2>&1; then
				moved=1
				at=$(ticks $src)
				if wait_ticks $dst $((at + 2)) 600; then
					check "d$n.$side.$h.live" PASS "$(grep -o '"downtime": [0-9]*' $Q/$src.mig-status); tick $at on the source, $(ticks $dst) on the destination"
				else
					check "d$n.$side.$h.live" FAIL "the guest stopped at tick $at: $(tail -c 300 $Q/$dst.serial) $(cat $Q/$dst.err)"
				fi
			else
				check "d$n.$side.$h.live" FAIL "$(cat $Q/$src.mig-status $Q/$src.err $Q/$dst.err | tr '\n' ' ' | cut -c1-600)"
			fi
			if [ $side = patched ]; then
				if has $src kvm_arm_gicv3_vgicd_save_fields && has $dst kvm_arm_gicv3_vgicd_load_fields; then
					check "d$n.$side.$h.through-vgicd" PASS "$(grep -m1 kvm_arm_gicv3_vgicd_save_fields $Q/$src.trace | sed 's/.*save_fields //')"
				else
					check "d$n.$side.$h.through-vgicd" FAIL "$(grep vgicd $Q/$src.trace $Q/$dst.trace | tail -n 4)"
				fi
			fi
			stop_qemu $src
			ship "d$n-$side.$h.src.trace" $Q/$src.trace
			ship "d$n-$side.$h.dst.trace" $Q/$dst.trace
			ship "d$n-$side.$h.query" $Q/$src.mig-status
			# The guest did not reach the next QEMU: no hop after this
			# one can run (each would wait out its timeouts).
			if [ -z "$moved" ]; then
				stop_qemu $dst
				[ "$h" = "$D_HOPS" ] ||
					check "d$n.$side.hops-after-$h" FAIL "not run: hop $h failed"
				break
			fi
		done
		stop_qemu d$n${side}_$D_HOPS
		stamp "d$n-$side-done"
	done
done

# ---------------------------------------------------------------------------
# (e) The rolling upgrade across QEMU versions, as a fleet moving to
# trixie-backports runs it: a running L2 guest migrated live between every
# ordered pair of Debian's stock QEMU 10.0 (S10), the patched 10.0 through
# vgicd (P10), trixie-backports' stock QEMU 11.1 (S11) and, when the patched
# QEMU is built on a newer base (e2e_pbase), that one through vgicd too
# (P10.2: one vgicd serving both patched versions, as on a host part way
# through the upgrade), on the 10.0 machine type (virt-10.0).  With
# e2e_e_all=0 only the pairs of the run's patched QEMU with each QEMU of
# another version.  Guest RAM is a shared file (x-ignore-shared),
# so the devices' state is what travels, through a pipe: the source's
# stream is also written to a file (tee), and the destination, once loaded
# and before it runs, saves what it holds to another; the host compares
# their GIC and ITS sections.  Then the destination runs the guest on.  A
# patched QEMU 11.1 is not among them: see qemu-patch/README.md.
# ---------------------------------------------------------------------------
PK=P10
[ "$PBASE" = 10.0 ] || PK=P$PBASE
ebin() { case $1 in S10) echo $SQ ;; P10) echo $P10Q ;; S11) echo $S11Q ;; "$PK") echo $PQ ;; esac; }
# eversion KIND - the QEMU version a kind runs
eversion() { case $1 in S10 | P10) echo 10.0 ;; S11) echo 11.1 ;; P*) echo "${1#P}" ;; esac; }
E_KINDS="S10 P10"
if [ -x $S11Q ]; then
	E_KINDS="$E_KINDS S11"
	echo "E2E: stock11: $($S11Q --version | head -n 1)"
fi
if [ $PK != P10 ]; then
	E_KINDS="$E_KINDS $PK"
	[ -x $P10Q ] && echo "E2E: patched10: $($P10Q --version | head -n 1)"
fi
MACHINE=virt-10.0
for n in $(echo "$E" | tr , ' '); do
	[ "$n" = 0 ] && continue
	[ -x $S11Q ] || check "e$n.stock-11.1-present" FAIL "no $S11Q in this L1"
	[ -x $P10Q ] || check "e$n.patched-10.0-present" FAIL "no $P10Q in this L1"
	mem="$(l2_args e) $KERNEL"
	set_conf auto false
	[ -n "$VGICD_PID" ] || start_vgicd || check "e.vgicd-up" FAIL "$(tail -n 5 /var/log/vgicd.log)"
	for s in $E_KINDS; do
		for d in $E_KINDS; do
			[ $s = $d ] && continue
			if [ "$E_ALL" = 0 ]; then
				[ $s = $PK ] || [ $d = $PK ] || continue
				[ "$(eversion $s)" != "$(eversion $d)" ] || continue
			fi
			cell="e$n.$s-to-$d" src=e$s$d-src dst=e$s$d-dst
			say "(e) N=$n: $s -> $d, live, $MACHINE"
			# shellcheck disable=SC2086
			start $src "$(ebin $s)" "$n" $mem -append "$APPEND"
			if ! wait_ticks $src 3 900; then
				check "$cell.boot" FAIL "no L2-TICK 3 within 900 s: $(tail -c 300 $Q/$src.err)"
				stop_qemu $src
				continue
			fi
			rm -f $Q/e.fifo
			mkfifo $Q/e.fifo
			# shellcheck disable=SC2086
			start $dst "$(ebin $d)" "$n" $mem -append "$APPEND" -incoming defer -S
			caps $src x-ignore-shared=true
			caps $dst x-ignore-shared=true
			# (a destination that does not read the pipe would leave the
			# source's tee waiting to open it, for the source's whole wait)
			if ! qmpq $dst "{\"execute\":\"migrate-incoming\",\"arguments\":{\"uri\":\"exec:cat $Q/e.fifo\"}}"; then
				check "$cell.live" FAIL "the destination did not take migrate-incoming: $(cat $Q/$dst.qmp.last $Q/$dst.err | tr '\n' ' ' | cut -c1-600)"
				stop_qemu $src
				stop_qemu $dst
				continue
			fi
			qmpq $src "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"exec:tee $Q/$cell.src.mig > $Q/e.fifo\"}}"
			if ! qmp $src --wait-migrate 600 > $Q/$src.mig-status 2>&1 ||
				! qmp $dst --wait-migrate 60 > $Q/$dst.in-status 2>&1; then
				check "$cell.live" FAIL "$(cat $Q/$src.mig-status $Q/$src.err $Q/$dst.err | tr '\n' ' ' | cut -c1-600)"
				stop_qemu $src
				stop_qemu $dst
				continue
			fi
			at=$(ticks $src)
			check "$cell.live" PASS "completed at tick $at, $(grep -o '"downtime": [0-9]*' $Q/$src.mig-status)"
			ship "$cell.src.mig" $Q/$cell.src.mig
			if save $dst $Q/$cell.dst.mig; then
				ship "$cell.dst.mig" $Q/$cell.dst.mig
			else
				check "$cell.destination-saved" FAIL "$(cat $Q/$dst.qmp.last $Q/$dst.mig-status $Q/$dst.err | tr '\n' ' ' | cut -c1-600)"
			fi
			qmpq $dst '{"execute":"cont"}'
			if wait_ticks $dst $((at + 3)) 600; then
				check "$cell.guest-runs" PASS "tick $at on $s, $(ticks $dst) on $d"
			else
				check "$cell.guest-runs" FAIL "stopped at tick $at: $(tail -c 300 $Q/$dst.serial) $(cat $Q/$dst.err)"
			fi
			case $s in P*) has $src kvm_arm_gicv3_vgicd_save_fields ||
				check "$cell.saved-through-vgicd" FAIL "$(grep vgicd $Q/$src.trace | tail -n 3)" ;;
			esac
			case $d in P*) has $dst kvm_arm_gicv3_vgicd_load_fields ||
				check "$cell.loaded-through-vgicd" FAIL "$(grep vgicd $Q/$dst.trace | tail -n 3)" ;;
			esac
			stop_qemu $src
			stop_qemu $dst
			keep $src $cell.src
			keep $dst $cell.dst
		done
	done
	rm -f /tmp/ram-e
	stamp "e$n-done"
done
MACHINE=$MACHINE_AD

echo "E2E: vgicd log (last lines):"
tail -n 20 /var/log/vgicd.log | sed 's/^/E2E: vgicd | /'
stamp done
finish
