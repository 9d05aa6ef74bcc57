# shellcheck shell=bash
# tfhive_pipe FD opens descriptor FD (a number) on a pipe this shell holds
# both ends of, opened again read-write through /dev/fd: reading it never
# blocks on EOF, read -t 0 says whether a word is there, and a read with a
# timeout on it, when nobody writes, is a sleep without a process
# (supervisor-run.sh's descriptors 10 and 12, preempt-watch.sh's 9). The
# pipe is a here-string's, which bash 5.1 and later make without a
# process (its newline is read back out); where bash gives a file
# instead, a process substitution's, as before (a fork).
tfhive_pipe() {
	eval "exec $1<<<''"
	if [ -p "/dev/fd/$1" ]; then
		eval "exec $1<>/dev/fd/$1"
		read -r -u "$1" _
	else
		eval "exec $1<> <(:)"
	fi
}
