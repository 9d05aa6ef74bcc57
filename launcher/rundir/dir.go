package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/tfhive/tfhive/probe/localfile"
)

// A run's local files (its directory, the log dir, and every file in it:
// the records, the tasks' logs, the lock) are written only where
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
//     0700 (DirMode), and the whole chain is walked again after: a
//     directory someone else made first is refused then;
//   - files are opened with O_NOFOLLOW, the ones that must be new with
//     O_EXCL, and made 0600 (FileMode).
//
// The modes are the user's alone: a run's records hold what --env gave
// its tasks, its plan the command line, its logs what the tasks printed,
// and nothing of tfhive's needs another user to read them (a colleague
// sees a run through the hosts: ps, top, status).
//
// A relative path stops at the current directory: the kernel holds it by
// its inode, whatever its name now leads to.

// DirMode and FileMode are what the run's directories and files are
// made with: yours alone.
const (
	DirMode  = 0o700
	FileMode = 0o600
)

// Check says why dir may not be the run's log dir as far as
// its owners and links go, or nil. It creates nothing.
func Check(dir string) error {
	_, err := chain(dir)
	return err
}

// Make creates the log dir dir and what is missing above it, then
// checks the chain again (Check).
func Make(dir string) error {
	missing, err := chain(dir)
	if err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], DirMode); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	if missing, err = chain(dir); err == nil && len(missing) > 0 {
		err = fmt.Errorf("%s could not be created", missing[0])
	}
	return err
}

// OpenFile opens a file of the run's log dir for writing, never
// through a link: flag is O_CREATE|O_WRONLY with O_TRUNC, O_APPEND or
// O_EXCL. The log dir is one of the run's own (Make), so nobody
// else can have put anything in it; O_NOFOLLOW makes sure.
func OpenFile(path string, flag int) (*os.File, error) {
	return os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, FileMode)
}

// chain walks dir's path up from dir itself (see above) and
// returns the directories to create, dir first.
func chain(dir string) (missing []string, err error) {
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
				return chain(to)
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
