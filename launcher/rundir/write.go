package rundir

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// WriteFile writes a file of a run's directory, what render writes,
// whole or not at all: beside it (never through a link), then renamed
// over it, so that a full disk leaves no empty or cut record (runs,
// wait, attach and the report read them).
func WriteFile(path string, render func(io.Writer) error) (err error) {
	tmp := path + ".new"
	os.Remove(tmp)
	f, err := OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY)
	if err != nil {
		return err
	}
	defer func() {
		if err == nil {
			err = os.Rename(tmp, path)
		}
		if err != nil {
			os.Remove(tmp)
			// Named as the file it stands for, not the one beside it.
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = fmt.Errorf("%s: %w", path, pe.Err)
			}
		}
	}()
	w := bufio.NewWriter(f)
	err = render(w)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// WriteJSON writes v as an indented JSON document at path, whole or not
// at all (WriteFile), encoded straight into the file.
func WriteJSON(path string, v any) error {
	return WriteFile(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	})
}
