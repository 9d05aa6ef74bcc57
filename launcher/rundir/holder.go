package rundir

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// TensorBoardLock is flock'ed by a detached `tfhive tensorboard`'s keeper
// for as long as it serves: the pid in TensorBoard (the state file) is
// only what a file says, and a keeper killed with SIGKILL leaves it behind
// for the pid to be reused; the lock's holder is the keeper.
const TensorBoardLock = "tensorboard.lock"

// ErrLockHeld is HoldFileLock's when another process holds the lock.
var ErrLockHeld = errors.New("held by another process")

// HoldFileLock takes an exclusive flock of dir/name (0600, never through
// a link) until release; held by another, it is ErrLockHeld.
func HoldFileLock(dir, name string) (release func(), err error) {
	f, err := openRunLock(filepath.Join(dir, name), os.O_CREATE|os.O_RDWR)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, ErrLockHeld
	}
	return func() { f.Close() }, nil
}

// LockHolder is the process that holds dir/name's exclusive flock, as
// /proc/locks names it: a process of this user's (its real uid, which
// nobody can forge), the file being this user's too, that has the very
// file open (a reused pid does not). pid is 0 when none does; known is
// false without /proc/locks (another system than Linux).
func LockHolder(dir, name string) (pid int, known bool) {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDONLY|unix.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		_, err := os.Stat("/proc/locks")
		return 0, err == nil
	}
	defer f.Close()
	fi, err := f.Stat()
	st, ok := fi.Sys().(*syscall.Stat_t)
	if err != nil || !ok || !fi.Mode().IsRegular() || int(st.Uid) != os.Geteuid() {
		return 0, true
	}
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0, false
	}
	for _, l := range parseProcLocks(data) {
		if !l.write || l.ino != st.Ino || l.pid <= 1 {
			continue
		}
		if uid, ok := realUID(l.pid); ok && uid == st.Uid && hasOpen(l.pid, fi) {
			return l.pid, true
		}
	}
	return 0, true
}
