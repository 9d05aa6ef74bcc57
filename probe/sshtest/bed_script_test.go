package sshtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A kept directory removed before a separate host starts (another test's,
// ended meanwhile) is left out, and the host starts, the others kept
// still seen behind its private /tmp.
func TestSeparateScriptKeptDirGone(t *testing.T) {
	RequireSeparate(t)
	if err := os.MkdirAll(stageDir, 0o755); err != nil {
		t.Fatal(err)
	}
	base, err := os.MkdirTemp("/tmp", "sshtest-script-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	kept, gone := filepath.Join(base, "kept"), filepath.Join(base, "gone")
	if err := os.MkdirAll(kept, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(kept, "tool"), []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mid := filepath.Join(base, "machine-id")
	if err := os.WriteFile(mid, []byte("0123456789abcdef0123456789abcdef\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	host := func(keep ...string) (string, error) {
		args := []string{"--pid", "--fork", "--mount-proc", "--mount", "--uts", "--kill-child=SIGKILL", "--",
			"/bin/sh", "-c", separateScript, "sshtest-host", "scripted", mid, "", "", filepath.Join(base, "seen"), stageDir}
		args = append(append(args, keep...), "--", "sh", "-c", `cat "$1"/tool; ls "$2"`, "sh", kept, base)
		out, err := exec.Command("unshare", args...).CombinedOutput()
		return string(out), err
	}
	// The host's /tmp shows base with kept alone in it: the file, then
	// ls's one name.
	if out, err := host(gone, kept); err != nil || out != "kept\nkept\n" {
		t.Errorf("a kept directory gone: %v\n%q, want the kept file's line and the kept directory alone", err, out)
	}
}
