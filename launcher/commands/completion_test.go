package commands

import (
	"os"
	"os/exec"
	"testing"
)

// The completion scripts parse in their shells, and the bash one passes
// shellcheck. What they complete is tested with the real binary in
// launcher/e2e.
func TestCompletionScriptsParse(t *testing.T) {
	for _, c := range [][]string{
		{"bash", "-n", "completion/tfhive.bash"},
		{"zsh", "-n", "completion/tfhive.zsh"},
		{"fish", "--no-execute", "completion/tfhive.fish"},
		{"shellcheck", "--shell=bash", "completion/tfhive.bash"},
	} {
		if _, err := exec.LookPath(c[0]); err != nil {
			// CI installs every one of them (.ci/run).
			if os.Getenv("CI") == "true" {
				t.Errorf("%s is required in CI", c[0])
			} else {
				t.Logf("no %s here: %s not checked", c[0], c[2])
			}
			continue
		}
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Errorf("%v: %v\n%s", c, err, out)
		}
	}
}
