package e2e

import (
	"os"
	"strings"
	"testing"
)

// `tfhive version`, `--version` and `-v` print the one same line, as git
// and go do.
func TestVersionOneLine(t *testing.T) {
	dir := t.TempDir()
	var first string
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		r := tfhive(t, os.Environ(), dir, args...)
		wantCode(t, r, 0)
		if !strings.HasPrefix(r.stdout, "tfhive version ") || strings.Count(r.stdout, "\n") != 1 || r.stderr != "" {
			t.Errorf("%q: stdout %q, stderr %q", args, r.stdout, r.stderr)
		}
		if first == "" {
			first = r.stdout
		} else if r.stdout != first {
			t.Errorf("%q prints %q, `tfhive version` %q", args, r.stdout, first)
		}
	}
}
