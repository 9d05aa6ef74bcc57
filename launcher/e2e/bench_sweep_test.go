package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// TestBenchSweep is the sweep's benchmark (testdata/bench/run.sh runs it
// after TestBench, under TFHIVE_BENCH; TFHIVE_BENCH_ONLY without "sweep"
// skips it): a sweep of one-GPU trials, twice as many as the fleet's GPUs
// (TFHIVE_BENCH_SWEEP_HOSTS hosts of 4 GPUs, the proxy's RTT; 8 hosts and
// 64 trials by default), so that each GPU hands over once. Each trial's
// task stamps, on the one clock of this machine, when it starts and ends
// and on which host and GPU, and runs TFHIVE_BENCH_SWEEP_TASK. The
// measures: the gap on each GPU from one trial's end to the next trial's
// first task, against the queue's hand-over target (1 s + 3 RTT); the
// sweep's wall time against the ideal, the sum of its trials' durations
// over the GPUs. It fails only when the sweep does not work.
func TestBenchSweep(t *testing.T) {
	if os.Getenv("TFHIVE_BENCH") == "" {
		t.Skip("the benchmark: set TFHIVE_BENCH=1 (testdata/bench/run.sh)")
	}
	if only := os.Getenv("TFHIVE_BENCH_ONLY"); only != "" && !strings.Contains(","+only+",", ",sweep,") {
		t.Skip("TFHIVE_BENCH_ONLY leaves out sweep")
	}
	rtt := envDuration(t, "TFHIVE_BENCH_RTT", 50*time.Millisecond)
	hosts := envInts(t, "TFHIVE_BENCH_SWEEP_HOSTS", []int{8})[0]
	task := envDuration(t, "TFHIVE_BENCH_SWEEP_TASK", 2*time.Second)
	const perHost = 4
	gpus := hosts * perHost
	trials := 2 * gpus
	var ps []sshtest.Profile
	for i := range hosts {
		ps = append(ps, sshtest.Profile{Name: fmt.Sprintf("w%d", i), GPU: "idle-4gpu.xml", RTT: rtt})
	}
	f := sshtest.Start(t, ps...)
	events := filepath.Join(t.TempDir(), "events")
	values := make([]string, trials)
	for i := range values {
		values[i] = strconv.Itoa(i)
	}
	cmd := `echo "start $(hostname) $CUDA_VISIBLE_DEVICES $(date +%s%N)" >> ` + events +
		`; sleep ` + strconv.FormatFloat(task.Seconds(), 'f', 3, 64) +
		`; echo "end $(hostname) $CUDA_VISIBLE_DEVICES $(date +%s%N)" >> ` + events
	args := fleetArgs(f, "sweep", "--name", "bench", "--param", "i="+strings.Join(values, ","), "--workers", "1",
		"--sample", "0", "--json", "--", "sh", "-c", cmd+" # {i}")
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	var doc struct {
		Trials []struct {
			Duration time.Duration `json:"duration_ns"`
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Trials) != trials {
		t.Fatalf("sweep --json: %v\n%s", err, r.stdout)
	}
	var sum time.Duration
	for _, tr := range doc.Trials {
		sum += tr.Duration
	}
	// Each GPU's trials in time order; a hand-over is the gap from one's
	// end to the next one's start.
	data, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	type span struct{ start, end int64 }
	open := map[string]int64{}
	spans := map[string][]span{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		fs := strings.Fields(line)
		if len(fs) != 4 {
			t.Fatalf("event %q", line)
		}
		gpu := fs[1] + ":" + fs[2]
		ns, _ := strconv.ParseInt(fs[3], 10, 64)
		if fs[0] == "start" {
			if _, busy := open[gpu]; busy {
				t.Errorf("two trials at once on %s", gpu)
			}
			open[gpu] = ns
			continue
		}
		spans[gpu] = append(spans[gpu], span{open[gpu], ns})
		delete(open, gpu)
	}
	var gaps []time.Duration
	for _, ss := range spans {
		sort.Slice(ss, func(i, j int) bool { return ss[i].start < ss[j].start })
		for i := 1; i < len(ss); i++ {
			gaps = append(gaps, time.Duration(ss[i].start-ss[i-1].end))
		}
	}
	if len(gaps) == 0 {
		t.Fatal("no hand-over measured")
	}
	med, worst := medianDur(gaps), time.Duration(0)
	for _, g := range gaps {
		worst = max(worst, g)
	}
	ideal := sum / time.Duration(gpus)
	limit := time.Second + 3*rtt
	fmt.Printf("\n## sweep\n\n%d one-GPU trials (`%s` each) on %d hosts × %d GPUs (RTT %s): %d hand-overs.\n\n"+
		"| measure | value |\n|---|---|\n| GPUs that ran a trial | %d of %d |\n| hand-over, GPU free → next trial's task, median | %s |\n| hand-over, worst | %s |\n"+
		"| sweep's wall time (tfhive sweep) | %s |\n| ideal: sum of trials' durations / GPUs | %s |\n| wall / ideal | %.2f× |\n",
		trials, "sleep "+task.String(), hosts, perHost, rtt, len(gaps), len(spans), gpus, ms(med), ms(worst), ms(r.elapsed), ms(ideal), float64(r.elapsed)/float64(ideal))
	v := "met"
	if worst > limit {
		v = "**missed**"
	}
	fmt.Printf("\n## targets (sweep)\n\n| target | measured | |\n|---|---|---|\n| a trial's end → the next trial's first task on its GPU ≤ 1 s + 3 RTT (%s) | worst %s, median %s | %s |\n",
		ms(limit), ms(worst), ms(med), v)
}
