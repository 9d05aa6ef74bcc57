#!/bin/sh
# shellcheck disable=SC2154 # tfhive_* are set ahead of this text (shscript)

# queue.sh, on the login node: the user's pending jobs, in the order
# Slurm would start them (by priority), one line each:
# "squeue|JOBID|PARTITION|NODES|GRES|REASON|SUBMITTED|PRIORITY|NAME" (the
# name last: it may hold a |).
set -u
if ! command -v squeue >/dev/null 2>&1; then
	echo "tfhive: error: no squeue on $(hostname): is this a Slurm login node?" >&2
	exit 69
fi
set -- --noheader --me --states=PENDING --sort=-p,i --format='%i|%P|%D|%b|%r|%V|%Q|%j'
[ -z "$tfhive_partition" ] || set -- "$@" --partition="$tfhive_partition"
squeue "$@" | sed 's/^/squeue|/'
