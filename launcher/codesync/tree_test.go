package codesync

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeTree makes files under dir: a name ending in / is a directory, a
// content starting with "-> " a symlink, a name ending in * an
// executable.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, strings.TrimSuffix(name, "*"))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasSuffix(name, "/"):
			err = os.MkdirAll(p, 0o755)
		case strings.HasPrefix(content, "-> "):
			err = os.Symlink(strings.TrimPrefix(content, "-> "), p)
		case strings.HasSuffix(name, "*"):
			err = os.WriteFile(p, []byte(content), 0o755)
		default:
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func gitInit(t *testing.T, dir string, add ...string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q", "."}, append([]string{"add", "--"}, add...)} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// projectTree is the tree of the end-to-end test too: ignored files, an
// excluded glob, an executable, an empty directory, symlinks inside.
var projectTree = map[string]string{
	".gitignore":           "build/\n*.log\n/secret.txt\n",
	"train.py":             "print('hi')\n",
	"run.sh*":              "#!/bin/sh\necho run\n",
	"pkg/model.py":         "x = 1\n",
	"pkg/data/empty/":      "",
	"pkg/latest.py":        "-> model.py",
	"pkg/up":               "-> ../train.py",
	"pkg/dirlink":          "-> data",
	"build/out.o":          "ignored",
	"debug.log":            "ignored",
	"secret.txt":           "ignored",
	"forced.log":           "tracked, so sent",
	"ckpt/model.ckpt":      "excluded",
	"pkg/weights.ckpt":     "excluded",
	"notes/draft.md":       "untracked, sent",
	"pkg/dangling-inside":  "-> data/not-yet",
	"pkg/.git/config":      "a nested repository's: never sent",
	"pkg/data/empty-file":  "",
	"pkg/data/sub/two.txt": "2\n",
}

func entryNames(tr *Tree) []string {
	var names []string
	for _, e := range tr.entries {
		n := e.rel
		switch {
		case e.kind == 'd':
			n += "/"
		case e.kind == 'l':
			n += " -> " + e.target
		case e.exec:
			n += "*"
		}
		names = append(names, n)
	}
	return names
}

func TestPrepareGitTree(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, projectTree)
	gitInit(t, dir, ".gitignore", "train.py", "pkg/model.py")
	cmd := exec.Command("git", "add", "-f", "forced.log")
	cmd.Dir = dir
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	tr, err := Prepare(dir, []string{"*.ckpt", "ckpt/"}, nil, func(w string) { warnings = append(warnings, w) })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		".gitignore", "forced.log", "notes/", "notes/draft.md",
		"pkg/", "pkg/dangling-inside -> data/not-yet", "pkg/data/", "pkg/data/empty/", "pkg/data/empty-file", "pkg/data/sub/", "pkg/data/sub/two.txt",
		"pkg/dirlink -> data", "pkg/latest.py -> model.py", "pkg/model.py", "pkg/up -> ../train.py",
		"run.sh*", "train.py",
	}
	if got := entryNames(tr); !slices.Equal(got, want) {
		t.Errorf("entries:\n%q\nwant:\n%q", got, want)
	}
	if !tr.Git || tr.Files != 12 || len(tr.Hash) != 64 || tr.Bytes%512 != 0 || len(warnings) > 0 {
		t.Errorf("git %v, %d files, hash %q, %d bytes, warnings %q", tr.Git, tr.Files, tr.Hash, tr.Bytes, warnings)
	}
}

// The hash is the content's: the same tree elsewhere hashes the same; a
// byte, a name, an executable bit or a link target changes it; times and
// group or other permissions do not.
func TestPrepareHash(t *testing.T) {
	files := map[string]string{"a.py": "a\n", "bin/run*": "#!/bin/sh\n", "d/": "", "l": "-> a.py"}
	hashOf := func(edit func(dir string)) string {
		t.Helper()
		dir := t.TempDir()
		writeTree(t, dir, files)
		if edit != nil {
			edit(dir)
		}
		tr, err := Prepare(dir, nil, nil, func(string) {})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Hash
	}
	base := hashOf(nil)
	if again := hashOf(nil); again != base {
		t.Errorf("the same tree elsewhere: %s, then %s", base, again)
	}
	for name, edit := range map[string]func(string){
		"a byte":         func(d string) { os.WriteFile(filepath.Join(d, "a.py"), []byte("b\n"), 0o644) },
		"a name":         func(d string) { os.Rename(filepath.Join(d, "a.py"), filepath.Join(d, "b.py")) },
		"an exec bit":    func(d string) { os.Chmod(filepath.Join(d, "bin/run"), 0o644) },
		"a link target":  func(d string) { os.Remove(filepath.Join(d, "l")); os.Symlink("d", filepath.Join(d, "l")) },
		"an empty dir":   func(d string) { os.Mkdir(filepath.Join(d, "e"), 0o755) },
		"an empty file":  func(d string) { os.WriteFile(filepath.Join(d, "e"), nil, 0o644) },
		"a dir for file": func(d string) { os.Remove(filepath.Join(d, "d")); os.WriteFile(filepath.Join(d, "d"), nil, 0o644) },
	} {
		if h := hashOf(edit); h == base {
			t.Errorf("%s changed: same hash", name)
		}
	}
	for name, edit := range map[string]func(string){
		"a time":      func(d string) { os.Chtimes(filepath.Join(d, "a.py"), archiveTime, archiveTime) },
		"group write": func(d string) { os.Chmod(filepath.Join(d, "a.py"), 0o664) },
		"a .git":      func(d string) { os.Mkdir(filepath.Join(d, ".git"), 0o755) },
	} {
		if h := hashOf(edit); h != base {
			t.Errorf("%s changed: another hash", name)
		}
	}
}

func TestPrepareRefuses(t *testing.T) {
	outside := t.TempDir()
	for _, tt := range []struct {
		name  string
		files map[string]string
		ex    []string
		msg   string
	}{
		{"a symlink out", map[string]string{"a/escape": "-> ../../x"}, nil, "--sync: symlink a/escape points outside "},
		{"an absolute symlink out", map[string]string{"abs": "-> " + outside}, nil, "--sync: symlink abs points outside "},
		{"an absolute symlink in", map[string]string{"f": "x", "abs": "-> ROOT/f"}, nil, "--sync: symlink abs is absolute (-> "},
		// Each link stays inside when read alone; through the first,
		// the second leaves.
		{"symlinks out together", map[string]string{"a/b/top": "-> ../..", "out": "-> a/b/top/.."}, nil, "--sync: symlink out points outside "},
		{"a dangling symlink out", map[string]string{"d": "-> ../nothing"}, nil, "--sync: symlink d points outside "},
		{"a bad pattern", map[string]string{"f": "x"}, []string{"[a"}, `--sync-exclude "[a": syntax error in pattern`},
		{"an empty pattern", map[string]string{"f": "x"}, []string{"/"}, `--sync-exclude "/": empty pattern`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{}
			for k, v := range tt.files {
				files[k] = strings.ReplaceAll(v, "ROOT", dir)
			}
			writeTree(t, dir, files)
			_, err := Prepare(dir, tt.ex, nil, func(string) {})
			var e *Error
			if !errors.As(err, &e) || !strings.HasPrefix(e.Msg, tt.msg) || e.Fix == "" {
				t.Fatalf("err = %v, want an *Error starting %q with a hint", err, tt.msg)
			}
		})
	}
	// Left out, a symlink out is not looked at.
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"keep": "x", "models/latest": "-> " + outside})
	if tr, err := Prepare(dir, []string{"models/latest"}, nil, func(string) {}); err != nil || !slices.Equal(entryNames(tr), []string{"keep", "models/"}) {
		t.Errorf("excluded symlink: %v, %q", err, entryNames(tr))
	}
	if _, err := Prepare(filepath.Join(dir, "keep"), nil, nil, func(string) {}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file: %v", err)
	}
	if _, err := Prepare(filepath.Join(dir, "nothing"), nil, nil, func(string) {}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("nothing: %v", err)
	}
}

// Without git here, a work tree is sent whole but for .git, with a
// warning; a plain directory's .gitignore never counts.
func TestPrepareWithoutGit(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{".gitignore": "*.log\n", "a.log": "x", "b": "y"})
	plain, err := Prepare(dir, nil, nil, func(w string) { t.Errorf("warning for a plain directory: %s", w) })
	if err != nil || plain.Git || len(plain.entries) != 3 {
		t.Fatalf("plain directory: %v, git %v, %q", err, plain.Git, entryNames(plain))
	}
	gitInit(t, dir, "b")
	t.Setenv("PATH", t.TempDir())
	var warnings []string
	tr, err := Prepare(dir, nil, nil, func(w string) { warnings = append(warnings, w) })
	if err != nil || tr.Git || !slices.Equal(entryNames(tr), []string{".gitignore", "a.log", "b"}) {
		t.Fatalf("%v, git %v, %q", err, tr.Git, entryNames(tr))
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "git is not installed here, so .gitignore is not applied") {
		t.Errorf("warnings %q", warnings)
	}
}

func TestExcluded(t *testing.T) {
	for _, tt := range []struct {
		rel  string
		pats []string
		want bool
	}{
		{"a/b/x.ckpt", []string{"*.ckpt"}, true},
		{"data", []string{"data"}, true},
		{"src/data", []string{"data"}, true},
		{"data/raw", []string{"data/raw"}, true},
		{"src/data/raw", []string{"data/raw"}, false},
		{"build", []string{"/build"}, true},
		{"src/build", []string{"/build"}, false},
		{"build", []string{"build/"}, true},
		{"train.py", []string{"*.ckpt", "data"}, false},
	} {
		if got := Excluded(tt.rel, tt.pats); got != tt.want {
			t.Errorf("Excluded(%q, %q) = %v", tt.rel, tt.pats, got)
		}
	}
}

// The directories leave names (tfhive's log root, relative to the
// launch directory; a run's --log-dir, absolute) are never listed; a
// directory of that name elsewhere in the tree is.
func TestPrepareLeaves(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"train.py": "x", "tfhive-runs/r1/summary.json": "{}", "sub/tfhive-runs/keep": "k", "logs/r2/console.log": "c"})
	t.Chdir(dir)
	tr, err := Prepare(".", nil, []string{"tfhive-runs", filepath.Join(dir, "logs", "r2"), "nowhere"}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := entryNames(tr), []string{"logs/", "sub/", "sub/tfhive-runs/", "sub/tfhive-runs/keep", "train.py"}; !slices.Equal(got, want) {
		t.Errorf("entries %q, want %q", got, want)
	}
}
