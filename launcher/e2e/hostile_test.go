package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/sshtest"
)

// A shared host as a hostile colleague finds it: alice runs tfhive there,
// mallory is another local user acting directly on the machine.
type sharedHost struct {
	f              *sshtest.Fleet
	h              *sshtest.Host
	alice, mallory *sshtest.User
	aliceHosts     string
	uuids          []string // the host's GPU UUIDs, by index
}

func newSharedHost(t *testing.T) *sharedHost {
	f := sshtest.StartShared(t, sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml", AliveInterval: 1})
	s := &sharedHost{f: f, h: f.Host("h1"), alice: sshtest.AddUser(t, "alice"), mallory: sshtest.AddUser(t, "mallory")}
	s.aliceHosts = f.HostsYAMLAs(t, s.alice)
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status", "--json")...)
	wantCode(t, r, 0)
	var doc struct {
		Hosts []struct{ GPUs []struct{ UUID string } }
	}
	json.Unmarshal([]byte(r.stdout), &doc)
	for _, g := range doc.Hosts[0].GPUs {
		s.uuids = append(s.uuids, g.UUID)
	}
	if len(s.uuids) != 2 {
		t.Fatalf("status: %s", r.stdout)
	}
	return s
}

// as runs tfhive logged in to the host as alice.
func (s *sharedHost) as(args ...string) []string {
	return append([]string{args[0], "--hosts", s.aliceHosts, "--ssh-config", s.f.SSHConfig}, args[1:]...)
}

// lockFile is a lock file of the host's claims dir as the host names it
// (for its commands and tfhive's messages); lockFileHere, as the test
// reaches it.
func (s *sharedHost) lockFile(name string) string {
	return filepath.Join(s.h.ClaimsPath(), "tfhive-claim."+name+".lock")
}

func (s *sharedHost) lockFileHere(name string) string {
	return filepath.Join(s.h.ClaimsDir(), "tfhive-claim."+name+".lock")
}

// mallorySh runs a shell command as mallory on the host.
func (s *sharedHost) mallorySh(t *testing.T, script string) string {
	t.Helper()
	out, err := s.h.Command(s.mallory, "/bin/sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("as mallory: %s: %v\n%s", script, err, out)
	}
	return string(out)
}

// background starts a long-lived command as u on host h that prints
// "ready" first.
func background(t *testing.T, h *sshtest.Host, u *sshtest.User, script string) *exec.Cmd {
	t.Helper()
	cmd := h.Command(u, "/bin/bash", "-c", script)
	cmd.SysProcAttr.Setpgid = true
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("%s: %q", script, line)
	}
	return cmd
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// A symlink planted as a lock file is never written through, by root or
// by anyone: its GPU is blocked, named with its owner; the rest is used.
func TestHostilePlantedSymlink(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	s := newSharedHost(t)
	precious := filepath.Join(s.f.Dir, "precious")
	os.WriteFile(precious, []byte("root's own\n"), 0o644)
	s.mallorySh(t, "ln -s "+precious+" "+s.lockFile("gpu-"+s.uuids[0]))

	st := tfhive(t, s.f.Env(), s.f.Dir, fleetArgs(s.f, "status")...)
	wantCode(t, st, 0)
	wantContains(t, "status", st.stdout, "blocked", "is a symbolic link owned by "+s.mallory.Name)

	// Root (the fleet's own hosts file) runs on the free GPU.
	args, _ := runArgs(t, s.f, "--workers", "1", "--", "sh", "-c", "echo gpus=$CUDA_VISIBLE_DEVICES")
	r := tfhive(t, s.f.Env(), s.f.Dir, args...)
	wantCode(t, r, 0)
	wantContains(t, "run", r.stdout, "gpus=1")
	// Two GPUs are one too many: exit 3 naming the file and its owner,
	// once, without retrying.
	args, _ = runArgs(t, s.f, "--workers", "2", "--", "true")
	r = tfhive(t, s.f.Env(), s.f.Dir, args...)
	wantCode(t, r, 3)
	wantContains(t, "run", r.stderr, s.lockFile("gpu-"+s.uuids[0])+" is a symbolic link owned by "+s.mallory.Name)
	if strings.Contains(r.stderr, "tfhive: waiting") {
		t.Errorf("a blocked GPU was retried:\n%s", r.stderr)
	}
	if data, _ := os.ReadFile(precious); string(data) != "root's own\n" {
		t.Errorf("the symlink's target was written: %q", data)
	}
}

// A claims directory someone else owns is refused, and nothing is written
// in it.
func TestHostileClaimsDirOwner(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	s := newSharedHost(t)
	os.Chown(s.h.ClaimsDir(), s.mallory.UID, s.mallory.GID)
	args, _ := runArgs(t, s.f, "--workers", "1", "--", "true")
	r := tfhive(t, s.f.Env(), s.f.Dir, args...)
	wantCode(t, r, 3)
	wantContains(t, "run", r.stderr, "is owned by "+s.mallory.Name+", not by root or you")
	if entries, _ := os.ReadDir(s.h.ClaimsDir()); len(entries) != 0 {
		t.Errorf("files written in mallory's directory: %v", entries)
	}
}

// A lock file mallory made unreadable blocks its GPU: status says
// blocked with her name, a run that needs it exits 3 once, naming her.
func TestHostileUnreadableLock(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	s := newSharedHost(t)
	s.mallorySh(t, "umask 077; echo x >"+s.lockFile("gpu-"+s.uuids[1]))
	st := tfhive(t, s.f.Env(), s.f.Dir, s.as("status")...)
	wantCode(t, st, 0)
	rows := rowsOf(st.stdout, "h1")
	if len(rows) != 2 || rows[0][5] != "free" || rows[1][5] != "blocked" || !strings.Contains(rows[1][6], "owned by "+s.mallory.Name+" and not readable") {
		t.Errorf("status rows %q", rows)
	}
	args, _ := runArgs(t, s.f, "--workers", "2", "--", "true")
	args[2] = s.aliceHosts
	r := tfhive(t, s.f.Env(), s.f.Dir, args...)
	wantCode(t, r, 3)
	wantContains(t, "run", r.stderr, "owned by "+s.mallory.Name+" and not readable")
	if n := strings.Count(r.stderr, "tfhive: error"); n != 1 || strings.Contains(r.stderr, "tfhive: waiting") {
		t.Errorf("want one error and no retries:\n%s", r.stderr)
	}
}

// Forged claims: mallory holds a lock labelled with alice's run id and
// writes pgid=1 and alice's name into the files. ps shows mallory's claim
// as hers; alice's kill stops exactly her own run's tasks and nothing
// else of hers or of mallory's.
func TestHostileForgedClaims(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	s := newSharedHost(t)
	// Alice's bystander process: kill -TERM -1 or a wrong group would end it.
	bystander := background(t, s.h, s.alice, "echo ready; exec sleep 300")
	runArgv, logDir := runArgs(t, s.f, "--name", "victim", "--workers", "1", "--", "sh", "-c", "echo started; exec sleep 300")
	runArgv[2] = s.aliceHosts
	run, runErr := startRun(t, s.f, runArgv...)

	forged := s.lockFile("port-39999")
	s.mallorySh(t, "printf 'run=victim task=worker:0 user="+s.alice.Name+" since=1 pgid=1\\n' >"+forged)
	for _, f := range []string{s.lockFile("gpu-" + s.uuids[0]), s.lockFile("gpu-" + s.uuids[1])} {
		if _, err := os.Stat(filepath.Join(s.h.ClaimsDir(), filepath.Base(f))); err != nil {
			continue // the GPU alice's run does not use
		}
		// Her text in alice's files: she cannot write them.
		if err := s.h.Command(s.mallory, "/bin/sh", "-c", "echo pgid=1 >"+f).Run(); err == nil {
			t.Errorf("mallory could write %s", f)
		}
	}
	fake := background(t, s.h, s.mallory, "exec 4<"+forged+"; echo ready; exec flock -n -o /proc/self/fd/4 bash --norc -c 'sleep 300' tfhive-sup "+
		s.h.ClaimsPath()+" victim worker:7 port:39999")

	ps := tfhive(t, s.f.Env(), s.f.Dir, s.as("ps", "--json")...)
	var doc struct{ Runs []view.RunOnHost }
	json.Unmarshal([]byte(ps.stdout), &doc)
	users := map[string][]string{}
	for _, r := range doc.Runs {
		users[r.User] = append(users[r.User], r.RunID+" "+strings.Join(r.Tasks, ","))
	}
	if len(doc.Runs) != 2 || users[s.alice.Name][0] != "victim worker:0" || users[s.mallory.Name][0] != "victim worker:7" {
		t.Fatalf("ps: %+v", doc.Runs)
	}

	r := tfhive(t, s.f.Env(), s.f.Dir, s.as("kill", "--grace", "2s", "victim")...)
	wantCode(t, r, 0)
	wantContains(t, "kill", r.stdout, "stopped run victim on h1 (1 task)")
	wantContains(t, "kill", r.stderr, s.mallory.Name+" holds claims labelled victim on h1; left alone")
	if err := run.Wait(); err == nil {
		t.Errorf("the killed run should fail:\n%s", runErr)
	}
	if task := summaryOf(t, logDir).Tasks[0]; task.ExitCode == nil || *task.ExitCode != 143 {
		t.Errorf("task %+v, want stopped by SIGTERM", task)
	}
	if !alive(bystander.Process.Pid) || !alive(fake.Process.Pid) {
		t.Error("kill signalled a process outside the run")
	}

	// Mallory's kill of alice's run: refused, exit 1, nothing stopped.
	run2Argv, _ := runArgs(t, s.f, "--name", "victim2", "--workers", "1", "--", "sh", "-c", "echo started; exec sleep 300")
	run2Argv[2] = s.aliceHosts
	run2, _ := startRun(t, s.f, run2Argv...)
	malloryHosts := s.f.HostsYAMLAs(t, s.mallory)
	r = tfhive(t, s.f.Env(), s.f.Dir, "kill", "--hosts", malloryHosts, "--ssh-config", s.f.SSHConfig, "victim2")
	wantCode(t, r, 1)
	wantContains(t, "kill", r.stderr, "run victim2 is not yours to stop: "+s.alice.Name+" holds claims labelled victim2 on h1")
	if run2.ProcessState != nil {
		t.Error("mallory's kill stopped alice's run")
	}
	run2.Process.Signal(os.Interrupt)
	run2.Wait()
}

// Deleting a lock file: mallory cannot delete alice's; one mallory made
// herself she can delete while alice holds it, and the claim still stands
// (its holder's label names it), so nobody is double-booked.
func TestHostileDeletedLock(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	s := newSharedHost(t)
	mine := s.lockFile("gpu-" + s.uuids[0])
	s.mallorySh(t, ": >"+mine) // mallory's file, readable: usable by all
	runArgv, _ := runArgs(t, s.f, "--name", "holder", "--workers", "2", "--", "sh", "-c", "echo started; exec sleep 300")
	runArgv[2] = s.aliceHosts
	run, _ := startRun(t, s.f, runArgv...)

	if err := s.h.Command(s.mallory, "rm", "-f", s.lockFile("gpu-"+s.uuids[1])).Run(); err == nil {
		if _, err := os.Stat(s.lockFileHere("gpu-" + s.uuids[1])); err != nil {
			t.Fatal("mallory deleted alice's lock file")
		}
	}
	s.mallorySh(t, "rm -f "+mine)

	st := tfhive(t, s.f.Env(), s.f.Dir, fleetArgs(s.f, "status")...)
	rows := rowsOf(st.stdout, "h1")
	if len(rows) != 2 || rows[0][5] != "claimed" || rows[1][5] != "claimed" {
		t.Errorf("status after the delete: %q", rows)
	}
	args, _ := runArgs(t, s.f, "--workers", "1", "--", "true")
	r := tfhive(t, s.f.Env(), s.f.Dir, args...)
	wantCode(t, r, 3)
	run.Process.Signal(os.Interrupt)
	run.Wait()
}

// A claims dir flooded with long names (30,000 of them: a glob of them
// passed to stat failed, and every GPU showed free): the GPU mallory
// holds with a plain flock stays claimed and the one she blocked with a
// symlink stays blocked. Past the cap on claim-shaped names the host
// fails closed, its GPUs never free.
func TestHostileFloodedClaimsDir(t *testing.T) {
	s := newSharedHost(t)
	dir := s.h.ClaimsPath()
	s.mallorySh(t, "cd "+dir+" && seq 1 30000 | sed 's/^/tfhive-claim."+strings.Repeat("x", 200)+"/; s/$/.lock/' | xargs touch")
	s.mallorySh(t, "ln -s /etc/passwd "+s.lockFile("gpu-"+s.uuids[1]))
	held := s.lockFile("gpu-" + s.uuids[0])
	// A label like a supervisor's, one word short: only the lock file
	// says the GPU is held.
	background(t, s.h, s.mallory, ": >"+held+"; exec 4<"+held+"; exec flock -n -o /proc/self/fd/4 bash --norc -c 'echo ready; exec sleep 300' tfhive-sup "+dir+" evil worker:0")

	st := tfhive(t, s.f.Env(), s.f.Dir, fleetArgs(s.f, "status")...)
	wantCode(t, st, 0)
	rows := rowsOf(st.stdout, "h1")
	if len(rows) != 2 || rows[0][5] != "claimed" || rows[1][5] != "blocked" || !strings.Contains(rows[1][6], "is a symbolic link owned by "+s.mallory.Name) {
		t.Fatalf("status of a flooded claims dir: %q\n%s", rows, st.stdout)
	}
	args, _ := runArgs(t, s.f, "--workers", "1", "--", "true")
	r := tfhive(t, s.f.Env(), s.f.Dir, args...)
	wantCode(t, r, 3)

	// 16,385 names that could be claims: more than a probe lists.
	s.mallorySh(t, "cd "+dir+" && seq 100000 116384 | sed 's/^/tfhive-claim.port-/; s/$/.lock/' | xargs touch")
	st = tfhive(t, s.f.Env(), s.f.Dir, fleetArgs(s.f, "status")...)
	wantCode(t, st, 4)
	wantContains(t, "status", st.stdout+st.stderr, "claims dir "+dir+" holds more than 16384 tfhive-claim lock files")
	for _, row := range rowsOf(st.stdout, "h1") {
		if row[5] == "free" {
			t.Errorf("a host whose claims could not be read shows free GPUs:\n%s", st.stdout)
		}
	}
	r = tfhive(t, s.f.Env(), s.f.Dir, args...)
	wantCode(t, r, 4)
}

// Ports that nothing listens on are never said to listen: one whose lock
// mallory holds by hand and one whose lock file is her FIFO leave a
// two-port range empty, and the error names each, with her name, and
// counts no port as listening.
func TestHostilePortLocks(t *testing.T) {
	s := newSharedHost(t)
	held, fifo := s.lockFile("port-41001"), s.lockFile("port-41002")
	s.mallorySh(t, "mkfifo -m 644 "+fifo)
	background(t, s.h, s.mallory, "exec flock -n -o "+held+" sh -c 'echo ready; exec sleep 300'")
	args, _ := runArgs(t, s.f, "--workers", "1", "--gpus-per-worker", "0", "--port-range", "41001-41002", "--", "true")
	r := tfhive(t, s.f.Env(), s.f.Dir, args...)
	wantCode(t, r, 3)
	wantContains(t, "stderr", r.stderr,
		"--port-range 41001-41002 has 2 ports, 0 listening there, 1 claimed, 1 blocked and 0 given to other tasks",
		"port 41001 claimed: its lock is held by "+s.mallory.Name+", not by a tfhive run",
		"port 41002 blocked: "+fifo)
	if strings.Contains(r.stderr, "1 listening") || strings.Contains(r.stderr, "2 listening") {
		t.Errorf("a port nothing listens on was said to listen:\n%s", r.stderr)
	}
}

// swapLocks is mallory's loop: it makes the claim files named on its
// command line (hers, mode 0644, usable by all), says ready, then, as
// soon as /proc/locks shows one of them locked, unlinks it and makes a
// new one under the same name, counting the swaps in the file $SWAPS.
const swapLocks = `$| = 1;
sub make { my $p = shift; unlink $p; open(my $h, ">", $p) or die "$p: $!"; close $h; }
make($_) for @ARGV;
print "ready\n";
my $n = 0;
while (1) {
	my %held;
	open(my $l, "<", "/proc/locks") or die "/proc/locks: $!";
	while (<$l>) { my @w = split; $held{(split /:/, $w[5])[2]} = 1 if $w[1] eq "FLOCK"; }
	close $l;
	for my $p (@ARGV) {
		my @st = lstat $p;
		next unless @st && $held{$st[1]};
		make($p);
		$n++;
		open(my $c, ">", $ENV{SWAPS}) or die; print $c "$n\n"; close $c;
	}
	select(undef, undef, undef, 0.002);
}`

// Mallory's own lock files, unlinked and made again as soon as they are
// locked: a run that locks the new file must still never get a GPU or a
// port another run holds. Each trial starts two of alice's runs at once
// for both GPUs (and ports of a range of 4, whose files mallory made
// too), --wait so that both run; no GPU and no address may be used by
// both at the same time.
func TestHostileSwappedLockFiles(t *testing.T) {
	s := newSharedHost(t)
	var files []string
	for _, u := range s.uuids {
		files = append(files, s.lockFile("gpu-"+u))
	}
	for p := 2300; p <= 2303; p++ {
		files = append(files, s.lockFile("port-"+itoa(p)))
	}
	swaps := filepath.Join(s.h.ClaimsPath(), "mallory-swaps")
	background(t, s.h, s.mallory, "SWAPS="+swaps+" exec perl -e '"+swapLocks+"' "+strings.Join(files, " "))

	type use struct {
		run        string
		start, end int64
	}
	doubled := 0
	for trial := range 10 {
		results := make([]result, 2)
		var wg sync.WaitGroup
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				args, _ := runArgs(t, s.f, "--name", fmt.Sprintf("swap-%d-%d", trial, i), "--workers", "2", "--port-range", "2300-2303",
					"--wait", "60s", "--", "sh", "-c", usageScript, "sh", "1")
				args[2] = s.aliceHosts
				results[i] = tfhive(t, s.f.Env(), s.f.Dir, args...)
			}()
		}
		wg.Wait()
		uses := map[string][]use{}
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
				u := use{run: f[0], start: atoi64(f[3]), end: atoi64(f[4])}
				var tc struct {
					Cluster map[string][]string
					Task    struct {
						Type  string
						Index int
					}
				}
				if err := json.Unmarshal([]byte(f[5]), &tc); err != nil {
					t.Fatalf("trial %d run %d: TF_CONFIG %q: %v", trial, i, f[5], err)
				}
				for _, key := range []string{"gpu " + strings.TrimPrefix(f[2], "gpus="), "address " + tc.Cluster[tc.Task.Type][tc.Task.Index]} {
					for _, o := range uses[key] {
						if o.run != u.run && u.start < o.end && o.start < u.end {
							t.Errorf("trial %d: %s held by %s and %s at the same time", trial, key, o.run, u.run)
							doubled++
						}
					}
					uses[key] = append(uses[key], u)
				}
			}
			if n != 2 {
				t.Errorf("trial %d run %d: %d tasks reported their usage, want 2:\n%s%s", trial, i, n, r.stdout, r.stderr)
			}
		}
	}
	if doubled > 0 {
		t.Errorf("%d GPUs or addresses double-booked in 10 trials", doubled)
	}
	// The attack took place: mallory swapped files that were locked.
	data, _ := os.ReadFile(filepath.Join(s.h.ClaimsDir(), "mallory-swaps"))
	if n := atoi(strings.TrimSpace(string(data))); n == 0 {
		t.Error("mallory never swapped a locked file: the trials proved nothing")
	} else {
		t.Logf("mallory swapped %d locked files", n)
	}
}

// sharedDir is a directory like /tmp: root's, world-writable and sticky,
// where alice, mallory and root all may work.
func sharedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tfhive-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777|os.ModeSticky)
	return dir
}

// A log dir that mallory prepared in a shared directory is refused
// before any host is contacted, exit 2, in one line naming the path and
// its owner; nothing is written there, and the files her links lead to
// stay as they were. The trap: tfhive-runs/exp1 a link to an empty
// directory of hers, where links to the victim's files appear as soon
// as the run writes its plan there (or, the other way, a tfhive-runs of
// her own, where she could put them later).
func TestHostilePlantedLogDir(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	s := newSharedHost(t)
	for _, tc := range []struct {
		name, plant, want string
	}{
		{"a link to her directory", `mkdir -m 777 tfhive-runs trap && ln -s "$PWD/trap" tfhive-runs/exp1 && echo ready &&
			while [ ! -e trap/plan.json ]; do sleep 0.01; done &&
			for f in worker-0.log worker-1.log summary.json gpu-usage.csv; do ln -s "$1" trap/$f; done`,
			"tfhive-runs/exp1 is a symbolic link owned by " + s.mallory.Name},
		{"a directory of hers", `mkdir -m 777 tfhive-runs && echo ready && exec sleep 300`,
			"tfhive-runs is owned by " + s.mallory.Name + ", not by you or root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shared := sharedDir(t)
			precious := filepath.Join(sharedDir(t), "precious")
			os.WriteFile(precious, []byte("root's own\n"), 0o644)
			plant := s.mallory.Command("/bin/sh", "-c", tc.plant, "sh", precious)
			plant.Dir = shared
			plant.SysProcAttr.Setpgid = true
			out, _ := plant.StdoutPipe()
			if err := plant.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { syscall.Kill(-plant.Process.Pid, syscall.SIGKILL); plant.Wait() })
			if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
				t.Fatalf("mallory's plant: %q", line)
			}
			calls := s.h.SMICalls()
			// Root, the strongest victim: it may write anywhere.
			r := tfhive(t, s.f.Env(), shared, fleetArgs(s.f, "run", "--name", "exp1", "--workers", "2", "--sample", "100ms", "--",
				"sh", "-c", "echo overwritten by $TFHIVE_TASK_INDEX")...)
			want := "tfhive: error: log dir tfhive-runs/exp1 refused: " + tc.want + "\n"
			if r.code != 2 || r.stderr != want {
				t.Errorf("exit %d, stderr %q; want 2, %q", r.code, r.stderr, want)
			}
			if data, _ := os.ReadFile(precious); string(data) != "root's own\n" {
				t.Errorf("the file mallory's link leads to was written: %q", data)
			}
			if entries, _ := os.ReadDir(filepath.Join(shared, "tfhive-runs")); tc.name != "a link to her directory" && len(entries) != 0 {
				t.Errorf("files written in mallory's tfhive-runs: %v", entries)
			}
			if entries, _ := os.ReadDir(filepath.Join(shared, "trap")); len(entries) != 0 {
				t.Errorf("files written in mallory's trap: %v", entries)
			}
			if n := s.h.SMICalls(); n != calls {
				t.Errorf("the host was probed %d times although the log dir was refused", n-calls)
			}
		})
	}
}
