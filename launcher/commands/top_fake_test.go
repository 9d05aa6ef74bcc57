package commands

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/top"
	"github.com/tfhive/tfhive/schedule"
)

// top's source on fake hosts: a run of the user's shows with its GPUs,
// hosts and the loss its task printed (metrics.json, while it runs), its
// log tails, and stop stops it through kill's path over the same
// connections; the plain text (not a terminal) shows the same once.
func TestTopOnFakeHosts(t *testing.T) {
	b := twoHosts(t)
	root := filepath.Join(b.dir, "logs")
	var o syncOut
	j := fakeJob("watched", 2, `echo "step 1 loss=0.75"; while :; do sleep 0.05; done`)
	j.GPUsPerWorker = 1
	ro := b.runOptions(o.streams(), j)
	ro.Capture = []string{`loss=loss=([0-9.]+)`}
	stop, wait := background(func(ctx context.Context) error { return Run(ctx, ro) })
	defer stop()

	src, err := newTopSource(TopOptions{Streams: Streams{Stdout: os.Stdout, Stderr: os.Stderr}, Hosts: b.hosts, LogRoot: root,
		Grace: 2 * time.Second, Availability: Availability{MaxUtilPct: schedule.DefaultMaxUtilPct, MaxMemMiB: schedule.DefaultMaxMemMiB}}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer src.fleet.Close()
	var snap top.Snapshot
	var run top.Run
	eventuallySaying(t, "top shows the run, its GPUs and its loss", func() bool {
		snap = src.Refresh(context.Background())
		for _, r := range snap.Mine {
			if r.ID == "watched" {
				run = r
			}
		}
		return snap.Err == nil && run.Live && run.GPUs == 2 && run.Metric == "loss=0.75"
	}, func() string { return top.Plain(&snap, "") + o.String() })
	if strings.Join(run.Hosts, ",") != "a,b" || run.LogDir != ro.LogDir || run.State != "running" {
		t.Errorf("run: %+v", run)
	}
	plain := top.Plain(&snap, "")
	contains(t, "plain", plain, "HOST", "claimed", "watched", "worker:0", "worker:1", "QUEUE  no run waits", "loss=0.75")

	tail := top.TailLog(run, 0, 10)
	// A foreground run keeps its console too: console.log first.
	if tail.Err != nil || len(tail.Files) != 3 || tail.Files[0] != "console.log" || !strings.Contains(strings.Join(tail.Lines, "\n"), "step 1 loss=0.75") {
		t.Errorf("tail: %+v", tail)
	}

	said, err := src.stop(context.Background(), "watched")
	if err != nil || !strings.Contains(said, "stopped run watched on a (1 task)") || !strings.Contains(said, "on b (1 task)") {
		t.Fatalf("stop: %q, %v", said, err)
	}
	if err := wait(); err == nil {
		t.Error("the stopped run succeeded")
	}
	if _, err := src.stop(context.Background(), "nosuch"); err == nil || !strings.Contains(err.Error(), "no run nosuch holds") {
		t.Errorf("stop of no run: %v", err)
	}
	// Ended, it is listed from its summary, holding nothing.
	snap = src.Refresh(context.Background())
	if len(snap.Mine) != 1 || snap.Mine[0].Live || snap.Mine[0].State == "running" || snap.Mine[0].Metric != "loss=0.75" {
		t.Errorf("after the stop: %+v", snap.Mine)
	}

	// Not a terminal: one snapshot, as text.
	var p out
	if err := Top(context.Background(), TopOptions{Streams: p.streams(), Hosts: b.hosts, LogRoot: root,
		Availability: Availability{MaxUtilPct: schedule.DefaultMaxUtilPct, MaxMemMiB: schedule.DefaultMaxMemMiB}}); err != nil {
		t.Fatal(err)
	}
	contains(t, "top into a buffer", p.stdout.String(), "tfhive top", "2 hosts", "4 GPUs, 4 free", "watched")
	if err := Top(context.Background(), TopOptions{Streams: p.streams(), Hosts: b.hosts, Interval: -time.Second}); err == nil ||
		!strings.Contains(err.Error(), "--interval must not be negative") {
		t.Errorf("negative interval: %v", err)
	}
}
