#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# build-kernel.sh - build the arm64 kernel of the nested tier from a Debian
# linux-source package, with this folder's patch series applied (or without).
#
# Bases (--base):
#   6.12  Debian 13's linux-source-6.12 and the series in this folder (the
#         default: the kernel the nested tiers boot)
#   6.1   Debian 12's linux-source-6.1 and the backport in 6.1/
#   7.3   the newest source Debian's archive has (trixie-backports'
#         linux-source-7.3) and the port in 7.3/: the base an upstream
#         posting would use
# The nested tier boots each of them (tests/nested/run-nested.sh --base);
# 6.12 and 7.3 also carry what the virsh tier's systemd L1 needs.
# 6.1 comes from the host's own apt (package linux-source-6.1); 6.12 and 7.3
# from a private apt state of their suite (scripts/lib/debian-apt.sh), so
# nothing of trixie is installed on the host.
#
# Steps: install the packages it needs; unpack the source into a work folder
# outside the repo and commit the pristine tree with git; `git am` the series
# (it must apply cleanly); configure tinyconfig + config/arm64-nested.config
# + config/debian-<base>.config; build `Image` with ccache (not with
# --check-only); build the KVM selftest vgic_batch_regs as a static arm64
# binary, and upstream's vGIC selftests (every KVM selftest of the tree's
# arm64 list whose source touches the GIC: vgic_init, vgic_irq,
# vgic_lpi_stress, arch_timer...), which the nested tier runs on the stock
# and the patched kernel; fail on compiler warnings (W=1) in the files the
# series touches; run checkpatch.pl --strict on the series.
#
# Every heavy step holds the project's heavy-work lock (scripts/lib/heavy.sh),
# so builds sharing this 2-core machine never overlap.
#
# Progress goes to stderr.  stdout carries exactly three lines, last:
#   IMAGE=<path of arch/arm64/boot/Image>
#   SELFTEST=<path of the static vgic_batch_regs binary, or empty>
#   PEERS=<folder of upstream's vGIC selftests, static, or empty>
# so a caller can `eval "$(kernel-patch/build-kernel.sh)"`.  The same lines are
# written to <build folder>/build.env.
set -euo pipefail

usage() {
	cat <<EOF
usage: $0 [options]

  --base B        6.12 (default), 6.1 or 7.3 (see the top of this script)
  --check-only    no Image: apply, W=1 build of the touched objects,
                  selftest, checkpatch (IMAGE= is then empty)
  --fragment FILE one more config fragment, after the others (give --work
                  another folder too)
  --series DIR    apply the patches of DIR instead of the base's series (to
                  measure a part of it: give --work another folder too)
  --work DIR      work folder (default \${VGICD_CACHE:-/var/cache/vgicd}/kernel-BASE)
  --no-patch      build the pristine kernel (no batch group), in DIR/pristine
  --no-selftest   do not build the selftests (SELFTEST= and PEERS= are
                  then empty)
  --no-install    do not apt-get install anything
  --no-checkpatch do not run checkpatch.pl on the series
  --fresh         unpack the source again even if the work folder is current
  -j N            parallel jobs (default 2)
  -h, --help      this text

Environment: VGICD_CACHE (default /var/cache/vgicd) holds the work folder and
the ccache (\$VGICD_CACHE/ccache).  VGICD_HEAVY_LOCK overrides the lock file.
The packages it installs are PKGS_KERNEL in scripts/lib/packages.sh.
EOF
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../scripts/lib/common.sh
. "$here/../scripts/lib/common.sh"
# shellcheck source=lib.sh
. "$here/lib.sh"
cache=$VGICD_CACHE
base=6.12
work=
check_only=0
series_override=
extra_fragment=
patched=1
selftest=1
install=1
checkpatch=1
fresh=0
jobs=2

while [ $# -gt 0 ]; do
	case $1 in
	--base) base=$2; shift ;;
	--base=*) base=${1#*=} ;;
	--check-only) check_only=1 ;;
	--series) series_override=$2; shift ;;
	--fragment) extra_fragment=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift ;;
	--work) work=$2; shift ;;
	--work=*) work=${1#*=} ;;
	--no-patch) patched=0 ;;
	--no-selftest) selftest=0 ;;
	--no-install) install=0 ;;
	--no-checkpatch) checkpatch=0 ;;
	--fresh) fresh=1 ;;
	-j) jobs=$2; shift ;;
	-j*) jobs=${1#-j} ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done

log() { printf '[build-kernel] %s\n' "$*" >&2; }
die() { printf '[build-kernel] ERROR: %s\n' "$*" >&2; exit 1; }
now() { date +%s; }

t_start=$(now)

# --- Packages ----------------------------------------------------------------
# The KVM selftests' arm64 folder: aarch64/ until 6.14, arm64/ after.
st_dir=aarch64
# The bases a Debian host boots (6.12, and 7.3 from trixie-backports) also
# get what a booted Debian host needs, so that one kernel serves every nested
# tier, the virsh tier's systemd L1 included (run-virsh-e2e.sh --stack).
host_fragment=
case $base in
6.12) suite=trixie; series_dir=$here; fragment_base=6.12
      host_fragment=$here/config/arm64-l1-host.config ;;
6.1) suite=; series_dir=$here/6.1; fragment_base=6.1 ;;
7.3) suite=trixie-backports; series_dir=$here/7.3; fragment_base=7.3; st_dir=arm64
     host_fragment=$here/config/arm64-l1-host.config ;;
*) die "unknown --base $base (6.12, 6.1 or 7.3)" ;;
esac
work=${work:-$cache/kernel-$base}
[ -z "$series_override" ] || series_dir=$(cd "$series_override" && pwd)
srcpkg=linux-source-$base
if [ "$install" = 1 ]; then
	need_packages "${PKGS_KERNEL[@]}" >&2 || die "cannot install the packages the build needs"
fi
if [ -z "$suite" ]; then
	# The host's own suite: the package is installed (PKGS_KERNEL).
	tarball=/usr/src/$srcpkg.tar.xz
	[ -r "$tarball" ] || die "$tarball missing (package $srcpkg)"
	src_version=$(dpkg-query -W -f='${Version}' "$srcpkg")
else
	# Another suite: download the package into the cache and take the
	# tarball out of it, without installing it (nor that suite's apt
	# configuration) on the host.
	deb_apt_init "$suite-all" amd64 "$suite"
	deb_apt_update >&2
	deb=$(deb_download "$cache/kernel-src" "$srcpkg")
	src_version=$(deb_version "$srcpkg")
	kp_tarball "$deb" "$srcpkg" "$src_version"
fi

# --- Source tree -------------------------------------------------------------
# The patched and pristine trees are laid out alike (DIR/src + DIR/build and
# DIR/pristine/src + DIR/pristine/build), so that with CCACHE_BASEDIR the
# compiler sees the same relative paths and the two builds share the cache.
if [ "$patched" = 1 ]; then
	top=$work
else
	top=$work/pristine
fi
src=$top/src
build=$top/build
mkdir -p "$top" "$cache/ccache"

series=()
[ "$patched" = 0 ] || kp_series "$series_dir"

step_begin "source tree" >&2
kp_source_tree "$srcpkg" "$src_version" "$tarball" "$fresh"
step_end
touched=$(git_src diff --name-only pristine HEAD)

# --- Configuration -----------------------------------------------------------
export ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-
export CCACHE_DIR=$cache/ccache CCACHE_BASEDIR=$cache CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
kmake() { make -C "$src" O="$build" CC="ccache ${CROSS_COMPILE}gcc" "$@"; }

fragments=("$here/config/arm64-nested.config" "$here/config/debian-$fragment_base.config")
[ -z "$host_fragment" ] || fragments+=("$host_fragment")
[ -z "$extra_fragment" ] || fragments+=("$extra_fragment")
mkdir -p "$build"
config_id=$(cat "${fragments[@]}" "$src/.git/vgicd-series" | sha256sum)
if [ ! -f "$build/.config" ] ||
   [ "$(cat "$build/.vgicd-config" 2>/dev/null)" != "$config_id" ]; then
	log "configuring: tinyconfig, then ${fragments[*]##*/}"
	{
		kmake -s tinyconfig &&
		"$src/scripts/kconfig/merge_config.sh" -m -O "$build" \
			"$build/.config" "${fragments[@]}" &&
		kmake -s olddefconfig
	} >"$build/config.log" 2>&1 ||
		{ cat "$build/config.log" >&2; die "configuration failed"; }
	while read -r line; do
		case $line in
		CONFIG_*) grep -qx -- "$line" "$build/.config" ||
			die "$line did not survive olddefconfig (check its dependencies)" ;;
		esac
	done < <(cat "${fragments[@]}")
	echo "$config_id" >"$build/.vgicd-config"
fi

# --- Kernel --------------------------------------------------------------------
# The files the series touches are compiled with W=1 first; the Image build
# then compiles them again with the normal flags (their command line changed),
# so both compilations are seen on every run and the warning check below does
# not depend on what was built before.
objs=()
for f in $touched; do
	case $f in
	arch/*.c|virt/*.c) objs+=("${f%.c}.o") ;;
	esac
done
warn_log=$build/warnings.log
: >"$warn_log"
ccache -z >/dev/null
step_begin "W=1 check of the touched files" >&2
if [ ${#objs[@]} -gt 0 ]; then
	log "compiling ${objs[*]} with W=1 (holding the heavy-work lock)"
	heavy make -C "$src" O="$build" CC="ccache ${CROSS_COMPILE}gcc" W=1 \
		-j"$jobs" "${objs[@]}" >"$build/build-w1.log" 2>&1 ||
		{ tail -n 40 "$build/build-w1.log" >&2; die "W=1 build of ${objs[*]} failed, see $build/build-w1.log"; }
	grep -E 'warning:|error:' "$build/build-w1.log" >>"$warn_log" || true
fi
step_end

image=
if [ "$check_only" = 0 ]; then
	step_begin "Image" >&2
	log "building Image (make -j$jobs, ccache in $CCACHE_DIR; holding the heavy-work lock)"
	heavy make -C "$src" O="$build" CC="ccache ${CROSS_COMPILE}gcc" -j"$jobs" Image \
		>"$build/build.log" 2>&1 ||
		{ tail -n 40 "$build/build.log" >&2; die "kernel build failed, see $build/build.log"; }
	step_end
	for f in $touched; do
		grep -F "$f" "$build/build.log" | grep -E 'warning:|error:' >>"$warn_log" || true
	done
	image=$build/arch/arm64/boot/Image
	[ -f "$image" ] || die "no $image"
fi
ccache_stats=$(ccache -s 2>/dev/null | grep -iE '^ *(hits|misses)' | tr -s ' ' | paste -sd' ' || true)

# --- Selftest ----------------------------------------------------------------
selftest_bin=
peers_dir=
peers_unbuilt=()
if [ "$selftest" = 1 ] && [ "$patched" = 1 ]; then
	step_begin "selftest" >&2
	log "building the selftest vgic_batch_regs (static)"
	hdr=$build/usr-headers
	heavy make -C "$src" O="$build" -s headers_install \
		INSTALL_HDR_PATH="$hdr" >&2
	kst=$build/kselftest/kvm
	heavy make -C "$src/tools/testing/selftests/kvm" \
		CC="ccache ${CROSS_COMPILE}gcc" OUTPUT="$kst" \
		LINUX_HDR_PATH="$hdr/include/" KHDR_INCLUDES="-isystem $hdr/include" \
		EXTRA_CFLAGS=-static -j"$jobs" \
		"$kst/$st_dir/vgic_batch_regs" >"$build/selftest.log" 2>&1 ||
		{ cat "$build/selftest.log" >&2; die "selftest build failed"; }
	grep -E 'warning:|error:' "$build/selftest.log" >>"$warn_log" || true
	selftest_bin=$kst/$st_dir/vgic_batch_regs
	step_end

	# Upstream's own: the tree's arm64 tests (TEST_GEN_PROGS_aarch64 up to
	# 6.14, _arm64 after) whose source, or arch half of a split test
	# (arch_timer), names the GIC.  Found, not listed, so that a base's
	# new vGIC test is not left out; the list goes to the log.
	step_begin "upstream vGIC selftests" >&2
	kvm_st=$src/tools/testing/selftests/kvm
	mk=$kvm_st/Makefile.kvm
	[ -f "$mk" ] || mk=$kvm_st/Makefile
	peers=()
	for t in $(sed -n 's/^TEST_GEN_PROGS_\(aarch64\|arm64\)[ \t]*+\{0,1\}=[ \t]*\([^$]*\)$/\2/p' "$mk"); do
		case $t in */vgic_batch_regs) continue ;; esac
		srcs=("$kvm_st/$t.c")
		[[ $t == */* ]] || srcs+=("$kvm_st/$st_dir/$t.c")
		if grep -qsE 'vgic|GICD_|GICR_|KVM_DEV_TYPE_ARM_VGIC' "${srcs[@]}"; then
			peers+=("$t")
		fi
	done
	[ ${#peers[@]} -gt 0 ] || die "no vGIC selftest found in $mk"
	log "building upstream's vGIC selftests (static): ${peers[*]}"
	# -k: one that does not build on this base (6.1's vgic_init wants a
	# linux/bitfield.h its tools/include lacks) leaves the others; which
	# did not is said here and in the summary, and none built is an error.
	rm -f "${peers[@]/#/$kst/}"
	heavy make -k -C "$kvm_st" \
		CC="ccache ${CROSS_COMPILE}gcc" OUTPUT="$kst" \
		LINUX_HDR_PATH="$hdr/include/" KHDR_INCLUDES="-isystem $hdr/include" \
		EXTRA_CFLAGS=-static -j"$jobs" \
		"${peers[@]/#/$kst/}" >"$build/peers.log" 2>&1 || true
	peers_dir=$build/kselftest/peers
	rm -rf "$peers_dir"
	mkdir -p "$peers_dir"
	peers_unbuilt=()
	for t in "${peers[@]}"; do
		if [ -x "$kst/$t" ]; then
			cp "$kst/$t" "$peers_dir/${t##*/}"
		else
			peers_unbuilt+=("$t")
		fi
	done
	[ ${#peers_unbuilt[@]} -lt ${#peers[@]} ] ||
		{ tail -n 40 "$build/peers.log" >&2; die "no upstream vGIC selftest built, see $build/peers.log"; }
	[ ${#peers_unbuilt[@]} -eq 0 ] ||
		log "upstream vGIC selftests that do not build on this base, left out: ${peers_unbuilt[*]} (see $build/peers.log)"
	step_end
fi

if [ -s "$warn_log" ]; then
	cat "$warn_log" >&2
	die "compiler warnings in the files the series touches (above; $warn_log)"
fi

# --- checkpatch --------------------------------------------------------------
cp_summary="skipped"
if [ "$checkpatch" = 1 ] && [ ${#series[@]} -gt 0 ]; then
	step_begin "checkpatch" >&2
	errors=0
	cp_summary=
	for p in "${series[@]}"; do
		out=$(cd "$src" && ./scripts/checkpatch.pl --strict -q "$p" 2>&1 || true)
		total=$(printf '%s\n' "$out" | grep -E '^total:' || echo "total: 0 errors, 0 warnings, 0 checks")
		e=$(printf '%s\n' "$total" | sed -n 's/^total: \([0-9]*\) errors.*/\1/p')
		errors=$(( errors + ${e:-0} ))
		cp_summary+="$(basename "$p"): ${total#total: }"$'\n'
		[ -n "$out" ] && printf '%s\n' "$out" >"$build/checkpatch-$(basename "$p" .patch).log"
	done
	step_end
	[ "$errors" = 0 ] || { printf '%s' "$cp_summary" >&2; die "checkpatch: $errors errors"; }
fi

# --- Summary -----------------------------------------------------------------
{
	log "done: $srcpkg $src_version, $([ "$patched" = 1 ] && echo "${#series[@]} patches" || echo "no patches")$([ "$check_only" = 1 ] && echo ", check only (no Image)")"
	print_step_times
	log "  time total: $(( $(now) - t_start ))s"
	[ -n "$ccache_stats" ] && log "  ccache: $ccache_stats"
	log "  no compiler warnings in: $(echo $touched | tr ' ' ',')"
	[ ${#peers_unbuilt[@]} -eq 0 ] ||
		log "  upstream vGIC selftests not built on this base: ${peers_unbuilt[*]}"
	if [ "$checkpatch" = 1 ] && [ ${#series[@]} -gt 0 ]; then
		log "  checkpatch --strict:"
		printf '%s' "$cp_summary" | sed 's/^/[build-kernel]     /'
	fi
} >&2

printf 'IMAGE=%s\nSELFTEST=%s\nPEERS=%s\n' "$image" "$selftest_bin" "$peers_dir" | tee "$build/build.env"
