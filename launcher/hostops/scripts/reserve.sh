# shellcheck shell=sh
# `tfhive reserve` and `unreserve` on one host: makes a reservation's
# file in the claims dir, or removes some. A reservation is an empty file
# whose name says all and whose owner says who (probe/reservations.go):
# it is made exclusively (set -C: O_EXCL, which never follows a symlink),
# mode 644 in the sticky claims dir, so that nobody but its owner and
# root may rename or remove it. A name is removed only when it is ours
# or we are root. Its owner is stat's without -L, from lstat: a link is
# its own owner's, never its target's (test -O follows a link, so a link
# planted by another user to a file of ours would pass it); rm removes a
# link itself, never what it points at.
#
# Parameters, set by tfhive ahead of this text:
#   tfhive_make    the file name to make, or empty
#   tfhive_remove  file names to remove, space-separated (names are
#                  [A-Za-z0-9.,_-] only)
# Exit 75: the name to make exists; 77: a name to remove is not ours.
: "${tfhive_make?}" "${tfhive_remove?}"
d=${TFHIVE_CLAIMS_DIR:-/tmp}
case $d in /*[[:space:]]* | [!/]*) echo "tfhive: claims dir $d is not an absolute path" >&2; exit 76 ;; esac
umask 022
rc=0
me=$(id -u)
for n in $tfhive_remove; do
	f=$d/$n
	if [ ! -e "$f" ] && [ ! -L "$f" ]; then
		continue
	fi
	if [ "$(stat -c %u -- "$f" 2>/dev/null)" != "$me" ] && [ "$me" != 0 ]; then
		echo "tfhive: $f is not ours: it is $(stat -c '%U (uid %u)' -- "$f" 2>/dev/null || echo "another user")'s" >&2
		rc=77
		continue
	fi
	rm -f -- "$f" || rc=1
done
if [ -n "$tfhive_make" ]; then
	if ! (set -C; : >"$d/$tfhive_make") 2>/dev/null; then
		echo "tfhive: cannot make $d/$tfhive_make" >&2
		exit 75
	fi
fi
exit "$rc"
