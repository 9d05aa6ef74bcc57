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
# never listed, each month's name is looked up. Every read is dd's, with
# O_NOFOLLOW and O_NONBLOCK: a name swapped for a link or a FIFO after it
# was checked is neither followed nor waited on.
#
# Output, every line of tfhive's own led by "@@tfhive-usage SECRET"
# (SECRET a word of this call's, on no command line and in no file, so
# no ledger can pass for those lines): "@@tfhive-usage SECRET now NOW"
# (this host's clock, epoch seconds), then for each ledger
# "@@tfhive-usage SECRET refused NAME WHY", or "@@tfhive-usage SECRET
# ledger UID MTIME SIZE NAME" and its lines, each led by "L " (a line
# without its newline gets one: no ledger runs into the next), then
# "@@tfhive-usage SECRET users" and getent's passwd lines for their
# uids, each led by "U ".
#
# The directory is anyone's to fill (/tmp), so every bound is a user's
# own, and what one user's files spend is theirs alone: the names of
# each owner (find's %U) past $tfhive_names are not looked at
# ("@@tfhive-usage SECRET crowded UID"), and a uid's ledgers give at most
# $tfhive_user bytes of lines ("@@tfhive-usage SECRET short UID": the rest
# of theirs is not read). Bounds no user can reach alone keep the answer
# under what tfhive takes from a host: more than $tfhive_owners owners
# ("@@tfhive-usage SECRET overflow owners") or $tfhive_host bytes of
# lines in all ("@@tfhive-usage SECRET overflow bytes"), and the rest is
# not read; each is a warning naming the host, never its answer dropped.
#
# Parameters, set by tfhive ahead of this text:
#   tfhive_from    the first month read, YYYY-MM
#   tfhive_secret  this call's word
#   tfhive_names, tfhive_user, tfhive_owners, tfhive_host: the bounds
: "${tfhive_from?}" "${tfhive_secret?}" "${tfhive_names?}" "${tfhive_user?}" "${tfhive_owners?}" "${tfhive_host?}"
export TZ=UTC0
exec 3>&1
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
# What is left to spend: in all, and each uid's (tfhive_spent).
tfhive_left=$tfhive_host tfhive_full=''
declare -A tfhive_uids=() tfhive_spent=()
# tfhive_why UID MODE SIZE TYPE (%f, hex) sets why to what is wrong
# with a ledger of uid u's, or to nothing.
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
# tfhive_refuse NAME WHY says NAME is not believed; the line is spent
# from what is left in all.
tfhive_refuse() {
	printf '%s refused %s %s\n' "$tfhive_at" "$1" "$2"
	tfhive_left=$((tfhive_left - ${#1} - ${#2} - 64))
}
# tfhive_ledger NAME FILE MTIME SIZE puts uid u's ledger NAME (at FILE
# from here) on stdout, its lines each led by "L ", at most 1 MiB of it
# and no more than u and the host have left; it fails once u's is spent
# (said once), and once the host's is (said, tfhive_full set: nothing
# more is read).
tfhive_ledger() {
	local room host=0 r n cut
	: "${tfhive_spent[$u]:=0}"
	[ "${tfhive_spent[$u]}" -ge 0 ] || return 1
	room=$((tfhive_user - tfhive_spent[$u]))
	[ "$room" -lt "$tfhive_left" ] || room=$tfhive_left host=1
	printf '%s ledger %s %s %s %s\n' "$tfhive_at" "$u" "$3" "$4" "$1"
	tfhive_uids[$u]=1
	r=$(dd if="$2" iflag=nofollow,nonblock bs=65536 count=16 status=none 2>/dev/null |
		LC_ALL=C awk -v room="$room" '{ n += length($0) + 3; if (n > room) { n -= length($0) + 3; cut = 1; exit } print "L " $0 } END { print n + 0, cut + 0 > "/dev/stderr" }' 2>&1 >&3)
	read -r n cut <<<"$r"
	tfhive_spent[$u]=$((tfhive_spent[$u] + ${n:-0})) tfhive_left=$((tfhive_left - ${n:-0} - 128))
	[ "${cut:-0}" = 1 ] || return 0
	if [ "$host" = 1 ]; then
		printf '%s overflow bytes\n' "$tfhive_at"
		tfhive_full=1
	else
		printf '%s short %s\n' "$tfhive_at" "$u"
		tfhive_spent[$u]=-1
	fi
	return 1
}
# tfhive_dir NAME reads the directory of uid u's ledgers.
tfhive_dir() {
	local uid mode n f size mtime why=''
	if ! cd -P -- "$1" 2>/dev/null; then
		tfhive_refuse "$1" "cannot be entered"
		return
	fi
	read -r uid mode <<<"$(stat -c '%u %a' . 2>/dev/null)"
	if [ "$uid" != "$u" ]; then
		why="owned by uid $uid, not $u"
	elif (((8#${mode:-777} & 8#022) != 0)); then
		why="others may write it (mode $mode)"
	fi
	if [ -n "$why" ]; then
		tfhive_refuse "$1" "$why"
	else
		while read -r n uid mode f size mtime; do
			tfhive_why "$uid" "$mode" "$size" "$f"
			if [ -n "$why" ]; then
				tfhive_refuse "$1/$n" "$why"
			else
				tfhive_ledger "$1/$n" "$n" "$mtime" "$size" || break
			fi
			[ -z "$tfhive_full" ] || break
		done < <(stat -c '%n %u %a %f %s %Y' -- "${tfhive_months[@]}" 2>/dev/null)
	fi
	cd -P -- "$tfhive_top" || exit 0
}
# One find lists the directory; awk keeps, of each owner, the first
# tfhive_names names in the window, and at most tfhive_owners owners.
while read -r k uid mode size mtime type name; do
	if [ "$tfhive_left" -le 0 ] && [ -z "$tfhive_full" ]; then
		printf '%s overflow bytes\n' "$tfhive_at"
		tfhive_full=1
	fi
	[ -z "$tfhive_full" ] || break
	case $k in
	XV)
		printf '%s overflow owners\n' "$tfhive_at"
		break
		;;
	XU)
		printf '%s crowded %s\n' "$tfhive_at" "$uid"
		# Named, as the ledgers' users are.
		[[ ! $uid =~ ^[0-9]{1,10}$ ]] || tfhive_uids[$uid]=1
		continue
		;;
	F) ;;
	*) continue ;;
	esac
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
			tfhive_refuse "$name" "$why"
		else
			tfhive_dir "$name"
		fi
		continue
	fi
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
		tfhive_refuse "$name" "$why"
		continue
	fi
	tfhive_ledger "$name" "$name" "${mtime%.*}" "$size"
done < <(find . -mindepth 1 -maxdepth 1 -regextype posix-extended -regex '[.]/tfhive-usage[.][0-9]{1,10}([.][0-9]{4}-[0-9]{2}[.]csv)?' -printf 'F %U %m %s %T@ %y %f\n' 2>/dev/null |
	awk -v from="$tfhive_from" -v to="$tfhive_to" -v names="$tfhive_names" -v owners="$tfhive_owners" '
		$1 != "F" { next }
		$7 ~ /[.]csv$/ { m = substr($7, length($7) - 10, 7); if (m < from || m > to) next }
		!($2 in n) && ++seen > owners + 0 { print "XV"; exit }
		{ n[$2]++ }
		n[$2] <= names + 0 { print; next }
		n[$2] == names + 1 { print "XU " $2 }')
printf '%s users\n' "$tfhive_at"
[ "${#tfhive_uids[@]}" = 0 ] || getent passwd "${!tfhive_uids[@]}" 2>/dev/null | awk '{ print "U " $0 }'
exit 0
