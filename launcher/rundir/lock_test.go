package rundir

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseProcLocks(t *testing.T) {
	data := []byte(`1: FLOCK  ADVISORY  WRITE 2345 fe:00:9986044 0 EOF
1: -> FLOCK  ADVISORY  WRITE 2346 fe:00:9986044 0 EOF
2: FLOCK  ADVISORY  READ 77 00:2b:12 0 EOF
3: POSIX  ADVISORY  WRITE 88 fe:00:9986044 0 EOF
4: OFDLCK ADVISORY  READ -1 fe:00:5 0 EOF
5: FLOCK  ADVISORY  WRITE x fe:00:1 0 EOF
garbage
`)
	want := []procLock{{pid: 2345, write: true, ino: 9986044}, {pid: 77, write: false, ino: 12}}
	if got := parseProcLocks(data); !reflect.DeepEqual(got, want) {
		t.Errorf("parseProcLocks = %+v, want %+v", got, want)
	}
}

// The run's lock is 0600 and counts while its tfhive holds it; a lock
// another user holds on an older tfhive's 0644 file does not count, and
// the next run puts a fresh lock in its place.
func TestRunLockOwner(t *testing.T) {
	if _, err := os.Stat("/proc/locks"); err != nil {
		t.Skip("no /proc/locks")
	}
	dir := filepath.Join(t.TempDir(), "run")
	release, err := HoldLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, Lock)
	if fi, err := os.Stat(lock); err != nil || fi.Mode().Perm() != runLockMode {
		t.Errorf("keeper.lock: %v %v, want mode 0600", fi.Mode(), err)
	}
	if !GoesOn(dir) {
		t.Error("held by its run, the lock does not count")
	}
	if _, err := HoldLock(dir); err == nil {
		t.Error("a second run took the lock of a run that goes on")
	}
	release()
	if GoesOn(dir) {
		t.Error("released, the lock still counts")
	}

	// A reader of the user's holding it shared a moment is waited for:
	// the file is not replaced under it.
	reader, err := os.Open(lock)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(reader.Fd()), unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(50*time.Millisecond, func() { reader.Close() })
	first, _ := os.Stat(lock)
	release, err = HoldLock(dir)
	if err != nil {
		t.Fatalf("a reader's lock kept the run from its own: %v", err)
	}
	if now, err := os.Stat(lock); err != nil || !os.SameFile(first, now) {
		t.Errorf("the lock was replaced under a reader of the user's: %v", err)
	}
	release()

	if os.Geteuid() != 0 {
		t.Skip("holding the lock as another user needs root")
	}
	// An older tfhive's log dir, 0755 (Make's are 0700: she could not
	// even open the lock), under t.TempDir's, which are 0700.
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	os.Chmod(lock, 0o644) // an older tfhive's
	const nobody = 65534
	holder := exec.Command("flock", "-x", lock, "sh", "-c", "echo ready; exec sleep 60")
	holder.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	out, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Skip("flock:", err)
	}
	defer func() { holder.Process.Kill(); holder.Wait() }()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("the other user's flock: %q", line)
	}
	if GoesOn(dir) {
		t.Error("another user's lock counts as the run's")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := WaitEnd(ctx, dir); err != nil {
		t.Errorf("WaitEnd on another user's lock: %v", err)
	}
	before, _ := os.Stat(lock)
	release, err = HoldLock(dir)
	if err != nil {
		t.Fatalf("another user's lock kept the run from its own: %v", err)
	}
	defer release()
	after, err := os.Stat(lock)
	if err != nil || os.SameFile(before, after) || after.Mode().Perm() != runLockMode {
		t.Errorf("keeper.lock after: %v %v; want a fresh file, mode 0600", after, err)
	}
	if !GoesOn(dir) {
		t.Error("the fresh lock does not count")
	}
	if left, _ := filepath.Glob(lock + ".*"); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}
