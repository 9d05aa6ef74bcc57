#!/bin/sh
# shellcheck disable=SC2154 # tfhive_* are set ahead of this text (shscript)

# submit.sh, on the login node: writes the batch script into the run's
# directory there and submits it. Parameters: tfhive_dir (the run's
# directory, under $HOME when relative), tfhive_batch (the script),
# tfhive_workdir (the job's working directory; "" for $HOME),
# tfhive_partition, tfhive_account, tfhive_time (sbatch's; "" for the
# cluster's default) and tfhive_array ("": one job).
# It prints "tfhive-slurm-job ID DIR": the job's id and the directory's
# absolute path, where the job writes its output (job-ID.out).
set -u
case $tfhive_dir in
/*) ;;
*) tfhive_dir=$HOME/$tfhive_dir ;;
esac
[ -n "$tfhive_workdir" ] || tfhive_workdir=$HOME
if ! command -v sbatch >/dev/null 2>&1; then
	echo "tfhive: error: no sbatch on $(hostname): is this a Slurm login node?" >&2
	exit 69
fi
# Private to the user: the script holds the command and its environment.
umask 077
mkdir -p "$tfhive_dir" || exit 73
printf '%s\n' "$tfhive_batch" >"$tfhive_dir/job.sh" || exit 73
set -- --parsable --chdir="$tfhive_workdir"
if [ -n "$tfhive_array" ]; then
	set -- "$@" --output="$tfhive_dir/job-%A_%a.out"
else
	set -- "$@" --output="$tfhive_dir/job-%j.out"
fi
[ -z "$tfhive_partition" ] || set -- "$@" --partition="$tfhive_partition"
[ -z "$tfhive_account" ] || set -- "$@" --account="$tfhive_account"
[ -z "$tfhive_time" ] || set -- "$@" --time="$tfhive_time"
# sbatch runs in the run's directory: the job's $SLURM_SUBMIT_DIR, where
# each task leaves its end (fate-JOB-ID, the batch script's tfhive_fate).
cd "$tfhive_dir" || exit 73
tfhive_id=$(sbatch "$@" "$tfhive_dir/job.sh") || exit 75
# --parsable prints "ID" or "ID;CLUSTER".
tfhive_id=${tfhive_id%%;*}
printf 'tfhive-slurm-job %s %s\n' "$tfhive_id" "$tfhive_dir"
