# shellcheck shell=sh
# The probe, first part: nvidia-smi's report, the owners of the GPU
# processes, the listening TCP ports, the network interfaces' addresses;
# claims.sh follows it. Each section
# starts with its marker line (probe/script.go cuts the output there).
#
# It travels as one line (probe/script.go): every line ends where a
# newline could be a space, and comments stand on lines of their own.
#
# It starts as few processes as it can (each fork and exec is CPU on a
# host that may be busy training): nvidia-smi once, ps only when
# nvidia-smi lists processes, the pid list joined by the shell.
#
# Parameters, set by tfhive ahead of this text:
#   t            nvidia-smi's time limit on the host, in seconds
#   claims_only  1: no nvidia-smi or ip run (`tfhive ps` and `kill` need
#                neither)
: "${t?}" "${claims_only?}";
if [ "$claims_only" = 1 ]; then
  out=; rc=0;
elif command -v nvidia-smi >/dev/null 2>&1; then
  # coreutils timeout bounds a hung nvidia-smi on the host itself, so that
  # nothing is left running there.
  if command -v timeout >/dev/null 2>&1; then
    out=$(timeout -k 2 "$t" nvidia-smi -q -x </dev/null 2>&1); rc=$?;
  else
    out=$(nvidia-smi -q -x </dev/null 2>&1); rc=$?;
  fi;
else
  out=; rc=127;
fi;
echo @@tfhive-smi "$rc";
printf '%s\n' "$out";
# A GPU in MIG mode is used through its MIG devices, whose UUIDs only
# `nvidia-smi -L` prints (probe/mig.go): run it then, and only then.
case $out in *'<current_mig>Enabled</current_mig>'*)
  echo @@tfhive-mig;
  if command -v timeout >/dev/null 2>&1; then
    timeout -k 2 "$t" nvidia-smi -L </dev/null 2>&1;
  else
    nvidia-smi -L </dev/null 2>&1;
  fi;;
esac;
echo @@tfhive-ps;
case $out in *'<pid>'*)
  p=; q=;
  for x in $(printf '%s\n' "$out" | sed -n 's|.*<pid>\([0-9][0-9]*\)</pid>.*|\1|p'); do p=$p${p:+,}$x; q="$q $x"; done;
  if [ -n "$p" ]; then ps -o pid= -o user:32= -o args= -p "$p" 2>/dev/null; fi;
  # Each GPU process's ancestors ("a PID PARENT GRANDPARENT ..."), read
  # from /proc/PID/stat by the shell itself (no program): a process on a
  # claimed GPU with no claim holder among them is an intruder
  # (probe/intruders.go). The command name in stat may hold spaces and
  # parentheses: what follows its last ") " is "STATE PPID ...".
  for x in $q; do
    c=$x; l="a $x"; n=0;
    while [ "$n" -lt 64 ] && [ "$c" -gt 1 ] && read -r s 2>/dev/null <"/proc/$c/stat"; do
      s=${s##*) };
      # shellcheck disable=SC2086 # split on purpose: stat's fields
      set -- $s; c=$2; l="$l $c"; n=$((n + 1));
    done;
    echo "$l";
  done;;
esac;
echo @@tfhive-tcp;
# `ss -tn state listening` is a netlink query that walks only the
# listening sockets' table. `ss -tln` asks for closed sockets too, which
# makes the kernel walk its whole connection hash table, sized by memory,
# not by use: 3 of its 6 ms on a 24 GiB machine, more on a big GPU host.
# Reading /proc/net/tcp walks that table too: only the fallback for hosts
# without iproute2.
ss -tn state listening 2>/dev/null || awk 'FNR == 1 || $4 == "0A"' /proc/net/tcp /proc/net/tcp6 2>/dev/null;
echo @@tfhive-nic;
# Every address of every interface, for --nic: one `ip -o addr` (a netlink
# dump). Hosts without iproute2 get what /proc/net has, a line each, kept
# short whatever the size of the routing tables: the subnets routed
# without a gateway ("route IFACE DEST MASK", hex, from route), the local
# IPv4 addresses ("local ADDR", fib_trie's leaves of type host LOCAL; the
# kernel lists each twice) and if_inet6's IPv6 addresses ("inet6 LINE").
# if_inet6 is read last: a kernel without IPv6 lacks it.
if [ "$claims_only" != 1 ]; then
  ip -o addr show 2>/dev/null || awk '$1 == "|--" { a = $2 } FILENAME ~ /route$/ && $3 == "00000000" { print "route", $1, $2, $8 } FILENAME ~ /trie$/ && $1 == "/32" && $2 == "host" && $3 == "LOCAL" { print "local", a } FILENAME ~ /inet6$/ { print "inet6", $0 }' /proc/net/route /proc/net/fib_trie /proc/net/if_inet6 2>/dev/null;
fi;
