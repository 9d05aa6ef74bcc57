# shellcheck shell=bash
# `tfhive tensorboard` on the host that holds a run's model_dir: a real
# TensorBoard, bound to 127.0.0.1 on a port chosen here (tensorboard has
# no --port 0), for as long as tfhive's session lasts. Every user of the
# host can reach 127.0.0.1, so TensorBoard serves under a secret path
# (--path_prefix /SECRET; anything else is 404), given in a flagfile of
# a 0700 dir rather than on its command line, which others can read. It goes where a
# task goes (the workdir, after the setup snippet, with the hosts file's
# environment), so that the tensorboard on a task's PATH is the one run.
# It says, one line each on stdout:
#   @@tfhive-tensorboard port=PORT pid=PID   TensorBoard listens on PORT
#   @@tfhive-tensorboard error WHY           it could not be started, or
#                                            another process holds PORT
# The port is free when chosen, and only TensorBoard's a moment later:
# a colleague who binds it first would be sent the secret path (tfhive's
# first request) and your browser. So PORT is said only once the socket
# listening on 127.0.0.1:PORT (/proc/net/tcp, its inode) is one of the
# descriptors of TensorBoard's own process group (/proc/PID/fd); one
# that is not is an error, and TensorBoard is stopped.
# TensorBoard's own lines go to stderr. This script was read from stdin
# behind its length, and stdin stays tfhive's: when it ends (tfhive
# closed the session, or its connection dropped), TensorBoard's process
# group is stopped, TERM then KILL, so that nothing is left on the host.
#
# Parameters, set by tfhive ahead of this text, with the hosts file's
# environment, exported:
#   tfhive_workdir     as for a task (task.sh): a leading ~ is the home
#   tfhive_setup       the setup snippet, or none
#   tfhive_setup_line  its first line, to name it when it fails
#   tfhive_spec        tensorboard's --logdir_spec: NAME:DIR,NAME:DIR
#   tfhive_secret      the path prefix's secret: [0-9a-f]+
: "${tfhive_workdir?}" "${tfhive_setup?}" "${tfhive_setup_line?}" "${tfhive_spec?}" "${tfhive_secret?}"
tfhive_say() { printf '@@tfhive-tensorboard %s\n' "$*"; }
if [ -n "$tfhive_workdir" ]; then
	case $tfhive_workdir in
	\~) tfhive_d=$HOME ;;
	\~/*) tfhive_d=$HOME/${tfhive_workdir#\~/} ;;
	*) tfhive_d=$tfhive_workdir ;;
	esac
	cd "$tfhive_d" 2>/dev/null || { tfhive_say "error cannot cd to $tfhive_workdir"; exit 0; }
fi
if [ -n "$tfhive_setup" ]; then
	eval "$tfhive_setup" </dev/null >&2 || { tfhive_say "error setup failed: $tfhive_setup_line"; exit 0; }
fi
command -v tensorboard >/dev/null 2>&1 || { tfhive_say "error no tensorboard on the PATH after the host's setup (pip install tensorboard where its tasks find it)"; exit 0; }
tfhive_python=$(command -v python3 2>/dev/null || command -v python 2>/dev/null)
[ -n "$tfhive_python" ] || { tfhive_say "error no python3 to choose a free port with"; exit 0; }
# A free port of 127.0.0.1, the kernel's choice; TensorBoard takes it a
# moment later (another process taking it first makes TensorBoard fail,
# and says so).
tfhive_port=$("$tfhive_python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') || { tfhive_say "error could not choose a port"; exit 0; }
# The secret in a file only the user can read (mktemp -d makes it 0700;
# printf is the shell's own, never a process whose argv shows it);
# removed once TensorBoard has ended.
tfhive_flags=$(mktemp -d 2>/dev/null) || { tfhive_say "error could not make a temporary dir"; exit 0; }
(umask 077 && printf -- '--path_prefix=/%s\n' "$tfhive_secret" >"$tfhive_flags/flags") || { rm -rf "$tfhive_flags"; tfhive_say "error could not write TensorBoard's flagfile"; exit 0; }
# Its own process group (setsid), which the stop below ends whole: the
# data server TensorBoard may start goes with it.
setsid tensorboard --flagfile "$tfhive_flags/flags" --logdir_spec "$tfhive_spec" --host 127.0.0.1 --port "$tfhive_port" </dev/null >&2 &
tfhive_pid=$!
# Until stdin ends; then TERM, and KILL after 5 s if it is still there.
# stdin through descriptor 3: an asynchronous list's own stdin is
# /dev/null. Its output is nobody's, so that the session ends with
# TensorBoard, not with it.
exec 3<&0
(
	cat <&3 >/dev/null
	kill -TERM -- "-$tfhive_pid" 2>/dev/null || kill -TERM "$tfhive_pid" 2>/dev/null
	tfhive_n=0
	while kill -0 "$tfhive_pid" 2>/dev/null && [ "$tfhive_n" -lt 50 ]; do
		sleep 0.1
		tfhive_n=$((tfhive_n + 1))
	done
	kill -KILL -- "-$tfhive_pid" 2>/dev/null
) >/dev/null 2>&1 &
exec 3<&-
# tfhive_listener: the inode and uid of the socket listening on
# 127.0.0.1:PORT, if any ("sl local remote st ... uid timeout inode").
tfhive_hex=$(printf '%04X' "$tfhive_port")
tfhive_listener() {
	local _sl l _r st _q _t _x u _o ino _rest
	while read -r _sl l _r st _q _t _x u _o ino _rest; do
		if [ "$l" = "0100007F:$tfhive_hex" ] && [ "$st" = 0A ]; then
			printf '%s %s\n' "$ino" "$u"
			return 0
		fi
	done </proc/net/tcp
	return 1
}
# tfhive_ours INODE: a process of TensorBoard's group (its pgid is its
# pid: setsid) holds socket INODE.
tfhive_ours() {
	local p s f i=$1
	for p in /proc/[0-9]*; do
		s=
		read -r s 2>/dev/null <"$p/stat" || continue
		s=${s##*) }
		# shellcheck disable=SC2086 # the fields, split on purpose
		set -- $s
		[ "${3-}" = "$tfhive_pid" ] || continue
		for f in "$p"/fd/*; do
			[ "$(readlink "$f" 2>/dev/null)" != "socket:[$i]" ] || return 0
		done
	done 2>/dev/null
	return 1
}
tfhive_l=
while :; do
	if tfhive_l=$(tfhive_listener); then
		read -r tfhive_ino tfhive_uid <<<"$tfhive_l"
		# A socket's descriptor is there from its making, before it
		# listens: one that is not TensorBoard's now never will be.
		if tfhive_ours "$tfhive_ino"; then
			break
		fi
		tfhive_say "error port $tfhive_port of 127.0.0.1 is held by another process (uid $tfhive_uid), not the TensorBoard started: not served (run tfhive tensorboard again)"
		kill -TERM -- "-$tfhive_pid" 2>/dev/null || kill -TERM "$tfhive_pid" 2>/dev/null
		rm -rf "$tfhive_flags"
		exit 0
	fi
	if ! kill -0 "$tfhive_pid" 2>/dev/null; then
		wait "$tfhive_pid"
		tfhive_rc=$?
		rm -rf "$tfhive_flags"
		tfhive_say "error TensorBoard ended (exit $tfhive_rc) before it listened on 127.0.0.1:$tfhive_port"
		exit 0
	fi
	sleep 0.2
done
tfhive_say "port=$tfhive_port pid=$tfhive_pid"
wait "$tfhive_pid"
tfhive_rc=$?
rm -rf "$tfhive_flags"
tfhive_say "exit $tfhive_rc"
