package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/codesync"
	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
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
	inv, err := job.ProbeAll(ctx, fleet)
	if err != nil {
		return err
	}
	execs := make([]remote.Executor, len(fleet.Hosts))
	for i := range fleet.Hosts {
		execs[i] = fleet.Executor(i)
	}
	p := hostops.GC(ctx, execs, inv, treeKeep, runKeep, o.DryRun, o.Hosts.Parallel)
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

// report says, by host, what gc freed and kept, as lines or JSON.
func (o GCOptions) report(inv inventory.Inventory, p *hostops.GCPass, treeKeep, runKeep time.Duration) error {
	freed, hosts := "freed", 0
	if o.DryRun {
		freed = "would free"
	}
	var total int64
	var failed []string
	out := gcJSON{DryRun: o.DryRun, Hosts: []gcHostJSON{}}
	for i, h := range inv.Hosts {
		hj := gcHostJSON{Host: h.Name, Dir: p.Reports[i].Dir, CacheOf: p.SharedWith[i], Trees: []gcTreeJSON{}}
		switch {
		case h.Err != nil:
			hj.Error, hj.Unreachable = h.Err.Message, true
		case p.Errs[i] != nil:
			hj.Error = p.Errs[i].Error()
			failed = append(failed, h.Name+": "+p.Errs[i].Error())
		default:
			hosts++
			total += p.Reports[i].Freed() + p.Runs[i].Freed()
			if !o.JSON {
				if p.SharedWith[i] != "" {
					fmt.Fprintf(o.Stdout, "%s: its --sync cache is %s's (one home): counted there\n", h.Name, p.SharedWith[i])
				} else {
					fmt.Fprintf(o.Stdout, "%s: %s\n", h.Name, hostops.TreesLine(p.Reports[i], freed, max(treeKeep, codesync.MinKeep)))
				}
				fmt.Fprintf(o.Stdout, "%s: %s\n", h.Name, p.Runs[i].Line(freed, runKeep))
			}
		}
		hj.RunsDir, hj.Runs = p.Runs[i].Dir, []gcRunJSON{}
		for _, d := range p.Runs[i].Runs {
			gone := d.Kind == hostops.RunGone
			hj.Runs = append(hj.Runs, gcRunJSON{RunID: d.Run, State: gcRunStates[d.Kind], Bytes: d.KiB * 1024, Removed: gone && !o.DryRun})
			if gone {
				hj.RunsFreedBytes += d.KiB * 1024
			} else {
				hj.RunsKeptBytes += d.KiB * 1024
			}
		}
		for _, d := range p.Reports[i].Dirs {
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
