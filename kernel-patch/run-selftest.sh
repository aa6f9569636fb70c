#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# run-selftest.sh - boot an arm64 Image under TCG with a tiny initramfs that
# runs the given static selftest binaries, and report their results.
#
#   run-selftest.sh IMAGE SELFTEST...
#   eval "$(kernel-patch/build-kernel.sh)" && kernel-patch/run-selftest.sh "$IMAGE" "$SELFTEST"
#
# The machine is the nested tier's: -M virt,virtualization=on,gic-version=3
# -cpu max, so the kernel runs at EL2 and provides /dev/kvm with a vGICv3.
# /init (initramfs/init.c) prints "SELFTEST <name> rc=<n> PASS|SKIP|FAIL" per
# binary and "SELFTESTS DONE failed=<n> skipped=<n>", then powers off.  Exit
# status: 0 if every binary passed, 4 (kselftest's skip) if none failed but
# some skipped (e.g. vgic_batch_regs on a kernel without the series), 1
# otherwise.  The console log is kept in
# ${VGICD_CACHE:-/var/cache/vgicd}/kernel/selftest-run/console.log.
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 IMAGE SELFTEST..." >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../scripts/lib/common.sh
. "$here/../scripts/lib/common.sh"
image=$1; shift
timeout=${SELFTEST_TIMEOUT:-600}
run=$VGICD_CACHE/kernel/selftest-run
log() { printf '[run-selftest] %s\n' "$*" >&2; }

need_packages "${PKGS_BOOT[@]}" gcc-aarch64-linux-gnu >&2

rm -rf "$run"
mkdir -p "$run/root/selftests"
aarch64-linux-gnu-gcc -static -O2 -Wall -o "$run/root/init" "$here/initramfs/init.c"
for t in "$@"; do
	cp "$t" "$run/root/selftests/"
done
(cd "$run/root" && find . | cpio -o -H newc --quiet | gzip -1) >"$run/initramfs.cpio.gz"

log "booting $image ($*), timeout ${timeout}s"
start=$(date +%s)
heavy timeout "$timeout" qemu-system-aarch64 \
	-M virt,virtualization=on,gic-version=3 -cpu max,pauth-impdef=on \
	-accel tcg,thread=multi -smp 2 -m 1G -nographic -no-reboot -nic none \
	-kernel "$image" -initrd "$run/initramfs.cpio.gz" \
	-append "console=ttyAMA0 panic=-1" </dev/null >"$run/console.log" 2>&1 || true
log "ran in $(( $(date +%s) - start ))s; console log: $run/console.log"

tr -d '\r' <"$run/console.log" | sed -n '/^SELFTEST \/dev\/kvm/,$p' >&2
grep -q '^SELFTESTS DONE' "$run/console.log" || { tail -n 30 "$run/console.log" >&2; log "no result: the machine did not finish"; }
grep -q 'SELFTESTS DONE failed=0 skipped=0' "$run/console.log" && exit 0
grep -q 'SELFTESTS DONE failed=0 ' "$run/console.log" && exit 4
exit 1
