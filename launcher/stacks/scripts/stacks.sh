# shellcheck shell=bash
# `--hang-after` and `tfhive stacks` on one host: every task of the run
# here, each process of its session, and where it is. A task is found
# by the label kill.sh and sample.sh look for: a supervisor of this
# user's whose own command line carries it ("tfhive-sup DIR RUN TASK
# ...", probe/claim's format); its task is its child that leads a
# session of its own (supervisor-run.sh starts it with setsid), and
# every process of that session is the task's (torchrun's workers, a
# shell's python).
# Nothing another user runs is read: ps says whose each process is. The
# claim holders (flock) carry the label too, and are passed over.
#
# For each process: its pid, state, command and wait channel, then its
# Python stack by `py-spy dump` when py-spy is on this shell's PATH or
# on the task's own (a venv that the hosts file's setup: activated),
# else the kernel's stack when /proc lets it be read, and gdb -batch's
# backtrace when gdb is here. Each tool gets tfhive_wait seconds: a
# process that cannot be traced (ptrace refused) says so and the next
# one is taken.
#
# Output: per task, "@@tfhive-stacks SECRET task ID", its text (at most
# tfhive_limit bytes, then a line saying it was cut), "@@tfhive-stacks
# SECRET end ID". SECRET is a word of this call's: it is on no command
# line, so no process's name or stack can pass for those lines.
#
# Parameters, set by tfhive ahead of this text:
#   tfhive_run     the run id
#   tfhive_secret  this call's word
#   tfhive_native  1: py-spy dump --native (C frames too)
#   tfhive_limit   bytes of text kept per task
#   tfhive_wait    seconds each tool may take on one process
#   tfhive_procs   processes read per task at most
: "${tfhive_run?}" "${tfhive_secret?}" "${tfhive_native?}" "${tfhive_limit?}" "${tfhive_wait?}" "${tfhive_procs?}"
tfhive_me=$(id -u)
tfhive_flags=()
[ "$tfhive_native" != 1 ] || tfhive_flags=(--native)
tfhive_ps=$(ps -e -ww -o pid= -o ppid= -o sid= -o uid= -o args= 2>/dev/null)

# tfhive_tasks: "LEADER TASK" for each of the run's tasks here: a
# process of this user's that leads its own session and whose parent
# carries the label (the supervisor; its subshells carry it too, the
# holders are flock).
tfhive_tasks() {
	awk -v run="$tfhive_run" -v me="$tfhive_me" '{
		pid[NR] = $1; ppid[NR] = $2; sid[NR] = $3; uid[NR] = $4
		if ($4 == me && $5 !~ /flock$/)
			for (k = 5; k + 3 <= NF; k++) if ($k == "tfhive-sup" && $(k + 2) == run) { task[$1] = $(k + 3); break }
	}
	END { for (i = 1; i <= NR; i++) if (pid[i] == sid[i] && uid[i] == me && (ppid[i] in task)) print pid[i], task[ppid[i]] }' <<<"$tfhive_ps"
}

# tfhive_members LEADER: the pids of its session, this user's, the
# leader first.
tfhive_members() {
	printf '%s\n' "$1"
	awk -v l="$1" -v me="$tfhive_me" '$3 == l && $1 != l && $4 == me { print $1 }' <<<"$tfhive_ps"
}

# tfhive_pyspy PID sets tfhive_spy to a py-spy: this shell's, else one
# on the process's own PATH.
tfhive_pyspy() {
	tfhive_spy=$(command -v py-spy 2>/dev/null) && return 0
	local d p
	p=$(tr '\0' '\n' 2>/dev/null <"/proc/$1/environ" | sed -n 's/^PATH=//p' | head -n 1)
	local IFS=:
	for d in $p; do
		[ -n "$d" ] && [ -x "$d/py-spy" ] && [ ! -d "$d/py-spy" ] && { tfhive_spy=$d/py-spy; return 0; }
	done
	tfhive_spy=
	return 1
}

# tfhive_one PID: where the process is.
tfhive_one() {
	local st wchan cmd out
	read -r st 2>/dev/null <"/proc/$1/stat" || { printf 'pid %s: gone\n\n' "$1"; return; }
	st=${st##*) }
	# wchan has no newline: read would fail on it. "0": running, or the
	# kernel hides it; the kernel stack's top frame says it then.
	wchan=$(head -c 64 "/proc/$1/wchan" 2>/dev/null)
	if [ -z "$wchan" ] || [ "$wchan" = 0 ]; then
		wchan=$(head -n 1 "/proc/$1/stack" 2>/dev/null | sed -n 's/^\[<[0-9a-f]*>\] \([A-Za-z0-9_.]*\).*/\1/p')
	fi
	cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" | head -c 300)
	printf 'pid %s, state %s, wchan %s: %s\n' "$1" "${st%% *}" "${wchan:-?}" "$cmd"
	if tfhive_pyspy "$1"; then
		if out=$(timeout "$tfhive_wait" "$tfhive_spy" dump --pid "$1" "${tfhive_flags[@]}" 2>&1); then
			printf '%s\n\n' "$out"
			return
		fi
		printf 'py-spy dump: %s\n' "${out##*$'\n'}"
	fi
	if [ -r "/proc/$1/stack" ] && out=$(head -c 4096 "/proc/$1/stack" 2>/dev/null) && [ -n "$out" ]; then
		printf 'kernel stack:\n%s\n' "$out"
	fi
	if command -v gdb >/dev/null 2>&1; then
		out=$(timeout "$tfhive_wait" gdb -batch -nx -p "$1" -ex 'thread apply all bt' 2>/dev/null </dev/null | grep -E '^(Thread|#)' | head -n 200)
		[ -z "$out" ] || printf 'gdb:\n%s\n' "$out"
	fi
	printf '\n'
}

while read -r tfhive_lead tfhive_task; do
	[ -n "$tfhive_task" ] || continue
	printf '@@tfhive-stacks %s task %s\n' "$tfhive_secret" "$tfhive_task"
	{
		tfhive_n=0
		for tfhive_p in $(tfhive_members "$tfhive_lead"); do
			tfhive_n=$((tfhive_n + 1))
			if [ "$tfhive_n" -gt "$tfhive_procs" ]; then
				printf '(more processes, not read)\n'
				break
			fi
			tfhive_one "$tfhive_p"
		done
		[ "$tfhive_n" != 0 ] || printf 'no process: the task is between attempts, or ended\n'
	} 2>&1 | head -c "$tfhive_limit"
	printf '\n@@tfhive-stacks %s end %s\n' "$tfhive_secret" "$tfhive_task"
done <<<"$(tfhive_tasks)"
