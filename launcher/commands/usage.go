package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/launcher/usage"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/wording"
)

// UsageOptions are `tfhive usage`'s.
type UsageOptions struct {
	Streams
	Hosts HostOptions
	Since string // --since: "7d", "36h"
	By    string // --by: user or host
	JSON  bool
	// Now is the window's end; zero: the time now.
	Now time.Time
}

// usageJSON is `tfhive usage --json`'s document.
type usageJSON struct {
	Since   time.Time   `json:"since"`
	Until   time.Time   `json:"until"`
	By      string      `json:"by"`
	Rows    []usage.Row `json:"rows"`
	Refused []string    `json:"refused"`
	Dropped int         `json:"dropped_lines"`
	Errors  []string    `json:"errors"`
}

// Usage prints GPU-hours held and idle per user (or host) over --since,
// from every host's ledgers (launcher/usage).
func Usage(ctx context.Context, o UsageOptions) error {
	since, err := usage.ParseSince(o.Since)
	if err != nil {
		return usagef("%v", err)
	}
	if o.By == "" {
		o.By = "user"
	}
	if o.By != "user" && o.By != "host" {
		return usagef("--by %q: want user or host", o.By)
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	from := now.Add(-since)
	fleet, err := openFleet(o.Hosts, o.Stderr, probeGPUs)
	if err != nil {
		return err
	}
	defer fleet.Close()
	inv, err := job.ProbeAll(ctx, fleet)
	if err != nil {
		return err
	}
	doc := usageJSON{Since: from, Until: now, By: o.By, Rows: []usage.Row{}, Refused: []string{}, Errors: []string{}}
	hosts := make([]usage.Host, len(inv.Hosts))
	errs := make([]error, len(inv.Hosts))
	var g errgroup.Group
	var mu sync.Mutex
	g.SetLimit(max(o.Hosts.Parallel, 1))
	for i, h := range inv.Hosts {
		if h.Err != nil {
			errs[i] = fmt.Errorf("%s", h.Err.Message)
			continue
		}
		g.Go(func() error {
			// Each host is given the command timeout, as the probe is: a
			// stalled host is named, with why, as soon as it is over, and
			// the rest are summed.
			hctx, cancel := context.WithTimeout(ctx, o.Hosts.CommandTimeout)
			defer cancel()
			hosts[i], errs[i] = readUsage(hctx, fleet.Executor(i), h.Name, from, len(h.GPUs))
			if errs[i] != nil && hctx.Err() != nil && ctx.Err() == nil {
				errs[i] = fmt.Errorf("reading its usage ledgers timed out after %s (--command-timeout): its use is left out", o.Hosts.CommandTimeout)
			}
			if errs[i] != nil && !o.JSON {
				mu.Lock()
				fmt.Fprintf(o.Stderr, "tfhive: warning: %s: %s\n", h.Name, wording.OneLine(errs[i].Error()))
				mu.Unlock()
			}
			return nil
		})
	}
	g.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	var all []usage.Entry
	var warn []string
	for i, h := range inv.Hosts {
		if errs[i] != nil {
			// An unreachable host is named by the exit's error
			// (job.Unreachable); one whose ledgers could not be read was
			// named as it failed.
			doc.Errors = append(doc.Errors, h.Name+": "+errs[i].Error())
			continue
		}
		all = append(all, hosts[i].Entries...)
		for _, r := range hosts[i].Refused {
			name, why, _ := strings.Cut(r, " ")
			doc.Refused = append(doc.Refused, h.Name+": "+name+" is not believed: "+why)
		}
		doc.Dropped += hosts[i].Dropped
		var short []string
		switch hosts[i].Overflow {
		case "owners":
			short = append(short, fmt.Sprintf("more than %d users have usage ledgers in its claims directory: the rest were not read, the sums are short", usage.Owners))
		case "bytes":
			short = append(short, fmt.Sprintf("its usage ledgers pass %d MiB: the rest were not read, the sums are short", usage.HostBytes>>20))
		}
		for _, u := range hosts[i].Short {
			short = append(short, fmt.Sprintf("%s's usage ledgers pass %d MiB within the window: only part was read, their sums are short", u, usage.UserBytes>>20))
		}
		for _, u := range hosts[i].Crowded {
			short = append(short, fmt.Sprintf("%s has more than %d usage ledger names in its claims directory: the rest were not read, their sums may be short", u, usage.UserNames))
		}
		for _, e := range short {
			e = h.Name + ": " + e
			doc.Errors, warn = append(doc.Errors, e), append(warn, e)
		}
	}
	doc.Rows = usage.Sum(all, from, now, o.By == "host")
	if o.JSON {
		enc := json.NewEncoder(o.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return err
		}
		return job.Unreachable(inv)
	}
	// What a host said (a refused ledger's name and why, its users'
	// names, its stderr) is made one inert line first.
	for _, e := range warn {
		fmt.Fprintf(o.Stderr, "tfhive: warning: %s\n", wording.OneLine(e))
	}
	for _, r := range doc.Refused {
		fmt.Fprintf(o.Stderr, "tfhive: warning: %s\n", wording.OneLine(r))
	}
	if doc.Dropped > 0 {
		fmt.Fprintf(o.Stderr, "tfhive: warning: %s in the ledgers proved nothing (malformed, later than the file, or more GPUs than the host has): left out\n", wording.Count(doc.Dropped, "line"))
	}
	fmt.Fprintf(o.Stdout, "GPU use since %s (%s), from the hosts' ledgers\n", from.Format("2006-01-02 15:04"), usage.FormatSince(since))
	if err := view.WriteUsage(o.Stdout, strings.ToUpper(o.By), doc.Rows); err != nil {
		return err
	}
	return job.Unreachable(inv)
}

// readUsage runs usage.sh on one host: what its ledgers say, or why the
// host's answer is not believed (its script failed, or it said more than
// usage.HostLimit: it is stopped there).
func readUsage(ctx context.Context, ex remote.Executor, host string, from time.Time, ngpus int) (usage.Host, error) {
	secret := usage.NewSecret()
	s := usage.Script(from, secret)
	rc, out, errb, err := remote.RunBounded(ctx, ex, supervisor.Command, strings.NewReader(strconv.Itoa(len(s))+"\n"+s), usage.HostLimit, 4096)
	switch {
	case errors.Is(err, remote.ErrTooMuchOutput):
		return usage.Host{}, fmt.Errorf("%w: its usage ledgers are not read, its use is left out", err)
	case err != nil:
		return usage.Host{}, err
	case rc != 0 || !strings.HasPrefix(string(out), usage.Marker(secret)+"now "):
		msg := wording.FirstLine(strings.TrimSpace(string(errb)))
		if msg == "" {
			msg = fmt.Sprintf("exit %d", rc)
		}
		return usage.Host{}, fmt.Errorf("reading its usage ledgers failed: %s", msg)
	}
	return usage.Parse(host, string(out), secret, ngpus), nil
}
