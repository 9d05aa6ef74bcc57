package localfile_test

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfhive/tfhive/probe/internal/testfs"
	"github.com/tfhive/tfhive/probe/localfile"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	small := testfs.WriteFile(t, dir, "small", "hosts: [a]\n")
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
		{"large, refused before reading", testfs.SparseFile(t, 60<<20), 4 << 20, "too large (60 MiB, the limit is 4 MiB)"},
		{"FIFO without a writer", testfs.FIFO(t), 100, "not a regular file (a FIFO)"},
		{"endless device", "/dev/zero", 100, "not a regular file (a character device)"},
		{"directory", dir, 100, "not a regular file (a directory)"},
		{"socket", filepath.Join(dir, "sock"), 100, "not a regular file (a socket)"},
		{"/dev/null reads as empty", os.DevNull, 100, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := localfile.Read(tt.path, tt.max)
			got := string(data)
			if err != nil {
				var pe *fs.PathError
				if !errors.As(err, &pe) || pe.Path != tt.path {
					t.Errorf("error %v is not a *fs.PathError naming %s", err, tt.path)
				}
				if unwrapped := localfile.Describe(err).Error(); unwrapped != tt.path+": "+pe.Err.Error() {
					t.Errorf("Describe = %q", unwrapped)
				}
				got = pe.Err.Error()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := localfile.Read(filepath.Join(dir, "missing"), 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestSizeString(t *testing.T) {
	for n, want := range map[int64]string{
		812: "812 bytes", 4 << 10: "4 KiB", 1536: "1.5 KiB", 4 << 20: "4 MiB",
		64 << 20: "64 MiB", 60<<20 + 100<<10: "60.1 MiB", 3 << 19: "1.5 MiB", 64 << 10: "64 KiB", 100: "100 bytes",
	} {
		if got := localfile.SizeString(n); got != want {
			t.Errorf("localfile.SizeString(%d) = %q, want %q", n, got, want)
		}
	}
}
