#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# run-nested.sh - the nested tier: real arm64 kernels with KVM, booted at EL2
# under qemu-system-aarch64 (TCG), save and restore real vGIC state through
# libvgicd and the real vgicd, on a kernel with the batch group (built by
# kernel-patch/build-kernel.sh from the base's Debian source) and on the
# same suite's stock arm64 kernel (the unpatched baseline).  Both kernels
# also run upstream's own vGIC selftests (the KVM arm64 selftests of the
# patched kernel's source tree that touch the GIC, built by
# build-kernel.sh): the patched kernel must give each the verdict the stock
# kernel gives.  --base picks the series: 6.12 (Debian 13, the default and
# the one CI boots), 7.3 (trixie-backports, the series posted upstream) or
# 6.1 (Debian 12).
#
# From a fresh Debian 12 machine, as root:
#   bash tests/nested/run-nested.sh [--base 6.12|7.3|6.1] [--qemu host|trixie] [--el2]
#                                   [--only stock|patched] [--sizes 4,64,256]
#                                   [--timeout SECONDS] [--enforce-target]
#                                   [--peers all|none|NAME,...] [--skip-peers NAME,...]
#                                   [--peer-timeout SECONDS] [--fetch-only]
#                                   [--inject-mismatch]   (self-check: must FAIL)
#                                   [--source-never-ran]  (save a source VM that never ran)
#
# --fetch-only installs the packages and fetches the downloads (the stock
# kernel, busybox-static) into the cache, then exits: scripts/test.sh runs
# it while the patched kernel still builds, so that the tier's own run
# finds them there.
#
# --qemu trixie boots L1 with Debian 13's QEMU (10.0, run from a root kept in
# the cache, tests/nested/lib/qemu.sh) instead of the host's; --el2 also
# boots L1 with kvm-arm.mode=nested (it implies --qemu trixie: the host's
# QEMU 7.2 emulates no FEAT_NV2), so that L1's KVM offers EL2-enabled vCPUs
# to the selftest (Linux 6.16 and later: --base 7.3).
#
# Environment:
#   VGICD_CACHE       downloads and unpacked packages (default /var/cache/vgicd;
#                     the nested tier uses $VGICD_CACHE/nested)
#   VGICD_BUILD       build folders (default _build); logs go to $VGICD_BUILD/nested
#                     ($VGICD_BUILD/nested-BASE for a --base other than 6.12)
#   NESTED_PATCHED_IMAGE / NESTED_PATCHED_SELFTEST / NESTED_PATCHED_PEERS
#                     a prebuilt patched kernel, its selftest and the folder
#                     of upstream's vGIC selftests (skips build-kernel.sh);
#                     NESTED_PATCHED_ENV: a file with build-kernel.sh's
#                     IMAGE=, SELFTEST= and PEERS= lines instead
#   VGICD_NESTED_PEERS, VGICD_NESTED_SKIP_PEERS, VGICD_NESTED_PEER_TIMEOUT
#                     defaults of --peers (all), --skip-peers (none) and
#                     --peer-timeout (600)
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
. "$HERE/lib/qemu.sh"
cd "$VGICD_ROOT"

ONLY=
QEMU_FROM=host
EL2=
SIZES=${VGICD_NESTED_SIZES:-4,64,256}
TIMEOUT=${VGICD_NESTED_TIMEOUT:-900}
TEST_ARGS=
PEERS=${VGICD_NESTED_PEERS:-all}
SKIP_PEERS=${VGICD_NESTED_SKIP_PEERS:-}
PEER_TIMEOUT=${VGICD_NESTED_PEER_TIMEOUT:-600}
FETCH_ONLY=
while [ $# -gt 0 ]; do
	case $1 in
	--base) NESTED_BASE=$2; shift 2 ;;
	--qemu) QEMU_FROM=$2; shift 2 ;;
	--el2) EL2=1; QEMU_FROM=trixie; shift ;;
	--only) ONLY=$2; shift 2 ;;
	--sizes) SIZES=$2; shift 2 ;;
	--timeout) TIMEOUT=$2; shift 2 ;;
	--peers) PEERS=$2; shift 2 ;;
	--skip-peers) SKIP_PEERS=$2; shift 2 ;;
	--peer-timeout) PEER_TIMEOUT=$2; shift 2 ;;
	--fetch-only) FETCH_ONLY=1; shift ;;
	--enforce-target | --inject-mismatch | --source-never-ran) TEST_ARGS="${TEST_ARGS:+${TEST_ARGS}_}$1"; shift ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "run-nested.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
case $ONLY in '' | stock | patched) ;; *) echo "--only stock|patched" >&2; exit 2 ;; esac
case $NESTED_BASE in 6.12 | 7.3 | 6.1) ;; *) echo "--base 6.12|7.3|6.1" >&2; exit 2 ;; esac
case $QEMU_FROM in host | trixie) ;; *) echo "--qemu host|trixie" >&2; exit 2 ;; esac

NESTED_OUT=$VGICD_BUILD/nested
[ "$NESTED_BASE" = 6.12 ] || NESTED_OUT=$VGICD_BUILD/nested-$NESTED_BASE
[ -z "$EL2" ] || NESTED_APPEND="${NESTED_APPEND:+$NESTED_APPEND }kvm-arm.mode=nested"
echo "base: $NESTED_BASE${EL2:+, L1 with nested virtualization}"
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
BUSYBOX=$(nested_busybox)
step_end
if [ -n "$FETCH_ONLY" ]; then
	print_step_times
	exit 0
fi

if [ "$QEMU_FROM" = trixie ]; then
	step_begin "QEMU of Debian 13 (tests/nested/lib/qemu.sh)"
	nested_qemu_trixie "$NESTED_OUT/qemu"
	step_end
fi
echo "L1 runs under: $("$NESTED_QEMU" --version 2>/dev/null | head -n1)${NESTED_APPEND:+, kernel arguments $NESTED_APPEND}"

if [ "$ONLY" != stock ]; then
	step_begin "patched kernel (kernel-patch/build-kernel.sh)"
	nested_patched_kernel
	if [ -n "$PATCHED_MISSING" ]; then
		echo "patched kernel: unavailable: $PATCHED_MISSING"
	else
		echo "patched kernel: $PATCHED_IMAGE${PATCHED_SELFTEST:+, selftest $PATCHED_SELFTEST}${PATCHED_PEERS:+, upstream selftests in $PATCHED_PEERS}"
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
initramfs_busybox "$stage" "$BUSYBOX"
initramfs_elf "$stage" "$B/daemon/vgicd" /usr/sbin/vgicd
# No vgicctl: without a system bus it has nothing to talk to, and it links
# libvirt (libvirt, ICU, gnutls...: 57 MB more to load under TCG).
initramfs_elf "$stage" "$B/tests/nested/vgic-nested-test" /usr/bin/vgic-nested-test
initramfs_file "$stage" "$HERE/init.sh" /init 0755
initramfs_pack "$stage" "$NESTED_OUT/base.cpio"
echo "base initramfs: $(du -h "$NESTED_OUT/base.cpio" | cut -f1), $(find "$stage" -type f | wc -l) files"
step_end

# Upstream's vGIC selftests, in both kernels' initramfs (the binaries of
# the patched tree: the series adds a test but changes none of theirs).
# Without a patched build there are none to run: the stock boot runs
# without them, as before.  Arguments for TCG: arch_timer waits for each
# timer interrupt 100 us past its deadline by default, and under emulation
# one arrives milliseconds late on either kernel; -e gives it 200 ms (each
# of its 10 iterations waits that long, 2 s in all).  6.1's arch_timer has
# no -e (it checks only that an interrupt comes after its deadline) and
# would stop at the unknown option, having tested nothing: its own usage
# text says whether it takes one.
declare -A PEER_ARGS=()
if [ -f "${PATCHED_PEERS:-}/arch_timer" ] &&
   grep -qa -- '-e: Interrupt arrival error margin' "$PATCHED_PEERS/arch_timer"; then
	PEER_ARGS[arch_timer]="-e 200000"
fi
PEER_CPIO=
if [ "$PEERS" != none ] && [ -n "${PATCHED_PEERS:-}" ]; then
	step_begin "userland: upstream vGIC selftests"
	peer_stage=$NESTED_OUT/rootfs-peers
	rm -rf "$peer_stage"
	mkdir -p "$peer_stage/selftest/peers"
	peer_names=()
	if [ "$PEERS" = all ]; then
		for t in "$PATCHED_PEERS"/*; do peer_names+=("${t##*/}"); done
	else
		for name in ${PEERS//,/ }; do peer_names+=("$name"); done
	fi
	for name in "${peer_names[@]}"; do
		[[ ",$SKIP_PEERS," == *",$name,"* ]] && continue
		[ -f "$PATCHED_PEERS/$name" ] ||
			nested_die "--peers: no upstream selftest $name in $PATCHED_PEERS (see the folder)"
		initramfs_file "$peer_stage" "$PATCHED_PEERS/$name" "/selftest/peers/$name" 0755
		if [ -n "${PEER_ARGS[$name]:-}" ]; then
			mkdir -p "$peer_stage/selftest/peer-args"
			echo "${PEER_ARGS[$name]}" > "$peer_stage/selftest/peer-args/$name"
		fi
	done
	[ -n "$SKIP_PEERS" ] && echo "upstream vGIC selftests left out (--skip-peers): $SKIP_PEERS"
	PEER_CPIO=$NESTED_OUT/peers.cpio
	initramfs_pack "$peer_stage" "$PEER_CPIO"
	echo "upstream vGIC selftests: $(ls "$peer_stage/selftest/peers" | paste -sd' ') ($(du -h "$PEER_CPIO" | cut -f1))"
	step_end
fi

# peer_verdict RC[,RC] - kselftest's exit status as a word; the second
# status is a failed test's second run (init.sh), whose verdict counts.
peer_verdict() {
	local last=${1##*,} again=
	[ "$last" = "$1" ] || again=" (2nd run)"
	case $last in
	0) echo "pass$again" ;;
	4) echo "skip$again" ;;
	124 | 143) echo timeout ;;
	*) echo "fail($last)" ;;
	esac
}

# boot ROLE IMAGE EXPECT [SELFTEST] - one kernel, one boot, one verdict.
boot() {
	local role=$1 image=$2 expect=$3 selftest=${4:-} initrd log marker t0 t1 rc=0
	initrd=$NESTED_OUT/$role.initrd
	log=$NESTED_OUT/$role.log
	cp "$NESTED_OUT/base.cpio" "$initrd"
	[ -z "$PEER_CPIO" ] || cat "$PEER_CPIO" >> "$initrd"
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
		"vgicd_nested_role=$role vgicd_nested_expect=$expect vgicd_nested_sizes=$SIZES vgicd_nested_peer_timeout=$PEER_TIMEOUT${TEST_ARGS:+ vgicd_nested_args=$TEST_ARGS}" ||
		rc=$?
	t1=$(nested_clock)
	step_end
	# What the guest printed from /init on.
	tr -d '\r' < "$log" | sed -n '/^NESTED: \/init started/,$p' | grep -av -e '^\[ *[0-9.]*\] ' -e '^NESTED-ROW: ' || true
	# The table's rows, for bench/report.py (bench/run-bench.sh).
	tr -d '\r' < "$log" | sed -n 's/^NESTED-ROW: //p' > "$NESTED_OUT/$role-rows.jsonl" || true
	# vgicd's calibration and a batched access's cost, for the split of
	# a one-by-one access's time (bench/report.py).
	tr -d '\r' < "$log" | sed -n 's/^NESTED-SPLIT: //p' | tail -n 1 > "$NESTED_OUT/$role-split.json" || true
	[ -s "$NESTED_OUT/$role-split.json" ] || rm -f "$NESTED_OUT/$role-split.json"
	# Upstream's selftests: NAME RC SECONDS, compared after both boots.
	tr -d '\r' < "$log" | sed -n 's/^NESTED-PEER: \([^ ]*\) rc=\([0-9,]*\) \(.*\)/\1 \2 \3/p' \
		> "$NESTED_OUT/$role-peers.txt" || true
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
	local init_at test_at self_at peers_at
	init_at=$(tr -d '\r' < "$log" | sed -n 's/^NESTED-TIME: init \([0-9.]*\) .*/\1/p')
	test_at=$(tr -d '\r' < "$log" | sed -n 's/^NESTED-TIME: test-done \([0-9.]*\) .*/\1/p')
	self_at=$(tr -d '\r' < "$log" | sed -n 's/^NESTED-TIME: selftest-done \([0-9.]*\) .*/\1/p')
	peers_at=$(tr -d '\r' < "$log" | sed -n 's/^NESTED-TIME: peers-done \([0-9.]*\) .*/\1/p')
	STEP_TIMES+=("$(printf '  %-42s %7s s' "$role: kernel boot to /init (guest clock)" "${init_at:-?}")")
	if [ -n "$init_at" ] && [ -n "$test_at" ]; then
		STEP_TIMES+=("$(printf '  %-42s %7.1f s' "$role: vgicd + vgic-nested-test" "$(echo "$test_at - $init_at" | bc)")")
	fi
	if [ -n "$self_at" ] && [ -n "$test_at" ]; then
		STEP_TIMES+=("$(printf '  %-42s %7.1f s' "$role: kernel selftest" "$(echo "$self_at - $test_at" | bc)")")
	fi
	if [ -n "$peers_at" ] && [ -n "${self_at:-$test_at}" ]; then
		STEP_TIMES+=("$(printf '  %-42s %7.1f s' "$role: upstream vGIC selftests" "$(echo "$peers_at - ${self_at:-$test_at}" | bc)")")
	fi
	: "$t0" "$t1"
}

# peers_compare - upstream's selftests on both kernels, one row each; the
# patched kernel fails the tier when it gives any test another verdict
# than the stock kernel (a test that fails on both is reported, not
# held against the series).
peers_compare() {
	local name rc secs sv pv differ=()
	local -A srs=() ssec=() prs=() psec=()
	[ -n "$PEER_CPIO" ] || return 0
	while read -r name rc secs; do srs[$name]=$rc; ssec[$name]=$secs; done < <(cat "$NESTED_OUT/stock-peers.txt" 2>/dev/null)
	while read -r name rc secs; do prs[$name]=$rc; psec[$name]=$secs; done < <(cat "$NESTED_OUT/patched-peers.txt" 2>/dev/null)
	echo
	echo "upstream vGIC selftests (wall clock in L1 under TCG):"
	printf '  %-24s %-16s %7s   %-16s %7s\n' test stock s patched s
	for name in "$NESTED_OUT"/rootfs-peers/selftest/peers/*; do
		name=${name##*/}
		sv="not run" pv="not run"
		[ -z "${srs[$name]+x}" ] || sv=$(peer_verdict "${srs[$name]}")
		[ -z "${prs[$name]+x}" ] || pv=$(peer_verdict "${prs[$name]}")
		printf '  %-24s %-16s %7s   %-16s %7s\n' "$name" "$sv" "${ssec[$name]:--}" "$pv" "${psec[$name]:--}"
		# A pass is a pass, at the first run or the second.
		[ "${sv% (2nd run)}" = "${pv% (2nd run)}" ] || differ+=("$name: stock $sv, patched $pv")
	done
	if [ ${#differ[@]} -gt 0 ]; then
		RESULTS+=("upstream vGIC selftests: FAIL ($(IFS=';'; echo "${differ[*]}"))")
		FAILED=$((FAILED + 1))
	else
		RESULTS+=("upstream vGIC selftests: PASS (the same verdict on both kernels)")
	fi
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

[ -n "$ONLY" ] || [ -n "${PATCHED_MISSING:-}" ] || peers_compare
print_step_times
echo
printf 'nested tier: %s\n' "${RESULTS[@]}"
[ "$FAILED" -eq 0 ]
