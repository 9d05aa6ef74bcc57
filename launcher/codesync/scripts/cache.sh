# shellcheck shell=sh
# Where --sync trees live on a host, shared by sync.sh and gc.sh, which
# follow it: c is ${XDG_CACHE_HOME:-~/.cache}/tfhive/code (the probe's
# code.sh looks there too), and safe DIR says whether DIR is a directory
# of the user's own that nobody else may write to, so that nobody else
# can have put, or swap, anything in it. The cache base may be a symlink
# (only its owner could have made it, in their home); tfhive/ and code/,
# made mode 0700 by sync.sh, may not.
#
# It travels as one line, ahead of the script that uses it: every line
# ends where a newline could be a space, and comments stand on lines of
# their own.
fail() { printf 'tfhive: %s\n' "$1" >&2; exit 1; };
safe() {
  [ -d "$1" ] && [ -O "$1" ] || return 1;
  m=$(stat -L -c %A "$1") || return 1;
  case $m in ?????w???? | ????????w?) return 1 ;; esac;
};
b=${XDG_CACHE_HOME:-$HOME/.cache};
case $b in /*) ;; *) b=$HOME/.cache ;; esac;
# shellcheck disable=SC2034 # used by the script that follows
c=$b/tfhive/code;
