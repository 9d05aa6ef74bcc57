# shellcheck shell=bash
# A later session's part in a kept supervisor's task (supervisor-run.sh):
# it follows the task's output files from the given byte offsets, each
# stream behind a "@@tfhive-stream" line, and feeds its stdin into the
# task's control FIFO, until the supervisor ends; then it exits with the
# task's status, after a line "@@tfhive-truncated MARK" on stderr if the
# host's files could not take all the output (supervisor-run.sh).
#
# Before the markers, a line on stderr and exit 125 say why it cannot:
# no trace of the run or task here, a directory that is not the user's
# own (rundir.sh), or a supervisor gone without a status (killed, or the
# host rebooted). One killed while followed counts as killed: 137. The pid file is in that directory, but a pid is
# only followed (never signalled) once /proc says the process is this
# user's supervisor of this very task.
#
# Parameters, set by tfhive ahead of this text:
#   tfhive_run      the run id
#   tfhive_task     the task's id (worker:0)
#   tfhive_off_out  bytes of stdout already received
#   tfhive_off_err  bytes of stderr already received
#   tfhive_gen      the keeper's generation: 1 for the run's own tfhive,
#                   one more for each keeper that adopted it (a newer one
#                   on record refuses this session: "replaced by …")
#   tfhive_mark     a random word of this session's tfhive: it marks the
#                   truncation line
#   tfhive_rmark    with restarts, a random word of this session alone:
#                   the supervisor's records of its attempt lines go into
#                   the stdout stream behind it (rundir.sh's
#                   tfhive_records), so that tfhive takes out an attempt
#                   line only where the supervisor put one, not one the
#                   task printed; empty: none
: "${tfhive_run?}" "${tfhive_task?}" "${tfhive_off_out?}" "${tfhive_off_err?}" "${tfhive_gen?}" "${tfhive_mark?}" "${tfhive_rmark?}"
tfhive_fail() { printf 'tfhive: %s\n' "$1" >&2; exit 125; }
tfhive_rd='' tfhive_why='' # set by tfhive_rundir (rundir.sh, sent ahead of this)
tfhive_pid='' tfhive_lo='' tfhive_le='' tfhive_alive=0 tfhive_w='' # set by tfhive_supervisor, tfhive_writer (rundir.sh)
tfhive_rundir "$tfhive_run" 0 || tfhive_fail "$tfhive_why"
tfhive_f=$tfhive_rd/${tfhive_task//:/-}
for tfhive_x in out err rc pid; do
	{ [ -f "$tfhive_f.$tfhive_x" ] && [ ! -L "$tfhive_f.$tfhive_x" ]; } || tfhive_fail "no trace of task $tfhive_task in $tfhive_rd"
done
{ [ -p "$tfhive_f.ctl" ] && [ ! -L "$tfhive_f.ctl" ]; } || tfhive_fail "no control FIFO for task $tfhive_task in $tfhive_rd"
tfhive_supervisor "$tfhive_f.pid" "$tfhive_run" "$tfhive_task"
tfhive_g=
read -r tfhive_g 2>/dev/null <"$tfhive_rd/keeper.gen"
case $tfhive_g in '' | *[!0-9]*) tfhive_g=1 ;; esac
[ "$tfhive_g" -le "$tfhive_gen" ] || tfhive_fail "replaced by keeper generation $tfhive_g"
if [ "$tfhive_g" -lt "$tfhive_gen" ]; then
	printf '%s\n' "$tfhive_gen" >"$tfhive_rd/keeper.gen.$$" && mv -f "$tfhive_rd/keeper.gen.$$" "$tfhive_rd/keeper.gen"
fi
read -r tfhive_rc _ <"$tfhive_f.rc"
if [ "$tfhive_alive" = 0 ] && [ -z "$tfhive_rc" ]; then
	tfhive_fail "the supervisor of task $tfhive_task is gone without a status (its host rebooted, or it was killed)"
fi
printf '%s\n' '@@tfhive-stream'
printf '%s\n' '@@tfhive-stream' >&2
if [ "$tfhive_alive" = 1 ]; then
	exec 6<>"$tfhive_f.ctl"
	# A background job's stdin would be /dev/null: the session's is passed
	# on by hand.
	exec 4<&0
	tfhive_feed "$tfhive_gen" "$tfhive_f.ctl" <&4 &
	exec 4<&-
	tfhive_feed=$!
	tfhive_writer "$tfhive_lo"
	tail -c +$((tfhive_off_out + 1)) --pid="$tfhive_w" -s 0.05 -f "$tfhive_f.out" 2>/dev/null 6<&- &
	tfhive_t1=$!
	tfhive_writer "$tfhive_le"
	tail -c +$((tfhive_off_err + 1)) --pid="$tfhive_w" -s 0.05 -f "$tfhive_f.err" 6<&- >&2 2>/dev/null &
	tfhive_t2=$!
	tfhive_rp=
	if [ -n "$tfhive_rmark" ]; then
		tfhive_records "$tfhive_f" "$tfhive_rmark" "$tfhive_pid" 2>/dev/null 6<&- &
		tfhive_rp=$!
	fi
	exec 8>&2 2>/dev/null
	wait "$tfhive_t1" "$tfhive_t2"
	kill "$tfhive_feed"
	# The tails end with the loggers; the supervisor writes the status
	# just after, unless it is gone (dead, or a zombie nobody reaps).
	while read -r tfhive_rc _ <"$tfhive_f.rc" && [ -z "$tfhive_rc" ] &&
		read -r tfhive_stat <"/proc/$tfhive_pid/stat" && tfhive_stat=${tfhive_stat##*) } && [ "${tfhive_stat%% *}" != Z ]; do
		sleep 0.01
	done
	# The records' last pass comes once the supervisor is gone.
	[ -z "$tfhive_rp" ] || wait "$tfhive_rp"
else
	tail -c +$((tfhive_off_out + 1)) "$tfhive_f.out" 2>/dev/null
	[ -z "$tfhive_rmark" ] || tfhive_records "$tfhive_f" "$tfhive_rmark" 2>/dev/null
	tail -c +$((tfhive_off_err + 1)) "$tfhive_f.err" >&2 2>/dev/null
	exec 8>&2 2>/dev/null
fi
read -r tfhive_rc tfhive_more <"$tfhive_f.rc"
case " $tfhive_more " in *" truncated "*) printf '%s %s\n' '@@tfhive-truncated' "$tfhive_mark" >&8 ;; esac
# Who preempted it is not kept: the status file says only that.
case " $tfhive_more " in *" preempted "*) printf '%s %s %s\n' '@@tfhive-preempted' "$tfhive_mark" '- -' >&8 ;; esac
case " $tfhive_more " in *" cancelled "*) printf '%s %s %s\n' '@@tfhive-cancelled' "$tfhive_mark" kill >&8 ;; esac
case " $tfhive_more " in *" idle-stopped "*) printf '%s %s %s %s\n' '@@tfhive-idle' "$tfhive_mark" stopped - >&8 ;; esac
case " $tfhive_more " in *" stopped "*) printf '%s %s %s\n' '@@tfhive-stopped' "$tfhive_mark" signalled >&8 ;; esac
exit "${tfhive_rc:-137}"
