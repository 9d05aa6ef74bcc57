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

# tfhive_ledger DIR RUN TASK CLAIMS START END IDLE: IDLE in tenths of a
# second, while all the run's GPUs here were idle (the task's GPUs with
# them).
tfhive_ledger() {
	[ "$1" != - ] && [ -d "$1" ] || return 0
	local -a c
	local g n=0 f m s
	IFS=, read -r -a c <<<"$4"
	for g in "${c[@]}"; do [[ $g != gpu:* ]] || n=$((n + 1)); done
	# A task on CPUs holds no GPU-hours.
	[ "$n" -gt 0 ] || return 0
	printf -v m '%(%Y-%m)T' "$5"
	f=$1/tfhive-usage.$UID.$m.csv
	# Another user's link or file is not ours to write through.
	if [ -L "$f" ] || { [ -e "$f" ] && [ ! -O "$f" ]; }; then return 0; fi
	if [ -e "$f" ]; then
		s=$(stat -c %s -- "$f" 2>/dev/null) || return 0
		[ "$s" -lt 1048576 ] || return 0
	fi
	(umask 022 && printf '1 %s %s %s %s %s %s\n' "$5" "$6" "$n" "$(($7 * n / 10))" "$2" "$3" >>"$f") 2>/dev/null
}
