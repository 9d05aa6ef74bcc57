package slurmrun

import (
	"context"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/emit"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/remote/remotetest"
	"github.com/tfhive/tfhive/probe/remote/shscript"
	"github.com/tfhive/tfhive/probe/remote/shscript/shscripttest"
)

func TestScriptsShellcheck(t *testing.T) { shscripttest.Shellcheck(t, Scripts) }

func TestScriptsSentAsWritten(t *testing.T) {
	for name, s := range map[string]shscript.Script{"submit.sh": submitSh, "follow.sh": followSh, "cancel.sh": cancelSh, "status.sh": statusSh, "queue.sh": queueSh} {
		shscripttest.SameMeaning(t, name, s)
	}
}

func golden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The records a real Slurm printed, read as the jobs ended.
func TestParseAccounting(t *testing.T) {
	acct := golden(t, "sacct-completion.txt")
	for _, tt := range []struct {
		job, state, exit string
		code             int
	}{{"1", "COMPLETED", "0:0", 0}, {"2", "FAILED", "7:0", 7}, {"3", "CANCELLED", "0:0", 0}, {"5", "FAILED", "2:0", 2}} {
		a, ok := ParseAccounting(acct, tt.job)
		if !ok || a.State != tt.state || a.ExitCode != tt.exit || a.Code != tt.code {
			t.Errorf("job %s: %+v %v, want %s %s", tt.job, a, ok, tt.state, tt.exit)
		}
	}
	if a, ok := ParseAccounting(acct, "9"); ok {
		t.Errorf("job 9: %+v, want none", a)
	}
	a, ok := ParseAccounting(golden(t, "scontrol-job.txt"), "2")
	if !ok || a.State != "FAILED" || a.Code != 7 || a.Signal != 0 {
		t.Errorf("scontrol's job 2: %+v %v", a, ok)
	}
	// sacct with a database says who cancelled, and the signal.
	a, ok = ParseAccounting([]byte("sacct|12|CANCELLED by 1000|0:15\nsacct|12.batch|CANCELLED|0:15\n"), "12")
	if !ok || a.State != "CANCELLED" || a.Signal != 15 {
		t.Errorf("job 12: %+v %v", a, ok)
	}
}

func TestOutcome(t *testing.T) {
	for _, tt := range []struct {
		state, exit string
		interrupt   int
		result      string
		code        int
	}{
		{"COMPLETED", "0:0", 0, record.ResultSucceeded, 0},
		{"FAILED", "9:0", 0, record.ResultFailed, 9},
		{"FAILED", "7:0", 0, record.ResultFailed, 1}, // 7 is tfhive's hung
		{"FAILED", "2:0", 0, record.ResultFailed, 1}, // 2 is tfhive's usage
		{"FAILED", "0:9", 0, record.ResultFailed, 137},
		{"FAILED", "0:0", 0, record.ResultFailed, 1},
		{"CANCELLED", "0:15", 0, record.ResultCancelled, 143},
		{"CANCELLED", "0:15", 130, record.ResultInterrupted, 130},
		{"COMPLETED", "0:0", 143, record.ResultInterrupted, 143},
		{"TIMEOUT", "0:0", 0, record.ResultTimeout, 124},
		{"DEADLINE", "0:0", 0, record.ResultTimeout, 124},
		{"NODE_FAIL", "0:0", 0, record.ResultFailed, 4},
		{"PREEMPTED", "0:0", 0, record.ResultPreempted, 5},
		{"OUT_OF_MEMORY", "0:125", 0, record.ResultFailed, 1},
	} {
		e := Outcome(accounting("1", tt.state, tt.exit), true, tt.interrupt)
		if e.Result != tt.result || e.ExitCode != tt.code {
			t.Errorf("%s %s (interrupt %d): %s %d, want %s %d", tt.state, tt.exit, tt.interrupt, e.Result, e.ExitCode, tt.result, tt.code)
		}
	}
	// tfhive kill's stop: the tasks stopped in time, the job completed.
	a := accounting("1", "COMPLETED", "0:0")
	a.Cancelled = true
	if e := Outcome(a, true, 0); e.Result != record.ResultCancelled || e.ExitCode != 143 {
		t.Errorf("cancelled, completed: %+v", e)
	}
	if e := Outcome(a, true, 130); e.Result != record.ResultInterrupted || e.ExitCode != 130 {
		t.Errorf("interrupted, completed: %+v", e)
	}
	if e := Outcome(Accounting{}, false, 0); e.Result != record.ResultFailed || e.ExitCode != 1 {
		t.Errorf("no record: %+v", e)
	}
}

// The job's output: each task's lines to the console and its log, its
// last words its fate; the failed task first.
func TestTasks(t *testing.T) {
	dir := t.TempDir()
	var console strings.Builder
	ts := newTasks([]emit.SlurmTask{{ID: "ps:0", Role: "ps"}, {ID: "worker:0", Role: "worker"}, {ID: "worker:1", Role: "worker", Index: 1, Node: 1}, {ID: "worker:2", Role: "worker", Index: 2}}, dir, &console, false)
	clock := time.Unix(0, 0)
	ts.now = func() time.Time { clock = clock.Add(time.Second); return clock }
	w := &lines{fn: ts.line}
	w.Write([]byte("[ps:0 node1] listening\n[worker:1 node2] step 1\n[worker:1 node2] boom\n[worker:1 node2] tfhive: exited 7\n"))
	w.Write([]byte("[worker:0 node1] tfhive: stopped (exit 143)\n[ps:0 node1] tfhive: stopped (exit 0)\ntfhive: run x failed (exit 7)\n[worker:0 node1] "))
	w.Write([]byte(strings.Repeat("x", maxLine+10) + "\n"))
	w.flush()
	ts.close()
	rs := ts.results(true)
	if rs[0].ID != "worker:1" || *rs[0].ExitCode != 7 || rs[0].Host != "node2" || strings.Join(rs[0].LastLines, "|") != "step 1|boom" {
		t.Errorf("the deciding task: %+v", rs[0])
	}
	if rs[1].ID != "ps:0" || rs[1].Outcome != record.OutcomeStopped || rs[2].ID != "worker:0" || rs[3].Outcome != record.OutcomeNoStart {
		t.Errorf("the others: %+v", rs[1:])
	}
	log, _ := os.ReadFile(dir + "/worker-1.log")
	if string(log) != "step 1\nboom\ntfhive: exited 7\n" {
		t.Errorf("worker-1.log: %q", log)
	}
	if !strings.Contains(console.String(), "tfhive: run x failed (exit 7)\n") || strings.Count(console.String(), "\n") != 8 {
		t.Errorf("console: %d lines\n%.400s", strings.Count(console.String(), "\n"), console.String())
	}
}

func TestParseSubmitted(t *testing.T) {
	id, dir, ok := parseSubmitted("motd\ntfhive-slurm-job 42 /home/me/tfhive-slurm/r\n")
	if !ok || id != "42" || dir != "/home/me/tfhive-slurm/r" {
		t.Errorf("%q %q %v", id, dir, ok)
	}
	if _, _, ok := parseSubmitted("tfhive-slurm-job x;y /d\n"); ok {
		t.Error("a bad id was taken")
	}
}

// sinfo's and squeue's lines as a real Slurm printed them (go test
// -update captures them again), and the typed GPUs of a real cluster's.
func TestParseNodesAndPending(t *testing.T) {
	nodes := ParseNodes(golden(t, "sinfo.txt"))
	if len(nodes) != 2 || nodes[0] != (Node{Name: "node1", Partition: "debug", Default: true, State: "mixed", GPUs: 2, GPUsUsed: 1, CPUs: "1/1/0/2"}) ||
		nodes[1].State != "idle" || nodes[1].GPUsUsed != 0 {
		t.Errorf("nodes: %+v", nodes)
	}
	n := ParseNodes([]byte("sinfo|gpu07|a100|mixed|gpu:a100:4(S:0-1),shard:8|gpu:a100:3(IDX:0-2),shard:0|48/16/0/64\nnot sinfo\n"))
	if len(n) != 1 || n[0].GPUs != 4 || n[0].GPUsUsed != 3 || n[0].GPUType != "a100" || n[0].Default {
		t.Errorf("typed: %+v", n)
	}
	ps := ParsePending(golden(t, "squeue.txt"))
	if len(ps) != 2 || ps[0].ID != "2" || ps[0].Name != "a|b" || ps[0].Reason != "Resources" || ps[0].GRES != "gres:gpu:2" || ps[1].Reason != "Priority" {
		t.Errorf("pending: %+v", ps)
	}
}

// WatchArray over a scripted login node: tail -v's headers say whose
// lines follow (the empty line tail writes before a header is its own),
// scontrol's records say each array task's end.
func TestWatchArray(t *testing.T) {
	fake := &remotetest.Fake{}
	fake.Handle(remotetest.Exact("sh -s"), func(p *remotetest.Proc) int {
		script, _ := io.ReadAll(p.Stdin)
		mark := regexp.MustCompile(`(?m)^tfhive_mark=(\S+)$`).FindStringSubmatch(string(script))
		if mark == nil || !strings.Contains(string(script), "tfhive_array=2\n") {
			t.Errorf("the follow script's parameters:\n%.600s", script)
			return 1
		}
		io.WriteString(p.Stdout, "==> /h/d/job-9_1.out <==\n[worker:0 node2] b\n\n==> /h/d/job-9_0.out <==\n[worker:0 node1] a\n\n"+
			"[worker:0 node1] tfhive: exited 0\n\n==> /h/d/job-9_1.out <==\n[worker:0 node2] tfhive: exited 9\n"+mark[1]+"\n"+
			"scontrol|JobId=10 ArrayJobId=9 ArrayTaskId=0 JobState=COMPLETED ExitCode=0:0\n"+
			"scontrol|JobId=9 ArrayJobId=9 ArrayTaskId=1 JobState=FAILED ExitCode=9:0\n")
		return 0
	})
	var console strings.Builder
	dirs := []string{t.TempDir(), t.TempDir()}
	ends, err := WatchArray(context.Background(), fake, Follow{Job: record.SlurmJob{JobID: "9", Dir: "/h/d", Array: 2, Login: "login"},
		Tasks: []emit.SlurmTask{{ID: "worker:0", Role: "worker"}}, Console: &console, Stderr: io.Discard},
		[]Trial{{ID: "s-001", LogDir: dirs[0]}, {ID: "s-002", LogDir: dirs[1]}})
	if err != nil {
		t.Fatal(err)
	}
	want := "[s-002] [worker:0 node2] b\n[s-001] [worker:0 node1] a\n[s-001] \n[s-001] [worker:0 node1] tfhive: exited 0\n[s-002] [worker:0 node2] tfhive: exited 9\n"
	if console.String() != want {
		t.Errorf("console:\n%s\nwant:\n%s", console.String(), want)
	}
	if ends[0].Ended.Result != record.ResultSucceeded || ends[1].Ended.ExitCode != 9 || ends[1].Tasks[0].Host != "node2" || ends[1].Acct.JobID != "9_1" {
		t.Errorf("ends: %+v", ends)
	}
	if log, _ := os.ReadFile(dirs[1] + "/worker-0.log"); string(log) != "b\ntfhive: exited 9\n" {
		t.Errorf("s-002's worker-0.log: %q", log)
	}
}

// tfhive kill's marker names the array tasks that had not ended
// (cancel.sh): those of this array only.
func TestCancelledTasks(t *testing.T) {
	out := []byte("cancelled\ncancelled|12_1\ncancelled|12_2\ncancelled|13_4\ncancelled|12\ncancelled|12_x\nsacct|12_0|COMPLETED|0:0\n")
	got := CancelledTasks(out, "12")
	if len(got) != 2 || !got[1] || !got[2] {
		t.Errorf("got %v, want 1 and 2", got)
	}
	if got := CancelledTasks([]byte("cancelled\n"), "12"); len(got) != 0 {
		t.Errorf("no list: got %v", got)
	}
}

// A sweep's array cancelled (tfhive kill: the marker; Ctrl-C: the marker
// and the interrupt): the trial that had ended before keeps its end, the
// one cancel.sh found running is cancelled (interrupted after Ctrl-C).
func TestWatchArrayCancelled(t *testing.T) {
	for _, ctrlC := range []bool{false, true} {
		fake := &remotetest.Fake{}
		stopped := make(chan struct{})
		fake.Handle(remotetest.Exact("sh -s"), func(p *remotetest.Proc) int {
			script, _ := io.ReadAll(p.Stdin)
			if strings.Contains(string(script), "scancel") && !strings.Contains(string(script), "tfhive_mark=") {
				close(stopped) // cancel.sh
				return 0
			}
			if ctrlC {
				<-stopped
			}
			mark := regexp.MustCompile(`(?m)^tfhive_mark=(\S+)$`).FindStringSubmatch(string(script))
			io.WriteString(p.Stdout, "==> /h/d/job-9_0.out <==\n[worker:0 node1] tfhive: exited 0\n"+mark[1]+"\ncancelled\ncancelled|9_1\n"+
				"scontrol|JobId=10 ArrayJobId=9 ArrayTaskId=0 JobState=COMPLETED ExitCode=0:0\n"+
				"scontrol|JobId=9 ArrayJobId=9 ArrayTaskId=1 JobState=COMPLETED ExitCode=0:0\n")
			return 0
		})
		ctx, cancel := context.WithCancel(context.Background())
		if ctrlC {
			cancel()
		}
		ends, err := WatchArray(ctx, fake, Follow{Job: record.SlurmJob{JobID: "9", Dir: "/h/d", Array: 2, Login: "login"},
			Tasks: []emit.SlurmTask{{ID: "worker:0", Role: "worker"}}, Console: io.Discard, Stderr: io.Discard,
			Interrupt: func() int { return 130 }}, []Trial{{ID: "s-001", LogDir: t.TempDir()}, {ID: "s-002", LogDir: t.TempDir()}})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		want := record.ResultCancelled
		if ctrlC {
			want = record.ResultInterrupted
		}
		if ends[0].Ended.Result != record.ResultSucceeded || ends[1].Ended.Result != want {
			t.Errorf("Ctrl-C %v: ends %s, %s; want succeeded, %s", ctrlC, ends[0].Ended.Result, ends[1].Ended.Result, want)
		}
	}
}
