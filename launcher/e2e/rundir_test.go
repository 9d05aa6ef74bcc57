package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// A run directory on a host that is a symbolic link, has the wrong mode
// or is another user's is refused, never followed: the task could not
// start (exit 1), one line says which path and why, and nothing is
// written through the link.
func TestRunDirRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		// prepare readies the host's HOME and says which path is to be
		// named, and what about it.
		prepare func(t *testing.T, home, elsewhere string) (path, why string)
	}{
		{"runs a symbolic link", func(t *testing.T, home, elsewhere string) (string, string) {
			mkdir(t, filepath.Join(home, ".tfhive"), 0o700)
			runs := filepath.Join(home, ".tfhive", "runs")
			if err := os.Symlink(elsewhere, runs); err != nil {
				t.Fatal(err)
			}
			return runs, "is a symbolic link"
		}},
		{".tfhive with mode 0755", func(t *testing.T, home, _ string) (string, string) {
			dir := filepath.Join(home, ".tfhive")
			mkdir(t, dir, 0o755)
			return dir, "has mode 0755, not 0700"
		}},
		{"runs another user's", func(t *testing.T, home, _ string) (string, string) {
			other := sshtest.AddUser(t, "other")
			mkdir(t, filepath.Join(home, ".tfhive"), 0o700)
			runs := filepath.Join(home, ".tfhive", "runs")
			mkdir(t, runs, 0o700)
			if err := os.Chown(runs, other.UID, other.GID); err != nil {
				t.Fatal(err)
			}
			return runs, "is owned by " + other.Name + " (uid " + itoa(other.UID) + "), not by you"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := runFleet(t, "rd")
			elsewhere := t.TempDir()
			os.Chmod(elsewhere, 0o700)
			path, why := c.prepare(t, f.Host("rd").Home(), elsewhere)
			args, _ := runArgs(t, f, "--workers", "1", "--gpus-per-worker", "0", "--", "echo", "ran")
			r := tfhive(t, f.Env(), f.Dir, args...)
			wantCode(t, r, 1)
			wantContains(t, "stderr", r.stderr, "could not start: "+path+" "+why+": tfhive keeps a run's files only in real directories of your own with mode 0700")
			wantContains(t, "console", r.stdout, "tfhive: worker:0 on rd could not start: "+path+" "+why, "not-started: "+path)
			if strings.Contains(r.stdout, "ran\n") || strings.Contains(r.stdout, "[worker:0 rd]") {
				t.Errorf("the task ran, or its supervisor's refusal passed for its output:\n%s", r.stdout)
			}
			if left, _ := os.ReadDir(elsewhere); len(left) != 0 {
				t.Errorf("written through the link: %v", left)
			}
			noLeftovers(t, f, 10*time.Second)
		})
	}
}

func mkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}
