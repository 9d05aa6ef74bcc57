package testkit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// BelowTheCommands fails t for each Go file of the current directory
// (its tests aside) that imports the commands, the CLI (urfave/cli) or
// what renders for people (view), or a package below one, or reads the
// environment (os.Getenv and its kin): for a package whose caller passes
// in all it needs and prints what it returns (launcher/job,
// launcher/sweepjob).
func BelowTheCommands(t *testing.T) {
	t.Helper()
	forbidden := []string{
		"github.com/tfhive/tfhive/launcher/commands",
		"github.com/tfhive/tfhive/launcher/cli",
		"github.com/tfhive/tfhive/launcher/view",
		"github.com/urfave/cli",
	}
	env := map[string]bool{"Getenv": true, "LookupEnv": true, "Environ": true, "ExpandEnv": true, "Setenv": true}
	files, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := f.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range file.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, p := range forbidden {
				if path == p || strings.HasPrefix(path, p+"/") {
					t.Errorf("%s imports %s", name, path)
				}
			}
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "os" && env[sel.Sel.Name] {
					t.Errorf("%s reads the environment (os.%s): its caller passes in what it needs", name, sel.Sel.Name)
				}
			}
			return true
		})
	}
}
