package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// queueRun is a run whose tasks, once started, touch STARTED/NAME and
// hold their GPUs until DONE/NAME exists.
type queueRun struct {
	name string
	r    *running
}

type queueBed struct {
	t           *testing.T
	f           *sshtest.Fleet
	started, dn string
	// logDirs are the runs' log dirs, by name: their consoles say, when a
	// run did not start in its turn, what each run did meanwhile.
	logDirs map[string]string
	runs    map[string]*running
}

func newQueueBed(t *testing.T, f *sshtest.Fleet) *queueBed {
	d := t.TempDir()
	b := &queueBed{t: t, f: f, started: filepath.Join(d, "started"), dn: filepath.Join(d, "done"), logDirs: map[string]string{}, runs: map[string]*running{}}
	os.Mkdir(b.started, 0o755)
	os.Mkdir(b.dn, 0o755)
	return b
}

// start starts a run and returns once it runs (wait "", or a run that
// backfills), or once it says it waits (its tickets are then held).
func (b *queueBed) start(name, wait string, extra ...string) *queueRun {
	return b.startAs(name, wait, wait != "", extra...)
}

func (b *queueBed) startAs(name, wait string, waits bool, extra ...string) *queueRun {
	b.t.Helper()
	// Each task ends once the run's done file is there, or its own
	// (NAME-TASK: finishTasks).
	task := `touch ` + filepath.Join(b.started, name) + `; while [ ! -e ` + filepath.Join(b.dn, name) + ` ] && [ ! -e ` +
		filepath.Join(b.dn, name) + `-"$TFHIVE_TASK" ]; do sleep 0.1; done`
	args := []string{"--name", name}
	if wait != "" {
		args = append(args, "--wait", wait)
	}
	args = append(append(args, extra...), "--", "sh", "-c", task)
	a, logDir := runArgs(b.t, b.f, args...)
	b.logDirs[name] = logDir
	r := startTfhive(b.t, b.f, readStderr, a...)
	b.runs[name] = r
	if waits {
		if !r.readUntil(func(l string) bool { return strings.HasPrefix(l, "tfhive: waiting") }) {
			r.Wait()
			b.t.Fatalf("%s did not wait:\n%s%s", name, r.read.String(), r.other.String())
		}
	}
	r.discardRest()
	if !waits {
		b.waitStarted(name)
	}
	return &queueRun{name, r}
}

// startedNow lists the runs whose tasks have started.
func (b *queueBed) startedNow() []string {
	es, _ := os.ReadDir(b.started)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out
}

func (b *queueBed) waitStarted(names ...string) {
	b.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		now := b.startedNow()
		if !slices.ContainsFunc(names, func(n string) bool { return !slices.Contains(now, n) }) {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("waiting for %v to start; started: %v; queue: %v%s", names, now, queueOrder(b.t, b.f), b.consoles())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// consoles are the runs' console.log files, for a failure's message.
func (b *queueBed) consoles() string {
	var out strings.Builder
	names := slices.Sorted(maps.Keys(b.logDirs))
	for _, n := range names {
		if plan, err := os.ReadFile(filepath.Join(b.logDirs[n], "plan.json")); err == nil {
			var p struct{ Matrix json.RawMessage }
			json.Unmarshal(plan, &p)
			fmt.Fprintf(&out, "\n--- %s's plan's matrix: %s", n, p.Matrix)
		}
		data, err := os.ReadFile(filepath.Join(b.logDirs[n], "console.log"))
		fmt.Fprintf(&out, "\n--- %s's console (%v):\n%s--- its stderr, first and last lines:\n%s...\n%s", n, err, data, b.runs[n].read.String(), b.runs[n].lastLines())
	}
	return out.String()
}

// finishTasks ends those tasks of q alone.
func (b *queueBed) finishTasks(q *queueRun, tasks ...string) {
	for _, task := range tasks {
		os.WriteFile(filepath.Join(b.dn, q.name+"-"+task), nil, 0o644)
	}
}

func (b *queueBed) finish(q *queueRun) {
	b.t.Helper()
	os.WriteFile(filepath.Join(b.dn, q.name), nil, 0o644)
	if err := q.r.Wait(); err != nil {
		b.t.Errorf("%s: %v\n%s", q.name, err, q.r.other.String())
	}
}

// Six runs arriving one after the other (each once the one before holds
// its tickets), each asking 4 of the 8 GPUs a long run holds: as the
// GPUs free up they start in arrival order, two at a time, and never
// more than the GPUs allow (the rest stay queued, in order).
func TestQueueArrivalOrder(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	var ps []sshtest.Profile
	for _, n := range []string{"h1", "h2", "h3", "h4"} {
		ps = append(ps, sshtest.Profile{Name: n, GPU: "idle-2gpu.xml", AliveInterval: 1})
	}
	f := sshtest.Start(t, ps...)
	b := newQueueBed(t, f)
	long := b.start("long", "", "--workers", "4", "--gpus-per-worker", "2")
	var rs []*queueRun
	for _, n := range []string{"w1", "w2", "w3", "w4", "w5", "w6"} {
		rs = append(rs, b.start(n, "5m", "--workers", "2", "--gpus-per-worker", "2"))
	}
	if got := strings.Join(queueOrder(t, f), " "); got != "w1 w2 w3 w4 w5 w6" {
		t.Fatalf("queue: %s", got)
	}
	b.finish(long)
	for i := 0; i < len(rs); i += 2 {
		b.waitStarted(rs[i].name, rs[i+1].name)
		want := []string{"long"}
		for _, r := range rs[:i+2] {
			want = append(want, r.name)
		}
		slices.Sort(want)
		if got := b.startedNow(); !slices.Equal(got, want) {
			t.Fatalf("started: %v, want %v", got, want)
		}
		var rest []string
		for _, r := range rs[i+2:] {
			rest = append(rest, r.name)
		}
		if got := queueOrder(t, f); !slices.Equal(got, rest) {
			t.Fatalf("queue after %s and %s started: %v, want %v", rs[i].name, rs[i+1].name, got, rest)
		}
		b.finish(rs[i])
		b.finish(rs[i+1])
	}
}

// A low run behind a waiting one starts at once on a GPU the run ahead
// cannot use (it needs two on one host; one is free); a per-user limit of
// 2 GPUs on a 4-GPU host: a third GPU is exit 3 without --wait, naming the
// rule, and waits with it until the user's GPUs are under the limit.
func TestQueueBackfillAndLimit(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t,
		sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml", AliveInterval: 1},
		sshtest.Profile{Name: "h2", GPU: "idle-2gpu.xml", AliveInterval: 1})
	b := newQueueBed(t, f)
	big := b.start("big", "", "--workers", "1", "--gpus-per-worker", "2")
	small := b.start("small", "", "--workers", "1", "--gpus-per-worker", "1")
	ahead := b.start("ahead", "5m", "--workers", "1", "--gpus-per-worker", "2")
	low := b.startAs("low", "5m", false, "--workers", "1", "--gpus-per-worker", "1", "--priority", "low")
	if got := queueOrder(t, f); !slices.Equal(got, []string{"ahead"}) {
		t.Errorf("queue: %v, want [ahead]", got)
	}
	b.finish(low)
	b.finish(small)
	b.waitStarted("ahead")
	b.finish(ahead)
	b.finish(big)

	g := sshtest.Start(t, sshtest.Profile{Name: "h4", GPU: "idle-4gpu.xml", AliveInterval: 1})
	if err := g.Host("h4").SetPolicy("limits:\n  users:\n    \"*\": 2\n"); err != nil {
		t.Fatal(err)
	}
	c := newQueueBed(t, g)
	two := c.start("two", "", "--workers", "1", "--gpus-per-worker", "2")
	args, _ := runArgs(t, g, "--workers", "1", "--", "true")
	r := tfhive(t, g.Env(), g.Dir, args...)
	wantCode(t, r, 3)
	wantContains(t, "stderr", r.stderr, "policy of h4: each user may hold 2 GPUs at once (2 held)")
	third := c.start("third", "5m", "--workers", "1")
	if got := c.startedNow(); slices.Contains(got, "third") {
		t.Fatalf("the third GPU started beyond the limit: %v", got)
	}
	c.finish(two)
	c.waitStarted("third")
	c.finish(third)
}
