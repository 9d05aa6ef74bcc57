package rundir

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A run's lock is keeper.lock in its log dir, flock'ed exclusively by the
// run's tfhive for as long as it runs: `wait`, `attach`, `logs -f`,
// `runs`, `top`, `kill` and a sweep's resume learn from it whether the
// run goes on. flock needs only a descriptor, a read-only one too, so
// anyone who can open the file can hold its lock: another user would
// make an ended run look as if it went on (wait and attach hang for
// ever) or keep a sweep from resuming. So:
//
//   - the lock is made 0600: nobody else (root aside) can open it;
//   - a lock held on it counts only when a process of the file's owner
//     holds it: /proc/locks names the holder's pid, /proc/PID/status its
//     real uid, which nobody can forge, and, where the reader may look,
//     /proc/PID/fd shows that the process has this very file open (a pid
//     that was reused does not count). An older tfhive made the file
//     0644 and a descriptor opened then outlives any chmod: another
//     user's lock on it is passed over, never taken for the run's;
//   - the run's tfhive, finding the lock held by nobody but other users,
//     does not wait for them: it makes a fresh 0600 file, locks it and
//     renames it over keeper.lock. Readers open the name, so they see the
//     fresh file and its lock; her descriptor is left on a file that no
//     longer has a name.
//
// Without /proc/locks (another system than Linux) a lock held counts, as
// flock says: the 0600 mode is then what keeps other users out.

// runLockMode: only the run's user may open its lock.
const runLockMode = 0o600

// HoldLock takes keeper.lock in the run's log dir for as long as the
// run goes on; release lets go of it.
func HoldLock(dir string) (release func(), err error) {
	if err := Make(dir); err != nil {
		return nil, fmt.Errorf("log dir: %w", err)
	}
	path := filepath.Join(dir, Lock)
	f, err := openRunLock(path, os.O_CREATE|os.O_RDWR)
	if err != nil {
		return nil, fmt.Errorf("log dir: %w", err)
	}
	inUse := fmt.Errorf("log dir %s is in use by another run", dir)
	foreign := false
	for try := 0; ; try++ {
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err == nil {
			if fi, err := f.Stat(); err == nil && fi.Mode().Perm() != runLockMode {
				// An older tfhive's: closed to others from now on (what
				// they opened before is passed over, see above).
				f.Chmod(runLockMode)
			}
			return func() { f.Close() }, nil
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, inUse
		}
		write, read, known := ownerLocks(fi)
		if write || !known {
			f.Close()
			return nil, inUse
		}
		if !read {
			// Held by none of the user's: by other users only, unless
			// its holder let go between the flock and the look at
			// /proc/locks (a reader of the user's closing it): so only
			// when the next flock fails too.
			if foreign {
				break
			}
			foreign = true
			continue
		}
		foreign = false
		// A reader of the user's (GoesOn) lets go at once: the file
		// is not replaced under it, or another tfhive of the user's
		// could lock the old one once it has, and two would hold.
		if try == runLockTries {
			f.Close()
			return nil, inUse
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.Close()
	// Held by other users only: a fresh lock in its place. (Two tfhives
	// of the user's starting on one log dir at that very moment, as
	// another user lets go of hers, could still both hold one: the
	// name's check below narrows it to that.)
	tmp := path + "." + strconv.Itoa(os.Getpid())
	os.Remove(tmp) // a dead tfhive's of the same pid: the log dir is ours
	f, err = openRunLock(tmp, os.O_CREATE|os.O_EXCL|os.O_RDWR)
	if err != nil {
		return nil, fmt.Errorf("log dir: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, inUse
	}
	if err := os.Rename(tmp, path); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("log dir: %w", err)
	}
	// Another tfhive of the user's may have done the same meanwhile: the
	// file the name leads to is the one that counts.
	mine, err1 := f.Stat()
	now, err2 := os.Lstat(path)
	if err1 != nil || err2 != nil || !os.SameFile(mine, now) {
		f.Close()
		return nil, inUse
	}
	return func() { f.Close() }, nil
}

// runLockTries is how many times HoldLock tries again, 10 ms apart,
// a lock one of the user's readers holds.
const runLockTries = 20

// openRunLock opens a run's lock in its log dir, never through a link.
func openRunLock(path string, flag int) (*os.File, error) {
	return os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, runLockMode)
}

// GoesOn says whether the run's tfhive still holds its lock.
func GoesOn(dir string) bool {
	path := filepath.Join(dir, Lock)
	// O_NONBLOCK: a FIFO in its place must not hang tfhive runs.
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		// Another user's run, whose lock (0600) only she may open: the
		// kernel's list of locks says.
		if fi, lerr := os.Lstat(path); errors.Is(err, fs.ErrPermission) && lerr == nil && fi.Mode().IsRegular() {
			held, _, _ := ownerLocks(fi)
			return held
		}
		return false
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB) == nil {
		return false
	}
	fi, err := f.Stat()
	if err != nil {
		return true
	}
	held, _, known := ownerLocks(fi)
	return held || !known
}

// runEndPoll is how often a wait for a run's end looks whether the lock
// it waits on is still the run's (see above).
const runEndPoll = time.Second

// WaitEnd blocks until the run's tfhive lets go of its lock.
func WaitEnd(ctx context.Context, dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, Lock), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil // never started, or an older run: it is not running
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for unix.Flock(int(f.Fd()), unix.LOCK_SH) == unix.EINTR {
		}
	}()
	tick := time.NewTicker(runEndPoll)
	defer tick.Stop()
	for {
		select {
		case <-done:
			f.Close()
			return nil
		case <-ctx.Done():
			// The blocked flock ends with the process.
			return ctx.Err()
		case <-tick.C:
			// Another user's lock is not the run's, and the run's
			// tfhive may have put a fresh lock in its place: the lock
			// keeper.lock now names is asked. The blocked flock, on a
			// file nobody of the run's holds, ends with the process.
			if !GoesOn(dir) {
				return nil
			}
		}
	}
}

// ownerLocks says whether a process of the owner of the file fi
// describes holds an exclusive flock on it (write: the run's tfhive), or
// a shared one (read: a reader's), as /proc/locks says; other users'
// locks are passed over. known is false when the system has no
// /proc/locks.
func ownerLocks(fi fs.FileInfo) (write, read, known bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false, false, false
	}
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		return false, false, false
	}
	for _, l := range parseProcLocks(data) {
		// The inode only: /proc/locks' device is the filesystem's, which
		// is not stat's on btrfs subvolumes nor on overlayfs. The
		// holder's open files settle which file it is, below.
		if l.ino != st.Ino || l.pid <= 0 || (l.write && write) || (!l.write && read) {
			continue
		}
		if uid, ok := realUID(l.pid); !ok || uid != st.Uid || !hasOpen(l.pid, fi) {
			continue
		}
		if l.write {
			write = true
		} else {
			read = true
		}
	}
	return write, read, true
}

// procLock is a granted flock of /proc/locks.
type procLock struct {
	pid   int
	write bool
	ino   uint64
}

// parseProcLocks reads the granted FLOCK lines of /proc/locks:
//
//	1: FLOCK  ADVISORY  WRITE 2345 fe:00:9986044 0 EOF
//
// A waiter's line ("1: -> FLOCK …") holds nothing; POSIX, OFD locks and
// leases are not flock's.
func parseProcLocks(data []byte) []procLock {
	var out []procLock
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[1] != "FLOCK" {
			continue
		}
		pid, err := strconv.Atoi(f[4])
		if err != nil {
			continue
		}
		id := strings.Split(f[5], ":")
		if len(id) != 3 {
			continue
		}
		ino, err := strconv.ParseUint(id[2], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, procLock{pid: pid, write: f[3] == "WRITE", ino: ino})
	}
	return out
}

// realUID is the process's real uid, from /proc/PID/status.
func realUID(pid int) (uint32, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0, false
			}
			uid, err := strconv.ParseUint(f[0], 10, 32)
			return uint32(uid), err == nil
		}
	}
	return 0, false
}

// hasOpen says whether the process has the file fi describes open; true
// as well when its descriptors are not for this user to see (another
// user's process, looked at by someone who is neither her nor root):
// its uid, checked before, is then all there is to go by.
func hasOpen(pid int, fi fs.FileInfo) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return errors.Is(err, fs.ErrPermission)
	}
	for _, fd := range fds {
		if st, err := os.Stat(filepath.Join(dir, fd.Name())); err == nil && os.SameFile(st, fi) {
			return true
		}
	}
	return false
}
