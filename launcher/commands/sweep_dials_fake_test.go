package commands

import (
	"context"
	"testing"
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
	var o out
	j := fakeJob(name, 1, `echo "n={N}"`)
	j.GPUsPerWorker = 1
	ro := b.runOptions(o.streams(), j)
	ro.LogDir, ro.JSON = "", true
	if err := Sweep(context.Background(), SweepOptions{Run: ro, Params: []string{"N=1,2,3,4,5,6"}}); err != nil {
		t.Fatalf("sweep: %v\n%s", err, o.stderr.String())
	}
}
