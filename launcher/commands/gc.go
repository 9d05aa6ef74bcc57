package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tfhive/tfhive/launcher/codesync"
	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/wording"
)

// GCOptions are `tfhive gc`'s.
type GCOptions struct {
	Streams
	Hosts HostOptions
	// OlderThan is --older-than, nil when it was not given: gc keeps the
	// trees used more recently than this (at least codesync.MinKeep; 0
	// without it) and the ended runs' files touched more recently
	// (hostops.RunRetention without it; 0 keeps none).
	OlderThan *time.Duration
	DryRun    bool
	JSON      bool
}

// GC removes, on every host, the --sync trees nothing uses that were not
// used lately, and the files of this user's runs that ended longer ago
// than --older-than (hostops.RunRetention without it), never a running
// run's; it says how much space that freed and what it kept.
func GC(ctx context.Context, o GCOptions) error {
	treeKeep, runKeep := time.Duration(0), hostops.RunRetention
	if o.OlderThan != nil {
		if *o.OlderThan < 0 {
			return usagef("--older-than must not be negative")
		}
		treeKeep, runKeep = *o.OlderThan, *o.OlderThan
	}
	fleet, err := openFleet(o.Hosts, o.Stderr, probeClaims)
	if err != nil {
		return err
	}
	defer fleet.Close()
	inv, err := probeAll(ctx, fleet)
	if err != nil {
		return err
	}
	p := &gcPass{reports: make([]codesync.GCReport, len(fleet.Hosts)), runs: make([]hostops.RunsGCReport, len(fleet.Hosts)),
		errs: make([]error, len(fleet.Hosts)), sharedWith: make([]string, len(fleet.Hosts))}
	p.scan(ctx, fleet, inv, o, treeKeep, runKeep)
	if err := ctx.Err(); err != nil {
		return err
	}
	p.share(ctx, fleet, inv, o, treeKeep)
	if err := ctx.Err(); err != nil {
		return err
	}
	return o.report(inv, p, treeKeep, runKeep)
}

// gcJSON is `tfhive gc --json`'s document: per host what its cache held
// and what became of it, in bytes (du's, rounded to KiB).
type gcJSON struct {
	DryRun     bool         `json:"dry_run"`
	FreedBytes int64        `json:"freed_bytes"`
	Hosts      []gcHostJSON `json:"hosts"`
}

type gcHostJSON struct {
	Host string `json:"host"`
	// Dir is the host's cache; "" when gc did not get to say. CacheOf
	// names the host whose entry counts the cache when this one shares
	// it (one home): its trees are listed there only.
	Dir        string       `json:"dir"`
	CacheOf    string       `json:"cache_of,omitempty"`
	FreedBytes int64        `json:"freed_bytes"`
	KeptBytes  int64        `json:"kept_bytes"`
	Trees      []gcTreeJSON `json:"trees"`
	// RunsDir is the machine's directory of runs (~/.tfhive/runs-KEY);
	// Runs, the ended and running runs' files there.
	RunsDir        string      `json:"runs_dir"`
	RunsFreedBytes int64       `json:"runs_freed_bytes"`
	RunsKeptBytes  int64       `json:"runs_kept_bytes"`
	Runs           []gcRunJSON `json:"runs"`
	Error          string      `json:"error,omitempty"`
	Unreachable    bool        `json:"unreachable,omitempty"`
}

// gcRunJSON is one run's files on a host: State says why gc removes
// them (ended) or keeps them (running, recent, not_own); Removed, that
// it did (never with --dry-run).
type gcRunJSON struct {
	RunID   string `json:"run_id"`
	State   string `json:"state"`
	Bytes   int64  `json:"bytes"`
	Removed bool   `json:"removed"`
}

// gcRunStates name the launcher's kinds of run directory in the JSON.
var gcRunStates = map[byte]string{
	hostops.RunGone:   "ended",
	hostops.RunLive:   "running",
	hostops.RunNew:    "recent",
	hostops.RunNotOwn: "not_own",
}

// gcTreeJSON is one directory of a host's cache: State says why gc
// removes it (unused, unfinished) or keeps it (in_use, recent,
// underway); Removed, that it did (never with --dry-run).
type gcTreeJSON struct {
	Name    string `json:"name"`
	State   string `json:"state"`
	Bytes   int64  `json:"bytes"`
	Removed bool   `json:"removed"`
}

// gcStates name codesync's kinds in the JSON.
var gcStates = map[byte]string{
	codesync.Removed:  "unused",
	codesync.Stale:    "unfinished",
	codesync.InUse:    "in_use",
	codesync.Recent:   "recent",
	codesync.Underway: "underway",
}

// gcLine says what gc did on one host: "freed 1.2 GiB (3 trees); kept 2
// trees, 240.0 MiB: 1 in use, 1 used in the last 1m0s".
func gcLine(r codesync.GCReport, freed string, keep time.Duration) string {
	count := map[byte]int{}
	var kept int64
	for _, d := range r.Dirs {
		count[d.Kind]++
		if d.Kind != codesync.Removed && d.Kind != codesync.Stale {
			kept += d.KiB
		}
	}
	line := fmt.Sprintf("%s %s", freed, view.Size(r.Freed()*1024))
	var parts []string
	if n := count[codesync.Removed]; n > 0 {
		parts = append(parts, wording.Count(n, "tree"))
	}
	if n := count[codesync.Stale]; n > 0 {
		parts = append(parts, wording.Count(n, "unfinished transfer"))
	}
	if len(parts) > 0 {
		line += " (" + strings.Join(parts, ", ") + ")"
	}
	parts = nil
	if n := count[codesync.InUse]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d in use", n))
	}
	if n := count[codesync.Recent]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d used in the last %s", n, keep))
	}
	if n := count[codesync.Underway]; n > 0 {
		parts = append(parts, fmt.Sprintf("%s perhaps under way", wording.Count(n, "transfer")))
	}
	if len(parts) > 0 {
		line += fmt.Sprintf("; kept %s: %s", view.Size(kept*1024), strings.Join(parts, ", "))
	}
	if len(r.Dirs) == 0 {
		line += " (nothing in " + r.Dir + ")"
	}
	return line
}

// gcPass is what gc learned and did on each host, by the fleet's index:
// its --sync cache's report, its runs' and its error; sharedWith names
// the host whose cache (one home) it shares.
type gcPass struct {
	reports    []codesync.GCReport
	runs       []hostops.RunsGCReport
	errs       []error
	sharedWith []string
}

// scan lists, and takes away, what each host sees on its own.
func (p *gcPass) scan(ctx context.Context, fleet *probe.Fleet, inv inventory.Inventory, o GCOptions, treeKeep, runKeep time.Duration) {
	var g errgroup.Group
	g.SetLimit(max(o.Hosts.Parallel, 1))
	for i, h := range inv.Hosts {
		if h.Err != nil {
			continue
		}
		g.Go(func() error {
			// First only what each host sees: hosts that share one cache
			// (one home) each see only their own processes.
			p.reports[i], p.errs[i] = codesync.GC(ctx, fleet.Executor(i), treeKeep, true, nil)
			if p.errs[i] == nil {
				p.runs[i], p.errs[i] = hostops.GCRuns(ctx, fleet.Executor(i), runKeep, o.DryRun)
			}
			return nil
		})
	}
	g.Wait()
}

// share decides once for each cache that hosts share.
func (p *gcPass) share(ctx context.Context, fleet *probe.Fleet, inv inventory.Inventory, o GCOptions, treeKeep time.Duration) {
	// One cache, one verdict: a tree goes only if no host sharing the
	// cache uses it, removed by the first of them; the others' lines
	// say whose cache it is.
	var g errgroup.Group
	g.SetLimit(max(o.Hosts.Parallel, 1))
	first := map[string]int{}
	groups := map[int][]int{}
	for i, h := range inv.Hosts {
		if h.Err != nil || p.errs[i] != nil {
			continue
		}
		key := p.reports[i].Home
		if key == "" {
			key = "host " + h.Name
		}
		f, seen := first[key]
		if !seen {
			first[key], f = i, i
		} else {
			p.sharedWith[i] = inv.Hosts[f].Name
		}
		groups[f] = append(groups[f], i)
	}
	for f, members := range groups {
		g.Go(func() error {
			var rs []codesync.GCReport
			for _, i := range members {
				rs = append(rs, p.reports[i])
			}
			only, merged := codesync.Shared(rs)
			if !o.DryRun && len(only) > 0 {
				if _, err := codesync.GC(ctx, fleet.Executor(f), treeKeep, false, only); err != nil {
					p.errs[f] = err
				}
			}
			p.reports[f] = merged
			for _, i := range members[1:] {
				p.reports[i] = codesync.GCReport{Dir: merged.Dir, Home: merged.Home}
			}
			return nil
		})
	}
	g.Wait()
}

// report says, by host, what gc freed and kept, as lines or JSON.
func (o GCOptions) report(inv inventory.Inventory, p *gcPass, treeKeep, runKeep time.Duration) error {
	freed, hosts := "freed", 0
	if o.DryRun {
		freed = "would free"
	}
	var total int64
	var failed []string
	out := gcJSON{DryRun: o.DryRun, Hosts: []gcHostJSON{}}
	for i, h := range inv.Hosts {
		hj := gcHostJSON{Host: h.Name, Dir: p.reports[i].Dir, CacheOf: p.sharedWith[i], Trees: []gcTreeJSON{}}
		switch {
		case h.Err != nil:
			hj.Error, hj.Unreachable = h.Err.Message, true
		case p.errs[i] != nil:
			hj.Error = p.errs[i].Error()
			failed = append(failed, h.Name+": "+p.errs[i].Error())
		default:
			hosts++
			total += p.reports[i].Freed() + p.runs[i].Freed()
			if !o.JSON {
				if p.sharedWith[i] != "" {
					fmt.Fprintf(o.Stdout, "%s: its --sync cache is %s's (one home): counted there\n", h.Name, p.sharedWith[i])
				} else {
					fmt.Fprintf(o.Stdout, "%s: %s\n", h.Name, gcLine(p.reports[i], freed, max(treeKeep, codesync.MinKeep)))
				}
				fmt.Fprintf(o.Stdout, "%s: %s\n", h.Name, p.runs[i].Line(freed, runKeep))
			}
		}
		hj.RunsDir, hj.Runs = p.runs[i].Dir, []gcRunJSON{}
		for _, d := range p.runs[i].Runs {
			gone := d.Kind == hostops.RunGone
			hj.Runs = append(hj.Runs, gcRunJSON{RunID: d.Run, State: gcRunStates[d.Kind], Bytes: d.KiB * 1024, Removed: gone && !o.DryRun})
			if gone {
				hj.RunsFreedBytes += d.KiB * 1024
			} else {
				hj.RunsKeptBytes += d.KiB * 1024
			}
		}
		for _, d := range p.reports[i].Dirs {
			gone := d.Kind == codesync.Removed || d.Kind == codesync.Stale
			hj.Trees = append(hj.Trees, gcTreeJSON{Name: d.Name, State: gcStates[d.Kind], Bytes: d.KiB * 1024, Removed: gone && !o.DryRun})
			if gone {
				hj.FreedBytes += d.KiB * 1024
			} else {
				hj.KeptBytes += d.KiB * 1024
			}
		}
		out.Hosts = append(out.Hosts, hj)
	}
	out.FreedBytes = total * 1024 // trees and run files
	if o.JSON {
		enc := json.NewEncoder(o.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(o.Stdout, "tfhive: gc %s %s on %s\n", freed, view.Size(total*1024), wording.Count(hosts, "host"))
	}
	if len(failed) > 0 {
		return errors.New("gc failed on " + strings.Join(failed, "; "))
	}
	return job.Unreachable(inv)
}
