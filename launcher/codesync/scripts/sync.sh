# shellcheck shell=sh
# Receives a --sync tree on stdin, a tar archive, into the cache
# (cache.sh) as code/HASH. Nothing is written anywhere else, nor through
# a path someone else could have prepared: the cache's directories are
# the user's own and nobody else may write to them (made mode 0700 when
# missing, refused otherwise). The archive is extracted into a new
# directory next to its destination and renamed into place only once
# all of it has arrived: the archive ends with a member "done" holding
# the hash, which tfhive writes only after what it sent hashed to that
# name. A tree already there (another run sent it meanwhile) is kept
# and the archive is not read. tar neither restores owners (-o) nor
# times (-m); modes are the archive's, 0755 and 0644, under umask 077.
#
# Its last output line is "@@tfhive-sync sent" or "@@tfhive-sync
# present"; a failure says why on stderr and exits non-zero.
#
# It travels as one line, after cache.sh, on the command line: stdin is
# the archive.
#
# Parameters, set by tfhive ahead of this text:
#   hash  the tree's content hash (hex): its directory's name
: "${hash?}" "${b?}" "${c?}";
command -v tar >/dev/null 2>&1 || { echo 'tfhive: tar not found on this host' >&2; exit 127; };
umask 077;
[ -e "$b" ] || mkdir -p "$b" 2>/dev/null;
safe "$b" || fail "$b is not a directory of yours that only you may write to";
for d in "$b/tfhive" "$c"; do
  [ -e "$d" ] || [ -L "$d" ] || mkdir "$d" 2>/dev/null;
  { [ ! -L "$d" ] && safe "$d"; } || fail "$d is not a directory of yours that only you may write to (a symlink, or another user's)";
done;
if [ -d "$c/$hash" ] && [ ! -L "$c/$hash" ]; then
  touch -c "$c/$hash"; echo '@@tfhive-sync present'; exit 0;
fi;
t=$(mktemp -d "$c/.tmp.XXXXXXXX") || fail "cannot create a directory in $c";
tar -x -m -o -f - -C "$t" || { rm -rf "$t"; fail 'the archive did not arrive whole'; };
m=; if [ -f "$t/done" ]; then read -r m <"$t/done"; fi;
[ "$m" = "$hash" ] || { rm -rf "$t"; fail 'the archive did not arrive whole (no end marker)'; };
mv -T "$t/c" "$c/$hash" 2>/dev/null || [ -d "$c/$hash" ] || { rm -rf "$t"; fail "cannot move the tree to $c/$hash"; };
# Its time is its last use for gc: the arrival, not the start of a
# transfer that may have taken minutes.
touch -c "$c/$hash";
rm -rf "$t";
echo '@@tfhive-sync sent';
