package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// hostSyntaxFleet is two hosts of two GPUs, h1 and h2: ssh config
// aliases (Host h1 … HostName 127.0.0.x, Port), as a lab's would be.
func hostSyntaxFleet(t *testing.T) *sshtest.Fleet {
	return sshtest.Start(t,
		sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml", AliveInterval: 1},
		sshtest.Profile{Name: "h2", GPU: "idle-2gpu.xml", AliveInterval: 1})
}

// hostsOfRun runs args (hosts given by the caller), wants exit 0, and
// returns each task's host and GPU count, in task order.
func hostsOfRun(t *testing.T, f *sshtest.Fleet, args ...string) (hosts []string, gpus []int) {
	t.Helper()
	logDir := filepath.Join(t.TempDir(), "logs")
	r := tfhive(t, f.Env(), f.Dir, append([]string{"run", "--ssh-config", f.SSHConfig, "--log-dir", logDir, "--grace", "2s"}, args...)...)
	wantCode(t, r, 0)
	for _, task := range summaryOf(t, logDir).Tasks {
		hosts, gpus = append(hosts, task.Host), append(gpus, len(task.GPUs))
	}
	return hosts, gpus
}

// -H 'h[1-2]' is h1 and h2, as pdsh and ClusterShell read it: two
// workers of two GPUs need both hosts.
func TestHostRangeFlag(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := hostSyntaxFleet(t)
	hosts, _ := hostsOfRun(t, f, "-H", "h[1-2]", "--workers", "2", "--gpus-per-worker", "2", "--", "true")
	slices.Sort(hosts)
	if !slices.Equal(hosts, []string{"h1", "h2"}) {
		t.Errorf("-H h[1-2]: tasks on %q, want h1 and h2", hosts)
	}

	// A bad range is one line, exit 2, before any host is touched.
	r := tfhive(t, f.Env(), f.Dir, "run", "-H", "h[2-1]", "--ssh-config", f.SSHConfig, "--", "true")
	wantCode(t, r, 2)
	wantContains(t, "stderr", r.stderr, "-H h[2-1]: bad host range: 2-1 runs backwards")
}

// --hostfile reads an MPI/DeepSpeed hostfile; slots=1 caps each host at
// one GPU, so two one-GPU workers packed (which would share h1) spread.
func TestHostfileSlots(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := hostSyntaxFleet(t)
	hf := filepath.Join(t.TempDir(), "hostfile")
	if err := os.WriteFile(hf, []byte("# DeepSpeed style\nh1 slots=1\nh2 slots=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hosts, gpus := hostsOfRun(t, f, "--hostfile", hf, "--workers", "2", "--strategy", "pack", "--", "true")
	slices.Sort(hosts)
	if !slices.Equal(hosts, []string{"h1", "h2"}) || !slices.Equal(gpus, []int{1, 1}) {
		t.Errorf("--hostfile slots=1: tasks on %q with %v GPUs, want one GPU on each of h1 and h2", hosts, gpus)
	}

	// plan's matrix shows each host's GPU beyond its slot as free (it is;
	// the hostfile leaves it), never "excl", which a GPU taken out is.
	r := tfhive(t, f.Env(), f.Dir, "plan", "--hostfile", hf, "--ssh-config", f.SSHConfig, "--workers", "2", "--", "true")
	wantCode(t, r, 0)
	for _, h := range []string{"h1", "h2"} {
		if rows := rowsOf(r.stdout, h); len(rows) == 0 || !slices.Contains(rows[len(rows)-1], "free") || slices.Contains(rows[len(rows)-1], "excl") {
			t.Errorf("plan's matrix row of %s: %q, want its left GPU free:\n%s", h, rows, r.stdout)
		}
	}

	// A third worker finds no slot: no GPUs (exit 3), the slots named.
	r = tfhive(t, f.Env(), f.Dir, "plan", "--hostfile", hf, "--ssh-config", f.SSHConfig, "--workers", "3", "--", "true")
	wantCode(t, r, 3)
	wantContains(t, "stderr", r.stderr, "h1: 1 free (0); excluded 1 (beyond the hostfile's slots=1)")

	// --hostfile with -H: a usage error, exit 2.
	r = tfhive(t, f.Env(), f.Dir, "run", "--hostfile", hf, "-H", "h1", "--ssh-config", f.SSHConfig, "--", "true")
	wantCode(t, r, 2)
	wantContains(t, "stderr", r.stderr, "--hostfile and -H both name the hosts; give one")
}

// -H host:N is a port, as in ssh (horovodrun's host:N is slots): when
// nothing answers there, the hint says so and names --hostfile.
func TestHostPortNotSlots(t *testing.T) {
	f := hostSyntaxFleet(t)
	r := tfhive(t, f.Env(), f.Dir, "status", "-H", "127.0.0.1:4", "--connect-timeout", "2s")
	if r.code == 0 {
		t.Fatalf("status of a refused host: exit 0\n%s", r.stdout)
	}
	wantContains(t, "output", r.stdout+r.stderr, "connection refused (127.0.0.1 port 4)", "-H host:4 is port 4, as in ssh", "--hostfile")
}

// torchrun's --nnodes 2 --nproc-per-node 1 is two ranks, one on each of
// two hosts (packing alone would put both on h1).
func TestTorchrunNnodes(t *testing.T) {
	f := hostSyntaxFleet(t)
	hosts, gpus := hostsOfRun(t, f, "-H", "h1,h2", "--framework", "torch", "--nnodes", "2", "--nproc-per-node", "1",
		"--", "sh", "-c", `test "$WORLD_SIZE" = 2 && test "$LOCAL_WORLD_SIZE" = 1`)
	slices.Sort(hosts)
	if !slices.Equal(hosts, []string{"h1", "h2"}) || !slices.Equal(gpus, []int{1, 1}) {
		t.Errorf("--nnodes 2 --nproc-per-node 1: ranks on %q with %v GPUs, want one on each of h1 and h2", hosts, gpus)
	}
}
