# shellcheck shell=sh
# `tfhive doctor` and `run --check` on one host: what a task there would
# meet. It goes where a task goes (its workdir, after its setup snippet,
# with the hosts file's environment) and reports, one line each:
#   @@tfhive-doctor          first, so that a login banner before it is
#                            skipped
#   disk BLOCKS SIZE         free space in the workdir (stat -f), or
#   disk-kib KIB             df's when stat -f is missing
#   error WHY                the check stopped there: no workdir, setup
#                            failed
#   python PATH              the python3 (or python) on the PATH, or none
#   @@tfhive-python JSON     the Python part's report (doctor.py)
#   python-exit N            its status (124: timed out)
# It runs as the first stage of a supervisor command (read-stage.sh), on
# the probe's kept session: it must not read stdin, which is tfhive's.
# The Python part reaches Python on a pipe, never on a command line.
#
# Parameters, set by tfhive ahead of this text, with the hosts file's
# environment, exported:
#   tfhive_workdir     as for a task (task.sh): a leading ~ is the home
#   tfhive_setup       the setup snippet, or none
#   tfhive_setup_line  its first line, to name it when it fails
#   tfhive_t           the Python part's time limit, in seconds
#   tfhive_py          the Python part (doctor.py)
#   tfhive_mods        the modules to import, as shell words
: "${tfhive_workdir?}" "${tfhive_setup?}" "${tfhive_setup_line?}" "${tfhive_t?}" "${tfhive_py?}" "${tfhive_mods?}"
echo '@@tfhive-doctor'
if [ -n "$tfhive_workdir" ]; then
	case $tfhive_workdir in
	\~) tfhive_d=$HOME ;;
	\~/*) tfhive_d=$HOME/${tfhive_workdir#\~/} ;;
	*) tfhive_d=$tfhive_workdir ;;
	esac
	cd "$tfhive_d" 2>/dev/null || { printf 'error cannot cd to %s\n' "$tfhive_workdir"; exit 0; }
fi
if tfhive_df=$(stat -f -c '%a %S' . 2>/dev/null); then
	echo "disk $tfhive_df"
else
	echo "disk-kib $(df -Pk . 2>/dev/null | awk 'NR == 2 { print $4 }')"
fi
# The snippet runs in this shell, as a task's does, so that what it
# exports or activates counts; what it prints must not look like ours.
if [ -n "$tfhive_setup" ]; then
	eval "$tfhive_setup" </dev/null >&2 || { printf 'error setup failed: %s\n' "$tfhive_setup_line"; exit 0; }
fi
tfhive_python=$(command -v python3 2>/dev/null || command -v python 2>/dev/null)
echo "python $tfhive_python"
[ -n "$tfhive_python" ] || exit 0
eval "set -- $tfhive_mods"
# coreutils timeout stops a Python stuck importing on the host itself,
# so that nothing is left running there.
if command -v timeout >/dev/null 2>&1; then
	set -- timeout -k 2 "$tfhive_t" "$tfhive_python" - "$@"
else
	set -- "$tfhive_python" - "$@"
fi
printf '%s\n' "$tfhive_py" | TF_CPP_MIN_LOG_LEVEL=3 "$@"
echo "python-exit $?"
