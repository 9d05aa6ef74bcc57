package lifecycle

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// forbidden are the imports that would let the lifecycle act instead of
// decide: the operating system, the network, SSH, the host protocol and
// the engine. A prefix forbids its subpackages too.
var forbidden = []string{
	"os", "os/exec", "os/signal", "net", "syscall",
	"golang.org/x/crypto/ssh",
	"github.com/tfhive/tfhive/probe/remote",
	"github.com/tfhive/tfhive/probe/transport",
	"github.com/tfhive/tfhive/launcher/supervisor",
}

// clock are the time package's functions that read or wait on the clock.
var clock = []string{"Now", "Since", "Until", "After", "AfterFunc", "Sleep", "Tick", "NewTimer", "NewTicker"}

// The package's own files (not its tests, which may use anything) import
// nothing forbidden and read no clock, so that the rule cannot rot.
func TestImportsNoOSNoClock(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		timeName := ""
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			for _, bad := range forbidden {
				if path == bad || strings.HasPrefix(path, bad+"/") || path == "github.com/tfhive/tfhive/launcher" {
					t.Errorf("%s imports %s", name, path)
				}
			}
			if path == "time" {
				timeName = "time"
				if im.Name != nil {
					timeName = im.Name.Name
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if s, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := s.X.(*ast.Ident); ok && timeName != "" && x.Name == timeName && slices.Contains(clock, s.Sel.Name) {
					t.Errorf("%s reads the clock: time.%s", name, s.Sel.Name)
				}
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no file checked")
	}
}
