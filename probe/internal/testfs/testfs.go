// Package testfs makes the files the probe packages' tests read: plain
// files, a FIFO nobody writes to, a huge sparse file. For tests only.
//
// It imports only the standard library.
package testfs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// WriteFile writes content to dir/name, making the directories it needs,
// and returns the path.
func WriteFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// FIFO makes a named pipe nobody writes to: opening it for reading the
// ordinary way blocks for ever, so a test that hangs here has found the bug.
func FIFO(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// SparseFile is a file of size bytes that costs no disk.
func SparseFile(t testing.TB, size int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "big")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	return p
}
