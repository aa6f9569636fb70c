# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# tests/nested/lib/qemu.sh - the QEMU the nested tier boots L1 with, when it
# is not the host's.  Sourced, after common.sh.
#
#   nested_qemu_trixie OUT   sets NESTED_QEMU to OUT/qemu-system-aarch64, a
#                            wrapper that runs Debian 13's QEMU (10.0) from a
#                            root kept in $NESTED_CACHE/qemu-trixie-KEY
#
# Why: the host's QEMU (Debian 12: 7.2) emulates no FEAT_NV2, so the L1
# kernel's KVM offers no EL2-enabled vCPUs (KVM_CAP_ARM_EL2) and the 7.3
# selftest's EL2 case can only skip.  Debian 13's QEMU emulates FEAT_NV2 in
# -cpu max; with NESTED_APPEND=kvm-arm.mode=nested L1's KVM then offers it.
#
# Theory of operation: nothing of trixie is installed on the host.  A
# minimal trixie root holding qemu-system-arm is made once with mmdebstrap
# (about 250 MB; deb_cached_root keeps it, keyed on the mirror lines), and
# the wrapper runs its qemu-system-aarch64 through the root's own dynamic
# loader and libraries, with -L pointing at the root's firmware folder and
# QEMU_MODULE_DIR at its modules (the built-in path holds the host's).  No
# chroot: the kernel, initrd and log paths QEMU opens stay the host's.

nested_qemu_trixie() {
	local out=$1 lines key root
	need_packages mmdebstrap
	mapfile -t lines < <(deb_suite_lines trixie)
	key=$(printf '%s\n' qemu-system-arm "${lines[@]}" | sha256sum | cut -c1-12)
	build_qemu_root() {
		mmdebstrap --variant=apt "${DEB_SCRATCH_ROOT_OPTS[@]}" \
			--include=qemu-system-arm trixie "$1" "${lines[@]}" >&2
	}
	root=$(deb_cached_root "$NESTED_CACHE/qemu-trixie-$key" build_qemu_root)
	mkdir -p "$out"
	cat >"$out/qemu-system-aarch64" <<EOF
#!/bin/sh
# Debian 13's QEMU from $root (tests/nested/lib/qemu.sh);
# its modules from there too, not the host's (another QEMU's).
QEMU_MODULE_DIR="$root/usr/lib/x86_64-linux-gnu/qemu" exec "$root/lib64/ld-linux-x86-64.so.2" \\
	--library-path "$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu" \\
	"$root/usr/bin/qemu-system-aarch64" -L "$root/usr/share/qemu" "\$@"
EOF
	chmod 0755 "$out/qemu-system-aarch64"
	NESTED_QEMU=$out/qemu-system-aarch64
	"$NESTED_QEMU" --version | head -n1 ||
		nested_die "the QEMU of $root does not run"
}
