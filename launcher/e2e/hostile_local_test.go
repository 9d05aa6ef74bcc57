package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// The launch machine shared with a hostile colleague: mallory is another
// local user of the machine tfhive runs on (the test runner, root, is
// her victim), and the lab's scratch directory, sticky and writable by
// all as /tmp is, is where both launch from.

// sharedScratch makes a lab's /scratch under the shared fleet's
// directory (which other users can reach): the test runner's, mode 1777 (sticky, writable by all).
func sharedScratch(t *testing.T, f *sshtest.Fleet) string {
	t.Helper()
	dir := filepath.Join(f.Dir, "scratch")
	mkdir(t, dir, 0o777|os.ModeSticky)
	return dir
}

// asUser runs a shell command as u on this machine, in dir.
func asUser(t *testing.T, u *sshtest.User, dir, script string) string {
	t.Helper()
	cmd := u.Command("/bin/sh", "-c", script)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as %s: %s: %v\n%s", u.Name, script, err, out)
	}
	return string(out)
}

// A hosts.yaml that another user planted in a shared launch directory is
// not read: before the fix her `defaults: setup:` ran as the victim. It
// is refused, exit 2, naming its owner, before any host is contacted;
// named on the command line it is read. The victim's own hosts.yaml in
// that directory is refused too (anyone may write next to it), and in a
// directory of her own it is read, but not the ssh_config it names when
// another user wrote that.
func TestHostilePlantedHostsFile(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.StartShared(t, sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml", AliveInterval: 1})
	h := f.Host("h1")
	mallory := sshtest.AddUser(t, "mallory")
	scratch := sharedScratch(t, f)
	pwned := filepath.Join(h.Home(), "pwned.txt")
	asUser(t, mallory, scratch, `cat > hosts.yaml <<'EOF'
ssh_config: `+f.SSHConfig+`
defaults:
  setup: "id > ~/pwned.txt"
hosts:
  - h1
EOF`)
	calls := h.SMICalls()
	r := tfhive(t, f.Env(), scratch, "run", "--grace", "2s", "--workers", "1", "--gpus-per-worker", "0", "--", "true")
	if _, err := os.Stat(pwned); err == nil {
		t.Errorf("her setup ran as the victim: %s", readFile(t, pwned))
	}
	wantCode(t, r, 2)
	wantContains(t, "run's stderr", r.stderr,
		"tfhive: error: hosts file ./hosts.yaml refused: it is owned by "+mallory.Name+", not by you or root\n",
		"tfhive: hint: ", "--hosts ./hosts.yaml reads it anyway")
	if n := h.SMICalls(); n != calls {
		t.Errorf("the host was probed (%d nvidia-smi calls) before the refusal", n-calls)
	}
	if _, err := os.Stat(filepath.Join(scratch, "tfhive-runs")); err == nil {
		t.Errorf("a log dir was made for a refused run")
	}
	st := tfhive(t, f.Env(), scratch, "status")
	wantCode(t, st, 2)
	wantContains(t, "status", st.stderr, "hosts file ./hosts.yaml refused: it is owned by "+mallory.Name)
	// -H takes its settings from the hosts file that would have given
	// the hosts: not from hers.
	hflag := tfhive(t, f.Env(), scratch, "run", "-H", "h1", "--ssh-config", f.SSHConfig, "--grace", "2s",
		"--workers", "1", "--gpus-per-worker", "0", "--", "true")
	if _, err := os.Stat(pwned); err == nil {
		t.Errorf("her setup ran as the victim's -H run: %s", readFile(t, pwned))
	}
	wantCode(t, hflag, 2)
	wantContains(t, "run -H", hflag.stderr, "hosts file ./hosts.yaml refused: it is owned by "+mallory.Name)

	// Named on the command line, it is the user's choice.
	named := tfhive(t, f.Env(), scratch, "status", "--hosts", "./hosts.yaml")
	wantCode(t, named, 0)
	if len(rowsOf(named.stdout, "h1")) != 2 {
		t.Errorf("status --hosts ./hosts.yaml:\n%s", named.stdout)
	}

	// The victim's own hosts.yaml in the shared directory: refused too.
	asUser(t, mallory, scratch, "rm hosts.yaml")
	if err := os.WriteFile(filepath.Join(scratch, "hosts.yaml"), []byte("ssh_config: "+f.SSHConfig+"\nhosts: [h1]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	own := tfhive(t, f.Env(), scratch, "status")
	wantCode(t, own, 2)
	wantContains(t, "status", own.stderr, "hosts file ./hosts.yaml refused: its directory "+scratch+" is writable by group and others")

	// In a directory of her own, her file is read; the ssh_config it
	// names, which mallory wrote, is not.
	mine := filepath.Join(f.Dir, "mine")
	mkdir(t, mine, 0o755)
	theirs := filepath.Join(scratch, "lab_ssh_config")
	asUser(t, mallory, scratch, "cat > lab_ssh_config <<'EOF'\n"+readFile(t, f.SSHConfig)+"EOF")
	os.WriteFile(filepath.Join(mine, "hosts.yaml"), []byte("ssh_config: "+theirs+"\nhosts: [h1]\n"), 0o644)
	cfg := tfhive(t, f.Env(), mine, "status")
	wantCode(t, cfg, 2)
	wantContains(t, "status", cfg.stderr,
		"tfhive: error: hosts.yaml:1: ssh_config "+theirs+" refused: it is owned by "+mallory.Name+", not by you or root\n",
		"--ssh-config "+theirs+" reads it anyway")
	os.WriteFile(filepath.Join(mine, "hosts.yaml"), []byte("ssh_config: "+f.SSHConfig+"\nhosts: [h1]\n"), 0o644)
	ok := tfhive(t, f.Env(), mine, "status")
	wantCode(t, ok, 0)
	if ok.stderr != "tfhive: hosts from ./hosts.yaml\n" || len(rowsOf(ok.stdout, "h1")) != 2 {
		t.Errorf("status with a hosts.yaml of one's own:\n%s\n%s", ok.stdout, ok.stderr)
	}
	if strings.Contains(ok.stdout+ok.stderr, "refused") {
		t.Errorf("refused: %s", ok.stderr)
	}
}

// holdAs starts a long-lived command as u on this machine that prints
// "ready" first; it is killed at the end of the test.
func holdAs(t *testing.T, u *sshtest.User, script string) {
	t.Helper()
	cmd := u.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr.Setpgid = true
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("as %s: %s: %q", u.Name, script, line)
	}
}

// tfhiveWithin is tfhive, killed after within; ok is false then.
func tfhiveWithin(t *testing.T, within time.Duration, env []string, dir string, args ...string) (r result, ok bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cmd := exec.CommandContext(ctx, tfhiveBin, args...)
	cmd.Env, cmd.Dir = env, dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r = result{stdout: out.String(), stderr: errb.String()}
	if ee, isExit := err.(*exec.ExitError); isExit {
		r.code = ee.ExitCode()
	}
	return r, ctx.Err() == nil
}

// Another user cannot hold a run's keeper.lock, nor have her lock taken
// for the run's: before the fix, `flock -x …/keeper.lock sleep 300` by
// her made wait, attach and logs -f hang and runs show an ended run as
// running, and `flock -s` on a sweep's made its resume fail with "sweep
// sw1 is running". The lock is made 0600, so that she cannot open it;
// one she opened while it was 0644 (an older tfhive's) and holds does
// not count, and a sweep takes a fresh one.
func TestHostileRunLock(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.StartShared(t, sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml", AliveInterval: 1})
	mallory := sshtest.AddUser(t, "mallory")
	scratch := sharedScratch(t, f)
	env := f.Env()
	d := tfhive(t, env, scratch, fleetArgs(f, "run", "--detach", "--name", "v1", "--grace", "2s", "--workers", "1",
		"--gpus-per-worker", "0", "--", "true")...)
	wantCode(t, d, 0)
	wantCode(t, tfhive(t, env, scratch, "wait", "v1"), 0)
	lock := filepath.Join(scratch, "tfhive-runs", "v1", "keeper.lock")
	if fi, err := os.Stat(lock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("keeper.lock: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	if out, err := mallory.Command("flock", "-n", "-x", lock, "true").CombinedOutput(); err == nil {
		t.Errorf("%s could lock the run's keeper.lock", mallory.Name)
	} else if !strings.Contains(string(out), "Permission denied") {
		t.Errorf("her flock: %v: %s", err, out)
	}

	// The log dir is 0700 (rundir.DirMode): she cannot even reach it.
	for _, d := range []string{filepath.Dir(lock), filepath.Dir(filepath.Dir(lock))} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, mode %v; want 0700", d, err, fi.Mode().Perm())
		}
	}
	// An older tfhive's lock, 0644 in a 0755 log dir: she opened it in
	// time and holds it.
	os.Chmod(filepath.Dir(filepath.Dir(lock)), 0o755)
	os.Chmod(filepath.Dir(lock), 0o755)
	os.Chmod(lock, 0o644)
	holdAs(t, mallory, `exec flock -x `+lock+` sh -c 'echo ready; exec sleep 300'`)
	for _, args := range [][]string{{"wait", "v1"}, {"attach", "v1"}, {"logs", "-f", "v1"}} {
		r, ok := tfhiveWithin(t, 20*time.Second, env, scratch, args...)
		if !ok {
			t.Errorf("tfhive %s hung on her lock:\n%s", strings.Join(args, " "), r.stderr)
		} else if r.code != 0 {
			t.Errorf("tfhive %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	// A run whose keeper died before its summary: not running, whoever
	// holds its lock.
	os.Remove(filepath.Join(scratch, "tfhive-runs", "v1", "summary.json"))
	runs := tfhive(t, env, scratch, "runs")
	wantCode(t, runs, 0)
	if rows := rowsOf(runs.stdout, "v1"); len(rows) != 1 || !slices.Contains(rows[0], "unknown") {
		t.Errorf("runs: the dead run v1 is not unknown:\n%s", runs.stdout)
	}

	// A sweep whose lock she holds shared (an older tfhive's, 0644) is
	// resumed all the same.
	ok := filepath.Join(scratch, "ok")
	args := fleetArgs(f, "sweep", "--name", "sw1", "--grace", "2s", "--gpus-per-worker", "0", "--param", "x=1,2",
		"--", "sh", "-c", "[ {x} = 1 ] || [ -e "+ok+" ]")
	first := tfhive(t, env, scratch, args...)
	wantCode(t, first, 1)
	swLock := filepath.Join(scratch, "tfhive-runs", "sw1", "keeper.lock")
	os.Chmod(filepath.Dir(swLock), 0o755)
	os.Chmod(swLock, 0o644)
	holdAs(t, mallory, `exec flock -s `+swLock+` sh -c 'echo ready; exec sleep 300'`)
	os.WriteFile(ok, nil, 0o644)
	again, done := tfhiveWithin(t, 60*time.Second, env, scratch, args...)
	if !done || again.code != 0 {
		t.Fatalf("resume: exit %d (ended %v)\n%s", again.code, done, again.stderr)
	}
	wantContains(t, "resume", again.stderr, "1 of 2 trials to run (1 succeeded before)")
	if fi, err := os.Stat(swLock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the sweep's keeper.lock after the resume: %v, mode %v; want a fresh 0600 one", err, fi.Mode().Perm())
	}
	if w, ok := tfhiveWithin(t, 20*time.Second, env, scratch, "wait", "sw1"); !ok || w.code != 0 {
		t.Errorf("wait sw1: exit %d (ended %v)\n%s", w.code, ok, w.stderr)
	}
}

// A record another user wrote is never run without asking: before the
// fix, `tfhive rerun /scratch/her-run` ran her repro.json's setup as the
// victim. It is refused, exit 2, naming her, before any host is
// contacted; --trust runs it all the same. `runs` shows whose each run
// is when some are not yours.
func TestHostileRerunRecord(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.StartShared(t, sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml", AliveInterval: 1})
	h := f.Host("h1")
	mallory := sshtest.AddUser(t, "mallory")
	scratch := sharedScratch(t, f)
	env := f.Env()
	mine := filepath.Join(scratch, "mine")
	r := tfhive(t, env, scratch, fleetArgs(f, "run", "--log-dir", mine, "--grace", "2s", "--workers", "1",
		"--gpus-per-worker", "0", "--", "true")...)
	wantCode(t, r, 0)

	// Hers: the victim's record with a setup of her own, and a summary.
	repro := readJSON[map[string]any](t, mine, "repro.json")
	req := repro["request"].(map[string]any)
	req["setup"] = "id > ~/pwned.txt"
	repro["run_id"] = "her-run"
	data, err := json.Marshal(repro)
	if err != nil {
		t.Fatal(err)
	}
	summary := strings.Replace(readFile(t, filepath.Join(mine, "summary.json")), filepath.Base(mine), "her-run", 1)
	her := filepath.Join(scratch, "her-run")
	asUser(t, mallory, scratch, "mkdir her-run && cat > her-run/repro.json <<'EOF'\n"+string(data)+"\nEOF\n"+
		"cat > her-run/summary.json <<'EOF'\n"+summary+"EOF")

	// runs: whose each run is, when some are not yours.
	l := tfhive(t, env, scratch, "runs", "--log-root", scratch)
	wantCode(t, l, 0)
	if !strings.HasPrefix(l.stdout, "RUN      OWNER") {
		t.Errorf("runs --log-root %s: no OWNER column:\n%s", scratch, l.stdout)
	}
	if rows := rowsOf(l.stdout, "her-run"); len(rows) != 1 || rows[0][1] != mallory.Name {
		t.Errorf("runs: her-run is not shown as %s's:\n%s", mallory.Name, l.stdout)
	}
	if rows := rowsOf(l.stdout, "mine"); len(rows) != 1 || rows[0][1] != "you" {
		t.Errorf("runs: mine is not shown as yours:\n%s", l.stdout)
	}
	j := tfhive(t, env, scratch, "runs", "--log-root", scratch, "--json")
	wantCode(t, j, 0)
	var doc struct {
		Runs []map[string]any `json:"runs"`
	}
	if err := json.Unmarshal([]byte(j.stdout), &doc); err != nil {
		t.Fatalf("runs --json: %v\n%s", err, j.stdout)
	}
	owners := map[string]any{}
	for _, run := range doc.Runs {
		owners[run["run_id"].(string)] = run["owner"]
	}
	if owners["her-run"] != mallory.Name || owners["mine"] != nil {
		t.Errorf("runs --json: owners %v, want her-run %s's and mine without one\n%s", owners, mallory.Name, j.stdout)
	}

	// rerun of her record: refused.
	pwned := filepath.Join(h.Home(), "pwned.txt")
	calls := h.SMICalls()
	rr := tfhive(t, env, scratch, "rerun", her)
	if _, err := os.Stat(pwned); err == nil {
		t.Errorf("her setup ran as the victim: %s", readFile(t, pwned))
	}
	wantCode(t, rr, 2)
	wantContains(t, "rerun's stderr", rr.stderr,
		"tfhive: error: run her-run's record "+filepath.Join(her, "repro.json")+" refused: it is owned by "+mallory.Name+", not by you or root\n",
		"tfhive: hint: ", "tfhive rerun --trust "+her+" runs it anyway")
	if strings.Contains(rr.stderr, "as they were") {
		t.Errorf("the refused rerun said all was as it was:\n%s", rr.stderr)
	}
	if n := h.SMICalls(); n != calls {
		t.Errorf("the host was probed (%d nvidia-smi calls) before the refusal", n-calls)
	}

	// Trusted, it runs as it says (her setup too: the user asked).
	tr := tfhive(t, env, scratch, "rerun", "--trust", her)
	wantCode(t, tr, 0)
	wantContains(t, "rerun --trust's stderr", tr.stderr,
		"tfhive: rerun of her-run: --trust: its record "+filepath.Join(her, "repro.json")+" runs as you, though it is owned by "+mallory.Name+", not by you or root\n")
	if _, err := os.Stat(pwned); err != nil {
		t.Errorf("the trusted rerun did not run the record's setup: %v", err)
	}

	// Only your own runs: no OWNER column.
	own := tfhive(t, env, scratch, "runs")
	wantCode(t, own, 0)
	if strings.Contains(own.stdout, "OWNER") || len(strings.Split(strings.TrimSpace(own.stdout), "\n")) != 2 {
		t.Errorf("runs of your own:\n%s", own.stdout)
	}
}
