#!/usr/bin/env bash
# tfhive's benchmark harness: real sshd test hosts on loopback, each behind
# a proxy adding a round-trip time, tfhive against pdsh, parallel-ssh and
# plain ssh. Prints Markdown tables of medians and ratios (the performance
# guide, launcher/help/performance.md, comes from the full run). It fails only when
# something does not work (a contender fails, a line is lost), not on
# timing.
#
#   testdata/bench/run.sh            # the full run: 1, 8, 32, 64 sshd hosts, slow logins on 8 and 32,
#                                    # answering hosts 1 to 1024, RTT 50 ms, 5 runs each (~30 min)
#   testdata/bench/run.sh --smoke    # CI's quick check that the harness works: 4 hosts, 2 slow-login
#                                    # hosts, 8 answering hosts, 3 queued runs, a sweep of 12
#                                    # trials on 8 GPUs, no delay, 1 run
#   TFHIVE_BENCH_HOSTS=1,8 TFHIVE_BENCH_ONLY=probe testdata/bench/run.sh   # a part of it
#
# Needs: apt-get install openssh-server openssh-client pdsh pssh (nothing is
# installed here). Parameters (environment; the defaults are the full run):
#   TFHIVE_BENCH_HOSTS=1,8,32,64  TFHIVE_BENCH_RTT=50ms  TFHIVE_BENCH_REPS=5
#   TFHIVE_BENCH_STREAM_MB=200    TFHIVE_BENCH_TASKS_PER_HOST=8
#   TFHIVE_BENCH_SYNC_MB=100      (--sync of that much code to 8 hosts)
#   TFHIVE_BENCH_SLOW_HOSTS=8,32  TFHIVE_BENCH_SLOW_TASKS=1,8   (hosts whose ~/.bashrc costs 200 ms)
#   TFHIVE_BENCH_ANSWER_HOSTS=1,32,256,1024  TFHIVE_BENCH_ANSWER_PEERS=256   (answering hosts;
#                                 pdsh and parallel-ssh up to that many)
#   TFHIVE_BENCH_QUEUE_RUNS=8     (runs queued behind one another, the queue's handovers)
#   TFHIVE_BENCH_SWEEP_HOSTS=8  TFHIVE_BENCH_SWEEP_GPUS=8 (or 4)  TFHIVE_BENCH_SWEEP_TASK=2s
#   TFHIVE_BENCH_SWEEP_TRIALS=128 (2 a GPU: each GPU hands over; 64 trials on 64 GPUs would all
#                                 start at once; TFHIVE_BENCH_SWEEP_HOSTS=4 with TRIALS=64 is the
#                                 issue's 64 trials with a hand-over on every GPU)
#   TFHIVE_BENCH_ONLY=probe,launch,start,teardown,stream,footprint,sync,reconnect,detach,slowlogin,answering,queue,sweep
#   TFHIVE_BENCH_TFHIVE=BIN       measure that tfhive binary instead of this tree's
#                                 (before/after: go build -o /tmp/old . on the old commit)
#   TFHIVE_BENCH_FLEET=FILE       start the fleet and keep it up until FILE is
#                                 removed; FILE tells how to reach it (profiling)
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "${1-}" = --smoke ]; then
	export TFHIVE_BENCH_HOSTS=4 TFHIVE_BENCH_RTT=0 TFHIVE_BENCH_REPS=1 \
		TFHIVE_BENCH_STREAM_MB=5 TFHIVE_BENCH_TASKS_PER_HOST=2 TFHIVE_BENCH_SYNC_MB=5 \
		TFHIVE_BENCH_SLOW_HOSTS=2 TFHIVE_BENCH_SLOW_TASKS=1,2 TFHIVE_BENCH_ANSWER_HOSTS=1,8 \
		TFHIVE_BENCH_SWEEP_HOSTS=1 TFHIVE_BENCH_SWEEP_GPUS=8 \
		TFHIVE_BENCH_SWEEP_TRIALS=12 TFHIVE_BENCH_SWEEP_TASK=1s TFHIVE_BENCH_QUEUE_RUNS=3
	timeout=10m
	shift
elif [ $# -gt 0 ]; then
	echo "usage: $0 [--smoke]" >&2
	exit 2
else
	: "${TFHIVE_BENCH_HOSTS:=1,8,32,64}" "${TFHIVE_BENCH_RTT:=50ms}" "${TFHIVE_BENCH_REPS:=5}" \
		"${TFHIVE_BENCH_STREAM_MB:=200}" "${TFHIVE_BENCH_TASKS_PER_HOST:=8}" "${TFHIVE_BENCH_SYNC_MB:=100}"
	export TFHIVE_BENCH_HOSTS TFHIVE_BENCH_RTT TFHIVE_BENCH_REPS TFHIVE_BENCH_STREAM_MB TFHIVE_BENCH_TASKS_PER_HOST TFHIVE_BENCH_SYNC_MB
	timeout=60m
fi

for tool in /usr/sbin/sshd ssh pdsh parallel-ssh; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "$0: $tool not found: apt-get install -y openssh-server openssh-client pdsh pssh" >&2
		exit 1
	fi
done
# Many hosts mean many sshd, sessions and descriptors (a thousand answering
# hosts: five per host in this process, one in tfhive).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

export TFHIVE_BENCH=1
# TestBenchQueue (issue 14's queue handover) and TestBenchSweep (a sweep's hand-over and its
# time against the ideal) follow TestBench, each with its own fleet and table.
exec go test ./launcher/e2e -run '^TestBench(Queue|Sweep|TF)?$' -count=1 -v -timeout "$timeout"
