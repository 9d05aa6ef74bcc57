package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// The host files' tests run on both separate beds: a home that every host
// shares (NFS) and homes of each host's own.
func eachBed(t *testing.T, test func(t *testing.T, bed sshtest.Bed)) {
	sshtest.RequireSeparate(t)
	for _, bed := range []sshtest.Bed{sshtest.SharedHome, sshtest.PrivateHomes} {
		t.Run(bed.String(), func(t *testing.T) { test(t, bed) })
	}
}

func bedFleet(t *testing.T, bed sshtest.Bed, names ...string) *sshtest.Fleet {
	var ps []sshtest.Profile
	for _, n := range names {
		ps = append(ps, sshtest.Profile{Name: n, GPU: "idle-2gpu.xml", AliveInterval: 1})
	}
	return sshtest.StartOn(t, bed, ps...)
}

// Each host keeps its own tasks' files, under its machine's directory,
// though the home is one: a run of a parameter server and a worker on h1
// and a worker on h2 has two task directories on h1, one on h2.
func TestHostFilesPerMachine(t *testing.T) {
	eachBed(t, func(t *testing.T, bed sshtest.Bed) {
		f := bedFleet(t, bed, "h1", "h2")
		args, logDir := runArgs(t, f, "--ps", "1", "--workers", "2", "--gpus-per-worker", "2", "--strategy", "pack",
			"--", "sh", "-c", `if [ "$1" = ps ]; then exec sleep 300; fi; echo "$1 on $(hostname)"`, "task", "{job_name}")
		r := tfhive(t, f.Env(), f.Dir, args...)
		wantCode(t, r, 0)
		s := summaryOf(t, logDir)
		for _, h := range f.Hosts {
			var want []string
			for _, task := range s.Tasks {
				if task.Host == h.Name {
					want = append(want, strings.ReplaceAll(task.ID, ":", "-")+".out")
				}
			}
			var got []string
			entries, _ := os.ReadDir(hostRunDir(h, s.RunID))
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".out") {
					got = append(got, e.Name())
				}
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("%s holds %q of run %s, want its own tasks' %q", h.Name, got, s.RunID, want)
			}
		}
	})
}

// A run name used again: while the run of that name still runs, a new
// run is refused at once (exit 2) naming it, nothing started; once that
// run has ended (its keeper killed and the run adopted from another
// machine, which stops every task, the parameter server too), the name
// starts a new run cleanly, its keeper never stepping down.
func TestRunNameUsedAgain(t *testing.T) {
	eachBed(t, func(t *testing.T, bed sshtest.Bed) {
		f := bedFleet(t, bed, "n1", "n2")
		flag := filepath.Join(t.TempDir(), "train")
		script := `if [ "$1" = ps ]; then echo serving; exec sleep 300; fi
echo working; while [ ! -e "$2" ]; do sleep 0.05; done; echo done`
		args, logDir := runArgs(t, f, "--detach", "--name", "again", "--ps", "1", "--workers", "2", "--gpus-per-worker", "1",
			"--", "sh", "-c", script, "task", "{job_name}", flag)
		r := tfhive(t, f.Env(), f.Dir, args...)
		wantCode(t, r, 0)
		waitForState(t, f, "again", "running", true)
		planned := map[string]string{}
		for _, row := range psRows(t, f, "again") {
			for _, task := range row.Tasks {
				planned[task] = row.Host
			}
		}
		if len(planned) != 3 {
			t.Fatalf("ps lists tasks %v, want 3", planned)
		}

		// Used while it runs: refused before anything starts.
		other := t.TempDir()
		r = tfhive(t, f.Env(), other, fleetArgs(f, "run", "--name", "again", "--workers", "1", "--gpus-per-worker", "0", "--", "true")...)
		wantCode(t, r, 2)
		wantContains(t, "stderr", r.stderr, "tfhive: error: run name again is in use: that run still runs on ", "tfhive kill again")
		if strings.Count(r.stderr, "\n") > 2 {
			t.Errorf("more than an error and a hint:\n%s", r.stderr)
		}
		if _, err := os.Stat(filepath.Join(other, "tfhive-runs", "again")); err == nil {
			t.Error("the refused run made a log dir")
		}

		// The keeper killed, the run adopted elsewhere and carried to its end.
		keeper := keeperOf(t, logDir)
		syscall.Kill(keeper, syscall.SIGKILL)
		a, _, logDir2 := startAttach(t, f, "again")
		if !a.readUntil(func(line string) bool {
			return strings.Contains(line, "tfhive: run again adopted (keeper generation 2)")
		}) {
			a.Wait()
			t.Fatalf("attach -H did not adopt the run: %s", a.other.String())
		}
		if err := os.WriteFile(flag, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		a.readAll()
		if err := a.Wait(); err != nil {
			t.Fatalf("attach -H: %v\n%s", err, a.other.String())
		}
		s := summaryOf(t, logDir2)
		if s.Result != "succeeded" || taskByID(s, "ps:0").Outcome != "stopped" {
			t.Errorf("adopter's summary: %s, ps:0 %s", s.Result, taskByID(s, "ps:0").Outcome)
		}
		for _, task := range s.Tasks {
			if want := planned[task.ID]; task.Host != want {
				t.Errorf("the adopter reports %s on %s, planned on %s", task.ID, task.Host, want)
			}
		}
		noLeftovers(t, f, 10*time.Second)

		// The name again, from another directory: a clean run.
		third := t.TempDir()
		r = tfhive(t, f.Env(), third, fleetArgs(f, "run", "--name", "again", "--ps", "1", "--workers", "2", "--gpus-per-worker", "1",
			"--", "sh", "-c", `if [ "$1" = ps ]; then exec sleep 300; fi; echo again`, "task", "{job_name}")...)
		wantCode(t, r, 0)
		if strings.Contains(r.stdout+r.stderr, "stepping down") || strings.Contains(r.stdout+r.stderr, "adopted the run") {
			t.Errorf("the new run's keeper stepped down:\n%s%s", r.stdout, r.stderr)
		}
		for _, h := range f.Hosts {
			if gen := readFile(t, filepath.Join(hostRunDir(h, "again"), "keeper.gen")); gen != "" && gen != "1\n" {
				t.Errorf("%s: keeper.gen %q after a fresh run", h.Name, gen)
			}
			if muxes, _ := filepath.Glob(filepath.Join(hostRunDir(h, "again"), ".mux-*")); len(muxes) > 1 {
				t.Errorf("%s: the earlier run's multiplexers' directories are still there: %q", h.Name, muxes)
			}
		}
		noLeftovers(t, f, 10*time.Second)
	})
}

// gc removes the host files of ended runs older than --older-than, says
// how much that freed, and leaves a running run's alone however old its
// files; by default ended runs' files stay a week.
func TestGCRunFiles(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	eachBed(t, func(t *testing.T, bed sshtest.Bed) {
		f := bedFleet(t, bed, "g1", "g2")
		run := func(name string, args ...string) {
			a, _ := runArgs(t, f, append([]string{"--name", name, "--workers", "2", "--gpus-per-worker", "1"}, args...)...)
			wantCode(t, tfhive(t, f.Env(), f.Dir, a...), 0)
		}
		run("old", "--", "seq", "1", "1000")
		run("new", "--", "true")
		run("live", "--detach", "--", "sleep", "300")
		waitForState(t, f, "live", "running", true)
		past := time.Now().Add(-2 * time.Hour)
		for _, h := range f.Hosts {
			for _, id := range []string{"old", "live"} {
				filepath.Walk(hostRunDir(h, id), func(p string, _ os.FileInfo, err error) error {
					if err == nil {
						os.Chtimes(p, past, past)
					}
					return nil
				})
			}
		}
		gc := func(args ...string) map[string]map[string]bool {
			r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, append([]string{"gc", "--json"}, args...)...)...)
			wantCode(t, r, 0)
			var doc struct {
				Hosts []struct {
					Host string
					Runs []struct {
						RunID   string `json:"run_id"`
						State   string
						Bytes   int64
						Removed bool
					}
				}
			}
			if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
				t.Fatalf("gc --json: %v\n%s", err, r.stdout)
			}
			got := map[string]map[string]bool{}
			for _, h := range doc.Hosts {
				for _, d := range h.Runs {
					if got[d.RunID] == nil {
						got[d.RunID] = map[string]bool{}
					}
					got[d.RunID][h.Host+" "+d.State] = d.Removed
					if d.Bytes <= 0 {
						t.Errorf("%s: run %s: %d bytes", h.Host, d.RunID, d.Bytes)
					}
				}
			}
			return got
		}
		// The default keeps a week: nothing goes.
		for id, hosts := range gc() {
			for k, removed := range hosts {
				if removed {
					t.Errorf("gc without --older-than removed %s on %s", id, k)
				}
			}
		}
		got := gc("--older-than", "1h")
		for _, h := range f.Hosts {
			if !got["old"][h.Name+" ended"] || got["new"][h.Name+" recent"] || got["live"][h.Name+" running"] {
				t.Errorf("%s: gc --older-than 1h said %v", h.Name, got)
			}
			if _, err := os.Stat(hostRunDir(h, "old")); err == nil {
				t.Errorf("%s: the old run's files are still there", h.Name)
			}
			for _, id := range []string{"new", "live"} {
				if _, err := os.Stat(hostRunDir(h, id)); err != nil {
					t.Errorf("%s: run %s's files are gone: %v", h.Name, id, err)
				}
			}
		}
		r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "gc", "--older-than", "1h")...)
		wantCode(t, r, 0)
		wantContains(t, "gc", r.stdout, "g1: run files: freed 0 B, kept 1 running, 1 ended in the last 1h0m")
		wantCode(t, tfhive(t, f.Env(), f.Dir, fleetArgs(f, "kill", "--grace", "2s", "live")...), 0)
		noLeftovers(t, f, 10*time.Second)
	})
}

// A run whose description on its host (run.json) is garbled is not "no
// run": attach -H says which host's file it cannot read, and why.
func TestAttachGarbledRunInfo(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "j1")
	args, logDir := runArgs(t, f, "--detach", "--name", "garbled", "--workers", "1", "--gpus-per-worker", "0", "--", "sleep", "300")
	wantCode(t, tfhive(t, f.Env(), f.Dir, args...), 0)
	syscall.Kill(keeperOf(t, logDir), syscall.SIGKILL)
	if err := os.WriteFile(filepath.Join(hostRunDir(f.Host("j1"), "garbled"), "run.json"), []byte("{\"run_id\": garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	r := tfhive(t, append(f.Env(), "HOME="+home), home, "attach", "--hosts", f.HostsYAML, "--ssh-config", f.SSHConfig, "garbled")
	wantCode(t, r, 1)
	wantContains(t, "stderr", r.stderr, "run garbled: no host holds a description of it that tfhive can read: j1: its run.json is not a run's description (")
	if strings.Contains(r.stderr, "no host holds run garbled") {
		t.Errorf("said there is no such run:\n%s", r.stderr)
	}
	wantCode(t, tfhive(t, f.Env(), f.Dir, fleetArgs(f, "kill", "--grace", "2s", "garbled")...), 0)
	noLeftovers(t, f, 10*time.Second)
}
