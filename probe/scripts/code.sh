# shellcheck shell=sh
# The probe, middle part: whether the tree `--sync` is about to send is on
# this host already, and where it is, or would be. The tree is asked
# about by its content hash, $code (none: the section stays empty).
# launcher/codesync's sync.sh puts trees in
# ${XDG_CACHE_HOME:-~/.cache}/tfhive/code/HASH, creating tfhive/ and
# code/ mode 0700, and renames a tree into place only once all of it has
# arrived. So a tree counts as present only as a real directory (not a
# symlink) of the user's own, in directories of the user's own that are
# not symlinks: nobody else can have put it there. Its time is touched,
# which `tfhive gc` reads as its last use.
#
# It travels as one line, between probe.sh and claims.sh: every line ends
# where a newline could be a space, and comments stand on lines of their
# own.
#
# Parameters, set by tfhive ahead of this text:
#   code  the tree's content hash (hex), or empty
: "${code?}";
echo @@tfhive-code;
if [ -n "$code" ]; then
  b=${XDG_CACHE_HOME:-$HOME/.cache};
  case $b in /*) ;; *) b=$HOME/.cache ;; esac;
  c=$b/tfhive/code; s=missing;
  if [ -d "$c/$code" ] && [ ! -L "$c/$code" ] && [ -O "$c/$code" ] && [ ! -L "$c" ] && [ -O "$c" ] && [ ! -L "$b/tfhive" ] && [ -O "$b/tfhive" ]; then
    touch -c "$c/$code" 2>/dev/null; s=present;
  fi;
  echo "$s $c/$code";
fi;
