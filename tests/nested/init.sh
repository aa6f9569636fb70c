#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# /init of the nested tier's initramfs (run-nested.sh): mount the basics
# (debugfs too, for KVM's vgic-state), start two vgicd (mode auto and mode
# single, no system bus), run the test
# program and, when shipped, the kernel's selftest and upstream's vGIC
# selftests (/selftest/peers: one line each, compared across kernels by
# run-nested.sh); print one result marker and power off.  Parameters come
# from the kernel command line:
#   vgicd_nested_role=stock|patched   vgicd_nested_expect=yes|no
#   vgicd_nested_sizes=4,64,256       vgicd_nested_args="..." (extra test args, _ for space)
#   vgicd_nested_peer_timeout=S       each upstream selftest's limit (default 600)
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
/bin/busybox --install -s /bin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
# debugfs: vgic-nested-test's order check reads KVM's per-VM vgic-state
# there (which vCPU's list holds each interrupt); without it the check
# fails, saying "skipped: no vgic-state".
mount -t debugfs debugfs /sys/kernel/debug ||
	echo "NESTED: WARNING: cannot mount debugfs: the order check will fail"

ROLE=unknown EXPECT=no SIZES=4,64,256 ARGS='' PEER_TIMEOUT=600
for p in $(cat /proc/cmdline); do
	case $p in
	vgicd_nested_role=*) ROLE=${p#*=} ;;
	vgicd_nested_expect=*) EXPECT=${p#*=} ;;
	vgicd_nested_sizes=*) SIZES=${p#*=} ;;
	vgicd_nested_args=*) ARGS=$(echo "${p#*=}" | tr _ ' ') ;;
	vgicd_nested_peer_timeout=*) PEER_TIMEOUT=${p#*=} ;;
	esac
done

t0=$(cut -d' ' -f1 /proc/uptime)
stamp() { echo "NESTED-TIME: $1 $(cut -d' ' -f1 /proc/uptime) s since boot"; }
finish() {
	echo "VGICD-NESTED-RESULT: $1 role=$ROLE${2:+ ($2)}"
	sync
	poweroff -f
	echo o > /proc/sysrq-trigger
	sleep 30
}

echo "NESTED: /init started at ${t0} s, kernel $(uname -r), role $ROLE, expect batch $EXPECT"
stamp init
dmesg | grep -E 'started at EL|VHE|kvm \[' | sed 's/^/  dmesg | /'
[ -c /dev/kvm ] || finish FAIL "no /dev/kvm: KVM did not initialise"

mkdir -p /etc/vgicd /run/vgicd /var/log
# One process, vgic-nested-test, runs every VM here, and its checks read
# every operation's line: no share of the log lines (LogLinesPerProcess=).
for mode in auto single; do
	printf '[vgicd]\nMode=%s\nSocket=/run/vgicd/%s.sock\nAllowUsers=root\nProbe=true\nLogLinesPerProcess=65536\n' \
		$mode $mode > /etc/vgicd/$mode.conf
	vgicd --no-system-bus --config /etc/vgicd/$mode.conf > /var/log/vgicd-$mode.log 2>&1 &
done
i=0
while [ ! -S /run/vgicd/auto.sock ] || [ ! -S /run/vgicd/single.sock ]; do
	i=$((i + 1))
	[ $i -lt 300 ] || { cat /var/log/vgicd-*.log; finish FAIL "vgicd did not start"; }
	sleep 0.1
done
stamp vgicd-up
echo "NESTED: vgicd (auto) says:"
sed 's/^/  | /' /var/log/vgicd-auto.log

rc=0
echo "NESTED: running vgic-nested-test"
# shellcheck disable=SC2086
vgic-nested-test --expect-batch "$EXPECT" --vcpus "$SIZES" \
	--vgicd unix:path=/run/vgicd/auto.sock --vgicd-single unix:path=/run/vgicd/single.sock \
	--vgicd-log /var/log/vgicd-auto.log $ARGS || rc=$?
echo "NESTED: vgic-nested-test exit status $rc"
stamp test-done
why=
[ $rc -eq 0 ] || why="vgic-nested-test exit $rc"

if [ -x /selftest/run ]; then
	echo "NESTED: running the kernel selftest $(cat /selftest/name 2>/dev/null)"
	src=0
	(cd /selftest && ./run) || src=$?
	echo "NESTED: kernel selftest exit status $src"
	stamp selftest-done
	# 4 is kselftest's "skip".
	[ $src -eq 0 ] || [ $src -eq 4 ] || why="${why:+$why, }selftest exit $src"
fi

# Upstream's vGIC selftests: their verdicts are not this kernel's result
# but one side of a comparison (a stock kernel may fail one too): each
# prints "NESTED-PEER: NAME rc=N[,N] SECONDS" after its own output.  One
# that fails runs once more (rc=FIRST,SECOND): under TCG a timer test can
# miss its margin on a busy host, on either kernel.  Arguments, where
# run-nested.sh gives some, are in /selftest/peer-args/NAME.
peer_run() {
	rm -f /tmp/peer-rc
	# The status of the test, not of sed, through a file.
	# shellcheck disable=SC2086 # the arguments are words
	{ (cd /selftest/peers && timeout "$PEER_TIMEOUT" "./$1" $2); echo $? > /tmp/peer-rc; } 2>&1 |
		sed "s/^/  $1 | /"
}
if [ -d /selftest/peers ]; then
	for t in /selftest/peers/*; do
		name=${t##*/}
		pargs=$(cat "/selftest/peer-args/$name" 2>/dev/null || true)
		echo "NESTED: upstream selftest $name${pargs:+ $pargs} (limit ${PEER_TIMEOUT}s)"
		s0=$(cut -d' ' -f1 /proc/uptime)
		peer_run "$name" "$pargs"
		prc=$(cat /tmp/peer-rc)
		case $prc in
		0 | 4) ;;
		*) echo "NESTED: $name failed (status $prc): once more"
		   peer_run "$name" "$pargs"
		   prc="$prc,$(cat /tmp/peer-rc)" ;;
		esac
		s1=$(cut -d' ' -f1 /proc/uptime)
		echo "NESTED-PEER: $name rc=$prc $(awk "BEGIN { printf \"%.1f\", $s1 - $s0 }")"
	done
	stamp peers-done
fi

echo "NESTED: vgicd logs (last lines):"
tail -n 20 /var/log/vgicd-auto.log | sed 's/^/  auto | /'
tail -n 20 /var/log/vgicd-single.log | sed 's/^/  single | /'
if [ -z "$why" ]; then finish PASS; else finish FAIL "$why"; fi
