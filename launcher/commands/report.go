package commands

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/tfhive/tfhive/launcher/report"
	"github.com/tfhive/tfhive/launcher/rundir"
)

// ReportOptions are `tfhive report`'s.
type ReportOptions struct {
	Streams
	LogRoot string // --log-root; "" for tfhive-runs
	Name    string // the run's or the sweep's id
	// Out is -o: the file to write; "" for report.html in the run's (or
	// sweep's) dir, "-" for stdout.
	Out string
}

// rundir.Report is the report's name in a log dir.

// Report writes the report of a run or a sweep of the log root.
func Report(_ context.Context, o ReportOptions) error {
	if err := checkRunID("", o.Name); err != nil {
		return err
	}
	if o.Out != "" && o.Out != "-" {
		if st, err := os.Stat(o.Out); err == nil && !st.Mode().IsRegular() {
			return notRegularOut(o.Out)
		}
	}
	root, err := checkLogRoot(o.LogRoot)
	if err != nil {
		return err
	}
	dir := filepath.Join(root, o.Name)
	var render func(io.Writer) error
	if report.IsSweep(dir) {
		s, err := report.LoadSweep(root, dir)
		if err != nil {
			return fmt.Errorf("sweep %s: %w", o.Name, err)
		}
		render = func(w io.Writer) error { return report.WriteSweep(w, s) }
	} else {
		r, err := report.Load(dir, o.Name)
		if errors.Is(err, fs.ErrNotExist) {
			// No such run: exit 1, as logs, wait and attach say it.
			return &NoRunError{Msg: fmt.Sprintf("no run or sweep %s in %s (tfhive runs lists its runs)", o.Name, root)}
		}
		if err != nil {
			return err
		}
		render = func(w io.Writer) error { return report.Write(w, r) }
	}
	switch o.Out {
	case "-":
		return render(o.Stdout)
	case "":
		out := filepath.Join(dir, rundir.Report)
		if err := rundir.Check(dir); err != nil {
			return &UsageError{Msg: fmt.Sprintf("%s: %v", dir, err), Fix: "write the report elsewhere with -o FILE"}
		}
		if err := rundir.WriteFile(out, render); err != nil {
			return err
		}
		fmt.Fprintln(o.Stdout, out)
		return nil
	}
	f, err := openOut(o.Out)
	if err != nil {
		return err
	}
	if err = renderTo(f, render); err == nil {
		fmt.Fprintln(o.Stdout, o.Out)
	}
	return err
}

// openOut opens -o's file for the report: a regular file, made when
// missing. O_NONBLOCK: a FIFO put there since the stat must not block
// the open for good (an open blocked for a reader heeds no signal); the
// open then fails (no reader) or the fstat refuses it.
func openOut(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|syscall.O_NONBLOCK, 0o644)
	if errors.Is(err, syscall.ENXIO) {
		return nil, notRegularOut(path)
	}
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, notRegularOut(path)
	}
	return f, nil
}

func notRegularOut(path string) error {
	return &UsageError{Msg: fmt.Sprintf("-o %s: not a regular file", path), Fix: "-o - writes the report to stdout (tfhive report RUN -o - > PATH)"}
}

// writeRunReport writes report.html in a run's log dir as the run ends:
// what fails is a warning, never the run's outcome.
func writeRunReport(dir, id string, stderr io.Writer) {
	err := func() error {
		r, err := report.Load(dir, id)
		if err != nil {
			return err
		}
		return rundir.WriteFile(filepath.Join(dir, rundir.Report), func(w io.Writer) error { return report.Write(w, r) })
	}()
	if err != nil {
		fmt.Fprintf(stderr, "tfhive: warning: the run's report (%s): %v\n", filepath.Join(dir, rundir.Report), rundir.PathErr(err))
	}
}

// writeSweepReport writes report.html in a sweep's dir (<root>/NAME) as
// it ends; what fails is a warning.
func writeSweepReport(dir string, stderr io.Writer) {
	err := func() error {
		s, err := report.LoadSweep(filepath.Dir(dir), dir)
		if err != nil {
			return err
		}
		return rundir.WriteFile(filepath.Join(dir, rundir.Report), func(w io.Writer) error { return report.WriteSweep(w, s) })
	}()
	if err != nil {
		fmt.Fprintf(stderr, "tfhive: warning: the sweep's report (%s): %v\n", filepath.Join(dir, rundir.Report), rundir.PathErr(err))
	}
}

// renderTo renders into f, buffered, and closes it: the first error of
// the three is the one said.
func renderTo(f *os.File, render func(io.Writer) error) error {
	w := bufio.NewWriter(f)
	err := render(w)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
