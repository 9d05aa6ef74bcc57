package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/sshtest"
)

// claimFleet: 8 hosts × 2 idle GPUs = 16, each host on its own loopback
// address so that ports are per host as on a real cluster.
func claimFleet(t *testing.T) *sshtest.Fleet {
	var ps []sshtest.Profile
	for i := 1; i <= 8; i++ {
		ps = append(ps, sshtest.Profile{Name: fmt.Sprintf("c%d", i), GPU: "idle-2gpu.xml", AliveInterval: 1, Listen: fmt.Sprintf("127.0.0.%d", 10+i)})
	}
	return sshtest.Start(t, ps...)
}

// usage is one task's view of what it got, printed by the task itself.
const usageScript = `s=$(date +%s%N); sleep "$1"; echo "USAGE $TFHIVE_RUN_ID $TFHIVE_FAKE_GPU gpus=$CUDA_VISIBLE_DEVICES $s $(date +%s%N) $TF_CONFIG"`

func TestConcurrentRunsNeverShare(t *testing.T) {
	f := claimFleet(t)
	var wg sync.WaitGroup
	results := make([]result, 4)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args, _ := runArgs(t, f, "--name", fmt.Sprintf("conc-%d", i), "--workers", "4", "--", "sh", "-c", usageScript, "sh", "5")
			results[i] = tfhive(t, f.Env(), f.Dir, args...)
		}()
	}
	wg.Wait()

	// No GPU and no address is held by two tasks at the same time (runs
	// that did not overlap may reuse them).
	type use struct {
		run        string
		start, end int64
	}
	uses := map[string][]use{}
	spans := map[string]use{} // each run's first start and last end
	for i, r := range results {
		wantCode(t, r, 0)
		n := 0
		for _, line := range strings.Split(r.stdout, "\n") {
			_, usage, ok := strings.Cut(line, "] USAGE ")
			if !ok {
				continue
			}
			n++
			f := strings.SplitN(usage, " ", 6)
			run, host, gpu, tfconfig := f[0], f[1], strings.TrimPrefix(f[2], "gpus="), f[5]
			u := use{run: run, start: atoi64(f[3]), end: atoi64(f[4])}
			var tc struct {
				Cluster map[string][]string
				Task    struct {
					Type  string
					Index int
				}
			}
			if err := json.Unmarshal([]byte(tfconfig), &tc); err != nil {
				t.Fatalf("run %d: TF_CONFIG %q: %v", i, tfconfig, err)
			}
			for _, key := range []string{"gpu " + gpu + " of " + filepath.Base(filepath.Dir(host)), "address " + tc.Cluster[tc.Task.Type][tc.Task.Index]} {
				for _, o := range uses[key] {
					if u.start < o.end && o.start < u.end {
						t.Errorf("%s held by %s and %s at the same time", key, o.run, u.run)
					}
				}
				uses[key] = append(uses[key], u)
			}
			sp, ok := spans[run]
			if !ok || u.start < sp.start {
				sp.start = u.start
			}
			sp.end = max(sp.end, u.end)
			spans[run] = sp
		}
		if n != 4 {
			t.Errorf("run %d: %d tasks reported their usage, want 4", i, n)
		}
	}
	overlapped := false
	for a, x := range spans {
		for b, y := range spans {
			overlapped = overlapped || a != b && x.start < y.end && y.start < x.end
		}
	}
	if !overlapped {
		t.Error("no two runs ran at the same time: the checks above proved nothing")
	}
	// Everything released: nothing claimed now.
	if out := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "ps", "--json")...); !strings.Contains(out.stdout, `"runs": []`) {
		t.Errorf("claims left after the runs ended:\n%s", out.stdout)
	}
}

// waitForClaims polls `tfhive ps --json` until n GPUs are claimed.
func waitForClaims(t *testing.T, f *sshtest.Fleet, n int) []view.RunOnHost {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "ps", "--json")...)
		var doc struct{ Runs []view.RunOnHost }
		json.Unmarshal([]byte(r.stdout), &doc)
		got := 0
		for _, run := range doc.Runs {
			got += len(run.GPUs)
		}
		if got >= n {
			return doc.Runs
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d GPUs claimed after 30s, want %d:\n%s%s", got, n, r.stdout, r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestWaitForGPUs(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "w1", GPU: "idle-2gpu.xml", AliveInterval: 1})
	// The holder keeps its GPUs until the test has seen the waiter wait:
	// a holder on a timer may be gone before a loaded machine gets there.
	release := filepath.Join(t.TempDir(), "release")
	first, _ := runArgs(t, f, "--name", "holder", "--workers", "2", "--", "sh", "-c",
		`echo started; while [ ! -e "$0" ]; do sleep 0.1; done`, release)
	holder, herr := startRun(t, f, first...)
	waitForClaims(t, f, 2)
	// While the holder runs its GPUs are claimed (nvidia-smi says idle):
	// status shows it, and a run without --wait is refused at once.
	st := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status")...)
	if n := strings.Count(st.stdout, " claimed "); n != 2 || !strings.Contains(st.stdout, "run holder (") {
		t.Errorf("status should show 2 GPUs claimed by run holder:\n%s", st.stdout)
	}
	args, _ := runArgs(t, f, "--name", "fifth", "--workers", "2", "--", "true")
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 3)
	wantContains(t, "refused run", r.stderr, "not enough free GPUs", "claimed 0 (run holder (root, worker:")

	args, logDir := runArgs(t, f, "--name", "waiter", "--wait", "60s", "--workers", "2", "--", "true")
	waiter := startTfhive(t, f, readStderr, args...)
	waiter.readUntil(func(line string) bool { return strings.HasPrefix(line, "tfhive: waiting ") })
	wantContains(t, "waiter stderr", waiter.read.String(), "tfhive: waiting for 2 GPUs (0 free now): 1st in the queue; ", " left of --wait 1m")
	// Retries a second at most, and a line only when what it says
	// changes: nothing more while the holder holds.
	time.Sleep(3 * time.Second)
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waiter.readAll()
	if n := strings.Count(waiter.read.String(), "tfhive: waiting "); n != 1 {
		t.Errorf("%d waiting lines, want 1:\n%s", n, waiter.read.String())
	}
	wantContains(t, "waiter stderr", waiter.read.String(), "tfhive: waited ")
	if err := waiter.Wait(); err != nil {
		t.Errorf("waiter: %v\n%s", err, waiter.read.String())
	}
	if s := summaryOf(t, logDir); s.Result != "succeeded" {
		t.Errorf("waiter: %+v", s)
	}
	if err := holder.Wait(); err != nil {
		t.Errorf("holder: %v\n%s", err, herr.String())
	}
}

func TestKillStopsOneRunOnly(t *testing.T) {
	f := sshtest.Start(t,
		sshtest.Profile{Name: "k1", GPU: "idle-2gpu.xml", AliveInterval: 1},
		sshtest.Profile{Name: "k2", GPU: "idle-2gpu.xml", AliveInterval: 1, Listen: "127.0.0.3"},
	)
	start := func(name string) (*exec.Cmd, *bytes.Buffer, string) {
		args, logDir := runArgs(t, f, "--name", name, "--workers", "2", "--", "sh", "-c", "echo started; exec sleep 300")
		cmd, errb := startRun(t, f, args...)
		return cmd, errb, logDir
	}
	victim, verr, vlog := start("victim")
	other, _, _ := start("other")
	runs := waitForClaims(t, f, 4)
	if len(runs) < 2 {
		t.Fatalf("ps: %+v", runs)
	}
	ps := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "ps")...)
	wantContains(t, "ps", ps.stdout, "RUN", "victim", "other", "worker:0")

	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "kill", "--grace", "2s", "victim")...)
	wantCode(t, r, 0)
	wantContains(t, "kill", r.stdout, "stopped run victim on k")
	// Cancelled, not failed: exit 143 (SIGTERM's), every task that the
	// kill ended cancelled, none failed.
	if err := victim.Wait(); victim.ProcessState.ExitCode() != 143 {
		t.Errorf("the killed run: %v, want exit 143:\n%s", err, verr.String())
	}
	wantContains(t, "victim's stderr", verr.String(), "tfhive: error: run victim cancelled: task worker:", "was cancelled (tfhive kill)")
	s := summaryOf(t, vlog)
	if s.Result != "cancelled" || s.ExitCode != 143 {
		t.Errorf("victim summary: %+v", s)
	}
	for _, task := range s.Tasks {
		if task.Outcome != "cancelled" && task.Outcome != "stopped" || s.Tasks[0].Outcome != "cancelled" {
			t.Errorf("victim's %s: %s, want cancelled (or stopped)", task.ID, task.Outcome)
		}
	}
	// The other run is untouched and still holds its claims.
	if other.ProcessState != nil {
		t.Fatal("the other run ended")
	}
	after := waitForClaims(t, f, 2)
	for _, run := range after {
		if run.RunID != "other" {
			t.Errorf("run %s still holds claims after kill", run.RunID)
		}
	}
	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "kill", "nosuchrun")...)
	wantCode(t, r, 1)
	wantContains(t, "kill nosuchrun", r.stderr, "no run nosuchrun holds GPUs or ports")
	other.Process.Signal(os.Interrupt)
	other.Wait()
	noLeftovers(t, f, 10*time.Second)
}

func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// TestKilledSupervisorReleasesClaims: kill -9 of a task's remote
// supervisor frees its GPU and port at once (its holders end with it), its
// task is stopped, the run fails, and nothing is left on the host.
func TestKilledSupervisorReleasesClaims(t *testing.T) {
	f := sshtest.Start(t, sshtest.Profile{Name: "s1", GPU: "idle-2gpu.xml", AliveInterval: 1})
	args, _ := runArgs(t, f, "--name", "sup", "--workers", "1", "--", "sh", "-c", "echo started; exec sleep 300")
	cmd, errb := startRun(t, f, args...)
	waitForClaims(t, f, 1)
	hbBefore, _ := filepath.Glob("/tmp/tfhive-hb.*")
	// The supervisor is the labelled bash whose parent is its last claim
	// holder (a flock); its subshells' parent is the supervisor.
	var sup int
	for _, p := range f.Host("s1").Leftovers() {
		fields := strings.Fields(p)
		pid := int(atoi64(fields[0]))
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		after := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(after) < 2 || !strings.Contains(p, "tfhive-sup") {
			continue
		}
		parent, _ := os.ReadFile("/proc/" + after[1] + "/comm")
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) == "bash" && strings.TrimSpace(string(parent)) == "flock" {
			sup = pid
		}
	}
	if sup == 0 {
		t.Fatalf("no supervisor found among %v", f.Host("s1").Leftovers())
	}
	if err := syscall.Kill(sup, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "ps", "--json")...)
		if strings.Contains(r.stdout, `"runs": []`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("claims still held 10s after the supervisor was killed:\n%s", r.stdout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cmd.Wait(); err == nil {
		t.Errorf("the run should fail when its supervisor is killed:\n%s", errb.String())
	}
	noLeftovers(t, f, 15*time.Second)
	if hb, _ := filepath.Glob("/tmp/tfhive-hb.*"); len(hb) > len(hbBefore) {
		t.Errorf("files left in /tmp: %v", hb)
	}
}

// The lock files a run makes in the claims directory are readable by all
// (others' runs open them to lock them too), whatever the user's umask,
// and the task keeps that umask.
func TestLockFilesReadableWhateverTheUmask(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "u1", GPU: "idle-2gpu.xml"})
	h := f.Host("u1")
	if err := os.WriteFile(filepath.Join(h.Home(), ".bashrc"), []byte("umask 077\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args, logDir := runArgs(t, f, "--workers", "1", "--gpus-per-worker", "1", "--sample", "0", "--", "sh", "-c", `echo "task umask $(umask)"`)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	wantContains(t, "the task's log", readFile(t, summaryOf(t, logDir).Tasks[0].Log), "task umask 0077\n")
	locks, _ := filepath.Glob(filepath.Join(h.ClaimsDir(), "tfhive-claim.gpu-*.lock"))
	if len(locks) == 0 {
		t.Fatalf("no GPU lock file in %s", h.ClaimsDir())
	}
	for _, l := range locks {
		if fi, err := os.Stat(l); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: %v, %v: want mode 0644 under umask 077", l, fi.Mode(), err)
		}
	}
}
