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
	var o out
	j := fakeJob("dials", 1, `echo "n={N}"`)
	j.GPUsPerWorker = 1
	ro := b.runOptions(o.streams(), j)
	ro.LogDir, ro.JSON = "", true
	// 6 one-GPU trials on 4 GPUs: 4 start together, 2 hand over.
	if err := Sweep(context.Background(), SweepOptions{Run: ro, Params: []string{"N=1,2,3,4,5,6"}}); err != nil {
		t.Fatalf("sweep: %v\n%s", err, o.stderr.String())
	}
	for _, h := range b.fleet.Hosts {
		if n := h.Dials(); n != 1 {
			t.Errorf("host %s dialled %d times for 6 trials, want 1 (one shared connection)", h.Name, n)
		}
	}
}
