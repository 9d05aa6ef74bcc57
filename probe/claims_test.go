package probe

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/claim"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote/shscript"
)

// runClaimsScript runs the claims part of the probe script against dir and
// cuts its output as the probe does.
func runClaimsScript(t *testing.T, dir string) claimsSection {
	t.Helper()
	return runClaimsScriptMax(t, dir, MaxLockFiles)
}

// runClaimsScriptMax is runClaimsScript listing at most max lock files.
func runClaimsScriptMax(t *testing.T, dir string, max int) claimsSection {
	t.Helper()
	return runClaimsScriptCaps(t, dir, strconv.Itoa(max), strconv.Itoa(MaxBookingFiles))
}

// runClaimsScriptCaps runs claims.sh on dir with at most cmax lock files
// and rmax reservation files listed.
func runClaimsScriptCaps(t *testing.T, dir, cmax, rmax string) claimsSection {
	t.Helper()
	script := exec.Command("sh", "-c", shscript.LoadOneLine(scripts, "scripts/claims.sh", "scripts/runs.sh").With(shscript.Set("runs", "0"), shscript.Set("use", "1"), shscript.Set("t", "5"), shscript.Set("cmax", cmax), shscript.Set("rmax", rmax)))
	script.Env = append(os.Environ(), "TFHIVE_CLAIMS_DIR="+dir)
	raw, err := script.Output()
	if err != nil {
		t.Fatal(err)
	}
	po, err := splitProbeOutput([]byte(markSMI + " 0\n" + markPS + "\n" + markTCP + "\n" + markNIC + "\n" + string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	return po.claims
}

// hold starts a holder the way a supervisor's claim stage does: one flock
// per lock file, each holding its lock while its command runs, the last
// command labelled with the run, task and claims.
func hold(t *testing.T, dir string, label string, files ...string) *exec.Cmd {
	t.Helper()
	script := ""
	chain := ""
	for i, f := range files {
		script += "exec " + string(rune('4'+i)) + "<\"$1/" + f + "\"; "
		chain += "flock -n -o /proc/self/fd/" + string(rune('4'+i)) + " "
	}
	script += "exec " + chain + "bash --norc -c 'echo held; exec sleep 60' " + label
	holder := exec.Command("bash", "-c", script, "sh", dir)
	// The whole chain goes at cleanup: each flock holds its own lock.
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-holder.Process.Pid, syscall.SIGKILL); holder.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "held\n" {
		t.Fatalf("holder did not take the locks: %q", line)
	}
	return holder
}

func requireFlock(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("flock (util-linux) is required in CI")
		}
		t.Skip("flock not installed")
	}
}

// TestClaimsFromLiveHolders: a claim is a lock a live process holds; its
// user is the process's, its label the holder's own command line. The
// text of the lock files means nothing.
func TestClaimsFromLiveHolders(t *testing.T) {
	requireFlock(t)
	dir := t.TempDir()
	for _, name := range []string{"gpu-GPU-aaaa", "port-2223", "gpu-GPU-bbbb"} {
		// Forged content: ignored.
		os.WriteFile(filepath.Join(dir, claim.FilePrefix+name+claim.FileSuffix), []byte("run=evil user=root pgid=1\n"), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("ignored"), 0o644)
	hold(t, dir, claim.HolderMarker+" "+dir+" r1 worker:0 gpu:1:GPU-aaaa,port:2223", claim.FilePrefix+"gpu-GPU-aaaa.lock", claim.FilePrefix+"port-2223.lock")
	// A process holding a lock file with no tfhive label: held, label unknown.
	hold(t, dir, "whatever", claim.FilePrefix+"gpu-GPU-bbbb.lock")

	me := currentUserName(t)
	got := parseClaims(runClaimsScript(t, dir), map[string]int{"GPU-aaaa": 1, "GPU-bbbb": 0}, time.Now())
	if len(got) != 3 {
		t.Fatalf("claims %+v, want 3", got)
	}
	want := []inventory.Claim{
		{Kind: "gpu", ID: 0, UUID: "GPU-bbbb", User: me},
		{Kind: "gpu", ID: 1, UUID: "GPU-aaaa", RunID: "r1", Task: "worker:0", User: me},
		{Kind: "port", ID: 2223, RunID: "r1", Task: "worker:0", User: me},
	}
	for i, w := range want {
		g := got[i]
		if g.Kind != w.Kind || g.ID != w.ID || g.UUID != w.UUID || g.RunID != w.RunID || g.Task != w.Task || g.User != w.User || g.PID == 0 || g.Blocked != "" {
			t.Errorf("claim %d: %+v, want %+v", i, g, w)
		}
		if time.Since(g.Since) > time.Minute {
			t.Errorf("claim %d since %v: from the holder's start time", i, g.Since)
		}
	}
}

// A held lock file deleted under its holder still counts: the holder's
// label names its claims, so a new file for the same GPU is not free.
func TestClaimsSurviveDeletedLockFile(t *testing.T) {
	requireFlock(t)
	dir := t.TempDir()
	f := filepath.Join(dir, claim.FilePrefix+"gpu-GPU-aaaa.lock")
	os.WriteFile(f, nil, 0o644)
	// Another dir's holder on the same kernel is not this host's claim.
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, claim.FilePrefix+"gpu-GPU-aaaa.lock"), nil, 0o644)
	hold(t, other, claim.HolderMarker+" "+other+" r2 worker:0 gpu:1:GPU-aaaa", claim.FilePrefix+"gpu-GPU-aaaa.lock")
	hold(t, dir, claim.HolderMarker+" "+dir+" r1 worker:0 gpu:1:GPU-aaaa", claim.FilePrefix+"gpu-GPU-aaaa.lock")
	os.Remove(f)
	got := parseClaims(runClaimsScript(t, dir), map[string]int{"GPU-aaaa": 1}, time.Now())
	if len(got) != 1 || got[0].ID != 1 || got[0].RunID != "r1" {
		t.Fatalf("claims %+v, want gpu 1 held by r1", got)
	}
}

// Stale files (nobody holds them) claim nothing; files tfhive cannot use
// (a symlink, a FIFO, an unreadable file) block their GPU or port, with
// their owner.
func TestClaimsStaleAndBlocked(t *testing.T) {
	requireFlock(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, claim.FilePrefix+"gpu-GPU-aaaa.lock"), []byte("run=old"), 0o644)
	os.Symlink("/etc/passwd", filepath.Join(dir, claim.FilePrefix+"gpu-GPU-bbbb.lock"))
	exec.Command("mkfifo", filepath.Join(dir, claim.FilePrefix+"port-2222.lock")).Run()
	got := parseClaims(runClaimsScript(t, dir), map[string]int{"GPU-aaaa": 0, "GPU-bbbb": 1}, time.Now())
	var blocked []string
	for _, c := range got {
		if c.Blocked == "" {
			t.Errorf("claim %+v: a stale file claims nothing", c)
			continue
		}
		blocked = append(blocked, c.Kind+" "+c.Blocked)
	}
	if len(blocked) != 2 || !strings.Contains(blocked[0], "gpu "+dir+"/"+claim.FilePrefix+"gpu-GPU-bbbb.lock is a symbolic link owned by") ||
		!strings.Contains(blocked[1], "port "+dir+"/"+claim.FilePrefix+"port-2222.lock is not a regular file") {
		t.Errorf("blocked: %q", blocked)
	}
}

func currentUserName(t *testing.T) string {
	out, err := exec.Command("id", "-un").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// A claims dir of any size is read without an argument list: 30,000
// long names beside them (a glob passed to stat failed, and every GPU
// showed free) leave a held GPU held and a planted symlink blocked.
// Names that cannot be claims are not listed at all.
func TestClaimsFloodedDir(t *testing.T) {
	requireFlock(t)
	dir := t.TempDir()
	junk := strings.Repeat("x", 200)
	for i := range 30000 {
		f, err := os.Create(filepath.Join(dir, claim.FilePrefix+junk+strconv.Itoa(i)+claim.FileSuffix))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	os.WriteFile(filepath.Join(dir, claim.FilePrefix+"gpu-GPU-aaaa.lock"), nil, 0o644)
	os.Symlink("/etc/passwd", filepath.Join(dir, claim.FilePrefix+"gpu-GPU-bbbb.lock"))
	hold(t, dir, "tfhive-sup-like label", claim.FilePrefix+"gpu-GPU-aaaa.lock")
	s := runClaimsScript(t, dir)
	if s.overflow || len(s.files) > 1000 {
		t.Fatalf("the junk names were listed (%d bytes, overflow %v)", len(s.files), s.overflow)
	}
	got := parseClaims(s, map[string]int{"GPU-aaaa": 0, "GPU-bbbb": 1}, time.Now())
	if len(got) != 2 || got[0].ID != 0 || got[0].PID == 0 || got[0].Blocked != "" ||
		got[1].ID != 1 || !strings.Contains(got[1].Blocked, "gpu-GPU-bbbb.lock is a symbolic link") {
		t.Fatalf("claims %+v, want GPU 0 held and GPU 1 blocked", got)
	}
}

// Past the cap on lock files listed, the list ends with the overflow
// mark: the host's claims are unknown (probeHost fails it closed).
func TestClaimsOverflow(t *testing.T) {
	dir := t.TempDir()
	for i := range 11 {
		os.WriteFile(filepath.Join(dir, claim.FilePrefix+"port-"+strconv.Itoa(30000+i)+claim.FileSuffix), nil, 0o644)
	}
	if s := runClaimsScriptMax(t, dir, 11); s.overflow || strings.Count(string(s.files), "\nF ") != 11 {
		t.Errorf("11 files, cap 11: overflow %v, files %q", s.overflow, s.files)
	}
	if s := runClaimsScriptMax(t, dir, 10); !s.overflow || strings.Count(string(s.files), "\nF ") != 10 {
		t.Errorf("11 files, cap 10: overflow %v, files %q", s.overflow, s.files)
	}
}

// A holder's claims are its label's, not its files' names: the locked
// inode linked again under another claim's name (as the owner of a lock
// file may) makes that claim held by the holder's user, label unknown,
// never the run's; the label's own claim keeps the file it locked.
func TestClaimsByLabelNotByName(t *testing.T) {
	requireFlock(t)
	dir := t.TempDir()
	f := filepath.Join(dir, claim.FilePrefix+"gpu-GPU-aaaa.lock")
	os.WriteFile(f, nil, 0o644)
	hold(t, dir, claim.HolderMarker+" "+dir+" r1 worker:0 gpu:1:GPU-aaaa", claim.FilePrefix+"gpu-GPU-aaaa.lock")
	if err := os.Link(f, filepath.Join(dir, claim.FilePrefix+"port-2300.lock")); err != nil {
		t.Fatal(err)
	}
	got := parseClaims(runClaimsScript(t, dir), map[string]int{"GPU-aaaa": 1}, time.Now())
	if len(got) != 2 {
		t.Fatalf("claims %+v, want 2", got)
	}
	if g := got[0]; g.Kind != "gpu" || g.ID != 1 || g.RunID != "r1" || g.Task != "worker:0" || g.File != f {
		t.Errorf("gpu claim %+v, want r1's, from %s", g, f)
	}
	if g := got[1]; g.Kind != "port" || g.ID != 2300 || g.RunID != "" || g.User != currentUserName(t) {
		t.Errorf("port claim %+v, want held by %s, label unknown", g, currentUserName(t))
	}
}
