#!/bin/sh
# shellcheck disable=SC2154 # tfhive_* are set ahead of this text (shscript)

# follow.sh, on the login node: prints the job's output file from its
# first byte (tfhive_from) as the job writes it, until the job has ended
# and its last bytes are out; then tfhive_mark on a line of its own, and
# the job's accounting record. Parameters: tfhive_job (its id), tfhive_out
# (its output file), tfhive_marker (cancel.sh's file: "cancelled" is
# said after the record where it exists), tfhive_from (the byte to start at, from 1),
# tfhive_poll (seconds between looks at the job's state), tfhive_mark.
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
# The file appears when the job starts: -F waits for it.
tail -F -c +"$tfhive_from" -s "$tfhive_poll" --pid="$tfhive_watcher" "$tfhive_out" 2>/dev/null
wait "$tfhive_watcher"
printf '%s\n' "$tfhive_mark"

if [ -e "$tfhive_marker" ]; then
	echo cancelled
fi
# The record: sacct, which reads the accounting database; where the
# cluster keeps none, sacct --completion (the jobcomp file); else
# scontrol, which knows a job for MinJobAge after its end. A job's record
# reaches the database a moment after its end: asked again for a while.
tfhive_tries=0
while :; do
	for tfhive_how in "" --completion; do
		# shellcheck disable=SC2086 # $tfhive_how is one word or none
		tfhive_rec=$(sacct $tfhive_how --noheader --parsable2 --jobs="$tfhive_job" --format=JobID,State,ExitCode 2>/dev/null) || continue
		if printf '%s\n' "$tfhive_rec" | grep -q "^${tfhive_job}[_|]"; then
			printf '%s\n' "$tfhive_rec" | sed 's/^/sacct|/'
			exit 0
		fi
	done
	tfhive_tries=$((tfhive_tries + 1))
	[ "$tfhive_tries" -lt 20 ] || break
	sleep 1
done
scontrol --oneliner show job "$tfhive_job" 2>/dev/null | sed 's/^/scontrol|/'
exit 0
