package localfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/internal/testfs"
	"github.com/tfhive/tfhive/probe/localfile"
)

// nobody is a uid that is neither the test's nor root's.
const nobody = 65534

// ReadOwned reads a file only its owner (the user or root) can have
// written, in a directory nobody else can write to; anything else is a
// *NotOwnedError saying why.
func TestReadOwned(t *testing.T) {
	root := os.Geteuid() == 0
	tests := []struct {
		name     string
		needRoot bool // chown to another user
		// prepare makes the file in the test's own directory dir (0755)
		// and returns its path.
		prepare func(t *testing.T, dir string) string
		want    string // "" for read, else the refusal
	}{
		{"your own file", false, func(t *testing.T, dir string) string {
			return file(t, dir, "hosts.yaml", 0o644)
		}, ""},
		{"a link of yours to a file of yours", false, func(t *testing.T, dir string) string {
			to := file(t, dir, "real.yaml", 0o600)
			link := filepath.Join(dir, "hosts.yaml")
			must(t, os.Symlink(to, link))
			return link
		}, ""},
		{"writable by its group", false, func(t *testing.T, dir string) string {
			return file(t, dir, "hosts.yaml", 0o664)
		}, "it is writable by its group"},
		{"writable by others", false, func(t *testing.T, dir string) string {
			return file(t, dir, "hosts.yaml", 0o646)
		}, "it is writable by others"},
		{"in a directory others may write to", false, func(t *testing.T, dir string) string {
			must(t, os.Chmod(dir, 0o777))
			return file(t, dir, "hosts.yaml", 0o644)
		}, "its directory DIR is writable by group and others"},
		{"in a sticky directory others may write to", false, func(t *testing.T, dir string) string {
			must(t, os.Chmod(dir, 0o777|os.ModeSticky))
			return file(t, dir, "hosts.yaml", 0o644)
		}, "its directory DIR is writable by group and others"},
		{"a link of yours into such a directory", false, func(t *testing.T, dir string) string {
			open := filepath.Join(dir, "open")
			must(t, os.Mkdir(open, 0o755))
			must(t, os.Chmod(open, 0o775))
			to := file(t, open, "real.yaml", 0o644)
			link := filepath.Join(dir, "hosts.yaml")
			must(t, os.Symlink(to, link))
			return link
		}, "its directory DIR/open is writable by its group"},
		{"another user's file", true, func(t *testing.T, dir string) string {
			p := file(t, dir, "hosts.yaml", 0o644)
			must(t, os.Chown(p, nobody, nobody))
			return p
		}, "it is owned by NOBODY, not by you or root"},
		{"another user's link to your file", true, func(t *testing.T, dir string) string {
			to := file(t, dir, "real.yaml", 0o600)
			link := filepath.Join(dir, "hosts.yaml")
			must(t, os.Symlink(to, link))
			must(t, os.Lchown(link, nobody, nobody))
			return link
		}, "it is a symbolic link owned by NOBODY"},
		{"in another user's directory", true, func(t *testing.T, dir string) string {
			sub := filepath.Join(dir, "theirs")
			must(t, os.Mkdir(sub, 0o755))
			p := file(t, sub, "hosts.yaml", 0o644)
			must(t, os.Chown(sub, nobody, nobody))
			return p
		}, "its directory DIR/theirs is owned by NOBODY, not by you or root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needRoot && !root {
				t.Skip("chown to another user needs root")
			}
			dir := t.TempDir()
			must(t, os.Chmod(dir, 0o755))
			path := tt.prepare(t, dir)
			data, err := localfile.ReadOwned(path, 100)
			if tt.want == "" {
				if err != nil || string(data) != "hosts: [a]\n" {
					t.Fatalf("ReadOwned = %q, %v; want the file", data, err)
				}
				return
			}
			var no *localfile.NotOwnedError
			if !errors.As(err, &no) || no.Path != path {
				t.Fatalf("ReadOwned = %q, %v; want a *NotOwnedError for %s", data, err, path)
			}
			want := tt.want
			for from, to := range map[string]string{"DIR": dir, "NOBODY": localfile.UserName(nobody)} {
				want = strings.ReplaceAll(want, from, to)
			}
			if no.Why != want {
				t.Errorf("why %q, want %q", no.Why, want)
			}
			if data != nil {
				t.Errorf("refused, yet data returned: %q", data)
			}
		})
	}
	if _, err := localfile.ReadOwned(filepath.Join(t.TempDir(), "missing"), 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
	if _, err := localfile.ReadOwned(testfs.FIFO(t), 100); err == nil || errors.As(err, new(*localfile.NotOwnedError)) {
		t.Errorf("FIFO: %v, want Read's refusal", err)
	}
}

func file(t *testing.T, dir, name string, mode os.FileMode) string {
	t.Helper()
	p := testfs.WriteFile(t, dir, name, "hosts: [a]\n")
	must(t, os.Chmod(p, mode))
	return p
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
