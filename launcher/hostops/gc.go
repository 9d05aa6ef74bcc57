package hostops

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/codesync"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/shscript"
	"github.com/tfhive/tfhive/probe/wording"
	"golang.org/x/sync/errgroup"
)

// RunRetention is how long `tfhive gc` keeps an ended run's files on its
// hosts when --older-than is not given: a week of `tfhive logs -H`, as
// long as most labs' scratch policies keep a finished job's output.
const RunRetention = 7 * 24 * time.Hour

var gcRunsSh = shscript.Load(scripts, "scripts/rundir.sh", "scripts/gc-runs.sh")

// Kinds of run directory GCRuns reports (scripts/gc-runs.sh).
const (
	RunGone   = 'R' // ended, untouched for the keep time
	RunLive   = 'U' // a supervisor of it is alive
	RunNew    = 'N' // ended, touched within the keep time
	RunNotOwn = 'X' // not a directory of the user's own: left alone
)

// RunDir is one run's directory on a host.
type RunDir struct {
	Kind byte
	Run  string
	KiB  int64 // disk usage, as du -sk counts it
}

// RunsGCReport is what GCRuns found, and removed, on one host.
type RunsGCReport struct {
	Dir  string // the machine's directory of runs; "" if it could not say
	Runs []RunDir
}

// Freed is the disk space of what was (or, dry, would be) removed.
func (r RunsGCReport) Freed() int64 {
	var n int64
	for _, d := range r.Runs {
		if d.Kind == RunGone {
			n += d.KiB
		}
	}
	return n
}

// Line says what GCRuns did on a host, for gc's table: "freed 72 KiB
// (2 ended runs), kept 1 running, 1 ended in the last 168h0m0s".
func (r RunsGCReport) Line(freed string, keep time.Duration) string {
	count := map[byte]int{}
	for _, d := range r.Runs {
		count[d.Kind]++
	}
	line := fmt.Sprintf("run files: %s %s", freed, view.Size(r.Freed()*1024))
	if n := count[RunGone]; n > 0 {
		line += " (" + wording.Count(n, "ended run") + ")"
	}
	var kept []string
	if n := count[RunLive]; n > 0 {
		kept = append(kept, fmt.Sprintf("%d running", n))
	}
	if n := count[RunNew]; n > 0 {
		kept = append(kept, fmt.Sprintf("%d ended in the last %s", n, keepWords(keep)))
	}
	if n := count[RunNotOwn]; n > 0 {
		kept = append(kept, fmt.Sprintf("%d not yours alone (left alone)", n))
	}
	if len(kept) > 0 {
		line += ", kept " + strings.Join(kept, ", ")
	}
	return line
}

// TreesLine says what gc did of one host's --sync trees (r, codesync's
// report), as RunsGCReport.Line of its run files: "freed 1.2 GiB (3
// trees); kept 2 trees, 240.0 MiB: 1 in use, 1 used in the last 1m0s".
func TreesLine(r codesync.GCReport, freed string, keep time.Duration) string {
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

// GCRuns removes, on one host, the directories of this user's runs that
// ended and whose files nobody touched for keep (0: every ended run's);
// a running run's are never removed. dry removes nothing and reports the
// same.
func GCRuns(ctx context.Context, ex remote.Executor, keep time.Duration, dry bool) (RunsGCReport, error) {
	d := "0"
	if dry {
		d = "1"
	}
	s := gcRunsSh.With(
		shscript.Set("tfhive_mins", strconv.Itoa(max(int((keep+time.Minute-1)/time.Minute), 0))),
		shscript.Set("tfhive_dry", d),
	)
	rc, out, errb, err := remote.RunBounded(ctx, ex, supervisorCommand, strings.NewReader(strconv.Itoa(len(s))+"\n"+s), maxListing, maxStderr)
	rep := parseRunsGC(string(out))
	if errors.Is(err, remote.ErrTooMuchOutput) {
		return rep, fmt.Errorf("%w: which ended runs' files it removed is unknown", err)
	}
	if err != nil {
		return rep, err
	}
	if rc != 0 || rep.Dir == "" {
		msg := wording.FirstLine(strings.TrimSpace(string(errb)))
		if msg == "" {
			msg = fmt.Sprintf("exit %d", rc)
		}
		return rep, fmt.Errorf("removing ended runs' files failed: %s", msg)
	}
	return rep, nil
}

// parseRunsGC reads gc-runs.sh's output. Sizes are matched to the runs
// listed before them; a line of anything else is skipped.
func parseRunsGC(out string) RunsGCReport {
	var r RunsGCReport
	sizes := false
	byName := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "@@tfhive-gcruns "):
			r.Dir = strings.TrimPrefix(line, "@@tfhive-gcruns ")
		case line == "@@tfhive-du":
			sizes = true
		case sizes:
			kib, name, ok := strings.Cut(line, "\t")
			n, err := strconv.ParseInt(kib, 10, 64)
			if i, known := byName[name]; ok && err == nil && known {
				r.Runs[i].KiB = n
			}
		case len(line) > 2 && line[1] == ' ' && strings.IndexByte("RUNX", line[0]) >= 0:
			byName[line[2:]] = len(r.Runs)
			r.Runs = append(r.Runs, RunDir{Kind: line[0], Run: line[2:]})
		}
	}
	return r
}

// keepWords says a keep time as gc's line does: "7d", "1h0m", "30m".
func keepWords(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return view.ShortDuration(d)
}

// GCPass is what gc learned and did on each host, by the fleet's index:
// its --sync cache's report, its runs' and its error; SharedWith names
// the host whose cache (one home) it shares.
type GCPass struct {
	Reports    []codesync.GCReport
	Runs       []RunsGCReport
	Errs       []error
	SharedWith []string
}

// GC takes away, on every host inv reached (execs by its index), the
// --sync trees nothing uses that were not used for treeKeep, and the
// files of this user's runs that ended longer than runKeep ago; dryRun
// only says what would go.
func GC(ctx context.Context, execs []remote.Executor, inv inventory.Inventory, treeKeep, runKeep time.Duration, dryRun bool, parallel int) *GCPass {
	n := len(inv.Hosts)
	p := &GCPass{Reports: make([]codesync.GCReport, n), Runs: make([]RunsGCReport, n), Errs: make([]error, n), SharedWith: make([]string, n)}
	p.scan(ctx, execs, inv, treeKeep, runKeep, dryRun, parallel)
	if ctx.Err() == nil {
		p.share(ctx, execs, inv, treeKeep, dryRun, parallel)
	}
	return p
}

// scan lists, and takes away, what each host sees on its own.
func (p *GCPass) scan(ctx context.Context, execs []remote.Executor, inv inventory.Inventory, treeKeep, runKeep time.Duration, dryRun bool, parallel int) {
	var g errgroup.Group
	g.SetLimit(max(parallel, 1))
	for i, h := range inv.Hosts {
		if h.Err != nil {
			continue
		}
		g.Go(func() error {
			// First only what each host sees: hosts that share one cache
			// (one home) each see only their own processes.
			p.Reports[i], p.Errs[i] = codesync.GC(ctx, execs[i], treeKeep, true, nil)
			if p.Errs[i] == nil {
				p.Runs[i], p.Errs[i] = GCRuns(ctx, execs[i], runKeep, dryRun)
			}
			return nil
		})
	}
	g.Wait()
}

// share decides once for each cache that hosts share.
func (p *GCPass) share(ctx context.Context, execs []remote.Executor, inv inventory.Inventory, treeKeep time.Duration, dryRun bool, parallel int) {
	// One cache, one verdict: a tree goes only if no host sharing the
	// cache uses it, removed by the first of them; the others' lines
	// say whose cache it is.
	var g errgroup.Group
	g.SetLimit(max(parallel, 1))
	first := map[string]int{}
	groups := map[int][]int{}
	for i, h := range inv.Hosts {
		if h.Err != nil || p.Errs[i] != nil {
			continue
		}
		key := p.Reports[i].Home
		if key == "" {
			key = "host " + h.Name
		}
		f, seen := first[key]
		if !seen {
			first[key], f = i, i
		} else {
			p.SharedWith[i] = inv.Hosts[f].Name
		}
		groups[f] = append(groups[f], i)
	}
	for f, members := range groups {
		g.Go(func() error {
			var rs []codesync.GCReport
			for _, i := range members {
				rs = append(rs, p.Reports[i])
			}
			only, merged := codesync.Shared(rs)
			if !dryRun && len(only) > 0 {
				if _, err := codesync.GC(ctx, execs[f], treeKeep, false, only); err != nil {
					p.Errs[f] = err
				}
			}
			p.Reports[f] = merged
			for _, i := range members[1:] {
				p.Reports[i] = codesync.GCReport{Dir: merged.Dir, Home: merged.Home}
			}
			return nil
		})
	}
	g.Wait()
}
