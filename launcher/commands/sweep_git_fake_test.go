package commands

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A sweep learns its launch dir's git state once for all its trials, and
// each trial's record has it: git is a process (two) a trial otherwise.
func TestSweepReadsGitOnce(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git here")
	}
	b := twoHosts(t)
	t.Chdir(b.dir)
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "x"}} {
		if out, err := exec.Command(gitBin, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	head, _ := exec.Command(gitBin, "rev-parse", "HEAD").Output()
	shims := t.TempDir()
	log := filepath.Join(shims, "git.log")
	shim := "#!/bin/sh\necho \"$1\" >>" + log + "\nexec " + gitBin + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(shims, "git"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", shims+":"+os.Getenv("PATH"))
	sweepSix(t, b, "gitonce")
	calls, _ := os.ReadFile(log)
	if n := strings.Count(string(calls), "rev-parse"); n != 1 {
		t.Errorf("git rev-parse ran %d times for 6 trials, want 1", n)
	}
	repros, _ := filepath.Glob(filepath.Join(b.dir, "tfhive-runs", "gitonce-*", "repro.json"))
	if len(repros) != 6 {
		t.Fatalf("%d trials' repro.json, want 6", len(repros))
	}
	for _, p := range repros {
		data, _ := os.ReadFile(p)
		var r struct {
			Git *struct {
				Commit string `json:"commit"`
			} `json:"git"`
		}
		if err := json.Unmarshal(data, &r); err != nil || r.Git == nil || r.Git.Commit != strings.TrimSpace(string(head)) {
			t.Errorf("%s: git %+v (%v), want commit %s", p, r.Git, err, head)
		}
	}
}
