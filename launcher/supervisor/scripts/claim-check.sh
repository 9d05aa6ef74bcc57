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
# tfhive_check_claims DIR CLAIMS N (the holders' label's claims dir and
# claim list, "-" for none, and how many holders are ours) returns 1 when
# another holder claims one of CLAIMS.
tfhive_check_claims() {
	[ "$2" != - ] || return 0
	local own=' ' p=$PPID st n mine=',' c kind pid args w tfhive_key
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
	return 0
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
