#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# check-units.sh - vgicd's systemd files checked without booting anything.
#
#   check-units.sh SERVICE SOCKET VGICD MAX-EXPOSURE [SYSUSERS TMPFILES]
#
#  1. systemd-analyze verify on both units.  It exits 0 on unknown keys and
#     on values it cannot parse (it only warns), so any output fails;
#  2. systemd-analyze security --offline: the exposure score must not
#     exceed MAX-EXPOSURE (0.0 best .. 10.0 worst);
#  3. with SYSUSERS and TMPFILES: systemd-sysusers and systemd-tmpfiles
#     applied to an empty root (the user exists, /var/lib/vgicd belongs to
#     it, /etc/vgicd and /run/vgicd/vms to root).
#
# The service names /usr/sbin/vgicd (ExecStart=, and ExecReload='s
# configuration check), which verify wants to exist: the copy checked here
# runs the VGICD given instead (nothing else differs).
set -euo pipefail
case ${1:-} in
-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac

service=$(realpath "$1") socket=$(realpath "$2") vgicd=$(realpath "$3") max=$4
sysusers=${5:+$(realpath "$5")} tmpfiles=${6:+$(realpath "$6")}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

sed -e "s|^ExecStart=[^ ]*/vgicd\\b|ExecStart=$vgicd|" \
	-e "s|^ExecReload=[^ ]*/vgicd\\b|ExecReload=$vgicd|" "$service" > "$tmp/vgicd.service"
cp "$socket" "$tmp/vgicd.socket"
grep -q "^ExecStart=$vgicd" "$tmp/vgicd.service" ||
	{ echo "FAIL: no ExecStart=.../vgicd line in $service"; exit 1; }

# 1. --man=no: the man pages are checked by the build, not by man(1).
cd "$tmp"
if ! out=$(systemd-analyze verify --man=no ./vgicd.socket ./vgicd.service 2>&1) ||
	[ -n "$out" ]; then
	echo "FAIL: systemd-analyze verify:"
	printf '%s\n' "$out" | sed 's/^/  /'
	failed=1
else
	echo "ok: systemd-analyze verify (no warnings)"
fi

# 2. The whole table goes to the log, for whoever wants to tighten further.
out=$(systemd-analyze security --offline=yes --no-pager ./vgicd.service 2>&1) || true
printf '%s\n' "$out" | grep -E '^✗' | sed 's/^/  /' || true
score=$(printf '%s\n' "$out" | sed -n 's/.*Overall exposure level for vgicd.service: \([0-9.]*\).*/\1/p')
if [ -z "$score" ]; then
	echo "FAIL: systemd-analyze security printed no score:"
	printf '%s\n' "$out" | tail -5 | sed 's/^/  /'
	failed=1
elif awk -v s="$score" -v m="$max" 'BEGIN { exit !(s > m) }'; then
	echo "FAIL: exposure $score is above $max"
	failed=1
else
	echo "ok: exposure $score (at most $max)"
fi

# 3. On an empty root: no real user or file is touched.
if [ -n "$sysusers" ]; then
	mkdir -p root/etc root/usr/lib/sysusers.d root/usr/lib/tmpfiles.d
	cp "$sysusers" root/usr/lib/sysusers.d/vgicd.conf
	cp "$tmpfiles" root/usr/lib/tmpfiles.d/vgicd.conf
	if ! out=$(systemd-sysusers --root="$tmp/root" 2>&1) ||
		! grep -q '^vgicd:' root/etc/passwd || ! grep -q '^kvm:' root/etc/group; then
		echo "FAIL: systemd-sysusers:"
		printf '%s\n' "$out" | sed 's/^/  /'
		failed=1
	elif ! out=$(systemd-tmpfiles --root="$tmp/root" --create 2>&1) ||
		[ "$(stat -c %u:%a "root/var/lib/vgicd")" != "$(awk -F: '$1 == "vgicd" { print $3 }' root/etc/passwd):755" ] ||
		[ "$(stat -c %u:%a "root/etc/vgicd")" != "0:755" ] ||
		[ "$(stat -c %u:%a "root/run/vgicd/vms")" != "0:755" ]; then
		echo "FAIL: systemd-tmpfiles (/var/lib/vgicd $(stat -c %u:%a root/var/lib/vgicd 2>&1)," \
			"/etc/vgicd $(stat -c %u:%a root/etc/vgicd 2>&1), /run/vgicd/vms $(stat -c %u:%a root/run/vgicd/vms 2>&1)):"
		printf '%s\n' "$out" | sed 's/^/  /'
		failed=1
	else
		echo "ok: sysusers creates vgicd and kvm; tmpfiles gives it /var/lib/vgicd, root /etc/vgicd and /run/vgicd/vms"
	fi
fi
exit $failed
