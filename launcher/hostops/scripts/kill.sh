# shellcheck shell=sh
# `tfhive kill` on one host: finds the run's supervisors among the claim
# holders' children, by the label in their own command line (probe/claim's
# format), signals them, and waits for them to go (no fixed sleep: it
# polls and ends as soon as they are gone). A process's existence is
# /proc's word: kill -0 fails for another user's process too. Its last
# output line is "stopped N"; exit 3: the tasks are still starting, or
# already gone.
#
# Parameters, set by tfhive ahead of this text:
#   run      the run id
#   holders  the run's claim holders (/proc/locks), comma-separated pids
#   tenths   the grace before the second SIGTERM, in tenths of a second
: "${run?}" "${holders?}" "${tenths?}"
# Descendants of the holders: further holders (flock), then the task's
# supervisor, whose own command line carries the run's label.
sups=$(ps -e -ww -o pid= -o ppid= -o args= 2>/dev/null | awk -v h="$holders" -v run="$run" '
	BEGIN { n = split(h, a, ","); for (i = 1; i <= n; i++) want[a[i]] = 1 }
	{
		pid[NR] = $1; ppid[NR] = $2; fl[NR] = ($3 ~ /flock$/); lab[NR] = 0
		for (k = 3; k + 2 <= NF; k++) if ($k == "tfhive-sup" && $(k + 2) == run) lab[NR] = 1
	}
	END {
		do { more = 0; for (i = 1; i <= NR; i++) if (fl[i] && want[ppid[i]] && !want[pid[i]]) { want[pid[i]] = 1; more = 1 } } while (more)
		for (i = 1; i <= NR; i++) if (!fl[i] && lab[i] && want[ppid[i]] && pid[i] > 1) print pid[i]
	}')
if [ -z "$sups" ]; then
	# Holders with no supervisor yet: the tasks are still starting; no
	# holder left: they ended meanwhile (the run's own tfhive may have
	# stopped them).
	for h in $(echo "$holders" | tr , ' '); do [ -d "/proc/$h" ] && exit 3; done
	echo "stopped 0"
	exit 0
fi
alive() { for p in $sups; do [ -d "/proc/$p" ] && return 0; done; return 1; }
rc=0
n=0
for p in $sups; do
	if kill -TERM "$p" 2>/dev/null; then n=$((n + 1))
	elif [ -d "/proc/$p" ]; then echo "tfhive: not allowed to signal pid $p: only its owner or root can" >&2; rc=1
	fi
done
[ "$rc" = 0 ] || { echo "stopped $n"; exit "$rc"; }
i=0
while alive && [ "$i" -lt "$tenths" ]; do sleep 0.1; i=$((i + 1)); done
if alive; then
	for p in $sups; do kill -TERM "$p" 2>/dev/null; done
	i=0
	while alive && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
fi
echo "stopped $n"
if alive; then echo "tfhive: $(echo "$sups" | wc -w) supervisors still running after SIGKILL to their tasks" >&2; exit 1; fi
