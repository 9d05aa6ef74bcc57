# shellcheck shell=sh
# The probe, after code.sh: the host's fair-sharing policy
# (/etc/tfhive/policy.yaml, or $TFHIVE_POLICY where the admin moved it),
# when there is one: its path, then its and its directory's owner, mode
# and type as stat sees them (probe/policy.go honours it only when root
# owns both and neither is writable by group or others), the user we log
# in as and their groups, the host's local weekday and time (reserved
# hours are the host's), the file's size and lines (each behind "|", so
# that no line of it can pass for one of our markers), and the host's
# groups (getent: per-group limits count their members' GPUs).
#
# A policy is read whole or refused, never cut (a rule past a cut was
# dropped, and the host failed open): at most $pbytes bytes are read, and
# probe/policy.go refuses a file whose size stat gave is more.
# Nothing runs on a host without a policy.
#
# It travels as one line, between code.sh and claims.sh: every line ends
# where a newline could be a space, and comments stand on lines of their
# own.
#
# Parameters, set by tfhive ahead of this text:
#   claims_only  (probe.sh's) 1: no policy either (`tfhive ps`, `kill`)
#   pbytes       the most bytes of the file read
: "${claims_only?}" "${pbytes?}";
echo @@tfhive-policy;
f=${TFHIVE_POLICY:-/etc/tfhive/policy.yaml};
if [ "$claims_only" != 1 ] && { [ -e "$f" ] || [ -L "$f" ]; }; then
  echo "p $f";
  stat --printf 's %u %a %F\nz %s\n' "$f" 2>/dev/null;
  x=${f%/*}; stat -c 'd %u %a %F' "${x:-/}" 2>/dev/null;
  echo "u $(id -un 2>/dev/null) $(id -Gn 2>/dev/null)";
  echo "t $(date '+%u %H %M')";
  if [ -f "$f" ] && [ ! -L "$f" ] && [ -r "$f" ]; then
    head -c "$pbytes" -- "$f" 2>/dev/null | awk '{ print "|" $0 }';
  fi;
  getent group 2>/dev/null | head -n 4096 | sed 's/^/g /';
fi;
