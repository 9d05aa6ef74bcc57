# shellcheck shell=sh
# The probe, after code.sh: the claims (probe/claims.go parses them). It lists
# the lock files (device, inode, owner, type, name) and the ones tfhive
# could not open, then every flock held on the host with its holder's
# pid, then those holders as ps sees them: real uid and command line.
# Holders are read from /proc/locks, never by trying a lock (a probe that
# tried them would make a concurrent run's claim fail for nothing). The
# machine id goes first: two names of one machine share it. The holders'
# lines stay in $h for runs.sh, which follows and closes the output.
#
# The claims dir is anyone's to fill (/tmp): it is read by one find, never
# through an argument list (a glob of 30,000 long names passed to stat
# failed, and every GPU showed free), and only names that can be a claim
# (probe/claim's: gpu-UUID, gpu-N, port-N) are listed, at most $cmax
# of them: past that a line "X" ends the list and the host fails closed
# (probe/claims.go), its claims unknown.
#
# It travels as one line, after probe.sh and code.sh: every line ends
# where a newline could be a space, and comments stand on lines of their
# own. The lock files' directory and names are probe/claim's format.
#
# Parameters, set by tfhive ahead of this text:
#   cmax  the most lock files listed
#   rmax  the most reservation files listed
: "${cmax?}" "${rmax?}";
d=${TFHIVE_CLAIMS_DIR:-/tmp};
m=-; if [ -r /etc/machine-id ]; then read -r m </etc/machine-id; fi;
# Then the process table's own word, BOOT-PIDNS (rundir.sh's tfhive_runsdir:
# clones that report one machine id differ in it; two names of one
# machine share it).
b=; if [ -r /proc/sys/kernel/random/boot_id ]; then read -r b </proc/sys/kernel/random/boot_id; fi; n=$(readlink /proc/self/ns/pid 2>/dev/null); n=${n#pid:\[}; i=${b%%-*}-${n%]};
echo @@tfhive-claims "${m:--}" "$i" "$d";
# Then who we are here (R USER: whose reservations let us in) and the
# reservations (tfhive reserve: probe/reservations.go): each a name that
# says all, listed with its owner, type, link count and ctime from find's
# one lstat, never opened; at most $rmax, past which a line "XV" says the
# list was cut and the host fails closed, its reservations unknown. The
# pattern takes any name a file may have (NAME_MAX is 255): one it left
# out would be a reservation nobody sees.
# The same find lists the lock files (F, and U for one it found
# unusable), at most $cmax, past which a line "X" ends the section: one
# walk of the directory and one awk for both lists (each had its own, two
# processes more per probe). The awk keeps each list's first lines and
# says at the end which was cut ("XV", then "X": X is the section's last
# line, probe/script.go's cutOverflow); once both are cut it reads no
# more, and find ends on its closed pipe, as each list's did.
u=$(id -un 2>/dev/null); echo "R ${u:--}";
# A file find found unusable is looked at again, by opening it: only a
# symlink or an open refused for permission blocks its GPU or port; one
# that went since (its owner may unlink and make it again, as fast as she
# likes) must not.
find -H "$d" -mindepth 1 -maxdepth 1 -regextype posix-extended \( -regex '.*/tfhive-reservation[.][A-Za-z0-9.,_-]{1,255}' -printf 'V %u %y %n %C@ %f\n' \) -o \( -regex '.*/tfhive-claim[.](gpu|port)-[A-Za-z0-9-]{1,80}[.]lock' -printf 'F %D %i %u %y %f\n' \( -type l -o ! -readable \) -printf 'U %f\n' \) 2>/dev/null |
  awk -v r="$rmax" -v n="$cmax" 'xv && xf { exit } /^V / { if (++v > r) xv = 1; if (xv) next } /^[FU] / { if (/^F / && ++c > n) xf = 1; if (xf) next } { print } END { if (xv) print "XV"; if (xf) print "X" }' |
  while IFS= read -r x; do case $x in "U "*) f=$d/${x#U }; e=; if [ ! -L "$f" ]; then e=$( (LC_ALL=C; : <"$f") 2>&1 ); fi; case $e in *ermission*) printf '%s\n' "$x" ;; *) if [ -L "$f" ]; then printf '%s\n' "$x"; fi ;; esac ;; *) printf '%s\n' "$x" ;; esac; done;
echo @@tfhive-locks;
l=$(awk '$2 == "FLOCK" && $5 > 0 { print $6, $5 }' /proc/locks 2>/dev/null);
printf '%s\n' "$l";
echo @@tfhive-holders;
# shellcheck disable=SC2086 # split on purpose: the lines' words are lock id, pid, lock id, pid...
set -- $l; p=; while [ $# -ge 2 ]; do p=$p${p:+,}$2; shift 2; done;
h=; if [ -n "$p" ]; then h=$(ps -ww -o pid= -o uid= -o user:32= -o etimes= -o args= -p "$p" 2>/dev/null); printf '%s\n' "$h";
# Then the host's uptime (T SECONDS) and each holder's start (S PID TICKS:
# the 22nd field of /proc/PID/stat, in clock ticks since boot, after the
# command name in parentheses, which may hold anything but ends at the
# last paren), read by the shell itself: a waiting run's place is its
# ticket holder's age as the kernel knows it, to the tick, never what
# its label says (probe/claims.go).
u=; read -r u _ 2>/dev/null </proc/uptime; echo "T ${u:--}";
o=$IFS; IFS=,; set -f; for q in $p; do IFS=$o; s=; read -r s 2>/dev/null <"/proc/$q/stat"; s=${s##*) };
# shellcheck disable=SC2086 # the fields, split on purpose
set -- $s; if [ $# -ge 20 ]; then shift 19; echo "S $q $1"; fi; done; IFS=$o; set +f; fi;
