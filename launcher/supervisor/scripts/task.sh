# shellcheck shell=bash
# The task's own shell, in its new session (supervisor-run.sh starts it
# with setsid): its workdir, its setup snippet, then the task in its
# place.
#
# Parameters, set by tfhive ahead of this text:
#   tfhive_workdir     where the task runs (a leading ~ is the remote
#                      home); none: the home
#   tfhive_setup       the setup snippet, run by this shell, so that
#                      `source venv/bin/activate` works; none: no setup
#   tfhive_setup_line  its first line, to name it when it fails
#   tfhive_argv        the task's command line, as shell words
: "${tfhive_workdir?}" "${tfhive_setup?}" "${tfhive_setup_line?}" "${tfhive_argv?}"
if [ -n "$tfhive_workdir" ]; then
	case $tfhive_workdir in
	\~) tfhive_d=$HOME ;;
	\~/*) tfhive_d=$HOME/${tfhive_workdir#\~/} ;;
	*) tfhive_d=$tfhive_workdir ;;
	esac
	cd "$tfhive_d" || { printf 'tfhive: cannot cd to %s\n' "$tfhive_workdir" >&2; exit 126; }
fi
if [ -n "$tfhive_setup" ]; then
	eval "$tfhive_setup" || { printf 'tfhive: setup failed: %s\n' "$tfhive_setup_line" >&2; exit 126; }
fi
eval "exec $tfhive_argv"
