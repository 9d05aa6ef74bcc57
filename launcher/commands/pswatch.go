package commands

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/inventory"
)

// DefaultPsWatch is `tfhive ps --watch`'s interval when none is given.
const DefaultPsWatch = 2 * time.Second

// psWatch is `tfhive ps --watch`, as kubectl get -w and watch(1): every
// interval it probes again over the fleet's connections (one per host,
// opened once). On a terminal it redraws the table in place, with a
// header, within the terminal's width and height (view.Screen);
// otherwise (or with --json) it prints the table (the document) again
// only when the runs changed (view.RunsChanged), so that a log of it is
// a log of changes, and says on stderr when the hosts that cannot be
// reached change. Ctrl-C ends it with exit 0, as status --watch: the
// watch was the point, nothing was interrupted.
func psWatch(ctx context.Context, o PsOptions, fleet *probe.Fleet) error {
	redraw := isTerminal(o.Stdout) && !o.JSON
	from := hostsFrom(o.Hosts)
	if !redraw {
		noteHostsFrom(o.Hosts, o.Stderr)
	} else {
		// The screen ends without a newline (view.Screen): the shell's
		// prompt goes below it.
		defer fmt.Fprintln(o.Stdout)
	}
	var last []view.RunOnHost
	lastBad := ""
	for first := true; ; first = false {
		inv, err := job.ProbeAll(ctx, fleet)
		if err != nil {
			if ctx.Err() != nil {
				return nil // Ctrl-C ends a watch normally
			}
			return err
		}
		runs := hostops.Runs(inv)
		bad := unreachableLines(inv)
		switch {
		case redraw:
			// As status --watch: within the terminal's width and height
			// (asked at each refresh), the rows that do not fit counted.
			cols, height := termSize(o.Stdout)
			var buf strings.Builder
			if err := view.WriteRuns(view.OnTerminal(&buf, cols), runs, time.Now()); err != nil {
				return err
			}
			header := fmt.Sprintf("Every %s: tfhive ps    %s", o.Watch, time.Now().Format("15:04:05"))
			if from != "" { // the screen is cleared: in the header
				header += "    " + from
			}
			// The hosts that could not be reached go with the screen they
			// belong to (stderr would be cleared with it), below the table,
			// kept when rows are not.
			var tail []string
			if bad != "" {
				tail = strings.Split(strings.TrimSuffix(bad, "\n"), "\n")
			}
			if _, err := fmt.Fprintf(o.Stdout, "\x1b[H\x1b[2J%s", view.Screen([]string{header, ""}, buf.String(), tail, cols, height)); err != nil {
				return err
			}
		case first || view.RunsChanged(last, runs):
			if err := writePs(o, runs); err != nil {
				return err
			}
		}
		if !redraw && bad != lastBad {
			if bad == "" {
				fmt.Fprintf(o.Stderr, "tfhive: every host reached again\n")
			}
			fmt.Fprint(o.Stderr, bad)
		}
		last, lastBad = runs, bad
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.Watch):
		}
	}
}

// writePs prints the runs once, as plain `tfhive ps` does; a watch
// separates one table from the next by a blank line.
func writePs(o PsOptions, runs []view.RunOnHost) error {
	if o.JSON {
		return view.WriteRunsJSON(o.Stdout, runs)
	}
	if err := view.WriteRuns(o.Stdout, runs, time.Now()); err != nil {
		return err
	}
	_, err := io.WriteString(o.Stdout, "\n")
	return err
}

// unreachableLines are the hosts that could not be reached, one line
// each ("tfhive: warning: HOST: why"), "" when every host was.
func unreachableLines(inv inventory.Inventory) string {
	var b strings.Builder
	if e, ok := job.Unreachable(inv).(*UnreachableError); ok {
		for _, l := range e.Lines {
			fmt.Fprintf(&b, "tfhive: warning: %s\n", view.SanitizeCell(l))
		}
	}
	return b.String()
}
