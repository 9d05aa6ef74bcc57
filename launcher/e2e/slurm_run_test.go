package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/emit/slurmtest"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/sshtest"
)

// slurmLogin is a one-machine Slurm (launcher/emit/slurmtest) and a test
// sshd host that is its login node: its users' login shell points the
// Slurm commands at the cluster (SLURM_CONF), as /etc/slurm does on a real
// one, and its home is where the compute nodes write (a shared
// filesystem: the nodes are this machine).
func slurmLogin(t *testing.T) (*slurmtest.Cluster, *sshtest.Fleet) {
	t.Helper()
	// 8 CPUs a node: room for the jobs TestSlurmRun keeps beside its
	// subtests' (the TensorFlow job, a detached sweep's trial).
	c := slurmtest.Start(t, 2, 8, 2)
	// Behind a separate host's private /tmp: munge's socket, slurm.conf.
	sshtest.KeepVisible(c.Dir)
	f := sshtest.Start(t, sshtest.Profile{Name: "login"})
	rc := "export SLURM_CONF=" + c.Conf + "\n"
	if err := os.WriteFile(filepath.Join(f.Host("login").Home(), ".bashrc"), []byte(rc), 0o644); err != nil {
		t.Fatal(err)
	}
	return c, f
}

// TestSlurmRun: `tfhive run --on slurm` submits plan --emit slurm's job
// on the login node and behaves as a run: the tasks' prefixed output
// live, the summary and exit code from sacct, the job recorded for runs
// and report, Ctrl-C cancelling the job; real TensorFlow's TF_CONFIG in
// each task; status, queue and sweep (one job array, detached too) --on
// slurm. Two jobs go on beside the subtests, which mostly wait on Slurm:
// the TensorFlow one and a detached sweep's, each started first and
// checked last.
func TestSlurmRun(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	_, f := slurmLogin(t)
	ports := freePorts(t)
	args := func(name string, rest ...string) []string {
		return append(fleetArgs(f, "run", "--on", "slurm", "--login", "login", "--name", name, "--port-range", ports, "--grace", "2s",
			"--gpus-per-worker", "0"), rest...)
	}

	// Real TensorFlow, 1 ps and 2 workers: its imports (9 s a task here)
	// beside the other subtests' jobs, on the nodes' spare CPUs.
	venv, noTF := findTFVenv()
	var tf *later
	if noTF == "" {
		tf = startLater(t, f.Env(), f.Dir, args("sr-tf", tfJob(f, venv)...)...)
	}

	// A detached sweep's first trial ends, its second runs until tfhive
	// kill, beside the subtests below; the third waits its turn
	// (--max-parallel 1).
	t.Cleanup(func() { tfhive(t, f.Env(), f.Dir, fleetArgs(f, "kill", "sr-swd", "--grace", "1s")...) })
	t.Run("a detached sweep is submitted", func(t *testing.T) {
		r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "sweep", "--on", "slurm", "--login", "login", "--name", "sr-swd", "--port-range", ports, "--grace", "2s",
			"--param", "x=1,2,3", "--max-parallel", "1", "--detach", "--workers", "1", "--gpus-per-worker", "0", "--",
			"sh", "-c", `echo "x=$1"; [ "$1" = 1 ] || exec sleep 600`, "sh", "{x}")...)
		wantCode(t, r, 0)
		if strings.TrimSpace(r.stdout) != "sr-swd" {
			t.Fatalf("stdout %q, want the sweep's name\n%s", r.stdout, r.stderr)
		}
		wantContains(t, "stderr", r.stderr, "tfhive: sweep sr-swd started, detached")
	})

	t.Run("a failing worker's code", func(t *testing.T) {
		r := tfhive(t, f.Env(), f.Dir, args("sr-fail", "--ps", "1", "--workers", "2", "--",
			"sh", "-c", `if [ "$1" = 1 ]; then exec "$0" --fail-at-step 3 --fail-code 9 --sleep 50ms; fi; exec "$0" --target 0 --steps 1000000 --sleep 50ms`,
			trainerBin, "{task_index}")...)
		wantCode(t, r, 9)
		wantContains(t, "stdout", r.stdout, "[worker:1 node2] tfhive: exited 9\n", "run sr-fail failed: the job failed (sacct: FAILED 9:0) (exit 9)\n")
		sum := readJSON[record.Summary](t, filepath.Join(f.Dir, "tfhive-runs", "sr-fail"), "summary.json")
		if sum.Tasks[0].ID != "worker:1" || sum.Tasks[0].ExitCode == nil || *sum.Tasks[0].ExitCode != 9 {
			t.Errorf("the deciding task: %+v", sum.Tasks[0])
		}
	})

	t.Run("Ctrl-C cancels the job", func(t *testing.T) {
		run := startTfhive(t, f, readStdout, args("sr-int", "--workers", "1", "--", "sh", "-c", `echo up; exec sleep 600`)...)
		var node string
		if !run.readUntil(func(l string) bool { node = saidOn(l, "worker:0", "up"); return node != "" }) {
			t.Fatalf("the task never said it was up:\n%s\n%s", run.read.String(), run.other.String())
		}
		start := time.Now()
		run.Process.Signal(syscall.SIGINT)
		run.readAll()
		err := run.Wait()
		if code := run.ProcessState.ExitCode(); code != 130 {
			t.Fatalf("exit %d (%v), want 130:\n%s\n%s", code, err, run.read.String(), run.other.String())
		}
		wantContains(t, "stdout", run.read.String(), "[worker:0 "+node+"] tfhive: stopped (exit 143)\n", "run sr-int interrupted: ")
		sum := readJSON[record.Summary](t, filepath.Join(f.Dir, "tfhive-runs", "sr-int"), "summary.json")
		if sum.Result != record.ResultInterrupted || sum.Slurm == nil || sum.Slurm.State == "" {
			t.Errorf("summary: %s, job %+v", sum.Result, sum.Slurm)
		}
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("the stop took %s", d)
		}
	})

	t.Run("detached: followed from a second tfhive, waited for, killed", func(t *testing.T) {
		r := tfhive(t, f.Env(), f.Dir, args("sr-det", "--detach", "--workers", "1", "--",
			"sh", "-c", `for i in 1 2 3; do echo "tick $i"; sleep 0.2; done; exit 3`)...)
		wantCode(t, r, 0)
		if strings.TrimSpace(r.stdout) != "sr-det" {
			t.Fatalf("stdout %q, want the run id\n%s", r.stdout, r.stderr)
		}
		// attach follows the console from its start to the end, with the
		// job's code (3 is tfhive's own: 1).
		a := tfhive(t, f.Env(), f.Dir, "attach", "sr-det")
		wantCode(t, a, 1)
		wantContains(t, "attach", a.stdout, "[worker:0 "+nodeOf(t, a.stdout, "worker:0")+"] tick 3\n", "run sr-det failed: the job failed (sacct: FAILED 3:0) (exit 1)\n")
		w := tfhive(t, f.Env(), f.Dir, "wait", "sr-det")
		wantCode(t, w, 1)
		l := tfhive(t, f.Env(), f.Dir, "logs", "sr-det", "--task", "worker:0")
		wantCode(t, l, 0)
		wantContains(t, "logs --task", l.stdout, "tick 1\ntick 2\ntick 3\ntfhive: exited 3\n")

		// No --name: the keeper's job is the run the first tfhive named.
		r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "run", "--on", "slurm", "--login", "login", "--port-range", ports, "--grace", "2s",
			"--gpus-per-worker", "0", "--detach", "--workers", "1", "--", "sh", "-c", `echo up; exec sleep 600`)...)
		wantCode(t, r, 0)
		id := strings.TrimSpace(r.stdout)
		a2 := startTfhive(t, f, readStdout, "attach", id)
		if !a2.readUntil(func(l string) bool { return saidOn(l, "worker:0", "up") != "" }) {
			t.Fatalf("attach never showed the task up:\n%s\n%s", a2.read.String(), a2.other.String())
		}
		k := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "kill", id, "--grace", "2s")...)
		wantCode(t, k, 0)
		wantContains(t, "kill", k.stdout, "tfhive: cancelled Slurm job ")
		a2.readAll()
		a2.Wait()
		if code := a2.ProcessState.ExitCode(); code != 143 {
			t.Errorf("attach exited %d, want 143 (cancelled):\n%s", code, a2.read.String())
		}
		script, _ := os.ReadFile(filepath.Join(f.Host("login").Home(), "tfhive-slurm", id, "job.sh"))
		wantContains(t, "the job's script", string(script), "\ntfhive_run_id="+id+"\n")
		sum := readJSON[record.Summary](t, filepath.Join(f.Dir, "tfhive-runs", id), "summary.json")
		if sum.Result != record.ResultCancelled {
			t.Errorf("result %s, want cancelled: %s", sum.Result, sum.Reason)
		}
	})

	t.Run("status (--watch too) and queue show the partitions' GPUs and the pending jobs", func(t *testing.T) {
		on := func(cmd string, rest ...string) result {
			return tfhive(t, f.Env(), f.Dir, fleetArgs(f, append([]string{cmd, "--on", "slurm", "--login", "login"}, rest...)...)...)
		}
		// --watch redraws it (into a pipe: one table after the other)
		// until Ctrl-C, which ends it with 0; not faster than a second.
		watch := startTfhive(t, f, readStdout, fleetArgs(f, "status", "--on", "slurm", "--login", "login", "--watch", "1s")...)
		frames := 0
		watch.readUntil(func(l string) bool {
			if strings.HasSuffix(l, " GPUs free on 2 nodes (sinfo on login)") {
				frames++
			}
			return frames == 2
		})
		watch.Process.Signal(syscall.SIGINT)
		watch.readAll()
		if err := watch.Wait(); frames != 2 || err != nil {
			t.Errorf("status --watch: %d tables (want 2), %v:\n%s\n%s", frames, err, watch.read.String(), watch.other.String())
		}
		r := on("status", "--watch", "100ms")
		wantCode(t, r, 2)
		wantContains(t, "status --watch 100ms", r.stderr, "tfhive: error: --watch 100ms: on Slurm 1s at least")
		r = on("status")
		wantCode(t, r, 0)
		wantContains(t, "status", r.stdout, "4 of 4 GPUs free on 2 nodes (sinfo on login)\n")
		if rows := rowsOf(r.stdout, "debug*"); len(rows) != 2 || rows[0][1] != "node1" || rows[0][3] != "2" || rows[0][5] != "2" {
			t.Errorf("status rows: %q\n%s", rows, r.stdout)
		}
		// One job takes every GPU; the next waits for it.
		for _, id := range []string{"sr-hold", "sr-wait"} {
			r := tfhive(t, f.Env(), f.Dir, args(id, "--detach", "--workers", "2", "--gpus-per-worker", "2", "--", "sleep", "600")...)
			wantCode(t, r, 0)
			t.Cleanup(func() { tfhive(t, f.Env(), f.Dir, fleetArgs(f, "kill", id, "--grace", "1s")...) })
		}
		for deadline := time.Now().Add(30 * time.Second); ; {
			r = on("status")
			if strings.Contains(r.stdout, "0 of 4 GPUs free") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sr-hold never took the GPUs:\n%s", r.stdout)
			}
		}
		if rows := rowsOf(r.stdout, "debug*"); len(rows) != 2 || rows[0][4] != "2" || rows[0][5] != "0" {
			t.Errorf("status rows: %q\n%s", rows, r.stdout)
		}
		r = on("queue")
		wantCode(t, r, 0)
		wantContains(t, "queue", r.stdout, " sr-wait ")
		if strings.Contains(r.stdout, "sr-hold") {
			t.Errorf("the running job is listed as pending:\n%s", r.stdout)
		}
		r = on("status", "--json")
		wantCode(t, r, 0)
		wantContains(t, "status --json", r.stdout, `"GPUsUsed":2`)
		r = on("queue", "--partition", "nosuch")
		wantCode(t, r, 0)
		wantContains(t, "queue", r.stdout, "no job of yours is pending")
	})

	t.Run("a sweep is one job array, its table filled from it", func(t *testing.T) {
		r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "sweep", "--on", "slurm", "--login", "login", "--name", "sr-sw", "--port-range", ports,
			"--param", "lr=0.1,0.01", "--param", "opt=a,b", "--max-parallel", "2", "--workers", "1", "--gpus-per-worker", "0", "--",
			"sh", "-c", `echo "lr=$1 opt=$2 trial=$TFHIVE_TRIAL"; [ "$2" = a ] || exit 9`, "sh", "{lr}", "{opt}")...)
		wantCode(t, r, 1)
		// Slurm picks each array task's node: either may run any trial
		// (CI saw sr-sw-004 on node2).
		for _, line := range []string{"[sr-sw-001] [worker:0 node%d] lr=0.1 opt=a trial=sr-sw-001\n",
			"[sr-sw-004] [worker:0 node%d] lr=0.01 opt=b trial=sr-sw-004\n"} {
			if !strings.Contains(r.stdout, fmt.Sprintf(line, 1)) && !strings.Contains(r.stdout, fmt.Sprintf(line, 2)) {
				t.Errorf("stdout does not contain %q on node1 or node2:\n%s", line, r.stdout)
			}
		}
		wantContains(t, "stderr", r.stderr, "tfhive: sweep sr-sw is Slurm job array ", "tfhive: trial sr-sw-002 failed in ", ", exit 9: ")
		for k, want := range []string{"succeeded", "failed", "succeeded", "failed"} {
			id := "sr-sw-00" + itoa(k+1)
			sum := readJSON[record.Summary](t, filepath.Join(f.Dir, "tfhive-runs", id), "summary.json")
			if sum.Result != want || sum.Slurm == nil || !strings.HasSuffix(sum.Slurm.JobID, "_"+itoa(k)) {
				t.Errorf("%s: %s (%s), job %+v; want %s", id, sum.Result, sum.Reason, sum.Slurm, want)
			}
		}
		tab := tfhive(t, f.Env(), f.Dir, "runs", "--sweep", "sr-sw", "--csv")
		wantCode(t, tab, 0)
		if n := strings.Count(tab.stdout, ",succeeded,"); n != 2 {
			t.Errorf("the table has %d trials succeeded, want 2:\n%s", n, tab.stdout)
		}
	})

	t.Run("a run whose tfhive died is followed again by attach -H", func(t *testing.T) {
		run := startTfhive(t, f, readStdout, args("sr-adopt", "--workers", "1", "--", "sh", "-c", `echo up; sleep 1; echo done; exit 9`)...)
		var node string
		if !run.readUntil(func(l string) bool { node = saidOn(l, "worker:0", "up"); return node != "" }) {
			t.Fatalf("the task never said it was up:\n%s\n%s", run.read.String(), run.other.String())
		}
		run.Process.Kill()
		run.Wait()
		r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "attach", "sr-adopt")...)
		wantCode(t, r, 9)
		wantContains(t, "attach -H", r.stdout, "[worker:0 "+node+"] up\n", "[worker:0 "+node+"] done\n", "run sr-adopt failed: the job failed (sacct: FAILED 9:0) (exit 9)\n")
		wantContains(t, "attach -H's stderr", r.stderr, "tfhive: following Slurm job ")
		w := tfhive(t, f.Env(), f.Dir, "wait", "sr-adopt")
		wantCode(t, w, 9)
	})

	// The detached sweep: attach follows its console from the start (the
	// keeper's lines and the trials'), tfhive kill cancels its array: the
	// trial that ended before keeps its success, the running one and the
	// pending one are cancelled; attach and wait end with the sweep's code.
	t.Run("a detached sweep: followed by attach, killed, waited for", func(t *testing.T) {
		a := startTfhive(t, f, readStdout, "attach", "sr-swd")
		if !a.readUntil(func(l string) bool {
			return strings.HasPrefix(l, "[sr-swd-002] [worker:0 node") && strings.HasSuffix(l, "] x=2")
		}) {
			t.Fatalf("attach never showed trial 2 running:\n%s\n%s", a.read.String(), a.other.String())
		}
		k := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "kill", "sr-swd", "--grace", "2s")...)
		wantCode(t, k, 0)
		wantContains(t, "kill", k.stdout, "tfhive: cancelled Slurm job ", " of sweep sr-swd on login\n")
		a.readAll()
		a.Wait()
		if code := a.ProcessState.ExitCode(); code != 1 {
			t.Errorf("attach exited %d, want 1 (2 of 3 trials did not succeed):\n%s\n%s", code, a.read.String(), a.other.String())
		}
		wantContains(t, "attach", a.read.String(), "tfhive: sweep sr-swd is Slurm job array ", "[sr-swd-001] [worker:0 node",
			"tfhive: trial sr-swd-001 succeeded in ", "tfhive: trial sr-swd-002 cancelled in ", "tfhive: trial sr-swd-003 cancelled in ")
		for k, want := range []string{record.ResultSucceeded, record.ResultCancelled, record.ResultCancelled} {
			id := "sr-swd-00" + itoa(k+1)
			sum := readJSON[record.Summary](t, filepath.Join(f.Dir, "tfhive-runs", id), "summary.json")
			if sum.Result != want || sum.Slurm == nil || !strings.HasSuffix(sum.Slurm.JobID, "_"+itoa(k)) {
				t.Errorf("%s: %s (%s), job %+v; want %s", id, sum.Result, sum.Reason, sum.Slurm, want)
			}
		}
		w := tfhive(t, f.Env(), f.Dir, "wait", "sr-swd")
		wantCode(t, w, 1)
		k = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "kill", "sr-swd")...)
		wantCode(t, k, 1)
		wantContains(t, "kill after the end", k.stderr, "sweep sr-swd has ended: Slurm job array ")
		tab := tfhive(t, f.Env(), f.Dir, "runs", "--sweep", "sr-swd", "--csv")
		wantCode(t, tab, 0)
		if n := strings.Count(tab.stdout, ",succeeded,"); n != 1 {
			t.Errorf("the table has %d trials succeeded, want 1:\n%s", n, tab.stdout)
		}
	})

	// TensorFlow itself (TFConfigClusterResolver, in tf_env.py) resolves,
	// in each task, the TF_CONFIG the batch script gave it on its node:
	// the cluster of the nodes' names and the layout's ports, its own
	// type, index and address, no GPU; the venv from --setup, the examples
	// from --workdir. The ps serves until the workers are done, and is
	// stopped then, as a real one (it joins its server forever).
	t.Run("ps and 2 workers run TensorFlow", func(t *testing.T) {
		if tf == nil {
			tfVenv(t) // fails in CI, skips elsewhere
		}
		r := tf.wait(t, 3*time.Minute)
		t.Logf("the TensorFlow job took %s, beside the others", r.elapsed.Round(time.Millisecond))
		wantCode(t, r, 0)
		lo, _ := strconv.Atoi(strings.Split(ports, "-")[0])
		addr := map[string]string{"ps:0": "node1:" + itoa(lo), "worker:0": "node1:" + itoa(lo+1), "worker:1": "node2:" + itoa(lo)}
		cluster := fmt.Sprintf(`{"ps": [%q], "worker": [%q, %q]}`, addr["ps:0"], addr["worker:0"], addr["worker:1"])
		wantContains(t, "stdout", r.stdout,
			"[worker:0 node1] tfhive: exited 0\n", "[worker:1 node2] tfhive: exited 0\n", "[ps:0 node1] tfhive: stopped (exit 143)\n",
			"run sr-tf succeeded: the job completed (sacct: COMPLETED 0:0) (exit 0)\n")
		dir := filepath.Join(f.Dir, "tfhive-runs", "sr-tf")
		for _, id := range []string{"ps:0", "worker:0", "worker:1"} {
			typ, index, _ := strings.Cut(id, ":")
			wantContains(t, id+"'s log", taskLog(t, dir, id), "tf_env: version=2.", "tf_env: source=TF_CONFIG\n",
				"tf_env: task_type="+typ+" task_id="+index+"\n", "tf_env: cluster="+cluster+"\n", "tf_env: master="+addr[id]+"\n",
				"tf_env: visible_devices=\n", "tf_env: devices=CPU\n", "tf_env: tfhive_task="+id+" run_id=sr-tf\n")
		}
		sum := readJSON[record.Summary](t, dir, "summary.json")
		if sum.Result != record.ResultSucceeded || sum.Slurm == nil || sum.Slurm.JobID == "" || sum.Slurm.State != "COMPLETED" || sum.Slurm.Login != "login" {
			t.Fatalf("summary: %s, slurm job %+v", sum.Result, sum.Slurm)
		}
		hosts := map[string]string{}
		for _, task := range sum.Tasks {
			hosts[task.ID] = task.Host
		}
		if len(sum.Tasks) != 3 || hosts["ps:0"] != "node1" || hosts["worker:0"] != "node1" || hosts["worker:1"] != "node2" {
			t.Errorf("summary's tasks: %+v", sum.Tasks)
		}
		// runs lists it; report draws it.
		r = tfhive(t, f.Env(), f.Dir, "runs")
		wantCode(t, r, 0)
		wantContains(t, "runs", r.stdout, "sr-tf")
		if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
			t.Errorf("no report: %v", err)
		}
	})
}

// saidOn is the node where task id said text when line is its line
// ("[worker:0 node2] up"), "" when it is not: Slurm picks the node of a
// job of one task, either of the bed's.
func saidOn(line, id, text string) string {
	m := oneTaskLine.FindStringSubmatch(line)
	if m == nil || m[1] != id || m[3] != text {
		return ""
	}
	return m[2]
}

var oneTaskLine = regexp.MustCompile(`^\[([a-z]+:[0-9]+) (node[12])\] (.*)$`)

// nodeOf is the node of task id's first line in out (a test then expects
// every line of the task from there).
func nodeOf(t *testing.T, out, id string) string {
	t.Helper()
	for line := range strings.Lines(out) {
		if m := oneTaskLine.FindStringSubmatch(strings.TrimSuffix(line, "\n")); m != nil && m[1] == id {
			return m[2]
		}
	}
	t.Fatalf("no line of %s on node1 or node2:\n%s", id, out)
	return ""
}

// tfJob is the flags and command of 1 ps and 2 workers running
// tf_env.py from the examples with the venv (the nodes are this machine:
// the paths hold there). The ps then serves until it is stopped, and the
// workers end once it has said its lines (a marker in the shared home):
// a ps still importing when they end would be stopped before it spoke.
func tfJob(f *sshtest.Fleet, venv string) []string {
	marker := filepath.Join(f.Host("login").Home(), "sr-tf.ps-spoke")
	return []string{"--ps", "1", "--workers", "2", "--workdir", examplesDir(), "--setup", "source " + filepath.Join(venv, "bin", "activate"), "--",
		"sh", "-c", `python3 tf_env.py || exit
if [ "$TFHIVE_TASK" = ps:0 ]; then : >"$1"; exec sleep 600; fi
i=0
until [ -e "$1" ]; do
	i=$((i + 1))
	[ "$i" -le 1200 ] || { echo "ps:0 never spoke"; exit 8; }
	sleep 0.1
done`, "sh", marker}
}

// later is tfhive started now and waited for later, its test going
// on meanwhile; the test's end stops it (SIGTERM) if it still runs.
type later struct {
	cmd      *exec.Cmd
	out, err bytes.Buffer
	done     chan struct{}
	start    time.Time
}

func startLater(t *testing.T, env []string, dir string, args ...string) *later {
	t.Helper()
	b := &later{cmd: exec.Command(tfhiveBin, args...), done: make(chan struct{}), start: time.Now()}
	b.cmd.Env, b.cmd.Dir, b.cmd.Stdout, b.cmd.Stderr = env, dir, &b.out, &b.err
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { b.cmd.Wait(); close(b.done) }()
	t.Cleanup(func() {
		b.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-b.done:
		case <-time.After(30 * time.Second):
			b.cmd.Process.Kill()
			<-b.done
		}
	})
	return b
}

// wait is what it printed and its exit code, once it has ended (within,
// else the test fails).
func (b *later) wait(t *testing.T, within time.Duration) result {
	t.Helper()
	select {
	case <-b.done:
	case <-time.After(within - time.Since(b.start)):
		b.cmd.Process.Signal(syscall.SIGTERM)
		<-b.done
		t.Fatalf("tfhive %s had not ended after %s:\nstdout:\n%s\nstderr:\n%s", strings.Join(b.cmd.Args[1:], " "), within, b.out.String(), b.err.String())
	}
	r := result{stdout: b.out.String(), stderr: b.err.String(), code: b.cmd.ProcessState.ExitCode(), elapsed: time.Since(b.start)}
	if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "DATA RACE") {
		t.Fatalf("tfhive crashed or raced:\n%s", r.stderr)
	}
	return r
}
