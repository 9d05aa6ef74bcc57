#!/bin/sh
# shellcheck disable=SC2154 # tfhive_* are set ahead of this text (shscript)

# follow.sh, on the login node: prints the job's output file from its
# first byte (tfhive_from) as the job writes it, until the job has ended
# and its last bytes are out; then tfhive_mark on a line of its own,
# "cancelled" where cancel.sh left tfhive_marker (then its lines, each
# behind "cancelled|"), and the job's
# accounting record. Parameters: tfhive_job (its id), tfhive_out (its
# output file), tfhive_array (of a job array, its number of tasks, whose
# files are tfhive_dir/job-ID_K.out, each behind tail's "==> FILE <=="
# header; "" for one job), tfhive_marker, tfhive_from (the byte to start
# at, from 1), tfhive_poll (seconds between looks at the job's state),
# tfhive_mark.
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
	set -- -v
	tfhive_k=0
	while [ "$tfhive_k" -lt "$tfhive_array" ]; do
		set -- "$@" "$tfhive_dir/job-${tfhive_job}_$tfhive_k.out"
		tfhive_k=$((tfhive_k + 1))
	done
else
	set -- "$tfhive_out"
fi
# The files appear as the job (each array task) starts: -F waits.
tail -F -c +"$tfhive_from" -s "$tfhive_poll" --pid="$tfhive_watcher" "$@" 2>/dev/null
wait "$tfhive_watcher"
printf '%s\n' "$tfhive_mark"

if [ -e "$tfhive_marker" ]; then
	echo cancelled
	# The jobs not yet ended at the cancel (cancel.sh), ID or ID_K.
	sed 's/^/cancelled|/' "$tfhive_marker"
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
