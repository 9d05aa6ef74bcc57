# shellcheck shell=bash
# GPU usage of a run's GPUs on one host, for tfhive run --sample: a marker
# line, then nvidia-smi's CSV for the GPUs asked, every tfhive_every
# seconds, in one session for the whole run. The wait between samples is
# a read of stdin: tfhive closes it when the run ends, and sshd when the
# connection goes, so the loop ends at once then and never outlives the
# run. A line read takes a sample at once.
#
# Parameters, set by tfhive ahead of this text:
#   tfhive_ids    the GPUs' indexes, comma-separated
#   tfhive_every  seconds between samples (a decimal fraction allowed)
: "${tfhive_ids?}" "${tfhive_every?}"
while :; do
	printf '%s\n' '@@tfhive-sample'
	nvidia-smi --query-gpu=index,uuid,utilization.gpu,memory.used --format=csv,noheader,nounits -i "$tfhive_ids" 2>&1 | head -n 256
	read -r -t "$tfhive_every" _
	tfhive_rc=$?
	# 0: a line; above 128: the time is up; anything else: EOF.
	[ "$tfhive_rc" -eq 0 ] || [ "$tfhive_rc" -gt 128 ] || exit 0
done
