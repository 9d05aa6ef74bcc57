# shellcheck shell=bash
# A supervisor's second stage, run by the holders' innermost bash: it says
# its claims are held ("@@tfhive-claim ok", its first output line), waits
# for go, then supervises the task:
#   - the task runs in its own session and process group (setsid), stdin
#     empty, in its workdir after the setup snippet (task.sh), with exactly
#     the given environment added: values travel on stdin, never on a
#     command line;
#   - "t"/"k" on stdin send the stop signal (tfhive_stopsig: SIGTERM
#     unless --stop-signal)/SIGKILL to the task's group only (never
#     by pattern: other users' jobs are not ours to kill); one that reached
#     the task while it ran makes the session say "@@tfhive-stopped MARK
#     signalled" after the task's last byte (kept: "stopped" in the status
#     file too): tfhive stopped it, and a task that ended by itself as the
#     line came keeps its own end;
#   - EOF on stdin (tfhive died, its connection closed) or no line for
#     tfhive_hb_timeout seconds (the link went silent: read -t, no file,
#     no polling) stops the group: the stop signal, then KILL the grace
#     later (tfhive_grace);
#   - SIGTERM to the supervisor (tfhive kill) stops the task the same way
#     (one that comes before the task has started, from the claim line
#     on, once it has), a second one kills it, and the session says "@@tfhive-cancelled MARK
#     kill" after the task's last byte, as for a preemption (kept:
#     "cancelled" in the status file too): tfhive's own stops are control
#     lines, so a SIGTERM is someone cancelling the run;
#   - the supervisor killed outright (its holders then release the claims)
#     stops the task at once: a watcher reading a pipe only the supervisor
#     holds open sees EOF; a holder killed is seen at the next control
#     line (heartbeats come every keepalive interval);
#   - a task of a --priority low run, where the host's policy allows
#     preempt_low, is watched for a high run's request to preempt it
#     (preempt-watch.sh): then SIGTERM, SIGKILL after the grace, and the
#     session says "@@tfhive-preempted MARK HIGH USER" on stderr after the
#     task's last byte (kept: "preempted" in the status file too);
#   - a task that holds GPUs is watched for idleness (idle-watch.sh):
#     warned about on the session's stderr, stopped by SIGTERM, SIGKILL
#     after the grace, once idle as long as the rule says; the session
#     says "@@tfhive-idle MARK stopped TENTHS" on stderr after the task's
#     last byte (kept: "idle-stopped" in the status file too), and each
#     attempt's end goes into the host's usage ledger (ledger.sh);
#   - the supervisor exits with the task's status (128+N for signal N).
#
# Kept (tfhive_keep > 0, tfhive run --reconnect): the supervisor outlives
# its session. The task's output goes through a logger per stream into
# files of the run's directory (rundir.sh), which this session and any
# later one (attach.sh) follow from a byte offset, each stream behind a
# "@@tfhive-stream" line; control lines come through a FIFO there, which
# this session and later ones feed. EOF on the session is no longer a
# stop (a reset link and a dead tfhive look the same from here): the task
# is stopped only by a control line, or when no line came for tfhive_keep
# seconds (--reconnect plus the keepalive period). The status goes into
# the directory too, in place (a full disk cannot refuse it), with
# "truncated" when a stream's file could not take all the output: its
# logger then drains the rest, so that the task never blocks or fails on
# a full disk. A session following the task then hears of it after the
# last byte of stderr, on a line "@@tfhive-truncated MARK" (MARK is
# tfhive_mark: the task cannot know it, so its own output never passes
# for that line).
#
# Restarts (tfhive_restarts 1): once an attempt has ended, the supervisor
# says so after the task's last stdout byte, "@@tfhive-attempt MARK N RC"
# and a newline (tfhive takes it out of the stream wherever it is, after a
# partial last line too), and waits for a control line: "r N+1" starts
# the next attempt, with TFHIVE_ATTEMPT N+1, under the same claims (the
# holders never let go in between; any other "r" is one repeated by a new
# session, and passed over); "e" ends the supervisor with RC, as
# do EOF, silence, a holder gone and SIGTERM (during an attempt, SIGTERM
# stops it and ends the supervisor with no attempt line). Kept, each
# attempt has loggers of its own, and the attempt line is appended to the
# stdout file once they have ended, at the offset where the attempt's
# output ends; started by the multiplexer, the supervisor first writes
# "@@tfhive-attempt MARK N RC OFFSET" on its own stdout, which the task
# cannot write to, and tfhive takes a line out of the task's stdout only
# at an offset so given (the run's word is in run.json, which the task
# can read). The tails follow the supervisor then, not a logger (the pid
# file says "-" for the loggers, and the attempt under way, for
# find-run.sh).
#
# The stop signal falls back to the pid: right after & the child may not
# have called setsid yet; the SIGKILL after a grace does not
# (tfhive_kill). Variables are prefixed tfhive_ so as not to meet
# the user's.
#
# Parameters, set by tfhive ahead of this text, with the task's
# environment, exported:
#   tfhive_nclaims     how many lock files the first stage opened
#   tfhive_hb_timeout  seconds without a line from tfhive that mean the
#                      link is dead
#   tfhive_cmd         the task's shell (task.sh)
#   tfhive_keep        0: the supervisor lives and dies with its session;
#                      otherwise kept, and the seconds without a control
#                      line after which it stops its task
#   tfhive_runinfo     kept, the first task on the host: the run's
#                      description (JSON, one line) for a keeper that adopts
#                      it (find-run.sh); otherwise empty
#   tfhive_mark        a random word of this session's tfhive, not
#                      exported: it marks the truncation line and the
#                      attempt lines
#   tfhive_restarts    0: the task runs once; 1: tfhive may restart it
#                      (tfhive run --restarts), see below
#   tfhive_attempt0    with restarts, the number of the first attempt: 0,
#                      or more in a run started again on a new plan after
#                      a lost host, so that TFHIVE_ATTEMPT keeps counting
#   tfhive_stopsig     --stop-signal without SIG (TERM, INT, ...): what
#                      every stop sends the task first ("t", SIGTERM to
#                      the supervisor, a preemption, the link's loss),
#                      SIGKILL following tfhive_grace later
#   tfhive_seen        "-": planned on a probe of its own; otherwise
#                      planned on an older one (a sweep's trial on the
#                      newest coalesced probe), whose waiting tickets'
#                      holders these are, " PID … " (claim-check.sh)
#   tfhive_mux         1: kept, and started by the host's multiplexer
#                      (mux.sh), which made the task's output files and
#                      follows them itself, with this supervisor's own
#                      stdout and stderr: no tails, no markers, no
#                      truncation line (the multiplexer reads the status
#                      file); the preemption line goes to this stderr at
#                      once; 0: otherwise
# and, from the holders' command line, $1 the claims dir, $2 the run id,
# $3 the task's and $4 its claims.
: "${tfhive_nclaims?}" "${tfhive_seen?}" "${tfhive_hb_timeout?}" "${tfhive_cmd?}" "${tfhive_keep?}" "${tfhive_runinfo?}" "${tfhive_mark?}" "${tfhive_restarts?}" "${tfhive_attempt0?}" "${tfhive_mux?}" "${tfhive_stopsig?}" "${tfhive_grace?}"
# From here on a SIGTERM (tfhive kill, which finds this shell by the
# label on its command line) is a stop owed to the task: counted, and
# sent once the task has started (tfhive_spawn). Until the trap, it
# would kill this shell outright, and a task already started would end
# as if it had failed (CI: TestKillCancelsDetachedRun found worker:1
# "exited", killed by signal 15). The full handler (tfhive_stop) comes
# once what it calls is defined. A read gives way to the trap and goes
# on reading.
tfhive_stops=0 tfhive_owed='' tfhive_pid=''
trap 'tfhive_stops=$((tfhive_stops + 1)) tfhive_owed=1' TERM
# Another live holder's label names one of our claims (claim-check.sh):
# the claim is taken, whatever file we locked; so is a turn that a run
# queued since the plan's probe is owed (tfhive_seen).
tfhive_check_claims "$1" "$4" "$tfhive_nclaims" "$tfhive_seen"
case $? in
0) ;;
2)
	echo '@@tfhive-claim queued'
	exit 75
	;;
*) exit 75 ;;
esac
# The lock files' descriptors, opened by the first stage for the holders
# (4, 5, …): the task must not inherit them.
tfhive_fd=4
while [ "$tfhive_fd" -lt "$((4 + tfhive_nclaims))" ]; do
	eval "exec $tfhive_fd<&-"
	tfhive_fd=$((tfhive_fd + 1))
done
# A kept task that cannot have its files says why in place of its claim
# line: the task could not start.
tfhive_cannot() {
	printf '%s%s\n' '@@tfhive-claim failed ' "$1"
	exit 126
}
if [ "$tfhive_keep" != 0 ]; then
	if ! command -v tail >/dev/null 2>&1 || ! command -v tee >/dev/null 2>&1 || ! command -v mkfifo >/dev/null 2>&1; then
		tfhive_cannot 'tail, tee or mkfifo not found on this host (coreutils)'
	fi
	tfhive_rd='' tfhive_why='' # set by tfhive_rundir (rundir.sh, sent ahead of this)
	if [ "$tfhive_mux" != 0 ]; then
		# The multiplexer that started this shell checked the directory
		# (mux.sh) a moment ago, as this user: nobody else can have
		# changed it since. Its stat is a process per task spared, and
		# so is the machine's directory of runs, which it passes in the
		# environment (tfhive_mux_runs: not the task's).
		if [ -n "${tfhive_mux_runs-}" ]; then
			tfhive_runs=$tfhive_mux_runs
		else
			tfhive_runsdir
		fi
		unset tfhive_mux_runs
		# shellcheck disable=SC2154 # tfhive_runs: tfhive_runsdir's
		tfhive_rd=$tfhive_runs/$2
	else
		tfhive_rundir "$2" 1 || tfhive_cannot "$tfhive_why"
	fi
	tfhive_f=$tfhive_rd/${3//:/-}
	# A retried start (same run id) finds its earlier files; a glob costs
	# no process, rm only when there is something to remove.
	tfhive_old=("$tfhive_f".*)
	if [ "$tfhive_mux" = 0 ] && { [ -e "${tfhive_old[0]}" ] || [ -L "${tfhive_old[0]}" ]; }; then rm -f -- "${tfhive_old[@]}"; fi
	# The status slot is written now, while the disk may have room, and
	# overwritten in place at the end. What fails says why, as the system
	# says it ("no space left on device"): its last words, of its first
	# line. The files are made quietly first, and only when that failed
	# again, the FIFOs it made removed, in a command substitution for the
	# system's words (a process only then: the words were a fork for every
	# task, as mux.sh's were). ($$ in the subshell is still the
	# supervisor's.)
	tfhive_files() {
		mkfifo -m 600 "$tfhive_f.ctl" "$tfhive_f.opipe" "$tfhive_f.epipe" && : >"$tfhive_f.out" && : >"$tfhive_f.err" &&
			printf '%47s\n' '' >"$tfhive_f.rc" && printf '%-47s\n' "$$" >"$tfhive_f.pid" &&
			{ [ -f "$tfhive_rd/keeper.gen" ] || printf '1\n' >"$tfhive_rd/keeper.gen"; } &&
			{ [ -z "$tfhive_runinfo" ] || printf '%s\n' "$tfhive_runinfo" >"$tfhive_rd/run.json"; }
	}
	if ! tfhive_files 2>/dev/null; then
		tfhive_e=$(
			rm -f -- "$tfhive_f.ctl" "$tfhive_f.opipe" "$tfhive_f.epipe" 2>/dev/null
			tfhive_files 2>&1
		) ||
			{ tfhive_e=${tfhive_e%%$'\n'*} tfhive_e=${tfhive_e##*: }; tfhive_cannot "cannot create the task's files in $tfhive_rd${tfhive_e:+: ${tfhive_e,}}"; }
	fi
fi
printf '%s\n' '@@tfhive-claim ok'
# Nothing starts until every task of the run holds its claims.
IFS= read -r tfhive_go || exit 75
[ "$tfhive_go" = g ] || exit 75
command -v setsid >/dev/null 2>&1 || { echo 'tfhive: setsid not found on this host (util-linux)' >&2; exit 127; }
tfhive_signal() {
	kill -"$1" -"$tfhive_pid" 2>/dev/null || kill -"$1" "$tfhive_pid" 2>/dev/null
}
# tfhive_kill is the SIGKILL that ends a grace (the timers', a second
# SIGTERM's): the task's group only, with no fallback to the pid. The
# task runs under setsid, so its group is its own; once the group is
# gone the task has ended, and the supervisor may have reaped it by then
# (the timers run beside it and cannot tell): its pid may be some other
# process's now.
tfhive_kill() {
	kill -KILL -"$tfhive_pid" 2>/dev/null
}
# TFHIVE_STOP_DEADLINE names a file that says, once a stop has begun,
# when SIGKILL comes (Unix seconds): a task that traps the stop signal
# reads how long it has to save itself. It is never in a directory
# another user could have made or could change: kept, it is
# NAME.deadline in the run's directory (the user's own, mode 700), which
# goes with the directory; otherwise in a directory of its own, tfhive_dl
# (mktemp -d: a fresh name, mode 700), made in ~/.tfhive once that is a
# real directory of the user's own with mode 700 (tfhive_owndirs, made so
# when missing), never in /tmp or $TMPDIR (shared: a directory there
# could be renamed away and replaced, and what the supervisor writes
# then would go through it), removed as the supervisor ends, by the
# watcher below when the supervisor is killed. No such directory, no
# variable (the task still has TFHIVE_STOP_GRACE).
tfhive_dl=''
if [ "$tfhive_keep" != 0 ]; then
	export TFHIVE_STOP_DEADLINE="$tfhive_f.deadline"
elif tfhive_owndirs 1 '' "$HOME/.tfhive" && tfhive_dl=$(exec mktemp -d "$HOME/.tfhive/stop.XXXXXXXXXX" 2>/dev/null); then
	export TFHIVE_STOP_DEADLINE="$tfhive_dl/deadline"
else
	tfhive_dl=''
fi
# tfhive_stopping writes the deadline, then sends the stop signal.
tfhive_stopping() {
	local now
	if [ -n "${TFHIVE_STOP_DEADLINE-}" ]; then
		printf -v now '%(%s)T' -1
		printf '%s\n' "$((now + (tfhive_grace + 9) / 10))" >"$TFHIVE_STOP_DEADLINE" 2>/dev/null
	fi
	tfhive_signal "$tfhive_stopsig"
}
# tfhive_abandon stops the task as the grace allows, then waits (5 s at
# most) for it to be gone: whoever sees this supervisor's output end may
# take its task for ended.
tfhive_abandon() {
	tfhive_stopping
	tfhive_n=0
	while kill -0 -"$tfhive_pid" 2>/dev/null && [ "$tfhive_n" -lt "$tfhive_grace" ]; do
		sleep 0.1
		tfhive_n=$((tfhive_n + 1))
	done
	tfhive_kill
	tfhive_n=0
	while kill -0 -"$tfhive_pid" 2>/dev/null && [ "$tfhive_n" -lt 50 ]; do
		sleep 0.1
		tfhive_n=$((tfhive_n + 1))
	done
}
# tfhive_signalled, in the reader, passes tfhive's "t" or "k" on to the
# task, writing "s" on descriptor 10 first when the task still runs:
# then, and only then, tfhive stopped it. A task that ended on its own at
# the moment tfhive decided to stop it (it failed with another, say)
# keeps its own end. Its state is read before the signal: a zombie
# (ended, not reaped yet) is no task to stop. The word is written before
# the signal, so it is there once this shell sees the task end. A pipe,
# not a signal to this shell: a trap that cuts bash's wait short as its
# child ends can leave bash waiting for good (bash 5.2).
tfhive_signalled() {
	if read -r tfhive_ps 2>/dev/null <"/proc/$tfhive_pid/stat" && tfhive_ps=${tfhive_ps##*) } && [ "${tfhive_ps%% *}" != Z ]; then
		printf 's\n' >&10
	fi
	if [ "$1" = TERM ]; then tfhive_stopping; else tfhive_signal "$1"; fi
}
# Descriptor 10 is a pipe this shell holds both ends of (pipe.sh):
# reading it never blocks on EOF, and read -t 0 says whether a word is
# there.
tfhive_pipe 10
tfhive_sig=
# The first SIGTERM (tfhive kill) stops the task as the run's --grace
# says: the stop signal, and SIGKILL once the grace is over (a timer in
# the background, whose wait ends as soon as the task is gone), or at
# kill's second SIGTERM if that comes first (kill's own --grace). With
# no task under way (not started yet, or its attempt over: its pid may
# be another process's by now), the stop is owed: tfhive_spawn sends it
# to the next attempt, if one starts.
# shellcheck disable=SC2317 # called by the TERM trap below
tfhive_stop() {
	tfhive_stops=$((tfhive_stops + 1))
	if [ -n "${tfhive_asking-}" ]; then
		kill "$tfhive_reader" 2>/dev/null
	elif [ -z "$tfhive_pid" ]; then
		tfhive_owed=1
	elif [ "$tfhive_stops" = 1 ] || [ -n "$tfhive_owed" ]; then
		tfhive_owed=''
		tfhive_stopping
		# The grace's timer, started from a subshell: this handler can run
		# between a "cmd &" of the main shell and its "x=$!", and a job of
		# its own would be the $! that line reads (a reader's pid taken
		# for the timer's: the reader never ended and held the session
		# until its timeout; TestSupervisorTermedRightAfterGo).
		( {
			tfhive_n=0
			while kill -0 -"$tfhive_pid" 2>/dev/null && [ "$tfhive_n" -lt "$tfhive_grace" ]; do
				sleep 0.1
				tfhive_n=$((tfhive_n + 1))
			done
			tfhive_kill
		} </dev/null >/dev/null 2>&1 3<&- 4>&- 5>&- 6<&- 7>&- 8>&- 9<&- 10<&- & )
	else tfhive_kill; fi
}
trap tfhive_stop TERM
# The claim holders are this shell's flock ancestors: one of them killed
# has released its claim, so the task must not go on.
tfhive_holders=
tfhive_p=$PPID
while [ -r "/proc/$tfhive_p/stat" ] && read -r tfhive_stat 2>/dev/null <"/proc/$tfhive_p/stat" && [ "${tfhive_stat#* (flock) }" != "$tfhive_stat" ]; do
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
# subshell leads no process group) and the reader's from the reader, then
# waits for EOF on a pipe only the supervisor and, until they have said
# who they are, the task's shell and the reader hold: a supervisor killed at any moment after the fork still has
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
	[ -z "$tfhive_dl" ] || rm -rf -- "$tfhive_dl"
)
tfhive_watch=$!
exec 3<&0
# SIGINT and SIGQUIT as the task must have them (signals.sh).
tfhive_sigdfl
# tfhive_spawn starts an attempt of the task.
# shellcheck disable=SC2154 # tfhive_dfl: tfhive_sigdfl's (signals.sh)
tfhive_spawn() {
	if [ "$tfhive_keep" = 0 ]; then
		(
			printf 't %s\n' "$BASHPID" >&7
			exec setsid "${tfhive_dfl[@]}" bash -c "$tfhive_cmd" tfhive-task </dev/null 3<&- 7>&- 9<&- 10<&- 12<&-
		) &
	else
		(
			printf 't %s\n' "$BASHPID" >&7
			exec setsid "${tfhive_dfl[@]}" bash -c "$tfhive_cmd" tfhive-task </dev/null >"$tfhive_f.opipe" 2>"$tfhive_f.epipe" 3<&- 4>&- 5>&- 6<&- 7>&- 8>&- 9<&- 10<&- 12<&-
		) &
	fi
	tfhive_pid=$!
	# A stop that came while there was no task (tfhive_stop) is sent now.
	if [ -n "$tfhive_owed" ]; then
		tfhive_stops=$((tfhive_stops - 1))
		tfhive_stop
	fi
}
if [ "$tfhive_restarts" != 0 ]; then
	tfhive_attempt=$tfhive_attempt0
	export TFHIVE_ATTEMPT=$tfhive_attempt0
fi
if [ "$tfhive_keep" = 0 ]; then
	tfhive_spawn
	tfhive_in=3 tfhive_wait=$tfhive_hb_timeout
else
	# Each stream's logger is a tee into its file: once the file fails (a
	# full disk), GNU tee drops it and goes on copying into /dev/null, so
	# the rest is read, and it exits 1 at the end. One process per
	# stream, no shell around it: a host runs one per stream of every
	# task. With restarts, a pair per attempt: an attempt's loggers end
	# with its output, and then the size of the stdout file is exactly
	# where its output ended (the attempt's record, below).
	tfhive_loggers() {
		tee -a -- "$tfhive_f.out" <"$tfhive_f.opipe" >/dev/null 2>&1 3<&- 6<&- 7>&- 8>&- 9<&- &
		tfhive_lo=$!
		tee -a -- "$tfhive_f.err" <"$tfhive_f.epipe" >/dev/null 2>&1 3<&- 6<&- 7>&- 8>&- 9<&- &
		tfhive_le=$!
	}
	# tfhive_drain waits until the loggers have ended (5 s at most: a
	# process the task left in the background may hold its output; they
	# are then killed) and notes whether a file could not take it all.
	tfhive_trunc=
	tfhive_drain() {
		tfhive_n=0
		while kill -0 "$tfhive_lo" 2>/dev/null || kill -0 "$tfhive_le" 2>/dev/null; do
			[ "$tfhive_n" -lt 500 ] || { kill "$tfhive_lo" "$tfhive_le" 2>/dev/null; break; }
			sleep 0.01
			tfhive_n=$((tfhive_n + 1))
		done
		for tfhive_l in "$tfhive_lo" "$tfhive_le"; do
			wait "$tfhive_l"
			[ $? != 1 ] || tfhive_trunc=' truncated'
		done
	}
	tfhive_loggers
	# The pid file says who to follow: the supervisor, then each stream's
	# writer (attach.sh), written in place like the status. With
	# restarts, the writers change with each attempt: "-", the supervisor
	# is followed; and the attempt under way (find-run.sh).
	if [ "$tfhive_restarts" = 0 ]; then
		tfhive_wo=$tfhive_lo tfhive_we=$tfhive_le
		printf '%-47s\n' "$$ $tfhive_lo $tfhive_le" 1<>"$tfhive_f.pid"
	else
		tfhive_wo=$$ tfhive_we=$$
		printf '%-47s\n' "$$ - - $tfhive_attempt" 1<>"$tfhive_f.pid"
	fi
	tfhive_spawn
	# The FIFO is opened for reading and writing: it never blocks, and
	# never ends when a session's feeder goes.
	exec 6<>"$tfhive_f.ctl"
	tfhive_in=6 tfhive_wait=$tfhive_keep
	# This session is the first to follow the task (attach.sh does the
	# same for later ones): its stdin feeds the FIFO, its stdout and
	# stderr get the files from the start.
	tfhive_feed 1 "$tfhive_f.ctl" <&3 4>&- 5>&- 7>&- &
	tfhive_feed=$!
	# Each tail follows its stream's writer: once that has ended, the tail
	# reads the last bytes and ends. New output wakes it at once
	# (inotify); whether the writer ended is only seen every -s seconds,
	# hence short: a kill(pid, 0) every 50 ms costs nothing.
	if [ "$tfhive_mux" = 0 ]; then
		{ printf '%s\n' '@@tfhive-stream'; exec tail -c +1 --pid="$tfhive_wo" -s 0.05 -f "$tfhive_f.out" 2>/dev/null; } 3<&- 4>&- 5>&- 6<&- 7>&- &
		{ printf '%s\n' '@@tfhive-stream'; exec tail -c +1 --pid="$tfhive_we" -s 0.05 -f "$tfhive_f.err" 2>/dev/null; } >&2 3<&- 4>&- 5>&- 6<&- 7>&- &
		tfhive_te=$!
	fi
	# Past the markers, the session's streams carry the files alone: what
	# bash itself might say (a job's death) must not slip in. Descriptor 8
	# keeps the session's stderr for the truncation line.
	exec 8>&2 2>/dev/null
fi
# The idle watch (idle-watch.sh) of each attempt reports on descriptor
# 11, and warns on the session's stderr: descriptor 8 when kept.
# Each watch closes what it must not hold with exec, not with redirections
# on the function's call: bash keeps a copy of each descriptor a call
# redirects (to put it back after), and the idle watch's copy of 7 kept
# the watcher from ever seeing EOF when this supervisor was killed (CI:
# TestKilledSupervisorReleasesClaims found the task still running).
tfhive_iw='' tfhive_idled='' tfhive_t0=0 tfhive_now=0
tfhive_pipe 12
tfhive_idle_start() {
	tfhive_tenths
	tfhive_t0=$tfhive_now
	[ -n "$tfhive_idle" ] || return 0
	if [ "$tfhive_keep" != 0 ]; then
		exec 11< <(exec </dev/null 3<&- 4>&- 5>&- 6<&- 7>&- 10<&-; tfhive_idle_watch 8 "$tfhive_f.idle")
	else
		exec 11< <(exec </dev/null 3<&- 4>&- 5>&- 6<&- 7>&- 10<&-; tfhive_idle_watch 2 '')
	fi
	tfhive_iw=$!
}
# tfhive_idle_end, once an attempt has ended, asks its watch for the
# idle time (a watch stuck in a hung nvidia-smi is given 2 s) and writes
# the attempt into the ledger: DIR RUN TASK CLAIMS, the holders' words. A
# ledger refused is said where the idle watch warns.
tfhive_idle_end() {
	local w v idle=0 fd=2
	[ "$tfhive_keep" = 0 ] || fd=8
	tfhive_tenths
	if [ -n "$tfhive_iw" ]; then
		kill "$tfhive_iw" 2>/dev/null
		while IFS=' ' read -r -t 2 -u 11 w v; do
			case $w in
			stopped) tfhive_idled=$v ;;
			idle) [[ ! $v =~ ^[0-9]+$ ]] || idle=$v ;;
			esac
		done
		exec 11<&-
		tfhive_iw=''
	fi
	tfhive_ledger "$1" "$2" "$3" "$4" "$((tfhive_t0 / 10))" "$((tfhive_now / 10))" "$idle" "$fd"
}
tfhive_idle_start
# The preemption watch (preempt-watch.sh) of each attempt reports on
# descriptor 9. It follows the attempt's pid (tfhive_pid as it is at its
# fork): one watch an attempt, started once the attempt has its pid and
# ended once it is reaped, so that a restarted task is watched too and a
# pid of an attempt that is over is never signalled.
tfhive_pw='' tfhive_by=''
tfhive_preempt_start() {
	if [ -n "$tfhive_preempt" ] && [ "$1" != - ]; then
		exec 9< <(exec </dev/null 3<&- 4>&- 5>&- 6<&- 7>&- 8>&-; tfhive_preempt_watch "$1" "$2")
		tfhive_pw=$!
	fi
}
# tfhive_preempt_end: whether the attempt was preempted (the watch says
# who before it signals the task), and the watch ended.
tfhive_preempt_end() {
	[ -n "$tfhive_pw" ] || return 0
	read -r -t 0.05 -u 9 tfhive_by || tfhive_by=
	kill "$tfhive_pw" 2>/dev/null
	exec 9<&-
	tfhive_pw=''
}
tfhive_preempt_start "$1" "$2"
# tfhive_listen starts the reader of the control lines for an attempt.
# It tells the watcher its pid itself, as the task's shell does: a
# supervisor killed right after the fork still has its reader stopped.
tfhive_listen() {
	(
		printf 'r %s\n' "$BASHPID" >&7
		exec 7>&-
		while IFS= read -r -t "$tfhive_wait" tfhive_c <&"$tfhive_in" && tfhive_held; do
			case $tfhive_c in
			t) tfhive_signalled TERM ;;
			k) tfhive_signalled KILL ;;
			b) [ -z "$tfhive_iw" ] || printf 'b\n' >&12 ;;
			esac
		done
		tfhive_abandon
	) 4>&- 5>&- 8>&- 9<&- &
	tfhive_reader=$!
}
tfhive_listen
# Between attempts, this shell reads the control lines itself.
if [ "$tfhive_restarts" = 0 ] || [ "$tfhive_keep" != 0 ]; then exec 3<&-; fi
while :; do
	tfhive_rc=
	while [ -z "$tfhive_rc" ]; do
		tfhive_seen=$tfhive_stops
		wait "$tfhive_pid"
		tfhive_st=$?
		kill -0 "$tfhive_pid" 2>/dev/null && continue
		# A SIGTERM's trap may have cut the wait short (its status is then
		# 128+15, not the task's) and the task ended just after, reaped
		# by bash meanwhile: bash still holds its status for one more
		# wait. Not a child any more (127): the wait above had it.
		if [ "$tfhive_stops" != "$tfhive_seen" ]; then
			wait "$tfhive_pid"
			tfhive_again=$?
			[ "$tfhive_again" = 127 ] || tfhive_st=$tfhive_again
		fi
		tfhive_rc=$tfhive_st
	done
	# The attempt is over and reaped: its pid is nobody's to signal now.
	tfhive_pid=''
	tfhive_preempt_end
	tfhive_idle_end "$1" "$2" "$3" "$4"
	# Whether tfhive's stop reached this attempt (tfhive_signalled): the
	# words are taken out, so that the next attempt starts with none.
	tfhive_sig=
	while read -r -t 0 -u 10; do
		read -r -u 10 _
		tfhive_sig=1
	done
	# Stopped by SIGTERM (tfhive kill): no attempt line, no next attempt.
	if [ "$tfhive_restarts" = 0 ] || [ "$tfhive_stops" != 0 ]; then break; fi
	# A preempted attempt is not started again: its GPUs are the high
	# run's now.
	[ -z "$tfhive_by" ] || break
	# Nor one stopped as idle: the rule would stop the next one too.
	[ -z "$tfhive_idled" ] || break
	kill "$tfhive_reader" 2>/dev/null
	wait "$tfhive_reader"
	if [ "$tfhive_keep" = 0 ]; then
		printf '%s %s %s %s\n' '@@tfhive-attempt' "$tfhive_mark" "$tfhive_attempt" "$tfhive_rc"
	else
		# Once the attempt's loggers have ended, the stdout file ends
		# where its output does: the record says that offset, and the
		# attempt line goes there, appended by this shell (no task's
		# process can write the file any more). Started by the
		# multiplexer, the record goes on this supervisor's own stdout
		# first, a file the task never writes to: tfhive takes an attempt
		# line out of the task's stdout only at an offset a record gave,
		# so one the task printed (the run's word is in run.json) is
		# output like any other. The record also goes into NAME.att ("N
		# RC OFFSET"), before the line, for a later session (attach.sh)
		# and logs -H (rundir.sh's tfhive_records): the task's output
		# never goes there. What this guarantees is that nothing the task
		# prints counts as an attempt line; a task's process that writes
		# NAME.att itself (it runs as the same user) is not kept from it.
		tfhive_drain
		tfhive_size=$(exec stat -c %s -- "$tfhive_f.out" 2>/dev/null)
		[ "$tfhive_mux" = 0 ] || printf '%s %s %s %s %s\n' '@@tfhive-attempt' "$tfhive_mark" "$tfhive_attempt" "$tfhive_rc" "${tfhive_size:--}"
		[ -z "$tfhive_size" ] || printf '%s %s %s\n' "$tfhive_attempt" "$tfhive_rc" "$tfhive_size" >>"$tfhive_f.att"
		printf '%s %s %s %s\n' '@@tfhive-attempt' "$tfhive_mark" "$tfhive_attempt" "$tfhive_rc" >>"$tfhive_f.out"
	fi
	# The answer is read by a child, as the reader does: a wait, unlike a
	# read, gives way to SIGTERM's trap, which then ends it.
	tfhive_asking=1
	tfhive_next="r $((tfhive_attempt + 1))"
	(
		printf 'r %s\n' "$BASHPID" >&7
		exec 7>&-
		while IFS= read -r -t "$tfhive_wait" tfhive_c <&"$tfhive_in" && tfhive_held; do
			case $tfhive_c in
			"$tfhive_next") exit 0 ;;
			e) exit 1 ;;
			esac
		done
		exit 1
	) 4>&- 5>&- 8>&- &
	tfhive_reader=$!
	[ "$tfhive_stops" = 0 ] || kill "$tfhive_reader" 2>/dev/null
	wait "$tfhive_reader"
	tfhive_st=$?
	while kill -0 "$tfhive_reader" 2>/dev/null; do
		wait "$tfhive_reader"
		tfhive_st=$?
	done
	tfhive_asking=
	if [ "$tfhive_st" != 0 ] || [ "$tfhive_stops" != 0 ]; then break; fi
	tfhive_attempt=$((tfhive_attempt + 1))
	TFHIVE_ATTEMPT=$tfhive_attempt
	# A keeper that adopts the run learns the attempt under way here:
	# attempt lines before it are history (find-run.sh).
	if [ "$tfhive_keep" != 0 ]; then
		printf '%-47s\n' "$$ - - $tfhive_attempt" 1<>"$tfhive_f.pid"
		tfhive_loggers
	fi
	tfhive_spawn
	tfhive_idle_start
	tfhive_preempt_start "$1" "$2"
	tfhive_listen
done
[ "$tfhive_restarts" = 0 ] || exec 3<&- 4>&- 5>&-
# SIGTERM (tfhive kill) stopped it, not a preemption: cancelled.
tfhive_cancel=
[ "$tfhive_stops" = 0 ] || [ -n "$tfhive_by" ] || tfhive_cancel='kill'
# tfhive's "t" or "k" reached the task while it ran (tfhive_signalled):
# stopped by tfhive, whatever its status.
tfhive_stopped=
[ -z "$tfhive_sig" ] || tfhive_stopped='signalled'
if [ "$tfhive_keep" != 0 ]; then
	# The loggers end when the task's last process closes its output.
	tfhive_drain
	printf '%-47s\n' "$tfhive_rc$tfhive_trunc${tfhive_by:+ preempted}${tfhive_cancel:+ cancelled}${tfhive_stopped:+ stopped}${tfhive_idled:+ idle-stopped}" 1<>"$tfhive_f.rc"
	kill "$tfhive_feed" 2>/dev/null
	if [ "$tfhive_mux" != 0 ]; then
		# The multiplexer follows this stderr's file with the task's and
		# gives the status only once it has them all: no tail to wait for.
		[ -z "$tfhive_by" ] || printf '%s %s %s\n' '@@tfhive-preempted' "$tfhive_mark" "$tfhive_by" >&8
		[ -z "$tfhive_cancel" ] || printf '%s %s %s\n' '@@tfhive-cancelled' "$tfhive_mark" "$tfhive_cancel" >&8
		[ -z "$tfhive_stopped" ] || printf '%s %s %s\n' '@@tfhive-stopped' "$tfhive_mark" "$tfhive_stopped" >&8
		[ -z "$tfhive_idled" ] || printf '%s %s %s %s\n' '@@tfhive-idle' "$tfhive_mark" stopped "$tfhive_idled" >&8
	elif [ -n "$tfhive_trunc" ] || [ -n "$tfhive_by" ] || [ -n "$tfhive_cancel" ] || [ -n "$tfhive_stopped" ] || [ -n "$tfhive_idled" ]; then
		# After stderr's last byte: once its tail has ended (or is a
		# zombie: once this supervisor is gone, its orphans' reaper may
		# never reap). In the background, as the tails are: a session that
		# no longer reads must not keep this supervisor, and its claims,
		# from ending.
		{
			while read -r tfhive_s <"/proc/$tfhive_te/stat" && tfhive_s=${tfhive_s##*) } && [ "${tfhive_s%% *}" != Z ]; do
				sleep 0.01
			done
			[ -z "$tfhive_trunc" ] || printf '%s %s\n' '@@tfhive-truncated' "$tfhive_mark" >&8
			[ -z "$tfhive_by" ] || printf '%s %s %s\n' '@@tfhive-preempted' "$tfhive_mark" "$tfhive_by" >&8
			[ -z "$tfhive_cancel" ] || printf '%s %s %s\n' '@@tfhive-cancelled' "$tfhive_mark" "$tfhive_cancel" >&8
			[ -z "$tfhive_stopped" ] || printf '%s %s %s\n' '@@tfhive-stopped' "$tfhive_mark" "$tfhive_stopped" >&8
			[ -z "$tfhive_idled" ] || printf '%s %s %s %s\n' '@@tfhive-idle' "$tfhive_mark" stopped "$tfhive_idled" >&8
		} 2>/dev/null 3<&- 6<&- 7>&- &
	fi
	exec 8>&-
else
	if [ -n "$tfhive_by" ]; then
		printf '%s %s %s\n' '@@tfhive-preempted' "$tfhive_mark" "$tfhive_by" >&2
	elif [ -n "$tfhive_cancel" ]; then
		printf '%s %s %s\n' '@@tfhive-cancelled' "$tfhive_mark" "$tfhive_cancel" >&2
	fi
	[ -z "$tfhive_stopped" ] || printf '%s %s %s\n' '@@tfhive-stopped' "$tfhive_mark" "$tfhive_stopped" >&2
	[ -z "$tfhive_idled" ] || printf '%s %s %s %s\n' '@@tfhive-idle' "$tfhive_mark" stopped "$tfhive_idled" >&2
fi
trap '' TERM
kill "$tfhive_watch" "$tfhive_reader" 2>/dev/null
[ -z "$tfhive_dl" ] || rm -rf -- "$tfhive_dl"
exit "$tfhive_rc"
