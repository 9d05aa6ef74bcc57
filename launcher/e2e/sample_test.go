package e2e

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/sshtest"
)

// Served per call of the fake nvidia-smi's --query-gpu ("UTIL MEM"): g1's
// GPU is idle, g2's busy.
var servedUsage = map[string][]string{
	"g1": {"2 100", "3 400", "1 200", "4 300", "2 250", "1 100", "0 100", "3 150"},
	"g2": {"60 1000", "90 3000", "75 2000", "80 2500", "70 1500", "65 1200", "85 1800", "95 2200"},
}

// sampleFleet serves servedUsage.
func sampleFleet(t *testing.T) *sshtest.Fleet {
	f := sshtest.Start(t,
		sshtest.Profile{Name: "g1", GPU: "idle-2gpu.xml", AliveInterval: 1},
		sshtest.Profile{Name: "g2", GPU: "idle-2gpu.xml", AliveInterval: 1})
	for _, h := range f.Hosts {
		if err := os.WriteFile(filepath.Join(h.Dir, "gpu", "usage"), []byte(strings.Join(servedUsage[h.Name], "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// sampleWait: each worker ends once its host's nvidia-smi served every
// value.
const sampleWait = `for i in $(seq 600); do [ "$(cat "$TFHIVE_FAKE_GPU/queries" 2>/dev/null | wc -l)" -ge 8 ] && exit 0; sleep 0.05; done; echo "not sampled" >&2; exit 9`

// One worker per host: the summary's mean and peak are the samples', the
// samples are what was served in order (the last repeating), the idle GPU
// is warned about while the run goes on, and each host had one session,
// the probe's, which ran the task and the sampler (its multiplexer).
func TestRunSamplesGPUUsage(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sampleFleet(t)
	args, logDir := runArgs(t, f, "--workers", "2", "--strategy", "spread", "--sample", "200ms", "--", "sh", "-c", sampleWait)
	env := append(f.Env(), "TFHIVE_TEST_IDLE_AFTER=500ms")
	r := tfhive(t, env, f.Dir, args...)
	wantCode(t, r, 0)
	s := checkSampled(t, logDir)
	g1 := taskOn(s, "g1")
	wantContains(t, "console", r.stdout, "tfhive: "+g1.ID+" on g1: GPU idle (", "GPU UTIL", "MEM PEAK", "note: "+g1.ID+" on g1: GPU idle (")
	if strings.Count(r.stdout, "GPU idle (") != 2 || strings.Contains(r.stdout, " on g2: GPU idle") {
		t.Errorf("want one warning and one note, for g1 only:\n%s", r.stdout)
	}
	// The warning came while the task ran: before the summary.
	if strings.Index(r.stdout, "tfhive: "+g1.ID+" on g1: GPU idle") > strings.Index(r.stdout, "GPU UTIL") {
		t.Errorf("the warning came after the summary:\n%s", r.stdout)
	}
	for _, h := range f.Hosts {
		if n := h.Sessions(); n != 1 {
			t.Errorf("%s: %d sessions, want one, the task's and the sampler's", h.Name, n)
		}
	}
	noLeftovers(t, f, 10*time.Second)

	// A --sample too short for nvidia-smi is refused before any host.
	calls := f.Host("g1").SMICalls()
	args, _ = runArgs(t, f, "--sample", "10ms", "--", "true")
	r = tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 2)
	wantContains(t, "stderr", r.stderr, "tfhive: error: --sample must be 0 (never) or at least 100ms")
	if f.Host("g1").SMICalls() != calls {
		t.Error("a bad --sample probed the hosts")
	}
}

// A detached run's keeper samples as the foreground run does.
func TestDetachSamplesGPUUsage(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sampleFleet(t)
	args, logDir := runArgs(t, f, "--detach", "--workers", "2", "--strategy", "spread", "--sample", "200ms", "--", "sh", "-c", sampleWait)
	env := append(f.Env(), "TFHIVE_TEST_IDLE_AFTER=500ms")
	r := tfhive(t, env, f.Dir, args...)
	wantCode(t, r, 0)
	w := tfhive(t, f.Env(), f.Dir, "wait", "--log-dir", logDir, strings.TrimSpace(r.stdout))
	wantCode(t, w, 0)
	checkSampled(t, logDir)
	noLeftovers(t, f, 10*time.Second)
}

// checkSampled checks the summary and gpu-usage.csv against servedUsage:
// g1's task idle, g2's not.
func checkSampled(t *testing.T, logDir string) record.Summary {
	t.Helper()
	rows := readUsageCSV(t, logDir)
	s := summaryOf(t, logDir)
	for _, task := range s.Tasks {
		served := servedUsage[task.Host]
		var util, mem []float64
		for _, row := range rows {
			if row[1] != task.ID {
				continue
			}
			if row[2] != task.Host || row[3] != strconv.Itoa(task.GPUs[0]) {
				t.Errorf("row %q for %s on %s GPU %v", row, task.ID, task.Host, task.GPUs)
			}
			u, _ := strconv.ParseFloat(row[4], 64)
			m, _ := strconv.ParseFloat(row[5], 64)
			util, mem = append(util, u), append(mem, m)
		}
		if len(util) < len(served) {
			t.Fatalf("%s: %d samples, want at least %d:\n%v", task.ID, len(util), len(served), rows)
		}
		for i := range util {
			want := served[min(i, len(served)-1)]
			if got := strconv.FormatFloat(util[i], 'f', -1, 64) + " " + strconv.FormatFloat(mem[i], 'f', -1, 64); got != want {
				t.Errorf("%s sample %d: %s, served %s", task.ID, i, got, want)
			}
		}
		var sum float64
		for _, u := range util {
			sum += u
		}
		u := task.GPUUsage
		if u == nil {
			t.Fatalf("%s: no gpu_usage in the summary", task.ID)
		}
		if u.Samples != len(util) || u.UtilPeak != slices.Max(util) || u.MemPeak != slices.Max(mem) ||
			strconv.FormatFloat(u.UtilMean, 'f', 1, 64) != strconv.FormatFloat(sum/float64(len(util)), 'f', 1, 64) {
			t.Errorf("%s: %+v, samples %v %v", task.ID, u, util, mem)
		}
		idle := u.Idle != ""
		if idle != (task.Host == "g1") {
			t.Errorf("%s on %s: idle note %q", task.ID, task.Host, u.Idle)
		}
	}
	return s
}

func taskOn(s record.Summary, host string) record.TaskResult {
	for _, t := range s.Tasks {
		if t.Host == host {
			return t
		}
	}
	return record.TaskResult{}
}

func readUsageCSV(t *testing.T, logDir string) [][]string {
	t.Helper()
	fh, err := os.Open(filepath.Join(logDir, "gpu-usage.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	rows, err := csv.NewReader(fh).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != "time,task,host,gpu,util_pct,mem_mib" {
		t.Fatalf("gpu-usage.csv header: %v", rows)
	}
	return rows[1:]
}

// A run of several GPU tasks per host on hosts whose login is slow
// (conda's init) costs each host one login, the probe's, with --sample
// on: the sampler rides the host's multiplexer. Every task's GPUs are
// still sampled, each row with its own host's values, and no sample line
// leaks into a task's log.
func TestRunSampleOneLoginPerHost(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t,
		sshtest.Profile{Name: "l1", GPU: "idle-4gpu.xml", AliveInterval: 1, LoginCPU: 50 * time.Millisecond},
		sshtest.Profile{Name: "l2", GPU: "idle-4gpu.xml", AliveInterval: 1, LoginCPU: 50 * time.Millisecond})
	served := map[string][]string{"l1": {"11 110", "12 120", "13 130"}, "l2": {"21 210", "22 220", "23 230"}}
	for _, h := range f.Hosts {
		if err := os.WriteFile(filepath.Join(h.Dir, "gpu", "usage"), []byte(strings.Join(served[h.Name], "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Each worker ends once its host's GPUs were sampled three times.
	wait := `for i in $(seq 600); do [ "$(cat "$TFHIVE_FAKE_GPU/queries" 2>/dev/null | wc -l)" -ge 3 ] && exit 0; sleep 0.05; done; echo "not sampled" >&2; exit 9`
	args, logDir := runArgs(t, f, "--workers", "8", "--gpus-per-worker", "1", "--sample", "1s", "--", "sh", "-c", wait)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	for _, h := range f.Hosts {
		if n := h.Sessions(); n != 1 {
			t.Errorf("%s: %d sessions for 4 tasks and the sampler, want 1", h.Name, n)
		}
	}
	rows := readUsageCSV(t, logDir)
	s := summaryOf(t, logDir)
	perHost := map[string]int{}
	for _, task := range s.Tasks {
		perHost[task.Host]++
		if len(task.GPUs) != 1 {
			t.Fatalf("%s: GPUs %v", task.ID, task.GPUs)
		}
		n := 0
		for _, row := range rows {
			if row[1] != task.ID {
				continue
			}
			n++
			if row[2] != task.Host || row[3] != strconv.Itoa(task.GPUs[0]) || !slices.Contains(served[task.Host], row[4]+" "+strings.TrimSuffix(row[5], ".0")) {
				t.Errorf("%s on %s GPU %d: row %q", task.ID, task.Host, task.GPUs[0], row)
			}
		}
		if n < 2 {
			t.Errorf("%s: %d rows in gpu-usage.csv, want 2 or more:\n%v", task.ID, n, rows)
		}
		if task.GPUUsage == nil || task.GPUUsage.Samples != n {
			t.Errorf("%s: gpu_usage %+v, want %d samples", task.ID, task.GPUUsage, n)
		}
		if log := readFile(t, task.Log); strings.Contains(log, "@@tfhive") || strings.Contains(log, "GPU-") {
			t.Errorf("%s: a sample in its log:\n%s", task.ID, log)
		}
	}
	if perHost["l1"] != 4 || perHost["l2"] != 4 {
		t.Errorf("tasks per host %v, want 4 on each", perHost)
	}
	noLeftovers(t, f, 10*time.Second)
}

// A kept run's sampler rides its host's multiplexer, which ends with the
// link: once the host is back, each task is followed by a session of its
// own and so is the sampler, and samples taken after the reconnect reach
// gpu-usage.csv. That costs one login per task, as a reconnect did, and
// one for the sampler.
func TestRunSamplesAcrossReconnect(t *testing.T) {
	f := sshtest.Start(t, sshtest.Profile{Name: "far", GPU: "idle-2gpu.xml", AliveInterval: 1, Proxied: true})
	h := f.Host("far")
	usage := filepath.Join(h.Dir, "gpu", "usage")
	if err := os.WriteFile(usage, []byte("5 50\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	flag := filepath.Join(t.TempDir(), "done")
	task := `echo ready; while [ ! -e "$0" ]; do sleep 0.05; done`
	args, logDir := runArgs(t, f, "--workers", "2", "--gpus-per-worker", "1", "--sample", "200ms", "--reconnect", "1m", "--", "sh", "-c", task, flag)
	r := startTfhive(t, f, readStdout, args...)
	ready := 0
	if !r.readUntil(func(l string) bool {
		if strings.HasSuffix(l, "ready") {
			ready++
		}
		return ready == 2
	}) {
		r.Wait()
		t.Fatalf("the tasks did not start:\n%s%s", r.read.String(), r.other.String())
	}
	queries := func() int {
		b, _ := os.ReadFile(filepath.Join(h.Dir, "gpu", "queries"))
		return strings.Count(string(b), "\n")
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no", what)
			}
		}
	}
	waitFor("sampled before the cut", func() bool { return queries() >= 2 })
	if n := h.Sessions(); n != 1 {
		t.Errorf("%d sessions before the cut, want 1", n)
	}
	h.Proxy.Reset()
	if !r.readUntil(func(l string) bool { return strings.HasPrefix(l, "tfhive: far is back after") }) {
		r.Wait()
		t.Fatalf("far never came back:\n%s%s", r.read.String(), r.other.String())
	}
	// From now on every sample says 77 %.
	if err := os.WriteFile(usage, []byte("77 770\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	after := queries()
	waitFor("sampled after the reconnect", func() bool { return queries() >= after+3 })
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.readAll()
	if err := r.Wait(); err != nil {
		t.Fatalf("tfhive: %v\n%s%s", err, r.read.String(), r.other.String())
	}
	rows := readUsageCSV(t, logDir)
	s := summaryOf(t, logDir)
	for _, task := range s.Tasks {
		before, later := 0, 0
		for _, row := range rows {
			if row[1] != task.ID {
				continue
			}
			switch row[4] {
			case "5":
				before++
			case "77":
				later++
			default:
				t.Errorf("%s: row %q", task.ID, row)
			}
		}
		if before == 0 || later < 2 {
			t.Errorf("%s: %d rows before the reconnect and %d after, want some of each:\n%v", task.ID, before, later, rows)
		}
	}
	if n := h.Sessions(); n != 1+len(s.Tasks)+1 {
		t.Errorf("%d sessions, want the probe's, one per task after the reconnect and the sampler's", n)
	}
	noLeftovers(t, f, 10*time.Second)
}
