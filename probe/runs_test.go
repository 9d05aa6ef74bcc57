package probe

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/claim"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote/shscript"
	"github.com/tfhive/tfhive/probe/sshtest"
)

// keptTask makes a task's files in a run directory as a kept supervisor
// leaves them: pid (SUP, then SUP LOGGER LOGGER once started), status
// (blank, then the code), control FIFO.
func keptTask(t *testing.T, dir, name, pid, rc string) string {
	t.Helper()
	base := filepath.Join(dir, name)
	if err := syscall.Mkfifo(base+".ctl", 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(base+".pid", []byte(pid+"                    \n"), 0o644)
	os.WriteFile(base+".rc", []byte(rc+"                               \n"), 0o644)
	return base + ".ctl"
}

// feed holds a shared lock on a descriptor of its own on the FIFO, as a
// session's feeder does (launcher/supervisor/scripts/rundir.sh).
func feed(t *testing.T, ctl string) {
	t.Helper()
	c := exec.Command("bash", "-c", `exec 8<>"$1"; flock -s 8; echo fed; read -r _`, "sh", ctl)
	in, _ := c.StdinPipe()
	out, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); c.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "fed\n" {
		t.Fatalf("feeder did not lock: %q", line)
	}
}

// runRunsScript runs the claims and runs parts of the probe with home as
// HOME and dir as the claims dir.
func runRunsScript(t *testing.T, home, dir string) *inventory.KeptRuns {
	t.Helper()
	script := exec.Command("sh", "-c", shscript.LoadOneLine(scripts, "scripts/claims.sh", "scripts/runs.sh").With(shscript.Set("runs", "60"), shscript.Set("use", "1"), shscript.Set("t", "5"), shscript.Set("cmax", "100"), shscript.Set("rmax", "100")))
	script.Env = append(os.Environ(), "TFHIVE_CLAIMS_DIR="+dir, "HOME="+home)
	raw, err := script.Output()
	if err != nil {
		t.Fatal(err)
	}
	po, err := splitProbeOutput([]byte(markSMI + " 0\n" + markPS + "\n" + markTCP + "\n" + markNIC + "\n" + string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	return parseRuns(po.runs, po.claims.locks)
}

func mkdirs(t *testing.T, mode os.FileMode, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.Mkdir(d, mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, mode) // past the umask
	}
}

// What the user's own run directories say of the runs holding claims:
// a task started or not, ended, followed by a session (its feeder's lock)
// and heard from lately; a run whose directory is not the user's own with
// mode 0700, or a symlink, says nothing.
func TestKeptRuns(t *testing.T) {
	requireFlock(t)
	home, dir := t.TempDir(), t.TempDir()
	runs := filepath.Join(home, ".tfhive", sshtest.LocalRunsKey())
	mkdirs(t, 0o700, filepath.Join(home, ".tfhive"), runs, filepath.Join(runs, "r1"), filepath.Join(runs, "r2"))
	// Another machine's runs in a home shared with it (NFS), one of them
	// holding a claim here under the same run id: none of its tasks counts.
	elsewhere := filepath.Join(home, ".tfhive", "runs-0123456789abcdef0123456789abcdef")
	mkdirs(t, 0o700, elsewhere, filepath.Join(elsewhere, "r2"))
	keptTask(t, filepath.Join(elsewhere, "r2"), "worker-7", "120 121 122", "")
	mkdirs(t, 0o755, filepath.Join(runs, "open"))
	other := t.TempDir()
	os.Chmod(other, 0o700)
	if err := os.Symlink(other, filepath.Join(runs, "link")); err != nil {
		t.Fatal(err)
	}
	ctl := keptTask(t, filepath.Join(runs, "r1"), "worker-0", "101 102 103", "")
	keptTask(t, filepath.Join(runs, "r1"), "worker-1", "104 105 106", "0")
	keptTask(t, filepath.Join(runs, "r2"), "ps-0", "107", "")
	keptTask(t, filepath.Join(runs, "open"), "worker-0", "108 109 110", "")
	keptTask(t, other, "worker-0", "111 112 113", "")
	// A run holding no claims here is not looked at.
	mkdirs(t, 0o700, filepath.Join(runs, "r3"))
	keptTask(t, filepath.Join(runs, "r3"), "worker-0", "114 115 116", "")
	// worker:0's GPUs idle past the warning since then (idle-watch.sh);
	// ps:0's file empty: busy again.
	os.WriteFile(filepath.Join(runs, "r1", "worker-0.idle"), []byte("1700000000\n"), 0o600)
	os.WriteFile(filepath.Join(runs, "r2", "ps-0.idle"), nil, 0o600)
	feed(t, ctl)
	for _, r := range []string{"r1", "r2", "open", "link"} {
		f := claim.FilePrefix + "port-" + map[string]string{"r1": "2001", "r2": "2002", "open": "2003", "link": "2004"}[r] + claim.FileSuffix
		os.WriteFile(filepath.Join(dir, f), nil, 0o644)
		hold(t, dir, claim.HolderMarker+" "+dir+" "+r+" worker:0 port:2001", f)
	}

	got := runRunsScript(t, home, dir)
	if got == nil || got.UID != os.Geteuid() {
		t.Fatalf("kept runs %+v, want the user's uid %d", got, os.Geteuid())
	}
	if d := time.Now().Unix() - got.Now; d < 0 || d > 60 {
		t.Errorf("the host's clock %d, now %d", got.Now, time.Now().Unix())
	}
	want := map[string]inventory.KeptTask{
		"r1 worker:0": {RunID: "r1", Task: "worker:0", Started: true, Followed: true, Fresh: true, IdleSince: 1700000000},
		"r1 worker:1": {RunID: "r1", Task: "worker:1", Started: true, Ended: true, Fresh: true},
		"r2 ps:0":     {RunID: "r2", Task: "ps:0", Fresh: true},
	}
	if len(got.Tasks) != len(want) {
		t.Errorf("tasks %+v, want %d", got.Tasks, len(want))
	}
	for _, k := range got.Tasks {
		if w, ok := want[k.RunID+" "+k.Task]; !ok || k != w {
			t.Errorf("task %+v, want %+v", k, w)
		}
	}

	// Heard from more than the window ago: not fresh.
	old := time.Now().Add(-2 * time.Minute)
	os.Chtimes(ctl, old, old)
	for _, k := range runRunsScript(t, home, dir).Tasks {
		if k.Task == "worker:0" && k.RunID == "r1" && (k.Fresh || !k.Followed) {
			t.Errorf("task %+v: followed, not fresh", k)
		}
	}

	// ~/.tfhive open to others: nothing in it counts.
	os.Chmod(filepath.Join(home, ".tfhive"), 0o755)
	if got := runRunsScript(t, home, dir); got != nil && len(got.Tasks) > 0 {
		t.Errorf("~/.tfhive with mode 0755: tasks %+v", got.Tasks)
	}
}

func TestKeptFile(t *testing.T) {
	for _, tt := range []struct {
		path, run, task, ext string
		ok                   bool
	}{
		{".tfhive/runs-k1/r1/worker-0.ctl", "r1", "worker:0", "ctl", true},
		{".tfhive/runs-host-gpu01/2024-01-01.x_y/ps-12.rc", "2024-01-01.x_y", "ps:12", "rc", true},
		{".tfhive/runs-k1/r1/worker-x.rc", "", "", "", false},
		{".tfhive/runs-k1/../worker-0.rc", "", "", "", false},
		{".tfhive/runs-k1/r1/sub/worker-0.rc", "", "", "", false},
		{".tfhive/other/r1/worker-0.rc", "", "", "", false},
		{".tfhive/runs/r1/worker-0.rc", "", "", "", false},
		{".tfhive/runs-/r1/worker-0.rc", "", "", "", false},
		{".tfhive/runs-k1/r1/Worker-0.rc", "", "", "", false},
		{".tfhive/runs-k1/r1/keeper.gen", "", "", "", false},
	} {
		runs, run, task, ext, ok := keptFile(tt.path)
		if run != tt.run || task != tt.task || ext != tt.ext || ok != tt.ok || ok && !strings.HasPrefix(runs, "runs-") {
			t.Errorf("keptFile(%q) = %q %q %q %q %v", tt.path, runs, run, task, ext, ok)
		}
	}
}

// The utilisation rows close runs.sh's section, behind their own marker:
// a line the section's own parser never sees.
func TestCutUtil(t *testing.T) {
	section := []byte("u 1000\nd .tfhive\n@@tfhive-util\n0, GPU-aaa, 40, 100\nnvidia-smi: some error\n1, GPU-bbb, 60, 200\n")
	rest, use := cutUtil(section)
	if string(rest) != "u 1000\nd .tfhive\n" {
		t.Errorf("rest %q", rest)
	}
	if len(use) != 2 || use[0].UUID != "GPU-aaa" || use[1].Util != 60 || use[1].MemMiB != 200 {
		t.Errorf("use %+v", use)
	}
	if rest, use := cutUtil([]byte("u 1000\n")); string(rest) != "u 1000\n" || use != nil {
		t.Errorf("no marker: %q %+v", rest, use)
	}
}
