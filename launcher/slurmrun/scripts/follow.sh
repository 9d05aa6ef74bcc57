#!/bin/sh
# shellcheck disable=SC2154 # tfhive_* are set ahead of this text (shscript)

# follow.sh, on the login node: prints the job's output file from its
# first byte (tfhive_from) as the job writes it, until the job has ended
# and its last bytes are out; then a newline and tfhive_mark on a line of
# its own, "cancelled" where cancel.sh left its marker
# (job-ID.out.cancelled in $HOME/tfhive_rundir, the run's directory
# there; then its lines, each behind "cancelled|"), the tasks' ends (the
# files their shells left) and the job's
# accounting record. Parameters: tfhive_job (its id), tfhive_out (its
# output file), tfhive_dir (the run's directory), tfhive_array (of a job
# array, its number of tasks, whose files are tfhive_dir/job-ID_K.out,
# each behind tail's "==> FILE <==" header, named through a link that
# holds tfhive_token; "" for one job), tfhive_tasks (the tasks' ids),
# tfhive_rundir, tfhive_from (the byte to start at, from 1), tfhive_poll
# (seconds between looks at the job's state), tfhive_mark.
#
# One tail -F reads the file (inotify where the filesystem has it, a look
# every tfhive_poll seconds where it has not: NFS); a watcher beside it
# asks squeue for the job's state every tfhive_poll seconds, and ends
# once the job has: tail --pid then prints what is left and ends.
set -u

# tfhive_alive: the job is still queued or running. squeue failing for
# any other reason than a job it no longer knows (slurmctld restarting)
# counts as alive: the next look decides.
tfhive_alive() {
	tfhive_state=$(squeue --noheader --jobs="$tfhive_job" --states=all --format=%T 2>&1) || {
		case $tfhive_state in
		*"Invalid job id"*) return 1 ;;
		esac
		return 0
	}
	for tfhive_s in $tfhive_state; do
		case $tfhive_s in
		PENDING | RUNNING | CONFIGURING | COMPLETING | SUSPENDED | REQUEUED | REQUEUE_FED | REQUEUE_HOLD | RESIZING | SIGNALING | STAGE_OUT | RESV_DEL_HOLD) return 0 ;;
		esac
	done
	return 1
}

(
	while tfhive_alive; do
		sleep "$tfhive_poll"
	done
) &
tfhive_watcher=$!
if [ -n "$tfhive_array" ]; then
	# Each array task's file by a name that holds tfhive_token, through a
	# link to the run's directory in a private one here: tail's headers
	# say it, and no line a task prints can (tfhive knows the token).
	tfhive_tmp=$(mktemp -d "${TMPDIR:-/tmp}/tfhive-follow.XXXXXX") || exit 73
	trap 'rm -rf "$tfhive_tmp"' EXIT
	trap 'exit 129' HUP
	trap 'exit 143' TERM
	ln -s "$tfhive_dir" "$tfhive_tmp/$tfhive_token" || exit 73
	set -- -v
	tfhive_k=0
	while [ "$tfhive_k" -lt "$tfhive_array" ]; do
		set -- "$@" "$tfhive_tmp/$tfhive_token/job-${tfhive_job}_$tfhive_k.out"
		tfhive_k=$((tfhive_k + 1))
	done
else
	set -- "$tfhive_out"
fi
# The files appear as the job (each array task) starts: -F waits.
tail -F -c +"$tfhive_from" -s "$tfhive_poll" --pid="$tfhive_watcher" "$@" 2>/dev/null
wait "$tfhive_watcher"
# The mark on a line of its own even where the job's output ends in the
# middle of one: tfhive drops the empty line this makes otherwise.
printf '\n%s\n' "$tfhive_mark"

if [ -e "$HOME/$tfhive_rundir/job-$tfhive_job.out.cancelled" ]; then
	echo cancelled
	# The jobs not yet ended at the cancel (cancel.sh), ID or ID_K.
	sed 's/^/cancelled|/' "$HOME/$tfhive_rundir/job-$tfhive_job.out.cancelled"
fi
# Each task's end, as its shell left it (fate-JOB-ID beside the output,
# JOB the array task's ARRAYJOB_K): "fate|JOB|ID|WORDS", bounded.
tfhive_fates() {
	for tfhive_t in $tfhive_tasks; do
		if [ -f "$tfhive_dir/fate-$1-$tfhive_t" ]; then
			printf 'fate|%s|%s|%s\n' "$1" "$tfhive_t" "$(head -c 64 "$tfhive_dir/fate-$1-$tfhive_t" | tr -d '|\n')"
		fi
	done
}
if [ -n "$tfhive_array" ]; then
	tfhive_k=0
	while [ "$tfhive_k" -lt "$tfhive_array" ]; do
		tfhive_fates "${tfhive_job}_$tfhive_k"
		tfhive_k=$((tfhive_k + 1))
	done
else
	tfhive_fates "$tfhive_job"
fi
# The record: sacct, which reads the accounting database; where the
# cluster keeps none, scontrol, which knows a job (each array task) for
# MinJobAge after its end; else sacct --completion (the jobcomp file, which
# names array tasks by job ids of their own). A job's record reaches the
# database a moment after its end: asked again for a while.
tfhive_tries=0
while :; do
	if tfhive_rec=$(sacct --noheader --parsable2 --jobs="$tfhive_job" --format=JobID,State,ExitCode 2>/dev/null) &&
		printf '%s\n' "$tfhive_rec" | grep -q "^${tfhive_job}[_|]"; then
		printf '%s\n' "$tfhive_rec" | sed 's/^/sacct|/'
		exit 0
	fi
	if tfhive_rec=$(scontrol --oneliner show job "$tfhive_job" 2>/dev/null) && [ -n "$tfhive_rec" ]; then
		printf '%s\n' "$tfhive_rec" | sed 's/^/scontrol|/'
		exit 0
	fi
	if tfhive_rec=$(sacct --completion --noheader --parsable2 --jobs="$tfhive_job" --format=JobID,State,ExitCode 2>/dev/null) &&
		printf '%s\n' "$tfhive_rec" | grep -q "^${tfhive_job}[_|]"; then
		printf '%s\n' "$tfhive_rec" | sed 's/^/sacct|/'
		exit 0
	fi
	tfhive_tries=$((tfhive_tries + 1))
	[ "$tfhive_tries" -lt 20 ] || exit 0
	sleep 1
done
