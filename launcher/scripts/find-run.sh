# shellcheck shell=bash
# What one host holds of a kept run, for a keeper that adopts it (tfhive
# attach -H): the run's description, its keeper generation, and each task
# whose files are here, with whether its supervisor still runs ("alive"),
# ended ("ended"), or is gone without a status ("gone"), and the attempt
# it is at (tfhive run --restarts; 0 without). A directory that
# is not the user's own, or none, says why on one line.
#
# Parameters, set by tfhive ahead of this text:
#   tfhive_run  the run id
: "${tfhive_run?}"
tfhive_rd='' tfhive_why='' # set by tfhive_rundir (rundir.sh, sent ahead of this)
tfhive_alive=0 # set by tfhive_supervisor (rundir.sh)
if ! tfhive_rundir "$tfhive_run" 0; then
	printf '@@tfhive-none %s\n' "$tfhive_why"
	exit 0
fi
tfhive_j=$(head -c 1048576 "$tfhive_rd/run.json" 2>/dev/null | head -n 1)
printf '@@tfhive-run %s\n' "$tfhive_j"
tfhive_g=
read -r tfhive_g 2>/dev/null <"$tfhive_rd/keeper.gen"
printf '@@tfhive-gen %s\n' "${tfhive_g:-1}"
for tfhive_p in "$tfhive_rd"/*.pid; do
	{ [ -f "$tfhive_p" ] && [ ! -L "$tfhive_p" ]; } || continue
	tfhive_f=${tfhive_p%.pid}
	tfhive_t=${tfhive_f##*/}
	tfhive_rc='' tfhive_at=''
	read -r tfhive_rc _ 2>/dev/null <"$tfhive_f.rc"
	read -r _ _ _ tfhive_at _ 2>/dev/null <"$tfhive_p"
	case $tfhive_at in '' | *[!0-9]*) tfhive_at=0 ;; esac
	tfhive_id=${tfhive_t%-*}:${tfhive_t##*-}
	tfhive_state=gone
	if [ -n "$tfhive_rc" ]; then
		tfhive_state=ended
	else
		tfhive_supervisor "$tfhive_p" "$tfhive_run" "$tfhive_id"
		[ "$tfhive_alive" = 0 ] || tfhive_state=alive
	fi
	printf '@@tfhive-task %s %s %s\n' "$tfhive_id" "$tfhive_state" "$tfhive_at"
done
