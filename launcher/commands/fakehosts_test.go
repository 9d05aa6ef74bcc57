package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/probe/hosttest"
	"github.com/tfhive/tfhive/schedule"
)

// The tests of this file and the other *_fake_test.go files drive the
// commands end to end, in process, on fake hosts (probe/hosttest) reached
// through HostOptions.Dial: no sshd, no SSH. They mirror what
// launcher/e2e asserts over real sshd, faster; what only SSH shows
// (dropped links, sessions, keys) stays there.

// bed is a test's fake hosts and what a command needs to reach them.
type bed struct {
	t     *testing.T
	fleet *hosttest.Fleet
	hosts HostOptions
	dir   string // the test's own directory: log dirs, marks
}

// newBed starts fake hosts; each profile without GPUs gets two.
func newBed(t *testing.T, ps ...hosttest.Profile) *bed {
	t.Helper()
	f := hosttest.Start(t, ps...)
	return &bed{t: t, fleet: f, dir: t.TempDir(), hosts: HostOptions{
		Hosts: []string{f.Names()}, SSHConfig: "/dev/null",
		ConnectTimeout: 5 * time.Second, CommandTimeout: 10 * time.Second, Parallel: 8,
		Dial: f.Dial,
	}}
}

// twoHosts is a bed of hosts a and b, with two idle GPUs each.
func twoHosts(t *testing.T) *bed {
	return newBed(t, hosttest.Profile{Name: "a", GPUs: 2}, hosttest.Profile{Name: "b", GPUs: 2})
}

// out is what a command printed.
type out struct{ stdout, stderr bytes.Buffer }

func (o *out) streams() Streams { return Streams{Stdout: &o.stdout, Stderr: &o.stderr} }

// syncOut is out for a command that runs in a goroutine of its own.
type syncOut struct {
	mu             sync.Mutex
	stdout, stderr bytes.Buffer
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (o *syncOut) streams() Streams {
	return Streams{Stdout: lockedWriter{&o.mu, &o.stdout}, Stderr: lockedWriter{&o.mu, &o.stderr}}
}

func (o *syncOut) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return "stdout:\n" + o.stdout.String() + "stderr:\n" + o.stderr.String()
}

// fakeJob is a tf job of n CPU workers running script with sh.
func fakeJob(name string, workers int, script string) Job {
	return Job{Framework: schedule.FrameworkTF, Workers: workers, Strategy: schedule.StrategySpread,
		PortRange: "42000-42999", Name: name, Command: []string{"sh", "-c", script},
		Availability: Availability{MaxUtilPct: schedule.DefaultMaxUtilPct, MaxMemMiB: schedule.DefaultMaxMemMiB}}
}

// runOptions are run's for j on the bed, its log dir the test's.
func (b *bed) runOptions(s Streams, j Job) RunOptions {
	return RunOptions{Streams: s, Hosts: b.hosts, Job: j,
		LogDir: filepath.Join(b.dir, "logs", j.Name), Grace: 2 * time.Second, Reconnect: DefaultReconnect}
}

// summary reads the summary.json a run wrote in its log dir.
func summary(t *testing.T, dir string) record.Summary {
	t.Helper()
	var s record.Summary
	data, err := os.ReadFile(filepath.Join(dir, rundir.Summary))
	if err == nil {
		err = json.Unmarshal(data, &s)
	}
	if err != nil {
		t.Fatalf("summary: %v", err)
	}
	return s
}

func task(s record.Summary, id string) record.TaskResult {
	for _, tr := range s.Tasks {
		if tr.ID == id {
			return tr
		}
	}
	return record.TaskResult{}
}

func contains(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

// eventually polls cond every 20 ms for up to 15 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventuallySaying(t, what, cond, func() string { return "" })
}

// eventuallySaying is eventually, saying what last shows on failure.
func eventuallySaying(t *testing.T, what string, cond func() bool, last func() string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 15s\n%s", what, last())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// errAs is errors.As for a test: err must be a T.
func errAs[T error](t *testing.T, err error) T {
	t.Helper()
	var target T
	if !errors.As(err, &target) {
		t.Fatalf("error %T %v, want a %T", err, err, target)
	}
	return target
}

// background runs a command in a goroutine; wait returns its error.
func background(f func(context.Context) error) (cancel func(), wait func() error) {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	return stop, func() error {
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			stop()
			return errors.New("still running after 30s")
		}
	}
}
