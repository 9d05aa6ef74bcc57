package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// sweepFairBed is 2 shared hosts × 2 GPUs, a colleague, and a directory
// both may write to, where each task, once started, leaves
// started/ITS-NAME and holds its GPUs until done/ITS-NAME exists.
type sweepFairBed struct {
	t         *testing.T
	f         *sshtest.Fleet
	colleague *sshtest.User
	started   string
	done      string
}

func newSweepFairBed(t *testing.T) *sweepFairBed {
	f := sshtest.StartShared(t, sshtest.Profile{Name: "s1", GPU: "idle-2gpu.xml", AliveInterval: 1},
		sshtest.Profile{Name: "s2", GPU: "idle-2gpu.xml", AliveInterval: 1})
	// Beside the fleet's directory, which the hosts see behind their
	// private /tmp; open to the colleague.
	d := t.TempDir()
	os.Chmod(d, 0o777|os.ModeSticky)
	b := &sweepFairBed{t: t, f: f, colleague: sshtest.AddUser(t, "colleague"),
		started: filepath.Join(d, "started"), done: filepath.Join(d, "done")}
	for _, dir := range []string{b.started, b.done} {
		if err := os.Mkdir(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, 0o777)
	}
	return b
}

// task holds its GPUs as named.
func (b *sweepFairBed) task(name string) string {
	return `touch ` + filepath.Join(b.started, name) + `; while [ ! -e ` + filepath.Join(b.done, name) + ` ]; do sleep 0.1; done`
}

func (b *sweepFairBed) startedNow() []string {
	es, _ := os.ReadDir(b.started)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out
}

// waitStarted waits until n of the names that begin with prefix started.
func (b *sweepFairBed) waitStarted(prefix string, n int) []string {
	b.t.Helper()
	var now []string
	waitFor(b.t, 2*time.Minute, "tasks of "+prefix, func() bool {
		now = slices.DeleteFunc(b.startedNow(), func(s string) bool { return !strings.HasPrefix(s, prefix) })
		return len(now) >= n
	})
	return now
}

func (b *sweepFairBed) finish(name string) {
	b.t.Helper()
	if err := os.WriteFile(filepath.Join(b.done, name), nil, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// colleagueWaits starts the colleague's run asking gpus GPUs, --wait, and
// returns once it waits in the queue.
func (b *sweepFairBed) colleagueWaits(name string, gpus string) *running {
	b.t.Helper()
	argv, _ := runArgs(b.t, b.f, "--name", name, "--wait", "5m", "--workers", "1", "--gpus-per-worker", gpus,
		"--", "sh", "-c", b.task(name))
	argv[2] = b.f.HostsYAMLAs(b.t, b.colleague)
	r := startTfhive(b.t, b.f, readStderr, argv...)
	if !r.readUntil(func(l string) bool { return strings.HasPrefix(l, "tfhive: waiting") }) {
		r.Wait()
		b.t.Fatalf("the colleague's run did not wait:\n%s%s", r.read.String(), r.other.String())
	}
	r.discardRest()
	return r
}

// A sweep of 6 one-GPU trials fills 2 hosts × 2 GPUs; a colleague's run
// asking one GPU queues behind it (its ticket the queue's only one: the
// sweep's later trials join the queue only as trials end). When a trial
// ends, its GPU goes to the colleague: the sweep's next trial joins the
// queue then, behind the colleague's ticket (the queue's order: priority,
// then waiting since), and waits there until another trial ends.
func TestSweepFairToColleague(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	b := newSweepFairBed(t)
	f := b.f
	sw := startTfhive(t, f, readStderr, sweepArgs(f, "--name", "sf", "--param", "x=1,2,3,4,5,6",
		"--", "sh", "-c", b.task("$TFHIVE_TRIAL"))...)
	sw.discardRest()
	first := b.waitStarted("sf-", 4)
	coll := b.colleagueWaits("coll", "1")
	if q := queueOrder(t, f); !slices.Equal(q, []string{"coll"}) {
		t.Fatalf("queue: %v, want the colleague's run alone", q)
	}

	b.finish(first[0])
	b.waitStarted("coll", 1)
	// The sweep's next trial waits behind, in the queue.
	waitFor(t, 30*time.Second, "the sweep's next trial in the queue", func() bool { return len(queueOrder(t, f)) == 1 })
	q := queueOrder(t, f)
	if now := b.startedNow(); len(now) != 5 || !strings.HasPrefix(q[0], "sf-") || slices.Contains(now, q[0]) {
		t.Fatalf("started: %v, queue %v; want the 4 first trials, less %s, the colleague's run, and a trial queued", now, q, first[0])
	}
	// Planned on the sweep's probe, which did not see the colleague queue
	// (while it is under probe.MaxSeedAge), the trial's start met the
	// colleague's ticket on the host and planned again (or lost the
	// GPU's claim to the colleague, who started first): with no place
	// in a queue that probe did not see.
	console := readFile(t, filepath.Join(f.Dir, "tfhive-runs", q[0], "console.log"))
	for l := range strings.Lines(console) {
		if strings.Contains(l, "since the probe") && strings.Contains(l, "in the queue") {
			t.Errorf("%s's console: %q", q[0], l)
		}
	}
	t.Logf("%s's console:\n%s", q[0], console)
	b.finish(first[1])
	b.waitStarted(q[0], 1)

	for _, n := range []string{"sf-001", "sf-002", "sf-003", "sf-004", "sf-005", "sf-006", "coll"} {
		b.finish(n)
	}
	if code, _ := endsWithin(t, coll, time.Minute); code != 0 {
		t.Errorf("the colleague's run: exit %d\n%s", code, coll.other.String())
	}
	if code, _ := endsWithin(t, sw, 2*time.Minute); code != 0 {
		t.Errorf("the sweep: exit %d\n%s", code, sw.other.String())
	}
}

// trialsOn is which host each of the sweep's trials holds GPUs on, by
// host, as tfhive ps says.
func trialsOn(t *testing.T, f *sshtest.Fleet, prefix string) map[string][]string {
	t.Helper()
	on := map[string][]string{}
	for _, s := range sweepOnHosts(t, f, prefix) {
		id, host, _ := strings.Cut(s, "@")
		on[host] = append(on[host], id)
	}
	return on
}

// A colleague's run asking 2 GPUs on one host queues behind a sweep of
// one-GPU trials that fills 2 hosts × 2 GPUs. A trial's end frees one
// GPU, which the colleague cannot use yet: the sweep's next trial does
// not take it (nor the one another trial frees on the other host), but
// waits behind the colleague, so that the sweep's GPUs drain until the
// colleague fits; then the colleague starts, and the sweep goes on where
// it fits. Without this, a sweep's stream of small trials would backfill
// every GPU that frees up and starve the colleague.
func TestSweepDoesNotStarveColleague(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	b := newSweepFairBed(t)
	f := b.f
	sw := startTfhive(t, f, readStderr, sweepArgs(f, "--name", "sf", "--param", "x=1,2,3,4,5,6",
		"--", "sh", "-c", b.task("$TFHIVE_TRIAL"))...)
	sw.discardRest()
	b.waitStarted("sf-", 4)
	on := trialsOn(t, f, "sf-")
	if len(on["s1"]) != 2 || len(on["s2"]) != 2 {
		t.Fatalf("trials on the hosts: %v", on)
	}
	coll := b.colleagueWaits("coll", "2")

	// One GPU free on s1, then one on s2: the sweep's next trial waits.
	b.finish(on["s1"][0])
	waitFor(t, 30*time.Second, "the sweep's next trial", func() bool {
		return len(queueOrder(t, f)) == 2 || len(b.startedNow()) == 5
	})
	if q := queueOrder(t, f); len(q) != 2 || q[0] != "coll" || len(b.startedNow()) != 4 {
		t.Fatalf("queue %v, started %v: the sweep's next trial should wait behind the colleague", q, b.startedNow())
	}
	// The trial says so in its console, with no time left of a --wait it
	// was not given.
	console := filepath.Join(f.Dir, "tfhive-runs", queueOrder(t, f)[1], "console.log")
	waitFor(t, 30*time.Second, "the trial's waiting line", func() bool {
		return strings.Contains(readFile(t, console), "2nd in the queue (after run coll of "+b.colleague.Name+")")
	})
	if c := readFile(t, console); strings.Contains(c, "left of --wait") {
		t.Errorf("the trial's console:\n%s", c)
	}
	b.finish(on["s2"][0])
	waitFor(t, 30*time.Second, "the sweep's next trial", func() bool {
		return len(queueOrder(t, f)) == 3 || len(b.startedNow()) == 5
	})
	// Its GPU stays free (the colleague may get s2's other one): the
	// sweep's two next trials wait behind the colleague.
	if q := queueOrder(t, f); len(q) != 3 || q[0] != "coll" || len(b.startedNow()) != 4 {
		t.Fatalf("queue %v, started %v: the sweep's next trials should wait", q, b.startedNow())
	}

	// s1 free: the colleague starts there, the sweep's next trial on s2.
	b.finish(on["s1"][1])
	b.waitStarted("coll", 1)
	b.waitStarted("sf-", 5)
	if on := trialsOn(t, f, "sf-"); len(on["s1"]) != 0 || len(on["s2"]) != 2 {
		t.Errorf("trials on the hosts after the colleague started: %v", on)
	}

	for _, n := range []string{"sf-001", "sf-002", "sf-003", "sf-004", "sf-005", "sf-006", "coll"} {
		b.finish(n)
	}
	if code, _ := endsWithin(t, coll, time.Minute); code != 0 {
		t.Errorf("the colleague's run: exit %d\n%s", code, coll.other.String())
	}
	if code, _ := endsWithin(t, sw, 2*time.Minute); code != 0 {
		t.Errorf("the sweep: exit %d\n%s", code, sw.other.String())
	}
}
