# shellcheck shell=sh
# Reads one stage of a supervisor's input and evaluates it: a line with
# the stage's length, then exactly that many bytes. dd with
# iflag=fullblock reads one block of that size and never ahead, unlike a
# shell reading a script, so that what follows on stdin (the next stage,
# heartbeats and stop requests) reaches the supervisor. A dd without
# fullblock (an old busybox) falls back to bs=1: exact too, but a read and
# a write per byte, milliseconds of CPU per task. EOF before the length
# line ends it quietly: a spare session that was not needed. Each dd is
# exec'd by its command substitution: one process, where "$(dd … || dd
# …)" cost bash a shell around the first dd (a fork per stage, three per
# task).
#
# It travels as one line: the argument of sh -c or bash -c.
IFS= read -r tfhive_n || exit 75;
tfhive_stage=$(exec dd bs="$tfhive_n" count=1 iflag=fullblock 2>/dev/null) || tfhive_stage=$(exec dd bs=1 count="$tfhive_n" 2>/dev/null);
eval "$tfhive_stage"
