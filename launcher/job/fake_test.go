package job

import (
	"bytes"
	"context"
	"os/user"
	"sync"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/hosttest"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/schedule"
)

// The tests of this package run jobs on fake hosts (probe/hosttest: their
// scripts run in this process's shells, no sshd) through a testFleet,
// with the engine's start scripted (Hooks.Start): what the steps decide
// and in which order, not what the tasks do, which launcher's and
// commands' tests cover.

// testFleet is a probe.Fleet of fake hosts as a job.Fleet, which records
// what the job asked of it; edit, when set, changes each probe's answer.
type testFleet struct {
	f      *probe.Fleet
	hosts  *hosttest.Fleet
	mu     sync.Mutex
	probes int
	spares [][]string
	left   []string
	edit   func(n int, inv *inventory.Inventory)
}

func newTestFleet(t *testing.T, ps ...hosttest.Profile) *testFleet {
	t.Helper()
	hf := hosttest.Start(t, ps...)
	me, _ := user.Current()
	var hosts []inventory.Host
	for _, p := range ps {
		hosts = append(hosts, inventory.Host{Name: p.Name, Address: p.Name, User: me.Username})
	}
	f := probe.NewFleet(hosts, probe.Options{Dial: hf.Dial, CommandTimeout: 10 * time.Second, Parallel: 4})
	t.Cleanup(f.Close)
	return &testFleet{f: f, hosts: hf}
}

func (t *testFleet) Probe(ctx context.Context) (inventory.Inventory, error) {
	inv := t.f.Probe(ctx)
	t.mu.Lock()
	t.probes++
	n, edit := t.probes, t.edit
	t.mu.Unlock()
	if edit != nil {
		edit(n, &inv)
	}
	return inv, ctx.Err()
}

func (t *testFleet) Executors() map[string]remote.Executor {
	m := map[string]remote.Executor{}
	for i, h := range t.f.Hosts {
		if e := t.f.Executor(i); e != nil {
			m[h.Name] = e
		}
	}
	return m
}

func (t *testFleet) KeepSpares(hosts []string) {
	t.mu.Lock()
	t.spares = append(t.spares, hosts)
	t.mu.Unlock()
	t.f.KeepSpares(hosts)
}

func (t *testFleet) Leave(host, why string) {
	t.mu.Lock()
	t.left = append(t.left, host)
	t.mu.Unlock()
	t.f.Leave(host, why)
}

func (t *testFleet) NoProgress() { t.f.NoProgress() }

// safeBuffer is a buffer many goroutines write.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testJob is a job of run id, its workers a GPU each, on f; console and
// notes are what it says.
type testJob struct {
	spec           Spec
	console, notes *safeBuffer
}

func newTestJob(t *testing.T, f *testFleet, id string, workers int) *testJob {
	req := schedule.NewRequest()
	req.RunID, req.Workers, req.GPUsPerWorker, req.Command = id, workers, 1, []string{"true"}
	j := &testJob{console: &safeBuffer{}, notes: &safeBuffer{}}
	j.spec = Spec{Request: req, Fleet: f, Notes: j.notes, Engine: launcher.Options{
		LogDir: t.TempDir(), Console: launcher.NewConsole(j.console, false)}}
	return j
}

// starts is a scripted Hooks.Start: each call takes the next of its
// answers (the last again when they are spent) after telling the job
// that every task started; plans are the plans it was given.
type starts struct {
	mu      sync.Mutex
	answers []func(launcher.Options) (*record.Summary, error)
	calls   []launcher.Options
}

func (s *starts) start(_ context.Context, lo launcher.Options) (*record.Summary, error) {
	s.mu.Lock()
	s.calls = append(s.calls, lo)
	a := s.answers[min(len(s.calls), len(s.answers))-1]
	s.mu.Unlock()
	sum, err := a(lo)
	if err == nil && lo.Started != nil {
		lo.Started()
	}
	return sum, err
}

func (s *starts) n() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

// succeeded is a start whose tasks all succeed.
func succeeded(lo launcher.Options) (*record.Summary, error) {
	return &record.Summary{RunID: lo.Plan.RunID, Result: record.ResultSucceeded}, nil
}

// eventually waits, without a fixed sleep, until cond holds (10s at most).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
