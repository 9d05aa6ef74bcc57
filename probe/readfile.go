package probe

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Caps on the local files tfhive reads for the user. Without them a path
// pointing at /dev/zero grows memory without end, and a huge file parses for
// minutes while ignoring Ctrl-C.
const (
	// maxHostsFileSize: a hosts file lists a fleet; 4 MiB is some 50,000
	// hosts, which load in a couple of seconds (a 60 MB file took 39 s and
	// 3.4 GB).
	maxHostsFileSize = 4 << 20
	// maxSSHConfigSize: ssh configs are written by hand (or generated per
	// host, still far below this).
	maxSSHConfigSize = 4 << 20
	// maxKnownHostsSize: known_hosts only grows (every host ever trusted,
	// each key on its own line, an RSA line is ~600 bytes) and the system
	// one may be generated for a whole site, so it gets more room: 64 MiB is
	// about 100,000 hosts.
	maxKnownHostsSize = 64 << 20
	// maxIdentityFileSize: a private key is a few KiB, even RSA 16384.
	maxIdentityFileSize = 1 << 20
)

// fileTooLargeError and notRegularError say why readLocalFile refused a
// file; their text follows the file name ("hosts file: big.yaml: ...").
type fileTooLargeError struct {
	size, max int64
}

func (e *fileTooLargeError) Error() string {
	if e.size < 0 { // it grew while being read
		return fmt.Sprintf("too large (over the limit of %s)", sizeString(e.max))
	}
	size := sizeString(e.size)
	if e.size < e.max+e.max/100 { // "4.0 MiB, the limit is 4 MiB" says nothing
		size = fmt.Sprintf("%d bytes", e.size)
	}
	return fmt.Sprintf("too large (%s, the limit is %s)", size, sizeString(e.max))
}

type notRegularError struct{ what string }

func (e *notRegularError) Error() string {
	return "not a regular file (" + e.what + ")"
}

// readLocalFile reads a file given by the user, refusing anything but a
// regular file of at most max bytes. The os.DevNull device reads as empty, as
// `--ssh-config /dev/null` or `UserKnownHostsFile /dev/null` are common ways
// of saying "none". Errors are *fs.PathError, so callers print them as
// "NAME: why" (see unwrapPathError) and errors.Is(err, fs.ErrNotExist) works.
func readLocalFile(name string, max int64) ([]byte, error) {
	fail := func(err error) ([]byte, error) {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	// Stat before opening: opening a FIFO blocks until a writer comes, and
	// opening a device can have effects of its own.
	st, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if isDevNull(st) {
		return nil, nil
	}
	if err := checkRegular(st, max); err != nil {
		return fail(err)
	}
	// The file may have been swapped for a FIFO since the stat: O_NONBLOCK
	// keeps the open from waiting for a writer, and the fstat below refuses
	// it. On a regular file O_NONBLOCK changes nothing.
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := checkRegular(st, max); err != nil {
		return fail(err)
	}
	// A file that grows while being read is cut at max+1 bytes.
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return fail(&fileTooLargeError{size: -1, max: max})
	}
	return data, nil
}

func checkRegular(st fs.FileInfo, max int64) error {
	m := st.Mode()
	switch {
	case m.IsRegular():
		if st.Size() > max {
			return &fileTooLargeError{size: st.Size(), max: max}
		}
		return nil
	case m.IsDir():
		return &notRegularError{"a directory"}
	case m&fs.ModeNamedPipe != 0:
		return &notRegularError{"a FIFO"}
	case m&fs.ModeSocket != 0:
		return &notRegularError{"a socket"}
	case m&fs.ModeCharDevice != 0:
		return &notRegularError{"a character device"}
	case m&fs.ModeDevice != 0:
		return &notRegularError{"a block device"}
	}
	return &notRegularError{"mode " + m.String()}
}

func isDevNull(st fs.FileInfo) bool {
	if st.Mode()&fs.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err == nil && os.SameFile(st, null)
}

// sizeString prints a byte count the way the caps are written: "4 MiB",
// "60.0 MiB", "812 bytes".
func sizeString(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
