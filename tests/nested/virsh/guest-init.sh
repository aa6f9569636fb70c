#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# /init of the virsh tier's L2 guest: a busybox system on the patched
# kernel that brings up its GICv3 and ITS like any arm64 Linux, keeps
# interrupts flowing and says so on its console (a file libvirt writes):
# once a second a line
#   L2-TICK <n> virtio=<interrupts of the virtio devices, summed over CPUs>
# while a reader keeps the virtio-rng device busy (each read is a request on
# its queue, completed by an MSI-X interrupt, an LPI through the ITS) and
# the timer ticks on every vCPU.  A migrated guest can be seen to keep
# running (n grows) with working interrupts (virtio grows).
export PATH=/bin
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
echo "L2-READY cpus=$(grep -c ^processor /proc/cpuinfo) rng=$(cat /sys/class/misc/hw_random/rng_current 2>/dev/null)"
# virtio_irqs - the sum of the per-CPU counts of /proc/interrupts' virtio
# lines (virtioN-config, virtioN-requests and the like).
virtio_irqs() {
	awk '/virtio/ { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i } END { print s + 0 }' /proc/interrupts
}
( while :; do dd if=/dev/hwrng of=/dev/null bs=16 count=4 2>/dev/null; sleep 0.2; done ) &
i=0
while :; do
	i=$((i + 1))
	echo "L2-TICK $i virtio=$(virtio_irqs)"
	sleep 1
done
