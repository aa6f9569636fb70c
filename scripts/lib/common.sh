# SPDX-License-Identifier: LGPL-2.1-or-later
# common.sh - shared pieces of the project's scripts: timing, package
# installation, build directories.  Sourced, not run.

# Repository root and the folder for build output (ignored by git).
VGICD_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VGICD_BUILD=${VGICD_BUILD:-$VGICD_ROOT/_build}

step_begin() {
	STEP_NAME=$1
	STEP_T0=$(date +%s.%N)
	printf '\n==> %s\n' "$STEP_NAME"
}

step_end() {
	local t1
	t1=$(date +%s.%N)
	STEP_TIMES+=("$(printf '%-44s %7.1f s' "$STEP_NAME" "$(echo "$t1 - $STEP_T0" | bc)")")
}

print_step_times() {
	printf '\nWhere the time went:\n'
	printf '  %s\n' "${STEP_TIMES[@]}"
}

# need_packages PKG... - install the Debian packages that are missing.
# apt-get update runs at most once per script, and only if something is
# missing, so a warm machine pays nothing.
need_packages() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "missing packages: ${missing[*]} (run as root to install them)" >&2
		return 1
	fi
	if [ -z "${APT_UPDATED:-}" ]; then
		apt-get update -qq
		APT_UPDATED=1
	fi
	echo "installing: ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null
}

# enable_arm64 - add the arm64 foreign architecture (for the cross-build's
# -dev packages); forces an apt-get update on first use.
enable_arm64() {
	if ! dpkg --print-foreign-architectures | grep -qx arm64; then
		dpkg --add-architecture arm64
		APT_UPDATED=
	fi
}

BUILD_PACKAGES=(build-essential meson ninja-build pkg-config libglib2.0-dev libsystemd-dev
	libxml2-dev libvirt-dev libxml2-utils scdoc dbus systemd bc python3)
