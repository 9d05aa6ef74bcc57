# shellcheck shell=bash
# The host's usage ledger (tfhive usage): when an attempt of a task that
# holds GPUs ends, its supervisor appends a line to this user's ledger
# for the month, in this user's own directory of ledgers in the claims
# directory (a host-wide directory every user can read: /tmp unless
# $TFHIVE_CLAIMS_DIR says, which an admin points at a disk that outlives
# a reboot):
#   DIR/tfhive-usage.UID/YYYY-MM.csv
#   "1 START END GPUS IDLE RUN TASK": the format, the attempt's start and
#   end (epoch seconds, this host's clock), the GPUs it held, the GPU
#   seconds they sat idle (idle-watch.sh), the run and the task. The
#   month is the attempt's end's, in UTC: a reader of the months from its
#   window's start on finds every attempt that ended within it, however
#   long ago it began.
# A reader believes a ledger only when its directory and file are owned by
# the uid in the directory's name and nobody else may write them
# (launcher/usage), so a user writes only their own lines. The file is
# bounded: past 1 MiB (some ten thousand attempts in a month) nothing
# more is appended, and the supervisor says it is full. A few stats per
# attempt's end; nothing per sample.
#
# The claims directory is everyone's (sticky /tmp, where
# protected_symlinks and protected_fifos may be off), and the ledger's
# name is easy to guess: nothing anyone else could have put there is
# opened. The directory is made with mkdir, mode 0755 (everyone must
# read it: the lab's table), and used only when stat, which follows no
# link, says it is a real directory of this user's that nobody else may
# write: then nobody but this user can have made, swapped or removed
# anything in it (nor the directory itself: the claims directory is
# sticky). Even so the file is never opened by the shell, whose open
# would block on a FIFO for ever (the run would never end, its GPUs
# claimed): dd appends, with O_NOFOLLOW and O_NONBLOCK. Whatever is
# refused leaves the attempt out of the ledger and says why on the
# session's stderr, "@@tfhive-idle MARK ledger WHY" (the run's console
# shows it as a warning): never a hung or failed run. Ledgers of older
# tfhives, DIR/tfhive-usage.UID.YYYY-MM.csv, are never written again.

# tfhive_ledger DIR RUN TASK CLAIMS START END IDLE [FD]: IDLE in tenths
# of a second, while all the run's GPUs here were idle (the task's GPUs
# with them); FD, where a refusal is said (the session's stderr: 2
# unless said).
tfhive_ledger() {
	[ "$1" != - ] && [ -d "$1" ] || return 0
	local -a c
	local g n=0 l f m u p t s ft line why='' TZ=UTC0
	IFS=, read -r -a c <<<"$4"
	for g in "${c[@]}"; do [[ $g != gpu:* ]] || n=$((n + 1)); done
	# A task on CPUs holds no GPU-hours.
	[ "$n" -gt 0 ] || return 0
	printf -v m '%(%Y-%m)T' "$6"
	l=$1/tfhive-usage.$UID f=$l/$m.csv
	[ -e "$l" ] || [ -L "$l" ] || mkdir -m 755 -- "$l" 2>/dev/null
	# One stat for the directory and the file, neither followed (exec: no
	# second fork, rundir.sh's tfhive_runsdir says why). The directory's
	# line comes first; the file's follows only when the file is there
	# (stat prints nothing for one it cannot find). A path whose directory
	# stat cannot find has no file either; and the first line, whoever's,
	# passes only as a directory of this user's that nobody else may
	# write, which nobody else can have made.
	{
		read -r u p _ t
		read -r _ _ s ft
	} <<<"$(exec stat -c '%u %a %s %F' -- "$l" "$f" 2>/dev/null)"
	if [ "$t" != directory ]; then
		why="$l is not a directory${t:+ (${t})}"
	elif [ "$u" != "$EUID" ]; then
		why="$l is owned by uid $u, not by you"
	elif (((8#$p & 8#022) != 0)); then
		why="$l has mode 0$p: others may write it"
	elif [ -n "$ft" ] && [ "$ft" != "regular file" ] && [ "$ft" != "regular empty file" ]; then
		why="$f is not a regular file ($ft)"
	elif printf -v line '1 %s %s %s %s %s %s\n' "$5" "$6" "$n" "$(($7 * n / 10))" "$2" "$3" && [ $((${s:-0} + ${#line})) -gt 1048576 ]; then
		# A reader refuses a ledger past 1 MiB whole: the line that
		# would take it past is not written.
		why="$f is full (1 MiB)"
	# dd reads the line as a here-string, the line less its newline,
	# which bash puts back: no printf in a pipe, a fork fewer.
	elif ! (umask 022 && exec dd of="$f" oflag=append,nofollow,nonblock conv=notrunc status=none) 2>/dev/null <<<"${line%$'\n'}"; then
		why="cannot append to $f"
	fi
	# A session gone (a kept run's) must not end this shell: SIGPIPE is
	# the subshell's.
	[ -z "$why" ] || (
		trap '' PIPE
		exec {g}>&"${8:-2}" 2>/dev/null || exit
		printf '%s %s ledger %s\n' '@@tfhive-idle' "${tfhive_mark?}" "$why" >&"$g"
	)
	return 0
}
