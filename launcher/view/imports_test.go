package view

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// view writes to the writer it is given and nothing else: its code
// imports no package that reaches files, processes or the network, and
// of tfhive's own only the data it renders.
func TestImportsOnlyData(t *testing.T) {
	allowed := map[string]bool{
		"github.com/tfhive/tfhive/launcher/record": true,
		"github.com/tfhive/tfhive/schedule":        true,
		"github.com/tfhive/tfhive/probe/inventory": true,
		"github.com/tfhive/tfhive/probe/wording":   true,
	}
	forbidden := []string{"os", "os/exec", "net", "syscall", "io/fs", "path/filepath"}
	files, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := f.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range file.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case strings.HasPrefix(path, "github.com/tfhive/tfhive/") && !allowed[path]:
				t.Errorf("%s imports %s: view renders data, it does not fetch it", name, path)
			case strings.HasPrefix(path, "golang.org/x/crypto"):
				t.Errorf("%s imports %s: no SSH in view", name, path)
			}
			for _, p := range forbidden {
				if path == p || strings.HasPrefix(path, p+"/") {
					t.Errorf("%s imports %s: view writes only to its io.Writer", name, path)
				}
			}
		}
	}
}
