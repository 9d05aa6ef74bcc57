# shellcheck shell=sh
# `tfhive gc` on one host: removes the --sync trees of the cache
# (cache.sh) that are not in use and were not used lately, and the
# directories of transfers that ended without finishing. A tree is in use
# when a process carries it in its environment as TFHIVE_CODE_DIR (every
# task tfhive started with --sync, and its children) or runs in it (its
# working directory); it was used lately when its time (the probe touches
# it each time a run finds it) is less than $mins minutes old. A
# transfer's directory (.tmp.*) is left alone for a day: it may be under
# way.
#
# A home shared by many hosts (NFS) has one cache for all of them, and
# each host sees only its own processes: the cache holds a random name of
# its own, .id (made by the first gc, never changed), printed on a line
# "@@tfhive-home ID", so that tfhive can tell the hosts that share it. It
# then asks each of them what it sees ($dry 1), and has one of them
# remove only the trees that none uses ($only: their names).
#
# Output: "@@tfhive-gc DIR", "@@tfhive-home ID", then a line per directory, "R NAME"
# (removed), "T NAME" (an unfinished transfer's, removed), "U NAME" (in
# use), "N NAME" (used lately), "W NAME" (a transfer perhaps under way),
# then "@@tfhive-du" and du -sk's lines for them, taken before anything
# is removed. Nothing is removed when $dry is 1.
#
# It travels as one line, after cache.sh.
#
# Parameters, set by tfhive ahead of this text:
#   mins  keep trees used less than this many minutes ago (at least 1)
#   dry   1: remove nothing, only say what would go
#   only  "-": remove what this host sees as unused; else remove only
#         these names (space-separated), if this host sees them unused
: "${mins?}" "${dry?}" "${only?}" "${b?}" "${c?}";
echo "@@tfhive-gc $c";
[ -e "$c" ] || [ -L "$c" ] || exit 0;
{ [ ! -L "$c" ] && [ ! -L "$b/tfhive" ] && safe "$c"; } || fail "$c is not a directory of yours that only you may write to (a symlink, or another user's)";
cd "$c" || exit 1;
if [ ! -f .id ] || [ -L .id ]; then
  i=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n');
  printf '%s\n' "$i" >".id.$i" && { ln ".id.$i" .id 2>/dev/null; rm -f ".id.$i"; };
fi;
i=; if [ -f .id ] && [ ! -L .id ]; then read -r i <.id; fi;
echo "@@tfhive-home $i";
use=$( { cat /proc/[0-9]*/environ 2>/dev/null | tr '\000' '\n'; ls -l /proc/[0-9]*/cwd 2>/dev/null; } | awk -v p="$c/" '{ s = $0; sub(/^TFHIVE_CODE_DIR=/, "", s); sub(/^.* -> /, "", s); if (index(s, p) == 1) { s = substr(s, length(p) + 1); sub(/\/.*/, "", s); print s } }' | tr '\n' ' ');
old=$(find . -mindepth 1 -maxdepth 1 -type d -mmin +"$mins" | tr '\n' ' ');
stale=$(find . -mindepth 1 -maxdepth 1 -type d -name '.tmp.*' -mmin +1440 | tr '\n' ' ');
set --;
for n in * .tmp.*; do
  { [ -d "$n" ] && [ ! -L "$n" ]; } || continue;
  case $n in
  .tmp.*) case " $stale " in *" ./$n "*) k=T ;; *) k=W ;; esac ;;
  *[!0-9a-f]*) continue ;;
  *)
    [ ${#n} = 64 ] || continue;
    case " $use " in
    *" $n "*) k=U ;;
    *) case " $old " in *" ./$n "*) k=R ;; *) k=N ;; esac ;;
    esac ;;
  esac;
  echo "$k $n"; set -- "$@" "$n";
done;
echo @@tfhive-du;
[ $# = 0 ] || du -sk -- "$@";
[ "$dry" = 1 ] && exit 0;
for n in * .tmp.*; do
  case " $old $stale " in *" ./$n "*) ;; *) continue ;; esac;
  case $only in -) ;; *) case " $only " in *" $n "*) ;; *) continue ;; esac ;; esac;
  case " $use " in *" $n "*) continue ;; esac;
  # A run's probe may have found a tree since it was listed (du can take
  # a while): then it is kept, though listed as removed.
  case $n in .tmp.*) case " $stale " in *" ./$n "*) ;; *) continue ;; esac ;; *[!0-9a-f]*) continue ;; *) { [ ${#n} = 64 ] && [ -n "$(find "$n" -maxdepth 0 -mmin +"$mins")" ]; } || continue ;; esac;
  { [ -d "$n" ] && [ ! -L "$n" ]; } || continue;
  rm -rf -- "$n" || fail "cannot remove $c/$n";
done;
