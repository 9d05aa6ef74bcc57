package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	v := os.Getenv(tfVenvEnv)
	if v == "" {
		v = "/opt/tfhive-ci/venv"
	}
	found, _ := filepath.Glob(filepath.Join(v, "lib", "python3*", "site-packages", "tensorflow", "__init__.py"))
	if _, err := os.Stat(filepath.Join(v, "bin", "activate")); err != nil || len(found) == 0 {
		why := fmt.Sprintf("no TensorFlow in %s (%s): bash .ci/run makes it (python3 -m venv %s && %s/bin/pip install tensorflow-cpu==2.21.0 keras==3.15.1)", v, tfVenvEnv, v, v)
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	return v
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
