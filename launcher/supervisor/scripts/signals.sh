# shellcheck shell=bash
# tfhive_sigdfl sets tfhive_dfl to what the task's start puts before the
# task (supervisor-run.sh's tfhive_spawn), so that it has SIGINT and
# SIGQUIT at their defaults.
#
# A shell started in the background as a plain command has SIGINT and
# SIGQUIT ignored, which its children inherit and a non-interactive
# shell cannot trap: the task would never hear --stop-signal SIGINT, nor
# Python raise KeyboardInterrupt. env --default-signal (coreutils 8.31)
# gives them back, exec'd in place; it is tried only when they were
# ignored as this shell started (no process otherwise). The
# multiplexer's supervisors are started through a subshell's exec, which
# keeps them (mux.sh's tfhive_wrap). Which were: SIGINT as /proc says;
# SIGQUIT as trap -p says ("trap -- '' SIGQUIT" for one ignored on entry),
# since bash ignores SIGQUIT in its own process whatever it was given,
# and /proc shows that for every bash (it put every supervisor through
# the try and env, a process and an exec per task). trap -p writes into
# a pipe of this shell's (descriptor 13 for a moment: tfhive_pipe,
# pipe.sh), read back: no process. It must run before any trap on INT or
# QUIT is set.
# shellcheck disable=SC2034 # tfhive_dfl: supervisor-run.sh's
tfhive_sigdfl() {
	local k v ign=''
	tfhive_dfl=()
	tfhive_pipe 13
	trap -p INT QUIT >&13
	while read -r -t 0 -u 13 && IFS= read -r -u 13 _; do ign=1; done
	exec 13<&-
	while read -r k v; do
		[ "$k" = SigIgn: ] || continue
		if [[ $v =~ ^[0-9a-f]+$ ]] && ((16#$v & 2)); then ign=1; fi
		break
	done 2>/dev/null <"/proc/$$/status"
	if [ -n "$ign" ] && env --default-signal=INT,QUIT true 2>/dev/null; then
		tfhive_dfl=(env '--default-signal=INT,QUIT')
	fi
}
