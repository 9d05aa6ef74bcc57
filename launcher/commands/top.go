package commands

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/top"
	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/inventory"
)

// TopOptions are `tfhive top`'s.
type TopOptions struct {
	Streams
	// Stdin is where the keys come from.
	Stdin        io.Reader
	Hosts        HostOptions
	Availability Availability
	// Interval is --interval: the time between refreshes; 0 when not
	// given (DefaultTopInterval on a terminal; one snapshot otherwise).
	Interval time.Duration
	Grace    time.Duration // a stopped run's SIGTERM → SIGKILL
	LogRoot  string        // --log-root: where the user's runs are; "" for tfhive-runs
}

// DefaultTopInterval is top's refresh interval on a terminal.
const DefaultTopInterval = 2 * time.Second

// Top shows the fleet live: a terminal UI on a terminal; elsewhere (a
// pipe, a file) the same as text, once, or every --interval when given.
// Each host is dialled once and its connection reused by every refresh.
func Top(ctx context.Context, o TopOptions) error {
	if o.Interval < 0 {
		return usagef("--interval must not be negative")
	}
	if o.Grace < 0 {
		return usagef("--grace must not be negative")
	}
	if _, err := checkLogRoot(o.LogRoot); err != nil {
		return err
	}
	color, err := o.colors(o.Stdout)
	if err != nil {
		return err
	}
	out, tty := terminalFile(o.Stdout)
	in, ttyIn := o.Stdin.(*os.File)
	tty = tty && ttyIn && isTerminal(in)
	src, err := newTopSource(o, tty)
	if err != nil {
		return err
	}
	defer src.fleet.Close()
	fleet := src.fleet
	if !tty {
		return topPlain(ctx, o, src)
	}
	fleet.NoProgress()
	interval := o.Interval
	if interval == 0 {
		interval = DefaultTopInterval
	}
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := top.New(top.Config{Refresh: src.Refresh, Interval: interval, Stop: src.stop, Tail: top.TailLog,
		Ctx: mctx, Color: color, From: src.from})
	// tfhive's own handler routes SIGINT and SIGTERM to ctx; in the UI
	// Ctrl-C is a key (the terminal is raw).
	// The alternate screen is the model's View's (AltScreen).
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithoutSignalHandler(), tea.WithInput(in),
		tea.WithOutput(out))
	_, err = p.Run()
	cancel()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// topPlain prints the snapshot as text: once, its exit code status's (4
// when a host could not be reached), or every --interval until
// interrupted.
func topPlain(ctx context.Context, o TopOptions, src *topSource) error {
	noteHostsFrom(o.Hosts, o.Stderr)
	for {
		snap := src.Refresh(ctx)
		if snap.Err != nil {
			if ctx.Err() != nil && o.Interval > 0 {
				return nil // Ctrl-C ends a watch normally
			}
			return snap.Err
		}
		if _, err := io.WriteString(o.Stdout, top.Plain(&snap, "")); err != nil {
			return err
		}
		if o.Interval == 0 {
			return job.Unreachable(snap.Inv)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.Interval):
		}
		if _, err := io.WriteString(o.Stdout, "\n"); err != nil {
			return err
		}
	}
}

// newTopSource validates o and opens the fleet (nothing dialled yet). On
// a terminal (tty) the screen is the UI's: the fleet's warnings go to
// its footer instead of through it.
func newTopSource(o TopOptions, tty bool) (*topSource, error) {
	warnings := &top.LastLine{}
	stderr := o.Stderr
	if tty {
		stderr = warnings
	}
	fleet, err := openFleet(o.Hosts, stderr, probeGPUs)
	if err != nil {
		return nil, err
	}
	avail, err := o.Availability.availability(fleet.Hosts)
	if err != nil {
		return nil, err
	}
	// The same round trip says what the user's run directories on the
	// hosts say of their runs (their state), as for ps.
	fleet.LookForRuns()
	root := o.LogRoot
	if root == "" {
		root = rundir.Root
	}
	probeAll := func(ctx context.Context) (inventory.Inventory, error) { return job.ProbeAll(ctx, fleet) }
	return &topSource{Source: &top.Source{Probe: probeAll, Hosts: fleet.Hosts, Avail: avail, Root: root, Warnings: warnings},
		fleet: fleet, grace: o.Grace, parallel: o.Hosts.Parallel, from: hostsFrom(o.Hosts)}, nil
}

// topSource is top.Source over the fleet's connections, which also
// stops runs through them.
type topSource struct {
	*top.Source
	fleet    *probe.Fleet
	grace    time.Duration
	parallel int
	from     string
}

// stop stops the user's run id on the hosts of the last probe.
func (s *topSource) stop(ctx context.Context, id string) (string, error) {
	k, err := killRun(ctx, s.fleet, s.Inventory(), id, map[string]bool{id: true}, s.grace, s.parallel, s.from)
	if err != nil {
		return "", err
	}
	if len(k.failed) > 0 {
		return "", errors.New("could not stop it everywhere: " + strings.Join(k.failed, "; "))
	}
	return strings.Join(k.said, "; "), nil
}

// terminalFile is w's file when w is a terminal.
func terminalFile(w io.Writer) (*os.File, bool) {
	if s, ok := w.(*Stdout); ok {
		w = s.w
	}
	f, ok := w.(*os.File)
	return f, ok && isTerminal(f)
}
