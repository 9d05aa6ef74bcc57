# shellcheck shell=bash
# The host's usage ledger (tfhive usage): when an attempt of a task that
# holds GPUs ends, its supervisor appends a line to this user's ledger
# for the month, in the claims directory (a host-wide directory every
# user can read: /tmp unless $TFHIVE_CLAIMS_DIR says, which an admin
# points at a disk that outlives a reboot):
#   DIR/tfhive-usage.UID.YYYY-MM.csv
#   "1 START END GPUS IDLE RUN TASK": the format, the attempt's start and
#   end (epoch seconds, this host's clock), the GPUs it held, the GPU
#   seconds they sat idle (idle-watch.sh), the run and the task.
# A reader believes a file only when its owner is the uid in its name and
# nobody else may write it (launcher/usage), so a user writes only their
# own lines. The file is bounded: past 1 MiB (some ten thousand attempts
# in a month) nothing more is appended, and the reader says it is full.
# One stat per attempt's end; nothing per sample.
#
# The directory is everyone's (sticky /tmp, where protected_symlinks may
# be off): a link planted at the ledger's name, before or while it is
# written, must not be written through. So a new ledger is made with
# noclobber (O_EXCL: no link is followed), the file is opened to read
# (which makes nothing), and only that descriptor is checked and
# written: a regular file of ours with one name, the one at the path,
# which is no link. A file that is not is left alone, unwritten. It is
# written by reopening the descriptor's own file (/proc/self/fd: bash
# would take /dev/fd/N for the read-only descriptor itself).

# tfhive_ledger DIR RUN TASK CLAIMS START END IDLE: IDLE in tenths of a
# second, while all the run's GPUs here were idle (the task's GPUs with
# them).
tfhive_ledger() {
	[ "$1" != - ] && [ -d "$1" ] || return 0
	local -a c
	local g n=0 f m s fd
	IFS=, read -r -a c <<<"$4"
	for g in "${c[@]}"; do [[ $g != gpu:* ]] || n=$((n + 1)); done
	# A task on CPUs holds no GPU-hours.
	[ "$n" -gt 0 ] || return 0
	printf -v m '%(%Y-%m)T' "$5"
	f=$1/tfhive-usage.$UID.$m.csv
	[ -e "$f" ] || [ -L "$f" ] || (set -C && umask 022 && : >"$f") 2>/dev/null
	{ exec {fd}<"$f"; } 2>/dev/null || return 0
	if [ ! -L "$f" ] && [ -f "/dev/fd/$fd" ] && [ -O "/dev/fd/$fd" ] && [ "$f" -ef "/dev/fd/$fd" ] &&
		s=$(stat -L -c '%h %s' -- "/dev/fd/$fd" 2>/dev/null) && [ "${s% *}" = 1 ] && [ "${s#* }" -lt 1048576 ]; then
		printf '1 %s %s %s %s %s %s\n' "$5" "$6" "$n" "$(($7 * n / 10))" "$2" "$3" 2>/dev/null >>"/proc/self/fd/$fd"
	fi
	exec {fd}<&-
}
