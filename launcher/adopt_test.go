package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/launcher/supervisor/stagetest"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/remotetest"
	"github.com/tfhive/tfhive/schedule"
	"github.com/tfhive/tfhive/schedule/scheduletest"
)

// adoptPlan is a kept run's plan: ps:0 and worker:0 on h1 (GPUs 0 and
// 1), worker:1 on h2 (GPU 0).
func adoptPlan() *schedule.Plan {
	p := scheduletest.TF("ps:0@h1", "worker:0@h1", "worker:1@h2")
	p.Tasks[0].GPUs, p.Tasks[1].GPUs, p.Tasks[2].GPUs = []int{0}, []int{1}, []int{0}
	return p
}

// What a kept run's first supervisor on each host writes as run.json is
// the plan as the lifecycle needs it, one line of JSON.
func TestRunInfoOf(t *testing.T) {
	p := adoptPlan()
	s := runInfoOf(p, lifecycle.Restart{}, "")
	if strings.Contains(s, "\n") {
		t.Errorf("not one line: %q", s)
	}
	var ri record.RunInfo
	if err := json.Unmarshal([]byte(s), &ri); err != nil {
		t.Fatal(err)
	}
	want := record.RunInfo{RunID: "r1", Framework: "tensorflow", Tasks: []record.RunInfoTask{{ID: "ps:0", GPUs: []int{0}}, {ID: "worker:0", GPUs: []int{1}}, {ID: "worker:1", GPUs: []int{0}}}}
	if ri.RunID != want.RunID || ri.Framework != want.Framework || ri.Chief || !slices.EqualFunc(ri.Tasks, want.Tasks, func(a, b record.RunInfoTask) bool {
		return a.ID == b.ID && slices.Equal(a.GPUs, b.GPUs)
	}) {
		t.Errorf("run info %+v, want %+v", ri, want)
	}
	c := scheduletest.TF("chief:0@h1", "worker:0@h1")
	if err := json.Unmarshal([]byte(runInfoOf(c, lifecycle.Restart{}, "")), &ri); err != nil || !ri.Chief {
		t.Errorf("a chief's run: chief %v, %v", ri.Chief, err)
	}
}

// findRunHosts are what find-run.sh may answer: the run's files (h1, a
// newer keeper on record; h2, with a login shell's greeting and lines
// that are not the script's), nothing of the run (h3), a failure (h4), a
// host that cannot be asked (h5), silence (h6).
func findRunHosts(t *testing.T, info string) map[string]remote.Executor {
	answer := func(out, errOut string, rc int) remote.Executor {
		return stagetest.Host(t, func(s *stagetest.Session) int {
			if s.Kind() != "find-run" || s.V("tfhive_run") != "r1" {
				t.Errorf("not asked about r1: %.200q", s.Stage)
			}
			s.Out(out)
			s.ErrOut(errOut)
			return rc
		})
	}
	return map[string]remote.Executor{
		"h1": answer("@@tfhive-run "+info+"\n@@tfhive-gen 2\n@@tfhive-task ps:0 alive\n@@tfhive-task worker:0 ended\n", "", 0),
		"h2": answer("Welcome to h2\n@@tfhive-run {broken\n@@tfhive-gen x\n@@tfhive-gen 0\n@@tfhive-task worker:1 gone\n@@tfhive-task lonely\n", "", 0),
		"h3": answer("@@tfhive-none no trace of run r1 in /home/u/.tfhive/runs-0123456789abcdef0123456789abcdef\n", "", 0),
		"h4": answer("", "bash: find: command not found\nmore\n", 127),
		"h5": &remotetest.Fake{}, // accepts no command
		"h6": answer("", "", 0),
	}
}

// FindRun asks every host once and reads what find-run.sh says; the
// adopted plan puts each task of the run's description on the host that
// holds its files, under the newest keeper generation on record.
func TestFindRunAndAdoptedPlan(t *testing.T) {
	orig := adoptPlan()
	found := FindRun(context.Background(), findRunHosts(t, runInfoOf(orig, lifecycle.Restart{}, "")), "r1", 2)
	var hosts []string
	for _, f := range found {
		hosts = append(hosts, f.Host)
	}
	if !slices.Equal(hosts, []string{"h1", "h2", "h3", "h4", "h5", "h6"}) {
		t.Fatalf("hosts %q, want every host in order", hosts)
	}
	h1, h2, h3, h4, h5, h6 := found[0], found[1], found[2], found[3], found[4], found[5]
	if h1.Err != nil || h1.None != "" || h1.Info == nil || h1.Info.RunID != "r1" || h1.Gen != 2 ||
		len(h1.Tasks) != 2 || h1.Tasks["ps:0"] != "alive" || h1.Tasks["worker:0"] != "ended" {
		t.Errorf("h1: %+v", h1)
	}
	// A run.json that is not JSON is no description; a generation that
	// is not one leaves the first; a task line without a state is none.
	if h2.Err != nil || h2.None != "" || h2.Info != nil || h2.Gen != 1 || len(h2.Tasks) != 1 || h2.Tasks["worker:1"] != "gone" {
		t.Errorf("h2: %+v", h2)
	}
	if h3.Err != nil || h3.None != "no trace of run r1 in /home/u/.tfhive/runs-0123456789abcdef0123456789abcdef" {
		t.Errorf("h3: %+v", h3)
	}
	if h4.Err == nil || h4.Err.Error() != "exit 127: bash: find: command not found" {
		t.Errorf("h4: %+v", h4)
	}
	if h5.Err == nil {
		t.Errorf("h5: %+v", h5)
	}
	if h6.Err != nil || h6.None != "no answer about the run" {
		t.Errorf("h6: %+v", h6)
	}

	p, gen, err := AdoptedPlan("r1", found)
	if err != nil {
		t.Fatal(err)
	}
	if gen != 2 || p.RunID != "r1" || p.Framework != "tensorflow" || len(p.Cluster.Chief) != 0 || p.Version != schedule.PlanVersion {
		t.Errorf("plan %+v, gen %d", p, gen)
	}
	var got []string
	for _, tk := range p.Tasks {
		got = append(got, tk.ID+"="+tk.Role+"/"+string(rune('0'+tk.Index))+"@"+tk.Host+view.IntList(tk.GPUs))
	}
	if want := []string{"ps:0=ps/0@h1" + view.IntList([]int{0}), "worker:0=worker/0@h1" + view.IntList([]int{1}), "worker:1=worker/1@h2" + view.IntList([]int{0})}; !slices.Equal(got, want) {
		t.Errorf("tasks %q, want %q", got, want)
	}

	// A chief's run keeps its rule: the chief decides.
	chief := runInfoOf(scheduletest.TF("chief:0@h1", "worker:0@h1"), lifecycle.Restart{}, "")
	p, _, err = AdoptedPlan("r1", []FoundRun{{Host: "h1", Gen: 1, Info: mustRunInfo(t, chief), Tasks: map[string]string{"chief:0": "alive", "worker:0": "alive"}}})
	if err != nil || len(p.Cluster.Chief) != 1 || lifecycle.RuleOf(p) != lifecycle.ChiefDecides {
		t.Errorf("chief: %+v, %v", p, err)
	}

	for _, c := range []struct {
		name  string
		found []FoundRun
		want  string
	}{
		{"nobody holds it", found[2:3], "no host holds run r1: no such run"},
		{"nobody that answered holds it", found[2:4], "no host holds run r1: no such run (h4 could not be asked: exit 127: bash: find: command not found)"},
		{"only another run's description", []FoundRun{{Host: "h1", Info: &record.RunInfo{RunID: "r2"}, Tasks: map[string]string{"worker:0": "alive"}}},
			`run r1: no host holds a description of it that tfhive can read: h1: its run.json describes run "r2"`},
		{"a garbled description", []FoundRun{parseFoundRun("h1", []byte("@@tfhive-run {\"run_id\": \"r1\", garbled\n@@tfhive-gen 1\n@@tfhive-task worker:0 alive 0\n"))},
			"run r1: no host holds a description of it that tfhive can read: h1: its run.json is not a run's description (invalid character 'g' looking for beginning of object key string)"},
		{"a task nowhere", found[:1], "run r1: no host holds task worker:1"},
		{"a task only on a host that failed", append(found[:1:1], FoundRun{Host: "h2", Err: errors.New("x"), Tasks: map[string]string{"worker:1": "alive"}}), "run r1: no host holds task worker:1 (h2 could not be asked: x)"},
	} {
		if _, _, err := AdoptedPlan("r1", c.found); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// A host whose answer to find-run.sh passes its bound is stopped there,
// and nothing of what it said is believed: the run is not adopted
// without it, and the message names it and why.
func TestFindRunAnswerPastItsBound(t *testing.T) {
	info := runInfoOf(adoptPlan(), lifecycle.Restart{}, "")
	flood := stagetest.Host(t, func(s *stagetest.Session) int {
		// The run's lines first: a cut answer would look whole.
		s.Out("@@tfhive-run " + info + "\n@@tfhive-task worker:1 alive\n")
		if s.P.Flood(s.P.Stdout, 64<<20) < 0 {
			t.Error("the flooding host was not stopped")
		}
		return 0
	})
	execs := findRunHosts(t, info)
	execs = map[string]remote.Executor{"h1": execs["h1"], "h2": flood}
	found := FindRun(context.Background(), execs, "r1", 2)
	h2 := found[1]
	if h2.Err == nil || h2.Err.Error() != "its answer passed 4 MiB: what it holds of the run is unknown" || len(h2.Tasks) != 0 || h2.Info != nil {
		t.Fatalf("h2: %+v", h2)
	}
	_, _, err := AdoptedPlan("r1", found)
	if want := "run r1: no host holds task worker:1 (h2 could not be asked: its answer passed 4 MiB: what it holds of the run is unknown)"; err == nil || err.Error() != want {
		t.Errorf("plan: %v, want %q", err, want)
	}
}

// SetAside: a host whose answer passes its bound is stopped there, and
// its answer is not read: it says that whether the directory moved is
// unknown.
func TestSetAsidePastItsBound(t *testing.T) {
	flood := stagetest.Host(t, func(s *stagetest.Session) int {
		s.Out("@@tfhive-aside moved r1.2\n")
		if s.P.Flood(s.P.Stdout, 64<<20) < 0 {
			t.Error("the flooding host was not stopped")
		}
		return 0
	})
	ok := stagetest.Host(t, func(s *stagetest.Session) int {
		s.Out("@@tfhive-aside moved r1.3\n")
		return 0
	})
	got := SetAside(context.Background(), map[string]remote.Executor{"h1": ok, "h2": flood}, "r1", 2)
	if got[0].Err != nil || got[0].Moved != "r1.3" {
		t.Errorf("h1: %+v", got[0])
	}
	if a := got[1]; a.Err == nil || a.Err.Error() != "its answer passed 4 MiB: whether its directory moved aside is unknown" || a.Moved != "" {
		t.Errorf("h2: %+v", a)
	}
}

func mustRunInfo(t *testing.T, s string) *record.RunInfo {
	var ri record.RunInfo
	if err := json.Unmarshal([]byte(s), &ri); err != nil {
		t.Fatal(err)
	}
	return &ri
}

// adoptedRun is Run with Adopted on stage hosts: every task is followed
// by an attach session, from its first byte.
func adoptedRun(t *testing.T, p *schedule.Plan, gen int, hosts map[string]*remotetest.Fake, opts ...func(*Options)) (*record.Summary, string, string) {
	t.Helper()
	console := &watchWriter{}
	o := Options{Plan: p, Hosts: map[string]inventory.Host{}, Execs: map[string]remote.Executor{},
		LogDir: filepath.Join(t.TempDir(), "logs"), Grace: time.Hour, Parallel: 4, Console: NewConsole(console, false),
		KeepAlive: func(inventory.Host) (time.Duration, int) { return 10 * time.Millisecond, 3 },
		Reconnect: time.Minute, Adopted: true, Gen: gen,
		Redial: func(context.Context, string) (remote.Executor, error) {
			return nil, errors.New("no redial in this test")
		}}
	for name, h := range hosts {
		o.Hosts[name] = inventory.Host{Name: name}
		o.Execs[name] = h
	}
	for _, f := range opts {
		f(&o)
	}
	sum, err := RunPlan(context.Background(), o)
	if cerr := o.Console.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, console.String())
	}
	return sum, console.String(), o.LogDir
}

// An adopted run follows every task from its first byte under the new
// generation, goes on with the lifecycle (the workers decide, the ps is
// stopped) and samples the GPUs as a run of its own does.
func TestRunAdopted(t *testing.T) {
	sampled := map[string]chan struct{}{"h1": make(chan struct{}), "h2": make(chan struct{})}
	var mu sync.Mutex
	attaches := map[string]*stagetest.Session{}
	samplerIDs := map[string]string{}
	host := func(name string) *remotetest.Fake {
		return stagetest.Host(t, func(s *stagetest.Session) int {
			switch s.Kind() {
			case "sample":
				mu.Lock()
				samplerIDs[name] = s.V("tfhive_ids") + " every " + s.V("tfhive_every")
				mu.Unlock()
				s.Out("motd\n1, GPU-x, 99, 99\n")
				if name == "h1" {
					s.Out(supervisor.SampleMarker + "\n0, GPU-a, 1, 100\n1, GPU-b, 70, 2000\nNVIDIA-SMI couldn't find GPU 9\n" +
						supervisor.SampleMarker + "\n0, GPU-a, 1, 100\n1, GPU-b, 90, 3000\n")
				} else {
					s.Out(supervisor.SampleMarker + "\n0, GPU-c, 50, 500\n")
				}
				close(sampled[name])
				s.Next() // until tfhive closes stdin
				return 0
			case "attach":
				task := s.V("tfhive_task")
				mu.Lock()
				attaches[task] = s
				mu.Unlock()
				s.Out("login shell noise\n")
				s.Markers()
				if task == "ps:0" {
					s.Out("ps serving\n")
					return s.UntilStopped()
				}
				s.Out("step 1 of " + task + "\n")
				s.ErrOut("warning\n")
				<-sampled[name]
				return 0
			}
			t.Errorf("%s: unexpected session %s", name, s.Kind())
			return 2
		})
	}
	p := adoptPlan()
	o := map[string]*remotetest.Fake{"h1": host("h1"), "h2": host("h2")}
	sum, console, logDir := adoptedRun(t, p, 3, o, func(o *Options) { o.Sample = 50 * time.Millisecond })
	wantSummary(t, sum, record.ResultSucceeded, 0, "every worker exited 0", "ps:0 stopped 143", "worker:0 exited 0", "worker:1 exited 0")
	wantLines(t, "console", console, "tfhive: run r1 adopted (keeper generation 3): 3 tasks on 2 hosts, logs in "+logDir+"\n",
		"[worker:1 h2] step 1 of worker:1\n", "[ps:0 h1] ps serving\n")
	if strings.Contains(console, "noise") || strings.Contains(console, supervisor.StreamMarker) {
		t.Errorf("what came before the markers reached the console:\n%s", console)
	}
	for file, want := range map[string]string{"ps-0.log": "ps serving\n", "worker-0.log": "step 1 of worker:0\nwarning\n"} {
		if b, err := os.ReadFile(filepath.Join(logDir, file)); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", file, b, err, want)
		}
	}
	// Every session asked for the task from byte 0, under generation 3,
	// with one mark for the run.
	mark := ""
	for _, id := range []string{"ps:0", "worker:0", "worker:1"} {
		s := attaches[id]
		if s == nil {
			t.Fatalf("%s was never followed", id)
		}
		if s.V("tfhive_run") != "r1" || s.V("tfhive_off_out") != "0" || s.V("tfhive_off_err") != "0" || s.V("tfhive_gen") != "3" {
			t.Errorf("%s's attach stage:\n%.400s", id, s.Stage)
		}
		if mark == "" {
			mark = s.V("tfhive_mark")
		}
		if m := s.V("tfhive_mark"); m == "" || m != mark {
			t.Errorf("%s: mark %q, another's %q", id, m, mark)
		}
	}
	// One sampler per host, for the run's GPUs there; usage per task.
	if samplerIDs["h1"] != "0,1 every 0.050" || samplerIDs["h2"] != "0 every 0.050" {
		t.Errorf("samplers %q", samplerIDs)
	}
	usage := map[string]*record.GPUUsage{}
	for _, tr := range sum.Tasks {
		usage[tr.ID] = tr.GPUUsage
	}
	if u := usage["worker:0"]; u == nil || u.Samples != 2 || u.UtilMean != 80 || u.UtilPeak != 90 || u.MemPeak != 3000 {
		t.Errorf("worker:0's usage %+v", u)
	}
	if u := usage["worker:1"]; u == nil || u.Samples != 1 || u.UtilMean != 50 || u.MemPeak != 500 {
		t.Errorf("worker:1's usage %+v", u)
	}
	if u := usage["ps:0"]; u == nil || u.Samples != 2 || u.UtilMean != 1 || u.MemPeak != 100 {
		t.Errorf("ps:0's usage %+v", u)
	}
	csv, err := os.ReadFile(filepath.Join(logDir, rundir.GPUUsage))
	if lines := strings.Split(strings.TrimSpace(string(csv)), "\n"); err != nil || len(lines) != 6 || lines[0] != "time,task,host,gpu,util_pct,mem_mib" {
		t.Errorf("gpu-usage.csv (%v):\n%s", err, csv)
	}
	// Each sampler was told the run is over: its stdin closed.
	for _, h := range o {
		for _, pr := range h.Procs() {
			select {
			case <-pr.Done():
			default:
				t.Errorf("a session still runs: %.100q", pr.Cmd)
			}
		}
	}
}

// An attach session that ends before its markers found nothing to follow:
// the task is lost, with what attach.sh said (not what the login shell
// said before it); the run goes on as for any lost task.
func TestRunAdoptedTaskGone(t *testing.T) {
	h1 := stagetest.Host(t, func(s *stagetest.Session) int {
		s.Markers()
		return s.UntilStopped()
	})
	h2 := stagetest.Host(t, func(s *stagetest.Session) int {
		s.Out("motd\n")
		s.ErrOut("bash: warning: setlocale: LC_ALL: cannot change locale\ntfhive: no trace of task worker:1 in /home/u/.tfhive/runs-0123456789abcdef0123456789abcdef/r1\n")
		return 125
	})
	sum, console, _ := adoptedRun(t, adoptPlan(), 2, map[string]*remotetest.Fake{"h1": h1, "h2": h2})
	const why = "no trace of task worker:1 in /home/u/.tfhive/runs-0123456789abcdef0123456789abcdef/r1"
	wantSummary(t, sum, record.ResultFailed, record.ExitHostLost, "worker:1 on h2 was lost: "+why,
		"worker:1 lost: "+why, "ps:0 stopped 143", "worker:0 stopped 143")
	wantLines(t, "console", console, why)
}

// A newer keeper adopted the run: this one lets go of every task and
// stops none, whether an attach session is refused for it (before its
// markers, after whatever the login shell said) or a followed session
// says so.
func TestRunAdoptedStepsDown(t *testing.T) {
	for _, c := range []struct {
		name   string
		ps     func(s *stagetest.Session) int
		reason string
	}{
		{"refused", func(s *stagetest.Session) int {
			s.ErrOut("tfhive: replaced by keeper generation 4\n")
			return 125
		}, "replaced by keeper generation 4"},
		{"refused after the login shell's words", func(s *stagetest.Session) int {
			s.ErrOut("stty: 'standard input': Inappropriate ioctl for device\ntfhive: replaced by keeper generation 4\n")
			return 125
		}, "replaced by keeper generation 4"},
		{"told while followed", func(s *stagetest.Session) int {
			s.Markers()
			s.ErrOut("a line\n@@tfhive-re")
			s.ErrOut("placed 4\nmore\n")
			return s.UntilStopped()
		}, "keeper generation 4 adopted the run"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var attached sync.WaitGroup
			attached.Add(2)
			var mu sync.Mutex
			var stops []string
			worker := func(s *stagetest.Session) int {
				s.Markers()
				heard := false
				for {
					line, err := s.In.ReadString('\n')
					if err != nil {
						break
					}
					if line == supervisor.CtlHeartbeat && !heard {
						heard = true
						attached.Done()
					} else if line != supervisor.CtlHeartbeat {
						mu.Lock()
						stops = append(stops, line)
						mu.Unlock()
						return 143
					}
				}
				<-s.Over // dropped: its end is never heard of
				return -1
			}
			h1 := stagetest.Host(t, func(s *stagetest.Session) int {
				if s.V("tfhive_task") == "ps:0" {
					attached.Wait()
					return c.ps(s)
				}
				return worker(s)
			})
			h2 := stagetest.Host(t, worker)
			sum, console, _ := adoptedRun(t, adoptPlan(), 3, map[string]*remotetest.Fake{"h1": h1, "h2": h2})
			wantSummary(t, sum, record.ResultSteppedDown, 1, c.reason,
				"ps:0 handed-over", "worker:0 handed-over", "worker:1 handed-over")
			wantLines(t, "console", console, "tfhive: "+c.reason+"; stepping down (the tasks go on)\n")
			if len(stops) > 0 {
				t.Errorf("control lines sent to tasks handed over: %q", stops)
			}
		})
	}
}
