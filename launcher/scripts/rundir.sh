# shellcheck shell=bash
# The run's directory on a host, where a kept supervisor (--reconnect)
# leaves what outlives a session: each task's output and status, its pid,
# its control FIFO. It is ~/.tfhive/runs/RUN, and it and its two parents
# must be real directories (not symlinks) of this user's own with mode
# 0700: nobody else could have prepared anything in them, so tfhive may
# create, read and write there; anything else is refused, never followed.
#
# tfhive_rundir RUN CREATE sets tfhive_rd to the directory, creating what
# is missing when CREATE is 1; on refusal it sets tfhive_why and fails.
# shellcheck disable=SC2034 # tfhive_why is the caller's
tfhive_rundir() {
	tfhive_rd=$HOME
	for tfhive_part in .tfhive runs "$1"; do
		tfhive_rd=$tfhive_rd/$tfhive_part
		if [ ! -e "$tfhive_rd" ] && [ ! -L "$tfhive_rd" ]; then
			if [ "$2" != 1 ]; then
				tfhive_why="no trace of run $1 in $tfhive_rd"
				return 1
			fi
			# Another task of the run may make it first: only what is
			# there then counts.
			mkdir -m 700 "$tfhive_rd" 2>/dev/null || [ -e "$tfhive_rd" ] || { tfhive_why="cannot create $tfhive_rd"; return 1; }
		fi
		if [ -L "$tfhive_rd" ] || [ ! -d "$tfhive_rd" ]; then
			tfhive_why="$tfhive_rd is not a directory"
			return 1
		fi
		read -r tfhive_uid tfhive_mode <<<"$(stat -c '%u %a' "$tfhive_rd" 2>/dev/null)"
		if [ "$tfhive_uid" != "$EUID" ] || [ "$tfhive_mode" != 700 ]; then
			tfhive_why="$tfhive_rd is not yours with mode 0700 (uid ${tfhive_uid:-?}, mode ${tfhive_mode:-?})"
			return 1
		fi
	done
}

# tfhive_feed GEN CTL passes control lines from stdin into the task's
# control FIFO CTL (open on descriptor 6) for as long as GEN is the run's
# keeper generation on record (keeper.gen in the run's directory,
# tfhive_rd): once a newer keeper has adopted the run, it says so on
# stderr, on a line of its own, and stops, so that the older one steps
# down.
#
# While it runs, it holds a shared lock on a descriptor of its own on the
# FIFO: /proc/locks then says that a session follows the task (tfhive
# ps), and the lock goes with the feeder whatever ends it (EOF when the
# session closes, a kill). Without flock, ps says no keeper.
tfhive_feed() {
	exec 8<>"$2" && flock -n -s 8 2>/dev/null
	while IFS= read -r tfhive_l; do
		tfhive_g=
		read -r tfhive_g <"$tfhive_rd/keeper.gen" 2>/dev/null
		case $tfhive_g in '' | *[!0-9]*) tfhive_g=0 ;; esac
		if [ "$tfhive_g" -gt "$1" ]; then
			printf '\n%s %s\n' '@@tfhive-replaced' "$tfhive_g" >&2
			return
		fi
		printf '%s\n' "$tfhive_l" >&6
	done
}
