# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# background.sh - long builds that a later step needs, started early and run
# beside the steps in between.  Sourced (by common.sh).
#
#   bg_start NAME LOG CMD...   run CMD in the background at nice $BG_NICE
#                              (default 10; negative for the run's
#                              critical path), outside the heavy-work
#                              lock, output to LOG
#   bg_wait NAME               wait for it; say how long it ran, when it
#                              ended and how long the caller waited (also
#                              as a line of the step table); its exit
#                              status (the end of its log is printed when
#                              it failed, and the lines naming a failed
#                              test)
#   bg_stop_all                end every job still running (an EXIT trap)
#
# Theory of operation: on two cores the test run is not CPU-bound
# throughout.  Package installs (dpkg is single-threaded), downloads, the
# chroots' mmdebstrap, libFuzzer (one process), tests waiting on sockets
# and timers, L1 under TCG in the nested tiers leave a core or both idle
# for minutes.  A build that only a late step needs takes that idle CPU
# when started early at a higher nice, and what is not done by the time
# its step comes is finished while that step waits.  The order of need
# sets the nice: the patched kernel is the run's critical path (every step
# from the nested tier on boots it, and it is about 1,600 s of CPU cold),
# so it runs AHEAD of the steps, at a negative nice; the patched QEMU and
# the L1 root, needed a few steps later, at or just behind the steps; what
# is only collected at the end, far behind.  The jobs bypass the
# heavy-work lock (VGICD_HEAVY_HELD=1): holding it would stop every heavy
# step meanwhile.  Each job gets a session of its own (setsid), so that
# ending it ends its whole tree (make's compilers, mmdebstrap's qemu-user).
#
# Why the nice goes on the autogroup (bg_job): where the kernel schedules
# by autogroup (CONFIG_SCHED_AUTOGROUP, on in Debian's kernels and on this
# machine), each session is a group, the CPU is shared between groups by
# the group's own nice, and a process's nice weighs only inside its group.
# A plain `nice -n 10` on a job in a session of its own then gives it as
# much CPU as all the steps together.  The steps make sessions of their
# own as well (the test harness's vgicd and bus, nspawn's containers,
# bench-load's attackers), so even a job at the steps' group weight gets
# less than a core: in two cold fresh roots the kernel at group nice 0
# had 0.5 of a core on average and ended 46 and 54 minutes in, and the
# nested tier waited 611 and 1,752 s for it.

declare -A BG_PID=() BG_T0=() BG_LOG=()
# When the script that sourced this began, for "ended N s into the run".
BG_RUN_T0=$(date +%s)

# bg_job NICE ENDFILE CMD... - the job itself, in its new session: its
# group's and its own niceness, CMD, then the time it ended into ENDFILE
# (the step that collects it may come much later) and CMD's exit status.
# Without autogroups /proc/self/autogroup is missing and the process nice
# alone does the work; a nice that cannot be set is said in the job's log
# (a negative one needs root), and the job runs at the nice it has.
# shellcheck disable=SC2317,SC2329 # run by bg_start through bash -c
bg_job() {
	local nice=$1 endfile=$2 rc=0
	shift 2
	if [ -e /proc/self/autogroup ]; then
		echo "$nice" 2>/dev/null >/proc/self/autogroup ||
			echo "bg_job: could not set this job's autogroup nice to $nice; it has: $(cat /proc/self/autogroup)"
	fi
	renice -n "$nice" -p $$ >/dev/null 2>&1 ||
		echo "bg_job: could not renice this job to $nice; it runs at nice $(nice)"
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
	local name=$1 t end ran line failed rc=0
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
		# A test that failed in a job says why far above its end (a
		# package build's summary and timings come after it): its
		# GLib assertion and TAP lines, the last 20, name the cause.
		failed=$(grep -E 'Bail out!|^not ok |ERROR:.*(assertion|failed)' "${BG_LOG[$name]}" |
			tail -n 20) || true	# none: grep's 1, under pipefail
		if [ -n "$failed" ]; then
			echo "!! the lines of ${BG_LOG[$name]} that name a failed test (the last 20):" >&2
			printf '%s\n' "$failed" >&2
		fi
	fi
	return $rc
}

bg_stop_all() {
	local name
	for name in "${!BG_PID[@]}"; do
		kill -TERM -- "-${BG_PID[$name]}" 2>/dev/null || true
	done
}
