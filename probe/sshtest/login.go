package sshtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// slowBashrc burns CPU, not time: a host whose CPUs are shared by many
// logins takes longer, as a real one does. It counts its own CPU from
// /proc (bash's read, no process started) and only in login shells,
// sshd's children: the tasks' own shells source ~/.bashrc too, but what
// is measured is the cost of a login.
const slowBashrc = `# sshtest LoginCPU: a login as slow as conda's init
read -r tfhive_c </proc/$PPID/comm
case $tfhive_c in
sshd*)
	while read -r -a tfhive_f </proc/$$/stat && ((tfhive_f[13] + tfhive_f[14] < %d)); do
		for ((tfhive_i = 0; tfhive_i < 2000; tfhive_i++)); do :; done
	done
	;;
esac
unset tfhive_c tfhive_f tfhive_i
`

func (h *Host) writeSlowLogin() error {
	if h.LoginCPU <= 0 {
		return nil
	}
	ticks := max(int(h.LoginCPU.Milliseconds()/10), 1) // USER_HZ is 100
	return os.WriteFile(filepath.Join(h.Home(), ".bashrc"), []byte(fmt.Sprintf(slowBashrc, ticks)), 0o644)
}

// Sessions counts the sessions sshd has started on this host (each runs
// the user's login shell), from its log.
func (h *Host) Sessions() int {
	data, _ := os.ReadFile(filepath.Join(h.Dir, "sshd.log"))
	return strings.Count(string(data), "Starting session: ")
}

// Connections counts the SSH connections sshd has accepted on this host
// (each a handshake and a login), from its log.
func (h *Host) Connections() int {
	data, _ := os.ReadFile(filepath.Join(h.Dir, "sshd.log"))
	return strings.Count(string(data), "Accepted publickey for ")
}
