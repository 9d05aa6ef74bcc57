# shellcheck shell=bash
# Idle GPUs, decided on the host: the supervisor of a task that holds
# GPUs samples them itself (tfhive_idle_watch, in the background, one per
# attempt), so that the rule holds for a detached run whose keeper is
# gone. Each sample is one nvidia-smi, as the sampler's (sample.sh), and
# the wait between samples a read on a pipe nobody writes: no sleep.
#
# The task's GPUs are idle while every one of them reads at or under
# BELOW percent; a GPU whose utilisation cannot be read (an error, "[N/A]")
# is not idle: a run is never stopped on what was not measured. Once idle
# for WARN, the watch says so on the session's stderr, a line
# "@@tfhive-idle MARK warn TENTHS" (tenths of a second idle so far), and
# "@@tfhive-idle MARK busy" when they are busy again; tfhive takes the
# lines out of the stream (a session that is gone, a detached run's
# keeper, hears nothing: SIGPIPE is ignored). For kept runs it writes the
# stretch's start (epoch seconds) into NAME.idle of the run's directory
# too, empty once busy, for a keeper that comes later and for ps.
# Once idle for STOP, it prints "stopped TENTHS" on its stdout, for the
# supervisor, and stops the task as every stop does: the run's stop
# signal (--stop-signal), the deadline file written, SIGKILL once the
# run's grace is over by the clock; unless tfhive said within its
# link's timeout that GPUs of the run on another host are busy ("b": a
# run is idle only when all its GPUs are; a run whose keeper is gone has
# each host decide alone). On SIGTERM (the attempt has ended) it prints
# "idle TENTHS", the attempt's idle time in all, and ends: the usage
# ledger's (ledger.sh).
#
# Parameters, set by tfhive ahead of this text:
#   tfhive_idle      "BELOW WARN STOP EVERY": percent, then tenths of a
#                    second: the warning, the stop (0: none), between
#                    samples; empty: nothing watches
#                    (a task with no GPU whose use nvidia-smi reports)
#   tfhive_idle_ids  the indexes of the run's GPUs on this host whose use
#                    nvidia-smi reports, comma-separated: a task is idle
#                    only when all of them are
: "${tfhive_idle?}" "${tfhive_idle_ids?}"


# tfhive_idle_watch FD FILE watches while the task ($tfhive_pid, set by
# supervisor-run.sh before it starts this) lives; FD is the session's
# stderr, FILE the kept task's NAME.idle ("" when not kept). Descriptor
# 12 is a pipe the supervisor holds both ends of: its reader writes "b"
# there for tfhive's "b" (GPUs of the run elsewhere are busy: hold the
# stop), and a read on it with a time limit is the wait between samples.
# shellcheck disable=SC2154 # tfhive_now: tfhive_tenths's (clock.sh)
tfhive_idle_watch() {
	: "${tfhive_pid?}" "${tfhive_mark?}" "${tfhive_grace?}" "${tfhive_hb_timeout?}"
	local below warn stop every q u n busy since=0 warned='' total=0 last=0 d held=-100000 next=0 left w
	read -r below warn stop every <<<"$tfhive_idle"
	trap '' PIPE
	# On TERM: the attempt's idle time, counted up to the last sample.
	trap 'printf "idle %s\n" "$((total + (since ? last - since : 0)))"; exit 0' TERM
	tfhive_tenths
	next=$((tfhive_now + every))
	while kill -0 "$tfhive_pid" 2>/dev/null; do
		# Until the next sample, the words on 12: a "b" holds the stop
		# for as long as tfhive would take the link for dead.
		# A second at most per read: a task that ended, or a supervisor
		# killed outright (who would have ended this watch), is seen
		# within it, not at the next sample a minute on (CI:
		# TestKilledSupervisorReleasesClaims found this watch left).
		tfhive_tenths
		while left=$((next - tfhive_now)) && [ "$left" -gt 0 ]; do
			[ "$left" -le 10 ] || left=10
			if read -r -t "$((left / 10)).$((left % 10))" -u 12 w && [ "$w" = b ]; then
				tfhive_tenths
				held=$tfhive_now
			fi
			{ kill -0 "$tfhive_pid" && kill -0 "$$"; } 2>/dev/null || break 2
			tfhive_tenths
		done
		next=$((tfhive_now + every))
		# exec: no second fork (rundir.sh's tfhive_runsdir says why).
		q=$(exec nvidia-smi --query-gpu=index,uuid,utilization.gpu,memory.used --format=csv,noheader,nounits -i "$tfhive_idle_ids" 2>/dev/null)
		n=0 busy=0
		while IFS=', ' read -r _ _ u _; do
			if [[ $u =~ ^[0-9]+$ ]] && [ "$u" -le "$below" ]; then n=$((n + 1)); else busy=1; fi
		done <<<"$q"
		tfhive_tenths
		if [ "$busy" = 1 ] || [ "$n" = 0 ]; then
			[ "$since" = 0 ] || total=$((total + last - since))
			if [ -n "$warned" ]; then
				printf '%s %s %s\n' '@@tfhive-idle' "$tfhive_mark" busy >&"$1"
				[ -z "$2" ] || : >"$2"
			fi
			since=0 warned=''
			continue
		fi
		[ "$since" != 0 ] || since=$tfhive_now
		last=$tfhive_now
		d=$((tfhive_now - since))
		if [ "$stop" != 0 ] && [ "$d" -ge "$stop" ] && [ $((tfhive_now - held)) -gt $((tfhive_hb_timeout * 10)) ]; then
			printf 'stopped %s\n' "$d"
			# Stopped as every stop is (supervisor-run.sh's
			# tfhive_stopping): the run's stop signal, the deadline
			# written first. The grace is a deadline on the clock, not
			# a count of reads: a read on 12 returns at once for each
			# "b" still coming.
			tfhive_stopping
			tfhive_tenths
			d=$((tfhive_now + tfhive_grace))
			while kill -0 -"$tfhive_pid" 2>/dev/null && tfhive_tenths && [ "$tfhive_now" -lt "$d" ]; do
				read -r -t 0.1 -u 12 _
			done
			tfhive_kill
			break
		fi
		if [ "$warn" != 0 ] && [ "$d" -ge "$warn" ] && [ -z "$warned" ]; then
			warned=1
			printf '%s %s %s %s\n' '@@tfhive-idle' "$tfhive_mark" warn "$d" >&"$1"
			[ -z "$2" ] || printf '%s\n' "$((since / 10))" >"$2"
		fi
	done
	# The attempt is over: the supervisor's TERM asks for the total
	# (while it lives: one killed outright asks nothing).
	while kill -0 "$$" 2>/dev/null; do read -r -t 1 -u 12 _; done
}
