package schedule

import (
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
)

func claimed(kind string, id int, run string) hostOpt {
	return func(h *inventory.HostInventory) {
		h.Claims = append(h.Claims, inventory.Claim{Kind: kind, ID: id, RunID: run, User: "alice", Task: "worker:0",
			Since: time.Date(2026, 11, 22, 15, 4, 0, 0, time.UTC)})
	}
}

func TestClaimedGPUsAndPortsAreTaken(t *testing.T) {
	in := inv(host("gpu01", 2, addr("10.0.0.1"), claimed("gpu", 0, "r1"), claimed("port", 2222, "r1")))
	st := Classify(in, Availability{MaxUtilPct: 10, MaxMemMiB: 1024})
	if st[0][0].State != Claimed || st[0][0].Reason != "run r1 (alice, worker:0, since 2026-11-22 15:04 UTC)" {
		t.Errorf("GPU 0: %+v", st[0][0])
	}
	if st[0][1].State != Free {
		t.Errorf("GPU 1: %+v", st[0][1])
	}
	p, err := Make(in, req(func(r *Request) { r.Workers = 1 }))
	if err != nil {
		t.Fatal(err)
	}
	if w := p.Tasks[0]; w.GPUs[0] != 1 || w.Port == 2222 {
		t.Errorf("the claimed GPU or port was planned: %+v", w)
	}

	_, err = Make(in, req(func(r *Request) { r.Workers = 2 }))
	ce, ok := err.(*CapacityError)
	if !ok {
		t.Fatalf("want a capacity error, got %v", err)
	}
	if d := strings.Join(ce.Details(), "\n"); !strings.Contains(d, "claimed 0 (run r1 (alice") {
		t.Errorf("the message should name the claiming run:\n%s", d)
	}
	if !strings.Contains(ce.Hint(), "wait") {
		t.Errorf("claimed GPUs free up by waiting; hint %q", ce.Hint())
	}
}

// A claim's reason in each of its forms: what is known of its holder, in
// parentheses when anything is.
func TestClaimReasonWords(t *testing.T) {
	since := time.Date(2026, 11, 22, 15, 4, 0, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		c    inventory.Claim
		want string
	}{
		{inventory.Claim{RunID: "r1", User: "alice", Task: "worker:0", Since: since}, "run r1 (alice, worker:0, since 2026-11-22 14:04 UTC)"},
		{inventory.Claim{RunID: "r1", Task: "planned by this sweep"}, "run r1 (planned by this sweep)"},
		{inventory.Claim{RunID: "r1", Since: since}, "run r1 (since 2026-11-22 14:04 UTC)"},
		{inventory.Claim{RunID: "r1"}, "run r1"},
		{inventory.Claim{User: "bob"}, "a holder with no tfhive label (bob)"},
		{inventory.Claim{}, "a holder with no tfhive label"},
	} {
		if got := claimReason(&tc.c); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.c, got, tc.want)
		}
	}
}
