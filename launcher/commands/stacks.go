package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/stacks"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/wording"
)

// StacksOptions are `tfhive stacks`'s.
type StacksOptions struct {
	Streams
	Hosts  HostOptions
	RunID  string
	LogDir string // "": tfhive-runs/RUN_ID
	Native bool   // py-spy dump --native
}

// Stacks takes a run's tasks' stacks now, on every host where it holds
// claims (found as kill and ps find them: a kept or detached run too, one
// started elsewhere), all hosts at once over one connection each. They go
// into the run's log dir (stacks/ROLE-INDEX.txt) when it is here, else on
// stdout; a line per task says where it was.
func Stacks(ctx context.Context, o StacksOptions) error {
	if err := checkRunID("", o.RunID); err != nil {
		return err
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
	targets, execs, others := hostops.Targets(fleet, inv, o.RunID, map[string]bool{o.RunID: true})
	if len(targets) == 0 {
		if err := job.Unreachable(inv); err != nil {
			return err
		}
		if len(others) > 0 {
			return fmt.Errorf("run %s is not yours: %s; only they or root can read its stacks", o.RunID, strings.Join(others, "; "))
		}
		return fmt.Errorf("no run %s holds GPUs or ports on these hosts%s", o.RunID, fromSuffix(hostsFrom(o.Hosts)))
	}
	for _, other := range others {
		fmt.Fprintf(o.Stderr, "tfhive: warning: %s; left alone\n", other)
	}
	dir := o.LogDir
	if dir == "" {
		dir = rundir.Path(o.RunID)
	}
	planned, here := plannedTasks(dir)
	fmt.Fprintf(o.Stderr, "tfhive: taking the stacks of run %s on %s\n", o.RunID, wording.Count(len(execs), "host"))
	st, errs := stacks.Take(ctx, map[string]remote.Executor(execs), o.RunID, stacks.Options{Native: o.Native, Parallel: o.Hosts.Parallel, Planned: planned})
	for _, h := range slices.Sorted(mapKeys(errs)) {
		fmt.Fprintf(o.Stderr, "tfhive: warning: stacks on %s: %v\n", h, errs[h])
	}
	if len(st) == 0 {
		return errors.New("no task of run " + o.RunID + " was found running on its hosts")
	}
	if here {
		written, err := stacks.Write(dir, st, "run "+o.RunID+", taken on demand (tfhive stacks)\n")
		if err != nil {
			return err
		}
		for _, s := range st {
			fmt.Fprintf(o.Stdout, "%s on %s: %s\n", s.Task, s.Host, orUnknownWhere(s.Where))
		}
		fmt.Fprintf(o.Stdout, "tfhive: stacks in %s\n", written)
		return nil
	}
	for _, s := range st {
		fmt.Fprintf(o.Stdout, "==> %s on %s: %s\n%s\n", s.Task, s.Host, orUnknownWhere(s.Where), s.Text)
	}
	return nil
}

// plannedTasks reads the run's plan in its log dir dir, when it is here
// and safe to use (rundir.Check): by host, the tasks planned there. A
// plan.json over 16 MiB, or unreadable, leaves the hosts at their word.
func plannedTasks(dir string) (map[string][]string, bool) {
	if rundir.Check(dir) != nil {
		return nil, false
	}
	f, err := os.Open(filepath.Join(dir, rundir.Plan))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	var plan struct {
		Tasks []struct{ ID, Host string }
	}
	if json.NewDecoder(io.LimitReader(f, 16<<20)).Decode(&plan) != nil {
		return nil, true
	}
	m := map[string][]string{}
	for _, t := range plan.Tasks {
		m[t.Host] = append(m[t.Host], t.ID)
	}
	return m, true
}

func orUnknownWhere(w string) string {
	if w == "" {
		return "where unknown"
	}
	return w
}

func fromSuffix(from string) string {
	if from == "" {
		return ""
	}
	return " (" + from + ")"
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
