package e2e

import (
	"fmt"
	"os"
	"path/filepath"
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
	c := slurmtest.Start(t, 2, 4, 2)
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
// and report, Ctrl-C cancelling the job.
func TestSlurmRun(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	_, f := slurmLogin(t)
	ports := freePorts(t)
	args := func(name string, rest ...string) []string {
		return append(fleetArgs(f, "run", "--on", "slurm", "--login", "login", "--name", name, "--port-range", ports, "--grace", "2s",
			"--gpus-per-worker", "0"), rest...)
	}

	t.Run("ps and 2 workers train", func(t *testing.T) {
		r := tfhive(t, f.Env(), f.Dir, args("sr-ps", "--ps", "1", "--workers", "2", "--", trainerBin)...)
		wantCode(t, r, 0)
		wantContains(t, "stdout", r.stdout,
			"[ps:0 node1] ps 0 listening on node1:"+strings.Split(ports, "-")[0]+"\n",
			"[worker:0 node1] tfhive: exited 0\n",
			"[worker:1 node2] tfhive: exited 0\n",
			"tfhive: run sr-ps succeeded\n",
			"run sr-ps succeeded: the job completed (sacct: COMPLETED 0:0) (exit 0)\n")
		wantContains(t, "stderr", r.stderr, "tfhive: run sr-ps is Slurm job ")
		wantServerStopped(t, r.stdout, "ps:0", "node1")
		dir := filepath.Join(f.Dir, "tfhive-runs", "sr-ps")
		sum := readJSON[record.Summary](t, dir, "summary.json")
		if sum.Slurm == nil || sum.Slurm.JobID == "" || sum.Slurm.State != "COMPLETED" || sum.Slurm.Login != "login" {
			t.Fatalf("summary's slurm job: %+v", sum.Slurm)
		}
		if len(sum.Tasks) != 3 || sum.Tasks[1].ID != "worker:0" || sum.Tasks[1].Host != "node1" || sum.Tasks[2].Host != "node2" {
			t.Errorf("summary's tasks: %+v", sum.Tasks)
		}
		log, _ := os.ReadFile(filepath.Join(dir, "worker-1.log"))
		wantContains(t, "worker-1.log", string(log), "worker 1 reached loss ", "tfhive: exited 0\n")
		// runs lists it; report draws it.
		r = tfhive(t, f.Env(), f.Dir, "runs")
		wantCode(t, r, 0)
		wantContains(t, "runs", r.stdout, "sr-ps")
		if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
			t.Errorf("no report: %v", err)
		}
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
		if !run.readUntil(func(l string) bool { return l == "[worker:0 node1] up" }) {
			t.Fatalf("the task never said it was up:\n%s\n%s", run.read.String(), run.other.String())
		}
		start := time.Now()
		run.Process.Signal(syscall.SIGINT)
		run.readAll()
		err := run.Wait()
		if code := run.ProcessState.ExitCode(); code != 130 {
			t.Fatalf("exit %d (%v), want 130:\n%s\n%s", code, err, run.read.String(), run.other.String())
		}
		wantContains(t, "stdout", run.read.String(), "[worker:0 node1] tfhive: stopped (exit 143)\n", "run sr-int interrupted: ")
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
		wantContains(t, "attach", a.stdout, "[worker:0 node1] tick 3\n", "run sr-det failed: the job failed (sacct: FAILED 3:0) (exit 1)\n")
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
		if !a2.readUntil(func(l string) bool { return l == "[worker:0 node1] up" }) {
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

	t.Run("status and queue show the partitions' GPUs and the pending jobs", func(t *testing.T) {
		on := func(cmd string, rest ...string) result {
			return tfhive(t, f.Env(), f.Dir, fleetArgs(f, append([]string{cmd, "--on", "slurm", "--login", "login"}, rest...)...)...)
		}
		r := on("status")
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
		if !run.readUntil(func(l string) bool { return l == "[worker:0 node1] up" }) {
			t.Fatalf("the task never said it was up:\n%s\n%s", run.read.String(), run.other.String())
		}
		run.Process.Kill()
		run.Wait()
		r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "attach", "sr-adopt")...)
		wantCode(t, r, 9)
		wantContains(t, "attach -H", r.stdout, "[worker:0 node1] up\n", "[worker:0 node1] done\n", "run sr-adopt failed: the job failed (sacct: FAILED 9:0) (exit 9)\n")
		wantContains(t, "attach -H's stderr", r.stderr, "tfhive: following Slurm job ")
		w := tfhive(t, f.Env(), f.Dir, "wait", "sr-adopt")
		wantCode(t, w, 9)
	})

	// A task that says its shell's last words itself and is then killed
	// (as Slurm kills one past its time or memory) was stopped, whatever
	// it printed: its end is the file its shell leaves. A task's last line
	// without a newline is shown as its line.
	t.Run("a task's own last words are not its end", func(t *testing.T) {
		r := tfhive(t, f.Env(), f.Dir, args("sr-words", "--workers", "1", "--",
			"sh", "-c", `echo "tfhive: exited 0"; kill -KILL "$(cut -d' ' -f4 /proc/$PPID/stat)"`)...)
		if r.code == 0 {
			t.Fatalf("exit 0, want the killed task's failure:\n%s\n%s", r.stdout, r.stderr)
		}
		wantContains(t, "stdout", r.stdout, "[worker:0 node1] tfhive: exited 0\n", "run sr-words failed: the job failed (sacct: FAILED ")
		sum := readJSON[record.Summary](t, filepath.Join(f.Dir, "tfhive-runs", "sr-words"), "summary.json")
		if len(sum.Tasks) != 1 || sum.Tasks[0].Outcome != record.OutcomeStopped || sum.Tasks[0].ExitCode != nil {
			t.Errorf("the task: %+v, want stopped", sum.Tasks)
		}

		r = tfhive(t, f.Env(), f.Dir, args("sr-nonl", "--workers", "1", "--", "printf", "no newline")...)
		wantCode(t, r, 0)
		wantContains(t, "stdout", r.stdout, "[worker:0 node1] no newline", "run sr-nonl succeeded: the job completed (sacct: COMPLETED 0:0) (exit 0)\n")
		sum = readJSON[record.Summary](t, filepath.Join(f.Dir, "tfhive-runs", "sr-nonl"), "summary.json")
		if len(sum.Tasks) != 1 || sum.Tasks[0].Outcome != record.OutcomeExited || sum.Tasks[0].ExitCode == nil || *sum.Tasks[0].ExitCode != 0 {
			t.Errorf("the task: %+v, want exited 0", sum.Tasks)
		}
	})

	// The hosts file's notify: is a run's on Slurm too, as on hosts: the
	// end is told once, from the job's record; --notify under --detach
	// is the keeper's.
	t.Run("the hosts file's notify: and --notify tell the job's end", func(t *testing.T) {
		hook := newWebhook(t, 0)
		yaml, err := os.ReadFile(f.HostsYAML)
		if err != nil {
			t.Fatal(err)
		}
		hostsFile := filepath.Join(t.TempDir(), "hosts.yaml")
		if err := os.WriteFile(hostsFile, append([]byte("notify: "+hook.URL+"/hooks/s3cret\n"), yaml...), 0o600); err != nil {
			t.Fatal(err)
		}
		run := func(rest ...string) []string {
			return append([]string{"run", "--hosts", hostsFile, "--ssh-config", f.SSHConfig, "--on", "slurm", "--login", "login", "--port-range", ports,
				"--grace", "2s", "--gpus-per-worker", "0", "--workers", "1"}, rest...)
		}
		r := tfhive(t, f.Env(), f.Dir, run("--name", "sr-notify", "--", "sh", "-c", "exit 9")...)
		wantCode(t, r, 9)
		got := hook.got()
		if len(got) != 1 || got[0]["event"] != "failed" || got[0]["run"] != "sr-notify" || got[0]["exit_code"] != float64(9) || got[0]["end"] != true {
			t.Errorf("the hook got %v, want sr-notify's end (failed, 9)", got)
		}

		out := filepath.Join(t.TempDir(), "told")
		r = tfhive(t, f.Env(), f.Dir, run("--name", "sr-notify-det", "--detach", "--notify", `echo "$TFHIVE_EVENT $TFHIVE_RUN $TFHIVE_EXIT_CODE" >>`+out, "--", "true")...)
		wantCode(t, r, 0)
		w := tfhive(t, f.Env(), f.Dir, "wait", "sr-notify-det")
		wantCode(t, w, 0)
		for deadline := time.Now().Add(10 * time.Second); ; {
			b, _ := os.ReadFile(out)
			if string(b) == "succeeded sr-notify-det 0\n" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the command was told %q, want sr-notify-det's end", b)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if n := len(hook.got()); n != 1 {
			t.Errorf("the hosts file's hook was told %d ends, want sr-notify's alone (--notify replaces it)", n)
		}
	})
}
