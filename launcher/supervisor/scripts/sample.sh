# shellcheck shell=bash
# GPU usage of a run's GPUs on one host, for tfhive run --sample: a marker
# line, then nvidia-smi's CSV for the GPUs asked, then the intruders on
# them, every tfhive_every seconds, in one session for the whole run. The
# wait between samples is a read of stdin: tfhive closes it when the run
# ends, and sshd when the connection goes, so the loop ends at once then
# and never outlives the run. A line read takes a sample at once.
#
# In a session of its own, stdout is the sampler's alone. Run by a host's
# multiplexer (mux.sh), it writes to the multiplexer's stderr, where the
# login shell's lines and any error of the multiplexer's may come too:
# there every line of its starts with tfhive_tag, which holds the
# multiplexer's random word.
#
# Parameters, set by tfhive ahead of this text:
#   tfhive_ids    the GPUs' indexes, comma-separated
#   tfhive_every  seconds between samples (a decimal fraction allowed)
#   tfhive_run    the run id
#   tfhive_tag    what starts each line: empty in a session of its own
: "${tfhive_ids?}" "${tfhive_every?}" "${tfhive_run?}" "${tfhive_tag?}"
# tfhive_ours PID: the process descends from one of this user's processes
# whose command line carries the run's label ("tfhive-sup DIR RUN ...",
# the claim holders' and supervisors'). Parents come from /proc/PID/stat
# (what follows the command name's last ") " is "STATE PPID ..."), owners
# from /proc/PID's owner, command lines from /proc/PID/cmdline: the shell
# reads them itself, no program is started.
tfhive_ours() {
	local c=$1 n=0 s k
	local -a a
	while [ "$n" -lt 64 ] && [ "$c" -gt 1 ] && read -r s 2>/dev/null <"/proc/$c/stat"; do
		if [ -O "/proc/$c" ] && mapfile -d '' -t a 2>/dev/null <"/proc/$c/cmdline"; then
			for ((k = 0; k + 2 < ${#a[@]}; k++)); do
				[ "${a[k]}" = tfhive-sup ] && [ "${a[k + 2]}" = "$tfhive_run" ] && return 0
			done
		fi
		s=${s##*) }
		read -r _ c _ <<<"$s"
		n=$((n + 1))
	done
	return 1
}
# tfhive_intruders: "@@tfhive-intruder GPU PID USER COMMAND" for each
# compute process on the GPUs sampled (tfhive_l's rows give their UUIDs)
# that is not the run's, of nvidia-smi's first 1024 lines. ps runs only
# for an intruder.
tfhive_intruders() {
	local -A idx
	local i u pid g tfhive_who tfhive_q n=0
	printf -v tfhive_q '%s\n' "${tfhive_l[@]}"
	while IFS=', ' read -r i u _; do
		[[ $i =~ ^[0-9]+$ ]] && [ -n "$u" ] && idx[$u]=$i
	done <<<"$tfhive_q"
	[ "${#idx[@]}" -gt 0 ] || return 0
	while [ "$((n += 1))" -le 1024 ] && IFS=', ' read -r pid g; do
		if ! [[ $pid =~ ^[0-9]+$ ]] || [ -z "$g" ] || [ -z "${idx[$g]-}" ] || tfhive_ours "$pid"; then continue; fi
		# A process gone meanwhile (nvidia-smi lists the dead a while) is
		# nobody's: only one ps still sees is reported.
		tfhive_who=$(exec ps -ww -o user:32= -o args= -p "$pid" 2>/dev/null)
		if [ -z "$tfhive_who" ]; then continue; fi
		printf '%s@@tfhive-intruder %s %s %s\n' "$tfhive_tag" "${idx[$g]}" "$pid" "$tfhive_who"
	done < <(exec nvidia-smi --query-compute-apps=pid,gpu_uuid --format=csv,noheader 2>/dev/null)
}
while :; do
	printf '%s%s\n' "$tfhive_tag" '@@tfhive-sample'
	# nvidia-smi's first 256 lines, read from a process substitution whose
	# subshell execs it: one process, where a command substitution around
	# "nvidia-smi | head" was three (a subshell, nvidia-smi, head), and the
	# intruders' query below three more. Once mapfile has its lines, a
	# query that goes on meets a closed pipe and ends. As the command
	# substitution did, trailing empty lines are dropped, and no output at
	# all is one empty row.
	mapfile -t -n 256 tfhive_l < <(exec nvidia-smi --query-gpu=index,uuid,utilization.gpu,memory.used --format=csv,noheader,nounits -i "$tfhive_ids" 2>&1)
	while [ "${#tfhive_l[@]}" -gt 0 ] && [ -z "${tfhive_l[-1]}" ]; do unset 'tfhive_l[-1]'; done
	[ "${#tfhive_l[@]}" -gt 0 ] || tfhive_l=('')
	# One printf: the sample's rows in one write, each line tagged.
	printf '%s\n' "${tfhive_l[@]/#/"$tfhive_tag"}"
	tfhive_intruders
	read -r -t "$tfhive_every" _
	tfhive_rc=$?
	# 0: a line; above 128: the time is up; anything else: EOF.
	[ "$tfhive_rc" -eq 0 ] || [ "$tfhive_rc" -gt 128 ] || exit 0
done
