package profiling

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A profiled process leaves its four files, its own and 0600.
func TestStartWritesTheProfiles(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(Env, dir)
	var stderr bytes.Buffer
	Start(&stderr)()
	if stderr.Len() != 0 {
		t.Errorf("stderr: %q", stderr.String())
	}
	for _, name := range []string{"cpu.pprof", "trace.out", "block.pprof", "mutex.pprof"} {
		fi, err := os.Lstat(filepath.Join(dir, fmt.Sprintf("%d-%s", os.Getpid(), name)))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", name, fi, err)
		}
	}
}

// A link planted where the profile goes is never written through: the
// process runs unprofiled and says so.
func TestStartNeverWritesThroughALink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(target, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, fmt.Sprintf("%d-cpu.pprof", os.Getpid()))); err != nil {
		t.Fatal(err)
	}
	t.Setenv(Env, dir)
	var stderr bytes.Buffer
	Start(&stderr)()
	if !strings.HasPrefix(stderr.String(), "tfhive: warning: TFHIVE_PROFILE: ") || !strings.HasSuffix(stderr.String(), "; not profiled\n") {
		t.Errorf("stderr: %q", stderr.String())
	}
	if b, _ := os.ReadFile(target); string(b) != "precious" {
		t.Errorf("the link's target now holds %q", b)
	}
}
