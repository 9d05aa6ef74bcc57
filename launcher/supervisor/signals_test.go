package supervisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/remote/shscript"
)

// tfhive_sigdfl puts env --default-signal before the task exactly when
// the supervisor's shell started with SIGINT or SIGQUIT ignored (bash
// ignores SIGQUIT in its own process whatever it was given: that is no
// reason), and runs env to try it only then: a shell that started with
// neither ignored starts no process for it.
func TestSigdflOnlyWhenIgnoredOnEntry(t *testing.T) {
	bin := t.TempDir()
	calls := filepath.Join(t.TempDir(), "calls")
	env, err := exec.LookPath("env")
	if err != nil {
		t.Skip("no env here")
	}
	// An env first on PATH that notes each call, then is the real one.
	fake := "#!/bin/sh\necho called >>" + calls + "\nexec " + env + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "env"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	inner := shscript.Load(Scripts, "scripts/pipe.sh", "scripts/signals.sh").Text() + `
tfhive_sigdfl
echo "dfl=[${tfhive_dfl[*]}]"`
	for _, c := range []struct {
		ignored string // what the starting shell ignores
		want    string
	}{
		{"", "dfl=[]"},
		{"QUIT", "dfl=[env --default-signal=INT,QUIT]"},
		{"INT", "dfl=[env --default-signal=INT,QUIT]"},
		{"INT QUIT", "dfl=[env --default-signal=INT,QUIT]"},
	} {
		os.Remove(calls)
		outer := `bash --norc -c "$1"`
		if c.ignored != "" {
			outer = "trap '' " + c.ignored + "; " + outer
		}
		cmd := exec.Command("bash", "--norc", "-c", outer, "outer", inner)
		cmd.Env = []string{"PATH=" + bin + ":" + os.Getenv("PATH")}
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != c.want {
			t.Errorf("ignored %q: %v: %s, want %s", c.ignored, err, out, c.want)
		}
		_, err = os.Stat(calls)
		if called := err == nil; called != (c.ignored != "") {
			t.Errorf("ignored %q: env run: %v", c.ignored, called)
		}
	}
}
