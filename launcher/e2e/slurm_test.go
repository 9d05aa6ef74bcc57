package e2e

import (
	"math/rand/v2"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/emit/slurmtest"
)

// TestSlurm submits what `tfhive plan --emit slurm` prints to a real,
// one-machine Slurm (three nodes on loopback, launcher/emit/slurmtest)
// and checks that the job does what `tfhive run` would: it trains, the
// ps is stopped, and the job's state and exit code are the deciding
// task's, as `scontrol show job` and `sacct` tell them (sacct
// --completion: the test bed keeps no accounting database).
func TestSlurm(t *testing.T) {
	c := slurmtest.Start(t, 3, 4, 2)

	// All the nodes are this machine, where other tests' tasks may hold
	// the default ports: the jobs use a range that was free just now.
	ports := freePorts(t)

	// emit prints the script for these plan flags.
	emit := func(t *testing.T, args ...string) string {
		t.Helper()
		r := tfhive(t, os.Environ(), c.Dir, append([]string{"plan", "--emit", "slurm", "--port-range", ports}, args...)...)
		wantCode(t, r, 0)
		return r.stdout
	}
	wantJob := func(t *testing.T, j slurmtest.Job, state string, code int) {
		t.Helper()
		if want := state + " " + itoa(code) + ":0"; j.State != state || j.ExitCode != code || j.Sacct != want {
			t.Fatalf("job %s: state %s, exit %d, sacct %q; want %s and %d, sacct %q\n%s", j.ID, j.State, j.ExitCode, j.Sacct, state, code, want, j.Output)
		}
	}

	t.Run("ps and workers train", func(t *testing.T) {
		j := c.Run(emit(t, "--name", "slurm-ps", "--ps", "1", "--workers", "2", "--gpus-per-worker", "0", "--", trainerBin), nil)
		wantJob(t, j, "COMPLETED", 0)
		// tfhive's layout: the ps and worker 0 on the first node, worker 1
		// on the second, with the ports tfhive would choose.
		wantContains(t, "the job's output", j.Output,
			"[ps:0 node1] ps 0 listening on node1:"+strings.Split(ports, "-")[0]+"\n",
			"[worker:0 node1] tfhive: exited 0\n",
			"[worker:1 node2] tfhive: exited 0\n",
			"tfhive: run slurm-ps succeeded\n")
		wantServerStopped(t, j.Output, "ps:0", "node1")
		reached := regexp.MustCompile(`(?m)^\[worker:(\d) node\d\] worker (\d) reached loss (\S+) at step`).FindAllStringSubmatch(j.Output, -1)
		if len(reached) != 2 {
			t.Fatalf("%d workers reached the target loss, want 2:\n%s", len(reached), j.Output)
		}
		for _, m := range reached {
			if loss, err := strconv.ParseFloat(m[3], 64); m[1] != m[2] || err != nil || loss >= 1e-3 {
				t.Errorf("worker:%s says worker %s reached loss %s, want below 1e-3", m[1], m[2], m[3])
			}
		}
	})

	t.Run("the chief decides; workers, ps and evaluator are stopped", func(t *testing.T) {
		j := c.Run(emit(t, "--name", "slurm-chief", "--nodes", "3", "--chief", "--workers", "2", "--evaluator", "--ps", "1",
			"--gpus-per-worker", "0", "--", trainerBin, "--eval-every", "100ms"), nil)
		wantJob(t, j, "COMPLETED", 0)
		wantContains(t, "the job's output", j.Output,
			"] chief reached loss ",
			"[chief:0 node1] tfhive: exited 0\n",
			"tfhive: run slurm-chief succeeded\n")
		for _, task := range []string{"ps:0", "worker:0", "worker:1", "evaluator:0"} {
			wantServerStopped(t, j.Output, task, `node\d`)
		}
	})

	t.Run("a sweep is one job array: every trial once, with its own values", func(t *testing.T) {
		script := emit(t, "--name", "slurm-sweep", "--param", "lr=0.1,1e-3", "--param", "opt=adam,it's sgd", "--max-parallel", "2",
			"--workers", "1", "--gpus-per-worker", "0", "--",
			"sh", "-c", `echo "trial=$TFHIVE_TRIAL run=$TFHIVE_RUN_ID lr=$lr opt=$opt args=$1|$2"`, "sh", "{lr}", "{opt}")
		wantContains(t, "the script", script, "#SBATCH --array=0-3%2\n")
		jobs := c.RunArray(script, nil, 4)
		want := []string{"slurm-sweep-001 run=slurm-sweep-001 lr=0.1 opt=adam args=0.1|adam",
			"slurm-sweep-002 run=slurm-sweep-002 lr=0.1 opt=it's sgd args=0.1|it's sgd",
			"slurm-sweep-003 run=slurm-sweep-003 lr=1e-3 opt=adam args=1e-3|adam",
			"slurm-sweep-004 run=slurm-sweep-004 lr=1e-3 opt=it's sgd args=1e-3|it's sgd"}
		all := ""
		for k, j := range jobs {
			if j.State != "COMPLETED" || j.ExitCode != 0 {
				t.Errorf("array task %d (%s): state %s, exit %d\n%s", k, j.ID, j.State, j.ExitCode, j.Output)
			}
			wantContains(t, "array task "+itoa(k)+"'s output", j.Output, "] trial="+want[k]+"\n",
				"tfhive: run slurm-sweep-00"+itoa(k+1)+" succeeded\n")
			all += j.Output
		}
		if n := strings.Count(all, "] trial="); n != 4 {
			t.Errorf("%d trials ran, want 4 (each once):\n%s", n, all)
		}
	})

	t.Run("a failing worker fails the job with its code", func(t *testing.T) {
		// Worker 1 fails at its third step; worker 0 would train forever.
		script := emit(t, "--name", "slurm-fail", "--ps", "1", "--workers", "2", "--gpus-per-worker", "0", "--",
			"sh", "-c", `if [ "$1" = 1 ]; then exec "$0" --fail-at-step 3 --fail-code 7 --sleep 50ms; fi; exec "$0" --target 0 --steps 1000000 --sleep 50ms`,
			trainerBin, "{task_index}")
		j := c.Run(script, nil)
		wantJob(t, j, "FAILED", 7)
		wantContains(t, "the job's output", j.Output,
			"[worker:1 node2] tfhive: exited 7\n",
			"[worker:0 node1] tfhive: stopped (exit 143)\n",
			"tfhive: run slurm-fail failed (exit 7)\n")
		wantServerStopped(t, j.Output, "ps:0", "node1")
	})

	t.Run("a failing ps stops the training", func(t *testing.T) {
		// The ps fails once both workers run (the nodes share this
		// machine's files): a stop that came before a task started
		// would reach it only as SIGKILL, after --grace.
		up := t.TempDir()
		script := emit(t, "--name", "slurm-ps-fail", "--ps", "1", "--workers", "2", "--gpus-per-worker", "0", "--",
			"sh", "-c", `if [ "$0" = ps ]; then until [ -e "$1/0" ] && [ -e "$1/1" ]; do sleep 0.05; done; echo "ps down"; exit 5; fi; touch "$1/$2"; exec sleep 600`,
			"{job_name}", up, "{task_index}")
		j := c.Run(script, nil)
		wantJob(t, j, "FAILED", 5)
		wantContains(t, "the job's output", j.Output,
			"[ps:0 node1] tfhive: exited 5\n",
			"tfhive: a task serving the training failed (exit 5): stopping the training\n",
			"[worker:0 node1] tfhive: stopped (exit 143)\n",
			"[worker:1 node2] tfhive: stopped (exit 143)\n",
			"tfhive: run slurm-ps-fail failed (exit 5)\n")
	})

	t.Run("secrets come from sbatch's environment only", func(t *testing.T) {
		script := emit(t, "--name", "slurm-env", "--workers", "1", "--gpus-per-worker", "0",
			"--env", "TFHIVE_TEST_SECRET", "--env", "GREETING=it's $HOME", "--",
			"sh", "-c", `echo "secret=$TFHIVE_TEST_SECRET greeting=$GREETING leaked=${TFHIVE_TEST_LEAK-no} task=$TFHIVE_TASK"`)
		if strings.Contains(script, "s3cret") {
			t.Fatal("the secret's value is in the script")
		}
		env := append(os.Environ(), "TFHIVE_TEST_SECRET=s3cret", "TFHIVE_TEST_LEAK=yes")
		j := c.Run(script, env)
		wantJob(t, j, "COMPLETED", 0)
		wantContains(t, "the job's output", j.Output, "[worker:0 node1] secret=s3cret greeting=it's $HOME leaked=no task=worker:0\n")
		j = c.Run(script, os.Environ())
		wantJob(t, j, "FAILED", 2)
		wantContains(t, "the job's output", j.Output, "tfhive: error: TFHIVE_TEST_SECRET is not set")
	})

	t.Run("each task takes its own GPUs", func(t *testing.T) {
		// Two workers per node share the node's two (stand-in) GPUs.
		j := c.Run(emit(t, "--name", "slurm-gpus", "--workers", "4", "--nodes", "2", "--gpus-per-node", "2", "--",
			"sh", "-c", `echo "gpus=$CUDA_VISIBLE_DEVICES placeholder={gpus}"`), nil)
		wantJob(t, j, "COMPLETED", 0)
		for _, w := range []struct{ task, node, gpu string }{{"0", "node1", "0"}, {"1", "node2", "0"}, {"2", "node1", "1"}, {"3", "node2", "1"}} {
			wantContains(t, "the job's output", j.Output, "[worker:"+w.task+" "+w.node+"] gpus="+w.gpu+" placeholder="+w.gpu+"\n")
		}
		// A torch rank sees its node's ranks' GPUs, its own at LOCAL_RANK.
		j = c.Run(emit(t, "--name", "slurm-torch-gpus", "--framework", "torch", "--workers", "4", "--nodes", "2", "--gpus-per-node", "2", "--",
			"sh", "-c", `echo "gpus=$CUDA_VISIBLE_DEVICES local=$LOCAL_RANK own={gpus}"`), nil)
		wantJob(t, j, "COMPLETED", 0)
		for r, node := range []string{"node1", "node1", "node2", "node2"} {
			wantContains(t, "the job's output", j.Output, "[worker:"+itoa(r)+" "+node+"] gpus=0,1 local="+itoa(r%2)+" own="+itoa(r%2)+"\n")
		}
	})

	t.Run("torch ranks all-reduce", func(t *testing.T) {
		requireTorch(t)
		j := c.Run(emit(t, "--name", "slurm-torch", "--framework", "torch", "--workers", "4", "--nodes", "2",
			"--gpus-per-worker", "0", "--env", "GLOO_SOCKET_IFNAME=lo", "--", python, allreduce), nil)
		wantJob(t, j, "COMPLETED", 0)
		// Ranks numbered node by node, as torchrun numbers them.
		for r, node := range []string{"node1", "node1", "node2", "node2"} {
			wantContains(t, "the job's output", j.Output, "[worker:"+itoa(r)+" "+node+"] rank "+itoa(r)+" of 4: sum 10 ok\n")
		}
	})
}

// wantServerStopped checks that task, one of the test trainer's tasks that
// serve until SIGTERM and then exit 0 (the ps, the evaluator, workers
// under a chief), ended on the stop's SIGTERM. Its shell may report
// "exited 0" rather than "stopped (exit 0)": Slurm signals a step's
// processes one at a time, and on a loaded machine the task can have
// exited before its shell gets the signal. Either line shows the stop
// reached it (these tasks end on nothing else), as does "stopped before
// it started"; a task killed after --grace leaves none of them.
func wantServerStopped(t *testing.T, output, task, node string) {
	t.Helper()
	re := regexp.MustCompile(`(?m)^\[` + regexp.QuoteMeta(task) + ` ` + node + `\] tfhive: (stopped \(exit 0\)|exited 0|stopped before it started)$`)
	if !re.MatchString(output) {
		t.Errorf("%s was not stopped:\n%s", task, output)
	}
}

// freePorts is a range of 20 ports nothing listens on, below the kernel's
// ephemeral range (where the Slurm test bed's daemons, listening on every
// address, and every client connection get theirs): each port is tried on
// every address.
func freePorts(t *testing.T) string {
	for try := 0; try < 100; try++ {
		base := 20000 + rand.IntN(10000)
		free := true
		for p := base; p <= base+20 && free; p++ {
			l, err := net.Listen("tcp", ":"+strconv.Itoa(p))
			if err != nil {
				free = false
				break
			}
			l.Close()
		}
		if free {
			return strconv.Itoa(base) + "-" + strconv.Itoa(base+20)
		}
	}
	t.Fatal("no 20 free ports in 20000-30000")
	return ""
}
