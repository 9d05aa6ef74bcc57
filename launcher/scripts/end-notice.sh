# shellcheck shell=bash
# Whether a kept run's end has been told (tfhive --notify): the keeper
# that saw the end, or tfhive attach -H that adopted the run after its
# keeper was gone, claims the telling here before it tells. The first to
# make end-notified in the run's directory (rundir.sh: the user's own,
# mode 0700, so nobody else can have made it) tells; any later one,
# another attach -H of the ended run, does not.
#
# Output, one line: "@@tfhive-notice first", "@@tfhive-notice told"
# (another did first), "@@tfhive-notice none WHY" (no directory of the
# run here to remember it in).
#
# Parameters, set by tfhive ahead of this text:
#   tfhive_run  the run id
: "${tfhive_run?}"
tfhive_rd='' tfhive_why='' # set by tfhive_rundir (rundir.sh, sent ahead of this)
if ! tfhive_rundir "$tfhive_run" 0; then
	printf '@@tfhive-notice none %s\n' "$tfhive_why"
	exit 0
fi
# noclobber: made only where nothing was, a link or a file alike.
if (set -C && : >"$tfhive_rd/end-notified") 2>/dev/null; then
	printf '@@tfhive-notice first\n'
elif [ -e "$tfhive_rd/end-notified" ] || [ -L "$tfhive_rd/end-notified" ]; then
	printf '@@tfhive-notice told\n'
else
	printf '@@tfhive-notice none cannot write in %s\n' "$tfhive_rd"
fi
