package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/launcher/keeper"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/hosttest"
	"github.com/tfhive/tfhive/schedule"
)

// `run --detach` starts this very binary again as the run's keeper
// (detach.go): in a test, the test binary. TestMain plays tfhive's part
// there: keeperTestEnv holds the keeper's options and fake hosts (a
// function cannot go through the environment), and it runs the run and
// exits with its code as tfhive's main would.
const keeperTestEnv = "TFHIVE_TEST_KEEPER"

// keeperSpec is what a test's keeper needs: its fake hosts (their
// directories: the same hosts) and the run's options but Dial.
type keeperSpec struct {
	Hosts      []hosttest.Profile
	Dirs       []string
	Job        Job
	Grace      time.Duration
	Reconnect  time.Duration
	Unattended time.Duration
}

func TestMain(m *testing.M) {
	if keeper.Mode() {
		os.Exit(testKeeper())
	}
	os.Exit(m.Run())
}

// testKeeper is the keeper's tfhive: Run with the spec's options.
func testKeeper() int {
	var spec keeperSpec
	if err := json.Unmarshal([]byte(os.Getenv(keeperTestEnv)), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "tfhive: error: %s: %v\n", keeperTestEnv, err)
		return 1
	}
	fleet := &hosttest.Fleet{}
	for i, p := range spec.Hosts {
		fleet.Hosts = append(fleet.Hosts, &hosttest.Host{Profile: p, Dir: spec.Dirs[i]})
	}
	err := Run(context.Background(), RunOptions{
		Streams: Streams{Stdout: os.Stdout, Stderr: os.Stderr},
		Hosts: HostOptions{Hosts: []string{fleet.Names()}, SSHConfig: "/dev/null", ConnectTimeout: 5 * time.Second,
			CommandTimeout: 10 * time.Second, Parallel: 8, Dial: fleet.Dial},
		Job: spec.Job, Grace: spec.Grace, Reconnect: spec.Reconnect, Unattended: spec.Unattended, Detach: true,
	})
	var rf *RunFailedError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &rf):
		return rf.Summary.ExitCode
	case errors.As(err, new(*schedule.CapacityError)):
		fmt.Fprintf(os.Stderr, "tfhive: error: %v\n", err)
		return 3
	default:
		fmt.Fprintf(os.Stderr, "tfhive: error: %v\n", err)
		return 1
	}
}

// detach runs `run --detach` for j on the bed: the keeper is told the
// same options through keeperTestEnv. It returns run's error and options.
func (b *bed) detach(o *out, j Job) (RunOptions, error) {
	b.t.Helper()
	ro := b.runOptions(o.streams(), j)
	ro.Detach, ro.Unattended = true, DefaultUnattended
	spec := keeperSpec{Job: j, Grace: ro.Grace, Reconnect: ro.Reconnect, Unattended: ro.Unattended}
	for _, h := range b.fleet.Hosts {
		spec.Hosts, spec.Dirs = append(spec.Hosts, h.Profile), append(spec.Dirs, h.Dir)
	}
	data, err := json.Marshal(spec)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Setenv(keeperTestEnv, string(data))
	return ro, Run(context.Background(), ro)
}

// run --detach returns once the tasks run, with the run id on stdout; the
// keeper carries the run to its end: ps shows it kept, wait gives its
// code, logs every line of a task, attach the console from the start,
// runs lists it.
func TestDetachOnFakeHosts(t *testing.T) {
	b := twoHosts(t)
	flag := filepath.Join(b.dir, "go-on")
	var o out
	ro, err := b.detach(&o, fakeJob("kept", 2, `seq 1 500; while [ ! -e `+flag+` ]; do sleep 0.05; done; seq 501 1000`))
	if err != nil {
		t.Fatalf("run --detach: %v\n%s", err, o.stderr.String())
	}
	if id := o.stdout.String(); id != "kept\n" {
		t.Fatalf("stdout %q, want the run id alone", id)
	}
	contains(t, "stderr", o.stderr.String(), "tfhive: run kept started, detached; logs in "+ro.LogDir, "tfhive attach kept")

	// The keeper is heard from on every host a moment after the start.
	var ps out
	eventually(t, "ps says the run runs, kept", func() bool {
		ps = out{}
		if err := Ps(context.Background(), PsOptions{Streams: ps.streams(), Hosts: b.hosts, JSON: true}); err != nil {
			t.Fatal(err)
		}
		var doc struct{ Runs []view.RunOnHost }
		json.Unmarshal(ps.stdout.Bytes(), &doc)
		ok := len(doc.Runs) == 2
		for _, r := range doc.Runs {
			ok = ok && r.RunID == "kept" && r.State == hostops.RunRunning && r.Keeper != nil && *r.Keeper
		}
		return ok
	})
	// logs without -f: what the console holds so far, and returns (the
	// keeper says the run started once it told the first tfhive).
	var l out
	eventually(t, "logs shows the run's start", func() bool {
		l = out{}
		if err := Logs(context.Background(), FollowOptions{Streams: l.streams(), RunID: "kept", LogDir: ro.LogDir}); err != nil {
			t.Fatalf("logs: %v", err)
		}
		return strings.Contains(l.stdout.String(), "tfhive: run kept: 2 tasks on 2 hosts")
	})

	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var w out
	if err := Wait(context.Background(), FollowOptions{Streams: w.streams(), RunID: "kept", LogDir: ro.LogDir}); err != nil {
		t.Fatalf("wait: %v", err)
	}
	l = out{}
	if err := Logs(context.Background(), FollowOptions{Streams: l.streams(), RunID: "kept", LogDir: ro.LogDir, Task: "worker:1", Follow: true}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(l.stdout.String(), "\n"), "\n")
	if len(lines) != 1000 || lines[0] != "1" || lines[999] != "1000" {
		t.Errorf("logs --task worker:1: %d lines, first %q, last %q", len(lines), lines[0], lines[len(lines)-1])
	}
	var a out
	if err := Attach(context.Background(), FollowOptions{Streams: a.streams(), RunID: "kept", LogDir: ro.LogDir}); err != nil {
		t.Fatalf("attach: %v", err)
	}
	contains(t, "attach", a.stdout.String(), "[worker:0 a", "] 1000\n", "run kept succeeded")
	var r out
	if err := Runs(context.Background(), RunsOptions{Streams: r.streams(), LogRoot: filepath.Dir(ro.LogDir)}); err != nil {
		t.Fatalf("runs: %v", err)
	}
	contains(t, "runs", r.stdout.String(), "kept", "succeeded")

	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"logs of no such task", Logs(context.Background(), FollowOptions{Streams: o.streams(), RunID: "kept", LogDir: ro.LogDir, Task: "ps:3"}), "run kept has no task ps:3"},
		{"wait for no such run", Wait(context.Background(), FollowOptions{Streams: o.streams(), RunID: "nosuch", LogDir: filepath.Join(b.dir, "nosuch")}), "no run nosuch in "},
		{"attach with --capture", Attach(context.Background(), FollowOptions{Streams: o.streams(), RunID: "kept", Capture: []string{"loss=x"}}), "--capture is for attach -H"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, c.err, c.want)
		}
	}
}

// A detached run whose worker fails: wait returns the run's failure, its
// code the worker's.
func TestDetachWaitGivesTheRunsCodeOnFakeHosts(t *testing.T) {
	b := twoHosts(t)
	var o out
	ro, err := b.detach(&o, fakeJob("fails", 2, `sleep 0.3; [ "$TFHIVE_TASK" = worker:1 ] && exit 9; exit 0`))
	if err != nil {
		t.Fatalf("run --detach: %v\n%s", err, o.stderr.String())
	}
	err = Wait(context.Background(), FollowOptions{Streams: o.streams(), RunID: "fails", LogDir: ro.LogDir})
	rf := errAs[*RunFailedError](t, err)
	if rf.Summary.ExitCode != 9 || !strings.Contains(err.Error(), "run fails failed: worker:1 on b exited 9") {
		t.Errorf("wait: %v (%+v)", err, rf.Summary)
	}
}

// A detached run that cannot start exits with the keeper's code, having
// shown what it said; no log dir is left behind.
func TestDetachThatCannotStartOnFakeHosts(t *testing.T) {
	b := twoHosts(t)
	var o out
	j := fakeJob("toobig", 9, "true")
	j.GPUsPerWorker = 1
	ro, err := b.detach(&o, j)
	if e := errAs[*ExitError](t, err); e.Code != 3 {
		t.Errorf("exit %d, want 3 (capacity)\n%s", e.Code, o.stderr.String())
	}
	contains(t, "stderr", o.stderr.String(), "tfhive: error: ")
	if _, err := os.Stat(ro.LogDir); !os.IsNotExist(err) {
		t.Errorf("log dir left behind: %v", err)
	}
}
