#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-hook-filter.sh - the qemu.d hook (50-vgicd) on the fixtures, with
# vgicd up (a real listening unix socket) and down (no socket).  TAP.
#
#   HOOK=path/to/50-vgicd FIXTURES=tests/libvirt/fixtures test-hook-filter.sh
#
# The hook writes XML only when it must change the domain: for every other
# domain its output is empty, and libvirt keeps its own XML.  Filtered XML
# is checked with virt-xml-validate (libvirt's own schemas) when it is
# installed.  A QEMU that takes vgicd's property runs in the nested tier;
# here every emulator is one that does not (/bin/false, which is outside
# the hook's allow-list, so it is not even run).
set -uo pipefail

: "${HOOK:?HOOK=path to the 50-vgicd binary}"
: "${FIXTURES:?FIXTURES=path to tests/libvirt/fixtures}"
PY=/usr/bin/python3
[ -x $PY ] || PY=python3

T=$(mktemp -d)
LISTENER=
cleanup() {
	[ -n "$LISTENER" ] && kill "$LISTENER" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

SOCK=$T/vgicd.sock
export VGICD_SOCKET=$SOCK
export VGICD_VMS_DIR=$T/vms
export VGICD_EMULATOR_CACHE=$T/emulators
unset VGICD_CONFIG

# The fixtures, with an emulator that cannot take vgicd's property.
FIX=$T/fixtures
mkdir -p "$FIX"
for f in "$FIXTURES"/*.xml; do
	sed 's|<emulator>[^<]*</emulator>|<emulator>/bin/false</emulator>|' "$f" > "$FIX/$(basename "$f")"
done

# shellcheck source=tests/libvirt/tap.sh
. "$(dirname "$0")/tap.sh"

VALIDATE=$(command -v virt-xml-validate || true)
[ -f /usr/share/libvirt/schemas/domain.rng ] || VALIDATE=

vgicd_up() {
	rm -f "$SOCK"
	# Emptied here, not by the listener's own redirection: that runs in the
	# child, which a busy machine may schedule after the first grep below,
	# and the last listener's "ready" then passes for this one's, with no
	# socket yet.  On two cores with four busy loops, 308 of 2,000 greps
	# right after such a start saw the file's old line (none when idle).
	: > "$T/listener.out"
	$PY -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); s.listen(16)
print("ready", flush=True)
time.sleep(600)' "$SOCK" > "$T/listener.out" &
	LISTENER=$!
	for _ in $(seq 100); do
		grep -q ready "$T/listener.out" 2>/dev/null && [ -S "$SOCK" ] && return 0
		sleep 0.05
	done
	echo "Bail out! the test listener did not start"
	exit 1
}

vgicd_down() {
	[ -n "$LISTENER" ] && kill "$LISTENER" 2>/dev/null && wait "$LISTENER" 2>/dev/null
	LISTENER=
	# A stale socket file (vgicd died) must count as down too: ECONNREFUSED.
	[ "${1:-}" = stale ] || rm -f "$SOCK"
}

# run OP FIXTURE - the hook as libvirtd runs it; sets RC, output in $T/out
run() {
	"$HOOK" "$(basename "$2" .xml)" "$1" "${3:-begin}" - < "$FIX/$2" > "$T/out" 2> "$T/err"
	RC=$?
}

validate() {
	if [ -z "$VALIDATE" ]; then
		ok "$1 # SKIP virt-xml-validate or libvirt's schemas not installed"
		return
	fi
	if "$VALIDATE" "$T/out" domain > "$T/validate" 2>&1; then
		ok "$1"
	else
		not_ok "$1" "$(cat "$T/validate")"
	fi
}

count_args() { grep -c "kvm-arm-gicv3.vgicd=" "$T/out"; }

# untouched FIXTURE STATE - migrate begin succeeded and wrote nothing
untouched() {
	local f=$1 state=$2
	run migrate "$f"
	check "$f, vgicd $state: migrate exits 0" [ "$RC" = 0 ]
	check "$f, vgicd $state: nothing written (libvirt keeps its XML)" [ ! -s "$T/out" ]
}

# stripped FIXTURE STATE - the argument of earlier versions removed
stripped() {
	local f=$1 state=$2
	run migrate "$f"
	check "$f, vgicd $state: migrate exits 0" [ "$RC" = 0 ]
	check "$f, vgicd $state: the old vgicd argument is gone" [ "$(count_args)" = 0 ]
	check "$f, vgicd $state: stderr says why" grep -q "removing -global kvm-arm-gicv3.vgicd" "$T/err"
	check "$f, vgicd $state: no XML declaration (libvirt's own form)" \
		bash -c "! head -1 '$T/out' | grep -q '<?xml'"
	validate "$f, vgicd $state: output validates"
}

refused() {
	local f=$1 op=$2 state=$3
	run "$op" "$f"
	check "$f, vgicd $state: $op refused (exit 1)" [ "$RC" = 1 ]
	check "$f, vgicd $state: $op prints no XML" [ ! -s "$T/out" ]
}

message_names() { # message_names DESCRIPTION WORD...
	local d=$1 w
	shift
	for w in "$@"; do
		grep -Fq -- "$w" "$T/err" || { not_ok "$d" "stderr lacks \"$w\""; return; }
	done
	ok "$d"
}

# choice_is FIXTURE UUID CHOICE - prepare recorded the domain's choice
# (CHOICE "none": no record)
choice_is() {
	local f=$1 uuid=$2 want=$3 got
	run prepare "$f"
	got=none
	[ -f "$VGICD_VMS_DIR/$uuid.conf" ] && got=$(sed -n 's/^Choice=//p' "$VGICD_VMS_DIR/$uuid.conf")
	check "$f: prepare exits 0" [ "$RC" = 0 ]
	if [ "$got" = "$want" ]; then ok "$f: prepare records choice $want"; else not_ok "$f: prepare records choice $want" "got $got"; fi
}

HOST=$(hostname)

echo "# vgicd up: a listening socket at $SOCK"
vgicd_up
untouched aarch64-plain.xml up
untouched aarch64-optin.xml up
untouched aarch64-required.xml up
untouched aarch64-off.xml up
untouched x86-optin.xml up
stripped aarch64-optin-with-arg.xml up
check "aarch64-optin-with-arg.xml, vgicd up: other QEMU arguments kept" \
	grep -q 'kvm_arm_gicv3\*' "$T/out"
check "aarch64-optin-with-arg.xml, vgicd up: qemu:env kept" grep -q 'name="KEEP"' "$T/out"
check "aarch64-optin-with-arg.xml, vgicd up: the metadata is kept" \
	grep -q "https://vgicd.example/xmlns/1" "$T/out"
check "aarch64-optin-with-arg.xml, vgicd up: an emptied <qemu:commandline> is gone, a used one stays" \
	grep -q '<qemu:commandline>' "$T/out"
stripped aarch64-plain-with-arg.xml up
check "aarch64-plain-with-arg.xml, vgicd up: the emptied <qemu:commandline> is gone" \
	bash -c "! grep -q 'commandline' '$T/out'"
stripped aarch64-required-only-arg.xml up

# /bin/false is not on the hook's allow-list: not run, nothing remembered
# (test-hook-emulator.sh runs an allowed one).
check "an emulator outside the allow-list is not asked" grep -q 'not on its allow-list' "$T/err"
check "and no answer is remembered for it" [ ! -e "$VGICD_EMULATOR_CACHE/emulators.conf" ]

# Filtering is idempotent: a second pass over the output writes nothing.
run migrate aarch64-optin-with-arg.xml
cp "$T/out" "$FIX/once.xml"
run migrate once.xml
check "filtering the filtered XML writes nothing" [ ! -s "$T/out" ]

choice_is aarch64-optin.xml 0b3b4e3c-7a2e-4d3e-9d51-0f3c5a9e1a02 wanted
choice_is aarch64-required.xml 0b3b4e3c-7a2e-4d3e-9d51-0f3c5a9e1a03 required
choice_is aarch64-off.xml 0b3b4e3c-7a2e-4d3e-9d51-0f3c5a9e1a06 off
choice_is aarch64-plain.xml "$(sed -n 's|.*<uuid>\(.*\)</uuid>.*|\1|p' "$FIX/aarch64-plain.xml")" none
check "prepare prints no XML" [ ! -s "$T/out" ]
run release aarch64-off.xml end
check "release end: exit 0" [ "$RC" = 0 ]
check "release end: the domain's choice is forgotten" \
	[ ! -e "$VGICD_VMS_DIR/0b3b4e3c-7a2e-4d3e-9d51-0f3c5a9e1a06.conf" ]
run prepare aarch64-plain-with-arg.xml
check "prepare of a domain with the old argument: exit 0" [ "$RC" = 0 ]
check "prepare of a domain with the old argument warns, naming the remedy" \
	grep -q 'vgicctl enable' "$T/err"

echo "# vgicd down: no socket"
vgicd_down
untouched aarch64-plain.xml down
untouched aarch64-optin.xml down
untouched aarch64-off.xml down
stripped aarch64-optin-with-arg.xml down

refused aarch64-required.xml migrate down
message_names "migrate refusal names the domain, the host, the socket and the remedy" \
	"'aarch64-required'" "$HOST" "$SOCK" "systemctl start vgicd.socket"
refused aarch64-required-only-arg.xml migrate down

refused aarch64-required.xml prepare down
message_names "prepare refusal names the domain, the host, the socket and the remedy" \
	"'aarch64-required'" "$HOST" "$SOCK" "systemctl start vgicd.socket"
run prepare aarch64-optin.xml
check "aarch64-optin.xml, vgicd down: prepare continues (exit 0)" [ "$RC" = 0 ]
check "aarch64-optin.xml, vgicd down: quietly" [ ! -s "$T/err" ]
run prepare aarch64-off.xml
check "aarch64-off.xml, vgicd down: prepare exits 0" [ "$RC" = 0 ]
run prepare aarch64-plain.xml
check "aarch64-plain.xml, vgicd down: prepare exits 0" [ "$RC" = 0 ]

echo "# vgicd down: a stale socket file (ECONNREFUSED)"
vgicd_up
vgicd_down stale
check "the stale socket file is there" [ -S "$SOCK" ]
refused aarch64-required.xml migrate stale
message_names "stale socket: the refusal says why" "Connection refused"
untouched aarch64-optin.xml stale

echo "# bad choices and other calls"
refused bad-required.xml migrate down
message_names "bad required= is named" 'required="maybe"' "vgicctl enable"
refused bad-mode.xml prepare down
message_names "bad mode= is named" 'mode="sometimes"' "vgicctl disable"
for op in start started stopped reconnect attach restore; do
	run "$op" aarch64-required.xml
	if [ "$RC" = 0 ] && [ ! -s "$T/out" ] && [ ! -s "$T/err" ]; then
		ok "$op begin: exit 0, quiet"
	else
		not_ok "$op begin: exit 0, quiet" "rc=$RC"
	fi
done
run migrate aarch64-required.xml end
check "migrate end: exit 0" [ "$RC" = 0 ]
echo 'not xml <' | "$HOOK" junk migrate begin - > "$T/out" 2> "$T/err"
check "unparseable input: exit 0, nothing written (libvirt judges it)" \
	[ $? = 0 ] && [ ! -s "$T/out" ]

echo "# the socket from the configuration file"
unset VGICD_SOCKET
printf '[vgicd]\nSocket=%s\n' "$SOCK" > "$T/vgicd.conf"
vgicd_up
VGICD_CONFIG=$T/vgicd.conf "$HOOK" required prepare begin - < "$FIX/aarch64-required.xml" > "$T/out" 2> "$T/err"
check "Socket= in \$VGICD_CONFIG is used (vgicd up there)" [ $? = 0 ]
printf '[vgicd]\nSocket=%s/elsewhere.sock\n' "$T" > "$T/other.conf"
VGICD_CONFIG=$T/other.conf "$HOOK" required prepare begin - < "$FIX/aarch64-required.xml" > "$T/out" 2> "$T/err"
check "Socket= in \$VGICD_CONFIG is used (nothing there)" [ $? = 1 ]
printf '[vgicd]\nSocket=relative\n' > "$T/bad.conf"
VGICD_CONFIG=$T/bad.conf "$HOOK" required prepare begin - < "$FIX/aarch64-required.xml" > "$T/out" 2> "$T/err"
check "a broken configuration warns and falls back to the default socket" \
	grep -q "assuming the socket is /run/vgicd/vgicd.sock" "$T/err"
vgicd_down

echo "# the off switch: LibvirtHook=false"
mkdir -p "$T/off.conf.d"
printf '[vgicd]\nSocket=%s\n' "$SOCK" > "$T/off.conf"
printf '[vgicd]\nLibvirtHook=false\n' > "$T/off.conf.d/50-off.conf"
rm -rf "$VGICD_VMS_DIR"
VGICD_CONFIG=$T/off.conf "$HOOK" required prepare begin - < "$FIX/aarch64-required.xml" > "$T/out" 2> "$T/err"
RC=$?
check "switched off (in a drop-in): a domain that requires vgicd starts where it is down" [ "$RC" = 0 ]
check "switched off: nothing said, nothing written" [ ! -s "$T/out" ] && [ ! -s "$T/err" ]
check "switched off: no choice recorded" [ ! -e "$VGICD_VMS_DIR" ]
VGICD_CONFIG=$T/off.conf "$HOOK" stripped migrate begin - < "$FIX/aarch64-optin-with-arg.xml" > "$T/out" 2> "$T/err"
check "switched off: an incoming domain is not edited" [ $? = 0 ] && [ ! -s "$T/out" ]
printf '[vgicd]\nLibvirtHook=true\n' > "$T/off.conf.d/50-off.conf"
VGICD_CONFIG=$T/off.conf "$HOOK" required prepare begin - < "$FIX/aarch64-required.xml" > "$T/out" 2> "$T/err"
check "switched on again: the same domain is refused where vgicd is down" [ $? = 1 ]

tap_end
