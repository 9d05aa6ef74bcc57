# shellcheck shell=bash
# A waiting run's ticket on one host (tfhive run --wait): a lock file
# tfhive-ticket.NAME.lock in the claims directory, created exclusively
# (set -C: O_EXCL, which never follows a symlink) and locked by a flock
# process whose own command line carries the ticket's label, for as long
# as this session's stdin stays open: tfhive closes it once the run holds
# its claims or gives up, sshd when tfhive or its connection dies. So a
# ticket is a kernel fact (/proc/locks, the holder's uid and command
# line, as a claim is: probe/claims.go), and a dead waiter's is gone at
# once. The file is removed on the way out; one left by a holder killed
# outright is not locked, so it counts for nothing.
#
# A high run's request to preempt a low one (preempt-watch.sh) is held
# the same way, as tfhive-preempt.HIGH.LOW.lock, or, when another made
# that name first, tfhive-preempt.HIGH.WORD.LOW.lock (WORD: 16 random hex
# digits, which nobody can make ahead of it).
#
# Parameters, set by tfhive ahead of this text:
#   tfhive_kind   ticket, or preempt
#   tfhive_name   the ticket's name: RANK.SINCE.RUN (its order); a
#                 request's: HIGH.LOW or HIGH.WORD.LOW
#   tfhive_label  RUN PRIORITY SINCE SHAPE, the label's words; a
#                 request's: HIGH LOW
#   tfhive_requeued  how often the run was requeued after a preemption
#                 (0, the default: never), for `tfhive queue`: the holder's
#                 inner script ends with the word "#tfhive-requeued=N",
#                 just before the label, whose words the readers count
#                 from the end (probe/tickets.go, preempt-watch.sh), so
#                 they read the label as before.
#   tfhive_state  parked: the ticket is held parked from the start (a run
#                 that may be requeued, started without waiting); "" (the
#                 default): waiting.
#
# A ticket is parked while its run runs, so that a requeued run keeps its
# place (fair-sharing.md): its holder, dated by the kernel when the run
# began to wait, lives on, and a second flock holder, the state's,
# labelled "tfhive-ticket-state DIR NAME parked", takes a shared lock on
# the ticket's own file (the holder's is shared too), for as long as its
# input stays open: the probe (probe/tickets.go) counts a ticket whose
# user holds that label as no waiter. tfhive says, on the ticket's input,
# "park" when its run starts and "wait N" when it is back in the queue,
# requeued N times (the state's label is then "requeued=N", which `tfhive
# queue` shows); EOF ends both holders. A state holder only ever hides or
# describes its own user's ticket: its date stays its holder's.
: "${tfhive_kind?}" "${tfhive_name?}" "${tfhive_label?}"
tfhive_requeued=${tfhive_requeued:-0}
tfhive_state=${tfhive_state:-}
case $tfhive_kind in ticket | preempt) ;; *) exit 2 ;; esac
case $tfhive_requeued in '' | *[!0-9]*) exit 2 ;; esac
case $tfhive_state in '' | parked) ;; *) exit 2 ;; esac
# A ticket's lock is shared, so that its state's holder can lock the same
# file; nobody else can take it exclusively while it is held.
tfhive_mode=-x
[ "$tfhive_kind" != ticket ] || tfhive_mode=-s
tfhive_dir=${TFHIVE_CLAIMS_DIR:-/tmp}
case $tfhive_dir in /*[[:space:]]* | [!/]*) echo '@@tfhive-ticket refused claims dir'; exit 76 ;; esac
command -v flock >/dev/null 2>&1 || { echo '@@tfhive-ticket refused no flock'; exit 127; }
tfhive_f=$tfhive_dir/tfhive-$tfhive_kind.$tfhive_name.lock
umask 022
# A name taken already says whose it is (the owner of what is there, a
# symlink's own): a request's name is anyone's to guess, and a file made
# first by another user must be named, never silently obeyed.
if ! (set -C; : >"$tfhive_f") 2>/dev/null; then
	echo "@@tfhive-ticket refused exists $(stat -c %U -- "$tfhive_f" 2>/dev/null || echo -)"
	exit 75
fi
# While it waits, a ticket's holder tells its tfhive when the host's locks
# change ("@@tfhive-changed": a claim let go, say), so that the run
# probes again at once rather than at its next backoff step. It reads
# /proc/locks every 0.1 s with the shell's own read: no program started;
# the wait is the read of its stdin, which ends it at EOF. What it
# compares with is read before it says the ticket is held: a lock taken
# after that line is a change.
# Inside, mark STATE makes the ticket's state holder say STATE ("": none);
# a parked ticket only waits for its next word, without a timeout.
# shellcheck disable=SC2086,SC2016 # the label's words, split on purpose; $0, $1 and $2 are the inner shell's
exec flock -n -o "$tfhive_mode" -E 75 "$tfhive_f" bash --norc -c '
p= m= b= w= s='"$tfhive_state"'
d=$1 k=$2 f=$1/$0.$2.lock
mark() {
	if [ -n "$m" ]; then exec {m}>&-; m=; fi
	[ -n "$1" ] || return 0
	exec {m}> >(exec flock -n -s -o "$f" bash --norc -c "exec cat >/dev/null" tfhive-ticket-state "$d" "$k" "$1" >/dev/null 2>&1)
}
if [ "$0" = tfhive-ticket ]; then
	read -r -d "" p </proc/locks
	[ "$s" != parked ] || { mark parked; w=parked; }
fi
echo @@tfhive-ticket held
while :; do
	c=
	if [ -n "$w" ]; then read -r c; else read -r -t 0.1 c; fi
	r=$?
	if [ $r -le 128 ]; then
		[ $r -eq 0 ] || break
		c=$b$c b=
		[ "$0" = tfhive-ticket ] || continue
		case $c in
		park) mark parked; w=parked ;;
		"wait "*)
			n=${c#wait }
			case $n in "" | *[!0-9]*) n=0 ;; esac
			if [ "$n" -gt 0 ]; then mark "requeued=$n"; else mark ""; fi
			w=
			read -r -d "" p </proc/locks
			;;
		esac
		continue
	fi
	b=$b$c
	[ "$0" = tfhive-ticket ] && [ -z "$w" ] || continue
	l=
	read -r -d "" l </proc/locks
	if [ "$l" != "$p" ]; then
		echo @@tfhive-changed
		p=$l
	fi
done
mark ""
rm -f "$f" #tfhive-requeued='"$tfhive_requeued" "tfhive-$tfhive_kind" "$tfhive_dir" "$tfhive_name" $tfhive_label
