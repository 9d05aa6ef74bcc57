package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/codesync"
	"github.com/tfhive/tfhive/launcher/doctor"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/wording"
	"github.com/tfhive/tfhive/schedule"
)

// prepareSync lists and hashes the --sync tree, before any host is
// touched: a symlink out of it, an unreadable file or a bad pattern is a
// usage error. nil without --sync. The log root in the launch directory
// (tfhive-runs) is never part of the tree, nor is the run's --log-dir
// (logDir, "" when not given).
func (j Job) prepareSync(logDir string, stderr io.Writer) (*codesync.Tree, error) {
	return prepareSync(j.Sync, j.SyncExclude, logDir, stderr)
}

func prepareSync(dir string, excludes []string, logDir string, stderr io.Writer) (*codesync.Tree, error) {
	if dir == "" {
		if len(excludes) > 0 {
			return nil, &UsageError{Msg: "--sync-exclude without --sync", Fix: "add --sync DIR: --sync-exclude leaves paths of DIR out"}
		}
		return nil, nil
	}
	leave := []string{rundir.Root}
	if logDir != "" {
		leave = append(leave, logDir)
	}
	tree, err := codesync.Prepare(dir, excludes, leave, func(msg string) { fmt.Fprintf(stderr, "tfhive: warning: %s\n", msg) })
	var e *codesync.Error
	if errors.As(err, &e) {
		return nil, &UsageError{Msg: e.Msg, Fix: e.Fix}
	}
	return tree, err
}

// codeOf is the request's view of the tree.
func codeOf(tree *codesync.Tree) *schedule.Code {
	if tree == nil {
		return nil
	}
	return &schedule.Code{Hash: tree.Hash, Bytes: tree.Bytes, Files: tree.Files}
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

// syncer sends the tree to the hosts of each attempt's plan that lack it,
// and keeps what it sent across attempts for the summary.
type syncer struct {
	tree     *codesync.Tree
	fleet    *probe.Fleet
	parallel int
	stderr   io.Writer
	sent     map[string]codesync.Result
	// failed says why the last send could not reach a host.
	failed map[string]string
}

func newSyncer(tree *codesync.Tree, fleet *probe.Fleet, parallel int, stderr io.Writer) *syncer {
	return &syncer{tree: tree, fleet: fleet, parallel: parallel, stderr: stderr, sent: map[string]codesync.Result{}}
}

// send makes the tree present on every host of code (a plan's): the probe
// said which have it; the others get it now, in parallel. The report is
// the summary's.
func (s *syncer) send(ctx context.Context, code *schedule.PlanCode) (*record.CodeReport, error) {
	var targets []codesync.Target
	s.failed = map[string]string{}
	for _, h := range code.Hosts {
		if h.Present {
			continue
		}
		for i, fh := range s.fleet.Hosts {
			if fh.Name == h.Host {
				targets = append(targets, codesync.Target{Host: h.Host, Exec: s.fleet.Executor(i)})
			}
		}
	}
	if len(targets) > 0 {
		if err := s.sendTo(ctx, targets); err != nil {
			return nil, err
		}
	}
	rep := &record.CodeReport{Hash: s.tree.Hash, Bytes: s.tree.Bytes, Files: s.tree.Files, Hosts: []record.CodeHostReport{}}
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

func (s *syncer) sendTo(ctx context.Context, targets []codesync.Target) error {
	var progress func(codesync.Progress)
	if isTerminal(s.stderr) {
		progress = func(p codesync.Progress) {
			if p.Done < p.Hosts {
				fmt.Fprintf(s.stderr, "\r\x1b[Ksending code: %d/%d hosts, %s of %s", p.Done, p.Hosts, view.Size(p.Sent), view.Size(p.Total))
			} else {
				fmt.Fprint(s.stderr, "\r\x1b[K")
			}
		}
	}
	start := time.Now()
	results := s.tree.Send(ctx, targets, s.parallel, progress)
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
			s.failed[r.Host] = r.Err.Error()
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
	if sent > 0 {
		fmt.Fprintf(s.stderr, "tfhive: sent code %s (%s, %s) to %s in %s\n", view.ShortHash(s.tree.Hash),
			wording.Count(s.tree.Files, "file"), view.Size(s.tree.Bytes), wording.Count(sent, "host"), time.Since(start).Round(time.Millisecond))
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

// codeDirs is where a plan's tree is, for the doctor's check.
func codeDirs(code *schedule.PlanCode) *doctor.Code {
	if code == nil {
		return nil
	}
	dc := &doctor.Code{Hash: code.Hash, Dirs: map[string]string{}}
	for _, h := range code.Hosts {
		dc.Dirs[h.Host] = h.Dir
	}
	return dc
}
