package probe

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// fifo makes a named pipe nobody writes to: opening it for reading the
// ordinary way blocks for ever, so a test that hangs here has found the bug.
func fifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// sparseFile is a file of size bytes that costs no disk.
func sparseFile(t *testing.T, size int64) string {
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

func TestReadLocalFile(t *testing.T) {
	dir := t.TempDir()
	small := writeFile(t, dir, "small", "hosts: [a]\n")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tests := []struct {
		name string
		path string
		max  int64
		want string // content, or the error
	}{
		{"regular file", small, 100, "hosts: [a]\n"},
		{"exactly the cap", small, 11, "hosts: [a]\n"},
		{"over the cap", small, 10, "too large (11 bytes, the limit is 10 bytes)"},
		{"large, refused before reading", sparseFile(t, 60<<20), 4 << 20, "too large (60 MiB, the limit is 4 MiB)"},
		{"FIFO without a writer", fifo(t), 100, "not a regular file (a FIFO)"},
		{"endless device", "/dev/zero", 100, "not a regular file (a character device)"},
		{"directory", dir, 100, "not a regular file (a directory)"},
		{"socket", filepath.Join(dir, "sock"), 100, "not a regular file (a socket)"},
		{"/dev/null reads as empty", os.DevNull, 100, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := readLocalFile(tt.path, tt.max)
			got := string(data)
			if err != nil {
				var pe *fs.PathError
				if !errors.As(err, &pe) || pe.Path != tt.path {
					t.Errorf("error %v is not a *fs.PathError naming %s", err, tt.path)
				}
				if unwrapped := unwrapPathError(err).Error(); unwrapped != tt.path+": "+pe.Err.Error() {
					t.Errorf("unwrapPathError = %q", unwrapped)
				}
				got = pe.Err.Error()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := readLocalFile(filepath.Join(dir, "missing"), 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestSizeString(t *testing.T) {
	for n, want := range map[int64]string{
		812: "812 bytes", 4 << 10: "4 KiB", 1536: "1.5 KiB", 4 << 20: "4 MiB",
		64 << 20: "64 MiB", 60<<20 + 100<<10: "60.1 MiB",
	} {
		if got := sizeString(n); got != want {
			t.Errorf("sizeString(%d) = %q, want %q", n, got, want)
		}
	}
}
