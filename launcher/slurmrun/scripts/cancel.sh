#!/bin/sh
# shellcheck disable=SC2154 # tfhive_* are set ahead of this text (shscript)

# cancel.sh, on the login node: stops job tfhive_job as tfhive stops a
# run's tasks. A job still pending is cancelled at once. A running one's
# steps get SIGTERM (the tasks stop as they would under tfhive run); once
# the job has ended, or tfhive_grace seconds later, scancel ends whatever
# is left (Slurm's own SIGTERM, then SIGKILL after the cluster's
# KillWait). First it leaves tfhive_marker (a file of the run's
# directory there): a job whose tasks stopped in time ends COMPLETED, and
# the marker says it was cancelled all the same (follow.sh reads it). In
# it, one a line, the jobs (a job array's tasks, ID_K) not yet ended: a
# sweep's trials that had ended before keep their own end. A job array's
# pending tasks are cancelled first: none starts during the grace.
set -u
squeue --noheader --array --jobs="$tfhive_job" --states=all --format='%i %T' 2>/dev/null |
	awk '$2 !~ /^(COMPLETED|CANCELLED|FAILED|TIMEOUT|NODE_FAIL|PREEMPTED|BOOT_FAIL|DEADLINE|OUT_OF_MEMORY|SPECIAL_EXIT|REVOKED)$/ { print $1 }' \
		2>/dev/null >"$tfhive_marker"
scancel --state=PENDING "$tfhive_job" 2>/dev/null
tfhive_state() {
	squeue --noheader --jobs="$tfhive_job" --states=all --format=%T 2>/dev/null
}
case $(tfhive_state) in
*RUNNING*)
	scancel --signal=TERM "$tfhive_job" 2>/dev/null
	# Looks every 0.2 s: tfhive_grace × 5 of them.
	tfhive_waited=0
	while [ "$tfhive_waited" -lt $((tfhive_grace * 5)) ]; do
		case $(tfhive_state) in
		*RUNNING* | *COMPLETING*) ;;
		*) break ;;
		esac
		sleep 0.2
		tfhive_waited=$((tfhive_waited + 1))
	done
	;;
esac
scancel "$tfhive_job" 2>/dev/null
exit 0
