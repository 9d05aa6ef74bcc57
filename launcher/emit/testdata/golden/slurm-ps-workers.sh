#!/bin/bash -l
# tfhive run r1 for Slurm, as `tfhive plan --emit slurm` planned it: 1 ps, 2 workers, TensorFlow, spread.
# Submit it with `sbatch FILE`; sbatch's own options (--partition,
# --cpus-per-task, --mem, …) win over the #SBATCH lines below.
#SBATCH --job-name=r1
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --export=NONE
#
# Where the tasks run, the nodes numbered as
# `scontrol show hostnames "$SLURM_JOB_NODELIST"` lists them:
#   node 0: ps:0 (port 2222), worker:0 (port 2223)
#   node 1: worker:1 (port 2222)

# shellcheck disable=SC2317 # functions reach the tasks through declare -f
tfhive_run_id=r1
tfhive_grace=10 # seconds between SIGTERM and SIGKILL when stopping tasks (--grace)
tfhive_secrets=() # --env K without a value: exported by sbatch, never written here
tfhive_train_nodes=(0 1) # the node of each task of the train step, by rank
tfhive_serve_nodes=(0) # the node of each task of the serve step, by rank

# tfhive_layout STEP sets what task $SLURM_PROCID of step STEP runs: its
# id, node, GPUs (their positions on the node), environment and command.
# "${tfhive_nodes[N]}" is node N's name.
tfhive_layout() {
	export PYTHONUNBUFFERED=1
	export CUDA_DEVICE_ORDER=PCI_BUS_ID
	export TFHIVE_RUN_ID=r1
	tfhive_cluster='{"ps":["'"${tfhive_nodes[0]}"':2222"],"worker":["'"${tfhive_nodes[0]}"':2223","'"${tfhive_nodes[1]}"':2222"]}'
	case $1:$SLURM_PROCID in
	train:0)
		tfhive_id=worker:0 tfhive_node=0 tfhive_gpus=''
		export TF_CONFIG='{"cluster":'"$tfhive_cluster"',"task":{"type":"worker","index":0}}'
		tfhive_argv=(/opt/trainer --steps 100)
		;;
	train:1)
		tfhive_id=worker:1 tfhive_node=1 tfhive_gpus=''
		export TF_CONFIG='{"cluster":'"$tfhive_cluster"',"task":{"type":"worker","index":1}}'
		tfhive_argv=(/opt/trainer --steps 100)
		;;
	serve:0)
		tfhive_id=ps:0 tfhive_node=0 tfhive_gpus=''
		export TF_CONFIG='{"cluster":'"$tfhive_cluster"',"task":{"type":"ps","index":0}}'
		tfhive_argv=(/opt/trainer --steps 100)
		;;
	esac
}

# Every task runs tfhive_task on its node (srun gives it these functions
# with bash -c), much as tfhive run's supervisor runs a task:
#   - tfhive_layout (above) says what task $SLURM_PROCID of the step is:
#     its id, node, GPUs, environment and command;
#   - every line it writes is shown prefixed "[worker:1 node2] ";
#   - it starts in the workdir after the setup (--workdir, --setup);
#   - a task stopped by SIGTERM (the training is over, or another task
#     failed) ends quietly: exit 0, so that srun's status is the failed
#     task's own; a task that may fail without ending the run (the
#     evaluator, a worker under a chief) also exits 0, saying so.

# tfhive_cuda POSITIONS: the task's GPUs among those Slurm gave the step
# on this node (CUDA_VISIBLE_DEVICES lists them), at the positions the
# plan gave it (0 is the node's first).
tfhive_cuda() {
	local tfhive_all tfhive_p tfhive_out=
	if [ -z "$1" ] || [ -z "${CUDA_VISIBLE_DEVICES-}" ]; then
		echo "$1"
		return 0
	fi
	IFS=, read -ra tfhive_all <<<"$CUDA_VISIBLE_DEVICES"
	for tfhive_p in ${1//,/ }; do
		if [ -z "${tfhive_all[tfhive_p]-}" ]; then
			echo "tfhive: error: Slurm gave this node GPUs $CUDA_VISIBLE_DEVICES; the task needs GPU $((tfhive_p + 1)) of them" >&2
			return 1
		fi
		tfhive_out+=${tfhive_out:+,}${tfhive_all[tfhive_p]}
	done
	echo "$tfhive_out"
}

# tfhive_fate [WORDS]: the task's end in a file of its own, for tfhive
# run --on slurm, which names the directory (tfhive_fates: the run's on
# the login node, beside the job's output) and reads the files once the
# job has ended: fate-JOB-ID, JOB the job's id (ARRAYJOB_K for an array
# task), holding "exited N", "stopped N" or "unstarted". This shell
# writes it, not the task's command, which is not told of it: nothing a
# task prints (its own "tfhive: exited 0", then killed) passes for its
# end. Without WORDS it removes what an earlier start left (a requeue).
tfhive_fate() {
	local tfhive_job=$SLURM_JOB_ID
	[ -n "${tfhive_fates-}" ] && [ -n "$tfhive_id" ] || return 0
	[ -z "${SLURM_ARRAY_JOB_ID-}" ] || tfhive_job=${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID-}
	if [ $# = 0 ]; then
		rm -f "$tfhive_fates/fate-$tfhive_job-$tfhive_id"
	else
		printf '%s\n' "$*" >"$tfhive_fates/fate-$tfhive_job-$tfhive_id" 2>/dev/null
	fi
	return 0
}

# tfhive_unstarted CODE [MESSAGE]: the task cannot start. A stop that
# came meanwhile is why (it may have killed the setup or scontrol): then
# it was stopped.
tfhive_unstarted() {
	if [ -n "$tfhive_stopped" ]; then
		tfhive_fate unstarted
		echo "tfhive: stopped before it started" >&2
		return 0
	fi
	[ -z "${2-}" ] || echo "$2" >&2
	return "$1"
}

# tfhive_task STEP runs task $SLURM_PROCID of step STEP.
tfhive_task() {
	local tfhive_nodes tfhive_id='' tfhive_node='' tfhive_gpus='' tfhive_tolerated='' tfhive_workdir='' \
		tfhive_argv=() tfhive_code tfhive_stopped='' tfhive_prefix
	# Slurm stops a step by signalling every one of its processes. From
	# the start the shell notes the SIGTERM instead of dying of it, so that
	# a task stopped before its command ran still says so. The command
	# gets SIGTERM's default action (a caught signal is reset by exec);
	# the subshell that waits for it and this shell both live on to tell
	# its status and whether it was stopped.
	trap 'tfhive_stopped=1' TERM
	mapfile -t tfhive_nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
	tfhive_layout "$1"
	if [ -z "$tfhive_id" ]; then
		tfhive_unstarted 70 "tfhive: error: step $1 has no task $SLURM_PROCID"
		return
	fi
	tfhive_fate
	if [ "${tfhive_nodes[tfhive_node]-}" != "$SLURMD_NODENAME" ]; then
		tfhive_unstarted 70 "tfhive: error: $tfhive_id runs on $SLURMD_NODENAME, but was placed on ${tfhive_nodes[tfhive_node]-}"
		return
	fi
	# The prefixers ignore the SIGTERM that stops the step, so that what
	# the task says while it stops still reaches the job's output.
	tfhive_prefix="[$tfhive_id $SLURMD_NODENAME] "
	tfhive_prefix=${tfhive_prefix//\\/\\\\}
	tfhive_prefix=${tfhive_prefix//&/\\&}
	tfhive_prefix=${tfhive_prefix//|/\\|}
	exec > >(trap '' TERM && exec sed -u "s|^|$tfhive_prefix|") \
		2> >(trap '' TERM && exec sed -u "s|^|$tfhive_prefix|" >&2)
	export TFHIVE_TASK=$tfhive_id
	CUDA_VISIBLE_DEVICES=$(tfhive_cuda "$tfhive_gpus") || {
		tfhive_unstarted 70 # tfhive_cuda said why
		return
	}
	export CUDA_VISIBLE_DEVICES
	if [ -n "$tfhive_workdir" ] && ! cd "$tfhive_workdir"; then
		tfhive_unstarted 126 "tfhive: cannot cd to $tfhive_workdir"
		return
	fi
	if declare -F tfhive_setup >/dev/null && ! tfhive_setup; then
		tfhive_unstarted 126 "tfhive: setup failed"
		return
	fi
	if [ -n "$tfhive_stopped" ]; then
		tfhive_unstarted 0
		return
	fi
	exec 3>&1 4>&2
	tfhive_code=$(
		trap : TERM
		"${tfhive_argv[@]}" </dev/null >&3 2>&4 3>&- 4>&-
		echo "$?"
	)
	exec 3>&- 4>&-
	tfhive_code=${tfhive_code:-1}
	# Stopped: this shell saw the step's SIGTERM, or the task died of it.
	# In a job only Slurm sends SIGTERM, and where it finds a step's
	# processes by their parents (proctrack/linuxproc) it can miss one.
	if [ -n "$tfhive_stopped" ] || [ "$tfhive_code" = 143 ]; then
		tfhive_fate stopped "$tfhive_code"
		echo "tfhive: stopped (exit $tfhive_code)" >&2
		return 0
	fi
	tfhive_fate exited "$tfhive_code"
	if [ "$tfhive_code" = 0 ]; then
		echo "tfhive: exited 0" >&2
		return 0
	fi
	if [ -n "$tfhive_tolerated" ]; then
		echo "tfhive: exited $tfhive_code; the run goes on without $tfhive_id" >&2
		return 0
	fi
	echo "tfhive: exited $tfhive_code" >&2
	return "$tfhive_code"
}

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
