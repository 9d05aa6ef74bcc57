package commands

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/view"
)

// A job of two workers runs on both hosts, each with a GPU of its own,
// its output on the console under its prefix, and its run directory on
// its own host.
func TestRunOnFakeHosts(t *testing.T) {
	b := twoHosts(t)
	var o out
	j := fakeJob("ok", 2, `echo "task=$TFHIVE_TASK run=$TFHIVE_RUN_ID cvd=[$CUDA_VISIBLE_DEVICES] home=$HOME"`)
	j.GPUsPerWorker = 1
	ro := b.runOptions(o.streams(), j)
	if err := Run(context.Background(), ro); err != nil {
		t.Fatalf("run: %v\n%s", err, o.stderr.String())
	}
	s := summary(t, ro.LogDir)
	if s.Result != "succeeded" || s.ExitCode != 0 || len(s.Tasks) != 2 {
		t.Fatalf("summary %+v", s)
	}
	for _, tr := range s.Tasks {
		h := b.fleet.Host(tr.Host)
		log, _ := os.ReadFile(tr.Log)
		contains(t, tr.ID+" log", string(log), "task="+tr.ID+" run=ok cvd=[", "home="+h.Home())
		if tr.Outcome != "exited" || tr.ExitCode == nil || *tr.ExitCode != 0 || len(tr.GPUs) != 1 {
			t.Errorf("%s: %+v", tr.ID, tr)
		}
		if _, err := os.Stat(h.RunDir("ok")); err != nil {
			t.Errorf("%s's run dir on %s: %v", tr.ID, tr.Host, err)
		}
	}
	if task(s, "worker:0").Host == task(s, "worker:1").Host {
		t.Errorf("spread puts the workers on both hosts: %+v", s.Tasks)
	}
	contains(t, "stdout", o.stdout.String(), "[worker:0 a", "[worker:1 b", "run ok succeeded")
	if _, err := os.Stat(filepath.Join(ro.LogDir, "worker-1.log")); err != nil {
		t.Error(err)
	}
}

// A failing worker fails the run with its own code, stops the other, and
// says so on stderr; --json puts the summary alone on stdout.
func TestRunFailingTaskOnFakeHosts(t *testing.T) {
	b := twoHosts(t)
	var o out
	ro := b.runOptions(o.streams(), fakeJob("bad", 3, `if [ "$TFHIVE_TASK" = worker:1 ]; then echo dying >&2; exit 9; fi; exec sleep 60`))
	ro.JSON = true
	start := time.Now()
	err := Run(context.Background(), ro)
	rf := errAs[*RunFailedError](t, err)
	if rf.Summary.ExitCode != 9 || rf.Summary.Result != "failed" {
		t.Errorf("summary %+v", rf.Summary)
	}
	var s record.Summary
	if err := json.Unmarshal(o.stdout.Bytes(), &s); err != nil {
		t.Fatalf("--json: stdout must be the summary alone: %v\n%s", err, o.stdout.String())
	}
	if s.Tasks[0].ID != "worker:1" || *s.Tasks[0].ExitCode != 9 || s.LogDir != ro.LogDir {
		t.Fatalf("the failing task comes first: %+v", s.Tasks)
	}
	for _, tr := range s.Tasks[1:] {
		if tr.Outcome != "stopped" {
			t.Errorf("%s: outcome %s, want stopped", tr.ID, tr.Outcome)
		}
	}
	contains(t, "stderr (task output under --json)", o.stderr.String(), "[worker:1 b", "dying")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("stopping took %s: SIGTERM ends sleep at once", d)
	}
}

// A run holding GPUs is listed by ps (text and JSON) with its tasks, a
// run waiting for them (--wait) by queue; kill stops the first, after
// which the second starts and ends; a second kill finds nothing.
func TestRunPsQueueKillOnFakeHosts(t *testing.T) {
	b := twoHosts(t)
	marks := t.TempDir()
	var o1 syncOut
	j := fakeJob("holder", 2, `touch `+marks+`/$TFHIVE_TASK; exec sleep 60`)
	j.GPUsPerWorker = 1
	ro := b.runOptions(o1.streams(), j)
	stop1, wait1 := background(func(ctx context.Context) error { return Run(ctx, ro) })
	defer stop1()
	eventually(t, "both workers start", func() bool {
		es, _ := os.ReadDir(marks)
		return len(es) == 2
	})

	// Its state is read from the hosts' run directories, written a
	// moment after the tasks start.
	var runs struct {
		Runs []view.RunOnHost `json:"runs"`
	}
	eventually(t, "ps --json says the run runs", func() bool {
		var psj out
		if err := Ps(context.Background(), PsOptions{Streams: psj.streams(), Hosts: b.hosts, JSON: true}); err != nil {
			t.Fatalf("ps --json: %v", err)
		}
		if err := json.Unmarshal(psj.stdout.Bytes(), &runs); err != nil {
			t.Fatalf("ps --json: %v\n%s", err, psj.stdout.String())
		}
		return len(runs.Runs) == 2 && runs.Runs[0].State == hostops.RunRunning && runs.Runs[1].State == hostops.RunRunning
	})
	for _, r := range runs.Runs {
		if r.RunID != "holder" || len(r.GPUs) != 1 || len(r.Tasks) != 1 || r.Keeper == nil || !*r.Keeper {
			t.Errorf("ps --json: %+v", r)
		}
	}
	var ps out
	if err := Ps(context.Background(), PsOptions{Streams: ps.streams(), Hosts: b.hosts}); err != nil {
		t.Fatalf("ps: %v", err)
	}
	contains(t, "ps", ps.stdout.String(), "RUN", "holder", "worker:0", "worker:1", "running")

	// Four GPUs wanted, two free: the second run waits, in the queue.
	var o2 syncOut
	j2 := fakeJob("waiter", 4, `echo got $CUDA_VISIBLE_DEVICES`)
	j2.GPUsPerWorker = 1
	ro2 := b.runOptions(o2.streams(), j2)
	ro2.Wait = 30 * time.Second
	stop2, wait2 := background(func(ctx context.Context) error { return Run(ctx, ro2) })
	defer stop2()
	var q out
	eventually(t, "the waiting run is queued", func() bool {
		q = out{}
		err := Queue(context.Background(), QueueOptions{Streams: q.streams(), Hosts: b.hosts})
		return err == nil && strings.Contains(q.stdout.String(), "waiter")
	})
	contains(t, "queue", q.stdout.String(), "POS", "WHY", "1 ", "waiter", "4 (")
	var qj out
	if err := Queue(context.Background(), QueueOptions{Streams: qj.streams(), Hosts: b.hosts, JSON: true}); err != nil {
		t.Fatal(err)
	}
	contains(t, "queue --json", qj.stdout.String(), `"queue": [`, `"run_id": "waiter"`, `"gpus": 4`)

	var k out
	if err := Kill(context.Background(), KillOptions{Streams: k.streams(), Hosts: b.hosts, RunID: "holder", Grace: 2 * time.Second}); err != nil {
		t.Fatalf("kill: %v\n%s", err, k.stderr.String())
	}
	contains(t, "kill", k.stdout.String(), "stopped run holder on a (1 task)", "stopped run holder on b (1 task)")
	err := wait1()
	if rf := errAs[*RunFailedError](t, err); rf.Summary.Result == "succeeded" {
		t.Errorf("a killed run: %+v", rf.Summary)
	}
	if err := wait2(); err != nil {
		t.Fatalf("the waiting run, once the GPUs are free: %v\n%s", err, o2.String())
	}
	contains(t, "waiter", o2.String(), "tfhive: waiting for 4 GPUs (", "1st in the queue", "tfhive: waited ", "got ", "run waiter succeeded")
	k = out{}
	err = Kill(context.Background(), KillOptions{Streams: k.streams(), Hosts: b.hosts, RunID: "holder"})
	if err == nil || !strings.Contains(err.Error(), "no run holder holds GPUs or ports on these hosts") {
		t.Errorf("kill of an ended run: %v", err)
	}
}
