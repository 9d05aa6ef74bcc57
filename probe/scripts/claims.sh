# shellcheck shell=sh
# The probe, after code.sh: the claims (probe/claims.go parses them). It lists
# the lock files (device, inode, owner, mode, name) and the ones tfhive
# could not open, then every flock held on the host with its holder's
# pid, then those holders as ps sees them: real uid and command line.
# Holders are read from /proc/locks, never by trying a lock (a probe that
# tried them would make a concurrent run's claim fail for nothing). The
# machine id goes first: two names of one machine share it. The holders'
# lines stay in $h for runs.sh, which follows and closes the output.
#
# It travels as one line, after probe.sh and code.sh: every line ends
# where a newline could be a space, and comments stand on lines of their
# own. The lock files' directory and names are probe/claim's format.
d=${TFHIVE_CLAIMS_DIR:-/tmp};
m=-; if [ -r /etc/machine-id ]; then read -r m </etc/machine-id; fi;
echo @@tfhive-claims "${m:--}" "$d";
set -- "$d"/tfhive-claim.*.lock;
if [ -e "$1" ] || [ -L "$1" ]; then
  stat -c 'F %d %i %U %f %n' "$@" 2>/dev/null;
  for f; do if [ -L "$f" ] || [ ! -r "$f" ]; then echo "U $f"; fi; done;
fi;
echo @@tfhive-locks;
l=$(awk '$2 == "FLOCK" && $5 > 0 { print $6, $5 }' /proc/locks 2>/dev/null);
printf '%s\n' "$l";
echo @@tfhive-holders;
# shellcheck disable=SC2086 # split on purpose: the lines' words are lock id, pid, lock id, pid...
set -- $l; p=; while [ $# -ge 2 ]; do p=$p${p:+,}$2; shift 2; done;
h=; if [ -n "$p" ]; then h=$(ps -ww -o pid= -o uid= -o user:32= -o etimes= -o args= -p "$p" 2>/dev/null); printf '%s\n' "$h"; fi;
