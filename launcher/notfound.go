package launcher

import (
	"regexp"
	"strings"
)

// notFoundLine is task.sh's line for a command, or an interpreter's
// script, that is not on the host: "tfhive: python3: script train.py not
// found in /home/ann", "tfhive: nosuch: command not found in /home/ann".
var notFoundLine = regexp.MustCompile(`^tfhive: \S+: (command|script \S+) not found in `)

// notFoundHint is what may help when a task exited 127 with task.sh's
// not-found line as its last line on stderr, "" otherwise. It is said
// once a run, however many tasks met it (the hint used to end every
// task's line: 230 characters, once per task). The line is the task's
// own output: it only chooses a hint, it is never taken for a fact.
// synced: the run has a --sync tree.
func notFoundHint(code int, last []string, synced bool) string {
	if code != 127 || len(last) == 0 {
		return ""
	}
	m := notFoundLine.FindStringSubmatch(last[len(last)-1])
	if m == nil {
		return ""
	}
	hint := "--sync DIR sends your code; workdir: in the hosts file (or --workdir) sets where tasks start"
	if synced {
		hint = "is it in the tree --sync sent? git-ignored files are not sent"
	}
	cmd := strings.Fields(last[len(last)-1])[1]
	if m[1] == "command" && !strings.Contains(cmd, "/") {
		hint = "setup: in the hosts file can set PATH or activate a venv; " + hint
	}
	return "tfhive: hint: " + hint
}
