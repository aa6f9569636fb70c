#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# build-qemu.sh - the whole minimal qemu-system-aarch64 with the series and
# vgicd, for the nested tier (a KVM-only arm64 host inside TCG).
#
#   bash qemu-patch/build-qemu.sh [--base 10.0|10.2] [OUTDIR]
#
# Runs build-check.sh --full (fetch, apply, configure, link: about 4 min of
# ninja -j2 when ccache is cold, seconds when warm) for the base's series
# (lib.sh's qp_base: 10.0, the default, or 10.2), then puts into OUTDIR
# (default ${VGICD_CACHE:-/var/cache/vgicd}/qemu/out, or .../qemu/BASE/out):
#   qemu-system-aarch64   stripped; needs libz, libfdt, libglib-2.0, libc
#                         and libvgicd.so.0 (no rpath: put it in the
#                         guest's library path, or use LD_LIBRARY_PATH)
#   libvgicd.so.0         the project's aarch64 libvgicd (needs libgio-2.0)
#   vgicd/                the whole aarch64 install of the project
#                         (vgicd, vgicctl, data files), for the guest
set -euo pipefail
. "$(dirname "$0")/lib.sh"

case ${1:-} in
-h | --help) sed -n 's/^#   //p' "$0" | sed -n '1p'; exit 0 ;;
--base) qp_base "${2:-}" || exit 2; shift 2 ;;
esac
OUT=${1:-$QP_BASE_CACHE/out}

"$QP_DIR/build-check.sh" --base "$QP_BASE" --full

mkdir -p "$OUT"
aarch64-linux-gnu-strip -o "$OUT/qemu-system-aarch64.new" \
	"$QP_BASE_CACHE/check/build-vgicd/qemu-system-aarch64"
mv "$OUT/qemu-system-aarch64.new" "$OUT/qemu-system-aarch64"
lib=$(find "$QP_LIBVGICD" -name 'libvgicd.so.0.*' | head -n 1)
cp -L "$lib" "$OUT/libvgicd.so.0"
rm -rf "$OUT/vgicd"
cp -a "$QP_LIBVGICD" "$OUT/vgicd"
echo
echo "qemu-system-aarch64 and libvgicd.so.0 are in $OUT:"
ls -l "$OUT"
aarch64-linux-gnu-readelf -d "$OUT/qemu-system-aarch64" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/  needs \1/p'
