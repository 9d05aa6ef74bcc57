# shellcheck shell=bash
# A host's multiplexer: one session (the probe's, handed over) starts and
# follows every kept supervisor of the run on its host, so that a run
# costs one login per host whatever its number of tasks (a login shell
# that runs conda's init costs hundreds of milliseconds of CPU).
#
# It first says, on a line of its own, "@@tfhive-mux MARK ok", or
# "@@tfhive-mux MARK failed WHY" and exits 126 (the run's directory
# refused, rundir.sh). Then it reads requests on stdin, one a line:
#   s NAME LEN  then LEN bytes: start a supervisor for the task whose
#               files are NAME.* in the run's directory (the task's id,
#               ':' as '-'), fed those bytes (supervisorInput) first
#   c NAME LINE a control line for that supervisor
#   e NAME      EOF on its stdin (a session closed)
#   k NAME      kill it (SIGKILL: a session killed)
#   f           follow: from now on stdout is frames of every task's
#               files (below); no more s
#   u LEN       then LEN bytes: start the run's GPU sampler on this host
#               (sample.sh, a stage as read-stage.sh reads it), once;
#               "e .sample" ends it (a name no task's can be)
# The sampler's lines go to this session's stderr, each behind the tag
# "@@tfhive-sampler MARK " (sample.sh): no task writes there (their
# output is in files, framed on stdout), and what the login
# shell or this shell may say there never passes for a sample. So --sample
# costs no session of its own: one login per host still.
# Each supervisor's stdin is a pipe from this shell (a process
# substitution: no FIFO to make), its stdout and stderr the files NAME.so
# and NAME.se in the directory .mux-MARK of the run's; the task's output
# files NAME.out and NAME.err get a hard link there. The pump
# (tfhive_pump) then follows those and the file "events", where each
# supervisor's wrapper appends "x NAME RC TRUNC SO SE OUT ERR;" once it
# has ended: its status, 1 when its output files could not take all the
# output (supervisor-run.sh), and the sizes of its four files then; or,
# for a supervisor never started because its files could not be made,
# "n NAME WHY;" (WHY without ";": the system's words, as "no space left on
# device"), which tfhive reports as that task's start failing, at once.
#
# Frames, not text, say whose bytes are whose: each is a line "FILE LEN"
# (FILE: NAME.so, NAME.se, NAME.out, NAME.err, events, or "failed": why
# the pump cannot follow the files, its last frame) and then exactly
# LEN bytes of that file, the next frame's line right after them. tfhive
# finds each line where the previous frame's length ends, and nowhere
# else: whatever a task prints (a line that looks like a frame's, or like
# GNU tail's "==> FILE <==" headers, which this multiplexer used to follow
# the files with) is LEN bytes of its own file and nothing more. No word
# need be kept from the task for that: a task runs as this user and can
# read every command line (ps) and file of the run. tfhive counts each
# file's bytes: the offsets a later session follows from (attach.sh).
#
# The multiplexer ends when its stdin does (tfhive is done with it) or
# once every supervisor it started has ended, whichever comes first.
#
# A wrapper outlives its supervisor until its stdin ends, reading what
# comes: a control line sent late never meets a closed pipe (SIGPIPE
# would end this shell), and its pid, which k signals, stays its own.
#
# Parameters, set by tfhive ahead of this text:
#   tfhive_read  read-stage.sh: a supervisor's shell reads its stages
#   tfhive_run   the run id
#   tfhive_mark  the session's random word
#   tfhive_fresh 1: the run's first start, not a re-plan's (what a
#                directory of that run id holds is an ended earlier run's)
: "${tfhive_read?}" "${tfhive_run?}" "${tfhive_mark?}" "${tfhive_fresh?}"
tfhive_say() { printf '%s %s %s\n' '@@tfhive-mux' "$tfhive_mark" "$1"; }
if ! command -v head >/dev/null 2>&1 || ! command -v stat >/dev/null 2>&1 || ! command -v mkfifo >/dev/null 2>&1; then
	tfhive_say 'failed head, stat or mkfifo not found on this host (coreutils)'
	exit 126
fi
tfhive_rd='' tfhive_why='' # set by tfhive_rundir (rundir.sh, sent ahead of this)
tfhive_pid='' tfhive_alive=0 # set by tfhive_supervisor (rundir.sh)
tfhive_rundir "$tfhive_run" 1 || { tfhive_say "failed $tfhive_why"; exit 126; }
if [ "$tfhive_fresh" = 1 ]; then
	# A run id used again (--name): an earlier run of that name left its
	# files, keeper generation and multiplexers' directories here. One of
	# its supervisors still alive refuses the start (tfhive checked the
	# claims first; a task holding none is only seen here); else the
	# new run starts from an empty directory, its keeper generation 1.
	tfhive_old=("$tfhive_rd"/* "$tfhive_rd"/.mux-*)
	for tfhive_p in "${tfhive_old[@]}"; do
		case $tfhive_p in *.pid) ;; *) continue ;; esac
		tfhive_t=${tfhive_p##*/}
		tfhive_t=${tfhive_t%.pid}
		tfhive_t=${tfhive_t%-*}:${tfhive_t##*-}
		tfhive_supervisor "$tfhive_p" "$tfhive_run" "$tfhive_t"
		if [ "$tfhive_alive" = 1 ]; then
			tfhive_say "failed run $tfhive_run is still running here: its $tfhive_t (pid $tfhive_pid) has not ended"
			exit 126
		fi
	done
	if [ -e "${tfhive_old[0]}" ] || [ -L "${tfhive_old[0]}" ] || [ -e "${tfhive_old[-1]}" ]; then
		rm -rf -- "${tfhive_old[@]}" 2>/dev/null
	fi
fi
tfhive_m=.mux-$tfhive_mark
tfhive_md=$tfhive_rd/$tfhive_m
# The pump's FIFO (tfhive_pump's wait) is made now, and the events file
# gets its first bytes ("s;", which tfhive passes over), before any task
# can have filled the disk: a disk full later still takes the events
# (the file's first block is there), and could not take a new file.
# Each step is tried quietly, and only one that failed is tried again in
# a command substitution, for the system's words (a process only then:
# the words were a fork for every multiplexer); what succeeded is not
# done again.
tfhive_mdfail() {
	tfhive_e=${tfhive_e%%$'\n'*} tfhive_e=${tfhive_e##*: }
	tfhive_say "failed cannot create $tfhive_md${tfhive_e:+: ${tfhive_e,}}"
	exit 126
}
mkdir -m 700 "$tfhive_md" 2>/dev/null || tfhive_e=$(exec mkdir -m 700 "$tfhive_md" 2>&1) || tfhive_mdfail
{ printf 's;\n' >"$tfhive_md/events"; } 2>/dev/null || tfhive_e=$({ printf 's;\n' >"$tfhive_md/events"; } 2>&1) || tfhive_mdfail
{ : >"$tfhive_md/seen"; } 2>/dev/null || tfhive_e=$({ : >"$tfhive_md/seen"; } 2>&1) || tfhive_mdfail
mkfifo -m 600 "$tfhive_md/tick" 2>/dev/null || tfhive_e=$(exec mkfifo -m 600 "$tfhive_md/tick" 2>&1) || tfhive_mdfail
tfhive_mux=$$
declare -A tfhive_fds tfhive_pids
tfhive_names=()
# A child closes the other supervisors' pipes: one held open elsewhere
# would never bring EOF to its supervisor.
tfhive_closeall() {
	for tfhive_x in "${tfhive_fds[@]}"; do exec {tfhive_x}>&-; done
}
# tfhive_wrap NAME runs NAME's supervisor on this stdin and says when it
# ended. The supervisor is told this machine's directory of runs
# (tfhive_runs, rundir.sh) in its environment, which it takes out of the
# task's: it need not look for itself (a readlink, two processes).
tfhive_wrap() {
	tfhive_closeall
	exec 4<&0 >/dev/null 2>&1
	tfhive_sp=
	trap '[ -z "$tfhive_sp" ] || kill -KILL "$tfhive_sp"' TERM
	# A subshell that execs the supervisor: bash started in the background
	# as a plain command would have SIGINT and SIGQUIT ignored, and the
	# supervisor would have to give them back to its task (env
	# --default-signal, supervisor-run.sh: a process per task); a
	# subshell's exec puts back the signals bash set for it.
	# shellcheck disable=SC2154 # tfhive_runs: tfhive_rundir's (rundir.sh)
	(tfhive_mux_runs=$tfhive_runs exec bash --norc -c "$tfhive_read" tfhive-mux-sup) <&4 >"$tfhive_md/$1.so" 2>"$tfhive_md/$1.se" 4<&- &
	tfhive_sp=$!
	exec 4<&-
	tfhive_rc=
	while [ -z "$tfhive_rc" ]; do
		wait "$tfhive_sp"
		tfhive_st=$?
		kill -0 "$tfhive_sp" 2>/dev/null || tfhive_rc=$tfhive_st
	done
	trap '' TERM
	tfhive_t=0 tfhive_trunc=
	read -r _ tfhive_trunc <"$tfhive_rd/$1.rc"
	case " $tfhive_trunc " in *' truncated '*) tfhive_t=1 ;; esac
	tfhive_sizes=$(stat -c %s -- "$tfhive_md/$1.so" "$tfhive_md/$1.se" "$tfhive_rd/$1.out" "$tfhive_rd/$1.err")
	printf 'x %s %s %s %s;\n' "$1" "$tfhive_rc" "$tfhive_t" "${tfhive_sizes//$'\n'/ }" >>"$tfhive_md/events"
	# The pump's wait ends at once (read-write: opening never blocks).
	printf '\n' 1<>"$tfhive_md/tick"
	tfhive_ended
	cat >/dev/null
}
# tfhive_ended, once a supervisor's end is in the events file, ends the
# multiplexer if that was the last of them: tfhive may never close its
# stdin (its link gone for good), and nothing of it must stay behind. The
# number of supervisors is known once following began (the file "n");
# one that ended before then is counted by tfhive_follow, which writes n
# before it counts: of the two, whichever looks last sees every end.
tfhive_ended() {
	tfhive_want=
	read -r tfhive_want 2>/dev/null <"$tfhive_md/n"
	[ -n "$tfhive_want" ] || return 0
	# The ends are counted in the file's whole text, read at once: each is
	# a line "x …" (after the first line, "s;"), so the count is what
	# removing every newline-x-space takes off, over 3. No process (grep
	# -c was one, twice per task) and no shell loop over the lines: 60 µs
	# for a few tasks, 2 ms for 1000 here, less than a grep up to some
	# 2000 tasks a host. Bytes, not characters (LC_ALL=C): the length of
	# a reason in another language counts as what it removes.
	local LC_ALL=C tfhive_ev='' tfhive_rest
	IFS= read -r -d '' tfhive_ev 2>/dev/null <"$tfhive_md/events"
	tfhive_rest=${tfhive_ev//$'\nx '/}
	tfhive_k=$(((${#tfhive_ev} - ${#tfhive_rest}) / 3))
	[ "$tfhive_k" -lt "$tfhive_want" ] || kill -TERM "$tfhive_mux" 2>/dev/null
}
# tfhive_sampler runs the sampler on this stdin, its stdout this shell's
# stderr, then reads what still comes (as a wrapper does, for the same
# reason) with that stderr let go of: the session ends with this shell.
tfhive_sampler() {
	tfhive_closeall
	exec 4<&0 5>&2 >/dev/null 2>&1
	bash --norc -c "$tfhive_read" tfhive-mux-sample <&4 >&5 4<&- 5>&-
	exec 4<&- 5>&-
	cat >/dev/null
}
# tfhive_sample LEN starts the sampler with the next LEN bytes, once.
tfhive_sample() {
	case $1 in '' | *[!0-9]*) exit 2 ;; esac
	tfhive_fd=
	if [ -z "${tfhive_fds[.sample]-}" ] && [ -z "${tfhive_pids[.sample]-}" ]; then
		exec {tfhive_fd}> >(tfhive_sampler)
		tfhive_pids[.sample]=$!
		tfhive_fds[.sample]=$tfhive_fd
	fi
	tfhive_feed "$1"
}
# tfhive_feed LEN passes the next LEN bytes to $tfhive_fd, or nowhere if
# unset: as read-stage.sh reads a stage, exactly LEN bytes, never ahead.
tfhive_feed() {
	if [ -n "$tfhive_fd" ]; then
		{ dd bs="$1" count=1 iflag=fullblock || dd bs=1 count="$1"; } 2>/dev/null 1>&"$tfhive_fd"
	else
		{ dd bs="$1" count=1 iflag=fullblock || dd bs=1 count="$1"; } >/dev/null 2>&1
	fi
}
# tfhive_start NAME LEN starts NAME's supervisor with the next LEN bytes.
tfhive_start() {
	tfhive_fd=
	case $1 in
	'' | .* | *[!A-Za-z0-9_.-]*) ;;
	*)
		if [ -z "${tfhive_fds[$1]-}" ] && [ -z "$tfhive_following" ]; then
			tfhive_f=$tfhive_rd/$1
			# A retried start (same run id) finds its earlier files; the
			# supervisor, told it runs here, leaves the new ones be.
			tfhive_old=("$tfhive_f".*)
			if [ -e "${tfhive_old[0]}" ] || [ -L "${tfhive_old[0]}" ]; then rm -f -- "${tfhive_old[@]}"; fi
			if { : >"$tfhive_f.out" && : >"$tfhive_f.err" && : >"$tfhive_md/$1.so" && : >"$tfhive_md/$1.se"; } 2>/dev/null; then
				exec {tfhive_fd}> >(tfhive_wrap "$1")
				tfhive_pids[$1]=$!
				tfhive_fds[$1]=$tfhive_fd
				tfhive_names+=("$1")
			else
				# Again, for the system's words (a process only when it
				# failed): tfhive says why the task could not start.
				tfhive_e=$({ : >"$tfhive_f.out" && : >"$tfhive_f.err" && : >"$tfhive_md/$1.so" && : >"$tfhive_md/$1.se"; } 2>&1)
				tfhive_e=${tfhive_e%%$'\n'*} tfhive_e=${tfhive_e##*: }
				tfhive_e="cannot create the task's files in $tfhive_rd${tfhive_e:+: ${tfhive_e,}}"
				printf 'n %s %s;\n' "$1" "${tfhive_e//;/,}" >>"$tfhive_md/events"
			fi
			tfhive_nx=$((tfhive_nx + 1))
		fi
		;;
	esac
	case $2 in '' | *[!0-9]*) exit 2 ;; esac
	tfhive_feed "$2"
}
# tfhive_end NAME closes NAME's pipe.
tfhive_end() {
	tfhive_fd=${tfhive_fds[$1]-}
	[ -n "$tfhive_fd" ] || return 0
	exec {tfhive_fd}>&-
	unset "tfhive_fds[$1]"
}
# tfhive_pump FILE... writes frames of the FILEs (paths from the run's
# directory) on stdout, every byte of each once, in order, until this
# multiplexer has ended; then one last look, as tail --pid did.
#
# A look costs one stat for all the files, and one head per file that
# grew: a process per file and look, never per line (a task that prints
# 10,000 lines in 50 ms costs one head). The sizes come first and head
# copies exactly that many bytes from a descriptor that stays where the
# last frame ended: a frame's length is known before its first byte is
# sent, whatever the task writes meanwhile (the file only grows). The
# wait between looks is a read with a timeout on a FIFO nobody writes
# but a wrapper whose supervisor has ended (its end is in the events
# file then: seen at once): no sleep process. 50 ms while the files
# grow, 200 ms after a second with nothing new (the first bytes after a
# pause come within that).
#
# A look is skipped, at no process's cost, while every file is older
# than the file "seen", whose time is set just before each look's stat
# (bash's test -ot, a stat call of its own: nothing forked). A file
# written since, even within the clock's tick that set "seen", is not
# older, so its bytes are never left unlooked-for; at worst a look finds
# nothing new. An idle pump of a 2 s trial forked some 30 stat before,
# a few now. A look is made anyway once 2 s have passed since the last
# one (bash's EPOCHREALTIME: no process), so that a file whose time was
# set back (touch -d) waits at most that.
#
# A file it cannot open (removed meanwhile, or a home whose file system
# takes no hard link) is said at once, as a frame "failed" with the
# reason, and ends the multiplexer: tfhive reports it then, never as a
# silence that ends in "no answer from the host".
# shellcheck disable=SC2154 # tfhive_now: tfhive_tenths's (clock.sh)
tfhive_pump() {
	tfhive_pin=() tfhive_pat=() tfhive_pnm=() tfhive_pdev=()
	for tfhive_x in "$@"; do
		exec {tfhive_y}<"$tfhive_x" || tfhive_pumpfail "cannot open $tfhive_rd/$tfhive_x"
		tfhive_pin+=("$tfhive_y")
		tfhive_pat+=(0)
		tfhive_pnm+=("${tfhive_x##*/}")
		tfhive_pdev+=("/dev/fd/$tfhive_y")
	done
	exec {tfhive_z}<>"$tfhive_md/tick" || tfhive_pumpfail "cannot open $tfhive_md/tick"
	tfhive_last=0 tfhive_idle=0 tfhive_looked=0
	while :; do
		kill -0 "$tfhive_mux" 2>/dev/null || tfhive_last=1
		tfhive_tenths
		if [ "$tfhive_last" = 0 ] && [ $((tfhive_now - tfhive_looked)) -lt 20 ] && tfhive_unchanged; then
			tfhive_any=
		else
			tfhive_looked=$tfhive_now tfhive_any=
			: >"$tfhive_md/seen" 2>/dev/null
			# The open files themselves (/dev/fd): the sizes are those of
			# what head reads. exec: a command substitution's command
			# with a redirection is otherwise forked again from its
			# subshell (bash 5.2), two processes for one.
			# shellcheck disable=SC2207 # sizes: digits only
			tfhive_sz=($(exec stat -L -c %s -- "${tfhive_pdev[@]}" 2>/dev/null))
			if [ "${#tfhive_sz[@]}" = "${#tfhive_pin[@]}" ]; then
				for tfhive_i in "${!tfhive_sz[@]}"; do
					tfhive_l=$((tfhive_sz[tfhive_i] - tfhive_pat[tfhive_i]))
					[ "$tfhive_l" -gt 0 ] || continue
					printf '%s %s\n' "${tfhive_pnm[tfhive_i]}" "$tfhive_l"
					head -c "$tfhive_l" <&"${tfhive_pin[tfhive_i]}" || exit 1
					tfhive_pat[tfhive_i]=${tfhive_sz[tfhive_i]}
					tfhive_any=1
				done
			fi
		fi
		[ "$tfhive_last" = 0 ] || exit 0
		if [ -n "$tfhive_any" ]; then tfhive_idle=0; else tfhive_idle=$((tfhive_idle + 1)); fi
		if [ "$tfhive_idle" -lt 20 ]; then
			read -r -t 0.05 -u "$tfhive_z" _
		else
			read -r -t 0.2 -u "$tfhive_z" _
		fi
	done
}
# tfhive_unchanged: every file the pump follows is older than "seen" (no
# file missing either: -ot is false then).
tfhive_unchanged() {
	for tfhive_x in "${tfhive_pdev[@]}"; do
		[ "$tfhive_x" -ot "$tfhive_md/seen" ] || return 1
	done
}
# tfhive_pumpfail WHY says WHY as the pump's last frame (its length in
# bytes, whatever the locale), ends the multiplexer and exits.
tfhive_pumpfail() {
	local LC_ALL=C
	printf 'failed %s\n%s' "${#1}" "$1"
	kill -TERM "$tfhive_mux" 2>/dev/null
	exit 1
}
tfhive_following=
tfhive_follow() {
	[ -z "$tfhive_following" ] || return 0
	tfhive_following=1
	tfhive_ls=() tfhive_files=()
	for tfhive_n in "${tfhive_names[@]}"; do
		tfhive_ls+=("$tfhive_n.out" "$tfhive_n.err")
		tfhive_files+=("$tfhive_m/$tfhive_n.so" "$tfhive_m/$tfhive_n.se" "$tfhive_m/$tfhive_n.out" "$tfhive_m/$tfhive_n.err")
	done
	(
		tfhive_closeall
		cd "$tfhive_rd" || tfhive_pumpfail "cannot enter $tfhive_rd"
		[ "${#tfhive_ls[@]}" = 0 ] || ln -- "${tfhive_ls[@]}" "$tfhive_m/" 2>/dev/null
		exec 2>/dev/null
		tfhive_pump "${tfhive_files[@]}" "$tfhive_m/events"
	) &
	printf '%s\n' "$tfhive_nx" >"$tfhive_md/n"
	tfhive_ended
}
tfhive_nx=0
# The last supervisor's end (tfhive_ended) ends this shell, in its read:
# its pump then sends the last bytes and ends too.
trap 'exit 0' TERM
tfhive_say ok
while IFS=' ' read -r tfhive_op tfhive_n tfhive_arg; do
	case $tfhive_op in
	s) tfhive_start "$tfhive_n" "$tfhive_arg" ;;
	c) [ -z "${tfhive_fds[$tfhive_n]-}" ] || printf '%s\n' "$tfhive_arg" >&"${tfhive_fds[$tfhive_n]}" ;;
	e) tfhive_end "$tfhive_n" ;;
	k)
		[ -z "${tfhive_pids[$tfhive_n]-}" ] || [ -z "${tfhive_fds[$tfhive_n]-}" ] || kill -TERM "${tfhive_pids[$tfhive_n]}" 2>/dev/null
		tfhive_end "$tfhive_n"
		;;
	f) tfhive_follow ;;
	u) tfhive_sample "$tfhive_n" ;;
	esac
done
