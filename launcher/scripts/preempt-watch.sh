# shellcheck shell=bash
# Preemption, seen from the low run's side. A user may not signal another
# user's processes, so a high run cannot stop a low one itself: it asks,
# and the low run's own supervisor stops its task. The ask is a lock the
# high run's waiting tfhive holds in the claims directory
# (tfhive-preempt.HIGH.LOW.lock, or tfhive-preempt.HIGH.WORD.LOW.lock
# when another user made that name first: ticket.sh), whose holder's
# command line ends with "tfhive-preempt DIR NAME HIGH LOW". As for claims and tickets, only
# the kernel is believed: the lock must be in /proc/locks, its holder a
# flock whose uid /proc gives, and the same uid must hold a ticket of
# priority high for run HIGH (ticket.sh). A file alone asks nothing.
#
# The supervisor of a task of a --priority low run, on a host whose policy
# allows preempt_low (tfhive read it in the probe before the start), runs
# tfhive_preempt_watch in the background: once a second it looks for such
# a file by name (a glob: no process), and only then reads /proc/locks.
# When a request checks out and its user may use --priority high there,
# it prints "HIGH USER", sends SIGTERM to the task's group and SIGKILL
# after the run's grace. The supervisor reads that line once the task has
# ended and says the task was preempted.
#
# Parameters, set by tfhive ahead of this text:
#   tfhive_preempt  who may preempt this run here: "*" (the policy has no
#                   high: anyone), else "u:NAME" and "g:GROUP" words; empty:
#                   the run is not preemptible here, nothing watches
#   tfhive_grace    tenths of a second between SIGTERM and SIGKILL
: "${tfhive_preempt?}" "${tfhive_grace?}"

# tfhive_may_preempt USER: the policy's high list names the user or one
# of their groups.
tfhive_may_preempt() {
	local w g ws
	read -r -a ws <<<"$tfhive_preempt"
	for w in "${ws[@]}"; do
		case $w in
		'*' | "u:$1") return 0 ;;
		g:*)
			for g in $(id -nG -- "$1" 2>/dev/null); do [ "g:$g" != "$w" ] || return 0; done
			;;
		esac
	done
	return 1
}

# tfhive_request_name NAME HIGH LOW: NAME is a request's, HIGH.LOW or
# HIGH.WORD.LOW (WORD 16 hex digits).
tfhive_request_name() {
	local r=${1#"$2".}
	r=${r%."$3"}
	[ "$1" = "$2.$3" ] || { [ "$1" = "$2.$r.$3" ] && [[ $r =~ ^[0-9a-f]{16}$ ]]; }
}

# tfhive_preempt_by DIR RUN prints "HIGH USER" for a live request to
# preempt RUN by a high run whose user may, and fails when there is none.
tfhive_preempt_by() {
	local -a l a
	local -A req=() tick=()
	local pid n uid k u v w who
	while read -r -a l; do
		# "1: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF"; a waiter's
		# line has "->" second.
		if [ "${l[1]-}" != FLOCK ] || ! [[ ${l[4]-} =~ ^[0-9]+$ ]]; then continue; fi
		pid=${l[4]}
		mapfile -d '' -t a 2>/dev/null <"/proc/$pid/cmdline" || continue
		n=${#a[@]}
		if [ "$n" -lt 6 ] || [[ ${a[0]} != *flock ]]; then continue; fi
		# The holder's shape first: most holders are GPU claims, whose
		# owner is not needed.
		# A request is named HIGH.LOW, or HIGH.WORD.LOW when another user
		# made that name first (ticket.sh).
		if [ "${a[n - 5]}" = tfhive-preempt ] && [ "${a[n - 4]}" = "$1" ] && [ "${a[n - 1]}" = "$2" ] && tfhive_request_name "${a[n - 3]}" "${a[n - 2]}" "$2"; then
			v=req w=${a[n - 2]}
		elif [ "$n" -ge 8 ] && [ "${a[n - 7]}" = tfhive-ticket ] && [ "${a[n - 6]}" = "$1" ] && [ "${a[n - 3]}" = high ]; then
			v=tick w=${a[n - 4]}
		else
			continue
		fi
		uid=
		while read -r k u _; do
			if [ "$k" = Uid: ]; then uid=$u; break; fi
		done 2>/dev/null <"/proc/$pid/status"
		[ -n "$uid" ] || continue
		if [ "$v" = req ]; then req["$uid $w"]=1; else tick["$uid $w"]=1; fi
	done </proc/locks
	for k in "${!req[@]}"; do
		[ -n "${tick[$k]-}" ] || continue
		who=$(id -nu -- "${k%% *}" 2>/dev/null) || continue
		if tfhive_may_preempt "$who"; then
			printf '%s %s\n' "${k#* }" "$who"
			return 0
		fi
	done
	return 1
}

# tfhive_preempt_watch DIR RUN watches while the task ($tfhive_pid, set
# by supervisor-run.sh before it starts this) lives.
tfhive_preempt_watch() {
	: "${tfhive_pid?}"
	local by n f
	# A pipe nobody writes: read -t on it is a sleep without a process.
	exec 9<> <(:)
	while kill -0 "$tfhive_pid" 2>/dev/null; do
		read -r -t 1 -u 9 _
		f=("$1"/tfhive-preempt.*."$2".lock)
		[ -e "${f[0]}" ] || continue
		by=$(tfhive_preempt_by "$1" "$2") || continue
		printf '%s\n' "$by"
		tfhive_signal TERM
		n=0
		while kill -0 -"$tfhive_pid" 2>/dev/null && [ "$n" -lt "$tfhive_grace" ]; do
			read -r -t 0.1 -u 9 _
			n=$((n + 1))
		done
		tfhive_signal KILL
		return 0
	done
}
