package stacks

import (
	"io"
	"path/filepath"
	"strings"

	"github.com/tfhive/tfhive/launcher/rundir"
)

// Write writes each stack into logDir's stacks directory, one file a
// task (rundir.StacksOf), made afresh: the latest taking of a run is
// what its files say. It returns the directory.
func Write(logDir string, st []Stack, header string) (string, error) {
	dir := filepath.Join(logDir, rundir.Stacks)
	if err := rundir.Make(dir); err != nil {
		return dir, err
	}
	for _, s := range st {
		role, index, _ := strings.Cut(s.Task, ":")
		path := filepath.Join(logDir, rundir.StacksOf(role, index))
		err := rundir.WriteFile(path, func(w io.Writer) error {
			_, err := io.WriteString(w, header+"task "+s.Task+" on "+s.Host+"\n\n"+s.Text)
			return err
		})
		if err != nil {
			return dir, err
		}
	}
	return dir, nil
}
