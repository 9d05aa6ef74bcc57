package rundir

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// rundir is below the commands and the engine: of tfhive's own it
// imports only probe/localfile, and nothing of the CLI, the commands or
// view, so that the engine, the commands, the report and launcher/job
// can all use it.
func TestImportsNoCommands(t *testing.T) {
	allowed := map[string]bool{
		"github.com/tfhive/tfhive/probe/localfile": true,
	}
	for _, name := range goFiles(t, ".") {
		file, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range file.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case strings.HasPrefix(path, "github.com/tfhive/tfhive/") && !allowed[path]:
				t.Errorf("%s imports %s: the run's directory is below the commands and the engine", name, path)
			case strings.HasPrefix(path, "github.com/urfave/"):
				t.Errorf("%s imports %s: no CLI in rundir", name, path)
			}
		}
	}
}

// The names of a run's directory are spelled here only: no other
// package's code (tests aside) has them as a string of its own.
func TestNamesSpelledHereOnly(t *testing.T) {
	names := map[string]bool{}
	for _, n := range []string{Summary, Plan, Repro, Console, KeeperLog, Lock, Events, Metrics,
		LiveMetrics, GPUUsage, Report, Sweep} {
		names[strconv.Quote(n)] = true
	}
	root := filepath.Join("..", "..")
	here := filepath.Join(root, "launcher", "rundir")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == here || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && names[lit.Value] {
				t.Errorf("%s spells %s: use rundir's name", path, lit.Value)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// goFiles are the non-test Go files of dir.
func goFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out
}
