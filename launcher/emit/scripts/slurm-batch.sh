# shellcheck shell=bash
# shellcheck disable=SC2154 # tfhive_run_id, tfhive_grace, tfhive_secrets, tfhive_*_nodes: set by the generated part before this one

# The batch script itself, on the job's first node. Two srun steps: one
# for the tasks whose exit decides the job ("train": the workers, or the
# chief), one for those stopped when the training ends ("serve": the ps,
# the evaluator, the workers under a chief). As with tfhive run: the job
# ends when the training does, the serving tasks are stopped (SIGTERM,
# SIGKILL after the grace period), and the job's exit status is that of
# the task that decided it. A serving task that fails (a ps) ends the
# training at once.

# --env NAME values come from the environment sbatch ran in: the --export
# line above names them, and this script never holds them.
for tfhive_k in "${tfhive_secrets[@]}"; do
	if [ -z "${!tfhive_k+set}" ]; then
		echo "tfhive: error: $tfhive_k is not set: export it where you run sbatch (it was given as --env $tfhive_k)" >&2
		exit 2
	fi
done
# The steps get this script's environment: the node's login environment,
# the named secrets and Slurm's own (--export above kept the submitting
# shell's out).
export SLURM_EXPORT_ENV=ALL
# Each step's tasks per node come from its host list, not the job's.
unset SLURM_NTASKS_PER_NODE
mapfile -t tfhive_nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
tfhive_dir=$(mktemp -d "${TMPDIR:-/tmp}/tfhive-$SLURM_JOB_ID.XXXXXX") || exit 1
trap 'rm -rf "$tfhive_dir"' EXIT

# tfhive_step NAME NODE... starts one srun for the tasks of step NAME,
# task k on node NODE[k] (--distribution=arbitrary reads them from
# SLURM_HOSTFILE). The steps share the job's CPUs, memory and GPUs
# (--overlap): each task takes its own GPUs. A task that fails ends its
# step (--kill-on-bad-exit); srun's status goes to NAME.exit.
tfhive_step() {
	local tfhive_name=$1 tfhive_n
	shift
	for tfhive_n in "$@"; do
		printf '%s\n' "${tfhive_nodes[tfhive_n]}"
	done >"$tfhive_dir/$tfhive_name.hosts"
	{
		# shellcheck disable=SC2016 # $1 is bash -c's, not ours
		SLURM_HOSTFILE=$tfhive_dir/$tfhive_name.hosts srun --job-name="tfhive-$tfhive_name" \
			--overlap --distribution=arbitrary --ntasks="$#" --kill-on-bad-exit=1 \
			bash -c "$(declare -f tfhive_layout tfhive_setup tfhive_cuda tfhive_fate tfhive_unstarted tfhive_task)"'
tfhive_task "$1"' tfhive-task "$tfhive_name"
		echo "$?" >"$tfhive_dir/$tfhive_name.exit"
	} &
}

# tfhive_ended NAME prints step NAME's status once it has ended.
tfhive_ended() {
	cat "$tfhive_dir/$1.exit" 2>/dev/null
}

# tfhive_wait NAME waits until step NAME has ended, or until the last
# background job has: wait -n returns as each one ends.
tfhive_wait() {
	while [ -z "$(tfhive_ended "$1")" ]; do
		wait -n
		[ $? != 127 ] || return 0
		[ -z "${2-}" ] || kill -0 "$2" 2>/dev/null || return 0
	done
}

# tfhive_stop NAME stops step NAME with SIGTERM to each of its processes, then
# SIGKILL after the grace period.
tfhive_stop() {
	local tfhive_s tfhive_timer
	[ -z "$(tfhive_ended "$1")" ] || return 0
	tfhive_s=$(squeue --noheader --steps --jobs="$SLURM_JOB_ID" --format='%i %j' |
		awk -v n="tfhive-$1" '$2 == n { print $1 }')
	if [ -n "$tfhive_s" ]; then
		scancel --signal=TERM "$tfhive_s" 2>/dev/null
		sleep "$tfhive_grace" &
		tfhive_timer=$!
		tfhive_wait "$1" "$tfhive_timer"
		kill "$tfhive_timer" 2>/dev/null
		[ -n "$(tfhive_ended "$1")" ] || scancel --signal=KILL "$tfhive_s" 2>/dev/null
	fi
	tfhive_wait "$1"
}

# tfhive_done STATUS says how the run ended, and ends the job with STATUS.
tfhive_done() {
	if [ "$1" = 0 ]; then
		echo "tfhive: run $tfhive_run_id succeeded"
	else
		echo "tfhive: run $tfhive_run_id failed (exit $1)" >&2
	fi
	exit "$1"
}

tfhive_step train "${tfhive_train_nodes[@]}"
if [ "${#tfhive_serve_nodes[@]}" -gt 0 ]; then
	tfhive_step serve "${tfhive_serve_nodes[@]}"
fi
while [ -z "$(tfhive_ended train)" ]; do
	wait -n
	[ $? != 127 ] || break
	tfhive_code=$(tfhive_ended serve)
	if [ "${tfhive_code:-0}" != 0 ] && [ -z "$(tfhive_ended train)" ]; then
		echo "tfhive: a task serving the training failed (exit $tfhive_code): stopping the training" >&2
		tfhive_stop train
		tfhive_done "$tfhive_code"
	fi
done
tfhive_code=$(tfhive_ended train)
tfhive_stop serve
tfhive_done "${tfhive_code:-1}"
