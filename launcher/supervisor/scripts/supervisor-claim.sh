# shellcheck shell=bash
# A supervisor's first stage: it takes the task's claims, then becomes the
# task's holders:
#
#   flock -n -o -E 75 /proc/self/fd/4 flock -n -o -E 75 /proc/self/fd/5 … bash --norc -c READ tfhive-sup DIR RUN TASK CLAIMS [PRIORITY]
#
# Each flock process holds one lock for as long as its command runs, so
# /proc/locks names a live process whose uid is the task's owner and whose
# command line carries the label (probe/claim's format); nothing is
# written into a file. A lock file is created exclusively (noclobber:
# O_EXCL never follows a symlink) and opened read-only, only once it is a
# regular file; flock then locks that very file through the descriptor.
# -o keeps the locks out of the task: killing the holders releases them.
# The innermost bash reads the second stage, supervisor-run.sh, which
# first checks the claims against every other holder's label
# (claim-check.sh): a lock file's owner may have swapped the file under
# another run's lock, so the name we locked proves nothing by itself.
#
# A lock file it cannot use makes its first output line
# "@@tfhive-claim blocked WHY" (exit 76); a claim someone else holds ends
# it with 75 before it says anything.
#
# Parameters, set by tfhive ahead of this text:
#   tfhive_read    read-stage.sh: the innermost bash reads the next stage
#   tfhive_run     the run id
#   tfhive_task    the task's id (worker:0)
#   tfhive_locks   the lock files' names, as shell words; none: no claims
#   tfhive_labels  the claims as the holders' label lists them
#   tfhive_prio    the run's --priority when low or high, else empty: the
#                  label's last word, how the host knows a low run (one a
#                  high run may preempt where the policy allows it)

# The run stage needs bash (read -t, process substitution, descriptors
# above 9) and the claims flock.
[ -n "${BASH_VERSION-}" ] || { echo 'tfhive: bash not found on this host' >&2; exit 127; }
: "${tfhive_read?}" "${tfhive_run?}" "${tfhive_task?}" "${tfhive_locks?}" "${tfhive_labels?}" "${tfhive_prio?}"
tfhive_blocked() { printf '%s%s\n' '@@tfhive-claim blocked ' "$1"; exit 76; }
if [ -z "$tfhive_locks" ]; then
	exec bash --norc -c "$tfhive_read" tfhive-sup - "$tfhive_run" "$tfhive_task" -
fi
command -v flock >/dev/null 2>&1 || { echo 'tfhive: flock not found on this host (util-linux)' >&2; exit 127; }

# The claims directory: /tmp is root's and sticky on every Linux; a
# configured one must be owned by root or by the user, and be sticky if
# others may write to it, or another user could swap the files under us.
tfhive_dir=/tmp
if [ -n "${TFHIVE_CLAIMS_DIR-}" ]; then
	tfhive_dir=$TFHIVE_CLAIMS_DIR
	{ [ -d "$tfhive_dir" ] && [ ! -L "$tfhive_dir" ]; } || tfhive_blocked "claims dir $tfhive_dir (TFHIVE_CLAIMS_DIR) is not a directory"
	case $tfhive_dir in /*[[:space:]]* | [!/]*) tfhive_blocked "claims dir $tfhive_dir (TFHIVE_CLAIMS_DIR) must be an absolute path without spaces" ;; esac
	read -r tfhive_uid tfhive_mode tfhive_owner <<<"$(stat -c '%u %a %U' "$tfhive_dir")"
	[ "$tfhive_uid" = 0 ] || [ "$tfhive_uid" = "$EUID" ] || tfhive_blocked "claims dir $tfhive_dir (TFHIVE_CLAIMS_DIR) is owned by $tfhive_owner, not by root or you"
	if [ $((8#$tfhive_mode & 8#022)) != 0 ] && [ $((8#$tfhive_mode & 8#1000)) = 0 ]; then
		tfhive_blocked "claims dir $tfhive_dir (TFHIVE_CLAIMS_DIR) is writable by others and not sticky"
	fi
fi
# tfhive_open FD NAME opens the lock file NAME on descriptor FD. A file
# that is gone between the test and the open (its owner unlinked it, and
# may have made it again) is tried again, a few times: only a file that
# stays unreadable blocks the claim (CI: TestHostileSwappedLockFiles saw
# a run end on mallory's swap instead of claiming the new file). A file it
# makes is readable by all (umask 022, in the subshell that makes it: the
# task keeps the user's umask, and no process is spent saving it).
tfhive_open() {
	tfhive_f=$tfhive_dir/$2
	for _ in 1 2 3; do
		[ -e "$tfhive_f" ] || [ -L "$tfhive_f" ] || (set -C; umask 022; : >"$tfhive_f") 2>/dev/null
		# Never opened unless a regular file: a FIFO's open would block.
		if [ -L "$tfhive_f" ] || { [ -e "$tfhive_f" ] && [ ! -f "$tfhive_f" ]; }; then
			tfhive_blocked "$tfhive_f is not a regular file (owned by $(exec stat -c %U "$tfhive_f" 2>/dev/null))"
		fi
		eval "exec $1<\"\$tfhive_f\"" 2>/dev/null && return
	done
	tfhive_blocked "$tfhive_f is owned by $(exec stat -c %U "$tfhive_f" 2>/dev/null) and not readable"
}
# Descriptor 3 is taken by the supervisor's copy of stdin: the lock
# files are on 4, 5, …
eval "set -- $tfhive_locks"
tfhive_fd=4
tfhive_chain=()
for tfhive_lock; do
	tfhive_open "$tfhive_fd" "$tfhive_lock"
	# The task claim (a task with neither GPU nor port) is shared: it
	# claims nothing, and gives the task a holder (probe/claim's KindTask).
	case $tfhive_lock in
	tfhive-claim.task-0.lock) tfhive_chain+=(flock -s -n -o -E 75 "/proc/self/fd/$tfhive_fd") ;;
	*) tfhive_chain+=(flock -n -o -E 75 "/proc/self/fd/$tfhive_fd") ;;
	esac
	tfhive_fd=$((tfhive_fd + 1))
done
exec "${tfhive_chain[@]}" bash --norc -c "$tfhive_read" tfhive-sup "$tfhive_dir" "$tfhive_run" "$tfhive_task" "$tfhive_labels" ${tfhive_prio:+"$tfhive_prio"}
