package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tfhive/tfhive/launcher/report"
	"github.com/tfhive/tfhive/launcher/rundir"
)

// CompareOptions are `tfhive compare`'s.
type CompareOptions struct {
	Streams
	LogRoot string   // --log-root; "" for tfhive-runs
	Names   []string // runs, or one sweep
	// Best is --best; "" for the default (report.Comparison).
	Best    string
	ColorBy string // --color-by: a sweep's parameter
	// Out is -o: "" for compare.html in the log root, "-" for stdout.
	Out string
}

// compareFile is compare's page in the log root, written again by each
// compare (as report.html is by each report).
const compareFile = "compare.html"

// Compare writes one page with the runs' (or a sweep's trials')
// metrics overlaid and their table.
func Compare(_ context.Context, o CompareOptions) error {
	for i, n := range o.Names {
		if err := checkRunID("", n); err != nil {
			return err
		}
		if containsStr(o.Names[:i], n) {
			return &UsageError{Msg: fmt.Sprintf("compare: %s given twice", n)}
		}
	}
	var best report.Best
	if o.Best != "" {
		b, err := report.ParseBest(o.Best)
		if err != nil {
			return &UsageError{Msg: err.Error()}
		}
		best = b
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
	c, err := report.LoadComparison(root, o.Names)
	var missing *report.MissingError
	if errors.As(err, &missing) {
		// No such run: exit 1, as report says it.
		return &NoRunError{Msg: fmt.Sprintf("no run or sweep %s in %s (tfhive runs lists its runs)", missing.Name, root)}
	}
	if err != nil {
		return err
	}
	c.Best = best
	if o.ColorBy != "" {
		if len(c.ParamNames) == 0 {
			return &UsageError{Msg: "--color-by names a sweep's parameter: compare SWEEP"}
		}
		if !containsStr(c.ParamNames, o.ColorBy) {
			return &UsageError{Msg: fmt.Sprintf("--color-by %s: the sweep's parameters are %v", o.ColorBy, c.ParamNames)}
		}
		c.ColorBy = o.ColorBy
	}
	render := func(w io.Writer) error { return report.WriteCompare(w, c) }
	switch o.Out {
	case "-":
		return render(o.Stdout)
	case "":
		out := filepath.Join(root, compareFile)
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

func containsStr(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
