package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
	"github.com/tfhive/tfhive/schedule"
)

// python is Debian's interpreter, which python3-torch installs into; a
// python3 earlier on PATH (pyenv, a venv) may not have torch.
const python = "/usr/bin/python3"

// requireTorch fails in CI (where .ci/run installs python3-torch) and
// skips elsewhere when torch with gloo cannot be imported.
func requireTorch(t *testing.T) {
	t.Helper()
	out, err := exec.Command(python, "-c",
		"import torch.distributed as d; assert d.is_available() and d.is_gloo_available(), 'no gloo'").CombinedOutput()
	if err == nil {
		return
	}
	msg := "torch with gloo is not importable by " + python + " (apt-get install -y python3-torch): " + strings.TrimSpace(string(out))
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// planOf reads the plan `run` wrote into its log dir: the plan it ran.
func planOf(t *testing.T, logDir string) schedule.Plan {
	t.Helper()
	return readJSON[schedule.Plan](t, logDir, "plan.json")
}

// torchArgs runs on three hosts of two GPUs; gloo is told to use loopback,
// where the test hosts all are.
func torchArgs(t *testing.T, f *sshtest.Fleet, args ...string) ([]string, string) {
	return runArgs(t, f, append([]string{"--framework", "torch", "--env", "GLOO_SOCKET_IFNAME=lo"}, args...)...)
}

var allreduce = filepath.Join(sshtest.RepoRoot(), "testdata", "torch", "allreduce.py")

func TestRunTorchAllReduce(t *testing.T) {
	requireTorch(t)
	f := runFleet(t, "t1", "t2", "t3")
	args, logDir := torchArgs(t, f, "--workers", "4", "--gpus-per-worker", "0", "--", python, allreduce)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	s := summaryOf(t, logDir)
	if s.Result != "succeeded" || s.Reason != "every rank exited 0" || len(s.Tasks) != 4 {
		t.Fatalf("summary %+v", s)
	}
	p := planOf(t, logDir)
	hosts := map[string]bool{}
	for _, task := range p.Tasks {
		hosts[task.Host] = true
		tr := taskByID(s, task.ID)
		if tr.Outcome != "exited" || tr.ExitCode == nil || *tr.ExitCode != 0 {
			t.Errorf("%s: %s", task.ID, tr.Outcome)
		}
		log, _ := os.ReadFile(tr.Log)
		wantContains(t, task.ID+" log", string(log), "rank "+task.Env["RANK"]+" of 4: sum 10 ok")
	}
	if len(hosts) != 3 {
		t.Errorf("the ranks ran on %d hosts, want all 3", len(hosts))
	}
	noLeftovers(t, f, 10*time.Second)
}

func TestRunTorchEnvironment(t *testing.T) {
	f := runFleet(t, "t1", "t2", "t3")
	script := `echo "RANK=$RANK WORLD_SIZE=$WORLD_SIZE LOCAL_RANK=$LOCAL_RANK LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE GROUP_RANK=$GROUP_RANK"
echo "MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES TF_CONFIG=${TF_CONFIG-unset}"
echo "task=$TFHIVE_TASK args=$*"`
	args, logDir := torchArgs(t, f, "--chief", "--workers", "3", "--", "sh", "-c", script, "argv0",
		"{rank}", "{world_size}", "{master_addr}", "{master_port}")
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	p := planOf(t, logDir)
	addr, port, _ := strings.Cut(p.Master, ":")
	if n, err := strconv.Atoi(port); p.Framework != "torch" || addr != "127.0.0.1" || err != nil || n < 2222 || n > 2400 {
		t.Fatalf("plan framework %q master %q, want torch with 127.0.0.1 and a port of 2222-2400", p.Framework, p.Master)
	}
	// Spread deals chief:0 t1, worker:0 t2, worker:1 t3, worker:2 t1;
	// numbered host by host, t1's two ranks come first.
	want := map[string]struct{ host, line string }{
		"chief:0":  {"t1", "RANK=0 WORLD_SIZE=4 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 GROUP_RANK=0"},
		"worker:0": {"t1", "RANK=1 WORLD_SIZE=4 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 GROUP_RANK=0"},
		"worker:1": {"t2", "RANK=2 WORLD_SIZE=4 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 GROUP_RANK=1"},
		"worker:2": {"t3", "RANK=3 WORLD_SIZE=4 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 GROUP_RANK=2"},
	}
	cvd := map[string]string{"t1": "0,1", "t2": "0", "t3": "0"}
	s := summaryOf(t, logDir)
	if len(s.Tasks) != 4 {
		t.Fatalf("%d tasks", len(s.Tasks))
	}
	for _, tr := range s.Tasks {
		w, ok := want[tr.ID]
		if !ok || tr.Host != w.host {
			t.Errorf("%s ran on %s, want %s", tr.ID, tr.Host, w.host)
			continue
		}
		rank := strings.TrimPrefix(strings.Fields(w.line)[0], "RANK=")
		log, _ := os.ReadFile(tr.Log)
		wantContains(t, tr.ID+" log", string(log),
			w.line+"\n",
			"MASTER_ADDR=127.0.0.1 MASTER_PORT="+port+" CUDA_VISIBLE_DEVICES="+cvd[tr.Host]+" TF_CONFIG=unset\n",
			"task="+tr.ID+" args="+rank+" 4 127.0.0.1 "+port+"\n")
	}
}

func TestRunTorchFailingRank(t *testing.T) {
	requireTorch(t)
	f := runFleet(t, "t1", "t2", "t3")
	for _, tc := range []struct {
		rank, id string
	}{
		{"0", "chief:0"},  // rank 0, which serves the rendezvous
		{"2", "worker:1"}, // any other rank
	} {
		t.Run("rank"+tc.rank, func(t *testing.T) {
			args, logDir := torchArgs(t, f, "--chief", "--workers", "3", "--gpus-per-worker", "0", "--",
				python, allreduce, "--fail-rank", tc.rank)
			r := tfhive(t, f.Env(), f.Dir, args...)
			// The rank's 3 is tfhive's no-GPU code: the run exits 1, its
			// summary keeps the rank's 3.
			wantCode(t, r, 1)
			s := summaryOf(t, logDir)
			if s.Result != "failed" || s.Tasks[0].ID != tc.id || *s.Tasks[0].ExitCode != 3 {
				t.Fatalf("the failing rank must decide the run: %+v", s.Tasks)
			}
			// The others wait in the rendezvous for the missing rank
			// (60 s) until tfhive stops them.
			for _, tr := range s.Tasks[1:] {
				if tr.Outcome != "stopped" {
					t.Errorf("%s: outcome %s, want stopped", tr.ID, tr.Outcome)
				}
			}
			wantContains(t, "stderr", r.stderr, "tfhive: error: run", tc.id+" on t", "exited 3, one of tfhive's own codes")
			if r.elapsed > 30*time.Second {
				t.Errorf("took %s: the other ranks should be stopped at once, not time out", r.elapsed)
			}
			noLeftovers(t, f, 10*time.Second)
		})
	}
}
