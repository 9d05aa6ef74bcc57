package testkit

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update is the -update flag of every test binary that imports testkit: a
// package that defined its own as well would panic at start-up.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with what the tests got")

// Golden compares got with the golden file at path. With -update it
// writes got there instead, making the directory, for a person to review
// in the diff.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (after checking the change, -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
