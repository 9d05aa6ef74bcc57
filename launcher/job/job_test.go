package job

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/codesync"
	"github.com/tfhive/tfhive/launcher/doctor"
	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/sweep"
	"github.com/tfhive/tfhive/probe/hosttest"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// A claim lost to a run that started at the same moment is tried again
// on a fresh probe and plan, the wait saying why; the run lock and its
// record are taken once, before the first claims.
func TestClaimRetry(t *testing.T) {
	f := newTestFleet(t, hosttest.Profile{Name: "a", GPUs: 2})
	j := newTestJob(t, f, "r1", 1)
	conflict := &lifecycle.ClaimConflictError{Conflicts: []string{"a (one of gpu 0)"}}
	s := &starts{answers: []func(launcher.Options) (*record.Summary, error){
		func(launcher.Options) (*record.Summary, error) { return nil, conflict },
		succeeded,
	}}
	claims := 0
	var waits []Waiting
	sum, err := Run(context.Background(), j.spec, Hooks{Start: s.start,
		Claim:   func(*schedule.Plan, inventory.Inventory, map[string]doctor.Host) error { claims++; return nil },
		Waiting: func(w Waiting) { waits = append(waits, w) }})
	if err != nil || sum == nil || sum.Result != record.ResultSucceeded {
		t.Fatalf("run: %+v, %v", sum, err)
	}
	if s.n() != 2 || claims != 1 || f.probes != 2 {
		t.Errorf("starts %d, claims %d, probes %d; want 2, 1, 2", s.n(), claims, f.probes)
	}
	if len(waits) != 1 || !errors.As(waits[0].Err, &conflict) || waits[0].Queued {
		t.Errorf("waits %+v: one, for the lost claim, not queued (no --wait)", waits)
	}
}

// A run that does not fit waits in the queue under --wait: it holds a
// ticket on the hosts, which a change of their locks wakes, and gives it
// up once its tasks started.
func TestWaitWithTicketsAndWake(t *testing.T) {
	f := newTestFleet(t, hosttest.Profile{Name: "a", GPUs: 1})
	j := newTestJob(t, f, "waiter", 1)
	j.spec.Wait = time10m
	var mu sync.Mutex
	fits := false
	s := &starts{answers: []func(launcher.Options) (*record.Summary, error){succeeded}}
	r := newRun(j.spec, Hooks{Start: s.start, Plan: func(inv inventory.Inventory, req schedule.Request) (*schedule.Plan, error) {
		mu.Lock()
		defer mu.Unlock()
		if !fits {
			return nil, &schedule.CapacityError{Msg: "not enough free GPUs", Asked: 1}
		}
		return schedule.Make(inv, req)
	}})
	defer r.close()
	ctx := context.Background()
	if _, err := r.attempt(ctx); !errors.As(err, new(*schedule.CapacityError)) {
		t.Fatalf("first attempt: %v, want not enough GPUs", err)
	}
	tickets := func() []inventory.Ticket {
		inv, _ := f.Probe(ctx)
		return inv.Hosts[0].Tickets
	}
	if ts := tickets(); len(ts) != 1 || ts[0].RunID != "waiter" {
		t.Fatalf("tickets while it waits: %+v", ts)
	}
	// Another run's ticket changes the host's locks: the pause ends.
	other := j.spec.Request
	other.RunID = "other"
	ot := hostops.HoldTickets(ctx, f.Executors(), other, 0, nil, false)
	eventually(t, "the waiting run is woken", func() bool { return len(r.wake) == 1 })
	ot.Release()
	mu.Lock()
	fits = true
	mu.Unlock()
	sum, err := r.attempt(ctx)
	if err != nil || sum.Result != record.ResultSucceeded {
		t.Fatalf("second attempt: %+v, %v", sum, err)
	}
	eventually(t, "the ticket is given up once started", func() bool { return len(tickets()) == 0 })
}

// A waiting --priority high run asks the low run in its way to stop,
// once however often it plans again, and starts when its GPUs are free.
func TestPreemptOnce(t *testing.T) {
	f := newTestFleet(t, hosttest.Profile{Name: "a", GPUs: 1})
	freed := 3
	f.edit = func(n int, inv *inventory.Inventory) {
		h := &inv.Hosts[0]
		h.Policy = &inventory.Policy{PreemptLow: true}
		if n < freed {
			h.Claims = append(h.Claims, inventory.Claim{Kind: "gpu", ID: 0, UUID: h.GPUs[0].UUID, RunID: "low1", Task: "worker:0", Priority: schedule.PriorityLow, User: "bob"})
		}
	}
	j := newTestJob(t, f, "high1", 1)
	j.spec.Request.Priority, j.spec.Wait = schedule.PriorityHigh, time10m
	s := &starts{answers: []func(launcher.Options) (*record.Summary, error){succeeded}}
	sum, err := Run(context.Background(), j.spec, Hooks{Start: s.start})
	if err != nil || sum.Result != record.ResultSucceeded {
		t.Fatalf("run: %+v, %v\n%s", sum, err, j.notes)
	}
	if n := strings.Count(j.notes.String(), "tfhive: preempting run low1 of bob (--priority low) on a for its 1 GPU"); n != 1 || f.probes != freed {
		t.Errorf("asked %d times over %d probes, want once over %d:\n%s", n, f.probes, freed, j.notes)
	}
	if s.calls[0].Priority != schedule.PriorityHigh {
		t.Errorf("the tasks' claims carry priority %q", s.calls[0].Priority)
	}
}

// A run that lost a host is planned again without it, its attempts
// carried over, off the ports its first plan gave; the console says so.
func TestRelaunchWithoutLostHost(t *testing.T) {
	f := newTestFleet(t, hosttest.Profile{Name: "a", GPUs: 1}, hosttest.Profile{Name: "b", GPUs: 1})
	j := newTestJob(t, f, "r2", 1)
	j.spec.Engine.Restart = lifecycle.Restart{Max: 1}
	s := &starts{answers: []func(launcher.Options) (*record.Summary, error){
		func(lo launcher.Options) (*record.Summary, error) { return lostRun(lo.Plan.Tasks[0].Host, 0), nil },
		succeeded,
	}}
	sum, err := Run(context.Background(), j.spec, Hooks{Start: s.start})
	j.spec.Engine.Console.Close()
	if err != nil || sum.Result != record.ResultSucceeded || s.n() != 2 {
		t.Fatalf("run: %+v, %v after %d starts", sum, err, s.n())
	}
	first, again := s.calls[0], s.calls[1]
	lost := first.Plan.Tasks[0].Host
	if again.Plan.Tasks[0].Host == lost || !slices.Equal(f.left, []string{lost}) {
		t.Errorf("relaunched on %s, left %v; lost %s", again.Plan.Tasks[0].Host, f.left, lost)
	}
	if first.Relaunch != nil || again.Relaunch == nil {
		t.Errorf("the relaunch carries the attempts: %v then %v", first.Relaunch, again.Relaunch)
	}
	if !strings.Contains(j.console.String(), "tfhive: lost "+lost+"; re-planning without it and restarting every task in 0s (attempt 2 of 2)") {
		t.Errorf("console:\n%s", j.console)
	}
}

// The --sync tree goes to the plan's hosts only, and a host that already
// has it costs nothing; the summary's report says so.
func TestSyncOnlyToPlannedHosts(t *testing.T) {
	f := newTestFleet(t, hosttest.Profile{Name: "a", GPUs: 1}, hosttest.Profile{Name: "b", GPUs: 1})
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "train.py"), []byte("print(1)\n"), 0o644)
	tree, err := codesync.Prepare(src, nil, nil, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	f.f.LookForCode(tree.Hash)
	j := newTestJob(t, f, "r3", 1)
	j.spec.Request.Code = &schedule.Code{Hash: tree.Hash, Bytes: tree.Bytes, Files: tree.Files}
	sent := 0
	j.spec.Sync = &Syncer{Tree: tree, Parallel: 2, Sent: func(n int, _ time.Duration) { sent += n }}
	s := &starts{answers: []func(launcher.Options) (*record.Summary, error){succeeded}}
	if _, err := Run(context.Background(), j.spec, Hooks{Start: s.start}); err != nil {
		t.Fatalf("run: %v\n%s", err, j.notes)
	}
	lo := s.calls[0]
	planned := lo.Plan.Tasks[0].Host
	if lo.Code == nil || lo.Code.Sent != 1 || len(lo.Code.Hosts) != 1 || lo.Code.Hosts[0].Host != planned || sent != 1 {
		t.Fatalf("code report %+v (sent %d): the planned host %s only", lo.Code, sent, planned)
	}
	if _, err := os.Stat(filepath.Join(lo.Code.Hosts[0].Dir, "train.py")); err != nil {
		t.Errorf("%s, planned, lacks the tree: %v", planned, err)
	}
	other := "a"
	if planned == "a" {
		other = "b"
	}
	if out := f.hosts.Host(other).Shell(t, `find "$HOME" -name train.py`); strings.TrimSpace(out) != "" {
		t.Errorf("%s, not planned, got the tree: %s", other, out)
	}
	if len(f.spares) == 0 || !slices.Equal(f.spares[0], []string{planned}) {
		t.Errorf("spare sessions kept %v, want the planned host's", f.spares)
	}
}

// --check checks the plan's hosts before any claim is taken: hosts that
// differ refuse the run, nothing claimed or started; hosts that agree are
// checked once, and their results reach the claim.
func TestCheckBeforeClaims(t *testing.T) {
	f := newTestFleet(t, hosttest.Profile{Name: "a", GPUs: 1}, hosttest.Profile{Name: "b", GPUs: 1})
	for _, c := range []struct {
		name    string
		modules []string
		refused bool
	}{{"differ", []string{"tfhive_only_on_b"}, true}, {"agree", nil, false}} {
		t.Run(c.name, func(t *testing.T) {
			j := newTestJob(t, f, "r4"+c.name, 2)
			j.spec.Check = &doctor.Options{Modules: c.modules, Timeout: time10m, Parallel: 2}
			if c.refused {
				// Only b has the module: they differ.
				f.hosts.Host("b").Shell(t, `d=$(python3 -c 'import site; print(site.getusersitepackages())') && mkdir -p "$d" && : > "$d/tfhive_only_on_b.py"`)
			}
			var checked map[string]doctor.Host
			s := &starts{answers: []func(launcher.Options) (*record.Summary, error){succeeded}}
			_, err := Run(context.Background(), j.spec, Hooks{Start: s.start,
				Claim: func(_ *schedule.Plan, _ inventory.Inventory, c map[string]doctor.Host) error { checked = c; return nil }})
			var ce *CheckError
			switch {
			case c.refused && (!errors.As(err, &ce) || checked != nil || s.n() != 0):
				t.Errorf("refused: %v; claimed %v, started %d times", err, checked != nil, s.n())
			case !c.refused && (err != nil || len(checked) != 2):
				t.Errorf("run: %v; checked %v before claiming", err, checked)
			}
		})
	}
}

// Two trials of a sweep started together plan apart (the sweep's book as
// their planner), each on GPUs the other did not take.
func TestConcurrentTrialsKeptApart(t *testing.T) {
	f := newTestFleet(t, hosttest.Profile{Name: "a", GPUs: 2})
	book := sweep.NewBook()
	both := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	gpus := map[string][]int{}
	var wg sync.WaitGroup
	arrived := 0
	for _, id := range []string{"sw-001", "sw-002"} {
		j := newTestJob(t, f, id, 1)
		j.spec.WaitForever = true
		h := Hooks{
			Plan:        BookPlanner(book),
			AttemptDone: func() { book.Drop(id) },
			Start: func(_ context.Context, lo launcher.Options) (*record.Summary, error) {
				mu.Lock()
				gpus[id] = lo.Plan.Tasks[0].GPUs
				arrived++
				if arrived == 2 {
					once.Do(func() { close(both) })
				}
				mu.Unlock()
				// Both under way at once, as trials are.
				<-both
				return succeeded(lo)
			},
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := Run(context.Background(), j.spec, h); err != nil {
				t.Errorf("%s: %v", id, err)
			}
		}()
	}
	wg.Wait()
	if len(gpus) != 2 || slices.Equal(gpus["sw-001"], gpus["sw-002"]) {
		t.Errorf("the trials' GPUs: %v, want apart", gpus)
	}
}

// lostRun is a summary of a run whose worker's host was lost.
func lostRun(host string, attempt int) *record.Summary {
	return &record.Summary{Result: record.ResultFailed, ExitCode: record.ExitHostLost, Tasks: []record.TaskResult{
		{ID: "worker:0", Host: host, Outcome: record.OutcomeLost, Attempts: []record.Attempt{{Attempt: attempt, Outcome: record.OutcomeLost}}},
	}}
}

const time10m = 10 * time.Minute

// A low run that may be requeued parks its ticket once it started (the
// host shows no waiter), and, back in the queue, waits under the same
// holder (its pid), the host's date of its first wait; a normal run gives
// its ticket up. A low run that started without waiting holds a parked
// ticket from then.
func TestRequeueableRunParksItsTicket(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, priority string
		waitFirst      bool
	}{{"low-waited", schedule.PriorityLow, true}, {"low-at-once", schedule.PriorityLow, false}, {"normal", schedule.PriorityNormal, true}} {
		t.Run(c.name, func(t *testing.T) {
			f := newTestFleet(t, hosttest.Profile{Name: "a", GPUs: 1})
			j := newTestJob(t, f, "r-"+c.name, 1)
			j.spec.Request.Priority, j.spec.Wait = c.priority, time10m
			j.spec.Requeue = lifecycle.Requeue{Preempted: true}
			var mu sync.Mutex
			fits := !c.waitFirst
			s := &starts{answers: []func(launcher.Options) (*record.Summary, error){succeeded}}
			r := newRun(j.spec, Hooks{Start: s.start, Plan: func(inv inventory.Inventory, req schedule.Request) (*schedule.Plan, error) {
				mu.Lock()
				defer mu.Unlock()
				if !fits {
					return nil, &schedule.CapacityError{Msg: "not enough free GPUs", Asked: 1}
				}
				return schedule.Make(inv, req)
			}})
			defer r.close()
			tickets := func() []inventory.Ticket {
				inv, _ := f.Probe(ctx)
				return inv.Hosts[0].Tickets
			}
			setFits := func(v bool) { mu.Lock(); fits = v; mu.Unlock() }
			pid := 0
			if c.waitFirst {
				if _, err := r.attempt(ctx); !errors.As(err, new(*schedule.CapacityError)) {
					t.Fatalf("first attempt: %v, want not enough GPUs", err)
				}
				ts := tickets()
				if len(ts) != 1 {
					t.Fatalf("tickets while it waits: %+v", ts)
				}
				pid = ts[0].PID
				setFits(true)
			}
			if sum, err := r.attempt(ctx); err != nil || sum.Result != record.ResultSucceeded {
				t.Fatalf("start: %+v, %v", sum, err)
			}
			eventually(t, "no waiter once started", func() bool { return len(tickets()) == 0 })
			r.joinParking()
			if c.priority != schedule.PriorityLow {
				if r.tickets.Parked() {
					t.Errorf("a normal run, never preempted, parked its tickets")
				}
				return
			}
			if !r.tickets.Parked() {
				t.Fatalf("a low run's tickets are not parked")
			}
			// Back in the queue: the same holder waits again.
			setFits(false)
			if _, err := r.attempt(ctx); !errors.As(err, new(*schedule.CapacityError)) {
				t.Fatalf("attempt after the requeue: %v, want not enough GPUs", err)
			}
			var ts []inventory.Ticket
			eventually(t, "the ticket waits again", func() bool { ts = tickets(); return len(ts) == 1 })
			if pid != 0 && ts[0].PID != pid {
				t.Errorf("requeued under holder %d, want the first wait's %d", ts[0].PID, pid)
			}
		})
	}
}
