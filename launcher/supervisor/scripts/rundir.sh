# shellcheck shell=bash
# The run's directory on a host, where a kept supervisor (--reconnect)
# leaves what outlives a session: each task's output and status, its pid,
# its control FIFO. It is ~/.tfhive/runs-KEY/RUN, KEY naming this machine
# (tfhive_runsdir), and it and its two parents must be real directories
# (not symlinks) of this user's own with mode 0700: nobody else could have
# prepared anything in them, so tfhive may create, read and write there;
# anything else is refused, never followed.
# shellcheck disable=SC2034 # tfhive_why, tfhive_w…: the callers'

# tfhive_runsdir sets tfhive_runs to this machine's directory of runs,
# ~/.tfhive/runs-KEY. KEY is the machine's /etc/machine-id (or, on a
# machine without a valid one, "host-" and its hostname), then the first
# word of its boot id and its PID namespace's number: what is kept there
# (pids, FIFOs, locks, multiplexers) means something only to the process
# table that made it. A home shared by many hosts (NFS) keeps each host's
# runs apart, and so do clones of one image that report one machine-id
# (cloned VMs differ in boot id, containers of one kernel in PID
# namespace). probe/scripts/claims.sh and runs.sh find the same
# directory.
tfhive_runsdir() {
	tfhive_key='' tfhive_boot=''
	read -r tfhive_key 2>/dev/null </etc/machine-id
	case $tfhive_key in
	'' | *[!0-9a-f]*) tfhive_key=host-${HOSTNAME//[!A-Za-z0-9._-]/_} ;;
	esac
	read -r tfhive_boot 2>/dev/null </proc/sys/kernel/random/boot_id
	# exec: a command substitution whose command has a redirection costs
	# bash a second fork (a shell that runs it) unless told to exec it.
	tfhive_ns=$(exec readlink /proc/self/ns/pid 2>/dev/null)
	tfhive_ns=${tfhive_ns#pid:\[}
	tfhive_runs=$HOME/.tfhive/runs-$tfhive_key-${tfhive_boot%%-*}-${tfhive_ns%]}
}

# tfhive_rundir RUN CREATE sets tfhive_rd to the directory, creating what
# is missing when CREATE is 1; on refusal it sets tfhive_why and fails.
tfhive_rundir() {
	tfhive_runsdir
	tfhive_rd=$tfhive_runs/$1
	tfhive_owndirs "$2" "run $1" "$HOME/.tfhive" "$tfhive_runs" "$tfhive_rd"
}

# tfhive_owndirs CREATE WHAT DIR... takes the DIRs (each one inside the
# one before) only when each is a real directory (not a symlink) of this
# user's own with mode 0700; what is missing is made so when CREATE is 1,
# and otherwise fails with "no trace of WHAT in DIR". On refusal it sets
# tfhive_why and fails.
tfhive_owndirs() {
	tfhive_oc=$1 tfhive_ow=$2
	shift 2
	tfhive_ds=("$@")
	tfhive_why=
	for tfhive_d in "${tfhive_ds[@]}"; do
		# A symlink is refused before anything is made below it.
		[ ! -L "$tfhive_d" ] || { tfhive_why="$tfhive_d is a symbolic link"; break; }
		[ ! -e "$tfhive_d" ] || continue
		if [ "$tfhive_oc" != 1 ]; then
			tfhive_why="no trace of $tfhive_ow in $tfhive_d"
			return 1
		fi
		# Another task of the run may make it first: only what is there
		# then counts.
		tfhive_e=$(exec mkdir -m 700 "$tfhive_d" 2>&1) || [ -e "$tfhive_d" ] || { tfhive_e=${tfhive_e%%$'\n'*} tfhive_e=${tfhive_e##*: }; tfhive_why="cannot create $tfhive_d${tfhive_e:+: ${tfhive_e,}}"; return 1; }
	done
	if [ -z "$tfhive_why" ]; then
		# One stat for them all (it does not follow symlinks: %F says so).
		tfhive_i=0
		while read -r tfhive_uid tfhive_mode tfhive_owner tfhive_type; do
			tfhive_d=${tfhive_ds[tfhive_i]}
			tfhive_i=$((tfhive_i + 1))
			if [ "$tfhive_type" != directory ]; then
				tfhive_why="$tfhive_d is not a directory"
			elif [ "$tfhive_uid" != "$EUID" ]; then
				tfhive_why="$tfhive_d is owned by ${tfhive_owner:-?} (uid ${tfhive_uid:-?}), not by you"
			elif [ "$tfhive_mode" != 700 ]; then
				tfhive_why="$tfhive_d has mode 0${tfhive_mode:-?}, not 0700"
			else
				continue
			fi
			break
		done <<<"$(exec stat -c '%u %a %U %F' -- "${tfhive_ds[@]}" 2>/dev/null)"
		[ -n "$tfhive_why" ] || [ "$tfhive_i" = "${#tfhive_ds[@]}" ] || tfhive_why="${tfhive_ds[tfhive_i]} cannot be read"
	fi
	if [ -n "$tfhive_why" ]; then
		tfhive_why="$tfhive_why: tfhive keeps a run's files only in real directories of your own with mode 0700"
		return 1
	fi
}

# tfhive_feed GEN CTL passes control lines from stdin into the task's
# control FIFO CTL (open on descriptor 6) for as long as GEN is the run's
# keeper generation on record (keeper.gen in the run's directory,
# tfhive_rd): once a newer keeper has adopted the run, it says so on
# stderr, on a line of its own, and stops, so that the older one steps
# down.
#
# While it runs, a shared lock on the FIFO says so: /proc/locks then
# says that a session follows the task (tfhive ps). The lock's holder is
# a flock process that lives as long as this feeder (a tail following its
# pid), whatever ends it (EOF when the session closes, a kill): a lock
# whose taker has exited is listed only in the machine's first PID
# namespace, and a host that is a container (or a PID namespace of its
# own) would never show it. Without flock, ps says no keeper.
tfhive_feed() {
	# (BASHPID is read here: in the background command, it would be its
	# own.) The holder outlives the feeder by up to a second: it works in
	# / and without the task's TFHIVE_CODE_DIR, so that gc never takes it
	# for a user of a --sync tree.
	tfhive_fpid=$BASHPID
	(
		cd / || exit
		unset TFHIVE_CODE_DIR
		exec flock -n -s -o "$2" tail --pid="$tfhive_fpid" -s 1 -f /dev/null
	) </dev/null >/dev/null 2>&1 &
	while IFS= read -r tfhive_l; do
		tfhive_g=
		read -r tfhive_g 2>/dev/null <"$tfhive_rd/keeper.gen"
		case $tfhive_g in '' | *[!0-9]*) tfhive_g=0 ;; esac
		if [ "$tfhive_g" -gt "$1" ]; then
			printf '\n%s %s\n' '@@tfhive-replaced' "$tfhive_g" >&2
			return
		fi
		printf '%s\n' "$tfhive_l" >&6
	done
}

# tfhive_supervisor PIDFILE RUN TASK reads a task's pid file (the
# supervisor, then each stream's logger: tfhive_pid, tfhive_lo, tfhive_le)
# and sets tfhive_alive to 1 only when /proc says that pid is this user's
# supervisor of this very task: a pid from a file is followed, never
# signalled, and trusted no further.
# shellcheck disable=SC2034 # the callers use what they need of it
tfhive_supervisor() {
	tfhive_pid='' tfhive_lo='' tfhive_le='' tfhive_alive=0
	read -r tfhive_pid tfhive_lo tfhive_le _ 2>/dev/null <"$1"
	case $tfhive_pid in '' | *[!0-9]*) return ;; esac
	[ -O "/proc/$tfhive_pid" ] || return
	tfhive_args=$(exec tr '\0' ' ' 2>/dev/null <"/proc/$tfhive_pid/cmdline")
	case $tfhive_args in *" tfhive-sup "*" $2 $3 "*) tfhive_alive=1 ;; esac
}

# tfhive_writer PID sets tfhive_w to the process a tail of a stream
# follows: PID, that stream's logger, while it is the supervisor's child
# (the supervisor-run.sh tails do the same), else the supervisor.
tfhive_writer() {
	tfhive_w=$tfhive_pid
	case $1 in '' | *[!0-9]*) return ;; esac
	read -r tfhive_stat 2>/dev/null <"/proc/$1/stat" || return
	tfhive_stat=${tfhive_stat##*) }
	tfhive_stat=${tfhive_stat#* }
	[ "${tfhive_stat%% *}" = "$tfhive_pid" ] && tfhive_w=$1
}

# tfhive_records FILE SECRET [PID] puts on stdout the supervisor's records
# of where the attempt lines of FILE.out start (FILE.att, "N RC OFFSET",
# supervisor-run.sh), each as "@@tfhive-rec SECRET at OFFSET", then
# "@@tfhive-rec SECRET seen SIZE", SIZE the file's size taken before the
# records were read: the supervisor writes a record before its line, so
# every line before SIZE has its record among those. SECRET is a word of
# this session's tfhive, which the task is not told: the lines go into
# the stream of FILE.out, among its bytes (tfhive takes them out, and
# takes out an attempt line only at an offset they gave). With PID, the
# supervisor, it goes on every 0.2 s while PID lives, and once after;
# only what is new is said again.
tfhive_records() {
	tfhive_rn=0 tfhive_rz=
	while :; do
		tfhive_ra=0
		# Alive: not gone, nor a zombie (once this session's parent is
		# gone, nobody may ever reap it).
		if [ -n "${3-}" ] && read -r tfhive_rt 2>/dev/null <"/proc/$3/stat"; then
			tfhive_rt=${tfhive_rt##*) }
			[ "${tfhive_rt%% *}" = Z ] || tfhive_ra=1
		fi
		tfhive_rs=$(exec stat -c %s -- "$1.out" 2>/dev/null) || tfhive_rs=
		tfhive_ri=0
		if [ -f "$1.att" ] && [ ! -L "$1.att" ]; then
			# A line still being written has no newline yet: read fails on
			# it, and it is read next time.
			while read -r _ _ tfhive_ro; do
				tfhive_ri=$((tfhive_ri + 1))
				[ "$tfhive_ri" -gt "$tfhive_rn" ] || continue
				case $tfhive_ro in '' | *[!0-9]*) continue ;; esac
				printf '@@tfhive-rec %s at %s\n' "$2" "$tfhive_ro"
			done <"$1.att"
		fi
		if [ "$tfhive_ri" != "$tfhive_rn" ] || [ "$tfhive_rs" != "$tfhive_rz" ]; then
			[ -z "$tfhive_rs" ] || printf '@@tfhive-rec %s seen %s\n' "$2" "$tfhive_rs"
		fi
		tfhive_rn=$tfhive_ri tfhive_rz=$tfhive_rs
		[ "$tfhive_ra" = 1 ] || return 0
		sleep 0.2
	done
}
