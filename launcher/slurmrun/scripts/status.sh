#!/bin/sh
# shellcheck disable=SC2154 # tfhive_* are set ahead of this text (shscript)

# status.sh, on the login node: every node of every partition (of
# tfhive_partition alone when set) with its state, GPUs (generic
# resources) and those in use, and CPUs (allocated/idle/other/total),
# one line each: "sinfo|NODE|PARTITION|STATE|GRES|GRES_USED|CPUS".
set -u
if ! command -v sinfo >/dev/null 2>&1; then
	echo "tfhive: error: no sinfo on $(hostname): is this a Slurm login node?" >&2
	exit 69
fi
set -- --noheader --Node --Format='NodeList:|,Partition:|,StateLong:|,Gres:|,GresUsed:|,CPUsState:'
[ -z "$tfhive_partition" ] || set -- "$@" --partition="$tfhive_partition"
sinfo "$@" | sed 's/^/sinfo|/'
