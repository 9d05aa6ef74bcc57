package supervisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The task's shell says in one plain line that a command, or an
// interpreter's script, is not there, with where it looked and a hint,
// and exits 127; anything else is exec'd as given.
func TestTaskShellNotFound(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "there.sh"), []byte("exit 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		argv   []string
		code   int
		stderr string // "" none
	}{
		{[]string{"nosuchcmd", "a"}, 127, "tfhive: nosuchcmd: command not found in " + dir + "\n"},
		{[]string{"./nosuch"}, 127, "tfhive: ./nosuch: command not found in " + dir + "\n"},
		{[]string{"bash", "-e", "nosuch.sh"}, 127, "tfhive: bash: script nosuch.sh not found in " + dir + "\n"},
		{[]string{"sh", "there.sh"}, 9, ""},
		{[]string{"./there.sh"}, 126, "tfhive: ./there.sh: not an executable file, in " + dir +
			" (hint: chmod +x it, or name its interpreter: sh ./there.sh)\n"},
		{[]string{"sh", "-c", "exit 3"}, 3, ""},
		{[]string{"bash", "-x", "-o", "nosuch"}, 2, "nosuch: invalid option name"}, // -o takes a value: bash's own say
	} {
		s := taskShell(Task{Workdir: dir, Argv: tt.argv})
		cmd := exec.Command("bash", "-c", s, "tfhive-task")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tt.code || (tt.stderr == "" && stderr.Len() > 0) || !strings.Contains(stderr.String(), tt.stderr) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d, %q", tt.argv, code, stderr.String(), tt.code, tt.stderr)
		}
	}
	// The line alone: the hint is tfhive's to say, once a run.
	cmd := exec.Command("bash", "-c", taskShell(Task{Workdir: dir, Argv: []string{"bash", "train.sh"}}), "tfhive-task")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TFHIVE_CODE_DIR=" + dir}
	out, err := cmd.CombinedOutput()
	if want := "tfhive: bash: script train.sh not found in " + dir + "\n"; string(out) != want {
		t.Errorf("--sync: %v %q, want %q", err, out, want)
	}
}
