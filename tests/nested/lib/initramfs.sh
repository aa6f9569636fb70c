# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# tests/nested/lib/initramfs.sh - build an arm64 initramfs (newc cpio) from a
# list of files, with the shared libraries their ELF files need found by an
# ldd-like walk of DT_NEEDED (readelf, so it works on any build host).
# Sourced.
#
#   initramfs_init "$stage"
#   initramfs_busybox "$stage" "$busybox_root/bin/busybox"
#   initramfs_elf "$stage" _build/aarch64/daemon/vgicd /bin/vgicd
#   initramfs_file "$stage" my-init /init 0755
#   initramfs_list "$stage" files.list        # lines: SRC DEST [elf|file] [MODE]
#   initramfs_pack "$stage" out.cpio
#
# Libraries are looked up in $INITRAMFS_LIBPATH (colon-separated), which
# defaults to the host's arm64 multiarch folders (the :arm64 packages the
# cross build installs); prepend build folders or unpacked .debs as needed.
# They are installed in /lib/aarch64-linux-gnu, which Debian's ld.so
# searches without an ld.so.cache; the interpreter goes where PT_INTERP says.

INITRAMFS_LIBPATH=${INITRAMFS_LIBPATH:-/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu}
INITRAMFS_LIBDIR=/lib/aarch64-linux-gnu
READELF=${READELF:-readelf}

# initramfs_init STAGE - an empty tree with the usual mount points.
initramfs_init() {
	local s=$1
	rm -rf "$s"
	mkdir -p "$s"/{bin,sbin,lib,etc,proc,sys,dev,tmp,run,root,var/log,usr/bin,usr/sbin}
	mkdir -p "$s$INITRAMFS_LIBDIR"
	# Enough of a user database for getpwnam("root") (vgicd's AllowUsers).
	printf 'root:x:0:0:root:/root:/bin/sh\n' > "$s/etc/passwd"
	printf 'root:x:0:\n' > "$s/etc/group"
}

# initramfs_file STAGE SRC DEST [MODE] - copy one file (symlinks followed).
initramfs_file() {
	local s=$1 src=$2 dest=$3 mode=${4:-}
	[ -e "$src" ] || nested_die "initramfs: $src does not exist"
	mkdir -p "$s$(dirname "$dest")"
	cp -L "$src" "$s$dest"
	[ -z "$mode" ] || chmod "$mode" "$s$dest"
}

# elf_needed FILE - its DT_NEEDED names, one a line.
elf_needed() {
	LC_ALL=C "$READELF" -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'
}

# elf_interp FILE - its PT_INTERP path, if any.
elf_interp() {
	LC_ALL=C "$READELF" -l "$1" 2>/dev/null | sed -n 's/.*\[Requesting program interpreter: \(.*\)\]$/\1/p'
}

# lib_find NAME - the first $INITRAMFS_LIBPATH folder holding NAME.
lib_find() {
	local d
	local IFS=:
	for d in $INITRAMFS_LIBPATH; do
		if [ -e "$d/$1" ]; then
			printf '%s\n' "$d/$1"
			return 0
		fi
	done
	return 1
}

# initramfs_elf STAGE SRC DEST - install an ELF file and, recursively, the
# libraries and interpreter it needs.  A library that cannot be found is an
# error (the program would not start in the guest).
initramfs_elf() {
	local s=$1 src=$2 dest=$3 interp lib path
	local -a todo
	initramfs_file "$s" "$src" "$dest"
	interp=$(elf_interp "$src")
	if [ -n "$interp" ] && [ ! -e "$s$interp" ]; then
		path=$(lib_find "$(basename "$interp")") ||
			nested_die "initramfs: interpreter $interp of $src not found in $INITRAMFS_LIBPATH"
		initramfs_file "$s" "$path" "$interp"
	fi
	mapfile -t todo < <(elf_needed "$src")
	while [ ${#todo[@]} -gt 0 ]; do
		lib=${todo[0]}
		todo=("${todo[@]:1}")
		[ -e "$s$INITRAMFS_LIBDIR/$lib" ] && continue
		path=$(lib_find "$lib") ||
			nested_die "initramfs: $lib (needed by $src) not found in $INITRAMFS_LIBPATH"
		initramfs_file "$s" "$path" "$INITRAMFS_LIBDIR/$lib"
		mapfile -t -O ${#todo[@]} todo < <(elf_needed "$path")
	done
}

# initramfs_busybox STAGE BUSYBOX - a static busybox as /bin/busybox and
# /bin/sh; /init runs "busybox --install -s" for the other applets.
initramfs_busybox() {
	local s=$1
	initramfs_file "$s" "$2" /bin/busybox 0755
	ln -sf busybox "$s/bin/sh"
}

# initramfs_list STAGE LIST - install what LIST names: "SRC DEST [elf|file]
# [MODE]" a line, # comments and blank lines ignored, paths relative to the
# current folder.
initramfs_list() {
	local s=$1 src dest kind mode
	while read -r src dest kind mode; do
		case $src in '' | '#'*) continue ;; esac
		if [ "${kind:-file}" = elf ]; then
			initramfs_elf "$s" "$src" "$dest"
			[ -z "$mode" ] || chmod "$mode" "$s$dest"
		else
			initramfs_file "$s" "$src" "$dest" "$mode"
		fi
	done < "$2"
}

# initramfs_pack STAGE OUT - a newc cpio of STAGE, owned by root, in a stable
# order, uncompressed (any kernel with BLK_DEV_INITRD unpacks it).  Several
# such archives may be concatenated into one initrd.
initramfs_pack() {
	local s=$1 out=$2
	(cd "$s" && find . -mindepth 1 | LC_ALL=C sort |
		cpio --quiet -o -H newc -R 0:0 --reproducible) > "$out.tmp"
	mv "$out.tmp" "$out"
}
