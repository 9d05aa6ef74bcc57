package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// TestBenchQueue is the queue's benchmark (testdata/bench/run.sh runs it
// after TestBench, under TFHIVE_BENCH; TFHIVE_BENCH_ONLY without "queue"
// skips it): 8 runs (TFHIVE_BENCH_QUEUE_RUNS; the smoke run's 3) queued
// with --wait on a 4-host fleet (2 GPUs each,
// the proxy's RTT), each asking all 8 GPUs, behind a long run that holds
// them. Each run's tasks stamp, on the one clock of this machine, when
// they start and when they end; the measure is the time from one run's
// tasks ending (its GPUs freeing up) to the next run's first task
// starting. It prints its own table and target, and fails only when the
// queue does not work (a run out of order, or none starting).
func TestBenchQueue(t *testing.T) {
	if os.Getenv("TFHIVE_BENCH") == "" {
		t.Skip("the benchmark: set TFHIVE_BENCH=1 (testdata/bench/run.sh)")
	}
	if only := os.Getenv("TFHIVE_BENCH_ONLY"); only != "" && !strings.Contains(","+only+",", ",queue,") {
		t.Skip("TFHIVE_BENCH_ONLY leaves out queue")
	}
	benchBinary()
	rtt := envDuration(t, "TFHIVE_BENCH_RTT", 50*time.Millisecond)
	queued := envInts(t, "TFHIVE_BENCH_QUEUE_RUNS", []int{8})[0]
	if queued < 2 {
		t.Fatalf("TFHIVE_BENCH_QUEUE_RUNS=%d: at least 2 (a run's place is kept behind another's)", queued)
	}
	var ps []sshtest.Profile
	for i := range 4 {
		ps = append(ps, sshtest.Profile{Name: fmt.Sprintf("q%d", i), GPU: "idle-2gpu.xml", RTT: rtt})
	}
	f := sshtest.Start(t, ps...)
	dir := t.TempDir()
	stamp := func(name, what string) string { return filepath.Join(dir, name+"."+what) }
	start := func(name string, wait bool) *running {
		// Each task's temporary file is its own: pids are each host's
		// (separate hosts may give two tasks one pid), hostnames differ.
		tmp := `.$(hostname).$$`
		task := `date +%s%N >` + stamp(name, "start") + tmp + ` && mv -f ` + stamp(name, "start") + tmp + ` ` + stamp(name, "start") +
			`; while [ ! -e ` + stamp(name, "done") + ` ]; do sleep 0.02; done; date +%s%N >` + stamp(name, "end") + tmp + ` && mv -f ` + stamp(name, "end") + tmp + ` ` + stamp(name, "end")
		args := []string{"--workers", "4", "--gpus-per-worker", "2", "--name", name, "--quiet"}
		if wait {
			args = append(args, "--wait", "30m")
		}
		a, _ := runArgs(t, f, append(args, "--", "sh", "-c", task)...)
		r := startTfhive(t, f, readStderr, a...)
		if wait && !r.readUntil(func(l string) bool { return strings.HasPrefix(l, "tfhive: waiting") }) {
			r.Wait()
			t.Fatalf("%s did not wait:\n%s%s", name, r.read.String(), r.other.String())
		}
		r.discardRest()
		return r
	}
	// read gives a stamp once its file is there (a run that never starts
	// ends the benchmark after a minute).
	read := func(name, what string) time.Time {
		deadline := time.Now().Add(time.Minute)
		for {
			if b, err := os.ReadFile(stamp(name, what)); err == nil {
				if ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
					return time.Unix(0, ns)
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s stamp from %s; queue: %v", what, name, queueOrder(t, f))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	names := []string{"long"}
	runs := []*running{start("long", false)}
	read("long", "start")
	for i := 1; i <= queued; i++ {
		names = append(names, fmt.Sprintf("q%d", i))
		runs = append(runs, start(names[i], true))
	}
	var gaps []time.Duration
	for i := range queued {
		os.WriteFile(stamp(names[i], "done"), nil, 0o644)
		end, next := read(names[i], "end"), read(names[i+1], "start")
		gaps = append(gaps, next.Sub(end))
		if err := runs[i].Wait(); err != nil {
			t.Errorf("%s: %v\n%s", names[i], err, runs[i].other.String())
		}
		for _, later := range names[i+2:] {
			if _, err := os.Stat(stamp(later, "start")); err == nil {
				t.Errorf("%s started before %s", later, names[i+1])
			}
		}
	}
	os.WriteFile(stamp(names[queued], "done"), nil, 0o644)
	runs[queued].Wait()

	fmt.Printf("\n## queue\n\n%d runs queued with --wait on 4 hosts (2 GPUs each, RTT %s), each asking all 8 GPUs: "+
		"from one run's tasks ending to the next run's first task starting.\n\n| handover | time |\n|---|---|\n", queued, rtt)
	worst := time.Duration(0)
	for i, g := range gaps {
		fmt.Printf("| %s → %s | %s |\n", names[i], names[i+1], ms(g))
		worst = max(worst, g)
	}
	med, limit := medianDur(gaps), time.Second+3*rtt
	v := "met"
	if med > limit {
		v = "**missed**"
	}
	fmt.Printf("\n## targets (queue)\n\n| target | measured | |\n|---|---|---|\n| GPUs free → next queued run's first task ≤ 1 s + 3 RTT (%s) | median %s, worst %s | %s |\n",
		ms(limit), ms(med), ms(worst), v)
}
