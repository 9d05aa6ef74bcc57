package rundir

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tfhive/tfhive/probe/localfile"
)

// someoneElse is another user's uid for chown: the tests that need one
// run as root (CI does).
func someoneElse(t *testing.T) (uid int, name string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("files of another user need root")
	}
	return 65534, localfile.UserName(65534)
}

// What the log dir's path may hold: links and directories another user
// made, or directories others may write to, are refused, named with
// their owner; a sticky parent of root's (or yours) is fine.
func TestLogDirChain(t *testing.T) {
	other, otherName := someoneElse(t)
	base := t.TempDir()
	mk := func(t *testing.T, rel string, mode os.FileMode, uid int) string {
		p := filepath.Join(base, t.Name(), rel)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		os.Chown(p, uid, -1)
		return p
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) string // returns the log dir
		want  string                    // "" for accepted
	}{
		{"missing under a private dir", func(t *testing.T) string {
			return filepath.Join(mk(t, "cwd", 0o755, 0), "tfhive-runs", "r1")
		}, ""},
		{"missing under a sticky shared dir", func(t *testing.T) string {
			return filepath.Join(mk(t, "shared", 0o777|os.ModeSticky, 0), "tfhive-runs", "r1")
		}, ""},
		{"the run's own under a sticky shared dir", func(t *testing.T) string {
			mk(t, "shared", 0o777|os.ModeSticky, 0)
			return filepath.Join(mk(t, "shared/tfhive-runs", 0o755, 0), "r1")
		}, ""},
		{"a link another user planted", func(t *testing.T) string {
			runs := mk(t, "shared/tfhive-runs", 0o777, other)
			os.Chmod(filepath.Dir(runs), 0o777|os.ModeSticky)
			trap := mk(t, "trap", 0o777, other)
			os.Symlink(trap, filepath.Join(runs, "r1"))
			os.Lchown(filepath.Join(runs, "r1"), other, -1)
			return filepath.Join(runs, "r1")
		}, "/shared/tfhive-runs/r1 is a symbolic link owned by " + otherName},
		{"a directory of another user's on the way", func(t *testing.T) string {
			mk(t, "shared", 0o777|os.ModeSticky, 0)
			return filepath.Join(mk(t, "shared/tfhive-runs", 0o755, other), "r1")
		}, "/shared/tfhive-runs is owned by " + otherName + ", not by you or root"},
		{"a shared dir that is not sticky", func(t *testing.T) string {
			return filepath.Join(mk(t, "shared", 0o777, 0), "tfhive-runs", "r1")
		}, "/shared is writable by group and others and not sticky"},
		{"a shared dir another user owns, sticky", func(t *testing.T) string {
			return filepath.Join(mk(t, "shared", 0o777|os.ModeSticky, other), "tfhive-runs", "r1")
		}, "/shared is owned by " + otherName + ", not by you or root"},
		{"your own dir, group-writable", func(t *testing.T) string {
			return filepath.Join(mk(t, "cwd/tfhive-runs", 0o775, 0), "r1")
		}, "/cwd/tfhive-runs is writable by its group and not sticky"},
		{"the log dir writable by others", func(t *testing.T) string {
			return mk(t, "cwd/logs", 0o777|os.ModeSticky, 0)
		}, "/cwd/logs is writable by group and others"},
		{"the log dir another user's", func(t *testing.T) string {
			return mk(t, "cwd/logs", 0o755, other)
		}, "/cwd/logs is owned by " + otherName + ", not by you"},
		{"your own link to your own dir", func(t *testing.T) string {
			to := mk(t, "real", 0o755, 0)
			link := filepath.Join(base, t.Name(), "logs")
			os.Symlink(to, link)
			return link
		}, ""},
		{"your own link to a dir others may write to", func(t *testing.T) string {
			to := mk(t, "real", 0o777, 0)
			link := filepath.Join(base, t.Name(), "logs")
			os.Symlink(to, link)
			return link
		}, "/real is writable by group and others"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.setup(t)
			err := Check(dir)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want …%s", err, tc.want)
			}
			if tc.want != "" {
				// Make refuses the same, and creates nothing.
				if err := Make(dir); err == nil {
					t.Error("Make accepted it")
				}
				if fi, err := os.Lstat(dir); err == nil && fi.IsDir() && localfile.Owner(fi) == 0 && fi.Mode().Perm() == 0o700 {
					t.Errorf("Make created %s", dir)
				}
			}
		})
	}
}

// Make creates what is missing, 0700 and yours; a directory of the
// chain that another user made meanwhile is refused after the fact.
func TestMake(t *testing.T) {
	other, otherName := someoneElse(t)
	shared := t.TempDir()
	os.Chmod(shared, 0o777|os.ModeSticky)
	dir := filepath.Join(shared, "tfhive-runs", "r1")
	if err := Make(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Dir(dir)} {
		if fi, err := os.Lstat(p); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 || localfile.Owner(fi) != os.Geteuid() {
			t.Errorf("%s: %v %v", p, fi.Mode(), err)
		}
	}
	if err := Make(dir); err != nil {
		t.Errorf("again: %v", err)
	}
	os.Chown(filepath.Dir(dir), other, -1)
	if err := Make(filepath.Join(filepath.Dir(dir), "r2")); err == nil || !strings.Contains(err.Error(), "owned by "+otherName) {
		t.Errorf("after the chown: %v", err)
	}
}

// A relative log dir stops at the current directory, named in full when
// it is the one refused.
func TestLogDirRelative(t *testing.T) {
	other, otherName := someoneElse(t)
	cwd := t.TempDir()
	t.Chdir(cwd)
	os.Chmod(cwd, 0o777|os.ModeSticky)
	if err := Check("tfhive-runs/r1"); err != nil {
		t.Errorf("root's sticky cwd: %v", err)
	}
	os.Chown(cwd, other, -1)
	if err := Check("tfhive-runs/r1"); err == nil || err.Error() != cwd+" is owned by "+otherName+", not by you or root" {
		t.Errorf("another user's cwd: %v", err)
	}
}

// Files of the log dir are never opened through a link.
func TestOpenFileNoFollow(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious")
	os.WriteFile(target, []byte("keep"), 0o644)
	os.Symlink(target, filepath.Join(dir, "worker-0.log"))
	for _, flag := range []int{os.O_CREATE | os.O_WRONLY | os.O_TRUNC, os.O_CREATE | os.O_WRONLY | os.O_APPEND, os.O_CREATE | os.O_WRONLY | os.O_EXCL} {
		if f, err := OpenFile(filepath.Join(dir, "worker-0.log"), flag); err == nil {
			f.Close()
			t.Errorf("flag %#x: opened through the link", flag)
		} else if !errors.Is(err, syscall.ELOOP) && !errors.Is(err, os.ErrExist) {
			t.Errorf("flag %#x: %v", flag, err)
		}
	}
	if data, _ := os.ReadFile(target); string(data) != "keep" {
		t.Errorf("target: %q", data)
	}
}

// A run's files are yours alone, 0600, whatever the umask lets through
// (a record holds what --env gave the tasks): WriteFile's and WriteJSON's
// (a fresh file renamed over the old one) and OpenFile's.
func TestFilesAreTheUsers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tfhive-runs", "r1")
	if err := Make(dir); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(plan, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(plan, 0o644) // an older tfhive's
	if err := WriteJSON(plan, map[string]string{"SECRET": "s3cret"}); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(dir, "metrics.json"), func(w io.Writer) error { _, err := io.WriteString(w, "{}"); return err }); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFile(filepath.Join(dir, "worker-0.log"), os.O_CREATE|os.O_WRONLY|os.O_EXCL)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, name := range []string{"plan.json", "metrics.json", "worker-0.log"} {
		if fi, err := os.Lstat(filepath.Join(dir, name)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want 0600", name, fi.Mode(), err)
		}
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if fi, err := os.Lstat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want 0700", d, fi.Mode(), err)
		}
	}
}
