#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# run-nested.sh - the nested tier: real arm64 kernels with KVM, booted at EL2
# under qemu-system-aarch64 (TCG), save and restore real vGIC state through
# libvgicd and the real vgicd, on a kernel with the batch group (built by
# kernel-patch/build-kernel.sh, Linux 6.12 of Debian 13) and on Debian 13's
# stock arm64 kernel (the unpatched baseline).
#
# From a fresh Debian 12 machine, as root:
#   bash tests/nested/run-nested.sh [--only stock|patched] [--sizes 4,64,256]
#                                   [--timeout SECONDS] [--enforce-target]
#                                   [--inject-mismatch]   (self-check: must FAIL)
#                                   [--source-never-ran]  (save a source VM that never ran)
#
# Environment:
#   VGICD_CACHE       downloads and unpacked packages (default /var/cache/vgicd;
#                     the nested tier uses $VGICD_CACHE/nested)
#   VGICD_BUILD       build folders (default _build); logs go to $VGICD_BUILD/nested
#   NESTED_PATCHED_IMAGE / NESTED_PATCHED_SELFTEST
#                     a prebuilt patched kernel (skips build-kernel.sh)
#   VGICD_NESTED_REQUIRE_PATCHED=1
#                     fail, rather than skip, when there is no patched kernel
#
# Steps: packages, downloads (stock kernel, busybox-static), the patched
# kernel, the aarch64 userland (cross build + initramfs), one boot per kernel.
# It prints the test's table for each kernel, where the time went, and exits
# non-zero if any boot fails, times out or reports a mismatch.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib/common.sh"
. "$HERE/lib/initramfs.sh"
. "$HERE/lib/kernel.sh"
. "$HERE/lib/boot.sh"
cd "$VGICD_ROOT"

ONLY=
SIZES=${VGICD_NESTED_SIZES:-4,64,256}
TIMEOUT=${VGICD_NESTED_TIMEOUT:-900}
TEST_ARGS=
while [ $# -gt 0 ]; do
	case $1 in
	--only) ONLY=$2; shift 2 ;;
	--sizes) SIZES=$2; shift 2 ;;
	--timeout) TIMEOUT=$2; shift 2 ;;
	--enforce-target | --inject-mismatch | --source-never-ran) TEST_ARGS="${TEST_ARGS:+${TEST_ARGS}_}$1"; shift ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "run-nested.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
case $ONLY in '' | stock | patched) ;; *) echo "--only stock|patched" >&2; exit 2 ;; esac

NESTED_OUT=$VGICD_BUILD/nested
mkdir -p "$NESTED_OUT"
RESULTS=()
FAILED=0

step_begin "packages"
need_packages "${PKGS_BUILD[@]}" "${PKGS_BOOT[@]}" "${PKGS_NESTED[@]}"
step_end

step_begin "downloads (stock arm64 kernel, busybox-static)"
nested_stock_kernel
echo "stock kernel: $STOCK_VERSION ($STOCK_IMAGE)"
nested_debian_config_check
# busybox from Debian 12, as the QEMU tier takes it (trixie's is merged-/usr).
deb_apt_init bookworm-arm64 arm64
deb_apt_update
bb_deb=$(deb_download "$NESTED_CACHE/debs" busybox-static)
deb_extract "$bb_deb" "$NESTED_CACHE/busybox"
step_end

if [ "$ONLY" != stock ]; then
	step_begin "patched kernel (kernel-patch/build-kernel.sh)"
	nested_patched_kernel
	if [ -n "$PATCHED_MISSING" ]; then
		echo "patched kernel: unavailable: $PATCHED_MISSING"
	else
		echo "patched kernel: $PATCHED_IMAGE${PATCHED_SELFTEST:+, selftest $PATCHED_SELFTEST}"
		patched_config=$(dirname "$PATCHED_IMAGE")/../../../.config
		if [ -f "$patched_config" ]; then
			(kernel_config_check "$patched_config") || echo "patched kernel: the boot may fail (above)"
		fi
	fi
	step_end
fi

step_begin "userland: aarch64 cross build"
B=$VGICD_BUILD/aarch64
if [ ! -f "$B/build.ninja" ]; then
	# The same options as scripts/test.sh, so both share one build folder.
	meson setup "$B" --werror --cross-file cross/aarch64-linux-gnu.ini >/dev/null
fi
heavy ninja -C "$B" daemon/vgicd tests/nested/vgic-nested-test >"$NESTED_OUT/ninja.log" 2>&1 ||
	{ tail -n 40 "$NESTED_OUT/ninja.log" >&2; nested_die "cross build failed"; }
step_end

step_begin "userland: initramfs"
INITRAMFS_LIBPATH="$B/libvgicd:$INITRAMFS_LIBPATH"
READELF=aarch64-linux-gnu-readelf
stage=$NESTED_OUT/rootfs
initramfs_init "$stage"
initramfs_busybox "$stage" "$NESTED_CACHE/busybox/bin/busybox"
initramfs_elf "$stage" "$B/daemon/vgicd" /usr/sbin/vgicd
# No vgicctl: without a system bus it has nothing to talk to, and it links
# libvirt (libvirt, ICU, gnutls...: 57 MB more to load under TCG).
initramfs_elf "$stage" "$B/tests/nested/vgic-nested-test" /usr/bin/vgic-nested-test
initramfs_file "$stage" "$HERE/init.sh" /init 0755
initramfs_pack "$stage" "$NESTED_OUT/base.cpio"
echo "base initramfs: $(du -h "$NESTED_OUT/base.cpio" | cut -f1), $(find "$stage" -type f | wc -l) files"
step_end

# boot ROLE IMAGE EXPECT [SELFTEST] - one kernel, one boot, one verdict.
boot() {
	local role=$1 image=$2 expect=$3 selftest=${4:-} initrd log marker t0 t1 rc=0
	initrd=$NESTED_OUT/$role.initrd
	log=$NESTED_OUT/$role.log
	cp "$NESTED_OUT/base.cpio" "$initrd"
	if [ -n "$selftest" ]; then
		local extra=$NESTED_OUT/rootfs-$role name
		name=$(basename "$selftest")
		rm -rf "$extra"
		mkdir -p "$extra$INITRAMFS_LIBDIR"
		initramfs_elf "$extra" "$selftest" "/selftest/$name"
		chmod 0755 "$extra/selftest/$name"
		printf '#!/bin/sh\nexec ./%s\n' "$name" > "$extra/selftest/run"
		chmod 0755 "$extra/selftest/run"
		echo "$name" > "$extra/selftest/name"
		initramfs_pack "$extra" "$NESTED_OUT/$role-extra.cpio"
		cat "$NESTED_OUT/$role-extra.cpio" >> "$initrd"
	fi

	step_begin "boot + tests: $role kernel"
	echo "booting $image (log: $log, timeout ${TIMEOUT}s)"
	t0=$(nested_clock)
	nested_boot "$image" "$initrd" "$log" "$TIMEOUT" \
		"vgicd_nested_role=$role vgicd_nested_expect=$expect vgicd_nested_sizes=$SIZES${TEST_ARGS:+ vgicd_nested_args=$TEST_ARGS}" ||
		rc=$?
	t1=$(nested_clock)
	step_end
	# What the guest printed from /init on.
	tr -d '\r' < "$log" | sed -n '/^NESTED: \/init started/,$p' | grep -av -e '^\[ *[0-9.]*\] ' -e '^NESTED-ROW: ' || true
	# The table's rows, for bench/report.py (bench/run-bench.sh).
	tr -d '\r' < "$log" | sed -n 's/^NESTED-ROW: //p' > "$NESTED_OUT/$role-rows.jsonl" || true
	marker=$(nested_marker "$log" "VGICD-NESTED-RESULT:")
	if [ $rc -eq 124 ]; then
		RESULTS+=("$role: FAIL (timed out after ${TIMEOUT}s; log $log)")
		FAILED=$((FAILED + 1))
	elif [[ $marker == "VGICD-NESTED-RESULT: PASS"* ]]; then
		RESULTS+=("$role: PASS")
	elif [ -n "$marker" ]; then
		local why=${marker#VGICD-NESTED-RESULT: FAIL role=$role}
		why=${why# (}
		why=${why%)}
		RESULTS+=("$role: FAIL (${why:+$why; }log $log)")
		FAILED=$((FAILED + 1))
	else
		RESULTS+=("$role: FAIL (no result marker, QEMU status $rc; log $log)")
		tail -n 30 "$log" | tr -d '\r' >&2
		FAILED=$((FAILED + 1))
	fi
	# Where the boot's time went, from the guest's own clock.
	local init_at test_at self_at
	init_at=$(tr -d '\r' < "$log" | sed -n 's/^NESTED-TIME: init \([0-9.]*\) .*/\1/p')
	test_at=$(tr -d '\r' < "$log" | sed -n 's/^NESTED-TIME: test-done \([0-9.]*\) .*/\1/p')
	self_at=$(tr -d '\r' < "$log" | sed -n 's/^NESTED-TIME: selftest-done \([0-9.]*\) .*/\1/p')
	STEP_TIMES+=("$(printf '  %-42s %7s s' "$role: kernel boot to /init (guest clock)" "${init_at:-?}")")
	if [ -n "$init_at" ] && [ -n "$test_at" ]; then
		STEP_TIMES+=("$(printf '  %-42s %7.1f s' "$role: vgicd + vgic-nested-test" "$(echo "$test_at - $init_at" | bc)")")
	fi
	if [ -n "$self_at" ] && [ -n "$test_at" ]; then
		STEP_TIMES+=("$(printf '  %-42s %7.1f s' "$role: kernel selftest" "$(echo "$self_at - $test_at" | bc)")")
	fi
	: "$t0" "$t1"
}

if [ "$ONLY" != patched ]; then
	boot stock "$STOCK_IMAGE" no
fi
if [ "$ONLY" != stock ]; then
	if [ -n "$PATCHED_MISSING" ]; then
		if [ -n "${VGICD_NESTED_REQUIRE_PATCHED:-}" ]; then
			RESULTS+=("patched: FAIL ($PATCHED_MISSING)")
			FAILED=$((FAILED + 1))
		else
			RESULTS+=("patched: SKIPPED ($PATCHED_MISSING)")
		fi
	else
		boot patched "$PATCHED_IMAGE" yes "$PATCHED_SELFTEST"
	fi
fi

print_step_times
echo
printf 'nested tier: %s\n' "${RESULTS[@]}"
[ "$FAILED" -eq 0 ]
