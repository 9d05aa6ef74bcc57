package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// One machine under two names (here a second address of the same sshd)
// would have its GPUs booked twice: plan and run refuse it before
// planning, by what the host reports, not by its name.
func TestSameMachineUnderTwoNames(t *testing.T) {
	f := sshtest.Start(t, sshtest.Profile{Name: "m1", GPU: "idle-2gpu.xml", ExtraListen: []string{"127.0.0.2"}})
	hosts := filepath.Join(f.Dir, "two-names.yaml")
	if err := os.WriteFile(hosts, []byte("hosts:\n  - address: m1\n  - address: 127.0.0.2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"plan", "run"} {
		args := []string{cmd, "--hosts", hosts, "--ssh-config", f.SSHConfig, "--workers", "4", "--", "true"}
		if cmd == "run" {
			args = append([]string{cmd, "--log-dir", filepath.Join(t.TempDir(), "logs")}, args[1:]...)
		}
		r := tfhive(t, f.Env(), f.Dir, args...)
		wantCode(t, r, 2)
		wantContains(t, cmd, r.stderr, "tfhive: error: m1 and 127.0.0.2 are the same machine")
	}
	// status shows both: looking is harmless.
	r := tfhive(t, f.Env(), f.Dir, "status", "--hosts", hosts, "--ssh-config", f.SSHConfig)
	wantCode(t, r, 0)
	if len(rowsOf(r.stdout, "m1")) != 2 || len(rowsOf(r.stdout, "127.0.0.2")) != 2 {
		t.Errorf("status:\n%s", r.stdout)
	}
}

// Hosts cloned from one image report one machine-id (here one hostname
// too, and their claims at one path, as /tmp is) but are machines of
// their own: a run spanning them works as on distinct hosts, each
// keeps its run files apart in the one home they share, their GPUs are
// each their own, and status and plan say once that they look alike. Before run
// directories were keyed by the process table, the second host's start
// emptied the first's directory (exit 1, or 45 s of silence and "host
// lost"); before that, planning took them for one machine (exit 2).
func TestClonesAreSeparateMachines(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.StartOn(t, sshtest.Clones,
		sshtest.Profile{Name: "c1", GPU: "idle-2gpu.xml", Hostname: "node"},
		sshtest.Profile{Name: "c2", GPU: "idle-2gpu.xml", Hostname: "node"})
	c1, c2 := f.Host("c1"), f.Host("c2")
	if c1.MachineID() != c2.MachineID() || c1.RunsDir() == c2.RunsDir() {
		t.Fatalf("not clones: machine ids %s %s, runs dirs %s %s", c1.MachineID(), c2.MachineID(), c1.RunsDir(), c2.RunsDir())
	}
	logs := t.TempDir()
	var normal time.Duration // the slowest of the runs that succeed
	var c2Tasks []string     // the rc files of c2's tasks, by name
	for i := range 3 {
		name := "cl" + itoa(i)
		r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "run", "--log-dir", filepath.Join(logs, name), "--name", name,
			"--workers", "4", "--gpus-per-worker", "1", "--", "sh", "-c", `echo "hi on $(hostname) gpu $CUDA_VISIBLE_DEVICES"; sleep 1`)...)
		wantCode(t, r, 0)
		if n := strings.Count(r.stdout, "hi on node gpu "); n != 4 {
			t.Errorf("run %d: %d workers said hi, want 4:\n%s", i, n, r.stdout)
		}
		if strings.Contains(r.stderr, "report one machine id") {
			t.Errorf("run %d warns of clones (status, plan and doctor do):\n%s", i, r.stderr)
		}
		// Each host's tasks are in its own directory, none in the other's.
		for _, h := range []*sshtest.Host{c1, c2} {
			ents, err := os.ReadDir(hostRunDir(h, name))
			if err != nil {
				t.Fatalf("%s: %v", h.Name, err)
			}
			var rcs []string
			for _, e := range ents {
				if strings.HasSuffix(e.Name(), ".rc") {
					rcs = append(rcs, e.Name())
				}
			}
			if len(rcs) != 2 {
				t.Errorf("run %d on %s: task status files %v, want the 2 tasks it ran", i, h.Name, rcs)
			}
			if h == c2 {
				c2Tasks = rcs
			}
		}
		normal = max(normal, r.elapsed)
	}

	// A start that fails on one clone partway (its second task's file
	// cannot be made: a directory mounted where it goes, which the
	// multiplexer's clearing cannot remove) ends the run at once with
	// that reason, as a failure of the first host's would: never as the
	// watchdog's silence and "host lost" (issue 33: 45 s, then exit 4).
	if len(c2Tasks) == 2 {
		slices.Sort(c2Tasks)
		dir := hostRunDir(c2, "clfail")
		blocked := filepath.Join(dir, strings.TrimSuffix(c2Tasks[1], ".rc")+".out")
		mkdir(t, dir, 0o700)
		mkdir(t, blocked, 0o700)
		// In c2's mount namespace only: c1 never sees it.
		if out, err := c2.Command(nil, "mount", "-t", "tmpfs", "-o", "size=64k", "sshtest-blocked", blocked).CombinedOutput(); err != nil {
			t.Fatalf("mount on c2: %v %s", err, out)
		}
		r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "run", "--log-dir", filepath.Join(logs, "clfail"), "--name", "clfail",
			"--workers", "4", "--gpus-per-worker", "1", "--", "sh", "-c", `echo hi; sleep 1`)...)
		wantCode(t, r, 1)
		if limit := 2*normal + 5*time.Second; r.elapsed > limit {
			t.Errorf("the failed start took %s to end the run, want under %s (a run that succeeds: %s)", r.elapsed, limit, normal)
		}
		wantContains(t, "stderr", r.stderr, "on c2 could not start: cannot create the task's files in "+dir+": is a directory")
		if strings.Contains(r.stdout, "] hi") {
			t.Errorf("a task started beside one that could not:\n%s", r.stdout)
		}
		if out := r.stdout + r.stderr; strings.Contains(out, "no answer from the host") || strings.Contains(out, "was lost") {
			t.Errorf("the failed start passed for a lost host:\n%s", out)
		}
		noLeftovers(t, f, 10*time.Second)
	} else {
		t.Errorf("c2 ran tasks %v, want 2", c2Tasks)
	}
	// status shows each clone's two GPUs, as its own; it and plan name
	// the clones once.
	for _, args := range [][]string{{"status"}, {"plan", "--workers", "4", "--", "true"}} {
		cmd := args[0]
		r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, args...)...)
		wantCode(t, r, 0)
		if cmd == "status" && (len(rowsOf(r.stdout, "c1")) != 2 || len(rowsOf(r.stdout, "c2")) != 2) {
			t.Errorf("status:\n%s", r.stdout)
		}
		want := "tfhive: warning: c1, c2 report one machine id (" + c1.MachineID() + "): clones of one image? " +
			"tfhive keeps them apart by boot and process table; give each its own (systemd-machine-id-setup)\n"
		if strings.Count(r.stderr, want) != 1 {
			t.Errorf("%s's stderr %q, want the clones warning once", cmd, r.stderr)
		}
	}
}
