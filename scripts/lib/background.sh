# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# background.sh - long builds that a later step needs, started early and run
# beside the steps in between.  Sourced (by common.sh).
#
#   bg_start NAME LOG CMD...   run CMD in the background at nice $BG_NICE
#                              (default 10), outside the heavy-work lock,
#                              output to LOG
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
# BG_NICE puts those needed late behind the one the next step needs.  But
# where the kernel schedules by autogroup (sched_autogroup_enabled=1, as
# on this machine and in Debian's kernels), each job's setsid makes it a
# group of its own, and a nice weighs only inside its group: every job
# then has a group's share, as much as all the steps together.  The
# CPU work is the same either way; what it costs is contention: in a cold
# fresh root the dpkg-heavy steps (the clean chroots, nspawn) ran two to
# four times slower beside the jobs, and the whole run gained about 3
# minutes (hence force-unsafe-io in the test roots, debian-apt.sh).  The
# jobs bypass the heavy-work lock (VGICD_HEAVY_HELD=1): holding it would
# stop every heavy step meanwhile.  Each job gets a session of its own
# (setsid), so that ending it ends its whole tree (make's compilers,
# mmdebstrap's qemu-user).

declare -A BG_PID=() BG_T0=() BG_LOG=()

bg_start() {
	local name=$1 log=$2
	shift 2
	mkdir -p "$(dirname "$log")"
	BG_T0[$name]=$(date +%s)
	BG_LOG[$name]=$log
	VGICD_HEAVY_HELD=1 setsid nice -n "${BG_NICE:-10}" "$@" >"$log" 2>&1 </dev/null &
	BG_PID[$name]=$!
	echo "started in the background: $name (log: $log)"
}

bg_wait() {
	local name=$1 t end line rc=0
	[ -n "${BG_PID[$name]:-}" ] || { echo "bg_wait: no job $name" >&2; return 1; }
	t=$(date +%s)
	wait "${BG_PID[$name]}" || rc=$?
	unset "BG_PID[$name]"
	end=$(date +%s)
	line=$(printf '%-44s %7d s (in the background; %d s of it waited for)' \
		"  $name" "$(( end - BG_T0[$name] ))" "$(( end - t ))")
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
