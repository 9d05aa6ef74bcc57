package sshtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
)

// A test host lives no longer than the test process that made it, however
// that process ends: a test binary killed by go test's -timeout (SIGQUIT,
// then SIGKILL), by a person's kill -9 or by CI's job timeout runs no
// cleanup, and its hosts once stayed up for as long as nobody looked
// (TestCompletionBash's two hosts, unshare and sshd, 23 minutes after
// their test binary was killed). Two lines hold them:
//
//   - a parent-death signal (PR_SET_PDEATHSIG, SIGKILL) on every process
//     sshtest starts for a host: the sshd, or the unshare that a separate
//     host's namespaces hang from. unshare's --kill-child passes the
//     SIGKILL on to the namespace's PID 1, and the kernel kills every
//     process of a PID namespace whose PID 1 dies (a SIGKILL from the
//     parent namespace is the one signal PID 1 cannot ignore), so a
//     separate host's sessions, kept runs, CPU hogs, busy processes and a
//     colleague's programs entered with nsenter go with it. The kernel
//     sends the signal when the *thread* that forked the child exits, not
//     the process, and Go ends threads when a goroutine locked to one
//     returns: every such process is forked from one thread locked for
//     good (startTied), which exits only with the process.
//   - a reaper: a shell started once per test process, in a process group
//     of its own (a Ctrl-C to the test's group reaches it not), whose
//     stdin is a pipe only this process holds. When this process is gone,
//     however, the pipe reads end of file and the reaper kills what is
//     still registered in its directory (tie): process groups (a plain
//     host's sshd with its children, busy processes and CPU hogs, which
//     share this machine's process table), the processes a plain host's
//     sessions left behind (marked by the host's TFHIVE_FAKE_GPU in their
//     environment: a kept supervisor leaves its session's process group),
//     local users' processes (AddUser) and the users themselves, and a
//     small home's tmpfs. What stops normally is unregistered first, so a
//     test that ends well leaves the reaper nothing to do.
//
// Proxies are goroutines of the test process and end with it.

// spawnReq asks the locked thread to start cmd.
type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnOnce sync.Once
	spawnCh   chan spawnReq
)

// startTied starts cmd so that the kernel SIGKILLs it when this process
// ends.
func startTied(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnReq)
		go func() {
			// Never unlocked, never returning: the thread lives as long
			// as the process.
			runtime.LockOSThread()
			for r := range spawnCh {
				r.done <- r.cmd.Start()
			}
		}()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	r := spawnReq{cmd: cmd, done: make(chan error, 1)}
	spawnCh <- r
	return <-r.done
}

// reaperScript waits for end of file on stdin (the test process gone),
// then kills what the directory $1 still lists: one file per thing,
// named KIND-N, holding its argument. It ignores the signals a terminal
// or a go test timeout sends, which are meant for the test.
const reaperScript = `trap '' HUP INT TERM QUIT PIPE
dir=$1
cat >/dev/null
for f in "$dir"/group-*; do
	[ -f "$f" ] && kill -9 "-$(cat "$f")" 2>/dev/null
done
for f in "$dir"/marker-*; do
	[ -f "$f" ] || continue
	m=$(cat "$f")
	for e in /proc/[0-9]*/environ; do
		if grep -qzxF -- "$m" "$e" 2>/dev/null; then
			p=${e#/proc/}
			kill -9 "${p%/environ}" 2>/dev/null
		fi
	done
done
for f in "$dir"/user-*; do
	[ -f "$f" ] || continue
	u=$(cat "$f")
	setpriv --reuid="$u" --regid="$u" --clear-groups /bin/kill -9 -1 2>/dev/null
	userdel -f -r "$u" >/dev/null 2>&1
done
for f in "$dir"/mount-*; do
	[ -f "$f" ] && umount -l "$(cat "$f")" 2>/dev/null
done
rm -rf "$dir"
`

var (
	reaperOnce sync.Once
	reaperDir  string
	reaperErr  error
	// reaperPipe is the write end of the reaper's stdin, held (and so
	// kept from the garbage collector's finalizer) for the process's
	// life; it is close-on-exec, so no child holds it.
	reaperPipe *os.File
	tieSeq     atomic.Int64
)

// startReaper starts the process's reaper, once.
func startReaper() error {
	reaperOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sshtest-reaper-")
		if err != nil {
			reaperErr = err
			return
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			reaperErr = err
			return
		}
		cmd := exec.Command("/bin/sh", "-c", reaperScript, "sshtest-reaper", dir)
		cmd.Stdin = pr
		// Its own group: a Ctrl-C or a kill of the test's group leaves it
		// to do its work.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Env = append(os.Environ(), "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
		if err := cmd.Start(); err != nil {
			reaperErr = err
			pr.Close()
			pw.Close()
			return
		}
		pr.Close()
		// Reaped by nobody here once it exits; it outlives this process
		// in the case that matters.
		go cmd.Wait()
		reaperDir, reaperPipe = dir, pw
	})
	return reaperErr
}

// tie registers one thing for the reaper (kind: group, marker, user,
// mount) and returns what unregisters it, for when it has stopped
// normally.
func tie(kind, arg string) (untie func(), err error) {
	if err := startReaper(); err != nil {
		return func() {}, fmt.Errorf("sshtest: the reaper: %w", err)
	}
	name := kind + "-" + strconv.FormatInt(tieSeq.Add(1), 10)
	path := filepath.Join(reaperDir, name)
	tmp := filepath.Join(reaperDir, ".new-"+name) // matched by no KIND-* glob
	if err := os.WriteFile(tmp, []byte(arg), 0o600); err != nil {
		return func() {}, err
	}
	// Whole or not at all: the reaper may read it at any moment.
	if err := os.Rename(tmp, path); err != nil {
		return func() {}, err
	}
	return func() { os.Remove(path) }, nil
}

// tieGroup registers the process group pgid (a process started with
// Setpgid: its pid).
func tieGroup(pgid int) (func(), error) { return tie("group", strconv.Itoa(pgid)) }
