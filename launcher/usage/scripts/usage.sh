# shellcheck shell=bash
# `tfhive usage` on one host: the usage ledgers that supervisors append
# to (launcher/supervisor/scripts/ledger.sh) in the claims directory,
# every user's, read by whoever asks: DIR/tfhive-usage.UID/YYYY-MM.csv,
# and the older tfhives' DIR/tfhive-usage.UID.YYYY-MM.csv. A ledger is
# believed only when it can be its user's alone: a regular file (not a
# link), owned by the uid its name gives, that nobody else may write, of
# at most 1 MiB, in a real directory of that uid's that nobody else may
# write; any other is named and refused, never read. A user's directory
# is entered (cd -P) and checked as it is entered: what is read from it
# is what nobody but its owner can have put there. Only months from
# $tfhive_from to this host's (UTC) are read: a user's directory is
# never listed, each month's name is looked up.
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
export TZ=UTC0
tfhive_at="@@tfhive-usage $tfhive_secret"
printf '%s now %(%s)T\n' "$tfhive_at" -1
printf -v tfhive_to '%(%Y-%m)T' -1
if ! cd -P -- "${TFHIVE_CLAIMS_DIR:-/tmp}" 2>/dev/null; then
	printf '%s users\n' "$tfhive_at"
	exit 0
fi
tfhive_top=$PWD
# The months' names, from tfhive_from to this one.
tfhive_months=()
y=${tfhive_from%-*} m=$((10#${tfhive_from#*-}))
while printf -v s '%04d-%02d' "$y" "$m" && [[ ! $s > $tfhive_to ]] && [ "${#tfhive_months[@]}" -lt 1200 ]; do
	tfhive_months+=("$s.csv")
	m=$((m + 1))
	[ "$m" -le 12 ] || m=1 y=$((y + 1))
done
# tfhive_why UID MODE SIZE TYPE (%f, hex) sets why to what is wrong
# with a ledger of uid's, or to nothing.
tfhive_why() {
	why=
	if [ $((16#$4 & 16#f000)) != $((16#8000)) ]; then
		why="not a regular file"
	elif [ "$1" != "$u" ]; then
		why="owned by uid $1, not $u"
	elif (((8#$2 & 8#022) != 0)); then
		why="others may write it (mode $2)"
	elif [ "$3" -gt 1048576 ]; then
		why="more than 1 MiB"
	fi
}
# tfhive_read FILE puts FILE's lines on stdout, each led by "L ", at most
# 1 MiB of it; dd opens it with O_NOFOLLOW and O_NONBLOCK: a name
# swapped for a link or a FIFO meanwhile is not followed, nor waited on.
tfhive_read() {
	dd if="$1" iflag=nofollow,nonblock bs=65536 count=16 status=none 2>/dev/null | awk '{ print "L " $0 }'
}
# tfhive_user NAME reads the directory of uid u's ledgers.
tfhive_user() {
	local uid mode n f size mtime
	why=
	if ! cd -P -- "$1" 2>/dev/null; then
		printf '%s refused %s %s\n' "$tfhive_at" "$1" "cannot be entered"
		return
	fi
	read -r uid mode <<<"$(stat -c '%u %a' . 2>/dev/null)"
	if [ "$uid" != "$u" ]; then
		why="owned by uid $uid, not $u"
	elif (((8#${mode:-777} & 8#022) != 0)); then
		why="others may write it (mode $mode)"
	fi
	if [ -n "$why" ]; then
		printf '%s refused %s %s\n' "$tfhive_at" "$1" "$why"
		cd -P -- "$tfhive_top" || exit 0
		return
	fi
	while read -r n uid mode f size mtime; do
		tfhive_why "$uid" "$mode" "$size" "$f"
		if [ -n "$why" ]; then
			printf '%s refused %s %s\n' "$tfhive_at" "$1/$n" "$why"
			continue
		fi
		printf '%s ledger %s %s %s %s\n' "$tfhive_at" "$u" "$mtime" "$size" "$1/$n"
		tfhive_read "$n"
		tfhive_uids[$u]=1
	done < <(stat -c '%n %u %a %f %s %Y' -- "${tfhive_months[@]}" 2>/dev/null)
	cd -P -- "$tfhive_top" || exit 0
}
declare -A tfhive_uids=()
while read -r k uid mode size mtime type name; do
	if [ "$k" = XV ]; then
		printf '%s overflow 1024\n' "$tfhive_at"
		break
	fi
	[ "$k" = F ] || continue
	u=${name#tfhive-usage.} u=${u%%.*}
	why=
	if [ "$name" = "tfhive-usage.$u" ]; then
		if [ "$type" != d ]; then
			why="not a directory"
		elif [ "$uid" != "$u" ]; then
			why="owned by uid $uid, not $u"
		elif (((8#$mode & 8#022) != 0)); then
			why="others may write it (mode $mode)"
		fi
		if [ -n "$why" ]; then
			printf '%s refused %s %s\n' "$tfhive_at" "$name" "$why"
		else
			tfhive_user "$name"
		fi
		continue
	fi
	m=${name%.csv} m=${m##*.}
	[[ $m > $tfhive_from || $m == "$tfhive_from" ]] || continue
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
	tfhive_read "$name"
	tfhive_uids[$u]=1
done < <(find . -mindepth 1 -maxdepth 1 -regextype posix-extended -regex '[.]/tfhive-usage[.][0-9]{1,10}([.][0-9]{4}-[0-9]{2}[.]csv)?' -printf 'F %U %m %s %T@ %y %f\n' 2>/dev/null | awk 'NR > 1024 { print "XV"; exit } { print }')
printf '%s users\n' "$tfhive_at"
[ "${#tfhive_uids[@]}" = 0 ] || getent passwd "${!tfhive_uids[@]}" 2>/dev/null | awk '{ print "U " $0 }'
exit 0
