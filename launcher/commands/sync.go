package commands

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tfhive/tfhive/launcher/codesync"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/view"
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

// newSyncer is run's and doctor's job.Syncer: on a terminal a line
// says how the sending goes; once it went, a line says where.
func newSyncer(tree *codesync.Tree, parallel int, stderr io.Writer) *job.Syncer {
	s := &job.Syncer{Tree: tree, Parallel: parallel, Sent: func(hosts int, took time.Duration) {
		fmt.Fprintf(stderr, "tfhive: sent code %s (%s, %s) to %s in %s\n", view.ShortHash(tree.Hash),
			wording.Count(tree.Files, "file"), view.Size(tree.Bytes), wording.Count(hosts, "host"), took.Round(time.Millisecond))
	}}
	if isTerminal(stderr) {
		s.Progress = func(p codesync.Progress) {
			if p.Done < p.Hosts {
				fmt.Fprintf(stderr, "\r\x1b[Ksending code: %d/%d hosts, %s of %s", p.Done, p.Hosts, view.Size(p.Sent), view.Size(p.Total))
			} else {
				fmt.Fprint(stderr, "\r\x1b[K")
			}
		}
	}
	return s
}
