package commands

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/tfhive/tfhive/launcher/codesync"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/keeper"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/hosts"
	"github.com/tfhive/tfhive/probe/localfile"
)

// `tfhive rerun RUN` runs a recorded run again, as it was, under a new id:
// the options its repro.json holds go through Run like any run's. Only
// what names, keeps and shows the new run may be given again (RerunOptions);
// what runs (the command, the hosts, the job) is the record's. Before
// anything on a host is touched, one line says each thing that is not as
// it was: the --sync tree's hash, the hosts the hosts file gives, the
// launch dir's git commit, tfhive's version, the directory.

// RerunOptions are `tfhive rerun`'s.
type RerunOptions struct {
	Streams
	// Run is the run to run again: an id of tfhive-runs here, or its log
	// dir (any argument with a /).
	Run string
	// Name and LogDir are the new run's (--name, --log-dir); "" for a new
	// id in tfhive-runs.
	Name, LogDir string
	// Detach and Wait, when not nil, replace the record's.
	Detach *bool
	Wait   *time.Duration
	Quiet  bool
	JSON   bool
	// Trust is --trust: run a record that someone else than the user (or
	// root) could have written, as it says.
	Trust bool
	// Signals: see RunOptions.
	Signals *job.Signals
	// Notify is --notify (see RunOptions): the record keeps no targets.
	Notify []string
}

// Rerun runs the recorded run again.
func Rerun(ctx context.Context, o RerunOptions) error {
	dir, id, err := rerunDir(o.Run)
	if err != nil {
		return err
	}
	rec, foreign, err := readRepro(dir, id, o.Trust)
	if err != nil {
		return err
	}
	ro := runOptionsOf(rec.Request)
	if len(ro.Job.Command) == 0 {
		return &UsageError{Msg: fmt.Sprintf("run %s: its record (%s) holds no run this tfhive can start", id, rundir.Repro)}
	}
	ro.Streams, ro.Signals = o.Streams, o.Signals
	ro.Job.Name, ro.LogDir = o.Name, o.LogDir
	ro.Quiet, ro.JSON, ro.Notify = o.Quiet, o.JSON, o.Notify
	if o.Detach != nil {
		ro.Detach = *o.Detach
	}
	switch {
	case !ro.Detach:
		ro.Unattended = 0
	case ro.Unattended == 0:
		ro.Unattended = DefaultUnattended
	}
	if o.Wait != nil {
		ro.Wait = *o.Wait
	}
	as := runAs{rerunOf: rec.RunID}
	if keeper.Mode() {
		// The first tfhive said what differs; its keeper runs the run.
		_, err := run(ctx, ro, as)
		return err
	}
	if o.Name != "" {
		// Before anything is compared: a bad --name is one line.
		if err := checkRunID("--name ", o.Name); err != nil {
			return err
		}
	}
	tree, err := ro.Job.prepareSync(o.LogDir, o.Stderr)
	if err != nil {
		return err
	}
	as.tree = tree
	if foreign != "" {
		fmt.Fprintf(o.Stderr, "tfhive: rerun of %s: %s\n", shown(id), foreign)
	}
	for _, line := range rerunDifferences(rec, ro, tree) {
		fmt.Fprintf(o.Stderr, "tfhive: %s\n", line)
	}
	_, err = run(ctx, ro, as)
	return err
}

// rerunDir is the log dir of the run the argument names, and its id.
func rerunDir(arg string) (dir, id string, err error) {
	if arg == "" {
		return "", "", &UsageError{Msg: "rerun takes the run to run again", Fix: "tfhive runs lists this directory's runs"}
	}
	if strings.Contains(arg, "/") {
		dir = filepath.Clean(arg)
		id = filepath.Base(dir)
	} else {
		if err := checkRunID("", arg); err != nil {
			return "", "", err
		}
		dir, id = rundir.Path(arg), arg
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		where := "in " + rundir.Root + " here"
		if dir != rundir.Path(id) {
			where = "at " + dir
		}
		return "", "", &UsageError{Msg: fmt.Sprintf("no run %s %s", id, where), Fix: "tfhive runs lists this directory's runs"}
	}
	return dir, id, nil
}

// readRepro reads a run's record, bounded; a missing one, or one of
// another format, is one line.
//
// A record runs as the user what it says: the command, the hosts file,
// the setup. One that someone else than the user or root could have
// written (repro.json or its log dir another user's, or writable by
// others: localfile.ReadOwned) is refused unless trust (--trust) says to
// run it anyway; foreign then says whose it is, for a line before the
// run. A flag rather than a y/N question: a detached rerun's keeper runs
// `tfhive rerun` again with the same command line and no terminal, and
// a flag in a script says once and for all whom it trusts.
func readRepro(dir, id string, trust bool) (r *record.Repro, foreign string, err error) {
	path := filepath.Join(dir, rundir.Repro)
	data, err := localfile.ReadOwned(path, record.MaxReproSize)
	var no *localfile.NotOwnedError
	if errors.As(err, &no) {
		if !trust {
			return nil, "", &UsageError{Msg: fmt.Sprintf("run %s's record %s refused: %s", shown(id), shown(path), no.Why),
				Fix: fmt.Sprintf("a rerun runs what its record says (the command, the hosts, the setup) as you, so only a record nobody else can have written is run; tfhive rerun --trust %s runs it anyway, if you trust who wrote it", shown(dir))}
		}
		foreign = fmt.Sprintf("--trust: its record %s runs as you, though %s", shown(path), no.Why)
		data, err = localfile.Read(path, record.MaxReproSize)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", &UsageError{Msg: fmt.Sprintf("run %s has no record of how it was started (%s): a tfhive before records, or a run that never started", id, rundir.Repro),
			Fix: "start it with tfhive run"}
	}
	if err != nil {
		return nil, "", &UsageError{Msg: fmt.Sprintf("run %s: its record cannot be read: %v", id, localfile.Describe(err))}
	}
	r, err = record.ReadRepro(data)
	var fe *record.ReproFormatError
	switch {
	case errors.As(err, &fe):
		return nil, "", &UsageError{Msg: fmt.Sprintf("run %s: its record is of format %d; this tfhive reads formats %d and %d", id, fe.Format, record.ReproFormatGoNames, record.ReproFormat),
			Fix: "rerun it with the tfhive that started it"}
	case err != nil:
		return nil, "", &UsageError{Msg: fmt.Sprintf("run %s: its record (%s) is not a record this tfhive reads", id, rundir.Repro)}
	}
	return r, foreign, nil
}

// rerunDifferences are the lines that say what is not as it was: one per
// thing, or one saying that all is.
func rerunDifferences(rec *record.Repro, ro RunOptions, tree *codesync.Tree) []string {
	id := shown(rec.RunID)
	var lines []string
	differs := func(what, then, now string) {
		lines = append(lines, fmt.Sprintf("rerun of %s: %s then %s, now %s", id, what, then, now))
	}
	var thenHash, nowHash string
	if rec.Code != nil {
		thenHash = rec.Code.Hash
	}
	if tree != nil {
		nowHash = tree.Hash
	}
	if thenHash != nowHash {
		differs("--sync tree", hashOrNone(thenHash), hashOrNone(nowHash))
	}
	if now, err := hosts.Load(hostsOptions(ro.Hosts)); err == nil {
		names := make([]string, len(now))
		for i, h := range now {
			names[i] = h.Name
		}
		if !slices.Equal(names, rec.Fleet) {
			differs("hosts", nameList(rec.Fleet), nameList(names))
		}
	}
	cwd, _ := os.Getwd()
	if g, then := codesync.GitState(cwd), rec.Git; gitWord(g) != gitWord(then) {
		differs("git commit", gitWord(then), gitWord(g))
	}
	if v := Version(); v != rec.Version {
		differs("tfhive", shown(rec.Version), v)
	}
	if cwd != rec.LaunchDir {
		differs("launch dir", shown(rec.LaunchDir), cwd)
	}
	if len(lines) == 0 {
		lines = append(lines, fmt.Sprintf("rerun of %s: the --sync tree, the hosts, the git commit and tfhive are as they were", id))
	}
	return lines
}

func hashOrNone(h string) string {
	if h == "" {
		return "none"
	}
	return shown(view.ShortHash(h))
}

// nameList writes a few names, then how many there are.
func nameList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	const few = 6
	out := make([]string, 0, few)
	for _, n := range names[:min(len(names), few)] {
		out = append(out, shown(n))
	}
	s := strings.Join(out, ",")
	if len(names) > few {
		s += fmt.Sprintf(",… (%d)", len(names))
	}
	return s
}

func gitWord(g *record.ReproGit) string {
	if g == nil {
		return "none"
	}
	s := shown(view.ShortHash(g.Commit))
	if g.Dirty != nil && *g.Dirty {
		s += " (dirty)"
	}
	return s
}

// shown is a value read from a record as it may be printed: quoted when
// it holds anything but printable characters.
func shown(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) || r == ' ' {
			return strconv.Quote(s)
		}
	}
	if len(s) > 200 {
		return strconv.Quote(s[:200]) + "…"
	}
	return s
}
