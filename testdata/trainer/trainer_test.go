package main

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/testkit"
)

// task is one trainer running in-process.
type task struct {
	name           string
	stdout, stderr testkit.SyncBuffer // written by the task while the test reads them
	stop           context.CancelFunc // "SIGTERM"
	done           chan int
}

func startTask(t *testing.T, cluster map[string][]string, typ string, index int, args ...string) *task {
	t.Helper()
	tc, _ := json.Marshal(map[string]any{"cluster": cluster, "task": map[string]any{"type": typ, "index": index}})
	ctx, cancel := context.WithCancel(context.Background())
	tk := &task{name: typ, stop: cancel, done: make(chan int, 1)}
	env := func(k string) string {
		if k == "TF_CONFIG" {
			return string(tc)
		}
		return ""
	}
	go func() { tk.done <- run(args, env, &tk.stdout, &tk.stderr, func() context.Context { return ctx }) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-tk.done:
		case <-time.After(5 * time.Second):
			t.Errorf("%s did not stop", typ)
		}
	})
	return tk
}

func (tk *task) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case code := <-tk.done:
		tk.done <- code // for Cleanup
		return code
	case <-time.After(timeout):
		t.Fatalf("%s still running after %v\nstdout:\n%s\nstderr:\n%s", tk.name, timeout, tk.stdout.String(), tk.stderr.String())
		return -1
	}
}

func (tk *task) waitFor(t *testing.T, line string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(tk.stdout.String(), line) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never printed %q; stdout:\n%s\nstderr:\n%s", tk.name, line, tk.stdout.String(), tk.stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// freeAddrs returns n addresses on 127.0.0.1 that were free a moment ago.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

func TestPSAndWorkersConverge(t *testing.T) {
	a := freeAddrs(t, 5)
	cluster := map[string][]string{"ps": a[:2], "worker": a[2:]}
	// Workers first: they must wait for the ps to come up.
	var workers []*task
	for i := range 3 {
		workers = append(workers, startTask(t, cluster, "worker", i))
	}
	time.Sleep(100 * time.Millisecond)
	ps0 := startTask(t, cluster, "ps", 0)
	ps1 := startTask(t, cluster, "ps", 1)
	ps0.waitFor(t, "ps 0 listening on "+a[0]+"\n")
	ps1.waitFor(t, "ps 1 listening on "+a[1]+"\n")
	start := time.Now()
	for i, w := range workers {
		if code := w.wait(t, 10*time.Second); code != 0 {
			t.Fatalf("worker %d: exit %d\nstdout:\n%s\nstderr:\n%s", i, code, w.stdout.String(), w.stderr.String())
		}
		out := w.stdout.String()
		if !strings.HasPrefix(out, "worker "+itoa(i)+" step 1 loss ") || !strings.Contains(out, "worker "+itoa(i)+" reached loss ") {
			t.Errorf("worker %d stdout:\n%s", i, out)
		}
	}
	t.Logf("3 workers converged %v after the ps came up", time.Since(start))
	ps0.stop()
	if code := ps0.wait(t, 5*time.Second); code != 0 || ps0.stderr.String() != "" {
		t.Errorf("stopped ps: exit %d, stderr %q", code, ps0.stderr.String())
	}
}

func TestWorkerFailsWhenPSDies(t *testing.T) {
	a := freeAddrs(t, 2)
	cluster := map[string][]string{"ps": a[:1], "worker": a[1:]}
	ps := startTask(t, cluster, "ps", 0)
	w := startTask(t, cluster, "worker", 0, "--target", "0", "--sleep", "2ms")
	w.waitFor(t, "worker 0 step 10 loss")
	ps.stop()
	if code := w.wait(t, 5*time.Second); code != 1 || !strings.Contains(w.stderr.String(), "trainer: worker 0: step ") ||
		!strings.Contains(w.stderr.String(), "lost ps 0 at "+a[0]) {
		t.Errorf("exit %d, stderr %q", code, w.stderr.String())
	}
}

func TestWorkerCannotReachPS(t *testing.T) {
	a := freeAddrs(t, 2)
	cluster := map[string][]string{"ps": a[:1], "worker": a[1:]}
	start := time.Now()
	w := startTask(t, cluster, "worker", 0, "--connect-timeout", "300ms")
	code := w.wait(t, 5*time.Second)
	want := "trainer: worker 0: ps 0 at " + a[0] + " not reachable within 300ms (--connect-timeout): connection refused\n"
	if code != 1 || w.stderr.String() != want {
		t.Errorf("exit %d, stderr %q; want 1, %q", code, w.stderr.String(), want)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("gave up after %v", d)
	}
}

func TestNotConvergedAndForcedFailure(t *testing.T) {
	a := freeAddrs(t, 2)
	cluster := map[string][]string{"ps": a[:1], "worker": a[1:]}
	startTask(t, cluster, "ps", 0)
	w := startTask(t, cluster, "worker", 0, "--steps", "3")
	if code := w.wait(t, 5*time.Second); code != 1 || !strings.Contains(w.stderr.String(), "trainer: worker 0 did not converge: loss ") {
		t.Errorf("exit %d, stderr %q", code, w.stderr.String())
	}
	w = startTask(t, cluster, "worker", 0, "--target", "0", "--fail-at-step", "5", "--fail-code", "9")
	if code := w.wait(t, 5*time.Second); code != 9 || w.stderr.String() != "trainer: worker 0: failing at step 5 as asked (--fail-at-step), exit 9\n" {
		t.Errorf("exit %d, stderr %q", code, w.stderr.String())
	}
}

func TestChiefMode(t *testing.T) {
	a := freeAddrs(t, 5)
	cluster := map[string][]string{"chief": a[:1], "ps": a[1:3], "worker": a[3:]}
	w0 := startTask(t, cluster, "worker", 0, "--fail-at-step", "3")
	w1 := startTask(t, cluster, "worker", 1)
	w0.waitFor(t, "worker 0 serving on "+a[3]+"\n")
	w1.waitFor(t, "worker 1 serving on "+a[4]+"\n")
	// The chief and the evaluator come up before the ps and must wait.
	chief := startTask(t, cluster, "chief", 0, "--sleep", "5ms", "--log-every", "1")
	ev := startTask(t, cluster, "evaluator", 0, "--eval-every", "20ms")
	time.Sleep(50 * time.Millisecond)
	startTask(t, cluster, "ps", 0)
	startTask(t, cluster, "ps", 1)

	if code := chief.wait(t, 10*time.Second); code != 0 || !strings.Contains(chief.stdout.String(), "chief reached loss ") {
		t.Fatalf("chief: exit %d\nstdout:\n%s\nstderr:\n%s", code, chief.stdout.String(), chief.stderr.String())
	}
	if code := w0.wait(t, 5*time.Second); code != 3 {
		t.Errorf("worker 0 exit %d, want 3", code)
	}
	if !strings.Contains(chief.stderr.String(), "lost worker 0 at "+a[3]) {
		t.Errorf("chief stderr %q", chief.stderr.String())
	}
	ev.waitFor(t, "evaluator loss ")
	for _, tk := range []*task{w1, ev} {
		tk.stop()
		if code := tk.wait(t, 5*time.Second); code != 0 {
			t.Errorf("%s: exit %d after stop; stderr %q", tk.name, code, tk.stderr.String())
		}
	}
}

func TestChiefWithoutWorkers(t *testing.T) {
	a := freeAddrs(t, 3)
	cluster := map[string][]string{"chief": a[:1], "worker": a[1:]}
	chief := startTask(t, cluster, "chief", 0, "--connect-timeout", "200ms")
	if code := chief.wait(t, 5*time.Second); code != 1 || !strings.Contains(chief.stderr.String(), "trainer: chief: step 1: no worker reachable for 200ms (--connect-timeout): worker 0 at "+a[1]) {
		t.Errorf("exit %d, stderr %q", code, chief.stderr.String())
	}
}

func TestNoPSWorkerZeroHoldsParameters(t *testing.T) {
	a := freeAddrs(t, 3)
	cluster := map[string][]string{"worker": a}
	var ws []*task
	for i := range 3 {
		ws = append(ws, startTask(t, cluster, "worker", i, "--sleep", "1ms"))
	}
	for i, w := range ws {
		if code := w.wait(t, 10*time.Second); code != 0 {
			t.Errorf("worker %d: exit %d, stderr %q", i, code, w.stderr.String())
		}
	}
	if !strings.Contains(ws[0].stdout.String(), "worker 0 waiting for the other workers (parameters are held here)\n") {
		t.Errorf("worker 0 stdout:\n%s", ws[0].stdout.String())
	}
}

func TestDimMismatch(t *testing.T) {
	a := freeAddrs(t, 2)
	cluster := map[string][]string{"ps": a[:1], "worker": a[1:]}
	startTask(t, cluster, "ps", 0, "--dim", "8")
	w := startTask(t, cluster, "worker", 0)
	if code := w.wait(t, 5*time.Second); code != 1 || !strings.Contains(w.stderr.String(), "refused: parameter mismatch") {
		t.Errorf("exit %d, stderr %q", code, w.stderr.String())
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
