# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# background.sh - long builds that a later step needs, started early and run
# beside the steps in between.  Sourced (by common.sh).
#
#   bg_start NAME LOG CMD...   run CMD in the background at nice $BG_NICE
#                              (default 10; 0 for the critical path),
#                              outside the heavy-work lock, output to LOG
#   bg_wait NAME               wait for it; say how long it ran and how long
#                              the caller waited (also as a line of the
#                              step table); its exit status (the end of its
#                              log is printed when it failed)
#   bg_stop_all                end every job still running (an EXIT trap)
#
# Theory of operation: on two cores the test run is not CPU-bound
# throughout.  Package installs (dpkg is single-threaded), downloads, the
# chroots' mmdebstrap, libFuzzer (one process), tests waiting on sockets
# and timers leave a core or both idle for minutes.  A build that only a
# late step needs (the L1 root, the nested tiers' kernel, the patched QEMU)
# takes that idle CPU when started early at nice 10: the steps in the
# foreground, at nice 0, keep most of the CPU whenever they want it, and the
# build gets the rest.  What is not done by the time its step comes is then
# finished at full speed while that step waits.  Among the jobs, a higher
# BG_NICE puts those needed late behind the one the next step needs
# (bg_job says how, where the kernel schedules by autogroup).  The CPU
# work is the same either way; what it costs is contention: before the
# nice weighed under autogroups, every job had as much CPU as all the
# steps together, and in a cold fresh root the dpkg-heavy steps (the clean
# chroots, nspawn) ran two to four times slower beside the jobs.  The
# jobs bypass the heavy-work lock (VGICD_HEAVY_HELD=1): holding it would
# stop every heavy step meanwhile.  Each job gets a session of its own
# (setsid), so that ending it ends its whole tree (make's compilers,
# mmdebstrap's qemu-user).

declare -A BG_PID=() BG_T0=() BG_LOG=()
# When the script that sourced this began, for "ended N s into the run".
BG_RUN_T0=$(date +%s)

# bg_job NICE ENDFILE CMD... - the job itself, in its new session: its
# niceness, CMD, then the time it ended into ENDFILE (the step that
# collects it may come much later) and CMD's exit status.  With the
# kernel's autogroup scheduling (CONFIG_SCHED_AUTOGROUP, on in Debian's
# kernels and on this machine), a new session is a new autogroup, and a
# process's nice only weighs inside its autogroup: between groups the CPU
# is shared by the groups' own nice, 0 unless set.  Each job at nice 10
# in a group of its own had as much CPU as all the steps together (five
# jobs: five sixths of the machine).  So the group's nice is set too,
# through /proc/self/autogroup; without autogroups the file is missing and
# the process nice alone does the work.
# shellcheck disable=SC2317,SC2329 # run by bg_start through bash -c
bg_job() {
	local nice=$1 endfile=$2 rc=0
	shift 2
	[ ! -w /proc/self/autogroup ] || echo "$nice" >/proc/self/autogroup 2>/dev/null || true
	renice -n "$nice" -p $$ >/dev/null 2>&1 || true
	"$@" || rc=$?
	date +%s >"$endfile"
	return $rc
}

bg_start() {
	local name=$1 log=$2
	shift 2
	mkdir -p "$(dirname "$log")"
	BG_T0[$name]=$(date +%s)
	BG_LOG[$name]=$log
	rm -f "$log.end"
	VGICD_HEAVY_HELD=1 setsid bash -c "$(declare -f bg_job); bg_job \"\$@\"" bg_job \
		"${BG_NICE:-10}" "$log.end" "$@" >"$log" 2>&1 </dev/null &
	BG_PID[$name]=$!
	echo "started in the background: $name (log: $log)"
}

bg_wait() {
	local name=$1 t end ran line rc=0
	[ -n "${BG_PID[$name]:-}" ] || { echo "bg_wait: no job $name" >&2; return 1; }
	t=$(date +%s)
	wait "${BG_PID[$name]}" || rc=$?
	unset "BG_PID[$name]"
	end=$(date +%s)
	# How long it ran: to the end it wrote, not to this step.
	ran=$(cat "${BG_LOG[$name]}.end" 2>/dev/null || echo "$end")
	line=$(printf '%-44s %7d s (in the background, ended %d s into the run; %d s of it waited for)' \
		"  $name" "$(( ran - BG_T0[$name] ))" "$(( ran - BG_RUN_T0 ))" "$(( end - t ))")
	STEP_TIMES+=("$line")
	echo "$name (background, started $(( t - BG_T0[$name] )) s before this step): waited $(( end - t )) s for it, exit $rc"
	if [ $rc -ne 0 ]; then
		echo "!! $name failed in the background; the end of ${BG_LOG[$name]}:" >&2
		tail -n 30 "${BG_LOG[$name]}" >&2
	fi
	return $rc
}

bg_stop_all() {
	local name
	for name in "${!BG_PID[@]}"; do
		kill -TERM -- "-${BG_PID[$name]}" 2>/dev/null || true
	done
}
