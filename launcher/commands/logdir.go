package commands

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/tfhive/tfhive/launcher"
)

// logRoot holds the runs' log dirs unless --log-dir says otherwise.
const logRoot = "tfhive-runs"

// checkLogDir refuses, before any host is contacted, a log dir that run
// could not create or fill, or one that another user could have made or
// could swap (launcher.CheckLogDirPath: a link, a directory of theirs on
// the way, one that others may write to): one line, naming the path and
// its owner. It creates nothing: the launcher does, once tasks are about
// to start, so a run that ends earlier leaves no empty directory behind.
// given says the user chose dir, for the hint.
func checkLogDir(dir string, given bool) error {
	if err := checkLogDirUse(dir, given); err != nil {
		return err
	}
	if err := launcher.CheckLogDirPath(dir); err != nil {
		return &UsageError{Msg: "log dir " + dir + " refused: " + err.Error()}
	}
	return nil
}

// checkLogDirUse: dir can be created, or is an empty directory, and can
// be written to.
func checkLogDirUse(dir string, given bool) error {
	hint := "choose another --log-dir"
	if !given {
		hint = "give --log-dir DIR, or start tfhive in a directory you can write to"
	}
	bad := func(format string, a ...any) error {
		return &UsageError{Msg: "log dir " + dir + " " + fmt.Sprintf(format, a...), Fix: hint}
	}
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return bad("is not a directory")
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return bad("cannot be read: %v", pathErr(err))
		}
		if len(entries) > 0 {
			if !given {
				hint = "choose another --name or --log-dir"
			}
			return bad("already exists and is not empty")
		}
		if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
			return bad("is not writable: %v", err)
		}
		return nil
	}
	// The launcher creates the missing directories below the nearest one
	// that exists: that one must be a directory it may write to.
	for p := dir; ; {
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return bad("cannot be created: %v", pathErr(err))
		}
		if _, lerr := os.Lstat(p); lerr == nil {
			return bad("cannot be created: %s is a symbolic link to nothing", p)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return bad("cannot be created: %v", pathErr(err))
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

// pathErr drops the operation and path an *fs.PathError repeats.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
