package probe

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const testHash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestParseCode(t *testing.T) {
	dir := "/home/me/.cache/tfhive/code/" + testHash
	for _, tt := range []struct {
		in, hash string
		dir      string
		present  bool
	}{
		{"present " + dir + "\n", testHash, dir, true},
		{"missing " + dir, testHash, dir, false},
		{"missing /home/with space/.cache/tfhive/code/" + testHash + "\n", testHash, "/home/with space/.cache/tfhive/code/" + testHash, false},
		// What the host says is checked.
		{"present /elsewhere/" + testHash + "x", testHash, "", false},
		{"present relative/" + testHash, testHash, "", false},
		{"present /a\x1b]0;x/" + testHash, testHash, "", false},
		{"yes " + dir, testHash, "", false},
		{"", testHash, "", false},
		{"present " + dir, "", "", false}, // nothing was asked
	} {
		d, p := parseCode([]byte(tt.in), tt.hash)
		if d != tt.dir || p != tt.present {
			t.Errorf("parseCode(%q) = %q, %v; want %q, %v", tt.in, d, p, tt.dir, tt.present)
		}
	}
}

func TestSplitProbeOutputCode(t *testing.T) {
	const nic = "1: lo    inet 127.0.0.1/8 scope host lo"
	for _, tt := range []struct{ in, tcp, nic, code string }{
		{"@@tfhive-smi 0\n@@tfhive-ps\n@@tfhive-tcp\nLISTEN 0.0.0.0:22\n@@tfhive-nic\n" + nic + "\n@@tfhive-code\npresent /h/x\n@@tfhive-claims m b-1 /tmp\n@@tfhive-locks\n@@tfhive-holders\n@@tfhive-end\n", "\nLISTEN 0.0.0.0:22", "\n" + nic, "present /h/x"},
		{"@@tfhive-smi 0\n@@tfhive-ps\n@@tfhive-tcp\n@@tfhive-nic\n@@tfhive-code\n@@tfhive-claims m b-1 /tmp\n@@tfhive-locks\n@@tfhive-holders\n@@tfhive-end\n", "", "", ""},
		// An older probe, without the section.
		{"@@tfhive-smi 0\n@@tfhive-ps\n@@tfhive-tcp\nLISTEN 0.0.0.0:22\n@@tfhive-nic\n" + nic + "\n@@tfhive-claims m b-1 /tmp\n@@tfhive-locks\n@@tfhive-holders\n@@tfhive-end\n", "\nLISTEN 0.0.0.0:22", "\n" + nic, ""},
	} {
		po, err := splitProbeOutput([]byte(tt.in))
		if err != nil {
			t.Fatal(err)
		}
		if string(po.tcp) != tt.tcp || string(po.nic) != tt.nic || string(po.code) != tt.code {
			t.Errorf("tcp %q nic %q code %q, want %q %q %q", po.tcp, po.nic, po.code, tt.tcp, tt.nic, tt.code)
		}
	}
}

// The probe finds a tree only where sync.sh would have put it, as a
// directory of the user's own that is not a symlink.
func TestProbeScriptCode(t *testing.T) {
	run := func(home, cache string) (string, bool) {
		t.Helper()
		cmd := exec.Command("/bin/sh", "-c", probeCommand(time.Second, true, testHash, 0, false, ""))
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "LC_ALL=C"}
		if cache != "" {
			cmd.Env = append(cmd.Env, "XDG_CACHE_HOME="+cache)
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("probe: %v", err)
		}
		po, err := splitProbeOutput(out)
		if err != nil {
			t.Fatal(err)
		}
		return parseCode(po.code, testHash)
	}
	home := t.TempDir()
	code := filepath.Join(home, ".cache", "tfhive", "code")
	if dir, present := run(home, ""); dir != filepath.Join(code, testHash) || present {
		t.Errorf("nothing cached: %q, %v", dir, present)
	}
	if err := os.MkdirAll(filepath.Join(code, testHash), 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(code, testHash), old, old)
	if dir, present := run(home, ""); dir != filepath.Join(code, testHash) || !present {
		t.Errorf("cached: %q, %v", dir, present)
	}
	if fi, err := os.Stat(filepath.Join(code, testHash)); err != nil || fi.ModTime().Before(time.Now().Add(-time.Minute)) {
		t.Errorf("the probe did not record the use: %v %v", fi.ModTime(), err)
	}
	// XDG_CACHE_HOME moves the cache; a relative one is ignored.
	if dir, present := run(home, "/nonexistent/cache"); dir != "/nonexistent/cache/tfhive/code/"+testHash || present {
		t.Errorf("XDG_CACHE_HOME: %q, %v", dir, present)
	}
	if dir, _ := run(home, "rel"); dir != filepath.Join(code, testHash) {
		t.Errorf("relative XDG_CACHE_HOME: %q", dir)
	}
	// A symlink is never a tree, wherever it points.
	other := t.TempDir()
	os.Rename(filepath.Join(code, testHash), filepath.Join(other, testHash))
	if err := os.Symlink(filepath.Join(other, testHash), filepath.Join(code, testHash)); err != nil {
		t.Fatal(err)
	}
	if _, present := run(home, ""); present {
		t.Error("a symlinked tree counts as present")
	}
	os.Remove(filepath.Join(code, testHash))
	os.Rename(filepath.Join(other, testHash), filepath.Join(code, testHash))
	os.Rename(code, filepath.Join(other, "code"))
	if err := os.Symlink(filepath.Join(other, "code"), code); err != nil {
		t.Fatal(err)
	}
	if _, present := run(home, ""); present {
		t.Error("a tree under a symlinked code/ counts as present")
	}
	if strings.Contains(probeScript(time.Second, false, testHash, 0, false), "\n") {
		t.Error("the probe holds a newline")
	}
}
