package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alessio/shellescape"

	"github.com/tfhive/tfhive/probe/sshtest"
	"github.com/tfhive/tfhive/schedule"
)

// TestBenchTF is real TensorFlow's launch benchmark (testdata/bench/run.sh,
// under TFHIVE_BENCH; TFHIVE_BENCH_ONLY without "tf" skips it, and so does
// the smoke run, RTT 0, to keep CI short): the time from starting a
// ParameterServerStrategy job (chief, 2 ps, 2 workers of
// testdata/examples/ps_strategy.py on 3 separate hosts behind the
// proxy's RTT) to its first training step, the first "worker step" line
// a worker prints, with tfhive run against the same job started by hand
// with one ssh per task (what users do without tfhive: the TF_CONFIG of
// tfhive's plan, the same venv, the same directory), alternated, in one
// run. TensorFlow's import dominates; the target is tfhive ≤ 1.1× by hand.
// It fails only when a job does not reach its first step.
func TestBenchTF(t *testing.T) {
	if os.Getenv("TFHIVE_BENCH") == "" {
		t.Skip("the benchmark: set TFHIVE_BENCH=1 (testdata/bench/run.sh)")
	}
	if only := os.Getenv("TFHIVE_BENCH_ONLY"); only != "" && !strings.Contains(","+only+",", ",tf,") {
		t.Skip("TFHIVE_BENCH_ONLY leaves out tf")
	}
	rtt := envDuration(t, "TFHIVE_BENCH_RTT", 50*time.Millisecond)
	if rtt == 0 {
		t.Skip("the TensorFlow launch is measured behind an RTT (TFHIVE_BENCH_RTT=0: the smoke run)")
	}
	benchBinary()
	reps := envInts(t, "TFHIVE_BENCH_REPS", []int{5})[0]
	venv := tfVenv(t)
	var ps []sshtest.Profile
	for _, n := range []string{"p1", "p2", "p3"} {
		ps = append(ps, sshtest.Profile{Name: n, RTT: rtt})
	}
	f := sshtest.Start(t, ps...)
	activate := "source " + filepath.Join(venv, "bin", "activate")
	hostsFile := filepath.Join(f.Dir, "tf-hosts.yaml")
	yaml := "defaults:\n  setup: " + activate + "\n  workdir: " + examplesDir() + "\nhosts: [p1, p2, p3]\n"
	if err := os.WriteFile(hostsFile, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	job := []string{"--chief", "--ps", "2", "--workers", "2", "--gpus-per-worker", "0"}
	model := func(i int, how string) string { return filepath.Join(f.Dir, fmt.Sprintf("model-%s-%d", how, i)) }
	script := []string{"python3", "ps_strategy.py", "--epochs", "1"}
	stopAll := func() {
		for _, h := range f.Hosts {
			h.Command(nil, "pkill", "-KILL", "-f", "ps_strategy.py").Run()
		}
	}
	firstStep := func(l string) bool { return strings.Contains(l, "worker step ") }

	// tfhive: from its start to the first step line in its output.
	withTfhive := func(i int) time.Duration {
		args := append([]string{"run", "--hosts", hostsFile, "--ssh-config", f.SSHConfig, "--log-dir", filepath.Join(t.TempDir(), "logs"), "--grace", "1s"}, job...)
		args = append(append(args, "--"), append(slices.Clone(script), "--model_dir="+model(i, "tfhive"))...)
		start := time.Now()
		r := startTfhive(t, f, readStdout, args...)
		if !r.readUntil(firstStep) {
			r.Wait()
			t.Fatalf("tfhive's job never stepped:\n%s%s", r.read.String(), r.other.String())
		}
		d := time.Since(start)
		r.discardRest()
		r.Wait() // the chief ends the job; its servers are stopped
		return d
	}
	// By hand: the plan's TF_CONFIG for each task, one ssh each, all at
	// once, as a user's script would; to the first step line of any.
	pl := tfhive(t, f.Env(), f.Dir, append(append([]string{"plan", "--hosts", hostsFile, "--ssh-config", f.SSHConfig, "--json"}, job...), "--", "true")...)
	wantCode(t, pl, 0)
	var plan schedule.Plan
	if err := json.Unmarshal([]byte(pl.stdout), &plan); err != nil {
		t.Fatal(err)
	}
	byHand := func(i int) time.Duration {
		lines := make(chan string, 64)
		var cmds []*exec.Cmd
		var wg sync.WaitGroup
		start := time.Now()
		for _, task := range plan.Tasks {
			remote := activate + " && cd " + shellescape.Quote(examplesDir()) + " && TF_CONFIG=" + shellescape.Quote(task.TFConfig) +
				" CUDA_VISIBLE_DEVICES= exec " + shellescape.QuoteCommand(append(slices.Clone(script), "--model_dir="+model(i, "hand")))
			c := exec.Command("ssh", "-F", f.SSHConfig, task.Host, remote)
			c.Env = f.Env()
			out, _ := c.StdoutPipe()
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			cmds = append(cmds, c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					select {
					case lines <- sc.Text():
					default:
					}
				}
			}()
		}
		var d time.Duration
		deadline := time.After(5 * time.Minute)
	wait:
		for {
			select {
			case l := <-lines:
				if firstStep(l) {
					d = time.Since(start)
					break wait
				}
			case <-deadline:
				t.Fatal("the job started by hand never stepped")
			}
		}
		stopAll()
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
		wg.Wait()
		return d
	}
	withTfhive(0) // warm-up: page cache, TensorFlow's first import
	var th, hand []time.Duration
	for i := 1; i <= reps; i++ {
		th = append(th, withTfhive(i))
		hand = append(hand, byHand(i))
	}
	mt, mh := medianDur(th), medianDur(hand)
	fmt.Printf("\n### TensorFlow: start to the first training step (chief, 2 ps, 2 workers on 3 hosts, RTT %s, %d runs each, alternated)\n\n", rtt, reps)
	fmt.Printf("| launch | median | runs |\n|---|---:|---|\n| tfhive run | %s | %v |\n| by hand, one ssh per task | %s | %v |\n\n",
		mt.Round(10*time.Millisecond), roundAll(th), mh.Round(10*time.Millisecond), roundAll(hand))
	fmt.Printf("tfhive ÷ by hand: %.2f× (target ≤ 1.1×); tfhive's overhead %s\n", ratio(mt, mh), (mt - mh).Round(10*time.Millisecond))
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(10 * time.Millisecond)
	}
	return out
}
