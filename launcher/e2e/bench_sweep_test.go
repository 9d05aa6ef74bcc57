package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// TestBenchSweep is the sweep's benchmark (testdata/bench/run.sh runs it
// after TestBench, under TFHIVE_BENCH; TFHIVE_BENCH_ONLY without "sweep"
// skips it): a sweep of one-GPU trials on TFHIVE_BENCH_SWEEP_HOSTS hosts
// of TFHIVE_BENCH_SWEEP_GPUS GPUs (8 × 8 by default, issue 26's fleet;
// 4 GPUs a host is the other fake), behind the proxy's RTT. Each trial's
// task stamps, on the one clock of this machine, when it starts and ends
// and on which host and GPU, and runs TFHIVE_BENCH_SWEEP_TASK. The
// measures: the gap on each GPU from one trial's end to the next trial's
// first task, against the queue's hand-over target (1 s + 3 RTT); the
// sweep's wall time against the ideal, the sum of its trials' durations
// over the GPUs. It fails only when the sweep does not work.
//
// TFHIVE_BENCH_SWEEP_TRIALS is 2 a GPU by default (128 on 8 × 8), so that
// every GPU hands over at least once: the 64 trials on 64 GPUs
// would start all at once and measure no hand-over at all, only the
// start. TRIALS=64 on 4 hosts × 8 GPUs is the 64 trials with a
// hand-over on each GPU.
func TestBenchSweep(t *testing.T) {
	if os.Getenv("TFHIVE_BENCH") == "" {
		t.Skip("the benchmark: set TFHIVE_BENCH=1 (testdata/bench/run.sh)")
	}
	if only := os.Getenv("TFHIVE_BENCH_ONLY"); only != "" && !strings.Contains(","+only+",", ",sweep,") {
		t.Skip("TFHIVE_BENCH_ONLY leaves out sweep")
	}
	benchBinary()
	rtt := envDuration(t, "TFHIVE_BENCH_RTT", 50*time.Millisecond)
	hosts := envInts(t, "TFHIVE_BENCH_SWEEP_HOSTS", []int{8})[0]
	task := envDuration(t, "TFHIVE_BENCH_SWEEP_TASK", 2*time.Second)
	// The fakes' inventories: testdata/nvidia-smi/idle-{4,8}gpu.xml.
	perHost := envInts(t, "TFHIVE_BENCH_SWEEP_GPUS", []int{8})[0]
	if perHost != 4 && perHost != 8 {
		t.Fatalf("TFHIVE_BENCH_SWEEP_GPUS=%d: want 4 or 8 (the fake hosts' inventories)", perHost)
	}
	gpus := hosts * perHost
	trials := envInts(t, "TFHIVE_BENCH_SWEEP_TRIALS", []int{2 * gpus})[0]
	if trials <= gpus {
		// Every trial would start at once: no GPU hands over.
		t.Fatalf("TFHIVE_BENCH_SWEEP_TRIALS=%d: want more than the %d GPUs, or no GPU hands over", trials, gpus)
	}
	var ps []sshtest.Profile
	for i := range hosts {
		ps = append(ps, sshtest.Profile{Name: fmt.Sprintf("w%d", i), GPU: fmt.Sprintf("idle-%dgpu.xml", perHost), RTT: rtt})
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
	env := f.Env()
	if dir := os.Getenv("TFHIVE_BENCH_PROFILE"); dir != "" {
		// tfhive's own profiles (profile.go), for the breakdown.
		env = append(env, "TFHIVE_PROFILE="+dir)
	}
	trace := sampleCPU(20 * time.Millisecond)
	began := time.Now()
	r := tfhive(t, env, f.Dir, args...)
	trace.stop()
	// The machine's CPU over the sweep (hosts, sshd, tfhive, and whatever
	// else runs here): spread on its CPUs, the floor it sets on the wall.
	cpu := trace.until(time.Now())
	floor := cpu / time.Duration(runtime.NumCPU())
	wantCode(t, r, 0)
	if dir := os.Getenv("TFHIVE_BENCH_PROFILE"); dir != "" {
		// The trials' consoles and timelines beside the profiles.
		exec.Command("cp", "-r", filepath.Join(f.Dir, "tfhive-runs"), dir).Run()
	}
	sessions, conns := 0, 0
	for _, h := range f.Hosts {
		sessions, conns = sessions+h.Sessions(), conns+h.Connections()
	}
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
	// Every GPU busy also means every GPU started soon and took its share:
	// the spread of the GPUs' first tasks, and the fewest and most trials
	// a GPU ran.
	var gaps []time.Duration
	var hand []span // each hand-over: from the GPU free to its next trial's start
	fewest, most := trials, 0
	var firstOn []int64
	for _, ss := range spans {
		sort.Slice(ss, func(i, j int) bool { return ss[i].start < ss[j].start })
		fewest, most = min(fewest, len(ss)), max(most, len(ss))
		firstOn = append(firstOn, ss[0].start)
		for i := 1; i < len(ss); i++ {
			gaps = append(gaps, time.Duration(ss[i].start-ss[i-1].end))
			hand = append(hand, span{ss[i-1].end, ss[i].start})
		}
	}
	if len(gaps) == 0 {
		t.Fatal("no hand-over measured")
	}
	if len(spans) < gpus {
		fewest = 0
	}
	slices.Sort(gaps)
	med, p95, worst := medianDur(gaps), gaps[(len(gaps)*95+99)/100-1], gaps[len(gaps)-1]
	ideal := sum / time.Duration(gpus)
	taskIdeal := task * time.Duration((trials+gpus-1)/gpus)
	limit := time.Second + 3*rtt
	over := len(gaps) - sort.Search(len(gaps), func(i int) bool { return gaps[i] > limit })
	fmt.Printf("\n## sweep\n\n%d one-GPU trials (`%s` each) on %d hosts × %d GPUs (RTT %s): %d hand-overs.\n\n"+
		"| measure | value |\n|---|---|\n| GPUs that ran a trial | %d of %d |\n"+
		"| hand-over, GPU free → next trial's task: median, p95, worst | %s, %s, %s |\n"+
		"| hand-overs over the target (%s) | %d of %d |\n"+
		"| trials a GPU ran, fewest–most | %d–%d |\n| first task on the first GPU → on the last GPU | %s |\n"+
		"| sweep started → its first task; → every GPU's first task | %s; %s |\n"+
		"| sweep's wall time (tfhive sweep) | %s |\n| ideal: sum of trials' durations / GPUs | %s |\n| wall / ideal | %.2f× |\n"+
		"| SSH sessions the hosts' sshd started, per trial | %.2f (%d) |\n"+
		"| SSH connections the hosts' sshd accepted | %d (%d hosts) |\n"+
		"| the tasks' own ideal: %s × ⌈trials / GPUs⌉ | %s; wall / it %.2f× |\n"+
		"| machine CPU over the sweep (%d CPUs): floor = CPU / CPUs | %s; floor %s; wall / max(floor, tasks' ideal) %.2f× |\n",
		trials, "sleep "+task.String(), hosts, perHost, rtt, len(gaps), len(spans), gpus, ms(med), ms(p95), ms(worst),
		ms(limit), over, len(gaps), fewest, most, ms(time.Duration(slices.Max(firstOn)-slices.Min(firstOn))),
		ms(time.Duration(slices.Min(firstOn)-began.UnixNano())), ms(time.Duration(slices.Max(firstOn)-began.UnixNano())),
		ms(r.elapsed), ms(ideal), float64(r.elapsed)/float64(ideal),
		float64(sessions)/float64(trials), sessions, conns, hosts,
		task, ms(taskIdeal), float64(r.elapsed)/float64(taskIdeal),
		runtime.NumCPU(), ms(cpu), ms(floor), float64(r.elapsed)/float64(max(floor, taskIdeal)))
	// The CPU floor of a hand-over: a trial's share of the machine's CPU
	// (its start, its end, its pump meanwhile: the sweep's CPU ÷ its
	// trials) for every hand-over under way beside it (its own included),
	// on the machine's CPUs, half of them done before it on average. Each
	// hand-over against 1 s + 3 RTT beyond its floor: the median ratio.
	perTrial := cpu / time.Duration(trials)
	var beyond []float64
	var floors []time.Duration
	for _, h := range hand {
		n := 0
		for _, o := range hand {
			if o.start < h.end && h.start < o.end {
				n++
			}
		}
		fl := perTrial * time.Duration(n) / time.Duration(2*runtime.NumCPU())
		floors = append(floors, fl)
		beyond = append(beyond, float64(h.end-h.start)/float64(limit+fl))
	}
	slices.Sort(beyond)
	slices.Sort(floors)
	medBeyond := beyond[len(beyond)/2]
	fmt.Printf("| a trial's CPU (machine CPU ÷ trials); a hand-over's CPU floor (hand-overs beside it × that ÷ 2 × CPUs), median | %s; %s |\n"+
		"| hand-over ÷ (1 s + 3 RTT + its CPU floor), median | %.2f× |\n", ms(perTrial), ms(medianDur(floors)), medBeyond)
	// The wall's floor on this machine: its busy time (CPU ÷ CPUs) and the
	// time its CPUs could not be used because no trial waited for a GPU
	// (every GPU running a task, or no trial left to start). The wall is
	// exactly that floor plus the idle time while a trial waited or
	// tfhive started and ended: tfhive's waiting, on round trips or locks.
	var all []span
	for _, ss := range spans {
		all = append(all, ss...)
	}
	slices.SortFunc(all, func(a, b span) int { return int(a.start - b.start) })
	firstStart, lastEnd := all[0].start, slices.MaxFunc(all, func(a, b span) int { return int(a.end - b.end) }).end
	// The rest is split by when the CPUs sat idle: before the first task
	// (tfhive's start: logins, the first probe), while a trial waited for
	// a GPU, after the last task (tfhive's end).
	var unavoidable, idleBefore, idleWaiting, idleAfter time.Duration
	for i := 1; i < len(trace.at); i++ {
		mid := trace.at[i-1].Add(trace.at[i].Sub(trace.at[i-1]) / 2).UnixNano()
		// Signed, not capped at 0: /proc/stat counts in 10 ms ticks, so a
		// busy 20 ms step can read above the CPUs' capacity and the next
		// below it; capped, their errors would add up to idle time that
		// was not. Summed, they cancel: the parts add up to the wall less
		// CPU ÷ CPUs.
		dt := trace.at[i].Sub(trace.at[i-1])
		idle := dt - (trace.cpu[i]-trace.cpu[i-1])/time.Duration(runtime.NumCPU())
		if mid < firstStart {
			idleBefore += idle
			continue
		}
		if mid > lastEnd {
			idleAfter += idle
			continue
		}
		started, busy := 0, 0
		for _, sp := range all {
			if sp.start <= mid {
				started++
				if mid < sp.end {
					busy++
				}
			}
		}
		if started < trials && busy < gpus {
			idleWaiting += idle
			continue
		}
		unavoidable += idle
	}
	wallFloor := floor + unavoidable
	wallRatio := float64(r.elapsed) / float64(wallFloor)
	fmt.Printf("| CPUs idle while no trial waited for a GPU (all GPUs running, or none left); wall's floor = CPU ÷ CPUs + that | %s; %s |\n"+
		"| wall ÷ its floor (the rest: CPUs idle while a trial waited, or tfhive started or ended) | %.2f× |\n"+
		"| the rest, CPUs idle: before the first task (tfhive's start), while a trial waited, after the last task (its end) | %s; %s; %s |\n",
		ms(unavoidable), ms(wallFloor), wallRatio, ms(idleBefore), ms(idleWaiting), ms(idleAfter))
	fmt.Printf("\n## targets (sweep)\n\n| target | measured | |\n|---|---|---|\n"+
		"| a trial's end → the next trial's first task on its GPU ≤ 1 s + 3 RTT (%s) | worst %s, p95 %s, median %s | %s |\n"+
		"| every GPU runs trials (more trials than GPUs) | %d of %d GPUs | %s |\n"+
		"| against the machine's CPU floor: hand-over ≤ 1 s + 3 RTT + its floor (median ratio ≤ 1) | %.2f× | %s |\n"+
		"| wall ≤ 1.1 × the tasks' ideal (%s) | %.2f× | %s |\n"+
		"| against the machine's floor: wall ≤ 1.1 × (CPU ÷ CPUs + CPUs idle while no trial waited) | %.2f× | %s |\n",
		ms(limit), ms(worst), ms(p95), ms(med), metIf(worst <= limit), len(spans), gpus, metIf(len(spans) >= gpus), medBeyond, metIf(medBeyond <= 1),
		ms(taskIdeal), float64(r.elapsed)/float64(taskIdeal), metIf(float64(r.elapsed) <= 1.1*float64(taskIdeal)), wallRatio, metIf(wallRatio <= 1.1))
}

// metIf is a target's verdict.
func metIf(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}
