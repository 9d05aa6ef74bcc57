# shellcheck shell=bash
# shellcheck disable=SC2154 # tfhive_layout: defined by the generated part before this one

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
