#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# check-qemu-tests.sh - QEMU's own tests and migration checks, on the
# series and on its base, as a QEMU maintainer would run them before
# taking it.
#
#   bash qemu-patch/check-qemu-tests.sh [--base 10.0|10.2] [--suites "T..."]
#
# --base    the series (lib.sh's qp_base; default 10.0)
# --suites  QEMU's make targets to run (default "check-unit
#           check-qtest-aarch64": its unit tests and every aarch64 qtest of
#           the quick set, migration-test among them; "" runs no test,
#           only the migration-format check)
#
# Theory of operation.  The tiers build a KVM-only qemu-system-aarch64 for
# an arm64 host; QEMU's own tests never ran on the series.  This machine
# is amd64, so here QEMU is built natively with TCG (aarch64-softmmu, the
# default devices, warnings as errors, the docs), twice: the base's
# pristine Debian source, and the same source with the series.  What that
# covers of the series is what every user of the GICv3 runs, KVM or not:
# the common GIC's class hooks and their Error (patch 1), the emulated
# GIC's post_load (patch 1), the arm_gicv3/vgicd subsection (patch 4),
# the meson option (patch 3: off, as a distribution that does not ask for
# it builds), and the docs under sphinx -W (patch 6).  The KVM GIC and
# the vgicd client (arm_gicv3_kvm.c, arm_gicv3_vgicd.c) are not compiled
# on an amd64 host; the nested QEMU tier runs them on arm64 KVM.
#
# Steps: QEMU's make targets on the patched build, then migration-test
# again with --full, every migration mode (postcopy, multifd, file,
# compression...), each of which saves and loads the GIC (the quick set
# runs a dozen of them).  What fails is run again on the base, so that a
# failure the series did not bring is told apart (reported, not counted
# against it).  Then the
# migration format: -dump-vmstate of both builds, for the virt machine
# types a fleet runs (the base's own and virt-10.0), compared with QEMU's
# scripts/vmstate-static-checker.py in both directions (a stream of the
# stock QEMU into the patched one, and back).  The one difference allowed
# is the series' own subsection, arm_gicv3/vgicd: the checker cannot see
# its .needed, which sends it only when vgicd saved a record (Record=true),
# so a stream of the patched QEMU has it only then, and a stock QEMU
# refuses exactly that stream (the QEMU tier checks both).
#
# Debian's +ds source has no firmware blobs; the network boot ROMs the
# virt machine's default NIC loads come, as in Debian's own qemu package,
# from ipxe-qemu (linked into each build's data folder).  Tests that need
# a blob Debian builds elsewhere (edk2's for bios-tables-test, a board's
# boot ROM for qom-test's walk over every machine) fail on the base as on
# the series, and are reported as such.
#
# Each tree is built in its own build/ folder, with ccache: a second run
# rebuilds only what changed.  The two builds share no objects (every file
# includes config-host.h, where patch 3 adds CONFIG_VGICD and the default
# address).  Everything lands in ${VGICD_CACHE:-/var/cache/vgicd}/qemu[/BASE]/native.
# Not in CI (about 35 minutes of both cores cold, 11 warm); a run to make
# when the series changes.
# Exit status: 0 when every target passed on the series (or failed on the
# base too) and the vmstate checker found nothing beyond the base's own
# findings and the series' subsection.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() {
	sed -n 's/^#   //p; s/^# --/--/p' "$0" | sed -n '/check-qemu-tests.sh \[/,$p' | sed '/^Theory/,$d'
}

SUITES="check-unit check-qtest-aarch64"
while [ $# -gt 0 ]; do
	case $1 in
	--base) [ $# -ge 2 ] || { usage >&2; exit 2; }
		qp_base "$2" || exit 2
		shift ;;
	--suites) [ $# -ge 2 ] || { usage >&2; exit 2; }
		SUITES=$2
		shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done
NATIVE=$QP_BASE_CACHE/native
T0=$(date +%s.%N)

step_begin "packages"
need_packages "${PKGS_QEMU_TESTS[@]}"
step_end
step_begin "meson >= 1.5"; qp_meson; step_end
step_begin "QEMU source (Debian $QP_SUITE)"; qp_qemu_source; step_end
step_begin "the base and the series"
mkdir -p "$NATIVE"
if [ ! -d "$NATIVE/stock/.git" ]; then
	rm -rf "$NATIVE/stock"
	git clone -q --no-hardlinks "$QP_PRISTINE" "$NATIVE/stock"
fi
git -C "$NATIVE/stock" checkout -q -f pristine
qp_apply_series "$NATIVE/patched"
step_end

# build NAME [OPTION...] - configure (once per set of options) and build
# QEMU in NAME/build with the host's compiler.
build() {
	local tree=$NATIVE/$1 args
	shift
	args=(--target-list=aarch64-softmmu --enable-werror --disable-download
		--disable-install-blobs --python="$QP_PY" --enable-fdt=system
		--disable-debug-info "$@")
	step_begin "configure ($(basename "$tree"))"
	if [ -f "$tree/build/build.ninja" ] && [ -f "$tree/build/vgicd-configure" ] &&
		[ "$(cat "$tree/build/vgicd-configure")" = "${args[*]}" ]; then
		echo "already configured"
	else
		rm -rf "$tree/build"
		mkdir -p "$tree/build"
		if ! (cd "$tree/build" && heavy native_env ../configure "${args[@]}" >configure.log 2>&1); then
			tail -n 30 "$tree/build/configure.log" >&2
			return 1
		fi
		echo "${args[*]}" >"$tree/build/vgicd-configure"
	fi
	grep -E '^ *(vgicd support|TCG support|sphinx-build|Documentation) ' "$tree/build/configure.log" || true
	step_end
	step_begin "build ($(basename "$tree"))"
	heavy native_env ninja --quiet -C "$tree/build"
	step_end
}

# native_env CMD... - CMD with ccache and the cache's ccache folder, for
# the host's compiler (qp_qemu_env's, without the aarch64 pkg-config).
native_env() {
	QP_PKG_CONFIG_LIBDIR='' qp_qemu_env env -u PKG_CONFIG_LIBDIR "$@"
}

build patched --enable-docs
build stock

step_begin "firmware: Debian's ipxe-qemu ROMs"
for side in stock patched; do
	data=$(find "$NATIVE/$side/build/qemu-bundle" -type d -path '*/share/qemu' | head -n 1)
	[ -n "$data" ] || { echo "no share/qemu in $NATIVE/$side/build/qemu-bundle" >&2; exit 1; }
	ln -sf /usr/lib/ipxe/qemu/*.rom "$data/"
done
echo "linked: $(cd /usr/lib/ipxe/qemu && echo *.rom)"
step_end

# The rule for every test run below: run it on the series; when it fails,
# run it again on the base, and count against the series only what fails
# with it alone.
# on_series_then_base NAME RUN LIST [ARG...] - RUN TREE ARG... runs the
# tests in TREE (patched or stock), prints one summary line and fails when
# a test does; LIST TREE ARG... prints the failed tests' names, sorted.
# A failure with no names (a crash, a build error) cannot be told apart
# from the base's, and counts.
on_series_then_base() {
	local name=$1 run=$2 list=$3 r mine theirs new
	shift 3
	step_begin "$name (the series; the base if it fails)"
	if r=$("$run" patched "$@"); then
		echo "PASS $name: $r"
	else
		echo "FAIL? $name on the series: $r"
		mine=$("$list" patched "$@")
		[ -z "$mine" ] || sed 's/^/  /' <<<"$mine"
		if r=$("$run" stock "$@"); then
			echo "FAIL $name: fails with the series and passes on the base ($r)"
			FAILED=$((FAILED + 1))
		else
			theirs=$("$list" stock "$@")
			new=$(comm -23 <(printf '%s\n' "$mine") <(printf '%s\n' "$theirs"))
			if [ -z "$mine" ]; then
				echo "FAIL $name: fails on the series without naming a test (a crash, a build error?), which cannot be told from the base's failure (base: $r)"
				FAILED=$((FAILED + 1))
			elif [ -n "$new" ]; then
				echo "FAIL $name: failing with the series only (base: $r): $(paste -sd ' ' <<<"$new")"
				FAILED=$((FAILED + 1))
			else
				echo "PASS $name: the same tests fail on the base (not the series'; base: $r): $(sed 's/.* //' <<<"$theirs" | paste -sd ' ')"
				NOT_OURS+=("$name")
			fi
		fi
	fi
	step_end
}

# make_target TREE TARGET - QEMU's own make target in TREE's build, its
# log and meson's test log kept beside it; prints meson's summary.
make_target() {
	local tree=$NATIVE/$1 log=$NATIVE/$1-$2.log rc=0
	heavy native_env make -C "$tree/build" "$2" MESON_TESTTHREADS=2 >"$log" 2>&1 || rc=$?
	cp "$tree/build/meson-logs/testlog.txt" "$NATIVE/$1-$2.testlog.txt" 2>/dev/null || true
	echo "$(grep -E '^(Ok|Expected Fail|Fail|Unexpected Pass|Skipped|Timeout): ' "$log" | tr -s ' \n' ' ')exit $rc"
	return $rc
}
# make_failing TREE TARGET - the tests of TARGET that failed or timed out
# in TREE (meson names each twice: as it ends, and in the summary)
make_failing() {
	sed -n 's/^ *[0-9]*\/[0-9]* \(.*[^ ]\) *\(FAIL\|TIMEOUT\|ERROR\) .*/\1/p' "$NATIVE/$1-$2.log" | sort -u
}

# full_migration TREE - every mode of migration-test (--full: postcopy,
# multifd, file, compression...), as the make target runs it, in TREE;
# prints the TAP's counts
full_migration() {
	local rc=0 tap=$NATIVE/$1-migration-full.tap
	(cd "$NATIVE/$1/build" && heavy env PYTHON="$PWD/pyvenv/bin/python3" \
		QTEST_QEMU_BINARY=./qemu-system-aarch64 QTEST_QEMU_IMG=./qemu-img \
		QTEST_QEMU_STORAGE_DAEMON_BINARY=./storage-daemon/qemu-storage-daemon \
		timeout 1800 tests/qtest/migration-test --tap -k --full) >"$tap" 2>&1 || rc=$?
	echo "$(grep -c '^ok ' "$tap") ok ($(grep -c '^ok .*# SKIP' "$tap") skipped), $(grep -c '^not ok' "$tap") not ok, of $(sed -n 's/^1\.\.//p' "$tap" | head -n 1), exit $rc"
	return $rc
}
# not_ok TREE - the names of TREE's failed migration-test cases, sorted
not_ok() {
	sed -n 's/^not ok [0-9]* //p' "$NATIVE/$1-migration-full.tap" | sort
}

FAILED=0 NOT_OURS=()
for target in $SUITES; do
	on_series_then_base "$target" make_target make_failing "$target"
done
if [ -n "$SUITES" ]; then
	on_series_then_base "migration-test --full" full_migration not_ok
fi

# The migration format.  vmstate-static-checker.py -s SRC -d DST says
# what a stream of SRC's would meet in DST; its exit status is 0 when
# nothing differs, and its lines name what does.  It is quiet about a
# subsection only DST has (a source never sends it), and names one DST
# lacks; that may only be arm_gicv3/vgicd (the top of this script says
# why).  What it finds comparing the base with itself is the base's own
# (10.2's sd-card has two subsections of one name, and the checker pairs
# them wrongly): reported, not counted.  Anything else fails.
step_begin "vmstate: -dump-vmstate, vmstate-static-checker.py"
machines=("virt-${QP_QEMU_VERSION%.*}" virt-10.0)
[ "${machines[0]}" != virt-10.0 ] || machines=(virt-10.0)
# checker SRC DST MACHINE - the checker's lines for a stream of SRC's
# build into DST's, on MACHINE, and its exit status
checker() {
	"$QP_PY" "$NATIVE/patched/scripts/vmstate-static-checker.py" \
		-s "$NATIVE/vmstate-$1-$3.json" -d "$NATIVE/vmstate-$2-$3.json" 2>&1
}
for m in "${machines[@]}"; do
	for side in stock patched; do
		"$NATIVE/$side/build/qemu-system-aarch64" -M "$m" -display none \
			-dump-vmstate "$NATIVE/vmstate-$side-$m.json"
	done
	base=$(checker stock stock "$m") || true
	[ -z "$base" ] || echo "note: the base's own, the checker on the base against itself, $m: $(paste -sd ' ' <<<"$base")"
	for pair in stock:patched patched:stock; do
		src=${pair%:*} dst=${pair#*:}
		out=$(checker "$src" "$dst" "$m") && rc=0 || rc=$?
		out=$(grep -v -e '^$' <<<"$out" | grep -v -x -F -e "$base" || true)
		other=$(grep -v -e 'Subsection "arm_gicv3/vgicd" not found' <<<"$out" || true)
		if [ -z "$other" ]; then
			echo "PASS vmstate $m, $src -> $dst: exit $rc; beyond the base's own: $(paste -sd ' ' <<<"${out:-nothing}")"
		else
			echo "FAIL vmstate $m, $src -> $dst: exit $rc: $(paste -sd ' ' <<<"$other")"
			FAILED=$((FAILED + 1))
		fi
	done
done
step_end

print_step_times
printf '  %-44s %7.1f s\n' "total" "$(echo "$(date +%s.%N) - $T0" | bc)"
echo
if [ "$FAILED" -eq 0 ]; then
	echo "check-qemu-tests: QEMU $QP_QEMU_VERSION with the series passes ${SUITES:-(no make target asked for)} and keeps its migration format${NOT_OURS[*]:+ (failing on the base too: ${NOT_OURS[*]})}"
else
	echo "check-qemu-tests: $FAILED check(s) failed with the series (above)" >&2
	exit 1
fi
