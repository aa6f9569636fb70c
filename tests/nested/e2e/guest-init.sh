#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# /init of the L2 guest of run-qemu-e2e.sh: a busybox system that brings up
# its GICv3 (and ITS) like any arm64 Linux, then prints a counter on its
# console once a second, for ever, so that a migrated guest can be seen to
# keep running.
export PATH=/bin
/bin/busybox --install -s /bin
mount -t proc proc /proc
echo "L2-READY cpus=$(grep -c ^processor /proc/cpuinfo)"
i=0
while :; do
	i=$((i + 1))
	echo "L2-TICK $i"
	sleep 1
done
