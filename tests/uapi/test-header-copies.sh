#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-header-copies.sh - every copy of the batch UAPI says the same: the
# lines each kernel series adds to arch/arm64/include/uapi/asm/kvm.h (6.12,
# 7.3, 6.1) and the lines each QEMU series (10.0, 10.2) adds to its copy of
# that header (linux-headers/asm-arm64/kvm.h) must be identical, byte for byte, to the
# 6.12 series' (the one the nested tier boots).  A series that changes the
# UAPI in one place and not the others fails here, with the difference.
#
#   test-header-copies.sh SOURCE_DIR
set -u
case ${1:-} in
-h | --help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# added FILE_IN_DIFF PATCH... - the '+' lines of FILE's diffs, in order
added() {
	file=$1
	shift
	awk -v f="$file" '
		/^diff --git / { in_file = ($3 == "a/" f) ; next }
		in_file && /^\+\+\+ / { next }
		in_file && /^\+/ { print substr($0, 2) }
	' "$@"
}

ref="$src/kernel-patch"
added arch/arm64/include/uapi/asm/kvm.h "$ref"/0*.patch >"$tmp/ref"
echo "1..4"
if ! [ -s "$tmp/ref" ]; then
	echo "Bail out! the 6.12 series adds nothing to the UAPI header"
	exit 1
fi

n=0
check() {
	name=$1 file=$2
	shift 2
	n=$((n + 1))
	added "$file" "$@" >"$tmp/copy"
	if cmp -s "$tmp/ref" "$tmp/copy"; then
		echo "ok $n - $name: the same UAPI lines as the 6.12 series"
	else
		echo "not ok $n - $name: differs from the 6.12 series' UAPI lines"
		diff -u "$tmp/ref" "$tmp/copy" | sed 's/^/#   /'
		fails=$((fails + 1))
	fi
}

check "the 7.3 series" arch/arm64/include/uapi/asm/kvm.h "$src"/kernel-patch/7.3/0*.patch
check "the 6.1 series" arch/arm64/include/uapi/asm/kvm.h "$src"/kernel-patch/6.1/0*.patch
check "the QEMU 10.0 series" linux-headers/asm-arm64/kvm.h "$src"/qemu-patch/0*.patch
check "the QEMU 10.2 series" linux-headers/asm-arm64/kvm.h "$src"/qemu-patch/10.2/0*.patch

[ $fails -eq 0 ]
