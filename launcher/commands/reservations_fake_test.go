package commands

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/hosttest"
)

// Anyone's flood of empty reservation files (more than a probe lists)
// keeps nobody from their own runs: ps lists them and kill stops them,
// each saying once that the host's reservations are unknown, and
// unreserve says so of an id it did not find; a plan still fails the
// host closed, none of its GPUs taken as unreserved.
func TestReservationFloodLeavesOwnRunsReachable(t *testing.T) {
	b := newBed(t, hosttest.Profile{Name: "a", GPUs: 2})
	marks := t.TempDir()
	var o1 syncOut
	j := fakeJob("holder", 1, `touch `+marks+`/$TFHIVE_TASK; exec sleep 60`)
	j.GPUsPerWorker = 1
	stop1, wait1 := background(func(ctx context.Context) error { return Run(ctx, b.runOptions(o1.streams(), j)) })
	defer stop1()
	eventually(t, "the worker starts", func() bool {
		es, _ := os.ReadDir(marks)
		return len(es) == 1
	})
	b.fleet.Host("a").Shell(t, `cd "$TFHIVE_CLAIMS_DIR" && i=0 && while [ $i -lt 1025 ]; do : > tfhive-reservation.$i; i=$((i+1)); done`)
	const unknown = "a: claims dir "

	var runs struct {
		Runs []view.RunOnHost `json:"runs"`
	}
	var ps out
	eventually(t, "ps --json says the run runs", func() bool {
		ps = out{}
		if err := Ps(context.Background(), PsOptions{Streams: ps.streams(), Hosts: b.hosts, JSON: true}); err != nil {
			t.Fatalf("ps --json beside 1025 reservation files: %v\n%s", err, ps.stderr.String())
		}
		if err := json.Unmarshal(ps.stdout.Bytes(), &runs); err != nil {
			t.Fatalf("ps --json: %v\n%s", err, ps.stdout.String())
		}
		return len(runs.Runs) == 1 && runs.Runs[0].RunID == "holder" && runs.Runs[0].State == hostops.RunRunning
	})
	contains(t, "ps's stderr", ps.stderr.String(), unknown, "more than 1024 tfhive-reservation files: its reservations are unknown")

	// A plan fails the host closed, saying why.
	var po out
	pj := fakeJob("p", 1, "true")
	pj.GPUsPerWorker = 1
	err := Plan(context.Background(), PlanOptions{Streams: po.streams(), Hosts: b.hosts, Job: pj})
	ue := errAs[*job.UnreachableError](t, err)
	if len(ue.Lines) != 1 || !strings.Contains(ue.Lines[0], "its reservations are unknown, so none of its GPUs is used") {
		t.Errorf("plan beside 1025 reservation files: %v %q, want the host not used, saying why", err, ue.Lines)
	}

	var u out
	err = Unreserve(context.Background(), UnreserveOptions{Streams: u.streams(), Hosts: b.hosts, ID: "0123abcd"})
	if err == nil || !strings.Contains(err.Error(), "no reservation 0123abcd among those listed") || !strings.Contains(err.Error(), "its reservations are unknown") {
		t.Errorf("unreserve beside 1025 reservation files: %v, want no such reservation, the host's reservations unknown", err)
	}

	var k out
	if err := Kill(context.Background(), KillOptions{Streams: k.streams(), Hosts: b.hosts, RunID: "holder", Grace: 2 * time.Second}); err != nil {
		t.Fatalf("kill beside 1025 reservation files: %v\n%s", err, k.stderr.String())
	}
	contains(t, "kill", k.stdout.String(), "stopped run holder on a (1 task)")
	contains(t, "kill's stderr", k.stderr.String(), unknown)
	if err := wait1(); err == nil {
		t.Errorf("a killed run succeeded:\n%s", o1.String())
	}
}
