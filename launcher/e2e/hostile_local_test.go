package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
