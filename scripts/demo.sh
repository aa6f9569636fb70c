#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# demo.sh - README's demo: installs what it needs, builds, and moves a
# simulated 160-vCPU VM's vGIC state one register per ioctl and in batches.
#
#   bash scripts/demo.sh [--vcpus N] [--irqs N] [--runs N]
#
#   --vcpus N   the VM's vCPUs (160)
#   --irqs N    its IRQs, the private ones included (992)
#   --runs N    runs per path, of which the medians are shown (7)
#
# The options are the demo program's (demo/vgicd-demo.c), passed on.  The
# build goes to _build/gcc; a cold one takes about 1.5 minutes on 2 cores
# and says how far it is.
set -euo pipefail
case ${1:-} in
-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
. "$(dirname "$0")/lib/common.sh"
cd "$VGICD_ROOT"

echo "demo.sh: the packages the build needs (PKGS_BUILD)"
need_packages "${PKGS_BUILD[@]}"
echo "demo.sh: configuring $VGICD_BUILD/gcc (meson setup)"
meson_setup "$VGICD_BUILD/gcc"
echo "demo.sh: building (ninja; cold, about 1.5 minutes on 2 cores)"
if [ -t 1 ]; then
	# ninja's own status line, rewritten in place.
	ninja -C "$VGICD_BUILD/gcc"
else
	# A log gets a line every 10 % (and whatever the compiler says).
	ninja -C "$VGICD_BUILD/gcc" | awk '
		match($0, /^\[[0-9]+\/[0-9]+\]/) {
			split(substr($0, 2, RLENGTH - 2), s, "/")
			n = s[1] + 0; total = s[2] + 0
			step = int(n * 10 / total)
			if (n == total || step > last) { printf "  %d of %d steps\n", n, total; last = step }
			fflush(); next
		}
		/^ninja: (Entering|no work)/ { next }
		{ print; fflush() }'
fi
echo
exec "$VGICD_BUILD/gcc/demo/vgicd-demo" "$@"
