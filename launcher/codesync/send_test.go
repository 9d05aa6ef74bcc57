package codesync

import (
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/remotetest"
)

// cacheExec is this machine as a host whose cache is its own: the
// commands run with XDG_CACHE_HOME set to it.
type cacheExec struct {
	remote.Local
	cache string
}

func (e cacheExec) Start(ctx context.Context, cmd string, stdout, stderr io.Writer) (remote.Started, error) {
	return e.Local.Start(ctx, "XDG_CACHE_HOME="+e.cache+" "+cmd, stdout, stderr)
}

func (e cacheExec) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return remote.Run(ctx, e, cmd, stdin, stdout, stderr)
}

// snapshot describes a directory's content: every path with its type,
// executable bit, link target or content.
func snapshot(t *testing.T, dir string) map[string]string {
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

func sameSnapshot(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s is %q, want %q", what, k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %s should not be there", what, k)
		}
	}
}

func prepared(t *testing.T, files map[string]string) (*Tree, string) {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, files)
	tr, err := Prepare(dir, nil, nil, func(w string) { t.Log(w) })
	if err != nil {
		t.Fatal(err)
	}
	return tr, dir
}

func caches(t *testing.T, n int) ([]Target, []string) {
	var targets []Target
	var dirs []string
	for i := range n {
		c := t.TempDir()
		dirs = append(dirs, c)
		targets = append(targets, Target{Host: "h" + string(rune('0'+i)), Exec: cacheExec{cache: c}})
	}
	return targets, dirs
}

func TestSendToHosts(t *testing.T) {
	files := map[string]string{"a.py": "a\n", "bin/run*": "#!/bin/sh\n", "d/e/": "", "l": "-> a.py", "big": strings.Repeat("x", 3*chunk+7)}
	tr, src := prepared(t, files)
	targets, dirs := caches(t, 3)
	var last Progress
	res := tr.Send(context.Background(), targets, 2, func(p Progress) { last = p })
	want := snapshot(t, src)
	for i, r := range res {
		if r.Err != nil || r.Present || r.Sent != tr.Bytes || r.Host != targets[i].Host {
			t.Fatalf("%s: %+v (archive %d bytes)", targets[i].Host, r, tr.Bytes)
		}
		code := filepath.Join(dirs[i], "tfhive", "code")
		if names := listDir(t, code); len(names) != 1 || names[0] != tr.Hash {
			t.Errorf("%s: the cache holds %q", r.Host, names)
		}
		sameSnapshot(t, r.Host, snapshot(t, filepath.Join(code, tr.Hash)), want)
		for _, d := range []string{filepath.Join(dirs[i], "tfhive"), code} {
			if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("%s: %v, want mode 0700", d, fi.Mode())
			}
		}
	}
	if last != (Progress{Done: 3, Hosts: 3, Sent: 3 * tr.Bytes, Total: 3 * tr.Bytes}) {
		t.Errorf("last progress %+v", last)
	}
	// A host that has it by now reads nothing of it.
	res = tr.Send(context.Background(), targets[:1], 4, nil)
	if r := res[0]; r.Err != nil || !r.Present {
		t.Errorf("again: %+v", r)
	}
}

// A tree that changes after it was hashed is kept nowhere: what arrived
// would not be what its name says.
func TestSendTreeChanged(t *testing.T) {
	tr, src := prepared(t, map[string]string{"a.py": "a\n", "b.py": "b\n"})
	os.WriteFile(filepath.Join(src, "b.py"), []byte("c\n"), 0o644)
	targets, dirs := caches(t, 2)
	for i, r := range tr.Send(context.Background(), targets, 8, nil) {
		if r.Err == nil || !strings.Contains(r.Err.Error(), "changed while being sent") {
			t.Errorf("%s: %+v", r.Host, r)
		}
		if names := listDir(t, filepath.Join(dirs[i], "tfhive", "code")); len(names) > 0 {
			t.Errorf("%s: the cache holds %q", r.Host, names)
		}
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// sync.sh writes nowhere another user could have prepared: a cache
// whose directories are symlinks, or writable by others, is refused.
func TestSendRefusesUnsafeCache(t *testing.T) {
	tr, _ := prepared(t, map[string]string{"a.py": "a\n"})
	for name, setup := range map[string]func(cache, elsewhere string){
		"tfhive/ a symlink": func(c, e string) { os.Symlink(e, filepath.Join(c, "tfhive")) },
		"code/ a symlink": func(c, e string) {
			os.Mkdir(filepath.Join(c, "tfhive"), 0o700)
			os.Symlink(e, filepath.Join(c, "tfhive", "code"))
		},
		"code/ writable by all": func(c, e string) {
			os.MkdirAll(filepath.Join(c, "tfhive", "code"), 0o700)
			os.Chmod(filepath.Join(c, "tfhive", "code"), 0o777)
		},
		"the cache writable by the group": func(c, e string) { os.Chmod(c, 0o770) },
	} {
		t.Run(name, func(t *testing.T) {
			targets, dirs := caches(t, 1)
			elsewhere := t.TempDir()
			setup(dirs[0], elsewhere)
			r := tr.Send(context.Background(), targets, 1, nil)[0]
			if r.Err == nil || !strings.Contains(r.Err.Error(), "is not a directory of yours that only you may write to") {
				t.Errorf("%+v", r)
			}
			if entries, _ := os.ReadDir(elsewhere); len(entries) > 0 {
				t.Errorf("written through the symlink: %v", entries)
			}
		})
	}
}

// An archive cut short leaves nothing behind, not even its temporary
// directory.
func TestSyncScriptCutArchive(t *testing.T) {
	tr, _ := prepared(t, map[string]string{"a.py": strings.Repeat("a", 5000)})
	cache := t.TempDir()
	pr, pw := io.Pipe()
	go func() {
		full := &strings.Builder{}
		tr.produceTo(full)
		io.WriteString(pw, full.String()[:3000])
		pw.Close()
	}()
	cmd := exec.Command("sh", "-c", syncCommand(tr.Hash))
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
	cmd.Stdin = pr
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "tfhive: the archive did not arrive whole") {
		t.Errorf("cut archive: %v\n%s", err, out)
	}
	if names := listDir(t, filepath.Join(cache, "tfhive", "code")); len(names) > 0 {
		t.Errorf("the cache holds %q", names)
	}
}

// produceTo writes the whole archive, as Send does, to w.
func (t *Tree) produceTo(w io.Writer) error {
	s := &sink{q: make(chan []byte, 1<<16), proc: startedStub{}}
	err := t.produce(context.Background(), []*sink{s})
	close(s.q)
	for c := range s.q {
		w.Write(c)
	}
	return err
}

type startedStub struct{ remote.Started }

func TestGC(t *testing.T) {
	tr, _ := prepared(t, map[string]string{"a.py": strings.Repeat("a", 50000)})
	cache := t.TempDir()
	code := filepath.Join(cache, "tfhive", "code")
	ex := cacheExec{cache: cache}
	if r := tr.Send(context.Background(), []Target{{"h", ex}}, 1, nil)[0]; r.Err != nil {
		t.Fatal(r.Err)
	}
	hex := func(c byte) string { return strings.Repeat(string(c), 64) }
	for _, name := range []string{hex('a'), hex('b'), hex('c'), hex('d'), ".tmp.old", ".tmp.new", "not-a-tree"} {
		os.MkdirAll(filepath.Join(code, name, "sub"), 0o700)
		os.WriteFile(filepath.Join(code, name, "sub", "f"), []byte(strings.Repeat("z", 20000)), 0o600)
	}
	old := time.Now().Add(-2 * time.Hour)
	older := time.Now().Add(-48 * time.Hour)
	for _, name := range []string{tr.Hash, hex('a'), hex('b'), hex('c'), "not-a-tree"} {
		os.Chtimes(filepath.Join(code, name), old, old)
	}
	os.Chtimes(filepath.Join(code, ".tmp.old"), older, older)
	// b is in use by a task (its environment), c by a shell in it.
	env := exec.Command("sleep", "60")
	env.Env = []string{"TFHIVE_CODE_DIR=" + filepath.Join(code, hex('b'))}
	cwd := exec.Command("sleep", "60")
	cwd.Dir = filepath.Join(code, hex('c'), "sub")
	for _, c := range []*exec.Cmd{env, cwd} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer c.Process.Kill()
	}
	kinds := func(r GCReport) map[string]byte {
		m := map[string]byte{}
		for _, d := range r.Dirs {
			m[d.Name] = d.Kind
			if d.KiB < 20 {
				t.Errorf("%s: %d KiB", d.Name, d.KiB)
			}
		}
		return m
	}
	want := map[string]byte{tr.Hash: Removed, hex('a'): Removed, hex('b'): InUse, hex('c'): InUse, hex('d'): Recent, ".tmp.old": Stale, ".tmp.new": Underway}
	before := len(snapshot(t, code))
	dry, err := GC(context.Background(), ex, 0, true, nil)
	if err != nil || dry.Dir != code || len(dry.Home) != 32 {
		t.Fatalf("dry: %v, %+v", err, dry)
	}
	if got := kinds(dry); !mapsEqual(got, want) {
		t.Errorf("dry: %q, want %q", got, want)
	}
	// The one thing a dry run may add: the cache's name (.id).
	if after := snapshot(t, code); len(after) != before+1 || after[".id"] == "" {
		t.Errorf("dry run changed the cache: %d entries, %d before", len(after), before)
	}
	// Narrowed to one name (what no host sharing the cache uses): only
	// that one goes, though more are unused here.
	part, err := GC(context.Background(), ex, 0, false, []string{hex('a'), hex('b')})
	if err != nil || part.Home != dry.Home {
		t.Fatalf("gc of a and b: %v, %+v (home %s, was %s)", err, part, part.Home, dry.Home)
	}
	if _, err := os.Stat(filepath.Join(code, hex('a'))); !os.IsNotExist(err) {
		t.Errorf("a, named and unused, is still there: %v", err)
	}
	for _, keep := range []string{hex('b'), tr.Hash} {
		if _, err := os.Stat(filepath.Join(code, keep)); err != nil {
			t.Errorf("%s went: %v", keep, err)
		}
	}
	os.MkdirAll(filepath.Join(code, hex('a'), "sub"), 0o700)
	os.WriteFile(filepath.Join(code, hex('a'), "sub", "f"), []byte(strings.Repeat("z", 20000)), 0o600)
	os.Chtimes(filepath.Join(code, hex('a')), old, old)
	rep, err := GC(context.Background(), ex, 0, false, nil)
	if err != nil || !mapsEqual(kinds(rep), want) || rep.Freed() != dry.Freed() || rep.Freed() < 3*20 {
		t.Fatalf("gc: %v, %+v, freed %d KiB (dry %d)", err, rep, rep.Freed(), dry.Freed())
	}
	for name, k := range want {
		_, err := os.Stat(filepath.Join(code, name))
		if gone := os.IsNotExist(err); gone != (k == Removed || k == Stale) {
			t.Errorf("%s (%c): gone %v", name, k, gone)
		}
	}
	// --older-than keeps what was used since.
	rep, err = GC(context.Background(), ex, 3*time.Hour, true, nil)
	if err != nil || rep.Freed() != 0 {
		t.Errorf("keep 3h: %v, %+v", err, rep)
	}
	// No cache at all is nothing to do.
	rep, err = GC(context.Background(), cacheExec{cache: t.TempDir()}, 0, false, nil)
	if err != nil || len(rep.Dirs) != 0 || rep.Dir == "" {
		t.Errorf("no cache: %v, %+v", err, rep)
	}
}

// Hosts sharing one cache: a tree goes only when every one of them would
// remove it; one that some host uses, or has not listed (it arrived
// since), is kept, under that host's reason.
func TestGCShared(t *testing.T) {
	a := GCReport{Dir: "/c", Home: "h", Dirs: []GCDir{{Removed, "t1", 10}, {Removed, "t2", 20}, {Stale, ".tmp.x", 5}, {Removed, "t4", 1}}}
	b := GCReport{Dir: "/c", Home: "h", Dirs: []GCDir{{Removed, "t1", 10}, {InUse, "t2", 20}, {Stale, ".tmp.x", 5}, {Recent, "t3", 7}}}
	only, merged := Shared([]GCReport{a, b})
	if strings.Join(only, " ") != "t1 .tmp.x" {
		t.Errorf("only %q, want t1 and .tmp.x", only)
	}
	got := map[string]byte{}
	for _, d := range merged.Dirs {
		got[d.Name] = d.Kind
	}
	if want := map[string]byte{"t1": Removed, "t2": InUse, ".tmp.x": Stale, "t4": Recent, "t3": Recent}; !mapsEqual(got, want) {
		t.Errorf("merged %q, want %q", got, want)
	}
	if merged.Freed() != 15 {
		t.Errorf("freed %d KiB, want 15", merged.Freed())
	}
	if only, _ := Shared([]GCReport{{Dir: "/c"}}); only == nil || len(only) != 0 {
		t.Errorf("an empty cache: only %q, want none (not nil: nil means all)", only)
	}
}

func mapsEqual(a, b map[string]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A host whose gc.sh listing passes its bound is stopped there and its
// listing is not read: a tree left out of a cut listing would not be
// known to be in use, so nothing is removed on its word.
func TestGCListingPastItsBound(t *testing.T) {
	f := &remotetest.Fake{}
	f.Handle(remotetest.Prefix("exec sh -c "), func(p *remotetest.Proc) int {
		io.WriteString(p.Stdout, "@@tfhive-gc /home/u/.cache/tfhive/code\n")
		if p.Flood(p.Stdout, 64<<20) < 0 {
			t.Error("the flooding gc.sh was not stopped")
		}
		return 0
	})
	_, err := GC(context.Background(), f, 0, true, nil)
	if want := "its answer passed 4 MiB: what its cache holds is unknown, so nothing is removed there"; err == nil || err.Error() != want {
		t.Errorf("dry: %v, want %q", err, want)
	}
	_, err = GC(context.Background(), f, 0, false, []string{strings.Repeat("a", 64)})
	if want := "its answer passed 4 MiB: which trees it removed is unknown"; err == nil || err.Error() != want {
		t.Errorf("removing: %v, want %q", err, want)
	}
}

// A host that says more than maxAnswer in answer to the tree is not taken
// at its last line: the transfer failed.
func TestSendAnswerPastItsBound(t *testing.T) {
	tr, _ := prepared(t, map[string]string{"a.py": "a\n"})
	f := &remotetest.Fake{}
	f.Handle(remotetest.Prefix("exec sh -c "), func(p *remotetest.Proc) int {
		io.Copy(io.Discard, p.Stdin)
		io.WriteString(p.Stdout, strings.Repeat("noise\n", 1<<20/6)+syncSent+"\n")
		return 0
	})
	res := tr.Send(context.Background(), []Target{{Host: "h1", Exec: f}}, 1, nil)
	if want := "receiving the tree failed: its answer passed 64 KiB"; res[0].Err == nil || res[0].Err.Error() != want {
		t.Errorf("%+v, want %q", res[0], want)
	}
}
