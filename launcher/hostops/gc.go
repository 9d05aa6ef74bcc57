package hostops

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/shscript"
	"github.com/tfhive/tfhive/probe/wording"
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
	var out, errb bytes.Buffer
	rc, err := ex.Run(ctx, supervisorCommand, strings.NewReader(strconv.Itoa(len(s))+"\n"+s), &out, &errb)
	rep := parseRunsGC(out.String())
	if err != nil {
		return rep, err
	}
	if rc != 0 || rep.Dir == "" {
		msg := wording.FirstLine(strings.TrimSpace(errb.String()))
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
