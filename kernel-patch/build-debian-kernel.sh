#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# build-debian-kernel.sh - an operator's host kernel: Debian 13's
# linux-source-6.12 with this folder's series, configured with Debian's own
# arm64 configuration, built as Debian packages (linux-image-*, linux-headers-*)
# that `apt install` puts on a Debian 13 arm64 host.  docs/operations.md,
# §1 "The patched kernel", has the recipe around it.
#
# Theory of operation:
#
#   source   trixie's linux-source-6.12 (trixie-security's when it is newer:
#            kernel security updates are there first), downloaded through a
#            private apt state (scripts/lib/debian-apt.sh), as build-kernel.sh
#            does, so nothing of trixie is installed on the build host.  It is unpacked into
#            WORK/src, committed as `pristine`, and the series is applied with
#            `git am` (it must apply cleanly).  A later run reuses the tree
#            while the source version and the series are unchanged.
#   config   Debian's: the /boot/config-* of the linux-image-*-arm64 package
#            that the newest metapackage linux-image-arm64 names, taken out of
#            the .deb with dpkg-deb (nothing installed).  On top of it only
#            what an out-of-tree build must change:
#              - CONFIG_LOCALVERSION (default +vgicd1), so the kernel's release,
#                its /lib/modules folder and its package name differ from
#                Debian's and the two kernels install side by side;
#              - module signing keeps working but with a throwaway key the
#                build generates (CONFIG_MODULE_SIG_KEY at its default
#                certs/signing_key.pem), and no Debian certificates are built
#                in (SYSTEM_TRUSTED_KEYS and SYSTEM_REVOCATION_KEYS empty):
#                Debian's build signs with keys that exist only there, and
#                Debian's config names files that exist only there.  The
#                private key is deleted after the build.
#            then `make olddefconfig`.  The options whose values differ from
#            Debian's afterwards (the compiler's features, mostly, when the
#            build host's gcc is older than trixie's gcc-14) are listed in
#            BUILD/config-changes.txt.
#   build    the kernel's own `make bindeb-pkg` (scripts/package/mkdebian),
#            cross (ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-) unless the
#            build host is arm64, with KDEB_PKGVERSION = Debian's version plus
#            the local suffix.  The -dbg package (gigabytes of DWARF) is skipped
#            through the build profile pkg.linux-upstream.nokerneldbg unless
#            --with-dbg; the debug info is still compiled, because Debian's
#            config has BTF (CONFIG_DEBUG_INFO_BTF), which is made from it.
#            The packages land in WORK (default $VGICD_CACHE/kernel-deb/).
#            The make holds the project's heavy-work lock (scripts/lib/heavy.sh).
#   measure  (--measure) a full build of Debian's config is thousands of
#            objects: too long for a 2-core machine shared with others.  This
#            mode estimates it instead, in WORK/measure/build with the same
#            .config:
#              - `make prepare`, timed;
#              - the list of every object the full build compiles, asked of
#                kbuild itself: each directory's Makefile evaluated by
#                scripts/Makefile.build with the configuration (its
#                real-obj-y, real-obj-m and lib-y printed, its subdirectories
#                followed), from the top Kbuild and from the dts folder.
#                `make -n` cannot give it (kbuild's recursion runs make).
#                Its module and device-tree counts are the ones Debian's
#                package ships, which checks it;
#              - a random sample of those objects (fixed seed) compiled as
#                single targets in one make, and the same make again with
#                nothing to do: (CPU of the first - CPU of the second) / N
#                is the CPU per object, all kbuild work included.  A
#                wrapper around the compiler records each run, for the
#                spread, so the standard error of the mean is known;
#              - 20 device trees the same way, one external module (its
#                .mod.o, which every module adds), strip + sign + xz on 40
#                of Debian's modules (modules_install), pahole's BTF on 30
#                sampled objects;
#            then multiplies by the counts (measure_report).  Each step is
#            kept once measured, so an interrupted run resumes; --report
#            prints the estimate again.
#   dry run  (--dry-run) everything up to the configuration, then prints the
#            make command it would run.
#
# stdout carries only the result: with a build, one line per package built
# (DEB=<path>); with --measure, the estimate.  Progress goes to stderr.
set -euo pipefail

usage() {
	cat <<EOF
usage: $0 [options]

  -j, --jobs N        parallel make jobs (default: the number of CPUs)
  --dry-run           download, apply, configure; print the build command
  --measure           no packages: time a random sample of the full build's
                      objects and estimate the whole build (see the top of
                      this script)
  --sample N          objects in the --measure sample (default 200)
  --report            the last --measure's estimate again, from its files
  --localversion V    the release suffix (default +vgicd1): kernel release
                      6.12.X+vgicd1, package version DEBIANVERSION+vgicd1
  --with-dbg          also build linux-image-*-dbg (gigabytes of DWARF)
  --work DIR          work folder (default \${VGICD_CACHE:-/var/cache/vgicd}/kernel-deb);
                      the packages are written there
  --no-security       trixie's source and config only, not trixie-security's
                      newer ones (the series is tested on trixie's)
  --fresh             unpack the source again
  --no-install        do not apt-get install the build's packages
  -h, --help          this text

Environment: VGICD_CACHE (default /var/cache/vgicd); VGICD_HEAVY_LOCK
overrides the heavy-work lock file.  The packages it installs are
PKGS_KERNEL_DEB in scripts/lib/packages.sh.
EOF
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../scripts/lib/common.sh
. "$here/../scripts/lib/common.sh"
# shellcheck source=lib.sh
. "$here/lib.sh"
cache=$VGICD_CACHE
jobs=$(nproc)
mode=build
sample=200
localversion=+vgicd1
with_dbg=0
work=
fresh=0
install=1
security=1

while [ $# -gt 0 ]; do
	case $1 in
	-j|--jobs) jobs=$2; shift ;;
	-j*) jobs=${1#-j} ;;
	--jobs=*) jobs=${1#*=} ;;
	--dry-run) mode=dry-run ;;
	--measure) mode=measure ;;
	--report) mode=report ;;
	--sample) sample=$2; shift ;;
	--localversion) localversion=$2; shift ;;
	--with-dbg) with_dbg=1 ;;
	--work) work=$2; shift ;;
	--fresh) fresh=1 ;;
	--no-security) security=0 ;;
	--no-install) install=0 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done

log() { printf '[build-debian-kernel] %s\n' "$*" >&2; }
die() { printf '[build-debian-kernel] ERROR: %s\n' "$*" >&2; exit 1; }

case $jobs in ''|*[!0-9]*|0) die "--jobs needs a positive number" ;; esac
case $sample in ''|*[!0-9]*|0) die "--sample needs a positive number" ;; esac
# The suffix ends up in a package name and a path under /lib/modules.
case $localversion in
+*|-*) ;;
*) die "--localversion must start with + or - (e.g. +vgicd1)" ;;
esac
case $localversion in *[!A-Za-z0-9.+-]*) die "--localversion: letters, digits, . + - only" ;; esac

work=${work:-$cache/kernel-deb}
src=$work/src
build=$work/build
srcpkg=linux-source-6.12
t_start=$(date +%s)

# --- Packages ----------------------------------------------------------------
export ARCH=arm64
pkgs=("${PKGS_KERNEL_DEB[@]}")
if [ "$(uname -m)" = aarch64 ]; then
	# A native build on an arm64 Debian 13 host: trixie's own gcc-14, the
	# compiler Debian built its kernel with; arm64 is not a foreign
	# architecture there.
	export CROSS_COMPILE=
	pkgs=("${pkgs[@]/%:arm64/}")
else
	export CROSS_COMPILE=aarch64-linux-gnu-
fi
if [ "$install" = 1 ]; then
	need_packages "${pkgs[@]}" >&2 || die "cannot install the packages the build needs"
fi
# The 32-bit compat vDSO (COMPAT_VDSO) needs a 32-bit arm compiler, as
# Debian's build has; without it olddefconfig drops the option.
export CROSS_COMPILE_COMPAT=arm-linux-gnueabihf-

# --- Source --------------------------------------------------------------------
# use_newest PKG ARCH NAME - make the private apt state (NAME: its suffix)
# of trixie or trixie-security that has the highest version of PKG the
# current one.  A kernel security update is in trixie-security weeks before
# the point release brings it to trixie; a host's kernel should have it.
use_newest() {
	local pkg=$1 arch=$2 name=$3 suites=(trixie) s v best="" best_v=""
	if [ "$security" = 1 ] && [ -n "$(deb_sources_field URIs '-security$')" ]; then
		suites+=(trixie-security)
	fi
	for s in "${suites[@]}"; do
		deb_apt_init "$s-$name" "$arch" "$s"
		deb_apt_update >&2
		v=$(deb_version "$pkg")
		[ -n "$v" ] || continue
		if [ -z "$best_v" ] || dpkg --compare-versions "$v" gt "$best_v"; then
			best=$s best_v=$v
		fi
	done
	[ -n "$best" ] || die "no $pkg ($arch) in ${suites[*]}"
	deb_apt_init "$best-$name" "$arch" "$best"
	log "$pkg: $best_v ($best)"
}

# As build-kernel.sh: the same private apt state (trixie-all) and download
# folder, so the two scripts share one copy of the 150 MB package and its
# tarball.
step_begin "source package" >&2
use_newest "$srcpkg" amd64 all
src_deb=$(deb_download "$cache/kernel-src" "$srcpkg")
src_version=$(deb_version "$srcpkg")
kp_tarball "$src_deb" "$srcpkg" "$src_version"
step_end

# --- Debian's arm64 configuration ----------------------------------------------
# The metapackage names the current ABI's image package (as the nested tier
# finds its stock kernel); only its /boot/config-* is read.
step_begin "Debian's arm64 config" >&2
use_newest linux-image-arm64 arm64 arm64
image_pkg=$(deb_depends linux-image-arm64 | grep -m1 '^linux-image-') ||
	die "trixie's linux-image-arm64 has no linux-image-* dependency"
image_version=$(deb_version "$image_pkg")
image_deb=$(deb_download "$cache/kernel-src" "$image_pkg")
debian_config=$cache/kernel-src/config-$image_pkg-$image_version
if [ ! -s "$debian_config" ]; then
	dpkg-deb --fsys-tarfile "$image_deb" | tar -xO --wildcards './boot/config-*' >"$debian_config.tmp"
	[ -s "$debian_config.tmp" ] || die "$image_deb holds no /boot/config-*"
	mv "$debian_config.tmp" "$debian_config"
fi
# The config of another upstream release still configures this tree
# (olddefconfig fills what is new), but then it is not quite Debian's.
[ "$image_version" = "$src_version" ] ||
	log "note: the config is $image_pkg $image_version's, the source $srcpkg $src_version"
step_end

# --- Source tree -----------------------------------------------------------------
kp_series "$here"
step_begin "source tree" >&2
mkdir -p "$work"
kp_source_tree "$srcpkg" "$src_version" "$tarball" "$fresh"
step_end

# --- Configuration -----------------------------------------------------------------
# kmake DIR ARGS... - make in the source tree, output in DIR.  LOCALVERSION
# is set (empty) so that setlocalversion adds no "+" for the git tree: the
# suffix is CONFIG_LOCALVERSION's alone.
kmake() {
	local out=$1
	shift
	make -C "$src" O="$out" LOCALVERSION= "$@"
}

# configure DIR - DIR/.config from Debian's, with the changes listed at the
# top, once per (Debian config, series, suffix).
configure() {
	local out=$1 id line
	mkdir -p "$out"
	# The toolchain is part of it: Kconfig probes the compilers.
	id=$(cat "$debian_config" "$src/.git/vgicd-series" \
		<(echo "$localversion $CROSS_COMPILE $CROSS_COMPILE_COMPAT") \
		<("${CROSS_COMPILE}gcc" --version | head -n1) | sha256sum)
	if [ -f "$out/.config" ] && [ "$(cat "$out/.vgicd-config" 2>/dev/null)" = "$id" ]; then
		return 0
	fi
	log "configuring $out: Debian's $image_pkg config, CONFIG_LOCALVERSION=$localversion, throwaway signing key"
	cp "$debian_config" "$out/.config"
	"$src/scripts/config" --file "$out/.config" \
		--set-str LOCALVERSION "$localversion" \
		--disable LOCALVERSION_AUTO \
		--set-str MODULE_SIG_KEY certs/signing_key.pem \
		--set-str SYSTEM_TRUSTED_KEYS "" \
		--set-str SYSTEM_REVOCATION_KEYS ""
	kmake "$out" -s olddefconfig >"$out/config.log" 2>&1 ||
		{ cat "$out/config.log" >&2; die "olddefconfig failed"; }
	for line in "CONFIG_LOCALVERSION=\"$localversion\"" \
		    'CONFIG_MODULE_SIG_KEY="certs/signing_key.pem"' \
		    'CONFIG_SYSTEM_TRUSTED_KEYS=""'; do
		grep -qx -- "$line" "$out/.config" || die "$line did not survive olddefconfig"
	done
	# What olddefconfig changed against Debian's (besides the above):
	# mostly CC_HAS_*/GCC_* probes when this gcc is not trixie's.
	diff <(grep -E '^CONFIG_|^# CONFIG_.* is not set' "$debian_config" | sort) \
	     <(grep -E '^CONFIG_|^# CONFIG_.* is not set' "$out/.config" | sort) |
		grep -E '^[<>]' >"$out/config-changes.txt" || true
	log "olddefconfig: $(sed -E 's/^[<>] (# )?(CONFIG_[A-Za-z0-9_]+).*/\2/' "$out/config-changes.txt" |
		sort -u | wc -l) options differ from Debian's config ($out/config-changes.txt)"
	echo "$id" >"$out/.vgicd-config"
}

step_begin "configuration" >&2
configure "$build"
# What setlocalversion will make of it (LOCALVERSION_AUTO off, LOCALVERSION
# empty); `make kernelrelease` itself needs a prepared tree.
release=$(kmake "$build" -s kernelversion)$localversion
# Debian's version (6.12.117-1) with the suffix: 6.12.117-1+vgicd1.
pkgversion=$src_version+${localversion#[+-]}
step_end

# The build's variables: mkdebian and dpkg-buildpackage read them from the
# environment.
deb_env=(KDEB_PKGVERSION="$pkgversion" KDEB_CHANGELOG_DIST=trixie
	 DEBFULLNAME="vgicd kernel build" DEBEMAIL=build@vgicd.invalid)
if [ "$with_dbg" = 0 ]; then
	deb_env+=(DEB_BUILD_PROFILES=pkg.linux-upstream.nokerneldbg)
fi

# --- Measure ---------------------------------------------------------------------
mdir=$work/measure
mbuild=$mdir/build

# list_objects - $mdir/objects.txt (one compiled object a line),
# modules.txt (one module a line), dtbs.txt: kbuild's own lists, every
# directory's Makefile evaluated by scripts/Makefile.build with the
# configuration, the way `make all` and `make dtbs` walk them.
list_objects() {
	cat >"$mdir/print.mk" <<'EOF'
# Read after scripts/Makefile.build: its lists are final here.
vgicd-objects:
	$(info O $(filter %.o,$(real-obj-y) $(real-obj-m) $(lib-y)))
	$(info M $(filter %.o,$(obj-m)))
	$(info A $(filter %.dtb %.dtbo,$(always-y)))
	$(info D $(subdir-ym))
	@:
EOF
	cat >"$mdir/walk.sh" <<'EOF'
# Run by `make run-command` (kbuild's exported environment, in the output
# folder): breadth first, each level's directories in parallel.
set -eu
out=$1 jobs=$2 mk=$3
rm -rf "$out/dirs"; mkdir -p "$out/dirs"
level=". arch/arm64/boot/dts"
while [ -n "$level" ]; do
	printf '%s\n' $level | xargs -P "$jobs" -I{} sh -c \
		'f=d-$(echo "$2" | tr / @); $1 -s -f "$srctree/scripts/Makefile.build" -f "$3" obj="$2" need-builtin=1 need-modorder=1 need-dtbslist=1 vgicd-objects >"$4/dirs/$f" 2>"$4/dirs/e$f"' \
		sh "$MAKE" {} "$mk" "$out"
	level=$(for d in $level; do sed -n 's/^D //p' "$out/dirs/d-$(echo "$d" | tr / @)"; done | tr ' ' '\n' | sed '/^$/d' | sort -u)
done
EOF
	# CC as in prepare: another one would make kbuild configure again.
	kmake "$mbuild" CC="$mdir/cc" run-command \
		KBUILD_RUN_COMMAND="sh $mdir/walk.sh $mdir $jobs $mdir/print.mk" >&2 ||
		{ echo "listing the objects failed" >&2; return 1; }
	cat "$mdir"/dirs/ed-* >"$mdir/walk-errors.txt" 2>/dev/null || true
	sed -n 's/^O //p' "$mdir"/dirs/d-* | tr ' ' '\n' | sed '/^$/d' | sort -u >"$mdir/objects.txt"
	sed -n 's/^M //p' "$mdir"/dirs/d-* | tr ' ' '\n' | sed '/^$/d' | sort -u >"$mdir/modules.txt"
	sed -n 's/^A //p' "$mdir"/dirs/d-* | tr ' ' '\n' | sed '/^$/d' | sort -u >"$mdir/dtbs.txt"
	# An empty list would make the sample's make a full build.
	[ "$(wc -l <"$mdir/objects.txt")" -gt 1000 ] ||
		{ echo "kbuild listed only $(wc -l <"$mdir/objects.txt") objects ($mdir/walk-errors.txt)" >&2; return 1; }
	log "kbuild lists $(wc -l <"$mdir/objects.txt") objects, $(wc -l <"$mdir/modules.txt") modules, $(wc -l <"$mdir/dtbs.txt") device trees ($(find "$mdir/dirs" -name 'd-*' | wc -l) directories)"
}

# measure_cpu FILE CMD... - run CMD; FILE gets "user system wall" seconds
# of it and all its children.
measure_cpu() {
	local out=$1
	shift
	/usr/bin/time -f '%U %S %e' -o "$out" "$@"
}

# timed_make NAME ARGS... - make in the measure tree under the heavy-work
# lock through the timing compiler: $mdir/time-NAME holds the CPU of the
# whole make, $mdir/cc-NAME.log each compiler run, $mdir/NAME.log the output.
timed_make() {
	local name=$1
	shift
	VGICD_CC_LOG=$mdir/cc-$name.log heavy measure_cpu "$mdir/time-$name" \
		make -C "$src" O="$mbuild" LOCALVERSION= CC="$mdir/cc" -j"$jobs" "$@" \
		>"$mdir/$name.log" 2>&1
}

# measure_install_sample - what `modules_install` does to each module beyond
# the compile (strip --strip-debug, sign-file, xz as CONFIG_MODULE_COMPRESS_XZ
# does), timed on 40 of Debian's own modules, decompressed.  Their debug
# info is gone (Debian's are stripped), so the strip is the cheap part here.
measure_install_sample() {
	local d=$mdir/install-sample f
	rm -rf "$d"
	mkdir -p "$d"
	dpkg-deb --fsys-tarfile "$image_deb" | tar -t | grep '\.ko\.xz$' |
		shuf -n 40 --random-source=<(yes vgicd) >"$d/list"
	dpkg-deb --fsys-tarfile "$image_deb" | tar -C "$d" -x -T "$d/list"
	find "$d" -name '*.ko.xz' -exec xz -d {} +
	find "$d" -name '*.ko' >"$d/kos"
	xargs du -cb <"$d/kos" | tail -n1 | cut -f1 >"$d/bytes"
	measure_cpu "$mdir/time-install" sh -c '
		while read -r f; do
			'"${CROSS_COMPILE}"'strip --strip-debug "$f"
			"$1/scripts/sign-file" sha256 "$1/certs/signing_key.pem" "$1/certs/signing_key.x509" "$f"
			xz --check=crc32 --lzma2=dict=1MiB -f "$f"
		done <"$2"' sh "$mbuild" "$d/kos"
}

# measure_btf_sample - BTF: Debian's config has DEBUG_INFO_BTF(_MODULES),
# so pahole turns the DWARF of vmlinux and of every module into BTF.
# Without a vmlinux, time it on copies of 30 sampled objects, each encoded
# on its own with the kernel's PAHOLE_FLAGS: pahole's work follows the
# DWARF it reads, so per object it stands for the whole build's.
measure_btf_sample() {
	local d=$mdir/btf-sample flags
	rm -rf "$d"
	mkdir -p "$d"
	flags=$(kmake "$mbuild" -s CC="$mdir/cc" run-command KBUILD_RUN_COMMAND='echo $$PAHOLE_FLAGS')
	head -n 30 "$mdir/sample.txt" | while read -r o; do
		[ -f "$mbuild/$o" ] && cp "$mbuild/$o" "$d/$(echo "$o" | tr / @)"
	done
	echo "$flags" >"$d/flags"
	# shellcheck disable=SC2086 # the flags are words
	measure_cpu "$mdir/time-btf" sh -c 'n=0; for f in "$1"/*.o; do
		LLVM_OBJCOPY='"${CROSS_COMPILE}"'objcopy pahole -J '"$flags"' "$f" >/dev/null 2>&1 && n=$((n+1)); done
		echo $n >"$1/encoded"' sh "$d"
}

# measure_report - the estimate, from the files the steps above wrote.
measure_report() {
	local n_obj n_mod n_dtb
	n_obj=$(wc -l <"$mdir/objects.txt")
	n_mod=$(wc -l <"$mdir/modules.txt")
	n_dtb=$(wc -l <"$mdir/dtbs.txt")
	# Which sampled objects were built (a target kbuild cannot make alone
	# is left out of the mean, and counted).
	while read -r o; do
		if [ -f "$mbuild/$o" ]; then echo "$o $(stat -c %s "$mbuild/$o")"; fi
	done <"$mdir/sample.txt" >"$mdir/sample-built.txt"
	awk -v n_obj="$n_obj" -v n_mod="$n_mod" -v n_dtb="$n_dtb" -v jobs="$jobs" \
	    -v sampled="$(wc -l <"$mdir/sample.txt")" \
	    -v dtbs_sampled="$(wc -l <"$mdir/sample-dtbs.txt")" \
	    -v t_prepare="$(cat "$mdir/time-prepare")" \
	    -v t_sample="$(cat "$mdir/time-sample")" \
	    -v t_noop="$(cat "$mdir/time-noop")" \
	    -v t_dtbs="$(cat "$mdir/time-dtbs")" \
	    -v t_dtbs_noop="$(cat "$mdir/time-dtbs-noop")" \
	    -v t_extmod="$(cat "$mdir/time-extmod" 2>/dev/null || echo "0 0 0")" \
	    -v t_install="$(cat "$mdir/time-install" 2>/dev/null || echo "0 0 0")" \
	    -v t_btf="$(cat "$mdir/time-btf" 2>/dev/null || echo "0 0 0")" \
	    -v btf_n="$(cat "$mdir/btf-sample/encoded" 2>/dev/null || echo 0)" \
	    -v modcc="$(awk '$1 ~ /\.mod\.o$/ { print ($2 > 0 ? $2 : $3); exit }' "$mdir/cc-extmod.log" 2>/dev/null)" '
	function cpu(t,  a) { split(t, a, " "); return a[1] + a[2] }
	function wall(t,  a) { split(t, a, " "); return a[3] }
	function hm(x) { return sprintf("%dh%02dm", int(x / 3600), int((x % 3600) / 60 + 0.5)) }
	FILENAME == ARGV[1] { built[$1] = 1; nb++; bytes += $2; next }
	# the timing compiler log: one line per compiler run on a sampled object
	# (its CPU; its wall time where an older run recorded no CPU: one
	# compiler process on a core of its own, the lock held, is the same)
	$1 in built { c[$1] += ($2 > 0 ? $2 : $3) }
	END {
		for (o in c) { k++; s += c[o]; ss += c[o] * c[o] }
		mean_cc = s / k; sd = sqrt((ss - s * s / k) / (k - 1))
		# the estimator: the whole make (compiler, genksyms, fixdep, the
		# directories make descends) minus the same make with nothing
		# to do, per object built
		per_obj = (cpu(t_sample) - cpu(t_noop)) / nb
		rel_se = sd / sqrt(k) / mean_cc * sqrt(1 - k / n_obj)
		per_dtb = (cpu(t_dtbs) - cpu(t_dtbs_noop)) / dtbs_sampled
		split(t_install, ti, " ")
		printf "Measured (this machine, %d jobs):\n", jobs
		printf "  make prepare                 %7.0f s CPU, %5.0f s wall\n", cpu(t_prepare), wall(t_prepare)
		printf "  objects the full build compiles (kbuild lists): %d; modules %d; device trees %d\n", n_obj, n_mod, n_dtb
		printf "  sample: %d random objects, %d built alone; %.0f s CPU (%.0f s wall), %.0f s of it the no-op make\n", sampled, nb, cpu(t_sample), wall(t_sample), cpu(t_noop)
		printf "  per object: %.2f s CPU (compiler alone %.2f s, sd %.2f s, %d objects); standard error of the mean %.1f %%\n", per_obj, mean_cc, sd, k, 100 * rel_se
		printf "  per device tree: %.3f s CPU (%d sampled)\n", per_dtb, dtbs_sampled
		if (modcc != "") printf "  per module, its .mod.o: %.2f s CPU (one external module)\n", modcc
		if (ti[1] + ti[2] > 0) printf "  per module, strip + sign + xz at install: %.3f s CPU (40 of Debian'"'"'s modules)\n", (ti[1] + ti[2]) / 40
		printf "  object size: %.2f MB on average (debug info included)\n", bytes / nb / 1e6
		if (btf_n > 0) printf "  BTF (pahole -J) per object: %.3f s CPU (%d sampled objects)\n", cpu(t_btf) / btf_n, btf_n
		comp = n_obj * per_obj
		dt = n_dtb * per_dtb
		mo = (modcc != "" ? n_mod * modcc : 0)
		inst = n_mod * (ti[1] + ti[2]) / 40
		btf = (btf_n > 0 ? n_obj * cpu(t_btf) / btf_n : 0)
		# What runs in parallel: every compile, each module'"'"'s BTF and
		# link.  What does not: modules_install (one make, module after
		# module) and the vmlinux links.
		par = cpu(t_prepare) + comp + dt + mo + btf
		printf "\nEstimate of a full bindeb-pkg:\n"
		printf "  objects   %8.0f s CPU  (+/- %.0f s, 2 standard errors)\n", comp, 2 * rel_se * comp
		printf "  .mod.o    %8.0f s CPU  (%d modules)\n", mo, n_mod
		printf "  BTF       %8.0f s CPU  (vmlinux and the modules)\n", btf
		printf "  dtbs      %8.0f s CPU\n", dt
		printf "  prepare   %8.0f s CPU\n", cpu(t_prepare)
		printf "  install   %8.0f s CPU  (modules_install: strip, sign, xz; one after another)\n", inst
		printf "  total     %8.0f s CPU = %s\n", par + inst, hm(par + inst)
		printf "  not measured: the vmlinux links (three, for kallsyms), modpost, the .ko links, dpkg-deb\n"
		printf "  object files alone: %.0f GB in the build folder (the .ko files and vmlinux repeat most of it)\n", n_obj * bytes / nb / 1e9
		printf "  wall on %d cores (the parallel part / %d, install serial): %s\n", jobs, jobs, hm(par / jobs + inst)
		printf "  wall on 32 cores as fast as these: %s plus the unmeasured serial links\n", hm(par / 32 + inst)
	}' "$mdir/sample-built.txt" "$mdir/cc-sample.log"
}

if [ "$mode" = report ]; then
	[ -s "$mdir/time-sample" ] || die "no --measure results in $mdir"
	measure_report | tee "$mdir/report.txt"
	exit 0
fi

if [ "$mode" = measure ]; then
	step_begin "measure: configuration" >&2
	configure "$mbuild"
	# A wrapper around the compiler records each run's CPU time (cc1 and as
	# included) and output; prepare uses it too, so the compiler command
	# does not change between the steps (that would re-run syncconfig).
	cat >"$mdir/cc" <<EOF
#!/bin/bash
# the compiler, timed: "<output> <user+sys CPU s> <wall s>" per run
log=\${VGICD_CC_LOG:-/dev/null}
out=-
prev=
for a in "\$@"; do [ "\$prev" = -o ] && out=\$a; prev=\$a; done
t0=\$(date +%s.%N)
rc=0
${CROSS_COMPILE}gcc "\$@" || rc=\$?
t1=\$(date +%s.%N)
# times in this shell: in a pipe or \$(...) it would run in a subshell,
# which has no children to report.
tf=\$(mktemp)
times >"\$tf"
awk -v o="\$out" -v w="\$(echo "\$t1 - \$t0" | bc)" '
	function s(x) { split(x, p, "m"); sub("s", "", p[2]); return p[1] * 60 + p[2] }
	NR == 2 { printf "%s %.3f %.3f\n", o, s(\$1) + s(\$2), w }' "\$tf" >>"\$log"
rm -f "\$tf"
exit \$rc
EOF
	chmod +x "$mdir/cc"
	step_end

	# Each step is kept once measured (its time file is newer than the
	# configuration), so a run cut short goes on where it stopped, and
	# the lock is not taken again for what is known.
	measured() { [ "$mdir/time-$1" -nt "$mbuild/.vgicd-config" ]; }

	step_begin "measure: make prepare" >&2
	log "make prepare scripts_dtc (holding the heavy-work lock)"
	if measured prepare; then
		# Only bring the tree up to date (a listing or another CC may
		# have touched the configuration's files).
		timed_make prepare-again prepare scripts_dtc ||
			{ tail -n 30 "$mdir/prepare-again.log" >&2; die "make prepare failed"; }
	else
		timed_make prepare prepare scripts_dtc ||
			{ tail -n 30 "$mdir/prepare.log" >&2; rm -f "$mdir/time-prepare"; die "make prepare failed"; }
	fi
	step_end

	step_begin "measure: list the objects" >&2
	if ! [ "$mdir/objects.txt" -nt "$mbuild/.vgicd-config" ]; then
		heavy list_objects || { rm -f "$mdir/objects.txt"; die "could not list the build's objects"; }
	fi
	step_end

	step_begin "measure: sample" >&2
	# A reproducible random sample (fixed seed): rerunning measures the same
	# objects.
	shuf -n "$sample" --random-source=<(yes vgicd) "$mdir/objects.txt" >"$mdir/sample.txt.new"
	shuf -n 20 --random-source=<(yes vgicd) "$mdir/dtbs.txt" >"$mdir/sample-dtbs.txt"
	[ -s "$mdir/sample.txt.new" ] && [ -s "$mdir/sample-dtbs.txt" ] || die "empty sample"
	if ! cmp -s "$mdir/sample.txt.new" "$mdir/sample.txt"; then
		rm -f "$mdir/time-sample" "$mdir/time-noop"
	fi
	mv "$mdir/sample.txt.new" "$mdir/sample.txt"
	if ! measured sample; then
		log "compiling $sample random objects (make -j$jobs -k, holding the heavy-work lock)"
		: >"$mdir/cc-sample.log"
		# shellcheck disable=SC2046 # one target a word
		timed_make sample -k $(cat "$mdir/sample.txt") || true
		# The same make again, every target up to date: its CPU is the
		# fixed overhead (make reading the tree's Makefiles) to subtract.
		# shellcheck disable=SC2046
		timed_make noop -k $(cat "$mdir/sample.txt") || true
	fi
	if ! measured dtbs; then
		log "compiling 20 random device trees"
		# shellcheck disable=SC2046
		timed_make dtbs -k $(sed 's#^arch/arm64/boot/dts/##' "$mdir/sample-dtbs.txt") || true
		# shellcheck disable=SC2046
		timed_make dtbs-noop -k $(sed 's#^arch/arm64/boot/dts/##' "$mdir/sample-dtbs.txt") || true
	fi
	if ! measured extmod; then
		# One external module: what each of the thousands of modules
		# adds after its objects (modpost's .mod.c compiled; the .ko
		# link fails here, without the vmlinux it checks against).
		mkdir -p "$mdir/extmod"
		printf '%s\n' '#include <linux/module.h>' 'MODULE_LICENSE("GPL");' >"$mdir/extmod/probe.c"
		echo 'obj-m := probe.o' >"$mdir/extmod/Kbuild"
		rm -f "$mdir/extmod/"*.o "$mdir/extmod/"*.ko
		timed_make extmod M="$mdir/extmod" KBUILD_MODPOST_WARN=1 modules || true
	fi
	if ! measured install; then
		log "timing strip + sign + xz on 40 of Debian's modules"
		# sign-file is built by prepare, the key by certs/.
		timed_make certs certs/ || true
		heavy measure_install_sample || log "install sample failed (skipped)"
	fi
	if ! measured btf; then
		log "timing pahole -J (BTF) on 30 of the sampled objects"
		heavy measure_btf_sample || log "BTF sample failed (skipped)"
	fi
	step_end
	print_step_times >&2
	measure_report | tee "$mdir/report.txt"
	exit 0
fi

# --- Build -------------------------------------------------------------------------
# KBUILD_IMAGE: /boot/vmlinuz is then the uncompressed Image, as in
# Debian's package (arm64's default for bindeb-pkg is Image.gz): a PE file
# that GRUB boots and that sbsign can sign for Secure Boot.
build_cmd=(env "${deb_env[@]}" make -C "$src" O="$build" LOCALVERSION= -j"$jobs"
	   KBUILD_IMAGE=arch/arm64/boot/Image bindeb-pkg)
if [ "$mode" = dry-run ]; then
	log "kernel release $release, package version $pkgversion"
	log "would run (holding the heavy-work lock):"
	printf '%q ' ARCH="$ARCH" CROSS_COMPILE="$CROSS_COMPILE" CROSS_COMPILE_COMPAT="$CROSS_COMPILE_COMPAT" \
		"${build_cmd[@]}" >&2
	echo >&2
	exit 0
fi

step_begin "make bindeb-pkg" >&2
log "building $release (make -j$jobs bindeb-pkg; holding the heavy-work lock; log $build/build.log)"
# mkdebian writes the packages next to the output folder: into $work.
rm -f "$work"/*.deb "$work"/*.buildinfo "$work"/*.changes
heavy "${build_cmd[@]}" >"$build/build.log" 2>&1 ||
	{ tail -n 40 "$build/build.log" >&2; die "bindeb-pkg failed, see $build/build.log"; }
step_end
# The throwaway module-signing key: the packaged modules are signed and the
# kernel trusts its certificate; whoever held the private key could sign
# modules this kernel loads under lockdown.  A rebuild makes a new one.
rm -f "$build/certs/signing_key.pem"

{
	log "done: $release ($srcpkg $src_version + ${#series[@]} patches, $image_pkg's config)"
	print_step_times
	log "  time total: $(( $(date +%s) - t_start ))s"
	log "install on the host: apt install ./linux-image-${release}_${pkgversion}_arm64.deb (docs/operations.md)"
} >&2
for f in "$work"/*.deb; do
	printf 'DEB=%s\n' "$f"
done
