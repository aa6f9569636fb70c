# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# tests/nested/lib/kernel.sh - the arm64 kernels the nested tier boots.
# Sourced, after common.sh.
#
#   NESTED_BASE             the series' base the tier boots: 6.12 (the
#                           default, Debian 13), 7.3 (trixie-backports) or
#                           6.1 (Debian 12); set before the calls below
#   nested_stock_kernel     sets STOCK_IMAGE, STOCK_VERSION, STOCK_CONFIG:
#                           Debian's linux-image-*-arm64 of the base's suite
#                           (KVM built in), the unpatched baseline
#   nested_debian_config_check
#                           the patched kernel's Debian options
#                           (kernel-patch/config/debian-BASE.config) are the
#                           stock kernel's
#   nested_patched_kernel   sets PATCHED_IMAGE, PATCHED_SELFTEST and
#                           PATCHED_PEERS (may be empty), or PATCHED_MISSING
#                           with the reason
#   nested_kernel_env FILE  the same three from FILE's last IMAGE=,
#                           SELFTEST= and PEERS= lines (build-kernel.sh's
#                           output, or a log that holds it)

# kernel_config_check CONFIG - the options the nested tier relies on must be
# built in (there are no modules in the initramfs).
kernel_config_check() {
	local cfg=$1 opt missing=()
	for opt in KVM SERIAL_AMBA_PL011 SERIAL_AMBA_PL011_CONSOLE BLK_DEV_INITRD DEVTMPFS \
		ARM_GIC_V3 ARM_GIC_V3_ITS UNIX MEMFD_CREATE; do
		grep -qx "CONFIG_$opt=y" "$cfg" || missing+=("$opt")
	done
	[ ${#missing[@]} -eq 0 ] || nested_die "$cfg: not built in: ${missing[*]}"
}

NESTED_BASE=${NESTED_BASE:-6.12}

# first_file GLOB-RESULTS... - the first of its arguments that is a file (a
# glob that matched nothing stays itself, and is not one).
first_file() {
	local f
	for f in "$@"; do
		[ -f "$f" ] && { echo "$f"; return 0; }
	done
	return 0
}

# nested_base_suite - the Debian suite whose arm64 kernel is the base's
# stock kernel (the suite build-kernel.sh takes the base's source from).
nested_base_suite() {
	case $NESTED_BASE in
	6.12) echo trixie ;;
	7.3) echo trixie-backports ;;
	6.1) echo bookworm ;; # and its updates: the host's own stanzas
	*) nested_die "unknown base $NESTED_BASE (6.12, 7.3 or 6.1)" ;;
	esac
}

nested_stock_kernel() {
	local pkg dep deb root suite
	suite=$(nested_base_suite)
	if [ "$suite" = "$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release)" ]; then
		# The host's release: its stanzas (security and updates too), as
		# build-kernel.sh takes the host's linux-source package.
		deb_apt_init "$suite-arm64" arm64
	else
		deb_apt_init "$suite-arm64" arm64 "$suite"
	fi
	deb_apt_update
	# The metapackage names the current ABI's image package.
	pkg=$(deb_depends linux-image-arm64 | grep -m1 '^linux-image-') ||
		nested_die "linux-image-arm64 (arm64) has no linux-image-* dependency"
	root="$NESTED_CACHE/kernels/$pkg"
	# Up to 6.12 the image package holds /boot/vmlinuz-V and
	# /boot/config-V; from 7.x on it depends on linux-binary-V (the kernel,
	# usr/lib/modules/V/vmlinuz) and linux-base-V (its config), which
	# come too.
	for dep in "$pkg" $(deb_depends "$pkg" | grep -E '^linux-(binary|base)-'); do
		deb=$(deb_download "$NESTED_CACHE/debs" "$dep")
		deb_extract "$deb" "$root/$dep"
		# KVM and everything the boot needs are built in: drop the
		# 290 MB of modules (the stamp keeps deb_extract from unpacking
		# them again).
		rm -rf "${root:?}/${dep:?}/lib/modules" "${root:?}/${dep:?}"/usr/lib/modules/*/kernel "${root:?}/${dep:?}/usr/share"
	done
	STOCK_IMAGE=$(first_file "$root"/*/boot/vmlinuz-* "$root"/*/usr/lib/modules/*/vmlinuz)
	[ -n "$STOCK_IMAGE" ] || nested_die "$pkg and its linux-binary-* hold no vmlinuz"
	STOCK_CONFIG=$(first_file "$root"/*/boot/config-* "$root"/*/usr/lib/modules/*/config)
	[ -n "$STOCK_CONFIG" ] || nested_die "$pkg and its linux-base-* hold no kernel config"
	kernel_config_check "$STOCK_CONFIG"
	STOCK_VERSION="$pkg $(deb_version "$pkg")"
}

# nested_debian_config_check - every option of the patched kernel's
# debian-BASE.config has the value it has in the stock kernel's config, so
# that the two kernels differ in the series, not in what a migration's
# ioctls pass through (hardening, LSMs, preemption, CPU features).
nested_debian_config_check() {
	local frag="$VGICD_ROOT/kernel-patch/config/debian-$NESTED_BASE.config" line key have bad=0
	while read -r line; do
		case $line in CONFIG_*) ;; *) continue ;; esac
		key=${line%%=*}
		have=$(grep -E "^$key=|^# $key is not set" "$STOCK_CONFIG" || echo "(absent)")
		if [ "$have" != "$line" ]; then
			echo "kernel config: $line, but Debian's $(basename "$STOCK_CONFIG") has $have" >&2
			bad=1
		fi
	done <"$frag"
	[ $bad = 0 ] || nested_die "kernel-patch/config/debian-$NESTED_BASE.config no longer follows Debian's kernel (above)"
	echo "kernel config: the $(grep -c '^CONFIG_' "$frag") options of debian-$NESTED_BASE.config are Debian's"
}

# nested_kernel_env FILE - see the top.
nested_kernel_env() {
	PATCHED_IMAGE=$(sed -n 's/^IMAGE=//p' "$1" | tail -n1)
	PATCHED_SELFTEST=$(sed -n 's/^SELFTEST=//p' "$1" | tail -n1)
	PATCHED_PEERS=$(sed -n 's/^PEERS=//p' "$1" | tail -n1)
}

# nested_patched_kernel - build the patched kernel with
# kernel-patch/build-kernel.sh (its last output lines are IMAGE=<path>,
# SELFTEST=<path> and PEERS=<folder>), or take NESTED_PATCHED_ENV (a file
# with those lines: scripts/test.sh's background build) or
# NESTED_PATCHED_IMAGE / NESTED_PATCHED_SELFTEST / NESTED_PATCHED_PEERS.
nested_patched_kernel() {
	local script="$VGICD_ROOT/kernel-patch/build-kernel.sh" log="$NESTED_OUT/build-kernel.log"
	PATCHED_IMAGE=${NESTED_PATCHED_IMAGE:-}
	PATCHED_SELFTEST=${NESTED_PATCHED_SELFTEST:-}
	PATCHED_PEERS=${NESTED_PATCHED_PEERS:-}
	PATCHED_MISSING=
	if [ -z "$PATCHED_IMAGE" ] && [ -n "${NESTED_PATCHED_ENV:-}" ]; then
		nested_kernel_env "$NESTED_PATCHED_ENV"
	fi
	if [ -z "$PATCHED_IMAGE" ]; then
		if [ ! -f "$script" ]; then
			PATCHED_MISSING="kernel-patch/build-kernel.sh is not in the tree"
			return 0
		fi
		# The script takes the heavy-work lock around its heavy steps itself.
		bash "$script" --base "$NESTED_BASE" >"$log" 2>&1 || { tail -n 30 "$log" >&2; nested_die "build-kernel.sh failed (log: $log)"; }
		nested_kernel_env "$log"
	fi
	[ -n "$PATCHED_IMAGE" ] && [ -f "$PATCHED_IMAGE" ] ||
		nested_die "no usable IMAGE= line from build-kernel.sh (log: ${NESTED_PATCHED_ENV:-$log})"
	[ -z "$PATCHED_SELFTEST" ] || [ -f "$PATCHED_SELFTEST" ] ||
		nested_die "build-kernel.sh: SELFTEST=$PATCHED_SELFTEST does not exist"
	[ -z "$PATCHED_PEERS" ] || [ -d "$PATCHED_PEERS" ] ||
		nested_die "build-kernel.sh: PEERS=$PATCHED_PEERS does not exist"
}
