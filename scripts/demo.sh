#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# demo.sh - README's demo: installs what it needs, builds, and moves a
# simulated 160-vCPU VM's vGIC state one register per ioctl and in batches.
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"
cd "$VGICD_ROOT"

need_packages "${PKGS_BUILD[@]}"
if [ -f "$VGICD_BUILD/gcc/build.ninja" ]; then
	meson setup --reconfigure "$VGICD_BUILD/gcc" >/dev/null
else
	meson setup "$VGICD_BUILD/gcc" >/dev/null
fi
ninja -C "$VGICD_BUILD/gcc" >/dev/null
echo
exec "$VGICD_BUILD/gcc/demo/vgicd-demo" "$@"
