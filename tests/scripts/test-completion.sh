#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-completion.sh - vgicctl's bash completion, driven the way bash drives
# it: the file sourced in a bare bash (after bash-completion's own, when it
# is installed, as on a host), COMP_WORDS/COMP_CWORD/COMP_LINE/COMP_POINT
# set as bash sets them (words split at '=' as COMP_WORDBREAKS does), the
# function `complete -p vgicctl` names called, and COMPREPLY checked.  The
# expected lists come from the built vgicctl (its --help, its own options,
# the modes its error message lists), so that the completion and the
# command table cannot part.  A fake virsh on PATH plays libvirt's domains.
#
#   test-completion.sh COMPLETION_FILE VGICCTL
#
# Exit status 77 (skipped) only when bash itself is missing.
case ${1-} in
-h | --help)
	sed -n '3,15s/^# \{0,1\}//p' "$0"
	exit 0 ;;
esac
[ $# -eq 2 ] || { echo "usage: test-completion.sh COMPLETION_FILE VGICCTL" >&2; exit 2; }
command -v bash >/dev/null 2>&1 || { echo "bash is not installed: skipped"; exit 77; }

# shellcheck disable=SC2016  # the script is bash's, expanded there
exec bash --norc --noprofile -c '
set -u
completion=$1 vgicctl=$2
fails=0 n=0
tmp=$(mktemp -d) || exit 1
trap "rm -rf \"\$tmp\"" EXIT

# What a host has loaded before: bash-completion, when it is there.
if [[ -r /usr/share/bash-completion/bash_completion ]]; then
	# shellcheck disable=SC1091
	. /usr/share/bash-completion/bash_completion
fi
# shellcheck disable=SC1090
. "$completion"
fn=$(complete -p vgicctl | sed -n "s/.*-F \([^ ]*\) .*/\1/p")
[[ -n $fn ]] || { echo "not ok - the file registers no function for vgicctl"; exit 1; }

# complete WORD... - COMPREPLY, sorted, one line, for the command line
# WORD... (the last word is the one being completed; "" for a new word)
complete_words() {
	COMP_WORDS=("$@")
	COMP_CWORD=$(($# - 1))
	COMP_LINE="$*"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	"$fn" vgicctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
	printf "%s\n" "${COMPREPLY[@]}" | sed "/^$/d" | sort | tr "\n" " " | sed "s/ $//"
}

# expect DESCRIPTION "WANT" WORD... - one case
expect() {
	local what=$1 want=$2 got
	shift 2
	got=$(complete_words "$@")
	n=$((n + 1))
	if [[ $got == "$want" ]]; then
		echo "ok $n - $what"
	else
		echo "not ok $n - $what: got \"$got\", want \"$want\""
		fails=$((fails + 1))
	fi
}

sorted() { tr " " "\n" | sed "/^$/d" | sort -u | tr "\n" " " | sed "s/ $//"; }

# From the built vgicctl: its commands, its modes, each command options.
commands=$("$vgicctl" --help | sed -n "/^Commands:/,/^$/s/^  \([a-z][a-z-]*\).*/\1/p" | sorted)
modes=$("$vgicctl" mode bogus 2>&1 | sed -n "s/.*accepted values: //p" | tr -d , | sorted)
[[ -n $commands && -n $modes ]] || { echo "not ok - cannot read vgicctl: commands \"$commands\", modes \"$modes\""; exit 1; }

expect "an empty word: every command of vgicctl --help" "$commands" vgicctl ""
expect "vgicctl mo: mode" "mode" vgicctl mo
expect "vgicctl s: the three commands starting with s" "sessions stats status" vgicctl s
expect "vgicctl -: its own options" "--help --version" vgicctl -
expect "vgicctl mode: the modes vgicctl names" "$modes" vgicctl mode ""
expect "vgicctl mode s: single" "single" vgicctl mode s
expect "vgicctl mode auto: no second mode" "" vgicctl mode auto ""
expect "vgicctl status --j: --json and --json=" "--json --json=" vgicctl status --j
expect "--json= split at = (bash default): the formats" "pretty short" vgicctl status --json =
expect "--json=p split at =: pretty" "pretty" vgicctl status --json = p
expect "--json=p unsplit (= not in COMP_WORDBREAKS)" "--json=pretty" vgicctl status --json=p
expect "options after an argument: mode auto --r" "--runtime" vgicctl mode auto --r
mkdir "$tmp/records" && : >"$tmp/records/rec.bin" && cd "$tmp/records" || exit 1
expect "dump: the files here, and - for standard input" "- rec.bin" vgicctl dump ""
expect "dump r: rec.bin" "rec.bin" vgicctl dump r
expect "dump -: its options, and - for standard input" \
	"- --all-irqs --help --irqs --json --json= --no-pager --quiet" vgicctl dump -
expect "dump --irqs: no guess at a number" "" vgicctl dump --irqs ""
expect "dump --irqs 96: the files again" "- rec.bin" vgicctl dump --irqs 96 ""
cd / || exit 1
expect "enable --connect: no guess at a URI" "" vgicctl enable --connect ""

# Each command options: exactly the long options of its --help.
for cmd in $commands; do
	want=$("$vgicctl" "$cmd" --help | grep -o -- "^ *\(-[a-z], \)\{0,1\}--[a-z][a-z-]*" |
		sed "s/.*--/--/" | sorted)
	got=$(complete_words vgicctl "$cmd" -- | sed "s/=//g" | sorted)
	n=$((n + 1))
	if [[ -n $want && $got == "$want" ]]; then
		echo "ok $n - vgicctl $cmd --: the options of vgicctl $cmd --help"
	else
		echo "not ok $n - vgicctl $cmd --: got \"$got\", vgicctl $cmd --help has \"$want\""
		fails=$((fails + 1))
	fi
done

# Domain names from virsh (a stand-in printing two, and the URI it got).
mkdir "$tmp/bin"
cat >"$tmp/bin/virsh" <<EOF
#!/bin/sh
echo "\$*" >"$tmp/virsh-args"
printf "db-7\nweb-1\n\n"
EOF
chmod +x "$tmp/bin/virsh"
PATH=$tmp/bin:$PATH
expect "enable: the domains virsh lists" "db-7 web-1" vgicctl enable ""
expect "disable w: web-1" "web-1" vgicctl disable w
expect "enable DOMAIN: one domain only" "" vgicctl enable db-7 ""
expect "disable --connect URI: the domains of that libvirt" "db-7 web-1" \
	vgicctl disable --connect qemu+ssh://h/system ""
n=$((n + 1))
if grep -q -- "-c qemu+ssh://h/system" "$tmp/virsh-args"; then
	echo "ok $n - virsh asked with the URI of --connect"
else
	echo "not ok $n - virsh was run with \"$(cat "$tmp/virsh-args")\", not -c qemu+ssh://h/system"
	fails=$((fails + 1))
fi
PATH=${PATH#"$tmp"/bin:}
rm "$tmp/bin/virsh"
hash -r
if ! command -v virsh >/dev/null; then
	expect "enable without virsh: nothing, and no error" "" vgicctl enable ""
fi

echo "1..$n"
exit $((fails > 0))
' test-completion "$@"
