#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-hook-filter.sh - the qemu.d hook (50-vgicd) on the fixtures, with
# vgicd up (a real listening unix socket) and down (no socket).  TAP.
#
#   HOOK=path/to/50-vgicd FIXTURES=tests/libvirt/fixtures test-hook-filter.sh
#
# Filtered XML is checked with virt-xml-validate (libvirt's own schemas)
# when it is installed; a domain that did not opt in must come back byte
# for byte.
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
unset VGICD_CONFIG
ARG="kvm-arm-gicv3.vgicd=unix:path=$SOCK"

N=0
FAILS=0
ok() { N=$((N + 1)); echo "ok $N - $1"; }
not_ok() {
	N=$((N + 1)); FAILS=$((FAILS + 1)); echo "not ok $N - $1"
	shift
	for l in "$@"; do echo "# $l"; done
	[ -s "$T/err" ] && sed 's/^/#   stderr: /' "$T/err"
	return 0
}
check() { # check DESCRIPTION COMMAND...
	local d=$1
	shift
	if "$@"; then ok "$d"; else not_ok "$d" "failed: $*"; fi
}

VALIDATE=$(command -v virt-xml-validate || true)
[ -f /usr/share/libvirt/schemas/domain.rng ] || VALIDATE=

vgicd_up() {
	rm -f "$SOCK"
	$PY -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); s.listen(16)
print("ready", flush=True)
time.sleep(600)' "$SOCK" > "$T/listener.out" &
	LISTENER=$!
	for _ in $(seq 100); do
		grep -q ready "$T/listener.out" 2>/dev/null && return 0
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
	"$HOOK" "$(basename "$2" .xml)" "$1" begin - < "$FIXTURES/$2" > "$T/out" 2> "$T/err"
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

# filtered FIXTURE EXPECT - migrate begin succeeded; EXPECT: "arg" (exactly
# one vgicd argument, this host's) or "none"
filtered() {
	local f=$1 want=$2 state=$3
	run migrate "$f"
	check "$f, vgicd $state: migrate exits 0" [ "$RC" = 0 ]
	if [ "$want" = arg ]; then
		check "$f, vgicd $state: one vgicd argument, this host's socket" \
			[ "$(count_args)" = 1 ]
		check "$f, vgicd $state: the argument follows -global" \
			grep -Fq -B1 "value=\"$ARG\"" "$T/out"
		grep -F -B1 "value=\"$ARG\"" "$T/out" | head -1 | grep -q "value=\"-global\"" ||
			not_ok "$f, vgicd $state: -global right before the argument"
	else
		check "$f, vgicd $state: no vgicd argument left" [ "$(count_args)" = 0 ]
	fi
	check "$f, vgicd $state: the metadata is kept" grep -q "https://vgicd.example/xmlns/1" "$T/out"
	check "$f, vgicd $state: no XML declaration (libvirt's own form)" \
		bash -c "! head -1 '$T/out' | grep -q '<?xml'"
	validate "$f, vgicd $state: output validates"
}

untouched() {
	local f=$1 state=$2
	run migrate "$f"
	check "$f, vgicd $state: migrate exits 0" [ "$RC" = 0 ]
	check "$f, vgicd $state: output is the input byte for byte" cmp -s "$T/out" "$FIXTURES/$f"
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

HOST=$(hostname)

echo "# vgicd up: a listening socket at $SOCK"
vgicd_up
filtered aarch64-optin.xml arg up
filtered aarch64-required.xml arg up
filtered aarch64-optin-with-arg.xml arg up
check "aarch64-optin-with-arg.xml, vgicd up: other QEMU arguments kept" \
	grep -q 'kvm_arm_gicv3\*' "$T/out"
check "aarch64-optin-with-arg.xml, vgicd up: qemu:env kept" grep -q 'name="KEEP"' "$T/out"
check "aarch64-optin-with-arg.xml, vgicd up: the source host's socket is gone" \
	bash -c "! grep -q source-host '$T/out'"
filtered aarch64-required-only-arg.xml arg up
filtered x86-optin.xml arg up
untouched aarch64-plain.xml up
untouched aarch64-plain-with-arg.xml up

# Filtering is idempotent: a second pass over the output changes nothing.
run migrate aarch64-optin.xml
cp "$T/out" "$T/once.xml"
"$HOOK" optin migrate begin - < "$T/once.xml" > "$T/twice.xml" 2> "$T/err"
check "filtering twice gives the same XML" cmp -s "$T/once.xml" "$T/twice.xml"

run prepare aarch64-required.xml
check "aarch64-required.xml, vgicd up: prepare exits 0" [ "$RC" = 0 ]
check "aarch64-required.xml, vgicd up: prepare prints nothing" [ ! -s "$T/out" ]

echo "# vgicd down: no socket"
vgicd_down
filtered aarch64-optin.xml none down
filtered aarch64-optin-with-arg.xml none down
check "aarch64-optin-with-arg.xml, vgicd down: other QEMU arguments kept" \
	grep -q 'kvm_arm_gicv3\*' "$T/out"
check "aarch64-optin-with-arg.xml, vgicd down: qemu:env kept" grep -q 'name="KEEP"' "$T/out"
filtered x86-optin.xml none down
untouched aarch64-plain.xml down
untouched aarch64-plain-with-arg.xml down

refused aarch64-required.xml migrate down
message_names "migrate refusal names the domain, the host, the socket and the remedy" \
	"'aarch64-required'" "$HOST" "$SOCK" "systemctl start vgicd.socket"
refused aarch64-required-only-arg.xml migrate down

refused aarch64-required.xml prepare down
message_names "prepare refusal names the domain, the host, the socket and the remedy" \
	"'aarch64-required'" "$HOST" "$SOCK" "systemctl start vgicd.socket"
run prepare aarch64-optin.xml
check "aarch64-optin.xml, vgicd down: prepare continues (exit 0)" [ "$RC" = 0 ]
run prepare aarch64-plain.xml
check "aarch64-plain.xml, vgicd down: prepare exits 0" [ "$RC" = 0 ]

echo "# vgicd down: a stale socket file (ECONNREFUSED)"
vgicd_up
vgicd_down stale
check "the stale socket file is there" [ -S "$SOCK" ]
refused aarch64-required.xml migrate stale
message_names "stale socket: the refusal says why" "Connection refused"
filtered aarch64-optin.xml none stale

echo "# a bad opt-in and other calls"
refused bad-required.xml migrate down
message_names "bad required= is named" 'required="maybe"' "vgicctl enable"
for op in start started stopped release reconnect attach restore; do
	run "$op" aarch64-required.xml
	if [ "$RC" = 0 ] && [ ! -s "$T/out" ] && [ ! -s "$T/err" ]; then
		ok "$op begin: exit 0, quiet"
	else
		not_ok "$op begin: exit 0, quiet" "rc=$RC"
	fi
done
"$HOOK" aarch64-required migrate end - < "$FIXTURES/aarch64-required.xml" > "$T/out" 2> "$T/err"
check "migrate end: exit 0" [ $? = 0 ]
echo 'not xml <' | "$HOOK" junk migrate begin - > "$T/out" 2> "$T/err"
check "unparseable input: passed through, exit 0" [ "$(cat "$T/out")" = 'not xml <' ]

echo "# the socket from the configuration file"
unset VGICD_SOCKET
printf '[vgicd]\nSocket=%s\n' "$SOCK" > "$T/vgicd.conf"
vgicd_up
VGICD_CONFIG=$T/vgicd.conf "$HOOK" optin migrate begin - < "$FIXTURES/aarch64-optin.xml" > "$T/out" 2> "$T/err"
check "Socket= in \$VGICD_CONFIG is used" grep -Fq "value=\"$ARG\"" "$T/out"
printf '[vgicd]\nSocket=relative\n' > "$T/bad.conf"
VGICD_CONFIG=$T/bad.conf "$HOOK" optin migrate begin - < "$FIXTURES/aarch64-optin.xml" > "$T/out" 2> "$T/err"
check "a broken configuration warns and falls back to the default socket" \
	grep -q "assuming the socket is /run/vgicd/vgicd.sock" "$T/err"
vgicd_down

echo "1..$N"
[ "$FAILS" = 0 ]
