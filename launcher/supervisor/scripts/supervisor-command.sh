# shellcheck shell=sh
# Every task's remote command line, run by the user's login shell (any,
# csh included: hence one line) as `exec sh -c '…'`: bash reads the
# supervisor's first stage (supervisor-claim.sh). --norc: bash started
# under sshd would otherwise source ~/.bashrc again (the login shell
# already did, and the task's shell will), which on hosts with conda or
# pyenv costs hundreds of milliseconds per task. sh only to say that bash
# is missing: the first stage checks.
#
# Parameters, set by tfhive ahead of this text:
#   tfhive_read  read-stage.sh
: "${tfhive_read?}";
command -v bash >/dev/null 2>&1 && exec bash --norc -c "$tfhive_read";
exec sh -c "$tfhive_read";
