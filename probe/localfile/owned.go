package localfile

import (
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// A file tfhive finds by itself rather than one the user names on the
// command line (./hosts.yaml, the per-user hosts file, the ssh_config
// such a file names) decides what runs as the user, and where. It is
// read only when nobody but the user or root can have written it, as git
// refuses a repository another user owns ("dubious ownership") and
// OpenSSH a ~/.ssh/config that others may write:
//
//   - the file is the user's or root's and writable by neither its group
//     nor others, as the opened descriptor says (not a look at the name
//     before opening it);
//   - the name, when it is a symbolic link, is the user's or root's;
//   - the directory holding it (and, for a link, the one holding what it
//     leads to) is the user's or root's and writable by neither group nor
//     others. Sticky does not do here, unlike for a log dir's parent: in a
//     directory others may write to, a file of yours may be a hard link
//     another user made to any file of yours (where the kernel's
//     protected_hardlinks is off), or a file you never meant to leave
//     there.
//
// A file named on the command line is the user's choice and is read as
// it is (Read).

// NotOwnedError says why ReadOwned refused a file: Why follows the
// file's name in a message ("it is owned by mallory, not by you or
// root").
type NotOwnedError struct {
	Path string
	Why  string
}

func (e *NotOwnedError) Error() string { return e.Path + ": " + e.Why }

// ReadOwned is Read for a file tfhive finds by itself: it refuses, with
// a *NotOwnedError, a file that someone other than the user or root
// could have written (see above).
func ReadOwned(name string, max int64) ([]byte, error) {
	uid := os.Geteuid()
	refuse := func(format string, a ...any) ([]byte, error) {
		return nil, &NotOwnedError{Path: name, Why: fmt.Sprintf(format, a...)}
	}
	file := func(fi fs.FileInfo) string { return othersMayWrite(fi, uid) }
	li, err := os.Lstat(name)
	if err != nil {
		return Read(name, max) // its error, as Read says it
	}
	dirs := []string{filepath.Dir(name)}
	if li.Mode()&fs.ModeSymlink != 0 {
		if o := Owner(li); o != uid && o != 0 {
			return refuse("it is a symbolic link owned by %s", UserName(o))
		}
		to, err := filepath.EvalSymlinks(name)
		if err != nil {
			return Read(name, max)
		}
		dirs = append(dirs, filepath.Dir(to))
	}
	// The file's owner first, the likelier reason; the descriptor's
	// fstat below is what decides.
	if fi, err := os.Stat(name); err == nil && fi.Mode().IsRegular() {
		if why := file(fi); why != "" {
			return refuse("%s", why)
		}
	}
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil {
			return nil, err
		}
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		switch o := Owner(fi); {
		case o != uid && o != 0:
			return refuse("its directory %s is owned by %s, not by you or root", d, UserName(o))
		case fi.Mode()&0o022 != 0:
			return refuse("its directory %s is writable by %s", d, Writers(fi))
		}
	}
	data, fi, err := read(name, max)
	if err != nil || fi == nil { // fi: nil for os.DevNull, which reads as empty
		return data, err
	}
	if why := file(fi); why != "" {
		return refuse("%s", why)
	}
	return data, nil
}

// othersMayWrite says why someone other than uid or root may have
// written the file fi describes ("" when nobody may): its owner, or its
// group's or others' write bit.
func othersMayWrite(fi fs.FileInfo, uid int) string {
	switch o := Owner(fi); {
	case o != uid && o != 0:
		return fmt.Sprintf("it is owned by %s, not by you or root", UserName(o))
	case fi.Mode()&0o022 != 0:
		return "it is writable by " + Writers(fi)
	}
	return ""
}

// ReadSaying is Read for a file the user named, also saying, of the file
// opened (its descriptor's fstat), why someone other than the user or
// root may have written it ("" when nobody may; os.DevNull: ""). The
// file is read either way: what it may decide is the caller's to limit
// (a shared hosts file's `notify:` commands, which would run as the
// user, are skipped).
func ReadSaying(name string, max int64) (data []byte, others string, err error) {
	data, fi, err := read(name, max)
	if err != nil || fi == nil {
		return data, "", err
	}
	return data, othersMayWrite(fi, os.Geteuid()), nil
}

// Owner is the uid of the file fi describes, -1 where the system does
// not say.
func Owner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// Writers says who besides its owner may write to the file fi describes:
// "group and others", "others" or "its group".
func Writers(fi fs.FileInfo) string {
	switch m := fi.Mode(); {
	case m&0o022 == 0o022:
		return "group and others"
	case m&0o002 != 0:
		return "others"
	}
	return "its group"
}

// UserName is uid's login name, else the number.
func UserName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return strconv.Itoa(uid)
}
