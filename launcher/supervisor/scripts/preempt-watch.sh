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
# it prints "HIGH USER", sends the run's stop signal to the task's group
# (tfhive_stopping: SIGTERM unless --stop-signal) and SIGKILL after the
# run's grace. The supervisor reads that line once the task has
# ended and says the task was preempted.
#
# Parameters, set by tfhive ahead of this text:
#   tfhive_preempt  who may preempt this run here: "*" (the policy has no
#                   high: anyone), else "u:NAME" and "g:GROUP" words, and
#                   "n:GPUS", the host's GPUs when the run started; empty:
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
			for g in $(exec id -nG -- "$1" 2>/dev/null); do [ "g:$g" != "$w" ] || return 0; done
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
# preempt RUN by a high run whose user may, and that really waits for
# GPUs here, and fails when there is none. Really waits: the same uid
# holds a ticket of priority high for run HIGH, its lock on the ticket's
# own file in DIR (tfhive-ticket.0.SINCE.HIGH.lock, as the request's on
# tfhive-preempt.NAME.lock: a label alone names nothing), and the GPUs
# that ticket asks (its label's SHAPE, all its tasks) are more than this
# host has free: its GPUs ("n:GPUS" in tfhive_preempt, the probe's count
# at the run's start) less those claimed now (the GPUs in the labels of
# the claims' holders in /proc/locks). So a request whose run fits on
# the free GPUs, or that holds no ticket, stops nothing.
tfhive_preempt_by() {
	local -a l a
	local -A req=() tick=() used=()
	local pid n uid k u v w who c g total free need r t ino
	while read -r -a l; do
		# "1: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF"; a waiter's
		# line has "->" second.
		if [ "${l[1]-}" != FLOCK ] || ! [[ ${l[4]-} =~ ^[0-9]+$ ]]; then continue; fi
		pid=${l[4]} ino=${l[5]##*:}
		mapfile -d '' -t a 2>/dev/null <"/proc/$pid/cmdline" || continue
		n=${#a[@]}
		if [ "$n" -lt 6 ] || [[ ${a[0]} != *flock ]]; then continue; fi
		# The holder's shape first: most holders are GPU claims, whose
		# owner is not needed.
		# A request is named HIGH.LOW, or HIGH.WORD.LOW when another user
		# made that name first (ticket.sh).
		if [ "${a[n - 5]}" = tfhive-preempt ] && [ "${a[n - 4]}" = "$1" ] && [ "${a[n - 1]}" = "$2" ] && tfhive_request_name "${a[n - 3]}" "${a[n - 2]}" "$2"; then
			v=req w=${a[n - 2]} t="${a[n - 3]} $ino"
		elif [ "$n" -ge 8 ] && [ "${a[n - 7]}" = tfhive-ticket ] && [ "${a[n - 6]}" = "$1" ] && [ "${a[n - 3]}" = high ]; then
			v=tick w=${a[n - 4]} t="${a[n - 5]} $ino ${a[n - 1]}"
		else
			# A claim's holder: "tfhive-sup DIR RUN TASK CLAIMS [PRIORITY]",
			# CLAIMS "gpu:INDEX:UUID,port:N,...".
			c=
			if [ "${a[n - 5]}" = tfhive-sup ] && [ "${a[n - 4]}" = "$1" ]; then
				c=${a[n - 1]}
			elif [ "$n" -ge 7 ] && [ "${a[n - 6]}" = tfhive-sup ] && [ "${a[n - 5]}" = "$1" ]; then
				c=${a[n - 2]}
			fi
			IFS=, read -r -a a <<<"$c"
			for g in "${a[@]}"; do
				if [[ $g =~ ^gpu:([0-9]+): ]]; then used[${BASH_REMATCH[1]}]=1; fi
			done
			continue
		fi
		uid=
		while read -r k u _; do
			if [ "$k" = Uid: ]; then uid=$u; break; fi
		done 2>/dev/null <"/proc/$pid/status"
		[ -n "$uid" ] || continue
		if [ "$v" = req ]; then req["$uid $w"]=$t; else tick["$uid $w"]=$t; fi
	done </proc/locks
	total=
	read -r -a a <<<"$tfhive_preempt"
	for w in "${a[@]}"; do
		case $w in n:*) total=${w#n:} ;; esac
	done
	for k in "${!req[@]}"; do
		[ -n "${tick[$k]-}" ] || continue
		w=${k#* }
		read -r r ino <<<"${req[$k]}"
		read -r t u c <<<"${tick[$k]}"
		# The ticket's name is its order: rank 0 (high), since, run.
		v=${t#0.}
		v=${v%."$w"}
		if [ "$t" != "0.$v.$w" ] || ! [[ $v =~ ^[0-9]+$ ]]; then continue; fi
		# Each lock on its own file: one stat, only for a request that
		# names this run and has a ticket.
		[ "$(stat -c %i -- "$1/tfhive-preempt.$r.lock" "$1/tfhive-ticket.$t.lock" 2>/dev/null | tr '\n' ' ')" = "$ino $u " ] || continue
		if [[ $total =~ ^[0-9]+$ ]]; then
			need=0
			IFS=, read -r -a a <<<"$c"
			for g in "${a[@]}"; do
				[[ $g =~ ^[0-9]+$ ]] || continue 2
				need=$((need + g))
			done
			free=$((total - ${#used[@]}))
			[ "$need" -gt "$free" ] || continue
		fi
		who=$(exec id -nu -- "${k%% *}" 2>/dev/null) || continue
		if tfhive_may_preempt "$who"; then
			printf '%s %s\n' "$w" "$who"
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
	# A pipe nobody writes: read -t on it is a sleep without a process
	# (pipe.sh).
	tfhive_pipe 9
	while kill -0 "$tfhive_pid" 2>/dev/null; do
		read -r -t 1 -u 9 _
		f=("$1"/tfhive-preempt.*."$2".lock)
		[ -e "${f[0]}" ] || continue
		by=$(tfhive_preempt_by "$1" "$2") || continue
		printf '%s\n' "$by"
		tfhive_stopping
		n=0
		while kill -0 -"$tfhive_pid" 2>/dev/null && [ "$n" -lt "$tfhive_grace" ]; do
			read -r -t 0.1 -u 9 _
			n=$((n + 1))
		done
		tfhive_kill
		return 0
	done
}
