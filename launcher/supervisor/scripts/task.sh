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
# A command that is not there, or an interpreter's script that is not (a
# relative path is the workdir's), is one plain line naming what and where,
# and exit 127, the shells' "not found" (a path that is there
# but cannot be run: 126, theirs for "cannot execute"): never bash's
# "tfhive-task: line N: exec: …", nor python's exit 2, which is tfhive's
# usage code. An interpreter's script is its first word after flags that
# take no value (python -u x.py, bash -e x.sh); -c, -m and the rest are
# left to the interpreter. The hint is tfhive's to say, once a run
# (launcher/notfound.go), not once a task.
eval "set -- $tfhive_argv"
if [ $# -gt 0 ] && ! command -v -- "$1" >/dev/null 2>&1; then
	case $1 in
	*/*) if [ -e "$1" ]; then
		printf 'tfhive: %s: not an executable file, in %s (hint: chmod +x it, or name its interpreter: sh %s)\n' "$1" "$PWD" "$1" >&2
		exit 126
	fi ;;
	esac
	printf 'tfhive: %s: command not found in %s\n' "$1" "$PWD" >&2
	exit 127
fi
tfhive_flags=
case ${1##*/} in
python | python[0-9]* | pypy | pypy[0-9]*) tfhive_flags=uOBEsSIbdqv ;;
bash | sh | dash | zsh | ksh) tfhive_flags=exuvn ;;
esac
if [ -n "$tfhive_flags" ]; then
	for tfhive_a in "${@:2}"; do
		case $tfhive_a in
		-*[!"$tfhive_flags"]* | - | --) break ;;
		-*) continue ;;
		esac
		if [ ! -e "$tfhive_a" ]; then
			printf 'tfhive: %s: script %s not found in %s\n' "$1" "$tfhive_a" "$PWD" >&2
			exit 127
		fi
		break
	done
fi
exec "$@"
