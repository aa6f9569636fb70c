#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-hook-emulator.sh - the qemu.d hook asks only QEMUs it may, as QEMU's
# user, with an empty environment, and runs the file it stamped.  TAP.
#
#   HOOK=path/to/vgicd-qemu-hook FAKE_EMULATOR=path/to/fake-emulator \
#   FIXTURES=tests/libvirt/fixtures test-hook-emulator.sh
#
# The fake QEMU writes who ran it into "report" beside the path it was run
# by.  An allowed path (/usr/local/bin/qemu-system-*) is reached through a
# private mount namespace that binds a folder of the test's over
# /usr/local/bin, so the installed hook is tested as it ships.  Needs root
# (the hook drops to QEMU's user) and unshare.
set -uo pipefail

: "${HOOK:?}" "${FAKE_EMULATOR:?}" "${FIXTURES:?}"

if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
	echo "1..0 # SKIP needs root and unshare -m"
	exit 0
fi

T=$(mktemp -d)
HOOK_PID=
cleanup() {
	[ -n "$HOOK_PID" ] && kill "$HOOK_PID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
chmod 755 "$T"

QUSER=libvirt-qemu
id -u "$QUSER" > /dev/null 2>&1 || QUSER=nobody
export VGICD_SOCKET=$T/none.sock VGICD_VMS_DIR=$T/vms VGICD_EMULATOR_CACHE=$T/emulators
export VGICD_QEMU_CONF=$T/qemu.conf
printf '# as libvirt reads it\nuser = "%s"\n' "$QUSER" > "$VGICD_QEMU_CONF"
export SECRET_IN_HOOK_ENV=leaks

# shellcheck source=tests/libvirt/tap.sh
. "$(dirname "$0")/tap.sh"

# fixture EMULATOR - the domain with the old argument, naming EMULATOR
fixture() {
	sed "s|<emulator>[^<]*</emulator>|<emulator>$1</emulator>|" \
		"$FIXTURES/aarch64-optin-with-arg.xml" > "$T/dom.xml"
}

# in_ns CMD... - CMD with $T/bin bound over /usr/local/bin, privately
mkdir -m 777 "$T/bin"
in_ns() {
	unshare -m --propagation private bash -c \
		'mount --bind "$0" /usr/local/bin && exec "$@"' "$T/bin" "$@"
}

report() { sed -n "s/^$2=//p" "$1/report" 2>/dev/null | head -1; }

# 1. An emulator outside the allow-list is not run; the hook falls back:
# it treats it as a QEMU without the property, removes the old argument
# and says why.
mkdir -m 777 "$T/outside"
cp "$FAKE_EMULATOR" "$T/outside/qemu-system-aarch64"
fixture "$T/outside/qemu-system-aarch64"
"$HOOK" dom migrate begin - < "$T/dom.xml" > "$T/out" 2> "$T/err"
RC=$?
check "outside the allow-list: migrate exits 0" [ "$RC" = 0 ]
check "outside the allow-list: the emulator is not run (no report)" [ ! -e "$T/outside/report" ]
check "outside the allow-list: stderr says why" grep -q "not on its allow-list" "$T/err"
check "outside the allow-list: the old argument is removed" \
	bash -c "! grep -q 'kvm-arm-gicv3.vgicd=' '$T/out'"
check "outside the allow-list: no answer is remembered" \
	bash -c "! grep -qs 'outside' '$VGICD_EMULATOR_CACHE/emulators.conf'"

# 2. An allowed emulator runs as QEMU's user, with an empty environment.
cp "$FAKE_EMULATOR" "$T/bin/qemu-system-aarch64"
chmod 755 "$T/bin/qemu-system-aarch64"
fixture /usr/local/bin/qemu-system-aarch64
in_ns "$HOOK" dom migrate begin - < "$T/dom.xml" > "$T/out" 2> "$T/err"
RC=$?
QUID=$(id -u "$QUSER")
check "allowed: migrate exits 0" [ "$RC" = 0 ]
check "allowed: the emulator ran" [ -e "$T/bin/report" ]
check "allowed: as QEMU's user ($QUSER, uid $QUID), not root" \
	[ "$(report "$T/bin" uid)" = "$QUID" -a "$(report "$T/bin" euid)" = "$QUID" ]
check "allowed: with an empty environment" bash -c "! grep -q '^env=' '$T/bin/report'"
check "allowed: its answer (it takes the property) keeps the domain's XML" [ ! -s "$T/out" ]
[ -s "$T/bin/report" ] || sed 's/^/# report: /' "$T/bin/report" 2>/dev/null

# 3. The stamp is of the file that runs: the path is swapped for another
# binary after the hook opened it (while it reads qemu.conf, a FIFO
# here); the one that answers is the one it opened, and that is the one
# whose identity is remembered.
rm -rf "$T/bin/report" "$VGICD_EMULATOR_CACHE"
mkfifo "$T/qemu.fifo"
OLD_INO=$(stat -c %i "$T/bin/qemu-system-aarch64")
VGICD_QEMU_CONF=$T/qemu.fifo in_ns "$HOOK" dom migrate begin - < "$T/dom.xml" \
	> "$T/out" 2> "$T/err" &
HOOK_PID=$!
if timeout 60 bash -c 'exec 3> "$0"
	cp "$1" "$2.new" && chmod 755 "$2.new" && mv -f "$2.new" "$2"
	printf "user = \"%s\"\n" "$3" >&3' \
	"$T/qemu.fifo" "$FAKE_EMULATOR" "$T/bin/qemu-system-aarch64" "$QUSER"; then
	ok "swap: the hook read qemu.conf after it opened the emulator"
else
	not_ok "swap: the hook read qemu.conf after it opened the emulator" \
		"the hook never opened $T/qemu.fifo"
fi
wait "$HOOK_PID"
HOOK_PID=
NEW_INO=$(stat -c %i "$T/bin/qemu-system-aarch64")
check "swap: the path now names another file" [ "$NEW_INO" != "$OLD_INO" ]
check "swap: the binary that answered is the one opened (inode $OLD_INO)" \
	[ "$(report "$T/bin" exe-ino)" = "$OLD_INO" ]
check "swap: the remembered stamp is the opened file's" \
	grep -q "^Stamp=[0-9]*:$OLD_INO:" "$VGICD_EMULATOR_CACHE/emulators.conf"

tap_end
