package e2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/doctor"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/sshtest"
	"github.com/tfhive/tfhive/probe/wording"
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
	t.Parallel() // beside others, on a fleet of its own (testing.md)
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

	// The first run sends the tree to the three hosts. Hosts that share
	// one home share one cache: the three sends race for it, and a host
	// whose send starts once another's tree is in place finds it there
	// and sends nothing, so there it is sent to 1 to 3 of them.
	shared := f.Bed.SharesHome()
	args, logDir := runArgs(t, f, append(syncArgs, "--", "sh", "-c", script)...)
	r = tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	s := summaryOf(t, logDir)
	plan := readJSON[schedule.Plan](t, logDir, "plan.json")
	if s.Code == nil || plan.Code == nil || s.Code.Hash != plan.Code.Hash || len(s.Code.Hash) != 64 || len(s.Code.Hosts) != 3 || s.Code.Files != 8 || s.Code.Bytes <= 0 {
		t.Fatalf("summary code %+v, plan code %+v", s.Code, plan.Code)
	}
	if sent := s.Code.Sent; sent != 3 && (!shared || sent < 1) {
		t.Fatalf("sent to %d hosts: %+v", sent, s.Code)
	}
	wantContains(t, "stderr", r.stderr, "tfhive: sent code ", fmt.Sprintf(" to %s in ", wording.Count(s.Code.Sent, "host")))
	hash := s.Code.Hash
	hosts := map[string]bool{}
	for _, hr := range s.Code.Hosts {
		h := f.Host(hr.Host)
		dir := filepath.Join(h.Home(), ".cache", "tfhive", "code", hash)
		if hr.Dir != dir || (hr.Sent || !shared) && (!hr.Sent || hr.BytesSent != s.Code.Bytes) || !hr.Sent && hr.BytesSent != 0 {
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
	wantContains(t, "plan", r.stdout, "code "+view.ShortHash(hash)+": 8 files, ", "; on s1, s2, s3\n")
	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "gc")...)
	wantCode(t, r, 0)
	wantContains(t, "gc", r.stdout, "s1: freed 0 B; kept ", ": 1 used in the last 1m0s\n", "tfhive: gc freed 0 B on 3 hosts\n")
	old := time.Now().Add(-2 * time.Hour)
	for _, h := range f.Hosts {
		os.Chtimes(filepath.Join(h.Home(), ".cache", "tfhive", "code", hash), old, old)
	}
	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "gc", "--dry-run")...)
	wantCode(t, r, 0)
	// One home: one cache, counted once, on the first host.
	counter := map[bool]string{true: "s1", false: "s2"}[f.Bed.SharesHome()]
	wantContains(t, "gc --dry-run", r.stdout, counter+": would free ", " (1 tree)\n", "tfhive: gc would free ")
	if f.Bed.SharesHome() {
		wantContains(t, "gc --dry-run", r.stdout, "s2: its --sync cache is s1's (one home): counted there\n")
	}
	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "gc")...)
	wantCode(t, r, 0)
	counter = map[bool]string{true: "s1", false: "s3"}[f.Bed.SharesHome()]
	wantContains(t, "gc", r.stdout, counter+": freed ", " (1 tree)\n")
	for _, h := range f.Hosts {
		if _, err := os.Stat(filepath.Join(h.Home(), ".cache", "tfhive", "code", hash)); !os.IsNotExist(err) {
			t.Errorf("%s: gc left the tree: %v", h.Name, err)
		}
	}
}

// On hosts that share one home (and so one cache), gc never takes a tree
// a task on another of them uses: each host sees only its own processes,
// so the tree goes only once no host uses it, removed once.
func TestGCSharedHomeKeepsAnotherHostsTree(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	sshtest.RequireSeparate(t)
	f := sshtest.StartOn(t, sshtest.SharedHome, sshtest.Profile{Name: "g1", GPU: "idle-2gpu.xml", AliveInterval: 1},
		sshtest.Profile{Name: "g2", GPU: "idle-2gpu.xml", AliveInterval: 1})
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "train.py"), []byte("print('x')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args, _ := runArgs(t, f, "--sync", src, "--exclude", "g1", "--workers", "1", "--gpus-per-worker", "0", "--", "sh", "-c", "echo started; exec sleep 60")
	cmd, _ := startRun(t, f, args...)
	code := filepath.Join(f.Host("g1").Home(), ".cache", "tfhive", "code")
	entries, _ := os.ReadDir(code)
	if len(entries) != 1 {
		t.Fatalf("the cache holds %d entries, want the run's tree", len(entries))
	}
	tree := filepath.Join(code, entries[0].Name())
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(tree, old, old)
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "gc")...)
	wantCode(t, r, 0)
	if _, err := os.Stat(tree); err != nil {
		t.Fatalf("gc took the tree a task on g2 uses: %v\n%s", err, r.stdout)
	}
	wantContains(t, "gc", r.stdout, "g1: freed 0 B; kept ", ": 1 in use\n", "g2: its --sync cache is g1's (one home): counted there\n")

	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	noLeftovers(t, f, 10*time.Second)
	os.Chtimes(tree, old, old)
	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "gc")...)
	wantCode(t, r, 0)
	wantContains(t, "gc", r.stdout, "g1: freed ", " (1 tree)\n")
	if _, err := os.Stat(tree); !os.IsNotExist(err) {
		t.Errorf("gc left the unused tree: %v", err)
	}
	noLeftovers(t, f, 10*time.Second)
}

// gc never takes a tree a live run uses, however old its last use, and
// takes it once the run is over; --json says the same as the table.
func TestGCKeepsALiveRunsTree(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "g1", GPU: "idle-2gpu.xml", AliveInterval: 1})
	h := f.Host("g1")
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "train.py"), []byte("print('x')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args, logDir := runArgs(t, f, "--sync", src, "--workers", "1", "--gpus-per-worker", "0", "--", "sh", "-c", "echo started; exec sleep 60")
	cmd, errb := startRun(t, f, args...)
	code := filepath.Join(h.Home(), ".cache", "tfhive", "code")
	entries, _ := os.ReadDir(code)
	if len(entries) != 1 {
		t.Fatalf("the cache holds %d entries, want the run's tree", len(entries))
	}
	live := entries[0].Name()
	// An old tree nothing uses, beside it; both last used hours ago.
	unused := strings.Repeat("0", 64)
	os.MkdirAll(filepath.Join(code, unused), 0o700)
	os.WriteFile(filepath.Join(code, unused, "big"), make([]byte, 64<<10), 0o600)
	old := time.Now().Add(-2 * time.Hour)
	for _, n := range []string{live, unused} {
		os.Chtimes(filepath.Join(code, n), old, old)
	}

	type gcTree struct {
		Name, State string
		Bytes       int64
		Removed     bool
	}
	type gcDoc struct {
		DryRun     bool  `json:"dry_run"`
		FreedBytes int64 `json:"freed_bytes"`
		Hosts      []struct {
			Host       string
			Dir        string
			FreedBytes int64 `json:"freed_bytes"`
			KeptBytes  int64 `json:"kept_bytes"`
			Trees      []gcTree
		}
	}
	gcJSON := func(args ...string) gcDoc {
		t.Helper()
		r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, append([]string{"gc", "--json"}, args...)...)...)
		wantCode(t, r, 0)
		var doc gcDoc
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Hosts) != 1 || doc.Hosts[0].Host != "g1" || doc.Hosts[0].Dir != code {
			t.Fatalf("gc --json: %v\n%s", err, r.stdout)
		}
		return doc
	}
	doc := gcJSON("--dry-run")
	byName := map[string]gcTree{}
	for _, tr := range doc.Hosts[0].Trees {
		byName[tr.Name] = tr
	}
	if !doc.DryRun || byName[live].State != "in_use" || byName[unused].State != "unused" || byName[unused].Removed ||
		byName[unused].Bytes < 64<<10 || doc.FreedBytes != byName[unused].Bytes || doc.Hosts[0].KeptBytes != byName[live].Bytes {
		t.Errorf("gc --json --dry-run: %+v", doc)
	}
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "gc")...)
	wantCode(t, r, 0)
	wantContains(t, "gc", r.stdout, "g1: freed ", " (1 tree); kept ", ": 1 in use\n")
	if _, err := os.Stat(filepath.Join(code, live)); err != nil {
		t.Fatalf("gc took the live run's tree: %v", err)
	}
	if _, err := os.Stat(filepath.Join(code, unused)); !os.IsNotExist(err) {
		t.Errorf("gc left the unused tree: %v", err)
	}

	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err == nil {
		t.Fatalf("the interrupted run exited 0\n%s", errb.String())
	}
	if s := summaryOf(t, logDir); s.Code == nil || s.Code.Hash != live {
		t.Errorf("summary code %+v, want %s", s.Code, live)
	}
	noLeftovers(t, f, 10*time.Second)
	doc = gcJSON("--older-than", "1h")
	if tr := doc.Hosts[0].Trees; len(tr) != 1 || tr[0].Name != live || tr[0].State != "unused" || !tr[0].Removed || doc.FreedBytes <= 0 {
		t.Errorf("gc after the run: %+v", doc)
	}
	if _, err := os.Stat(filepath.Join(code, live)); !os.IsNotExist(err) {
		t.Errorf("gc left the tree of a run that is over: %v", err)
	}
}

// doctor --sync sends the tree where it is missing and checks there, as a
// task would run; a host it cannot be sent to is a row with a note, exit
// 1. run --check --sync checks in the tree too.
func TestSyncDoctor(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own: its tasks listen on no port (testing.md)
	// One host's cache broken alone: homes of each host's own.
	f := doctorFleetOn(t, privateBed(t))
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "mymod.py"), []byte("__version__ = '7.0'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ab := []string{"-H", "a", "-H", "b", "--ssh-config", f.SSHConfig}
	r := tfhive(t, f.Env(), f.Dir, append([]string{"doctor", "--json", "--sync", src, "--import", "mymod"}, ab...)...)
	wantCode(t, r, 0)
	wantContains(t, "stderr", r.stderr, "tfhive: sent code ", " to 2 hosts in ")
	var rep doctor.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Hosts) != 2 {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	hash := ""
	for _, h := range rep.Hosts {
		if h.Code == nil || len(*h.Code) != 64 || h.Modules["mymod"] == nil || *h.Modules["mymod"] != "7.0" || len(h.Differs) != 0 {
			t.Fatalf("%s: code %v, mymod %v, differs %v\n%s", h.Host, h.Code, h.Modules["mymod"], h.Differs, r.stdout)
		}
		hash = *h.Code
		if _, err := os.Stat(filepath.Join(f.Host(h.Host).Home(), ".cache", "tfhive", "code", hash, "mymod.py")); err != nil {
			t.Errorf("%s: %v", h.Host, err)
		}
	}

	// The odd host cannot take the tree (its cache is a file): it is not
	// checked, and says why; a and b had it already.
	if err := os.WriteFile(filepath.Join(f.Host("odd").Home(), ".cache"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "doctor", "--sync", src, "--import", "mymod")...)
	wantCode(t, r, 1)
	if strings.Contains(r.stderr, "sent code") {
		t.Errorf("code sent again:\n%s", r.stderr)
	}
	header := splitCols(strings.SplitN(r.stdout, "\n", 2)[0])
	c := slices.Index(header, "CODE")
	a, odd := rowsOf(r.stdout, "a"), rowsOf(r.stdout, "odd")
	if c < 0 || len(a) != 1 || a[0][c] != view.ShortHash(hash) || len(odd) != 1 ||
		!strings.HasPrefix(odd[0][len(odd[0])-1], "--sync: ") || !strings.Contains(odd[0][len(odd[0])-1], "not a directory of yours") {
		t.Errorf("table:\n%s", r.stdout)
	}
	wantContains(t, "stderr", r.stderr, "tfhive: error: the hosts differ: odd: --sync: ")

	// run --check --sync checks in the tree: a module there that reports
	// its own directory differs on each host, which names the tree.
	if err := os.WriteFile(filepath.Join(src, "where.py"), []byte("import os\n__version__ = os.path.dirname(os.path.abspath(__file__))\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logDir := filepath.Join(t.TempDir(), "logs")
	run := func(mod string) result {
		return tfhive(t, f.Env(), f.Dir, append(append([]string{"run", "--log-dir", logDir, "--check", "--import", mod, "--sync", src, "--workers", "2"}, ab...), "--", "true")...)
	}
	r = run("where")
	wantCode(t, r, 2)
	wantContains(t, "stderr", r.stderr, "tfhive: error: --check: a: where "+filepath.Join(f.Host("a").Home(), ".cache", "tfhive", "code")+"/")
	r = run("mymod")
	wantCode(t, r, 0)
	if s := summaryOf(t, logDir); s.Result != "succeeded" || s.Code == nil || s.Code.Sent != 0 {
		t.Errorf("summary %+v, code %+v", s, s.Code)
	}
	noLeftovers(t, f, 10*time.Second)
}

// `--sync .` from a directory that is not a git work tree, whose runs'
// log dirs go to ./tfhive-runs there: the log root is never part of the
// tree. Before, each run's records changed the hash, so every run sent
// the tree again (and the log dirs with it) and left a new one on every
// host.
func TestSyncLeavesTheLogRootOut(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "s1", GPU: "idle-2gpu.xml"})
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "train.sh"), []byte("echo training\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var hashes []string
	for i := range 2 {
		r := tfhive(t, f.Env(), src, fleetArgs(f, "run", "--name", "sy"+itoa(i), "--sync", ".", "--workers", "1", "--gpus-per-worker", "0", "--", "sh", "train.sh")...)
		wantCode(t, r, 0)
		s := summaryOf(t, filepath.Join(src, "tfhive-runs", "sy"+itoa(i)))
		if s.Code == nil || s.Code.Files != 1 {
			t.Fatalf("run %d: code %+v, want train.sh alone", i, s.Code)
		}
		hashes = append(hashes, s.Code.Hash)
		if i == 1 && (s.Code.Sent != 0 || strings.Contains(r.stderr, "sent code")) {
			t.Errorf("the second run sent the tree again: %+v\n%s", s.Code, r.stderr)
		}
	}
	if hashes[0] != hashes[1] {
		t.Errorf("hashes %v: the log root changed the tree", hashes)
	}
	entries, _ := os.ReadDir(filepath.Join(f.Host("s1").Home(), ".cache", "tfhive", "code"))
	if len(entries) != 1 {
		t.Errorf("the host's cache holds %d trees, want 1", len(entries))
	}
}
