# shellcheck shell=bash
# The holders' innermost bash checks its claims against the kernel's
# record before it says they are held (supervisor-run.sh calls it first).
#
# A lock proves nothing about a name: the owner of a lock file (anyone
# may create one in sticky /tmp) can unlink it while it is locked and
# create another under the same name, and the next run then locks that
# one. So a claim is not "I locked the file of this name" but "I hold
# locks, and no other live tfhive holder on this host holds a lock whose
# label names one of my GPUs or ports": /proc/locks lists every flock
# and its process, and a holder's label is its own command line, which
# only its owner could have chosen (probe/claim's format).
#
# Each run takes its locks first and looks second; of two runs whose
# locks overlap in time, the one that looked last saw the other's locks,
# so they never both go on: one of them (or both) ends with 75, claim
# taken, and plans again. Our own holders are the flock processes above
# this shell, one per lock, each the parent of the next.
#
# A start planned on an older probe than its own (a sweep's trial on the
# newest coalesced probe, probe.Coalescer's seed) also honours the hosts'
# queue: a run that began to wait here since that probe is seen only by a
# probe begun after, and would lose its turn to this one. So such a start
# is given the holders of the waiting tickets its probe saw (SEEN), and
# ends (the supervisor says "@@tfhive-claim queued", its claims given
# back) when another holder of a waiting ticket of DIR is here now
# (scripts/ticket.sh: "tfhive-ticket DIR NAME …" on its command line;
# one whose user also holds that ticket's parked state, a run that runs,
# is no waiter, as probe/tickets.go reads them): the run plans again on
# a new probe, which sees the queue. Only ever more cautious than
# a new probe: a forged label costs a re-plan, never a turn.
#
# tfhive_check_claims DIR CLAIMS N SEEN (the holders' label's claims dir
# and claim list, "-" for none, how many holders are ours, and the pids
# of the waiting tickets' holders the plan's probe saw, " PID … ", or "-"
# for a start planned on a probe of its own) returns 1 when another holder
# claims one of CLAIMS, 2 when a run queued here since the plan's probe.
tfhive_check_claims() {
	[ "$2" != - ] || return 0
	local own=' ' p=$PPID st n mine=',' c kind pid args w tfhive_key seen=${4:--} waiting=() parked=' ' u
	for ((n = 0; n < $3; n++)); do
		own+="$p "
		read -r st 2>/dev/null <"/proc/$p/stat" || break
		st=${st##*) }
		p=${st#* }
		p=${p%% *}
	done
	# What this task claims, as keys (tfhive_claim_key).
	IFS=, read -ra w <<<"$2"
	for c in "${w[@]}"; do
		# The task claim claims nothing: shared by every holder.
		[ "$c" != task:0 ] || continue
		tfhive_claim_key "$c"
		mine+=$tfhive_key,
	done
	while read -r _ kind _ _ pid _; do
		# "N: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF"; the waiters'
		# lines ("N: -> FLOCK …") and other namespaces' pids (0) are no
		# holders.
		{ [ "$kind" = FLOCK ] && [ "$pid" != 0 ]; } || continue
		case $own in *" $pid "*) continue ;; esac
		own+="$pid "
		# Its arguments, NUL-separated (read -d '': bash 3 and later).
		args=()
		{ while IFS= read -r -d '' c; do args+=("$c"); done <"/proc/$pid/cmdline"; } 2>/dev/null || continue
		n=${#args[@]}
		# The queue's waiters, for a start on an older probe: tickets
		# ("… tfhive-ticket DIR NAME RUN PRIORITY SINCE SHAPE") and their
		# states ("… tfhive-ticket-state DIR NAME STATE").
		if [ "$seen" != - ]; then
			case ${args[0]} in *flock) ;; *) continue ;; esac
			if [ "$n" -ge 8 ] && [ "${args[n - 7]}" = tfhive-ticket ]; then
				if [ "${args[n - 6]}" = "$1" ]; then
					case $seen in *" $pid "*) ;; *) tfhive_uid_of "$pid" && waiting+=("$u/${args[n - 5]}") ;; esac
				fi
				continue
			fi
			if [ "$n" -ge 5 ] && [ "${args[n - 4]}" = tfhive-ticket-state ]; then
				if [ "${args[n - 3]}" = "$1" ] && [ "${args[n - 1]}" = parked ]; then
					tfhive_uid_of "$pid" && parked+="$u/${args[n - 2]} "
				fi
				continue
			fi
		fi
		[ "$n" -ge 6 ] || continue
		case ${args[n - 1]} in low | high) n=$((n - 1)) ;; esac
		{ [ "$n" -ge 6 ] && [ "${args[n - 5]}" = tfhive-sup ] && [ "${args[n - 4]}" = "$1" ]; } || continue
		case ${args[0]} in *flock) ;; *) continue ;; esac
		IFS=, read -ra w <<<"${args[n - 1]}"
		for c in "${w[@]}"; do
			tfhive_claim_key "$c"
			case $mine in *",$tfhive_key,"*) return 1 ;; esac
		done
	done </proc/locks
	for c in "${waiting[@]}"; do
		case $parked in *" $c "*) ;; *) return 2 ;; esac
	done
	return 0
}

# tfhive_uid_of PID sets u to the process's real uid; it fails when the
# process is gone. No subshell.
tfhive_uid_of() {
	local l
	u=
	{ while read -r l; do
		case $l in Uid:*)
			read -r _ u _ <<<"$l"
			return 0
			;;
		esac
	done <"/proc/$1/status"; } 2>/dev/null
	return 1
}

# tfhive_claim_key CLAIM sets tfhive_key to what a label's claim
# (gpu:INDEX:UUID, port:N) holds: gpu=UUID (gpu#INDEX without one),
# port=N. No subshell: a host's holders may be many.
tfhive_claim_key() {
	case $1 in
	gpu:*:?*) tfhive_key=gpu=${1##*:} ;;
	gpu:*) tfhive_key=gpu#${1#gpu:} ;;
	*) tfhive_key=${1/:/=} ;;
	esac
}
