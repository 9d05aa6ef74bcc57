package launcher

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/tfhive/tfhive/probe/localfile"
)

// A run's local files (the log dir, console.log, plan.json, summary.json,
// the tasks' logs, gpu-usage.csv, keeper.lock…) are written only where
// no other user can have put a link or a file first, nor swap one in
// later:
//
//   - the run's own directories, the log dir and every existing
//     directory above it that is yours and closed to others (not a link,
//     not writable by group or others), are walked up with lstat: a link
//     another user made, or a directory another user owns, is refused;
//   - above them, the first directory that is not such a one (the
//     current directory's tfhive-runs' parent, /tmp…) is where the
//     run's own begin: it must be yours or root's, and sticky if others
//     may write to it (only an entry's owner may then rename or remove
//     it), so that nobody can replace what the run creates there; a
//     link there is followed only if you or root made it;
//   - the log dir itself must be one of the run's own;
//   - what is missing is created by the run, one directory at a time,
//     0755 (less under your umask), and the whole chain is walked again
//     after: a directory someone else made first is refused then;
//   - files are opened with O_NOFOLLOW, the ones that must be new with
//     O_EXCL.
//
// A relative path stops at the current directory: the kernel holds it by
// its inode, whatever its name now leads to.

// CheckLogDirPath says why dir may not be the run's log dir as far as
// its owners and links go, or nil. It creates nothing.
func CheckLogDirPath(dir string) error {
	_, err := logDirChain(dir)
	return err
}

// MakeLogDir creates the log dir dir and what is missing above it, then
// checks the chain again (CheckLogDirPath).
func MakeLogDir(dir string) error {
	missing, err := logDirChain(dir)
	if err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	if missing, err = logDirChain(dir); err == nil && len(missing) > 0 {
		err = fmt.Errorf("%s could not be created", missing[0])
	}
	return err
}

// OpenLogFile opens a file of the run's log dir for writing, never
// through a link: flag is O_CREATE|O_WRONLY with O_TRUNC, O_APPEND or
// O_EXCL. The log dir is one of the run's own (MakeLogDir), so nobody
// else can have put anything in it; O_NOFOLLOW makes sure.
func OpenLogFile(path string, flag int) (*os.File, error) {
	return os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o644)
}

// logDirChain walks dir's path up from dir itself (see above) and
// returns the directories to create, dir first.
func logDirChain(dir string) (missing []string, err error) {
	uid := os.Geteuid()
	dir = filepath.Clean(dir)
	for p := dir; ; {
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			missing = append(missing, p)
		case err != nil:
			return nil, err
		case fi.Mode()&fs.ModeSymlink != 0:
			if o := localfile.Owner(fi); o != uid && o != 0 {
				return nil, fmt.Errorf("%s is a symbolic link owned by %s", p, localfile.UserName(o))
			}
			if p == dir {
				// A link of yours or root's as the log dir: where it
				// leads must be one of the run's own.
				to, err := filepath.EvalSymlinks(p)
				if err != nil {
					return nil, err
				}
				return logDirChain(to)
			}
			// A link of yours or root's above: the run's own begin where
			// it leads.
			fi, err := os.Stat(p)
			if err != nil {
				return nil, err
			}
			return missing, checkAbove(p, fi, uid)
		case !fi.IsDir():
			return nil, fmt.Errorf("%s is not a directory", p)
		case p == dir || localfile.Owner(fi) == uid && fi.Mode()&0o022 == 0:
			if o := localfile.Owner(fi); o != uid {
				return nil, fmt.Errorf("%s is owned by %s, not by you", p, localfile.UserName(o))
			}
			if fi.Mode()&0o022 != 0 {
				return nil, fmt.Errorf("%s is writable by %s", p, localfile.Writers(fi))
			}
		default:
			return missing, checkAbove(p, fi, uid)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return missing, nil
		}
		p = parent
	}
}

// checkAbove checks the directory p (fi, links followed) above the run's
// own: yours or root's, sticky if others may write to it.
func checkAbove(p string, fi fs.FileInfo, uid int) error {
	if wd, err := os.Getwd(); err == nil && p == "." {
		p = wd
	}
	switch o := localfile.Owner(fi); {
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", p)
	case o != uid && o != 0:
		return fmt.Errorf("%s is owned by %s, not by you or root", p, localfile.UserName(o))
	case fi.Mode()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0:
		return fmt.Errorf("%s is writable by %s and not sticky", p, localfile.Writers(fi))
	}
	return nil
}

// WriteJSONFile writes v as an indented JSON document at path, whole or
// not at all, as the run's own records are.
func WriteJSONFile(path string, v any) error { return writeJSONFile(path, v) }
