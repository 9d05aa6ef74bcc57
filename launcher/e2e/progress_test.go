package e2e

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// progressEnv, set to 0, turns the progress lines off.
const progressEnv = "TFHIVE_E2E_PROGRESS"

// startProgress makes the package say, as each of its tests ends, that it
// did, where the person or CI log that ran go test sees it at once: the
// package takes minutes, and go test ./... holds a package's output until
// the package ends (it streams only with -v and one package, or -json),
// which left 20 minutes of silence. The lines go to the go command's own
// stderr (this process's parent's), when that is a terminal or a pipe (a
// regular file's offset is go's to keep); the package's output is what
// -v prints, which go shows only for a package that failed. It changes
// nothing under -v or -json (which stream with one package: go test
// cannot be asked whether it does), when go is not the parent, or with
// TFHIVE_E2E_PROGRESS=0. It returns what flushes the
// output at the end.
func startProgress() (done func()) {
	flag.Parse()
	v := flag.Lookup("test.v")
	if v == nil || v.Value.String() != "false" || os.Getenv(progressEnv) == "0" {
		return func() {}
	}
	sink := goStderr()
	if sink == nil {
		return func() {}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		sink.Close()
		return func() {}
	}
	// -v's lines are what the progress is read from.
	flag.Set("test.v", "true")
	out := os.Stdout
	os.Stdout = pw
	start := time.Now()
	fmt.Fprintln(sink, "launcher/e2e     0s  building tfhive and the test trainer; a line per test as it ends")
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		defer sink.Close()
		r := bufio.NewReader(pr)
		for {
			line, err := r.ReadString('\n')
			io.WriteString(out, line)
			// A top-level test's end; a subtest's is indented.
			for _, verdict := range []string{"--- PASS: ", "--- FAIL: ", "--- SKIP: "} {
				if name, ok := strings.CutPrefix(line, verdict); ok {
					fmt.Fprintf(sink, "launcher/e2e %6s  %s %s", time.Since(start).Round(time.Second),
						strings.TrimSuffix(strings.TrimPrefix(verdict, "--- "), " "), name)
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return func() {
		os.Stdout = out
		pw.Close()
		<-copied
	}
}

// goStderr opens the go command's stderr when this process is go test's
// child and that stderr is a terminal or a pipe.
func goStderr() *os.File {
	ppid := os.Getppid()
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", ppid))
	if err != nil || filepath.Base(exe) != "go" {
		return nil
	}
	path := fmt.Sprintf("/proc/%d/fd/2", ppid)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeCharDevice) == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil
	}
	return f
}
