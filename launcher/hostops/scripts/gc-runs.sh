# shellcheck shell=bash
# `tfhive gc` on one host, its second part: removes this machine's run
# directories (rundir.sh: ~/.tfhive/runs-KEY/RUN, each task's output,
# status, pid and FIFOs) of runs that have ended and whose files nobody
# touched for $tfhive_mins minutes. A run is running while one of its
# pid files names a live supervisor of that very run and task (/proc
# says so: tfhive_supervisor); such a run is never removed, however old
# its files. A directory that is not the user's own with mode 0700, or
# a symlink, is neither read nor removed (tfhive_rundir refuses it).
#
# Output: "@@tfhive-gcruns DIR", then a line per run directory, "R RUN"
# (ended, old: removed), "U RUN" (running), "N RUN" (ended, touched
# within the keep time), "X RUN" (refused: not a directory of the
# user's own), then "@@tfhive-du" and du -sk's lines for the R, U and N
# ones, taken before anything is removed. Nothing is removed when
# $tfhive_dry is 1.
#
# Parameters, set by tfhive ahead of this text:
#   tfhive_mins  keep ended runs whose files changed within this many minutes
#   tfhive_dry   1: remove nothing, only say what would go
: "${tfhive_mins?}" "${tfhive_dry?}"
tfhive_rd='' tfhive_runs='' # set by tfhive_rundir, tfhive_runsdir (rundir.sh)
tfhive_alive=0 # set by tfhive_supervisor (rundir.sh)
tfhive_runsdir
printf '@@tfhive-gcruns %s\n' "$tfhive_runs"
[ -e "$tfhive_runs" ] || [ -L "$tfhive_runs" ] || exit 0

# tfhive_running RUN: one of the run's supervisors here is alive.
tfhive_running() {
	local p t
	for p in "$tfhive_rd"/*.pid; do
		[ -f "$p" ] || continue
		t=${p##*/}
		t=${t%.pid}
		tfhive_supervisor "$p" "$1" "${t%-*}:${t##*-}"
		[ "$tfhive_alive" = 0 ] || return 0
	done
	return 1
}

tfhive_gone=() tfhive_listed=()
for tfhive_n in "$tfhive_runs"/*; do
	tfhive_n=${tfhive_n##*/}
	[ "$tfhive_n" != '*' ] || continue
	if ! tfhive_rundir "$tfhive_n" 0; then
		printf 'X %s\n' "$tfhive_n"
		continue
	fi
	if tfhive_running "$tfhive_n"; then
		tfhive_k=U
	elif [ -n "$(find "$tfhive_rd" -mmin -"$tfhive_mins" -print -quit 2>/dev/null)" ]; then
		tfhive_k=N
	else
		tfhive_k=R
		tfhive_gone+=("$tfhive_n")
	fi
	printf '%s %s\n' "$tfhive_k" "$tfhive_n"
	tfhive_listed+=("$tfhive_n")
done
echo @@tfhive-du
[ "${#tfhive_listed[@]}" = 0 ] || (cd "$tfhive_runs" && du -sk -- "${tfhive_listed[@]}") 2>/dev/null
[ "$tfhive_dry" = 1 ] && exit 0
for tfhive_n in "${tfhive_gone[@]}"; do
	# Looked at again just before: a run may have started under that
	# name since (its multiplexer emptied the directory and began anew).
	tfhive_rundir "$tfhive_n" 0 || continue
	tfhive_running "$tfhive_n" && continue
	[ -z "$(find "$tfhive_rd" -mmin -"$tfhive_mins" -print -quit 2>/dev/null)" ] || continue
	rm -rf -- "$tfhive_rd" || { echo "tfhive: cannot remove $tfhive_rd" >&2; exit 1; }
done
