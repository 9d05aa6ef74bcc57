package hostops

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/claim"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/shscript"
)

// KillResult is what `tfhive kill` did on one host.
type KillResult struct {
	Host  string
	RunID string // a sweep's kill stops many runs
	Tasks int    // supervisors stopped
	Err   error
}

// Kill stops a run's tasks on every host where it holds claims. It
// signals only what the kernel says belongs to the run: the supervisors
// whose parents are the run's claim holders (from /proc/locks) and whose
// own command line carries the run's label. Each supervisor then stops its
// task's process group, which only it knows: SIGTERM, and after grace a
// second SIGTERM, on which it kills the group. A signal the host refuses
// is reported as refused, never as stopped.
func Kill(ctx context.Context, runs []view.RunOnHost, execs map[string]remote.Executor, grace time.Duration, parallel int) []KillResult {
	results := make([]KillResult, len(runs))
	var g errgroup.Group
	g.SetLimit(max(parallel, 1))
	for i, r := range runs {
		g.Go(func() error {
			results[i] = KillResult{Host: r.Host, RunID: r.RunID}
			ex := execs[r.Host]
			switch {
			case ex == nil:
				results[i].Err = fmt.Errorf("no connection")
				return nil
			case len(r.Holders) == 0 || !claim.ValidRunID(r.RunID):
				results[i].Err = fmt.Errorf("its tasks are still starting; try again in a moment")
				return nil
			}
			rc, out, errb, err := remote.RunBounded(ctx, ex, "sh -s", strings.NewReader(killScript(r.RunID, r.Holders, grace)), maxLines, maxStderr)
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(lastLine(string(out)), "stopped ")))
			results[i].Tasks = n
			switch {
			case errors.Is(err, remote.ErrTooMuchOutput):
				results[i].Err = fmt.Errorf("%w: which of its tasks stopped is unknown", err)
			case err != nil:
				results[i].Err = err
			case rc == 3:
				results[i].Err = fmt.Errorf("its tasks are still starting or already gone; try again in a moment")
			case rc != 0:
				results[i].Err = fmt.Errorf("%s", strings.TrimSpace(strings.TrimPrefix(string(errb), "tfhive: ")))
			}
			return nil
		})
	}
	g.Wait()
	return results
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}

// killScript stops a run's supervisors on one host: the holders'
// children whose own command line carries the run's label
// (scripts/kill.sh).
func killScript(runID string, holders []int, grace time.Duration) string {
	return killSh.With(
		shscript.Set("run", runID),
		shscript.Set("holders", view.IntList(holders)),
		shscript.Set("tenths", strconv.Itoa(int(grace/(100*time.Millisecond)))),
	)
}

var killSh = shscript.Load(scripts, "scripts/kill.sh")
