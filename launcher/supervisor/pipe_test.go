package supervisor

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/remote/shscript"
)

// tfhive_pipe's descriptor is a pipe this shell holds both ends of: empty
// at first (read -t 0 fails, a read with a timeout waits it out), a word
// written is read back, and it never ends (no EOF). On bash 5.1 and later
// it costs no process: $! stays unset, where a process substitution sets it.
func TestPipeBothEnds(t *testing.T) {
	script := shscript.Load(Scripts, "scripts/pipe.sh").Text() + `
tfhive_pipe 10
[ -p /dev/fd/10 ] || { echo "not a pipe"; exit 1; }
if read -r -t 0 -u 10; then echo "a word in a new pipe"; exit 1; fi
if read -r -t 0.05 -u 10 w; then echo "read $w, or EOF, from an empty pipe"; exit 1; fi
printf 'b\n' >&10
read -r -t 0 -u 10 || { echo "no word after a write"; exit 1; }
read -r -t 1 -u 10 w && [ "$w" = b ] || { echo "read [$w]"; exit 1; }
if ((BASH_VERSINFO[0] > 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] >= 1))) && [ -n "$!" ]; then
	echo "a process for the pipe on bash $BASH_VERSION"; exit 1
fi
echo ok`
	out, err := exec.Command("bash", "--norc", "-c", script).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("%v: %s", err, out)
	}
}
