# shellcheck shell=bash
# A supervisor's second stage, run by the holders' innermost bash: it says
# its claims are held ("@@tfhive-claim ok", its first output line), waits
# for go, then supervises the task:
#   - the task runs in its own session and process group (setsid), stdin
#     empty, in its workdir after the setup snippet (task.sh), with exactly
#     the given environment added: values travel on stdin, never on a
#     command line;
#   - "t"/"k" on stdin send SIGTERM/SIGKILL to the task's group only (never
#     by pattern: other users' jobs are not ours to kill);
#   - EOF on stdin (tfhive died, its connection closed) or no line for
#     tfhive_hb_timeout seconds (the link went silent: read -t, no file,
#     no polling) stops the group: TERM, then KILL 5 s later;
#   - SIGTERM to the supervisor (tfhive kill) stops the task the same way,
#     a second one kills it;
#   - the supervisor killed outright (its holders then release the claims)
#     stops the task at once: a watcher reading a pipe only the supervisor
#     holds open sees EOF; a holder killed is seen at the next control
#     line (heartbeats come every keepalive interval);
#   - the supervisor exits with the task's status (128+N for signal N).
#
# A group kill falls back to the pid: right after & the child may not
# have called setsid yet. Variables are prefixed tfhive_ so as not to meet
# the user's.
#
# Parameters, set by tfhive ahead of this text, with the task's
# environment, exported:
#   tfhive_nclaims     how many lock files the first stage opened
#   tfhive_hb_timeout  seconds without a line from tfhive that mean the
#                      link is dead
#   tfhive_cmd         the task's shell (task.sh)
: "${tfhive_nclaims?}" "${tfhive_hb_timeout?}" "${tfhive_cmd?}"
# The lock files' descriptors, opened by the first stage for the holders
# (4, 5, …): the task must not inherit them.
tfhive_fd=4
while [ "$tfhive_fd" -lt "$((4 + tfhive_nclaims))" ]; do
	eval "exec $tfhive_fd<&-"
	tfhive_fd=$((tfhive_fd + 1))
done
printf '%s\n' '@@tfhive-claim ok'
# Nothing starts until every task of the run holds its claims.
IFS= read -r tfhive_go || exit 75
[ "$tfhive_go" = g ] || exit 75
command -v setsid >/dev/null 2>&1 || { echo 'tfhive: setsid not found on this host (util-linux)' >&2; exit 127; }
tfhive_signal() {
	kill -"$1" -"$tfhive_pid" 2>/dev/null || kill -"$1" "$tfhive_pid" 2>/dev/null
}
tfhive_abandon() {
	tfhive_signal TERM
	tfhive_n=0
	while kill -0 -"$tfhive_pid" 2>/dev/null && [ "$tfhive_n" -lt 50 ]; do
		sleep 0.1
		tfhive_n=$((tfhive_n + 1))
	done
	tfhive_signal KILL
}
tfhive_stops=0
# shellcheck disable=SC2317 # called by the TERM trap below
tfhive_stop() {
	tfhive_stops=$((tfhive_stops + 1))
	if [ "$tfhive_stops" = 1 ]; then tfhive_signal TERM; else tfhive_signal KILL; fi
}
# The claim holders are this shell's flock ancestors: one of them killed
# has released its claim, so the task must not go on.
tfhive_holders=
tfhive_p=$PPID
while [ -r "/proc/$tfhive_p/stat" ] && read -r tfhive_stat <"/proc/$tfhive_p/stat" && [ "${tfhive_stat#* (flock) }" != "$tfhive_stat" ]; do
	tfhive_holders="$tfhive_holders $tfhive_p"
	tfhive_stat=${tfhive_stat#* (flock) }
	tfhive_p=${tfhive_stat#* }
	tfhive_p=${tfhive_p%% *}
done
tfhive_held() {
	for tfhive_h in $tfhive_holders; do kill -0 "$tfhive_h" 2>/dev/null || return 1; done
}
# The watcher starts first. It learns the task's pid from the task's own
# shell before the task runs (setsid then execs in place: a background
# subshell leads no process group) and the reader's from us, then waits
# for EOF on a pipe only the supervisor and, until its exec, the task's
# shell hold: a supervisor killed at any moment after the fork still has
# its task stopped. Lines are tagged: the two writers race.
exec 7> >(
	while IFS=' ' read -r tfhive_what tfhive_id; do
		case $tfhive_what in
		t) tfhive_pid=$tfhive_id ;;
		r) tfhive_reader=$tfhive_id ;;
		esac
	done
	[ -z "${tfhive_pid-}" ] || tfhive_abandon
	[ -z "${tfhive_reader-}" ] || kill "$tfhive_reader" 2>/dev/null
)
tfhive_watch=$!
exec 3<&0
(
	printf 't %s\n' "$BASHPID" >&7
	exec setsid bash -c "$tfhive_cmd" tfhive-task </dev/null 3<&- 7>&-
) &
tfhive_pid=$!
(
	while IFS= read -r -t "$tfhive_hb_timeout" tfhive_c && tfhive_held; do
		case $tfhive_c in
		t) tfhive_signal TERM ;;
		k) tfhive_signal KILL ;;
		esac
	done
	tfhive_abandon
) <&3 7>&- &
tfhive_reader=$!
printf 'r %s\n' "$tfhive_reader" >&7
exec 3<&-
trap tfhive_stop TERM
tfhive_rc=
while [ -z "$tfhive_rc" ]; do
	wait "$tfhive_pid"
	tfhive_st=$?
	kill -0 "$tfhive_pid" 2>/dev/null || tfhive_rc=$tfhive_st
done
trap '' TERM
kill "$tfhive_watch" "$tfhive_reader" 2>/dev/null
exit "$tfhive_rc"
