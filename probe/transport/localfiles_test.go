package transport

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
)

// Identity and known_hosts files no dial could read are refused before
// any: a device, a FIFO. Missing files and /dev/null are fine.
func TestCheckLocalFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "id")
	os.WriteFile(key, []byte("key"), 0o600)
	for _, c := range []struct {
		h    inventory.Host
		want string
	}{
		{inventory.Host{Name: "a", IdentityFiles: []string{key, filepath.Join(dir, "missing")}, KnownHostsFiles: []string{os.DevNull, filepath.Join(dir, "kh")}}, ""},
		{inventory.Host{Name: "a", IdentityFiles: []string{key, "/dev/zero"}}, "a: identity file /dev/zero: not a regular file (a character device)"},
		{inventory.Host{Name: "b", IdentityFiles: []string{fifo}}, "b: identity file " + fifo + ": not a regular file (a FIFO)"},
		{inventory.Host{Name: "c", KnownHostsFiles: []string{key, fifo}}, "c: known_hosts: " + fifo + ": not a regular file (a FIFO)"},
		{inventory.Host{Name: "d", KnownHostsFiles: []string{"/dev/zero"}}, "d: known_hosts: /dev/zero: not a regular file (a character device)"},
		{inventory.Host{Name: "e", KnownHostsFiles: []string{dir}}, "e: known_hosts: " + dir + ": not a regular file (a directory)"},
		{inventory.Host{Name: "local", Local: true, IdentityFiles: []string{"/dev/zero"}}, ""},
	} {
		err := CheckLocalFiles([]inventory.Host{c.h})
		if got := ""; err != nil {
			got = err.Error()
			if got != c.want {
				t.Errorf("%+v: %q, want %q", c.h, got, c.want)
			}
		} else if c.want != "" {
			t.Errorf("%+v: no error, want %q", c.h, c.want)
		}
	}
}
