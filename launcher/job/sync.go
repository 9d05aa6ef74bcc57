package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/codesync"
	"github.com/tfhive/tfhive/launcher/doctor"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/wording"
	"github.com/tfhive/tfhive/schedule"
)

// sync is --sync: the tree is made present on the plan's hosts, and only
// there (hosts without a task need no tree, nor their spare session).
func (r *run) sync(ctx context.Context, plan *schedule.Plan) error {
	if r.spec.Sync == nil {
		return nil
	}
	r.spec.Fleet.KeepSpares(plan.Hosts())
	var err error
	r.lo.Code, err = r.spec.Sync.Send(ctx, r.spec.Fleet, plan.Code)
	return err
}

// Syncer sends the tree to the hosts of each attempt's plan that lack it,
// and keeps what it sent across attempts for the summary.
type Syncer struct {
	Tree     *codesync.Tree
	Parallel int
	// Progress, when set, is told how the sending goes (a terminal's
	// line); Sent, once a send reached every host, how many got the tree
	// and how long it took.
	Progress func(codesync.Progress)
	Sent     func(hosts int, took time.Duration)
	sent     map[string]codesync.Result
	// Failed says why the last send could not reach a host.
	Failed map[string]string
}

// SyncError is a --sync tree that could not be sent to every host of the
// plan: no task was started.
type SyncError struct {
	Failed, Total int
	Lines         []string // one per host that failed
	Fix           string
}

func (e *SyncError) Error() string {
	return fmt.Sprintf("could not send the --sync tree to %d of %s", e.Failed, wording.Count(e.Total, "host"))
}

// Details has one line per host.
func (e *SyncError) Details() []string { return e.Lines }

// Hint says what may help.
func (e *SyncError) Hint() string { return e.Fix }

// Send makes the tree present on every host of code (a plan's): the probe
// said which have it; the others get it now, in parallel, over fleet's
// connections. The report is the summary's.
func (s *Syncer) Send(ctx context.Context, fleet Fleet, code *schedule.PlanCode) (*record.CodeReport, error) {
	if s.sent == nil {
		s.sent = map[string]codesync.Result{}
	}
	var targets []codesync.Target
	s.Failed = map[string]string{}
	execs := fleet.Executors()
	for _, h := range code.Hosts {
		if e, ok := execs[h.Host]; ok && !h.Present {
			targets = append(targets, codesync.Target{Host: h.Host, Exec: e})
		}
	}
	if len(targets) > 0 {
		if err := s.sendTo(ctx, targets); err != nil {
			return nil, err
		}
	}
	rep := &record.CodeReport{Hash: s.Tree.Hash, Bytes: s.Tree.Bytes, Files: s.Tree.Files, Hosts: []record.CodeHostReport{}}
	for _, h := range code.Hosts {
		hr := record.CodeHostReport{Host: h.Host, Dir: h.Dir}
		if r, ok := s.sent[h.Host]; ok {
			hr.Sent, hr.BytesSent, hr.Duration = true, r.Sent, r.Elapsed
			rep.Sent++
		}
		rep.Hosts = append(rep.Hosts, hr)
	}
	return rep, nil
}

func (s *Syncer) sendTo(ctx context.Context, targets []codesync.Target) error {
	start := time.Now()
	results := s.Tree.Send(ctx, targets, s.Parallel, s.Progress)
	if err := ctx.Err(); err != nil {
		return err
	}
	e := &SyncError{Total: len(targets)}
	sent := 0
	for _, r := range results {
		switch {
		case r.Err != nil:
			e.Failed++
			e.Lines = append(e.Lines, r.Host+": "+r.Err.Error())
			s.Failed[r.Host] = r.Err.Error()
			var ce *codesync.Error
			if errors.As(r.Err, &ce) {
				e.Fix = ce.Fix
			}
		case !r.Present:
			s.sent[r.Host] = r
			sent++
		}
	}
	if e.Failed > 0 {
		// One cause for all (the tree changed) is said once.
		if causes := trimHosts(e.Lines); e.Failed > 1 && len(slices.Compact(slices.Clone(causes))) == 1 {
			e.Lines = []string{strings.Join(hostsOf(e.Lines), ", ") + ": " + causes[0]}
		}
		return e
	}
	if sent > 0 && s.Sent != nil {
		s.Sent(sent, time.Since(start))
	}
	return nil
}

func trimHosts(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		_, out[i], _ = strings.Cut(l, ": ")
	}
	return out
}

func hostsOf(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i], _, _ = strings.Cut(l, ": ")
	}
	return out
}

// SendAll sends the tree to every reachable host of inv that lacks it
// (`tfhive doctor --sync`: no plan, every host) and says where it is on
// each, and why it is not on those it could not be sent to. Only an
// interruption is an error.
func (s *Syncer) SendAll(ctx context.Context, fleet Fleet, inv inventory.Inventory) (*doctor.Code, map[string]string, error) {
	failed := map[string]string{}
	code := &schedule.PlanCode{Code: schedule.Code{Hash: s.Tree.Hash, Bytes: s.Tree.Bytes, Files: s.Tree.Files}}
	for _, h := range inv.Hosts {
		switch {
		case h.Err != nil:
		case h.CodeDir == "":
			failed[h.Name] = "the host did not say where its code cache is"
		default:
			code.Hosts = append(code.Hosts, schedule.CodeHost{Host: h.Name, Dir: h.CodeDir, Present: h.CodePresent})
		}
	}
	if _, err := s.Send(ctx, fleet, code); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, nil, cerr
		}
		var se *SyncError
		if !errors.As(err, &se) {
			return nil, nil, err
		}
	}
	dc := &doctor.Code{Hash: s.Tree.Hash, Dirs: map[string]string{}}
	for _, h := range code.Hosts {
		if why, ok := s.Failed[h.Host]; ok {
			failed[h.Host] = why
		} else {
			dc.Dirs[h.Host] = h.Dir
		}
	}
	return dc, failed, nil
}
