// Package localfile reads the local files a user names to tfhive (hosts
// file, ssh_config and its Includes, known_hosts, identity files) with a cap
// on their size, refusing FIFOs and devices: a path pointing at /dev/zero
// must not grow memory without end, nor a huge file parse for minutes
// while ignoring Ctrl-C. Each caller chooses its cap.
//
// It imports only the standard library.
package localfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// fileTooLargeError and notRegularError say why Read refused a
// file; their text follows the file name ("hosts file: big.yaml: ...").
type fileTooLargeError struct {
	size, max int64
}

func (e *fileTooLargeError) Error() string {
	if e.size < 0 { // it grew while being read
		return fmt.Sprintf("too large (over the limit of %s)", SizeString(e.max))
	}
	size := SizeString(e.size)
	if e.size < e.max+e.max/100 { // "4.0 MiB, the limit is 4 MiB" says nothing
		size = fmt.Sprintf("%d bytes", e.size)
	}
	return fmt.Sprintf("too large (%s, the limit is %s)", size, SizeString(e.max))
}

type notRegularError struct{ what string }

func (e *notRegularError) Error() string {
	return "not a regular file (" + e.what + ")"
}

// Read reads a file given by the user, refusing anything but a
// regular file of at most max bytes. The os.DevNull device reads as empty, as
// `--ssh-config /dev/null` or `UserKnownHostsFile /dev/null` are common ways
// of saying "none". Errors are *fs.PathError, so callers print them as
// "NAME: why" (see Describe) and errors.Is(err, fs.ErrNotExist) works.
func Read(name string, max int64) ([]byte, error) {
	data, _, err := read(name, max)
	return data, err
}

// read is Read, also returning what the opened file is (nil for
// os.DevNull): the descriptor's fstat, not the name's, so that a file
// swapped in after a look at the name is the one judged.
func read(name string, max int64) ([]byte, fs.FileInfo, error) {
	fail := func(err error) ([]byte, fs.FileInfo, error) {
		return nil, nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	// Stat before opening: opening a FIFO blocks until a writer comes, and
	// opening a device can have effects of its own.
	st, err := os.Stat(name)
	if err != nil {
		return nil, nil, err
	}
	if isDevNull(st) {
		return nil, nil, nil
	}
	if err := checkRegular(st, max); err != nil {
		return fail(err)
	}
	// The file may have been swapped for a FIFO since the stat: O_NONBLOCK
	// keeps the open from waiting for a writer, and the fstat below refuses
	// it. On a regular file O_NONBLOCK changes nothing.
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, nil, err
	}
	if err := checkRegular(st, max); err != nil {
		return fail(err)
	}
	// A file that grows while being read is cut at max+1 bytes.
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(data)) > max {
		return fail(&fileTooLargeError{size: -1, max: max})
	}
	return data, st, nil
}

// Check says, without opening it, whether Read would refuse the file
// for what it is: nil for a regular file of at most max bytes, for
// os.DevNull and for a file that does not exist or cannot be looked at
// (the caller's Read says why later, as it always did); else the error
// Read would return. A command checks the files it will read at each
// dial before it dials any host: a path that can never work is the
// user's to fix, not one host's failure.
func Check(name string, max int64) error {
	st, err := os.Stat(name)
	if err != nil || isDevNull(st) {
		return nil
	}
	if err := checkRegular(st, max); err != nil {
		return &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return nil
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

// SizeString prints a byte count the way the caps are written: "4 MiB",
// "60.0 MiB", "812 bytes".
func SizeString(n int64) string {
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

// Describe is a *fs.PathError from Read as "NAME: why", without the
// operation, for messages that say what the file was for ("hosts file:
// NAME: why"). Other errors are returned as they are.
func Describe(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}
