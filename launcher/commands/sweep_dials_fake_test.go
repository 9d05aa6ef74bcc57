package commands

import (
	"context"
	"testing"

	"github.com/tfhive/tfhive/probe/hosttest"
)

// A sweep's trials share one connection per host: however many trials
// start, hand over and probe, each host is dialled once. (One Dialer
// shared by every trial's fleet took each trial's first dial of a host
// for a redial: a new connection, a handshake, per trial and host,
// serialised per host; under a burst of 64 trials, the starts came one
// at a time. launcher/help/performance.md, "The start path under a
// burst".)
func TestSweepDialsEachHostOnce(t *testing.T) {
	b := twoHosts(t)
	t.Chdir(b.dir)
	sweepSix(t, b, "dials")
	for _, h := range b.fleet.Hosts {
		if n := h.Dials(); n != 1 {
			t.Errorf("host %s dialled %d times for 6 trials, want 1 (one shared connection)", h.Name, n)
		}
	}
}

// sweepSix runs sweep name on b's hosts from b's dir (the test's cwd):
// 6 one-GPU trials on its 4 GPUs, 4 starting together and 2 handing over.
func sweepSix(t *testing.T, b *bed, name string) {
	t.Helper()
	sweepN(t, b, name, "N=1,2,3,4,5,6")
}

// sweepN runs sweep name of one-GPU trials, one a value of param (N=…),
// on b's hosts from b's dir.
func sweepN(t *testing.T, b *bed, name, param string) {
	t.Helper()
	var o out
	j := fakeJob(name, 1, `echo "n={N}"`)
	j.GPUsPerWorker = 1
	ro := b.runOptions(o.streams(), j)
	ro.LogDir, ro.JSON = "", true
	if err := Sweep(context.Background(), SweepOptions{Run: ro, Params: []string{param}}); err != nil {
		t.Fatalf("sweep: %v\n%s", err, o.stderr.String())
	}
}

// A sweep's first trials plan on the probe that sized it: as many trials
// as GPUs start on one probe of each host, where each waited for a probe
// begun after it asked (one more, and a second for those that asked
// while it ran). The trials after an end plan on it too, while it is the
// newest and under probe.MaxSeedAge, the book taking out of it what the
// ended trials held (sweep.Book.End).
func TestSweepFirstTrialsPlanOnItsProbe(t *testing.T) {
	for _, c := range []struct{ name, trials, what string }{
		{"seeded", "N=1,2,3,4", "4 trials on its 4 GPUs"},
		{"handed", "N=1,2,3,4,5,6", "6 trials on its 4 GPUs, 2 after an end"},
	} {
		b := twoHosts(t)
		t.Chdir(b.dir)
		sweepN(t, b, c.name, c.trials)
		for _, h := range b.fleet.Hosts {
			if n := h.SMICalls(); n != 1 {
				t.Errorf("%s: host %s probed %d times, want 1 (the sweep's own probe)", c.what, h.Name, n)
			}
		}
	}
}

// A trial after a hand-over costs its host no probe: 2 trials one after
// the other on one GPU cost the host the sweep's probe and the two
// trials' multiplexers, 3 sessions, and one nvidia-smi. (Before the
// hand-over planned on the newest probe, the second trial's probe went
// on as its multiplexer: 3 sessions, 2 probes.)
func TestSweepHandOverCostsNoProbe(t *testing.T) {
	b := newBed(t, hosttest.Profile{Name: "a", GPUs: 1})
	t.Chdir(b.dir)
	sweepN(t, b, "lent", "N=1,2")
	h := b.fleet.Hosts[0]
	if n := h.Sessions(); n != 3 {
		t.Errorf("the host had %d sessions for 2 trials on its one GPU, want 3", n)
	}
	if n := h.SMICalls(); n != 1 {
		t.Errorf("the host was probed %d times for 2 trials on its one GPU, want 1", n)
	}
}
