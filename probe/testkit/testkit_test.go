package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// recorder stands for a test whose failures Golden reports.
type recorder struct {
	testing.TB
	failures []string
	fatal    bool
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.fatal = true
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

// golden runs Golden as a test of its own, -update set to updating.
func golden(t *testing.T, updating bool, path, got string) *recorder {
	t.Helper()
	defer func(was bool) { *update = was }(*update)
	*update = updating
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Golden(r, path, []byte(got))
	}()
	<-done
	return r
}

func TestGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "dir", "out.txt")
	if r := golden(t, false, path, "a\n"); !r.fatal || !strings.Contains(r.failures[0], "-update to create it") {
		t.Errorf("a missing golden file: %q, fatal %v", r.failures, r.fatal)
	}
	if r := golden(t, true, path, "a\n"); len(r.failures) > 0 {
		t.Fatalf("-update: %q", r.failures)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != "a\n" {
		t.Fatalf("-update wrote %q, %v", data, err)
	}
	if r := golden(t, false, path, "a\n"); len(r.failures) > 0 {
		t.Errorf("the same text: %q", r.failures)
	}
	r := golden(t, false, path, "b\n")
	if len(r.failures) != 1 || r.fatal || !strings.Contains(r.failures[0], path+" differs") || !strings.Contains(r.failures[0], "--- got\nb\n\n--- want\na\n") {
		t.Errorf("other text: %q, fatal %v", r.failures, r.fatal)
	}
}

func TestSyncBuffer(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				b.Write([]byte("x"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 400) {
		t.Errorf("%d bytes, want 400", len(got))
	}
}

func TestWarnings(t *testing.T) {
	var w Warnings
	if got := w.Take(); got != nil {
		t.Errorf("nothing added: %q", got)
	}
	w.Add("one")
	w.Add("two")
	if got, want := w.Take(), []string{"one", "two"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Take = %q, want %q", got, want)
	}
	if got := w.Take(); got != nil {
		t.Errorf("Take again = %q, want none", got)
	}
}

// The promises the package's doc and the testing guide make, checked on
// the repository: only tests import testkit, and the testing guide's
// (launcher/help/testing.md, `tfhive help testing`) -update command
// names every package with golden files and no package that would refuse
// the flag ("flag provided but not defined").
func TestRepository(t *testing.T) {
	root := filepath.Join("..", "..")
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	modLine, _, _ := strings.Cut(string(mod), "\n")
	self := `"` + strings.TrimSpace(strings.TrimPrefix(modLine, "module")) + `/probe/testkit"`

	type pkg struct{ tests, importsKit, golden bool }
	pkgs := map[string]*pkg{}
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		if !strings.HasSuffix(path, ".go") || rel == filepath.Join("probe", "testkit") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		src := string(data)
		if !strings.HasSuffix(path, "_test.go") {
			if strings.Contains(src, self) {
				t.Errorf("%s imports testkit, which is for tests only", path)
			}
			return nil
		}
		p := pkgs[rel]
		if p == nil {
			p = &pkg{}
			pkgs[rel] = p
		}
		p.tests = true
		p.importsKit = p.importsKit || strings.Contains(src, self)
		p.golden = p.golden || strings.Contains(src, "testkit.Golden(")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	guide, err := os.ReadFile(filepath.Join(root, "launcher", "help", "testing.md"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, line := range strings.Split(string(guide), "\n") {
		if strings.HasPrefix(line, "go test ") && strings.Contains(line, " -update") {
			for _, f := range strings.Fields(line) {
				if strings.HasPrefix(f, ".") {
					patterns = append(patterns, f)
				}
			}
		}
	}
	if len(patterns) == 0 {
		t.Fatal("launcher/help/testing.md has no `go test … -update` line")
	}
	named := func(dir string) bool {
		for _, p := range patterns {
			p = strings.TrimPrefix(strings.TrimPrefix(p, "."), "/")
			if rest, ok := strings.CutSuffix(p, "..."); ok {
				rest = strings.TrimSuffix(rest, "/")
				if rest == "" || dir == rest || strings.HasPrefix(dir, rest+"/") {
					return true
				}
			} else if dir == p || p == "" && dir == "." {
				return true
			}
		}
		return false
	}
	for dir, p := range pkgs {
		dir = filepath.ToSlash(dir)
		switch {
		case p.golden && !named(dir):
			t.Errorf("the testing guide's -update line (%s) does not name ./%s, which has golden files", strings.Join(patterns, " "), dir)
		case named(dir) && !p.importsKit:
			t.Errorf("the testing guide's -update line (%s) names ./%s, whose tests do not define -update", strings.Join(patterns, " "), dir)
		}
	}
}
