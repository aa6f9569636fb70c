#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# /init of the nested tier's initramfs (run-nested.sh): mount the basics,
# start two vgicd (mode auto and mode single, no system bus), run the test
# program and, when shipped, the kernel's selftest; print one result marker
# and power off.  Parameters come from the kernel command line:
#   vgicd_nested_role=stock|patched   vgicd_nested_expect=yes|no
#   vgicd_nested_sizes=4,64,256       vgicd_nested_args="..." (extra test args, _ for space)
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
/bin/busybox --install -s /bin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run

ROLE=unknown EXPECT=no SIZES=4,64,256 ARGS=
for p in $(cat /proc/cmdline); do
	case $p in
	vgicd_nested_role=*) ROLE=${p#*=} ;;
	vgicd_nested_expect=*) EXPECT=${p#*=} ;;
	vgicd_nested_sizes=*) SIZES=${p#*=} ;;
	vgicd_nested_args=*) ARGS=$(echo "${p#*=}" | tr _ ' ') ;;
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
for mode in auto single; do
	printf '[vgicd]\nMode=%s\nSocket=/run/vgicd/%s.sock\nAllowUsers=root\nProbe=true\n' \
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

echo "NESTED: vgicd logs (last lines):"
tail -n 20 /var/log/vgicd-auto.log | sed 's/^/  auto | /'
tail -n 20 /var/log/vgicd-single.log | sed 's/^/  single | /'
if [ -z "$why" ]; then finish PASS; else finish FAIL "$why"; fi
