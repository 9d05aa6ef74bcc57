package e2e

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/probe/sshtest"
	"github.com/tfhive/tfhive/schedule"
)

// syncFleet is three hosts; the fake hosts share this machine, and each
// host's sessions get a home of their own (Host.Home), where the code
// cache lives.
func syncFleet(t *testing.T) *sshtest.Fleet {
	var ps []sshtest.Profile
	for _, n := range []string{"s1", "s2", "s3"} {
		ps = append(ps, sshtest.Profile{Name: n, GPU: "idle-2gpu.xml", AliveInterval: 1})
	}
	return sshtest.Start(t, ps...)
}

// describeTree maps every path below dir to what it is: "dir", "-> target"
// for a symlink, a file's content, with " (exec)" for an executable.
func describeTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			m[rel] = "dir"
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			m[rel] = "-> " + target
		default:
			data, _ := os.ReadFile(p)
			m[rel] = string(data)
			if fi.Mode()&0o100 != 0 {
				m[rel] += " (exec)"
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSyncCode(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed to make the test's work tree")
	}
	f := syncFleet(t)
	src := t.TempDir()
	for name, content := range map[string]string{
		".gitignore":           "build/\n*.log\n",
		"train.py":             "print('train')\n",
		"pkg/model.py":         "x = 1\n",
		"notes.md":             "untracked, not ignored: sent\n",
		"build/out.o":          "ignored by git",
		"debug.log":            "ignored by git",
		"ckpt/step-1.ckpt":     "excluded by --sync-exclude",
		"pkg/weights.ckpt":     "excluded by --sync-exclude",
		"pkg/data/sub/two.txt": "2\n",
	} {
		p := filepath.Join(src, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []func() error{
		func() error {
			return os.WriteFile(filepath.Join(src, "run.sh"), []byte("#!/bin/sh\necho \"run.sh in $(pwd)\"\n"), 0o755)
		},
		func() error { return os.MkdirAll(filepath.Join(src, "pkg", "data", "empty"), 0o755) },
		func() error { return os.Symlink("model.py", filepath.Join(src, "pkg", "latest.py")) },
		func() error { return os.Symlink("../train.py", filepath.Join(src, "pkg", "train.py")) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	git := exec.Command("sh", "-c", "git init -q . && git add .gitignore train.py pkg/model.py run.sh")
	git.Dir = src
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git: %v\n%s", err, out)
	}
	want := map[string]string{
		".gitignore": "build/\n*.log\n", "train.py": "print('train')\n", "notes.md": "untracked, not ignored: sent\n",
		"run.sh": "#!/bin/sh\necho \"run.sh in $(pwd)\"\n (exec)", "pkg": "dir", "pkg/model.py": "x = 1\n",
		"pkg/latest.py": "-> model.py", "pkg/train.py": "-> ../train.py",
		"pkg/data": "dir", "pkg/data/empty": "dir", "ckpt": "dir", "pkg/data/sub": "dir", "pkg/data/sub/two.txt": "2\n",
	}
	script := `./run.sh; echo "code_dir={code_dir} env=$TFHIVE_CODE_DIR"; cat pkg/latest.py`
	syncArgs := []string{"--sync", src, "--sync-exclude", "*.ckpt", "--workers", "3", "--gpus-per-worker", "0"}

	// A symlink out of the tree: refused, naming it, before any host is
	// touched.
	if err := os.Symlink("../../etc", filepath.Join(src, "pkg", "etc")); err != nil {
		t.Fatal(err)
	}
	args, _ := runArgs(t, f, append(syncArgs, "--", "true")...)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 2)
	wantContains(t, "stderr", r.stderr, "tfhive: error: --sync: symlink pkg/etc points outside "+src+" (-> ../../etc)", "--sync-exclude pkg/etc")
	for _, h := range f.Hosts {
		if _, err := os.Lstat(filepath.Join(h.Home(), ".cache")); !os.IsNotExist(err) {
			t.Errorf("%s: a refused --sync touched the host's cache: %v", h.Name, err)
		}
	}
	os.Remove(filepath.Join(src, "pkg", "etc"))

	// The first run sends the tree to the three hosts.
	args, logDir := runArgs(t, f, append(syncArgs, "--", "sh", "-c", script)...)
	r = tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	wantContains(t, "stderr", r.stderr, "tfhive: sent code ", "to 3 hosts in ")
	s := summaryOf(t, logDir)
	plan := readJSON[schedule.Plan](t, logDir, "plan.json")
	if s.Code == nil || plan.Code == nil || s.Code.Hash != plan.Code.Hash || len(s.Code.Hash) != 64 || s.Code.Sent != 3 || len(s.Code.Hosts) != 3 || s.Code.Files != 8 || s.Code.Bytes <= 0 {
		t.Fatalf("summary code %+v, plan code %+v", s.Code, plan.Code)
	}
	hash := s.Code.Hash
	hosts := map[string]bool{}
	for _, hr := range s.Code.Hosts {
		h := f.Host(hr.Host)
		dir := filepath.Join(h.Home(), ".cache", "tfhive", "code", hash)
		if hr.Dir != dir || !hr.Sent || hr.BytesSent != s.Code.Bytes {
			t.Errorf("%s: %+v, want sent to %s", hr.Host, hr, dir)
		}
		if ph := plan.Code.Hosts; len(ph) != 3 || ph[0].Present {
			t.Errorf("plan: %+v", ph)
		}
		hosts[hr.Host] = true
		got := describeTree(t, dir)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s is %q, want %q", hr.Host, k, got[k], v)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("%s: %s was sent", hr.Host, k)
			}
		}
		entries, _ := os.ReadDir(filepath.Dir(dir))
		if len(entries) != 1 {
			t.Errorf("%s: the cache holds %d entries, want the tree alone", hr.Host, len(entries))
		}
	}
	if len(hosts) != 3 {
		t.Errorf("hosts %v", hosts)
	}
	for _, tr := range s.Tasks {
		dir := filepath.Join(f.Host(tr.Host).Home(), ".cache", "tfhive", "code", hash)
		log, _ := os.ReadFile(tr.Log)
		wantContains(t, tr.ID+"'s log", string(log), "run.sh in "+dir+"\n", "code_dir="+dir+" env="+dir+"\n", "x = 1\n")
	}

	// The second run finds the tree on every host and sends nothing.
	args, logDir = runArgs(t, f, append(syncArgs, "--", "sh", "-c", script)...)
	r = tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	if strings.Contains(r.stderr, "sent code") {
		t.Errorf("the second run sent code:\n%s", r.stderr)
	}
	s = summaryOf(t, logDir)
	plan = readJSON[schedule.Plan](t, logDir, "plan.json")
	if s.Code == nil || s.Code.Hash != hash || s.Code.Sent != 0 {
		t.Fatalf("second run: %+v", s.Code)
	}
	for i, hr := range s.Code.Hosts {
		if hr.Sent || hr.BytesSent != 0 || !plan.Code.Hosts[i].Present {
			t.Errorf("second run, %s: %+v, plan %+v", hr.Host, hr, plan.Code.Hosts[i])
		}
	}

	// plan says the same, and gc keeps what was just used, then removes
	// it once it is old.
	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, append([]string{"plan"}, append(syncArgs, "--", "true")...)...)...)
	wantCode(t, r, 0)
	wantContains(t, "plan", r.stdout, "code "+launcher.ShortHash(hash)+": 8 files, ", "; on s1, s2, s3\n")
	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "gc")...)
	wantCode(t, r, 0)
	wantContains(t, "gc", r.stdout, "s1: freed 0 B; kept ", ": 1 used in the last 1m0s\n", "tfhive: gc freed 0 B on 3 hosts\n")
	old := time.Now().Add(-2 * time.Hour)
	for _, h := range f.Hosts {
		os.Chtimes(filepath.Join(h.Home(), ".cache", "tfhive", "code", hash), old, old)
	}
	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "gc", "--dry-run")...)
	wantCode(t, r, 0)
	wantContains(t, "gc --dry-run", r.stdout, "s2: would free ", " (1 tree)\n", "tfhive: gc would free ")
	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "gc")...)
	wantCode(t, r, 0)
	wantContains(t, "gc", r.stdout, "s3: freed ", " (1 tree)\n")
	for _, h := range f.Hosts {
		if _, err := os.Stat(filepath.Join(h.Home(), ".cache", "tfhive", "code", hash)); !os.IsNotExist(err) {
			t.Errorf("%s: gc left the tree: %v", h.Name, err)
		}
	}
}
