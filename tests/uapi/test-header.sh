#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-header.sh - include/vgicd/kvm-vgic-batch.h never takes another
# layout quietly: compiled after a system header that defines
# KVM_DEV_ARM_VGIC_GRP_BATCH_REGS, it builds only when that header's two
# structures are this project's UAPI, field for field, and stops with an
# error naming the problem otherwise.  Each case is compiled for real with
# the project's compiler.
#
#   test-header.sh INCLUDE_DIR CC [CC ARGS...]
set -u
case ${1:-} in
-h | --help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac
inc=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# case NAME EXPECT(ok|error text) - compile stdin after the project's header
case_() {
	name=$1 expect=$2
	{ cat; printf '#include "vgicd/kvm-vgic-batch.h"\nint main (void) { return 0; }\n'; } >"$tmp/$name.c"
	shift 2
	if "$@" -std=gnu11 -Werror -I"$inc" -c "$tmp/$name.c" -o "$tmp/$name.o" 2>"$tmp/$name.err"; then
		got=ok
	else
		got=error
	fi
	if [ "$expect" = ok ]; then
		[ $got = ok ] && echo "ok - $name: builds" ||
			{ echo "not ok - $name: should build"; sed 's/^/#   /' "$tmp/$name.err"; fails=$((fails + 1)); }
	else
		if [ $got = error ] && grep -qF -- "$expect" "$tmp/$name.err"; then
			echo "ok - $name: refused (\"$expect\")"
		else
			echo "not ok - $name: should stop with \"$expect\""
			sed 's/^/#   /' "$tmp/$name.err"
			fails=$((fails + 1))
		fi
	fi
}

echo "1..4"

# No system definition: the header's own.
case_ plain ok "$@" </dev/null

# Another batch series' header: same macro and group, its own layout.
case_ foreign "kvm_vgic_batch_entry.group is not the layout vgicd speaks" "$@" <<'C'
#include <linux/types.h>
#define KVM_DEV_ARM_VGIC_GRP_BATCH_REGS 10
struct kvm_vgic_batch_entry { __u64 attr; __u32 group, reserved; __u64 value; };
struct kvm_vgic_batch { __u32 nr_entries, flags, nr_done, reserved; __u64 entries; };
C

# This project's UAPI from the installed headers of a patched kernel.
case_ patched-kernel ok "$@" <<'C'
#include <linux/types.h>
#define KVM_DEV_ARM_VGIC_GRP_BATCH_REGS	10
struct kvm_vgic_batch_entry { __u32 group; __u32 reserved; __u64 attr; __u64 value; };
struct kvm_vgic_batch { __u32 nr_entries, flags, nr_done, reserved; __u64 entries; };
C

# The first version of this project's series (a per-entry error, an ABI
# attribute): not the layout this build speaks.
case_ first-version "reserved" "$@" <<'C'
#include <linux/types.h>
#define KVM_DEV_ARM_VGIC_GRP_BATCH_REGS	10
#define KVM_VGIC_BATCH_ABI_VERSION	1
struct kvm_vgic_batch_entry { __u32 group; __s32 error; __u64 attr; __u64 value; };
struct kvm_vgic_batch { __u32 nr_entries, flags, nr_done, reserved; __u64 entries; };
C

[ $fails -eq 0 ]
