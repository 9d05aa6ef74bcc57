package supervisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/remote/shscript"
	"github.com/tfhive/tfhive/probe/sshtest"
)

// rundir.sh's tfhive_rundir in a bash of its own, with HOME set: what it
// says (the directory, or why not) and whether it agreed.
func runDir(t *testing.T, home, run string, create bool) (string, bool) {
	t.Helper()
	c := "0"
	if create {
		c = "1"
	}
	script := shscript.Load(Scripts, "scripts/rundir.sh").Text() +
		"\nif tfhive_rundir \"$1\" \"$2\"; then printf '%s' \"$tfhive_rd\"; else printf '%s' \"$tfhive_why\"; exit 1; fi"
	cmd := exec.Command("bash", "--norc", "-c", script, "test", run, c)
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	out, err := cmd.Output()
	if _, failed := err.(*exec.ExitError); err != nil && !failed {
		t.Fatal(err)
	}
	return string(out), err == nil
}

// The run's directory and its parents are made 0700 when missing, and
// taken only when they are real directories of the user's own with mode
// 0700: anything else is refused, naming the path, and nothing is made or
// written through it.
func TestRunDir(t *testing.T) {
	const run = "20260101-000000-abcdef"
	for _, c := range []struct {
		name    string
		prepare func(t *testing.T, home, elsewhere string) // nil: a fresh HOME
		create  bool
		why     string // "" : taken
		path    string // the path named, under HOME
	}{
		{name: "made when missing", create: true},
		{name: "taken when there", prepare: func(t *testing.T, home, _ string) {
			mkdirs(t, filepath.Join(home, ".tfhive", hostRuns, run))
		}},
		{name: "no trace", why: "no trace of run " + run + " in ", path: ".tfhive"},
		{name: "runs a symbolic link", create: true, prepare: func(t *testing.T, home, elsewhere string) {
			mkdirs(t, filepath.Join(home, ".tfhive"))
			symlink(t, elsewhere, filepath.Join(home, ".tfhive", hostRuns))
		}, why: " is a symbolic link: tfhive keeps a run's files only in real directories of your own with mode 0700", path: ".tfhive/" + hostRuns},
		{name: "the run's directory a symbolic link", create: true, prepare: func(t *testing.T, home, elsewhere string) {
			mkdirs(t, filepath.Join(home, ".tfhive", hostRuns))
			symlink(t, elsewhere, filepath.Join(home, ".tfhive", hostRuns, run))
		}, why: " is a symbolic link", path: ".tfhive/" + hostRuns + "/" + run},
		{name: "a dangling symbolic link", create: true, prepare: func(t *testing.T, home, elsewhere string) {
			symlink(t, filepath.Join(elsewhere, "nothing"), filepath.Join(home, ".tfhive"))
		}, why: " is a symbolic link", path: ".tfhive"},
		{name: "mode 0755", create: true, prepare: func(t *testing.T, home, _ string) {
			mkdirs(t, filepath.Join(home, ".tfhive"))
			os.Chmod(filepath.Join(home, ".tfhive"), 0o755)
		}, why: " has mode 0755, not 0700", path: ".tfhive"},
		{name: "a file", create: true, prepare: func(t *testing.T, home, _ string) {
			mkdirs(t, filepath.Join(home, ".tfhive", hostRuns))
			os.WriteFile(filepath.Join(home, ".tfhive", hostRuns, run), nil, 0o600)
		}, why: " is not a directory", path: ".tfhive/" + hostRuns + "/" + run},
		{name: "another user's", create: true, prepare: func(t *testing.T, home, _ string) {
			if os.Geteuid() != 0 {
				t.Skip("giving a directory away needs root")
			}
			dir := filepath.Join(home, ".tfhive", hostRuns, run)
			mkdirs(t, dir)
			os.Chown(dir, 65534, 65534)
		}, why: " is owned by ", path: ".tfhive/" + hostRuns + "/" + run},
	} {
		t.Run(c.name, func(t *testing.T) {
			home, elsewhere := t.TempDir(), t.TempDir()
			if c.prepare != nil {
				c.prepare(t, home, elsewhere)
			}
			got, ok := runDir(t, home, run, c.create)
			if c.why == "" {
				want := filepath.Join(home, ".tfhive", hostRuns, run)
				if !ok || got != want {
					t.Fatalf("got %q (ok %v), want %s", got, ok, want)
				}
				for _, d := range []string{".tfhive", ".tfhive/" + hostRuns, ".tfhive/" + hostRuns + "/" + run} {
					if fi, err := os.Lstat(filepath.Join(home, d)); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
						t.Errorf("%s: %v %v", d, fi.Mode(), err)
					}
				}
				return
			}
			if ok || !strings.Contains(got, filepath.Join(home, c.path)) || !strings.Contains(got, c.why) || strings.Contains(got, "\n") {
				t.Errorf("got %q (ok %v), want one line naming %s with %q", got, ok, filepath.Join(home, c.path), c.why)
			}
			if left, _ := os.ReadDir(elsewhere); len(left) != 0 {
				t.Errorf("something was made through the link: %v", left)
			}
		})
	}
}

// hostRuns is this machine's directory of runs under ~/.tfhive, as
// rundir.sh's tfhive_runsdir names it.
var hostRuns = sshtest.LocalRunsKey()

func mkdirs(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// A directory that cannot be made is said with the system's reason (a
// full disk's "no space left on device"; here a HOME under a file), in
// one line.
func TestRunDirCannotCreate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(file, "home")
	got, ok := runDir(t, home, "20260101-000000-abcdef", true)
	want := "cannot create " + filepath.Join(home, ".tfhive") + ": not a directory"
	if ok || got != want {
		t.Errorf("got %q (ok %v), want %q", got, ok, want)
	}
}

// A kept task that cannot make its files says why, as the system says it
// (a full disk's "no space left on device"; here a directory in the way
// of its control FIFO), in its one claim line.
func TestKeptTaskCannotCreate(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	const run = "20260101-000000-abcdef"
	rd := filepath.Join(home, ".tfhive", hostRuns, run)
	mkdirs(t, filepath.Join(rd, "worker-0.ctl", "in-the-way"))
	s := supervise(t, Task{Argv: []string{"true"}, HeartbeatTimeout: 5 * time.Second, Keep: time.Minute, RunID: run, ID: "worker:0"})
	if got, want := s.line(t), ClaimFailed+"cannot create the task's files in "+rd+": file exists"; got != want {
		t.Errorf("claim line %q, want %q", got, want)
	}
	s.wait(t, 10*time.Second)
}
