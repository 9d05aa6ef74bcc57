// Package shscripttest checks embedded shell scripts from a package's
// tests: shellcheck over every file, and that the text sent means what the
// file says. It imports the standard library and shscript; only tests
// import it.
package shscripttest

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/remote/shscript"
)

// need finds a program the check runs: without it the test is skipped,
// except in CI, where the check must run.
func need(t *testing.T, program string) {
	t.Helper()
	if _, err := exec.LookPath(program); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI", program)
		}
		t.Skipf("no %s here", program)
	}
}

// Shellcheck runs shellcheck, at its default severity, over every .sh
// file of fsys. The files are read on disk: an embedded FS's paths are
// relative to the package directory, where go test runs.
func Shellcheck(t *testing.T, fsys fs.FS) {
	t.Helper()
	need(t, "shellcheck")
	var files []string
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".sh") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no .sh file embedded")
	}
	if out, err := exec.Command("shellcheck", files...).CombinedOutput(); err != nil {
		t.Errorf("shellcheck %s: %v\n%s", strings.Join(files, " "), err, out)
	}
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range LateQuiet(string(b)) {
			t.Errorf("%s:%d: 2>/dev/null after an input from a file: the shell opens that file first, and says on stderr that it cannot (put 2>/dev/null first)", f, l)
		}
	}
}

// lateQuiet is an input redirection from a file, then 2>/dev/null on the
// same command: redirections apply left to right, so a file that cannot
// be opened (a process gone from /proc, a file not yet made) is reported
// on the command's stderr before it is silenced. Where stderr is a task's
// stream, that line becomes part of the task's output.
var lateQuiet = regexp.MustCompile(`(^|[\s;(|&])<\s*("[^"]*"|[^\s&(<>;|]+)\s+2>\s*/dev/null`)

// LateQuiet is the lines (from 1) of script that open a file for input
// before they silence stderr. Here-strings and descriptors are not files.
func LateQuiet(script string) []int {
	var lines []int
	for i, l := range strings.Split(script, "\n") {
		if m := lateQuiet.FindStringSubmatch(l); m != nil && m[2] != "/dev/null" {
			lines = append(lines, i+1)
		}
	}
	return lines
}

// SameMeaning checks that a script's text as sent (comments dropped,
// lines maybe joined into one) parses to the same commands as its files.
func SameMeaning(t *testing.T, name string, s shscript.Script) {
	t.Helper()
	need(t, "bash")
	src, err := Canonical(s.Source())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	sent, err := Canonical(s.Text())
	if err != nil {
		t.Fatalf("%s as sent: %v", name, err)
	}
	if src != sent {
		t.Errorf("%s: the text sent parses differently from the file\nfile:\n%s\nsent:\n%s", name, src, sent)
	}
}

// Canonical is a script as bash prints it back as a function body: every
// command's words and quoting kept, comments and layout its own.
func Canonical(script string) (string, error) {
	out, err := exec.Command("bash", "--norc", "--noprofile", "-c", "tfhive_script() {\n"+script+"\n}\ndeclare -f tfhive_script").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("bash cannot parse it: %w\n%s", err, out)
	}
	return string(out), nil
}
