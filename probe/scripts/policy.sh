# shellcheck shell=sh
# The probe, after code.sh: the host's fair-sharing policy
# (/etc/tfhive/policy.yaml, or $TFHIVE_POLICY where the admin moved it),
# when there is one: its path, then its and its directory's owner, mode
# and type as stat sees them (probe/policy.go honours it only when root
# owns both and neither is writable by group or others), the user we log
# in as and their groups, the host's local weekday and time (reserved
# hours are the host's), the file's lines (each behind "|", so that no
# line of it can pass for one of our markers; at most 2000), and the
# host's groups (getent: per-group limits count their members' GPUs).
# Nothing runs on a host without a policy.
#
# It travels as one line, between code.sh and claims.sh: every line ends
# where a newline could be a space, and comments stand on lines of their
# own.
#
# Parameters, set by tfhive ahead of this text:
#   claims_only  (probe.sh's) 1: no policy either (`tfhive ps`, `kill`)
: "${claims_only?}";
echo @@tfhive-policy;
f=${TFHIVE_POLICY:-/etc/tfhive/policy.yaml};
if [ "$claims_only" != 1 ] && { [ -e "$f" ] || [ -L "$f" ]; }; then
  echo "p $f";
  stat -c 's %u %a %F' "$f" 2>/dev/null;
  x=${f%/*}; stat -c 'd %u %a %F' "${x:-/}" 2>/dev/null;
  echo "u $(id -un 2>/dev/null) $(id -Gn 2>/dev/null)";
  echo "t $(date '+%u %H %M')";
  if [ -f "$f" ] && [ ! -L "$f" ] && [ -r "$f" ]; then
    n=0;
    while [ "$n" -lt 2000 ] && { l=; IFS= read -r l || [ -n "$l" ]; }; do printf '|%s\n' "$l"; n=$((n + 1)); done <"$f";
  fi;
  getent group 2>/dev/null | head -n 4096 | sed 's/^/g /';
fi;
