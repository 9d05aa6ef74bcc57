# shellcheck shell=bash
# A sweep's trial about to run again (tfhive sweep, resumed): what an
# earlier attempt of it left on this host, its run directory
# (rundir.sh), is renamed RUN.N beside it, N the first free number, so
# that the new attempt's fresh start (mux.sh), which empties a reused
# run id's directory, finds nothing of it: that output stays readable
# (tfhive logs -H … RUN.N) until tfhive gc removes it as any ended run's.
# A run one of whose supervisors still lives here is left alone, and so
# is a directory that is not the user's own (rundir.sh refuses it).
#
# Output, one line: "@@tfhive-aside moved RUN.N", "@@tfhive-aside none
# WHY" (nothing here to move), "@@tfhive-aside running TASK", or
# "@@tfhive-aside failed WHY".
#
# Parameters, set by tfhive ahead of this text:
#   tfhive_run  the run id
: "${tfhive_run?}"
tfhive_rd='' tfhive_why='' # set by tfhive_rundir (rundir.sh, sent ahead of this)
tfhive_alive=0 # set by tfhive_supervisor (rundir.sh)
tfhive_aside() { printf '@@tfhive-aside %s\n' "$1"; exit 0; }
tfhive_rundir "$tfhive_run" 0 || tfhive_aside "none $tfhive_why"
for tfhive_p in "$tfhive_rd"/*.pid; do
	{ [ -f "$tfhive_p" ] && [ ! -L "$tfhive_p" ]; } || continue
	tfhive_t=${tfhive_p##*/}
	tfhive_t=${tfhive_t%.pid}
	tfhive_t=${tfhive_t%-*}:${tfhive_t##*-}
	tfhive_supervisor "$tfhive_p" "$tfhive_run" "$tfhive_t"
	[ "$tfhive_alive" = 0 ] || tfhive_aside "running $tfhive_t"
done
tfhive_n=1
while [ -e "$tfhive_rd.$tfhive_n" ] || [ -L "$tfhive_rd.$tfhive_n" ]; do
	tfhive_n=$((tfhive_n + 1))
done
tfhive_e=$(mv -T -- "$tfhive_rd" "$tfhive_rd.$tfhive_n" 2>&1) || tfhive_aside "failed ${tfhive_e%%$'\n'*}"
tfhive_aside "moved $tfhive_run.$tfhive_n"
