package rundir

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfhive/tfhive/probe/testkit"
)

// Follow copies a file from an offset, and while the run goes on (its
// lock held) what is added to it, until the run ends: all that was
// written before the end is read.
func TestFollow(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r1")
	if err := Make(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, Console)
	if err := os.WriteFile(path, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Follow(context.Background(), &out, path, 4, dir, true); err != nil || out.String() != "two\n" {
		t.Fatalf("an ended run from byte 4: %q, %v", out.String(), err)
	}
	release, err := HoldLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	w := &testkit.SyncBuffer{}
	go func() { done <- Follow(context.Background(), w, path, 0, dir, true) }()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("three\n")
	f.Close()
	release()
	if err := <-done; err != nil || w.String() != "one\ntwo\nthree\n" {
		t.Errorf("a run that went on: %q, %v", w.String(), err)
	}
}
