# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# tests/nested/lib/boot.sh - boot an arm64 kernel + initrd at EL2 under
# qemu-system-aarch64 (TCG), with KVM usable inside, and read the serial
# log.  Sourced.
#
#   nested_boot KERNEL INITRD LOG TIMEOUT_S "kernel command line extras"
#   nested_marker LOG "VGICD-NESTED-RESULT:"     # the marker line, if any
#
# The machine is the one docs/kernel-interface.md describes: virt with
# virtualization=on and a GICv3, -cpu max with the cheap pointer
# authentication (3x faster boots than plain -cpu max), no network.
#
# And no PMU (pmu=off), so that L1's KVM offers its guests none: with one,
# L1's 6.12 oopsed in perf's context switch (perf_ctx_sched_task_cb, a
# NULL pointer, after a WARN) as a KVM vCPU thread of an L2 blocked in WFI,
# and L1 then spun or rebooted.  That was the QEMU end-to-end tier's
# intermittent failure.  Nothing the tiers measure uses the vPMU.
NESTED_CPU=${NESTED_CPU:-max,pauth-impdef=on,pmu=off}

# NESTED_QEMU: another QEMU, for example a newer one with FEAT_NV2 (QEMU 9.0
# and later), whose L1 then offers nested virtualization with
# NESTED_APPEND=kvm-arm.mode=nested (Linux 6.16 and later): the 7.3 series'
# EL2 case needs it (tests/nested/README.md).
NESTED_QEMU=${NESTED_QEMU:-qemu-system-aarch64}
NESTED_APPEND=${NESTED_APPEND:-}
NESTED_SMP=${NESTED_SMP:-2}
NESTED_MEM=${NESTED_MEM:-2G}

# nested_boot KERNEL INITRD LOG TIMEOUT APPEND - boot, holding the heavy-work
# lock (the wait for it is not part of TIMEOUT), serial console to LOG.
# Return: QEMU's status; 124 when TIMEOUT seconds passed.
nested_boot() {
	local kernel=$1 initrd=$2 log=$3 timeout=$4 append=$5
	heavy timeout --kill-after=10 "$timeout" \
		"$NESTED_QEMU" -M virt,virtualization=on,gic-version=3 \
		-cpu "$NESTED_CPU" -smp "$NESTED_SMP" -m "$NESTED_MEM" \
		-accel tcg,thread=multi -nographic -no-reboot -nic none \
		-kernel "$kernel" -initrd "$initrd" \
		-append "console=ttyAMA0 panic=-1${NESTED_APPEND:+ $NESTED_APPEND} $append" \
		</dev/null >"$log" 2>&1
}

# nested_marker LOG PREFIX - the last line of LOG starting with PREFIX
# (carriage returns dropped).
nested_marker() {
	tr -d '\r' < "$1" | grep -a "^$2" | tail -n 1
}
