# shellcheck shell=bash
# tfhive logs -H …: a kept run's task output, from its files on this host
# (~/.tfhive/runs/RUN, see rundir.sh), for a run started elsewhere. It
# only reads: nothing is written there, no control line is fed.
#
# One task (tfhive_task set): its stdout file on this session's stdout
# and its stderr file on stderr, each behind a "@@tfhive-stream" line;
# with tfhive_follow 1, followed as attach.sh does, from the start, until
# the task's supervisor ends, or this session's stdin does (tfhive went
# away: the tails go too). A supervisor is followed, never signalled, and
# only once /proc says it is this user's supervisor of this very task.
#
# Every task (tfhive_task empty): after a "@@tfhive-logs" line, each
# task's stdout file, then its stderr file, on stdout, each behind a line
# "@@tfhive-log NAME.out" (or .err) and each of its lines behind "|", so
# that no line of a task can pass for a marker. One awk reads them all.
#
# A line "@@tfhive-none WHY" instead says that the host holds no such run
# or task, or that its directory is not the user's own (rundir.sh).
#
# A run with restarts has attempt lines in its tasks' stdout files
# (supervisor-run.sh), marked with the run's word (run.json). The word
# proves nothing (the task can read run.json and print such a line): a
# line counts only at an offset the supervisor gave in the task's file
# NAME.att, which the task's output never goes to. For every task, awk
# takes those out, joining a partial line before one with the line after
# it; for one task, a line "@@tfhive-mark MARK" before the streams tells
# tfhive the word, the supervisor's records come in the stdout stream
# behind tfhive_rmark (rundir.sh's tfhive_records), and tfhive takes the
# lines out.
#
# Parameters, set by tfhive ahead of this text:
#   tfhive_run     the run id
#   tfhive_task    the task's id (worker:0), or empty: every task
#   tfhive_follow  1: follow the one task until it ends
#   tfhive_rmark   a random word of this session alone (tfhive_records)
: "${tfhive_run?}" "${tfhive_task?}" "${tfhive_follow?}" "${tfhive_rmark?}"
tfhive_none() {
	printf '@@tfhive-none %s\n' "$1"
	exit 0
}
tfhive_rd='' tfhive_why='' # set by tfhive_rundir (rundir.sh, sent ahead of this)
tfhive_pid='' tfhive_lo='' tfhive_le='' tfhive_alive=0 tfhive_w='' # set by tfhive_supervisor, tfhive_writer (rundir.sh)
tfhive_rundir "$tfhive_run" 0 || tfhive_none "$tfhive_why"
tfhive_mk=
tfhive_j=$(head -c 1048576 "$tfhive_rd/run.json" 2>/dev/null | head -n 1)
case $tfhive_j in *'"mark":"'*)
	tfhive_mk=${tfhive_j##*\"mark\":\"}
	tfhive_mk=${tfhive_mk%%\"*}
	case $tfhive_mk in *[!A-Za-z0-9]*) tfhive_mk= ;; esac
	;;
esac
# A task's files count as regular files only, never symlinks.
tfhive_has() {
	for tfhive_x in out err pid; do
		{ [ -f "$1.$tfhive_x" ] && [ ! -L "$1.$tfhive_x" ]; } || return 1
	done
}
if [ -z "$tfhive_task" ]; then
	export LC_ALL=C
	set --
	for tfhive_p in "$tfhive_rd"/*.pid; do
		tfhive_f=${tfhive_p%.pid}
		tfhive_has "$tfhive_f" && set -- "$@" "$tfhive_f.out" "$tfhive_f.err"
	done
	[ $# -gt 0 ] || tfhive_none "no task of run $tfhive_run in $tfhive_rd"
	printf '%s\n' '@@tfhive-logs'
	# pos is the file offset of $0 (bytes: LC_ALL=C). An attempt line
	# ends its line; at an offset not among the records it is looked
	# for again, once: a line read is a line whose record was written.
	exec awk -v mk="$tfhive_mk" '
		function recs(f, l, w) {
			split("", at)
			if (f !~ /\.out$/) return
			f = substr(f, 1, length(f) - 4) ".att"
			while ((getline l < f) > 0) if (split(l, w, " ") == 3) at[w[3]] = 1
			close(f)
		}
		function last(s, m, i, j) {
			i = 0
			while ((j = index(substr(s, i + 1), m)) > 0) i += j
			return i
		}
		FNR == 1 { if (held != "") print "|" held; held = ""; pos = 0; n = FILENAME; sub(/.*\//, "", n); print "@@tfhive-log " n; recs(FILENAME) }
		{ p = pos; pos += length($0) + 1 }
		mk != "" && (i = last($0, "@@tfhive-attempt " mk " ")) > 0 && substr($0, i + 18 + length(mk)) ~ /^[0-9]+ [0-9]+$/ {
			o = p + i - 1
			if (!((o "") in at)) recs(FILENAME)
			if ((o "") in at) { held = held substr($0, 1, i - 1); next }
		}
		{ print "|" held $0; held = "" }
		END { if (held != "") print "|" held }' "$@"
fi
tfhive_f=$tfhive_rd/${tfhive_task//:/-}
tfhive_has "$tfhive_f" || tfhive_none "no task $tfhive_task of run $tfhive_run in $tfhive_rd"
[ -z "$tfhive_mk" ] || printf '@@tfhive-mark %s\n' "$tfhive_mk"
printf '%s\n' '@@tfhive-stream'
printf '%s\n' '@@tfhive-stream' >&2
tfhive_alive=0
if [ "$tfhive_follow" = 1 ]; then
	tfhive_supervisor "$tfhive_f.pid" "$tfhive_run" "$tfhive_task"
fi
if [ "$tfhive_alive" = 0 ]; then
	cat "$tfhive_f.out"
	[ -z "$tfhive_mk" ] || tfhive_records "$tfhive_f" "$tfhive_rmark" 2>/dev/null
	exec cat "$tfhive_f.err" >&2
fi
exec 4<&0
tfhive_writer "$tfhive_lo"
tail -c +1 --pid="$tfhive_w" -s 0.05 -f "$tfhive_f.out" 2>/dev/null 4<&- &
tfhive_t1=$!
tfhive_writer "$tfhive_le"
tail -c +1 --pid="$tfhive_w" -s 0.05 -f "$tfhive_f.err" 4<&- >&2 2>/dev/null &
tfhive_t2=$!
tfhive_rp=
if [ -n "$tfhive_mk" ]; then
	tfhive_records "$tfhive_f" "$tfhive_rmark" "$tfhive_pid" 2>/dev/null 4<&- &
	tfhive_rp=$!
fi
# Past the markers, the streams carry the files alone: what bash itself
# might say (a job's death) must not slip in.
exec 2>/dev/null
{
	IFS= read -r _ <&4
	kill "$tfhive_t1" "$tfhive_t2" $tfhive_rp
} >/dev/null &
tfhive_eof=$!
exec 4<&-
wait "$tfhive_t1" "$tfhive_t2" $tfhive_rp
kill "$tfhive_eof"
exit 0
