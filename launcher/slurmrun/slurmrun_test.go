package slurmrun

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/emit"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/remote"
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
	ts := newTasks([]emit.SlurmTask{{ID: "ps:0", Role: "ps"}, {ID: "worker:0", Role: "worker"}, {ID: "worker:1", Role: "worker", Index: 1, Node: 1},
		{ID: "worker:2", Role: "worker", Index: 2}, {ID: "worker:3", Role: "worker", Index: 3}}, dir, &console, false)
	clock := time.Unix(0, 0)
	ts.now = func() time.Time { clock = clock.Add(time.Second); return clock }
	w := &lines{fn: ts.line}
	w.Write([]byte("[ps:0 node1] listening\n[worker:1 node2] step 1\n[worker:1 node2] boom\n[worker:1 node2] tfhive: exited 7\n"))
	w.Write([]byte("[worker:0 node1] tfhive: stopped (exit 143)\n[ps:0 node1] tfhive: stopped (exit 0)\ntfhive: run x failed (exit 7)\n[worker:0 node1] "))
	w.Write([]byte(strings.Repeat("x", maxLine+10) + "\n"))
	// worker:3 says its shell's last words itself, then is killed: no
	// file says how it ended.
	w.Write([]byte("[worker:3 node1] tfhive: exited 0\n"))
	w.flush()
	ts.fate("worker:1", "exited 7")
	ts.fate("worker:0", "stopped 143")
	ts.fate("ps:0", "stopped 0")
	ts.fate("worker:2", "exited 0; rm")
	ts.fate("nosuch:0", "exited 0")
	ts.close()
	rs := ts.results(true)
	if rs[0].ID != "worker:1" || *rs[0].ExitCode != 7 || rs[0].Host != "node2" || strings.Join(rs[0].LastLines, "|") != "step 1|boom" {
		t.Errorf("the deciding task: %+v", rs[0])
	}
	if rs[1].ID != "ps:0" || rs[1].Outcome != record.OutcomeStopped || rs[2].ID != "worker:0" || *rs[2].ExitCode != 143 || rs[3].Outcome != record.OutcomeNoStart {
		t.Errorf("the others: %+v", rs[1:])
	}
	if rs[4].ID != "worker:3" || rs[4].Outcome != record.OutcomeStopped || rs[4].ExitCode != nil {
		t.Errorf("a task that said its own last words: %+v, want stopped", rs[4])
	}
	log, _ := os.ReadFile(dir + "/worker-1.log")
	if string(log) != "step 1\nboom\ntfhive: exited 7\n" {
		t.Errorf("worker-1.log: %q", log)
	}
	if !strings.Contains(console.String(), "tfhive: run x failed (exit 7)\n") || strings.Count(console.String(), "\n") != 9 {
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
// the files the tasks' shells left their ends, scontrol's records each
// array task's end. A header without this follow's token (a line of the
// batch script's, the user's login shell's) moves nothing: the lines stay
// their file's.
func TestWatchArray(t *testing.T) {
	fake := &remotetest.Fake{}
	fake.Handle(remotetest.Exact("sh -s"), func(p *remotetest.Proc) int {
		script, _ := io.ReadAll(p.Stdin)
		mark := regexp.MustCompile(`(?m)^tfhive_mark=(\S+)$`).FindStringSubmatch(string(script))
		tok := regexp.MustCompile(`(?m)^tfhive_token=(\S+)$`).FindStringSubmatch(string(script))
		if mark == nil || tok == nil || !strings.Contains(string(script), "tfhive_array=2\n") || !strings.Contains(string(script), "tfhive_tasks=worker:0\n") {
			t.Errorf("the follow script's parameters:\n%.600s", script)
			return 1
		}
		dir := "/tmp/tfhive-follow.Ab12/" + tok[1]
		io.WriteString(p.Stdout, "==> "+dir+"/job-9_1.out <==\n[worker:0 node2] b\n==> /h/d/job-9_0.out <==\n==> /tmp/x/0123/job-9_0.out <==\n\n==> "+dir+"/job-9_0.out <==\n[worker:0 node1] a\n\n"+
			"[worker:0 node1] tfhive: exited 0\n\n==> "+dir+"/job-9_1.out <==\n[worker:0 node2] tfhive: exited 0\n\n"+mark[1]+"\n"+
			"fate|9_0|worker:0|exited 0\nfate|9_1|worker:0|exited 9\nfate|9|worker:0|exited 0\n"+
			"scontrol|JobId=10 ArrayJobId=9 ArrayTaskId=0 JobState=COMPLETED ExitCode=0:0\n"+
			"scontrol|JobId=9 ArrayJobId=9 ArrayTaskId=1 JobState=FAILED ExitCode=9:0\n")
		return 0
	})
	var console strings.Builder
	dirs := []string{t.TempDir(), t.TempDir()}
	ends, err := WatchArray(context.Background(), fake, Follow{RunID: "s", Job: record.SlurmJob{JobID: "9", Dir: "/h/d", Array: 2, Login: "login"},
		Tasks: []emit.SlurmTask{{ID: "worker:0", Role: "worker"}}, Console: &console, Stderr: io.Discard},
		[]Trial{{ID: "s-001", LogDir: dirs[0]}, {ID: "s-002", LogDir: dirs[1]}})
	if err != nil {
		t.Fatal(err)
	}
	want := "[s-002] [worker:0 node2] b\n[s-002] ==> /h/d/job-9_0.out <==\n[s-002] ==> /tmp/x/0123/job-9_0.out <==\n" +
		"[s-001] [worker:0 node1] a\n[s-001] \n[s-001] [worker:0 node1] tfhive: exited 0\n[s-002] [worker:0 node2] tfhive: exited 0\n"
	if console.String() != want {
		t.Errorf("console:\n%s\nwant:\n%s", console.String(), want)
	}
	if ends[0].Ended.Result != record.ResultSucceeded || ends[1].Ended.ExitCode != 9 || ends[1].Tasks[0].Host != "node2" || ends[1].Acct.JobID != "9_1" {
		t.Errorf("ends: %+v", ends)
	}
	if c := ends[1].Tasks[0].ExitCode; c == nil || *c != 9 || ends[0].Tasks[0].Outcome != record.OutcomeExited {
		t.Errorf("the tasks' ends: %+v %+v", ends[0].Tasks[0], ends[1].Tasks[0])
	}
	if log, _ := os.ReadFile(dirs[1] + "/worker-0.log"); string(log) != "b\ntfhive: exited 0\n" {
		t.Errorf("s-002's worker-0.log: %q", log)
	}
}

// fakeSlurm puts scripts named for Slurm's commands ahead of $PATH and
// makes $HOME a fresh directory, for the scripts of scripts/ run here
// (remote.Local) as on a login node.
func fakeSlurm(t *testing.T, cmds map[string]string) (home string) {
	t.Helper()
	bin := t.TempDir()
	for name, body := range cmds {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	home = t.TempDir()
	t.Setenv("HOME", home)
	return home
}

// Cancel's marker is made from the run's and the job's ids, in the run's
// own directory there: never where a record says, never through a link.
func TestCancelMarker(t *testing.T) {
	home := fakeSlurm(t, map[string]string{"squeue": "exit 0", "scancel": `echo "$@" >>"$HOME/scancelled"`})
	if err := os.MkdirAll(filepath.Join(home, "tfhive-slurm", "r1"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Cancel(context.Background(), remote.Local{}, "r1", "42", time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "tfhive-slurm", "r1", "job-42.out.cancelled")); err != nil {
		t.Errorf("no marker: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(home, "scancelled")); string(b) != "--state=PENDING 42\n42\n" {
		t.Errorf("scancel: %q", b)
	}
	// The run's directory a link (to where another could have pointed it):
	// no marker through it.
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(home, "tfhive-slurm", "r2")); err != nil {
		t.Fatal(err)
	}
	if err := Cancel(context.Background(), remote.Local{}, "r2", "43", time.Second); err != nil {
		t.Fatal(err)
	}
	if es, _ := os.ReadDir(elsewhere); len(es) > 0 {
		t.Errorf("a marker through the link: %v", es[0].Name())
	}
	for _, ids := range [][2]string{{"../x", "1"}, {"r1", "1;rm"}, {"", "1"}} {
		if err := Cancel(context.Background(), remote.Local{}, ids[0], ids[1], time.Second); err == nil {
			t.Errorf("Cancel(%q, %q) ran", ids[0], ids[1])
		}
	}
}

// A record read back (slurm.json) is taken only when it describes the
// run's own job.
func TestCheckJob(t *testing.T) {
	good := record.SlurmJob{JobID: "42", Login: "login", Dir: "/home/me/tfhive-slurm/r1", Output: "/home/me/tfhive-slurm/r1/job-42.out",
		Tasks: []record.SlurmTask{{ID: "worker:1", Role: "worker", Index: 1}}}
	if err := CheckJob(good, "r1"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		edit func(*record.SlurmJob)
		why  string
	}{
		{func(j *record.SlurmJob) { j.JobID = "42; rm -rf ~" }, "job id"},
		{func(j *record.SlurmJob) { j.Login = "-oProxyCommand=x y" }, "login node"},
		{func(j *record.SlurmJob) { j.Dir = "/tmp"; j.Output = "/tmp/job-42.out" }, "directory"},
		{func(j *record.SlurmJob) { j.Output = "/home/me/.profile" }, "output"},
		{func(j *record.SlurmJob) { j.Tasks[0].Role = "../../x" }, "task"},
		{func(j *record.SlurmJob) { j.Tasks[0].ID = "ps:0" }, "task"},
	} {
		j := good
		j.Tasks = append([]record.SlurmTask(nil), good.Tasks...)
		tt.edit(&j)
		if err := CheckJob(j, "r1"); err == nil || !strings.Contains(err.Error(), tt.why) {
			t.Errorf("%+v: %v, want its %s refused", j, err, tt.why)
		}
	}
	if err := CheckJob(good, "r2"); err == nil {
		t.Error("run r1's job taken for r2's")
	}
}

// follow.sh run here on a job's output file, as on a login node: squeue
// says the job has ended, sacct has its record.
func followHere(t *testing.T, out string, acct string) (Follow, string) {
	t.Helper()
	home := fakeSlurm(t, map[string]string{
		"squeue": `echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1`,
		"sacct":  "printf '%s\\n' '" + acct + "'",
	})
	dir := filepath.Join(home, "tfhive-slurm", "r1")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "job-5.out"), []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	return Follow{RunID: "r1", Job: record.SlurmJob{JobID: "5", Login: "login", Dir: dir, Output: filepath.Join(dir, "job-5.out")},
		Tasks: []emit.SlurmTask{{ID: "worker:0", Role: "worker"}}, LogDir: t.TempDir(), Poll: 100 * time.Millisecond, Stderr: io.Discard}, dir
}

// A job whose output ends in the middle of a line (a task's last words
// without a newline, the job then killed) ends as Slurm says, its
// record read as a record, not as the job's output.
func TestWatchOutputWithoutNewline(t *testing.T) {
	for _, out := range []string{"[worker:0 node1] step 1\n[worker:0 node1] no newline", "[worker:0 node1] step 1\n\n"} {
		f, _ := followHere(t, out, "5|COMPLETED|0:0")
		var console strings.Builder
		f.Console = &console
		tasks, end, acct, err := Watch(context.Background(), remote.Local{}, f)
		if err != nil {
			t.Fatalf("%q: %v", out, err)
		}
		if end.Result != record.ResultSucceeded || acct.State != "COMPLETED" || len(tasks) != 1 || tasks[0].Host != "node1" {
			t.Errorf("%q: %+v %+v %+v", out, end, acct, tasks)
		}
		if strings.Contains(console.String(), "COMPLETED") || strings.TrimSuffix(out, "\n")+"\n" != console.String() {
			t.Errorf("console %q, want the job's output %q", console.String(), out)
		}
	}
}

// The real follow.sh and tail: a task's end is the file its shell left,
// never its own "tfhive: exited 0"; in a job array, a line that looks
// like tail's header for another task's file (printed by the batch script,
// the user's login shell) stays its own file's.
func TestWatchFatesAndHeaders(t *testing.T) {
	f, dir := followHere(t, "[worker:0 node1] tfhive: exited 0\n[worker:1 node2] boom\n[worker:1 node2] tfhive: exited 9\n", "5|FAILED|9:0")
	f.Tasks = []emit.SlurmTask{{ID: "worker:0", Role: "worker"}, {ID: "worker:1", Role: "worker", Index: 1}}
	f.Console = io.Discard
	if err := os.WriteFile(filepath.Join(dir, "fate-5-worker:1"), []byte("exited 9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tasks, end, _, err := Watch(context.Background(), remote.Local{}, f)
	if err != nil {
		t.Fatal(err)
	}
	if end.ExitCode != 9 || tasks[0].ID != "worker:1" || tasks[0].ExitCode == nil || *tasks[0].ExitCode != 9 ||
		tasks[1].Outcome != record.OutcomeStopped || tasks[1].ExitCode != nil {
		t.Errorf("%+v: %+v", end, tasks)
	}

	// An array of 2: task 1's file says task 0's header.
	f, dir = followHere(t, "", "9_0|COMPLETED|0:0\n9_1|FAILED|9:0")
	f.Job = record.SlurmJob{JobID: "9", Login: "login", Dir: dir, Output: dir + "/job-9.out", Array: 2}
	for name, text := range map[string]string{
		"job-9_0.out":         "[worker:0 node1] a\n",
		"job-9_1.out":         "==> " + dir + "/job-9_0.out <==\n[worker:0 node2] b\n",
		"fate-9_0-worker:0":   "exited 0\n",
		"fate-9_1-worker:0":   "exited 9\n",
		"fate-9_1-worker:0.x": "exited 0\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var console strings.Builder
	f.Console = &console
	dirs := []string{t.TempDir(), t.TempDir()}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ends, err := WatchArray(context.Background(), remote.Local{}, f, []Trial{{ID: "s-001", LogDir: dirs[0]}, {ID: "s-002", LogDir: dirs[1]}})
	if err != nil {
		t.Fatal(err)
	}
	if log, _ := os.ReadFile(dirs[0] + "/worker-0.log"); string(log) != "a\n" {
		t.Errorf("s-001's worker-0.log: %q\nconsole:\n%s", log, console.String())
	}
	if !strings.Contains(console.String(), "[s-002] ==> "+dir+"/job-9_0.out <==\n[s-002] [worker:0 node2] b\n") {
		t.Errorf("console:\n%s", console.String())
	}
	if c := ends[1].Tasks[0].ExitCode; ends[0].Ended.Result != record.ResultSucceeded || ends[1].Ended.ExitCode != 9 || c == nil || *c != 9 {
		t.Errorf("ends: %+v", ends)
	}
	if es, _ := os.ReadDir(tmp); len(es) > 0 {
		t.Errorf("follow.sh left %s in $TMPDIR", es[0].Name())
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
			tok := regexp.MustCompile(`(?m)^tfhive_token=(\S+)$`).FindStringSubmatch(string(script))
			io.WriteString(p.Stdout, "==> /tmp/f/"+tok[1]+"/job-9_0.out <==\n[worker:0 node1] tfhive: exited 0\n"+mark[1]+"\ncancelled\ncancelled|9_1\nfate|9_0|worker:0|exited 0\n"+
				"scontrol|JobId=10 ArrayJobId=9 ArrayTaskId=0 JobState=COMPLETED ExitCode=0:0\n"+
				"scontrol|JobId=9 ArrayJobId=9 ArrayTaskId=1 JobState=COMPLETED ExitCode=0:0\n")
			return 0
		})
		ctx, cancel := context.WithCancel(context.Background())
		if ctrlC {
			cancel()
		}
		ends, err := WatchArray(ctx, fake, Follow{RunID: "s", Job: record.SlurmJob{JobID: "9", Dir: "/h/d", Array: 2, Login: "login"},
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

// A login node whose sinfo prints without end is stopped at maxListing,
// and its listing is not read at all (one cut short would leave nodes out
// without saying so); a long stderr is only cut.
func TestListingPastItsBound(t *testing.T) {
	fake := &remotetest.Fake{}
	fake.Handle(remotetest.Exact("sh -s"), func(p *remotetest.Proc) int {
		io.ReadAll(p.Stdin)
		if p.Flood(p.Stdout, 64<<20) < 0 {
			t.Error("the flooding sinfo was not stopped")
		}
		return 0
	})
	nodes, err := Nodes(context.Background(), fake, "login1", "")
	if want := "login1: sinfo: its answer passed 16 MiB: not read"; err == nil || err.Error() != want || nodes != nil {
		t.Errorf("Nodes: %d nodes, %v; want none, %q", len(nodes), err, want)
	}

	noisy := &remotetest.Fake{}
	noisy.Handle(remotetest.Exact("sh -s"), func(p *remotetest.Proc) int {
		io.ReadAll(p.Stdin)
		io.WriteString(p.Stderr, "tfhive: error: squeue failed\n"+strings.Repeat("x", 1<<20))
		return 1
	})
	_, err = Queue(context.Background(), noisy, "login1", "")
	if err == nil || !strings.HasPrefix(err.Error(), "login1: squeue: squeue failed\n") || len(err.Error()) > maxOwn+100 {
		t.Errorf("Queue: %.200v (%d bytes)", err, len(err.Error()))
	}
}
