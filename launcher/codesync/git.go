package codesync

import (
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
)

// The launch dir's git state, recorded beside the --sync tree's hash
// (repro.json) and compared by `tfhive rerun`: the code that ran, as git
// names it.

// gitTimeout bounds the two git commands run in the launch dir.
const gitTimeout = 3 * time.Second

var commitRE = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// GitState is dir's git commit and whether its work tree differs from it
// (untracked files count: a new script is part of what ran; tfhive-runs
// here does not); nil outside
// a work tree, without git, or when git does not answer in time.
func GitState(dir string) *record.ReproGit {
	if dir == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	git := func(out io.Writer, args ...string) error {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, out, nil
		// No lock taken for a refreshed index, never a prompt.
		cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0")
		cmd.WaitDelay = time.Second
		return cmd.Run()
	}
	var head strings.Builder
	if err := git(&limitWriter{w: &head, n: 128}, "rev-parse", "--verify", "-q", "HEAD"); err != nil {
		return nil
	}
	commit := strings.TrimSpace(head.String())
	if !commitRE.MatchString(commit) {
		return nil
	}
	g := &record.ReproGit{Commit: commit}
	changes := &countWriter{w: io.Discard}
	// The whole work tree, but for the runs' own log dirs here.
	if err := git(changes, "status", "--porcelain", "--", ":/", ":!"+rundir.Root); err == nil {
		dirty := changes.n > 0
		g.Dirty = &dirty
	}
	return g
}

// limitWriter keeps the first n bytes and drops the rest.
type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if k := min(len(p), l.n); k > 0 {
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
