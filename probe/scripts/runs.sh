# shellcheck shell=sh
# The probe, last part, for `tfhive ps`, `top` and `status` only
# ($runs not 0): what the user's own kept run directories
# (~/.tfhive/runs-KEY/RUN, KEY naming
# this machine: see launcher/supervisor/scripts/rundir.sh and
# supervisor-run.sh) say of the runs whose claims the holders above
# carry; probe/runs.go reads it.
#
# One find, run only when such a run has a directory here, lists
# ~/.tfhive and each such run's directory, pruning (never entering) any
# that is not a directory of the user's own with mode 0700; symlinks are
# never followed. Of each task it lists the control FIFO, by device and
# inode (a session's feeder holds a lock on it while it lives: claims.sh
# listed /proc/locks), with whether a line was written into it within the
# last $runs seconds (a keeper sends one every keepalive interval), and
# the pid and status files, whose first line the shell reads itself (no
# program) once find has printed that their directory and its parents
# passed. Nothing outside those directories is read, and only the user
# (or root) can write in them. The end marker closes the probe's output:
# without it, the output was cut.
#
# Then, unless $use is 0 (status: its report has the GPUs' use), when
# some holder's label names a GPU (it is only a reason to ask, never
# taken as fact), the live utilisation of the host's GPUs: one
# nvidia-smi CSV query, bounded like the report (probe.sh's $t), behind
# its own marker; probe/runs.go keeps the rows of GPUs claimed.
#
# It travels as one line, after claims.sh, whose $h (the holders' ps
# lines) it reads: every line ends where a newline could be a space, and
# comments stand on lines of their own.
#
# Parameters, set by tfhive ahead of this text:
#   runs  0: look at nothing; else the keepalive window, in seconds
#   use   0: no live utilisation query; 1: one, as above
#   t     (probe.sh's) nvidia-smi's time limit, in seconds
# and claims.sh's $d (the claims dir) and $h (the holders' ps lines).
: "${runs?}" "${use?}" "${t?}";
echo @@tfhive-runs;
# This machine's runs: KEY is claims.sh's machine id when it is 32 hex
# digits (machine-id(5)), else "host-" and the hostname, then claims.sh's
# process table word, as rundir.sh's tfhive_runsdir says (its pattern
# built without a "!", csh's).
x='[0-9a-f]'; x=$x$x; x=$x$x; x=$x$x; x=$x$x; x=$x$x;
# shellcheck disable=SC2254,SC2154 # $x is the pattern; m, i: claims.sh's
case $m in $x) r=.tfhive/runs-$m-$i ;; *) r=.tfhive/runs-host-$(uname -n | tr -c 'A-Za-z0-9._-' _)-$i ;; esac;
if [ "$runs" != 0 ] && [ -n "$h" ] && cd "$HOME" 2>/dev/null && [ -d "$r" ] && [ ! -L .tfhive ] && [ ! -L "$r" ]; then
  set -f; set --; s=0;
  # The run id is the second word after the holder's marker (its label is
  # "tfhive-sup DIR RUN TASK CLAIMS"); each id once, only with a directory,
  # never one that could leave $r (probe/runs.go checks the ids
  # themselves). No "!" but before a space: csh would expand it.
  for w in $h; do
    case $s in
    0) if [ "$w" = tfhive-sup ]; then s=1; fi ;;
    1) s=2 ;;
    *) s=0;
      case $w in
      '' | .* | */*) ;;
      *) case " $* " in *" $r/$w "*) ;; *) if [ -d "$r/$w" ]; then set -- "$@" "$r/$w"; fi ;; esac ;;
      esac ;;
    esac;
  done;
  set +f;
  u=; while read -r k _ e _; do if [ "$k" = Uid: ]; then u=$e; break; fi; done </proc/self/status;
  if [ $# -gt 0 ] && [ -n "$u" ]; then
    # The host's clock, for how long a task's GPUs have been idle (its
    # NAME.idle: the stretch's start, idle-watch.sh).
    echo "u $u"; echo "n $(date +%s)"; o=;
    find .tfhive "$@" -maxdepth 1 \( -type d \( ! -uid "$u" -o ! -perm 700 \) -prune \) -o -type d -printf 'd %p\n' -o -type p -name '*.ctl' \( -newermt "$runs seconds ago" -printf 'p %p %D %i +\n' -o -printf 'p %p %D %i -\n' \) -o -type f \( -name '*.pid' -o -name '*.rc' -o -name '*.idle' \) -printf 'f %p\n' 2>/dev/null |
    while read -r k p x; do
      case $k in
      d) o="$o $p "; echo "d $p" ;;
      *) case $o in *" .tfhive "*" $r "*" ${p%/*} "*)
          if [ "$k" = p ]; then echo "p $p $x"; else v=; read -r v <"$p"; echo "f $p $v"; fi ;;
        esac ;;
      esac;
    done;
  fi;
fi;
echo @@tfhive-util;
if [ "$runs" != 0 ] && [ "$use" != 0 ]; then
  # A GPU claimed in this claims dir ($d): the label is "tfhive-sup DIR
  # RUN TASK CLAIMS" (another dir's holders share the kernel, not the GPUs).
  set -f; g=0; s=0;
  # shellcheck disable=SC2154 # d: claims.sh's
  for w in $h; do
    case $s in
    0) if [ "$w" = tfhive-sup ]; then s=1; fi ;;
    1) if [ "$w" = "$d" ]; then s=2; else s=0; fi ;;
    2 | 3) s=$((s + 1)) ;;
    *) s=0; case $w in gpu:* | *,gpu:*) g=1 ;; esac ;;
    esac;
  done;
  set +f;
  q='--query-gpu=index,uuid,utilization.gpu,memory.used';
  if [ "$g" = 0 ] || ! command -v nvidia-smi >/dev/null 2>&1; then :;
  elif command -v timeout >/dev/null 2>&1; then timeout -k 2 "$t" nvidia-smi "$q" --format=csv,noheader,nounits </dev/null 2>/dev/null | head -n 256;
  else nvidia-smi "$q" --format=csv,noheader,nounits </dev/null 2>/dev/null | head -n 256; fi;
fi;
echo @@tfhive-end;
