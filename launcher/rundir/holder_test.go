package rundir

import (
	"errors"
	"os"
	"testing"
)

// The holder of a lock is the process /proc/locks names, while it holds
// it; none once let go, and a second holder is refused meanwhile.
func TestLockHolder(t *testing.T) {
	if _, err := os.Stat("/proc/locks"); err != nil {
		t.Skip("no /proc/locks")
	}
	dir := t.TempDir()
	if pid, known := LockHolder(dir, TensorBoardLock); pid != 0 || !known {
		t.Errorf("no lock file: holder %d (%v)", pid, known)
	}
	release, err := HoldFileLock(dir, TensorBoardLock)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir + "/" + TensorBoardLock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("lock file: %v %v", fi, err)
	}
	if pid, _ := LockHolder(dir, TensorBoardLock); pid != os.Getpid() {
		t.Errorf("holder %d, want %d", pid, os.Getpid())
	}
	if _, err := HoldFileLock(dir, TensorBoardLock); !errors.Is(err, ErrLockHeld) {
		t.Errorf("a second holder: %v", err)
	}
	release()
	if pid, _ := LockHolder(dir, TensorBoardLock); pid != 0 {
		t.Errorf("holder %d after release", pid)
	}
}
