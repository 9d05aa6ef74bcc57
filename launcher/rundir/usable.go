package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// UnusableError says why a directory cannot become a run's: Why follows
// the directory's name ("already exists and is not empty").
type UnusableError struct {
	Dir, Why string
	// NotEmpty: the directory exists and holds files (another run's, as
	// a rule): another name may do.
	NotEmpty bool
}

func (e *UnusableError) Error() string { return "log dir " + e.Dir + " " + e.Why }

// CheckUsable says whether dir can be the directory of a run about to
// start: it can be created, or is an empty directory, and can be
// written to; else an *UnusableError. It creates nothing (Make does,
// once tasks are about to start, so that a run that ends earlier
// leaves no empty directory behind) and checks no owner (Check does).
func CheckUsable(dir string) error {
	bad := func(format string, a ...any) error {
		return &UnusableError{Dir: dir, Why: fmt.Sprintf(format, a...)}
	}
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return bad("is not a directory")
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return bad("cannot be read: %v", PathErr(err))
		}
		if len(entries) > 0 {
			return &UnusableError{Dir: dir, Why: "already exists and is not empty", NotEmpty: true}
		}
		if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
			return bad("is not writable: %v", err)
		}
		return nil
	}
	// Make creates the missing directories below the nearest one that
	// exists: that one must be a directory it may write to.
	for p := dir; ; {
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return bad("cannot be created: %v", PathErr(err))
		}
		if _, lerr := os.Lstat(p); lerr == nil {
			return bad("cannot be created: %s is a symbolic link to nothing", p)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return bad("cannot be created: %v", PathErr(err))
		}
		p = parent
		fi, err = os.Stat(p)
		if err != nil {
			continue
		}
		if !fi.IsDir() {
			return bad("cannot be created: %s is not a directory", p)
		}
		if err := unix.Access(p, unix.W_OK|unix.X_OK); err != nil {
			return bad("cannot be created in %s: %v", p, err)
		}
		return nil
	}
}

// PathErr drops the operation and path an *fs.PathError repeats: what
// names the file says it already.
func PathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
