# shellcheck shell=bash
# `tfhive usage` on one host: the usage ledgers that supervisors append
# to (launcher/supervisor/scripts/ledger.sh) in the claims directory,
# every user's, read by whoever asks. A ledger is believed only when it
# can be its user's alone: a regular file (not a link), owned by the uid
# its name gives, that nobody else may write, of at most 1 MiB; any
# other is named and refused, never read. Only months from
# $tfhive_from on are read.
#
# Output, every line of tfhive's own led by "@@tfhive-usage SECRET"
# (SECRET a word of this call's, on no command line and in no file, so
# no ledger can pass for those lines): "@@tfhive-usage SECRET now NOW"
# (this host's clock, epoch seconds), then for each ledger
# "@@tfhive-usage SECRET refused NAME WHY", or "@@tfhive-usage SECRET
# ledger UID MTIME SIZE NAME" and its lines, each led by "L " (a line
# without its newline gets one: no ledger runs into the next), then
# "@@tfhive-usage SECRET users" and getent's passwd lines for their
# uids, each led by "U ". The directory is anyone's to fill (/tmp): one
# find lists it, at most 1024 ledgers, past which "@@tfhive-usage SECRET
# overflow 1024" says the rest were not read.
#
# Parameters, set by tfhive ahead of this text:
#   tfhive_from    the first month read, YYYY-MM
#   tfhive_secret  this call's word
: "${tfhive_from?}" "${tfhive_secret?}"
tfhive_at="@@tfhive-usage $tfhive_secret"
d=${TFHIVE_CLAIMS_DIR:-/tmp}
printf '%s now %(%s)T\n' "$tfhive_at" -1
declare -A tfhive_uids=()
while read -r k uid mode size mtime type name; do
	if [ "$k" = XV ]; then
		printf '%s overflow 1024\n' "$tfhive_at"
		break
	fi
	[ "$k" = F ] || continue
	u=${name#tfhive-usage.} u=${u%%.*}
	m=${name%.csv} m=${m##*.}
	[[ $m > $tfhive_from || $m == "$tfhive_from" ]] || continue
	why=
	if [ "$type" != f ]; then
		why="not a regular file"
	elif [ "$uid" != "$u" ]; then
		why="owned by uid $uid, not $u"
	elif (((8#$mode & 8#022) != 0)); then
		why="others may write it (mode $mode)"
	elif [ "$size" -gt 1048576 ]; then
		why="more than 1 MiB"
	fi
	if [ -n "$why" ]; then
		printf '%s refused %s %s\n' "$tfhive_at" "$name" "$why"
		continue
	fi
	printf '%s ledger %s %s %s %s\n' "$tfhive_at" "$u" "${mtime%.*}" "$size" "$name"
	head -c 1048576 -- "$d/$name" 2>/dev/null | awk '{ print "L " $0 }'
	tfhive_uids[$u]=1
done < <(find -H "$d" -mindepth 1 -maxdepth 1 -regextype posix-extended -regex '.*/tfhive-usage[.][0-9]{1,10}[.][0-9]{4}-[0-9]{2}[.]csv' -printf 'F %U %m %s %T@ %y %f\n' 2>/dev/null | awk 'NR > 1024 { print "XV"; exit } { print }')
printf '%s users\n' "$tfhive_at"
[ "${#tfhive_uids[@]}" = 0 ] || getent passwd "${!tfhive_uids[@]}" 2>/dev/null | awk '{ print "U " $0 }'
exit 0
