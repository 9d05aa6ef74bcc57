package commands

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// StatusOptions are `tfhive status`'s.
type StatusOptions struct {
	Streams
	Hosts        HostOptions
	Availability Availability
	JSON         bool
	// Watch, when not 0, redraws the status at that interval, over the
	// same connections, until ctx ends.
	Watch time.Duration
	// Slurm is --on slurm's: a Slurm cluster's partitions instead of the
	// hosts (slurmstatus.go).
	Slurm SlurmOptions
}

// Status probes the hosts and prints every GPU.
func Status(ctx context.Context, o StatusOptions) error {
	if o.Slurm.On != "" {
		return slurmStatus(ctx, o)
	}
	// Every host's probe output and SSH buffers are live at once, the
	// garbage of parsing them comes in one burst: at the default 100 the
	// heap peaks at twice what is live (256 answering hosts: 112 MiB of
	// peak RSS, 91 MiB at 50, for about the same CPU). GOGC, when set,
	// wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	color, err := o.colors(o.Stdout)
	if err != nil {
		return err
	}
	color = color && !o.JSON
	fleet, err := openFleet(o.Hosts, o.Stderr, probeGPUs)
	if err != nil {
		return err
	}
	// It shows the hosts: it says which look alike (clones).
	fleet.SayClones()
	// A claimed GPU's run idle (the user's own: "idle 37m"), read in the
	// same probe script, without ps's second nvidia-smi.
	fleet.LookForRunsOnly()
	avail, err := o.Availability.availability(fleet.Hosts)
	if err != nil {
		return err
	}
	if o.Watch < 0 {
		return usagef("--watch must not be negative")
	}
	defer fleet.Close()
	from := hostsFrom(o.Hosts)
	if o.Watch == 0 || !isTerminal(o.Stdout) {
		noteHostsFrom(o.Hosts, o.Stderr)
	}

	show := func(w io.Writer) (inventory.Inventory, error) {
		inv, err := job.ProbeAll(ctx, fleet)
		if err != nil {
			return inv, err
		}
		st := schedule.Classify(inv, avail)
		if o.JSON {
			return inv, view.WriteStatusJSON(w, inv, st)
		}
		return inv, view.WriteStatusTable(w, inv, st, color)
	}

	if o.Watch == 0 {
		inv, err := show(o.Stdout)
		if err != nil {
			return err
		}
		return job.Unreachable(inv)
	}
	return o.watch(ctx, "tfhive status", show, from)
}

// watch shows the status every --watch, in place on a terminal (title
// in its header), until ctx ends.
func (o StatusOptions) watch(ctx context.Context, title string, show func(io.Writer) (inventory.Inventory, error), from string) error {
	tty := isTerminal(o.Stdout)
	if tty {
		// The screen ends without a newline (view.Screen): the shell's
		// prompt goes below it.
		defer fmt.Fprintln(o.Stdout)
	}
	for {
		var buf strings.Builder
		// Asked at each refresh: a resized terminal gets a screen that
		// fits it at the next.
		cols, rows := termSize(o.Stdout)
		var table io.Writer = &buf
		if tty {
			table = view.OnTerminal(&buf, cols)
		}
		if _, err := show(table); err != nil {
			if ctx.Err() != nil {
				return nil // Ctrl-C ends a watch normally
			}
			return err
		}
		if tty {
			// Redraw in place, like watch(1), within the terminal: each
			// line cut to its width, the rows that do not fit its height
			// counted on the last line; a screen that scrolled would
			// lose its header and leave old rows above it.
			header := fmt.Sprintf("Every %s: %s    %s", o.Watch, title, time.Now().Format("15:04:05"))
			if from != "" { // the screen is cleared: in the header
				header += "    " + from
			}
			fmt.Fprintf(o.Stdout, "\x1b[H\x1b[2J%s", view.Screen([]string{header, ""}, buf.String(), nil, cols, rows))
		} else {
			fmt.Fprintf(o.Stdout, "%s\n", buf.String())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.Watch):
		}
	}
}
