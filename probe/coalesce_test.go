package probe

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/hosttest"
	"github.com/tfhive/tfhive/probe/inventory"
)

// fakeProbes is a probe function whose runs wait to be let go, each
// answering its number (1, 2, ...) as its first host's name.
type fakeProbes struct {
	started chan int
	release chan error
	cut     chan int // a run whose context was cancelled
	n       atomic.Int32
}

func newFakeProbes() *fakeProbes {
	return &fakeProbes{started: make(chan int, 16), release: make(chan error), cut: make(chan int, 16)}
}

func (p *fakeProbes) run(ctx context.Context) (inventory.Inventory, error) {
	n := int(p.n.Add(1))
	p.started <- n
	select {
	case err := <-p.release:
		return inventory.Inventory{Hosts: []inventory.HostInventory{{Name: string(rune('0' + n))}}}, err
	case <-ctx.Done():
		p.cut <- n
		return inventory.Inventory{}, ctx.Err()
	}
}

func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
	}
	var zero T
	return zero
}

type answer struct {
	inv inventory.Inventory
	err error
}

// waiting is how many callers wait for key's next probe.
func (c *Coalescer) waiting(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.lines[key]; l != nil && l.next != nil {
		return l.next.waiters
	}
	return 0
}

// N callers arriving while a probe runs share one probe: the next, not
// the one in flight (older than their request). Its error is theirs too.
func TestCoalescerJoinsTheNextProbe(t *testing.T) {
	c := NewCoalescer()
	p := newFakeProbes()
	first := make(chan answer, 1)
	go func() {
		inv, err := c.do(context.Background(), "k", p.run)
		first <- answer{inv, err}
	}()
	if n := waitFor(t, p.started, "first probe"); n != 1 {
		t.Fatalf("probe %d started, want 1", n)
	}
	const callers = 10
	answers := make(chan answer, callers)
	for range callers {
		go func() {
			inv, err := c.do(context.Background(), "k", p.run)
			answers <- answer{inv, err}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.waiting("k") < callers {
		if time.Now().After(deadline) {
			t.Fatalf("%d callers wait for the next probe, want %d", c.waiting("k"), callers)
		}
		time.Sleep(time.Millisecond)
	}
	p.release <- nil
	if a := waitFor(t, first, "first answer"); a.err != nil || a.inv.Hosts[0].Name != "1" {
		t.Errorf("first caller: %+v, want probe 1", a)
	}
	if n := waitFor(t, p.started, "second probe"); n != 2 {
		t.Fatalf("probe %d started, want 2", n)
	}
	boom := errors.New("boom")
	p.release <- boom
	for range callers {
		a := waitFor(t, answers, "answer")
		if !errors.Is(a.err, boom) || a.inv.Hosts[0].Name != "2" {
			t.Errorf("caller: %+v, want probe 2's result and error", a)
		}
	}
	if n := p.n.Load(); n != 2 {
		t.Errorf("%d probes for %d callers, want 2", n, callers+1)
	}
	// Once all is done, a caller starts a probe of its own at once.
	go func() { c.do(context.Background(), "k", p.run) }()
	if n := waitFor(t, p.started, "third probe"); n != 3 {
		t.Errorf("probe %d started, want 3", n)
	}
	p.release <- nil
}

// Other keys (other hosts, other probe options) do not share.
func TestCoalescerKeysApart(t *testing.T) {
	c := NewCoalescer()
	p := newFakeProbes()
	var wg sync.WaitGroup
	for _, k := range []string{"a", "b"} {
		wg.Add(1)
		go func() { defer wg.Done(); c.do(context.Background(), k, p.run) }()
	}
	waitFor(t, p.started, "a probe")
	waitFor(t, p.started, "the other key's probe")
	p.release <- nil
	p.release <- nil
	wg.Wait()
}

// A caller whose context ends stops waiting at once; a probe nobody waits
// for any more is cut short, and a next one nobody waits for never starts.
func TestCoalescerCancel(t *testing.T) {
	c := NewCoalescer()
	p := newFakeProbes()
	ctx1, cancel1 := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, err := c.do(ctx1, "k", p.run); first <- err }()
	waitFor(t, p.started, "first probe")
	ctx2, cancel2 := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() { _, err := c.do(ctx2, "k", p.run); second <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for c.waiting("k") < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the second caller does not wait for the next probe")
		}
		time.Sleep(time.Millisecond)
	}
	cancel2()
	if err := waitFor(t, second, "second answer"); !errors.Is(err, context.Canceled) {
		t.Errorf("second caller: %v, want context.Canceled", err)
	}
	cancel1()
	if err := waitFor(t, first, "first answer"); !errors.Is(err, context.Canceled) {
		t.Errorf("first caller: %v, want context.Canceled", err)
	}
	if n := waitFor(t, p.cut, "cut probe"); n != 1 {
		t.Errorf("probe %d cut, want 1", n)
	}
	// The next one had no caller left: the line is empty, and a new
	// caller's probe is the second.
	go func() { c.do(context.Background(), "k", p.run) }()
	if n := waitFor(t, p.started, "new probe"); n != 2 {
		t.Errorf("probe %d started, want 2 (the abandoned next never ran)", n)
	}
	p.release <- nil
}

// Fleets given one Coalescer probe each host once for all of them, and
// each gets its own copy, with its own connections and the hosts it left
// taken out.
func TestFleetsCoalesce(t *testing.T) {
	hosts, shared, c, hs := coalescedHosts(t, hosttest.Profile{Name: "a", GPUs: 2}, hosttest.Profile{Name: "b", GPUs: 1})
	noSeeds(c)
	fleet := func() *Fleet {
		f := NewFleet(hs, Options{Dial: shared.Dialer(), Coalesce: c, CommandTimeout: 10 * time.Second})
		t.Cleanup(f.Close)
		return f
	}
	f1, f2 := fleet(), fleet()
	f2.Leave("b", "lost during the run")
	inv1 := f1.Probe(context.Background())
	for i, h := range inv1.Hosts {
		if h.Err != nil || len(h.GPUs) != 2-i || f1.Executor(i) == nil {
			t.Fatalf("fleet 1, host %s: %+v, %d GPUs, executor %v", h.Name, h.Err, len(h.GPUs), f1.Executor(i))
		}
	}
	inv1.Hosts[0].GPUs[0].Name = "changed"
	inv1.Hosts[0].ListeningPorts = append(inv1.Hosts[0].ListeningPorts, 1)
	inv2 := f2.Probe(context.Background())
	if n := hosts.Host("a").SMICalls(); n != 2 {
		t.Errorf("host a: %d nvidia-smi calls after two probes one after the other, want 2", n)
	}
	if h := inv2.Hosts[0]; h.Err != nil || h.GPUs[0].Name == "changed" || f2.Executor(0) == nil {
		t.Errorf("fleet 2, host a: %+v, GPU %q, executor %v: want its own copy, connected", h.Err, h.GPUs[0].Name, f2.Executor(0))
	}
	if e := inv2.Hosts[1].Err; e == nil || e.Kind != inventory.ErrLost || e.Message != "lost during the run" {
		t.Errorf("fleet 2, host b: %+v, want the host the fleet left", e)
	}
	// Many fleets probing at once each get a whole inventory (how many
	// probes they share depends on when each asks: the fake probes above
	// count them).
	var wg sync.WaitGroup
	for range 12 {
		f := fleet()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if inv := f.Probe(context.Background()); inv.Hosts[1].Err != nil || len(inv.Hosts[1].GPUs) != 1 {
				t.Errorf("host b: %v, %d GPUs", inv.Hosts[1].Err, len(inv.Hosts[1].GPUs))
			}
		}()
	}
	wg.Wait()
}

// A seed answers the first probe of each fleet that probes its way, at
// once, Seeded and as a copy of its own; that fleet's next probe, and a
// fleet that probes otherwise, probe the hosts; the coalesced probe is
// the seed after it, lending its sessions, until it is MaxSeedAge old.
func TestCoalescerSeed(t *testing.T) {
	hosts, shared, c, hs := coalescedHosts(t, hosttest.Profile{Name: "a", GPUs: 2})
	fleet := func(o Options) *Fleet {
		o.Dial, o.Coalesce = shared.Dialer(), c
		if o.CommandTimeout == 0 {
			o.CommandTimeout = 10 * time.Second
		}
		f := NewFleet(hs, o)
		t.Cleanup(f.Close)
		return f
	}
	own := NewFleet(hs, Options{Dial: shared.Dialer(), CommandTimeout: 10 * time.Second})
	t.Cleanup(own.Close)
	seed := own.Probe(context.Background())
	if h := seed.Hosts[0]; h.Err != nil || len(h.GPUs) != 2 {
		t.Fatalf("the seed's probe: %+v, %d GPUs", h.Err, len(h.GPUs))
	}
	c.Seed(own, seed)
	calls := func(want int, what string) {
		t.Helper()
		if n := hosts.Host("a").SMICalls(); n != want {
			t.Errorf("%s: %d nvidia-smi calls in all, want %d", what, n, want)
		}
	}
	f1, f2 := fleet(Options{}), fleet(Options{Then: "cat"}) // Then is the fleet's own
	inv := f1.Probe(context.Background())
	calls(1, "a fleet's first probe, seeded")
	if h := inv.Hosts[0]; h.Err != nil || len(h.GPUs) != 2 || f1.Executor(0) == nil || !inv.Seeded {
		t.Fatalf("seeded: %+v, %d GPUs, executor %v, Seeded %t", h.Err, len(h.GPUs), f1.Executor(0), inv.Seeded)
	}
	inv.Hosts[0].GPUs[0].Name = "changed"
	if inv := f2.Probe(context.Background()); inv.Hosts[0].GPUs[0].Name == "changed" {
		t.Error("a seeded probe shares its GPUs with another fleet's")
	}
	calls(1, "another fleet's first probe, seeded")
	if inv := f1.Probe(context.Background()); inv.Seeded {
		t.Error("a fleet's second probe is Seeded")
	}
	calls(2, "a seeded fleet's second probe")
	f3 := fleet(Options{})
	if inv := f3.Probe(context.Background()); !inv.Seeded || f3.lender == nil {
		t.Errorf("a fleet's first probe after a coalesced one: Seeded %t, lender %v", inv.Seeded, f3.lender)
	}
	calls(2, "a fleet's first probe after a coalesced one, on it")
	fleet(Options{CommandTimeout: 9 * time.Second}).Probe(context.Background())
	calls(3, "the first probe of a fleet that probes otherwise")
	noSeeds(c)
	if inv := fleet(Options{}).Probe(context.Background()); inv.Seeded {
		t.Error("a probe on a seed MaxSeedAge old")
	}
	calls(4, "a fleet's first probe once the seed is MaxSeedAge old")
}

// A probe that shows a host whose policy caps the GPUs users or groups
// hold is no seed, and ends the one before: the claims those limits
// count are anyone's of the user or group, taken since by runs no claim
// check of ours sees.
func TestCoalescerNoSeedUnderLimits(t *testing.T) {
	hosts, shared, c, hs := coalescedHosts(t, hosttest.Profile{Name: "a", GPUs: 2})
	own := NewFleet(hs, Options{Dial: shared.Dialer(), CommandTimeout: 10 * time.Second})
	t.Cleanup(own.Close)
	seed := own.Probe(context.Background())
	c.Seed(own, seed)
	limited := seed
	limited.Hosts = slices.Clone(seed.Hosts)
	limited.Hosts[0].Policy = &inventory.Policy{Limits: inventory.PolicyLimits{Groups: map[string]int{"lab": 4}}}
	c.Seed(own, limited)
	f := NewFleet(hs, Options{Dial: shared.Dialer(), Coalesce: c, CommandTimeout: 10 * time.Second})
	t.Cleanup(f.Close)
	if inv := f.Probe(context.Background()); inv.Seeded {
		t.Error("a probe under a policy's limits answered as a seed")
	}
	if n := hosts.Host("a").SMICalls(); n != 2 {
		t.Errorf("%d nvidia-smi calls, want 2: the fleet's first probe probed the host", n)
	}
}

// Fleets that keep sessions (Then) take the Coalescer's: each host's
// session of a coalesced probe goes on as a spare, which the first Start
// of Then on that host, from any fleet that adopted the probe, gets; the
// next opens a session of its own; the next probe's spare replaces the
// one not taken.
func TestCoalescedProbesLendTheirSessions(t *testing.T) {
	_, shared, c, hs := coalescedHosts(t, hosttest.Profile{Name: "a", GPUs: 1}, hosttest.Profile{Name: "b", GPUs: 1})
	noSeeds(c)
	eof := filepath.Join(t.TempDir(), "eof")
	then := `IFS= read -r x || { echo "$$" >> ` + eof + `; exit 3; }; echo "$$ got $x"`
	fleet := func() *Fleet {
		f := NewFleet(hs, Options{Dial: shared.Dialer(), Coalesce: c, CommandTimeout: 10 * time.Second})
		f.KeepSessions(then)
		t.Cleanup(f.Close)
		return f
	}
	ctx := context.Background()
	f1, f2 := fleet(), fleet()
	for _, f := range []*Fleet{f1, f2} {
		if inv := f.Probe(ctx); inv.Hosts[0].Err != nil || inv.Hosts[1].Err != nil {
			t.Fatalf("probe: %+v %+v", inv.Hosts[0].Err, inv.Hosts[1].Err)
		}
	}
	start := func(f *Fleet, i int) (pid string, spare bool) {
		t.Helper()
		return startThen(t, f.Executor(i), then)
	}
	// Host a: fleet 2 takes the session of the last probe (its own; the
	// one before, fleet 1's, was ended by it), fleet 1 then opens its own.
	if _, spare := start(f2, 0); !spare {
		t.Error("host a: the first Start did not take the coalesced probe's session")
	}
	if _, spare := start(f1, 0); spare {
		t.Error("host a: the second Start took a spare too")
	}
	ended := func(want int, what string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			data, _ := os.ReadFile(eof)
			n := strings.Count(string(data), "\n")
			if n == want {
				return
			}
			if n > want || time.Now().After(deadline) {
				t.Fatalf("%d spares saw EOF, want %d: %s", n, want, what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	ended(2, "the first probe's two, ended by the second probe")
	// Host b's spare is still there for either fleet; the next probe ends it.
	fleet().Probe(ctx)
	ended(3, "host b's, not taken, ended by the third probe")
	if _, spare := start(f1, 1); !spare {
		t.Error("host b: the Start after the next probe did not take its session")
	}
	// Closed, the Coalescer ends host a's, whose shell then writes into
	// the test's TempDir: it is waited for before that goes.
	c.Close()
	ended(4, "host a's last, ended by Close")
}

// noSeeds ages every probe past MaxSeedAge at once: each fleet's first
// probe is then one begun after it asked, as its later ones are.
func noSeeds(c *Coalescer) { c.Now = func() time.Time { return time.Now().Add(MaxSeedAge) } }

// coalescedHosts are fake hosts (their inventory.Hosts, in order) behind
// one Shared, and a Coalescer, both closed when the test ends.
func coalescedHosts(t *testing.T, ps ...hosttest.Profile) (*hosttest.Fleet, *Shared, *Coalescer, []inventory.Host) {
	hosts := hosttest.Start(t, ps...)
	shared := NewShared(Options{Dial: hosts.Dial})
	t.Cleanup(shared.Close)
	c := NewCoalescer()
	t.Cleanup(c.Close)
	var hs []inventory.Host
	for _, p := range ps {
		hs = append(hs, inventory.Host{Name: p.Name, Address: p.Name})
	}
	return hosts, shared, c, hs
}
