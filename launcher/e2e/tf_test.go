package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
	"github.com/tfhive/tfhive/schedule"
)

// tfVenvEnv names the virtual environment with real TensorFlow that the
// test hosts' setup: activates (.ci/run makes it, pinned).
const tfVenvEnv = "TFHIVE_TEST_TF_VENV"

// tfVenv is that environment: it fails in CI, and skips elsewhere with a
// line saying how to get it, when it holds no TensorFlow.
func tfVenv(t *testing.T) string {
	t.Helper()
	v, why := findTFVenv()
	if why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	return v
}

// findTFVenv is that environment, or why there is none.
func findTFVenv() (venv, why string) {
	v := os.Getenv(tfVenvEnv)
	if v == "" {
		v = "/opt/tfhive-ci/venv"
	}
	found, _ := filepath.Glob(filepath.Join(v, "lib", "python3*", "site-packages", "tensorflow", "__init__.py"))
	if _, err := os.Stat(filepath.Join(v, "bin", "activate")); err != nil || len(found) == 0 {
		return v, fmt.Sprintf("no TensorFlow in %s (%s): bash .ci/run makes it (python3 -m venv %s && %s/bin/pip install tensorflow-cpu==2.21.0 keras==3.15.1)", v, tfVenvEnv, v, v)
	}
	return v, ""
}

// examplesDir is the user-facing TensorFlow examples, which the tests
// send with --sync as a user sends their code.
func examplesDir() string { return filepath.Join(sshtest.RepoRoot(), "testdata", "examples") }

// tfBed is a fleet of CPU hosts whose hosts file reaches TensorFlow as a
// lab's does: its defaults' setup: activates the venv. args gives a
// command's flags for it.
type tfBed struct {
	f     *sshtest.Fleet
	hosts string
}

func newTFBed(t *testing.T, bed sshtest.Bed, names ...string) *tfBed {
	return newTFBedSetup(t, bed, nil, names...)
}

// newTFBedSetup is newTFBed with some hosts' own setup: instead of the
// defaults' (a host whose setup leads to no TensorFlow).
func newTFBedSetup(t *testing.T, bed sshtest.Bed, setup map[string]string, names ...string) *tfBed {
	venv := tfVenv(t)
	var ps []sshtest.Profile
	for _, n := range names {
		ps = append(ps, sshtest.Profile{Name: n, AliveInterval: 1})
	}
	f := sshtest.StartOn(t, bed, ps...)
	yaml := "defaults:\n  setup: source " + filepath.Join(venv, "bin", "activate") + "\nhosts:\n"
	for _, n := range names {
		yaml += "  - address: " + n + "\n"
		if v, ok := setup[n]; ok {
			yaml += "    setup: " + v + "\n"
		}
	}
	hosts := filepath.Join(f.Dir, "tf-hosts.yaml")
	if err := os.WriteFile(hosts, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return &tfBed{f: f, hosts: hosts}
}

func (b *tfBed) args(cmd string, rest ...string) []string {
	return append([]string{cmd, "--hosts", b.hosts, "--ssh-config", b.f.SSHConfig}, rest...)
}

// runTF runs a TensorFlow job from the examples (sent with --sync) with a
// log dir of the test's own; it returns the result and the log dir.
func (b *tfBed) run(t *testing.T, flags ...string) (result, string) {
	t.Helper()
	logDir := filepath.Join(t.TempDir(), "logs")
	args := b.args("run", append([]string{"--log-dir", logDir, "--grace", "5s", "--sync", examplesDir()}, flags...)...)
	return tfhive(t, b.f.Env(), b.f.Dir, args...), logDir
}

// taskLog is a task's log in the run's log dir.
func taskLog(t *testing.T, logDir, id string) string {
	t.Helper()
	return readFile(t, filepath.Join(logDir, strings.ReplaceAll(id, ":", "-")+".log"))
}

// What TensorFlow itself resolves in each task (TFConfigClusterResolver)
// is what tfhive planned: the task's type and index, the cluster, its own
// address, no GPU; the evaluator outside the cluster; the version the
// hosts' setup: gives.
func TestTFEnvMatchesPlan(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own: its tasks listen on no port (testing.md)
	b := newTFBed(t, sshtest.DefaultBed(t), "t1", "t2", "t3")
	r, logDir := b.run(t, "--chief", "--ps", "1", "--workers", "2", "--evaluator", "--gpus-per-worker", "0", "--", "python3", "tf_env.py")
	wantCode(t, r, 0)
	plan := readJSON[schedule.Plan](t, logDir, "plan.json")
	want := map[string][]string{"chief": plan.Cluster.Chief, "ps": plan.Cluster.PS, "worker": plan.Cluster.Worker}
	if len(plan.Tasks) != 5 {
		t.Fatalf("plan: %d tasks", len(plan.Tasks))
	}
	for _, task := range plan.Tasks {
		log := taskLog(t, logDir, task.ID)
		master := "tf_env: master=" + task.Address + "\n"
		if task.Role == "evaluator" {
			master = "tf_env: master=none (evaluator is not in the cluster)\n"
		}
		wantContains(t, task.ID+"'s log", log, "tf_env: version=2.21.0\n", "tf_env: source=TF_CONFIG\n",
			fmt.Sprintf("tf_env: task_type=%s task_id=%d\n", task.Role, task.Index),
			master, "tf_env: rpc_layer=grpc\n",
			"tf_env: visible_devices="+task.Env["CUDA_VISIBLE_DEVICES"]+"\n", "tf_env: devices=CPU\n",
			"tf_env: tfhive_task="+task.ID+" run_id="+plan.RunID+"\n")
		var got map[string][]string
		_, line, _ := strings.Cut(log, "tf_env: cluster=")
		line, _, _ = strings.Cut(line, "\n")
		if err := json.Unmarshal([]byte(line), &got); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: TensorFlow's cluster %s (%v), want the plan's %v", task.ID, line, err, want)
		}
	}
}

// doctor and run --check --import tensorflow report the TensorFlow each
// host's task really imports, after its setup:; a host whose setup leads
// to no TensorFlow is named, and run --check refuses it before claiming
// anything.
func TestTFDoctorAndCheck(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own: its tasks listen on no port (testing.md)
	b := newTFBedSetup(t, sshtest.DefaultBed(t), map[string]string{"t3": "cd ."}, "t1", "t2", "t3")
	r := tfhive(t, b.f.Env(), b.f.Dir, b.args("doctor")...)
	wantCode(t, r, 1)
	rows := map[string][]string{}
	header := strings.Fields(strings.SplitN(r.stdout, "\n", 2)[0])
	col := -1
	for i, h := range header {
		if h == "TENSORFLOW" {
			col = i
		}
	}
	for _, n := range []string{"t1", "t2", "t3"} {
		if rs := rowsOf(r.stdout, n); len(rs) == 1 && col >= 0 && col < len(rs[0]) {
			rows[n] = rs[0]
		}
	}
	if col < 0 || rows["t1"][col] != "2.21.0" || rows["t2"][col] != "2.21.0" || !strings.HasPrefix(rows["t3"][col], "-") {
		t.Errorf("doctor's TENSORFLOW column: want 2.21.0 on t1 and t2, - on t3:\n%s", r.stdout)
	}
	wantContains(t, "doctor's stderr", r.stderr, "t3: tensorflow (not installed), where 2 of 3 hosts have 2.21.0")

	r, logDir := b.run(t, "--check", "--import", "tensorflow", "--workers", "3", "--gpus-per-worker", "0", "--", "python3", "tf_env.py")
	wantCode(t, r, 2)
	wantContains(t, "run --check", r.stderr, "tfhive: error: --check: t3: ", "tfhive:   t3: tensorflow (not installed), where 2 of 3 hosts have 2.21.0\n")
	if _, err := os.Stat(logDir); err == nil {
		t.Errorf("a refused --check made its log dir %s", logDir)
	}
	for _, h := range b.f.Hosts {
		if entries, _ := os.ReadDir(h.ClaimsDir()); len(entries) > 0 || len(h.Leftovers()) > 0 {
			t.Errorf("%s: a refused --check left claims %v or processes %v", h.Name, entries, h.Leftovers())
		}
	}
}

// lossesIn are the values of "PREFIX … loss=X" lines in log, in order.
func lossesIn(log, prefix string) []float64 {
	var out []float64
	for _, l := range strings.Split(log, "\n") {
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		if _, v, ok := strings.Cut(l, "loss="); ok {
			var x float64
			if _, err := fmt.Sscanf(v, "%g", &x); err == nil {
				out = append(out, x)
			}
		}
	}
	return out
}

// TF2 ParameterServerStrategy on three hosts: the chief trains through
// ClusterCoordinator, its variables on the ps tasks; both workers run
// steps (their own logs say so); the evaluator reads the chief's
// checkpoints from the shared model dir; the chief's exit ends the run
// and the servers, which join() forever, are stopped; exit 0, nothing
// left. The run's report shows the chief's captured loss and the
// timeline.
func TestTFParameterServer(t *testing.T) {
	b := newTFBed(t, sshtest.DefaultBed(t), "p1", "p2", "p3")
	model := filepath.Join(b.f.Dir, "model") // every host sees the fleet's directory
	r, logDir := b.run(t, "--chief", "--ps", "2", "--workers", "2", "--evaluator", "--gpus-per-worker", "0",
		"--capture", "loss=loss=([0-9.]+)", "--capture-from", "chief:0",
		"--", "python3", "ps_strategy.py", "--model_dir="+model)
	wantCode(t, r, 0)
	chief := taskLog(t, logDir, "chief:0")
	wantContains(t, "the chief's log", chief, "chief: variable dense/kernel on /job:ps/replica:0/task:", "chief: variable dense/bias on /job:ps/replica:0/task:", "chief: done, loss=")
	if l := lossesIn(chief, "chief: epoch "); len(l) < 3 || l[len(l)-1] >= l[0] {
		t.Errorf("the chief's loss per epoch %v: want it to fall", l)
	}
	for _, w := range []string{"worker:0", "worker:1"} {
		if n := strings.Count(taskLog(t, logDir, w), "worker step "); n == 0 {
			t.Errorf("%s's own log shows no step it ran", w)
		}
	}
	wantContains(t, "the evaluator's log", taskLog(t, logDir, "evaluator:0"), "evaluator: checkpoint ckpt-1 eval_loss=")
	s := summaryOf(t, logDir)
	if s.Result != "succeeded" || taskByID(s, "chief:0").Outcome != "exited" {
		t.Fatalf("summary: %s, tasks %+v", s.Result, s.Tasks)
	}
	for _, task := range s.Tasks {
		ok := task.Outcome == "stopped" || task.Outcome == "exited" && *task.ExitCode == 0 && (task.Role == "chief" || task.Role == "evaluator")
		if !ok {
			t.Errorf("%s: %s, want stopped once the chief ended", task.ID, task.Outcome)
		}
	}
	noLeftovers(t, b.f, 5*time.Second)

	html := readFile(t, filepath.Join(logDir, "report.html"))
	checkSelfContained(t, html)
	if loss := chartOf(t, html, "loss", ""); maxPoints(loss) < 3 {
		t.Errorf("the report's loss chart has no curve of the chief's loss:\n%s", loss)
	}
	wantContains(t, "report", html, "<title>chief:0: ", "--capture loss", "succeeded")
}

// MultiWorkerMirroredStrategy, three workers on three hosts, Keras
// model.fit with BackupAndRestore: the loss falls; a worker killed in the
// middle of training, with --restarts 1, brings the whole world back
// (MWMS needs every worker), and training resumes from the backup, at the
// epoch after the last one completed, not at epoch 0.
func TestTFMultiWorkerMirroredRestart(t *testing.T) {
	b := newTFBed(t, sshtest.DefaultBed(t), "m1", "m2", "m3")
	model := filepath.Join(b.f.Dir, "model")
	logDir := filepath.Join(t.TempDir(), "logs")
	run := startTfhive(t, b.f, readStdout, b.args("run", "--log-dir", logDir, "--grace", "5s", "--sync", examplesDir(),
		"--workers", "3", "--gpus-per-worker", "0", "--strategy", "spread", "--restarts", "1", "--restart-backoff", "0s",
		"--", "python3", "multi_worker_mirrored.py", "--model_dir="+model, "--epochs=5", "--epoch_seconds=2")...)
	if !run.readUntil(func(l string) bool {
		return strings.HasPrefix(l, "[worker:1 ") && strings.HasSuffix(l, "epoch 3 start")
	}) {
		run.Wait()
		t.Fatalf("worker:1 never reached epoch 3:\n%s%s", run.read.String(), run.other.String())
	}
	run.discardRest()
	plan := readJSON[schedule.Plan](t, logDir, "plan.json")
	var host *sshtest.Host
	for _, task := range plan.Tasks {
		if task.ID == "worker:1" {
			host = b.f.Host(task.Host)
		}
	}
	if out, err := host.Command(nil, "pkill", "-KILL", "-f", "multi_worker_mirrored.py").CombinedOutput(); err != nil {
		t.Fatalf("killing worker:1 on %s: %v %s", host.Name, err, out)
	}
	if err := run.Wait(); err != nil {
		t.Fatalf("the run: %v\n%s", err, run.other.String())
	}
	s := summaryOf(t, logDir)
	if s.Result != "succeeded" {
		t.Fatalf("summary: %s: %s", s.Result, s.Reason)
	}
	for _, w := range []string{"worker:0", "worker:1", "worker:2"} {
		log := taskLog(t, logDir, w)
		_, after, ok := strings.Cut(log, w+" resumed from backup at epoch ")
		var at int
		if !ok || func() bool { _, err := fmt.Sscanf(after, "%d", &at); return err != nil }() || at < 1 {
			t.Errorf("%s did not resume from the backup (at epoch %d):\n%s", w, at, log)
			continue
		}
		// The first epoch it started after resuming is the one it resumed at.
		wantContains(t, w+"'s log", after, fmt.Sprintf("%s epoch %d start", w, at))
		if l := lossesIn(log, w+" epoch "); len(l) < 4 || l[len(l)-1] >= l[0] {
			t.Errorf("%s's loss per epoch %v: want it to fall", w, l)
		}
	}
	noLeftovers(t, b.f, 5*time.Second)
}

// TF1 between-graph replication with --tf-flags: the flags tfhive
// appends build each task's tf.compat.v1.train.Server; the
// replica_device_setter puts the variable on a ps, both workers update
// it, and the ps tasks are stopped once both workers are done. worker:1
// starts 3 s late, as a loaded host's can: the chief alone would make
// all 200 steps before it (CI saw updates_by_worker=[200, 0]); the
// example's workers wait for each other after their first step.
func TestTFBetweenGraphFlags(t *testing.T) {
	b := newTFBed(t, sshtest.DefaultBed(t), "g1", "g2", "g3")
	late := `case $TFHIVE_TASK in worker:1) sleep 3;; esac; exec python3 tf1_between_graph.py "$@"`
	r, logDir := b.run(t, "--ps", "2", "--workers", "2", "--gpus-per-worker", "0", "--tf-flags",
		"--", "sh", "-c", late, "sh", "--train_steps=200")
	wantCode(t, r, 0)
	for _, w := range []string{"worker:0", "worker:1"} {
		log := taskLog(t, logDir, w)
		wantContains(t, w+"'s log", log, w+" variable w on /job:ps/task:", w+" done: ")
		_, rest, _ := strings.Cut(log, "updates_by_worker=[")
		var a, c int
		if _, err := fmt.Sscanf(rest, "%d, %d]", &a, &c); err != nil || a == 0 || c == 0 {
			t.Errorf("%s: updates by worker %d, %d (%v): want both to have updated the ps's variable", w, a, c, err)
		}
	}
	s := summaryOf(t, logDir)
	for _, task := range s.Tasks {
		if want := map[string]string{"ps": "stopped", "worker": "exited"}[task.Role]; task.Outcome != want {
			t.Errorf("%s: %s, want %s", task.ID, task.Outcome, want)
		}
	}
	noLeftovers(t, b.f, 5*time.Second)
}
