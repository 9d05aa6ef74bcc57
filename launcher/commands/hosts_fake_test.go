package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/doctor"
	"github.com/tfhive/tfhive/launcher/keeper"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/probe/hosttest"
)

// status lists every GPU of the hosts reached, and a host not reached as
// an UnreachableError after the table; --json too.
func TestStatusOnFakeHosts(t *testing.T) {
	b := newBed(t, hosttest.Profile{Name: "a", GPUs: 2}, hosttest.Profile{Name: "b", Capture: "busy-4gpu.xml"},
		hosttest.Profile{Name: "down", Down: true})
	var o out
	err := Status(context.Background(), StatusOptions{Streams: o.streams(), Hosts: b.hosts})
	u := errAs[*UnreachableError](t, err)
	if u.Bad != 1 || u.Total != 3 || len(u.Lines) != 1 || !strings.HasPrefix(u.Lines[0], "down: ") {
		t.Errorf("unreachable: %+v", u)
	}
	contains(t, "status", o.stdout.String(), "HOST", "a", "NVIDIA A100", "b")
	if n := strings.Count(o.stdout.String(), "\nb "); n != 4 {
		t.Errorf("b's 4 GPUs: %d rows\n%s", n, o.stdout.String())
	}
	var j out
	err = Status(context.Background(), StatusOptions{Streams: j.streams(), Hosts: b.hosts, JSON: true})
	errAs[*UnreachableError](t, err)
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(j.stdout.Bytes(), &doc); err != nil {
		t.Fatalf("status --json: %v\n%s", err, j.stdout.String())
	}
	contains(t, "status --json", j.stdout.String(), `"host": "a"`, `"host": "down"`, `"kind": "refused"`)
}

// plan says where each task would run, starting nothing; --json gives
// the plan's tasks with their hosts and GPUs; a job bigger than the
// hosts is a capacity error.
func TestPlanOnFakeHosts(t *testing.T) {
	b := twoHosts(t)
	j := fakeJob("p", 2, "true")
	j.GPUsPerWorker, j.PS = 1, 1
	var o out
	if err := Plan(context.Background(), PlanOptions{Streams: o.streams(), Hosts: b.hosts, Job: j}); err != nil {
		t.Fatalf("plan: %v\n%s", err, o.stderr.String())
	}
	contains(t, "plan", o.stdout.String(), "ps:0", "worker:0", "worker:1", "a", "b")
	var pj out
	if err := Plan(context.Background(), PlanOptions{Streams: pj.streams(), Hosts: b.hosts, Job: j, JSON: true}); err != nil {
		t.Fatal(err)
	}
	contains(t, "plan --json", pj.stdout.String(), `"worker:1"`, `"TF_CONFIG"`)
	for _, h := range b.fleet.Hosts {
		if es, _ := os.ReadDir(h.ClaimsDir()); len(es) != 0 {
			t.Errorf("plan claimed on %s: %d files", h.Name, len(es))
		}
	}
	j.Workers = 9
	err := Plan(context.Background(), PlanOptions{Streams: o.streams(), Hosts: b.hosts, Job: j})
	if err == nil || !strings.Contains(err.Error(), "GPU") {
		t.Errorf("a job of 9 GPUs on 4: %v", err)
	}
}

// doctor marks the host whose Python differs and returns a DifferError
// naming it; equal hosts pass; --json says the same.
func TestDoctorOnFakeHosts(t *testing.T) {
	b := newBed(t, hosttest.Profile{Name: "a", GPUs: 1, Python: "3.11.4"}, hosttest.Profile{Name: "b", GPUs: 1, Python: "3.11.4"},
		hosttest.Profile{Name: "odd", GPUs: 1, Python: "3.99.0"})
	var o out
	err := Doctor(context.Background(), DoctorOptions{Streams: o.streams(), Hosts: b.hosts})
	d := errAs[*DifferError](t, err)
	contains(t, "doctor", o.stdout.String(), "HOST", "PYTHON", "TENSORFLOW", "TORCH", "DRIVER", "3.99.0*", "3.11.4")
	contains(t, "error", d.Error(), "odd: python version 3.99.0, where 2 of 3 hosts have 3.11.4")
	if strings.Count(o.stdout.String(), "*") != 1 {
		t.Errorf("more than the odd version marked:\n%s", o.stdout.String())
	}
	ab := b.hosts
	ab.Hosts = []string{"a,b"}
	o = out{}
	if err := Doctor(context.Background(), DoctorOptions{Streams: o.streams(), Hosts: ab}); err != nil {
		t.Errorf("equal hosts: %v\n%s", err, o.stdout.String())
	}
	o = out{}
	err = Doctor(context.Background(), DoctorOptions{Streams: o.streams(), Hosts: b.hosts, JSON: true, Imports: []string{"json"}})
	errAs[*DifferError](t, err)
	var rep doctor.Report
	if err := json.Unmarshal(o.stdout.Bytes(), &rep); err != nil || !rep.Differs || len(rep.Hosts) != 3 {
		t.Errorf("doctor --json: %v, %+v", err, rep)
	}
}

// run --check refuses to start on hosts that differ, claiming nothing.
func TestRunCheckOnFakeHosts(t *testing.T) {
	b := newBed(t, hosttest.Profile{Name: "a", GPUs: 1, Python: "3.11.4"}, hosttest.Profile{Name: "odd", GPUs: 1, Python: "3.99.0"},
		hosttest.Profile{Name: "c", GPUs: 1, Python: "3.11.4"})
	var o out
	ro := b.runOptions(o.streams(), fakeJob("checked", 3, "echo ran"))
	ro.Check = true
	err := Run(context.Background(), ro)
	errAs[*CheckError](t, err)
	if strings.Contains(o.stdout.String(), "ran") {
		t.Errorf("a task ran:\n%s", o.stdout.String())
	}
}

// gc removes the host files of ended runs older than --older-than and
// keeps the others; --dry-run removes nothing.
func TestGCOnFakeHosts(t *testing.T) {
	b := twoHosts(t)
	for _, name := range []string{"old", "new"} {
		var o out
		if err := Run(context.Background(), b.runOptions(o.streams(), fakeJob(name, 2, "seq 1 100"))); err != nil {
			t.Fatalf("run %s: %v", name, err)
		}
	}
	past := time.Now().Add(-2 * time.Hour)
	for _, h := range b.fleet.Hosts {
		filepath.Walk(h.RunDir("old"), func(p string, _ os.FileInfo, err error) error {
			if err == nil {
				os.Chtimes(p, past, past)
			}
			return nil
		})
	}
	var o out
	if err := GC(context.Background(), GCOptions{Streams: o.streams(), Hosts: b.hosts, OlderThan: ptr(time.Hour), DryRun: true}); err != nil {
		t.Fatalf("gc --dry-run: %v", err)
	}
	for _, h := range b.fleet.Hosts {
		if _, err := os.Stat(h.RunDir("old")); err != nil {
			t.Errorf("--dry-run removed %s's files: %v", h.Name, err)
		}
	}
	o = out{}
	if err := GC(context.Background(), GCOptions{Streams: o.streams(), Hosts: b.hosts, OlderThan: ptr(time.Hour), JSON: true}); err != nil {
		t.Fatalf("gc: %v\n%s", err, o.stderr.String())
	}
	var doc struct {
		Hosts []struct {
			Host string
			Runs []struct {
				RunID   string `json:"run_id"`
				State   string
				Removed bool
			}
		}
	}
	if err := json.Unmarshal(o.stdout.Bytes(), &doc); err != nil || len(doc.Hosts) != 2 {
		t.Fatalf("gc --json: %v\n%s", err, o.stdout.String())
	}
	for _, h := range b.fleet.Hosts {
		if _, err := os.Stat(h.RunDir("old")); err == nil {
			t.Errorf("%s: the old run's files are still there", h.Name)
		}
		if _, err := os.Stat(h.RunDir("new")); err != nil {
			t.Errorf("%s: the new run's files are gone: %v", h.Name, err)
		}
	}
	contains(t, "gc --json", o.stdout.String(), `"run_id": "old"`, `"removed": true`)
	o = out{}
	if err := GC(context.Background(), GCOptions{Streams: o.streams(), Hosts: b.hosts, OlderThan: ptr(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	contains(t, "gc", o.stdout.String(), "a: run files: freed 0 B", "1 ended in the last 1h0m")
	// --older-than 0s is 0: the run that just ended goes too. Without
	// --older-than, a week.
	o = out{}
	if err := GC(context.Background(), GCOptions{Streams: o.streams(), Hosts: b.hosts}); err != nil {
		t.Fatal(err)
	}
	contains(t, "gc", o.stdout.String(), "a: run files: freed 0 B", "1 ended in the last 7d")
	o = out{}
	if err := GC(context.Background(), GCOptions{Streams: o.streams(), Hosts: b.hosts, OlderThan: ptr(time.Duration(0))}); err != nil {
		t.Fatal(err)
	}
	contains(t, "gc --older-than 0s", o.stdout.String(), "(1 ended run)")
	for _, h := range b.fleet.Hosts {
		if _, err := os.Stat(h.RunDir("new")); err == nil {
			t.Errorf("%s: gc --older-than 0s kept the run that ended", h.Name)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// run --sync makes the tree present on every host used, the tasks run
// in it; a second run finds it there; gc keeps it while it is recent.
func TestRunSyncOnFakeHosts(t *testing.T) {
	b := twoHosts(t)
	tree := t.TempDir()
	if err := os.WriteFile(filepath.Join(tree, "train.sh"), []byte("echo trained from $(pwd)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(tree, "skip.log"), []byte("x"), 0o644)
	for i, name := range []string{"sync1", "sync2"} {
		var o out
		j := fakeJob(name, 2, "sh train.sh; test ! -e skip.log")
		j.Sync, j.SyncExclude = tree, []string{"*.log"}
		ro := b.runOptions(o.streams(), j)
		if err := Run(context.Background(), ro); err != nil {
			t.Fatalf("run %s: %v\n%s", name, err, o.stderr.String())
		}
		contains(t, name, o.stdout.String(), "trained from ", "run "+name+" succeeded")
		s := summary(t, ro.LogDir)
		if s.Code == nil || s.Code.Files != 1 || len(s.Code.Hosts) != 2 {
			t.Fatalf("%s: code report %+v", name, s.Code)
		}
		// The first run sends the tree to both hosts, the second finds it.
		if want := []int{2, 0}[i]; s.Code.Sent != want {
			t.Errorf("%s: sent to %d hosts, want %d", name, s.Code.Sent, want)
		}
		if i == 0 {
			contains(t, "stderr", o.stderr.String(), "tfhive: sent code ")
		}
		for _, hr := range s.Code.Hosts {
			if !strings.HasPrefix(hr.Dir, b.fleet.Host(hr.Host).Home()) {
				t.Errorf("%s's tree is outside its home: %s", hr.Host, hr.Dir)
			}
		}
	}
	var o out
	if err := GC(context.Background(), GCOptions{Streams: o.streams(), Hosts: b.hosts, OlderThan: ptr(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	contains(t, "gc", o.stdout.String(), "a: ", "b: ")
}

// --capture records the last value each task printed; the summary has
// them, and runs sorts by one.
func TestRunCaptureOnFakeHosts(t *testing.T) {
	b := twoHosts(t)
	root := filepath.Join(b.dir, "logs")
	for i, name := range []string{"lr1", "lr2"} {
		var o out
		ro := b.runOptions(o.streams(), fakeJob(name, 2, `echo "step 1 loss=0.9"; echo "step 2 loss=0.`+strconv.Itoa(i+1)+`"`))
		ro.Capture = []string{`loss=loss=([0-9.]+)`, `step=step (\d+)`}
		if err := Run(context.Background(), ro); err != nil {
			t.Fatalf("run: %v\n%s", err, o.stderr.String())
		}
		s := summary(t, ro.LogDir)
		if s.Metrics["loss"] != "0."+strconv.Itoa(i+1) || task(s, "worker:0").Metrics["step"] != "2" {
			t.Errorf("%s: metrics %v, worker:0's %v", name, s.Metrics, task(s, "worker:0").Metrics)
		}
	}
	var o out
	if err := Runs(context.Background(), RunsOptions{Streams: o.streams(), LogRoot: root, Sort: "loss", Reverse: true}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(o.stdout.String(), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[1], "lr2") || !strings.HasPrefix(lines[2], "lr1") {
		t.Errorf("runs --sort loss --reverse:\n%s", o.stdout.String())
	}
	if got := CompleteMetrics(root); !slices.ContainsFunc(got, func(c Candidate) bool { return c.Word == "loss" }) {
		t.Errorf("metric completions: %v", got)
	}
	if got := CompleteTasks(fakeJob("x", 2, "true")); len(got) != 2 {
		t.Errorf("task completions: %v", got)
	}
}

// A task that fails on its first attempt is restarted (--restarts) and
// the run succeeds; the summary keeps both attempts.
func TestRunRestartsOnFakeHosts(t *testing.T) {
	b := twoHosts(t)
	var o out
	ro := b.runOptions(o.streams(), fakeJob("again", 2, `echo attempt=$TFHIVE_ATTEMPT; [ "$TFHIVE_TASK" = worker:1 ] && [ "$TFHIVE_ATTEMPT" = 0 ] && exit 3; exit 0`))
	ro.Restarts, ro.RestartOn, ro.RestartBackoff = 1, "1-127", 10*time.Millisecond
	if err := Run(context.Background(), ro); err != nil {
		t.Fatalf("run: %v\n%s", err, o.stderr.String())
	}
	s := summary(t, ro.LogDir)
	w1 := task(s, "worker:1")
	if len(w1.Attempts) != 2 || w1.Attempts[0].Outcome != "exited" || w1.Attempts[1].Outcome != "exited" {
		t.Errorf("worker:1's attempts: %+v", w1.Attempts)
	}
	contains(t, "stdout", o.stdout.String(), "attempt=1", "run again succeeded")
}

// logs -H reads a kept run's task output from its hosts; attach -H adopts
// a detached run whose keeper is gone and carries it to its end.
func TestLogsAndAdoptFromHostsOnFakeHosts(t *testing.T) {
	b := twoHosts(t)
	flag := filepath.Join(b.dir, "go-on")
	var o out
	ro, err := b.detach(&o, fakeJob("adoptme", 2, `seq 1 100; while [ ! -e `+flag+` ]; do sleep 0.05; done; seq 101 200`))
	if err != nil {
		t.Fatalf("run --detach: %v\n%s", err, o.stderr.String())
	}
	// The keeper dies once both tasks are well under way.
	eventually(t, "both workers print", func() bool {
		for _, name := range []string{"worker-0.log", "worker-1.log"} {
			if data, _ := os.ReadFile(filepath.Join(ro.LogDir, name)); !strings.HasSuffix(string(data), "\n100\n") {
				return false
			}
		}
		return true
	})
	keeper := keeperPid(t, ro.LogDir)
	syscall.Kill(keeper, syscall.SIGKILL)
	eventually(t, "the keeper's end", func() bool { return !rundir.GoesOn(ro.LogDir) })

	var l out
	var lerr error
	eventuallySaying(t, "logs -H shows worker:1's first lines", func() bool {
		l = out{}
		lerr = Logs(context.Background(), FollowOptions{Streams: l.streams(), RunID: "adoptme", FromHosts: true, Hosts: b.hosts, Task: "worker:1"})
		return lerr == nil && strings.HasSuffix(l.stdout.String(), "\n100\n")
	}, func() string {
		return fmt.Sprintf("error: %v\nstdout:\n%s\nstderr:\n%s", lerr, l.stdout.String(), l.stderr.String())
	})
	l = out{}
	if err := Logs(context.Background(), FollowOptions{Streams: l.streams(), RunID: "adoptme", FromHosts: true, Hosts: b.hosts}); err != nil {
		t.Fatalf("logs -H: %v", err)
	}
	contains(t, "logs -H", l.stdout.String(), "[worker:0 a", "[worker:1 b", "] 100\n")

	var a syncOut
	logDir2 := filepath.Join(b.dir, "adopted")
	stop, wait := background(func(ctx context.Context) error {
		return Attach(ctx, FollowOptions{Streams: a.streams(), RunID: "adoptme", Adopt: true, Hosts: b.hosts,
			LogDir: logDir2, Grace: 2 * time.Second, Reconnect: DefaultReconnect})
	})
	defer stop()
	eventually(t, "the adopter follows from the first line", func() bool {
		s := a.String()
		return strings.Contains(s, "tfhive: run adoptme adopted (keeper generation 2)") && strings.Contains(s, "] 100\n")
	})
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Fatalf("attach -H: %v\n%s", err, a.String())
	}
	s := summary(t, logDir2)
	if s.Result != "succeeded" {
		t.Errorf("adopter's summary: %+v", s)
	}
	if data, _ := os.ReadFile(filepath.Join(logDir2, "worker-1.log")); strings.Count(string(data), "\n") != 200 {
		t.Errorf("adopter's worker-1.log: %d lines", strings.Count(string(data), "\n"))
	}
	err = Attach(context.Background(), FollowOptions{Streams: o.streams(), RunID: "nosuch", Adopt: true, Hosts: b.hosts, LogDir: filepath.Join(b.dir, "n")})
	if err == nil || !strings.Contains(err.Error(), "no run nosuch on a, b") {
		t.Errorf("attach -H of no such run: %v", err)
	}
}

// keeperPid is the pid of the keeper of the run logging in logDir.
func keeperPid(t *testing.T, logDir string) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range procs {
		env, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(env), "\x00"+keeper.LogDirEnv+"="+logDir+"\x00") {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
			return pid
		}
	}
	t.Fatalf("no keeper for %s", logDir)
	return 0
}

// Completing a run id lists the runs holding claims on the hosts and
// those logged in ./tfhive-runs.
func TestCompleteRunsOnFakeHosts(t *testing.T) {
	b := twoHosts(t)
	t.Chdir(b.dir)
	marks := t.TempDir()
	var o syncOut
	ro := b.runOptions(o.streams(), fakeJob("live", 1, `touch `+marks+`/up; exec sleep 60`))
	ro.LogDir = ""
	stop, wait := background(func(ctx context.Context) error { return Run(ctx, ro) })
	eventually(t, "the task starts", func() bool { _, err := os.Stat(filepath.Join(marks, "up")); return err == nil })
	// A Tab's probe has completeBudget: on a loaded machine a try may
	// come back empty.
	eventually(t, "the live run is completed", func() bool {
		got := CompleteRuns(context.Background(), b.hosts, false)
		return slices.ContainsFunc(got, func(c Candidate) bool { return c.Word == "live" })
	})
	if got := CompleteHosts(b.hosts, true); len(got) != 2 || got[0].Word != "a" {
		t.Errorf("host completions: %v", got)
	}
	stop()
	wait()
}
