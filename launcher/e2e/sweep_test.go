package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/sshtest"
)

// sweepFleet is 2 hosts × 2 GPUs.
func sweepFleet(t *testing.T) *sshtest.Fleet {
	return sshtest.Start(t, sshtest.Profile{Name: "s1", GPU: "idle-2gpu.xml", AliveInterval: 1},
		sshtest.Profile{Name: "s2", GPU: "idle-2gpu.xml", AliveInterval: 1})
}

// sweepTask is a trial's task: it says when it starts and ends in events
// (a file every host sees), stays until 4 trials have started (or 20 s
// went by: a sweep that runs fewer at once is seen, not hung), prints
// its loss and exits with exit (a shell word, {x} substituted).
func sweepTask(events, exit string) string {
	return `echo "start $TFHIVE_TRIAL $x $(hostname) $CUDA_VISIBLE_DEVICES $(date +%s.%N)" >> ` + events + `
n=0; while [ "$(grep -c ^start ` + events + `)" -lt 4 ] && [ $n -lt 200 ]; do sleep 0.1; n=$((n+1)); done
echo "loss={x}"
echo "end $TFHIVE_TRIAL $x $(hostname) $CUDA_VISIBLE_DEVICES $(date +%s.%N)" >> ` + events + `
exit ` + exit
}

type sweepEvent struct {
	start bool
	trial string
	at    float64
}

// sweepEvents reads the tasks' events, in time order.
func sweepEvents(t *testing.T, path string) []sweepEvent {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var evs []sweepEvent
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			t.Fatalf("event %q", line)
		}
		at, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		evs = append(evs, sweepEvent{start: f[0] == "start", trial: f[1], at: at})
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
	return evs
}

// mostAtOnce is how many trials' tasks ran at once, at most.
func mostAtOnce(evs []sweepEvent) int {
	n, most := 0, 0
	for _, e := range evs {
		if e.start {
			n++
		} else {
			n--
		}
		most = max(most, n)
	}
	return most
}

func sweepArgs(f *sshtest.Fleet, args ...string) []string {
	return fleetArgs(f, append([]string{"sweep", "--grace", "2s"}, args...)...)
}

// A 6-trial sweep of one-GPU trials on 2 hosts × 2 GPUs runs 4 at a time,
// never more; its table lists the 6 values with their captured loss, in
// the loss's order; the same command again runs no trial; another
// command under the same name is refused.
func TestSweepGrid(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sweepFleet(t)
	events := filepath.Join(t.TempDir(), "events")
	args := sweepArgs(f, "--name", "sw", "--param", "x=3,1,4,5,9,2", "--capture", `loss=loss=(\d+)`,
		"--sort", "loss", "--", "sh", "-c", sweepTask(events, "0"))
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	evs := sweepEvents(t, events)
	if len(evs) != 12 {
		t.Fatalf("%d events, want 12:\n%v", len(evs), evs)
	}
	if n := mostAtOnce(evs); n != 4 {
		t.Errorf("%d trials at once, want 4", n)
	}
	// The trials share one connection per host (a Dialer per fleet): a
	// connection per trial made the burst's starts one at a time.
	for _, h := range f.Hosts {
		if n := h.Connections(); n != 1 {
			t.Errorf("host %s accepted %d SSH connections for 6 trials, want 1", h.Name, n)
		}
	}
	// The trials started together plan apart (the sweep's book): none
	// loses a claim to a sibling and retries.
	for i := 1; i <= 6; i++ {
		id := fmt.Sprintf("sw-%03d", i)
		data, err := os.ReadFile(filepath.Join(f.Dir, "tfhive-runs", id, "console.log"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "claimed by another run while starting") {
			t.Errorf("trial %s collided with a sibling:\n%s", id, data)
		}
	}
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n")[1:] {
		rows = append(rows, splitCols(line))
	}
	var order, losses []string
	for _, row := range rows {
		if len(row) < 8 || row[2] != "succeeded" {
			t.Fatalf("row %q\n%s", row, r.stdout)
		}
		order = append(order, row[0]+"="+row[1])
		losses = append(losses, row[len(row)-1])
	}
	want := []string{"sw-002=1", "sw-006=2", "sw-001=3", "sw-003=4", "sw-004=5", "sw-005=9"}
	if !slices.Equal(order, want) || !slices.Equal(losses, []string{"1", "2", "3", "4", "5", "9"}) {
		t.Errorf("table order %v losses %v, want %v\n%s", order, losses, want, r.stdout)
	}
	wantContains(t, "stderr", r.stderr, "sweep sw: 6 trials, 4 at a time", "trial sw-005 started (x=9)", "trial sw-005 succeeded in")
	if !strings.HasPrefix(r.stdout, "TRIAL") || !strings.Contains(strings.SplitN(r.stdout, "\n", 2)[0], "loss") {
		t.Errorf("header: %s", r.stdout)
	}

	// Again: nothing to run, the same table.
	again := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, again, 0)
	wantContains(t, "stderr", again.stderr, "all 6 trials succeeded before")
	if n := len(sweepEvents(t, events)); n != 12 {
		t.Errorf("run again, %d events, want still 12", n)
	}
	if again.stdout != r.stdout {
		t.Errorf("table again:\n%s\nwant:\n%s", again.stdout, r.stdout)
	}
	shown := tfhive(t, f.Env(), f.Dir, "runs", "--sweep", "sw", "--sort", "loss")
	wantCode(t, shown, 0)
	if shown.stdout != r.stdout {
		t.Errorf("runs --sweep:\n%s\nwant:\n%s", shown.stdout, r.stdout)
	}

	other := tfhive(t, f.Env(), f.Dir, sweepArgs(f, "--name", "sw", "--param", "x=1,2", "--", "sh", "-c", "true")...)
	wantCode(t, other, 2)
	if !strings.Contains(other.stderr, "tfhive: error: sweep sw was run with another command (\"sh -c echo") ||
		strings.Count(other.stderr, "\n") != 3 {
		t.Errorf("another sweep under the name: %s", other.stderr)
	}
}

// A failing trial leaves the others running; --detach returns at once and
// wait exits 1; the same command again runs only the failed trial.
func TestSweepFailureDetachWaitResume(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sweepFleet(t)
	dir := t.TempDir()
	events, ok := filepath.Join(dir, "events"), filepath.Join(dir, "ok")
	// Trial 2 fails until the file ok exists.
	exit := `$( [ {x} = 2 ] && [ ! -e ` + ok + ` ] && echo 9 || echo 0 )`
	args := sweepArgs(f, "--name", "fl", "--detach", "--param", "x=1,2,3,4", "--capture", `loss=loss=(\d+)`,
		"--", "sh", "-c", sweepTask(events, exit))
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	if strings.TrimSpace(r.stdout) != "fl" {
		t.Fatalf("--detach printed %q", r.stdout)
	}
	w := tfhive(t, f.Env(), f.Dir, "wait", "fl")
	wantCode(t, w, 1)
	wantContains(t, "wait", w.stderr, "sweep fl: 1 of 4 trials did not succeed")
	js := tfhive(t, f.Env(), f.Dir, "runs", "--sweep", "fl", "--json")
	wantCode(t, js, 0)
	var doc struct {
		Trials []struct {
			RunID   string            `json:"run_id"`
			Result  string            `json:"result"`
			Params  map[string]string `json:"params"`
			Metrics map[string]string `json:"metrics"`
		}
	}
	if err := json.Unmarshal([]byte(js.stdout), &doc); err != nil || len(doc.Trials) != 4 {
		t.Fatalf("runs --sweep --json: %v\n%s", err, js.stdout)
	}
	for _, tr := range doc.Trials {
		want := "succeeded"
		if tr.Params["x"] == "2" {
			want = "failed"
		}
		if tr.Result != want || tr.Metrics["loss"] != tr.Params["x"] {
			t.Errorf("trial %+v, want %s", tr, want)
		}
	}
	if n := mostAtOnce(sweepEvents(t, events)); n != 4 {
		t.Errorf("%d at once, want 4: the failure stopped nothing", n)
	}
	logs := tfhive(t, f.Env(), f.Dir, "logs", "fl")
	wantCode(t, logs, 0)
	wantContains(t, "logs fl", logs.stdout, "trial fl-002 failed", "exit 9", "tfhive logs fl-002")
	trial := tfhive(t, f.Env(), f.Dir, "logs", "fl-003")
	wantContains(t, "logs fl-003", trial.stdout, "loss=3")

	// Fixed, the same command runs fl-002 alone.
	if err := os.WriteFile(ok, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fg := slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "--detach" })
	again := tfhive(t, f.Env(), f.Dir, fg...)
	wantCode(t, again, 0)
	wantContains(t, "stderr", again.stderr, "1 of 4 trials to run (3 succeeded before)")
	evs := sweepEvents(t, events)
	if len(evs) != 10 || evs[8].trial != "fl-002" {
		t.Errorf("events after the resume: %v", evs)
	}
	if _, err := os.Stat(filepath.Join(f.Dir, "tfhive-runs", "fl", "earlier", "fl-002.1", "summary.json")); err != nil {
		t.Errorf("the failed attempt's log dir: %v", err)
	}
}

// A sweep with --sync: the tree is listed and hashed once, before the
// first trial, and every trial runs that code (the same hash in each
// summary, the file it holds read by each trial's task).
func TestSweepSync(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sweepFleet(t)
	code := filepath.Join(f.Dir, "code")
	if err := os.MkdirAll(code, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(code, "ident"), []byte("v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := tfhive(t, f.Env(), f.Dir, sweepArgs(f, "--name", "sy", "--sync", "code", "--param", "x=1,2",
		"--", "sh", "-c", `echo "ident=$(cat ident) x={x}"`)...)
	wantCode(t, r, 0)
	var hash string
	for i, x := range []string{"1", "2"} {
		dir := filepath.Join(f.Dir, "tfhive-runs", fmt.Sprintf("sy-%03d", i+1))
		s := readJSON[record.Summary](t, dir, "summary.json")
		if s.Code == nil || len(s.Code.Hash) != 64 || hash != "" && s.Code.Hash != hash {
			t.Errorf("trial %d's code: %+v, want one hash for all (%s)", i+1, s.Code, hash)
		} else {
			hash = s.Code.Hash
		}
		wantContains(t, "trial's log", readFile(t, filepath.Join(dir, "worker-0.log")), "ident=v1 x="+x)
	}
}

// A trial after a hand-over costs its host no probe: it plans on the
// newest probe (probe.Coalescer's seed, here the sweep's own), the book
// taking out what the ended trial held there. 2 trials one after the
// other on a host's GPUs cost sshd 3 sessions (the sweep's probe and the
// trials' multiplexers) and nvidia-smi one query of the probe's.
func TestSweepHandOverWithoutAProbe(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "h1")
	events := filepath.Join(t.TempDir(), "events")
	r := tfhive(t, f.Env(), f.Dir, sweepArgs(f, "--name", "lent", "--param", "x=1,2", "--gpus-per-worker", "2",
		"--", "sh", "-c", `echo "start $TFHIVE_TRIAL {x} $(hostname) $CUDA_VISIBLE_DEVICES $(date +%s.%N)" >> `+events+
			`; echo "end $TFHIVE_TRIAL {x} $(hostname) $CUDA_VISIBLE_DEVICES $(date +%s.%N)" >> `+events)...)
	wantCode(t, r, 0)
	if evs := sweepEvents(t, events); len(evs) != 4 || mostAtOnce(evs) != 1 {
		t.Fatalf("events %v, want the 2 trials one after the other", evs)
	}
	if n := f.Host("h1").Sessions(); n != 3 {
		t.Errorf("the host's sshd started %d sessions for 2 trials one after the other, want 3", n)
	}
	if n := f.Host("h1").SMICallsWith("-q -x"); n != 1 {
		t.Errorf("the host was probed %d times for 2 trials one after the other, want once", n)
	}
}
