package probe

import (
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/probe/inventory"
)

// psEntry is what ps said about one process.
type psEntry struct {
	User, Command string
}

// parsePS reads the output of `ps -o pid= -o user:32= -o args= -p LIST`.
// The pid and user columns never contain spaces, so everything after them is
// the command line, whose own spacing is kept. Lines that do not start with a
// pid (ps error messages sharing the stream) are skipped.
func parsePS(out []byte) map[int]psEntry {
	entries := make(map[int]psEntry)
	for line := range strings.Lines(string(out)) {
		rest := strings.TrimLeft(line, " \t")
		pidField, rest, _ := strings.Cut(rest, " ")
		pid, err := strconv.Atoi(pidField)
		if err != nil || pid <= 0 {
			continue
		}
		rest = strings.TrimLeft(rest, " \t")
		user, args, _ := strings.Cut(rest, " ")
		user = strings.TrimSpace(user)
		if user == "" {
			continue
		}
		entries[pid] = psEntry{
			User:    user,
			Command: strings.TrimSpace(sanitizeText(args)),
		}
	}
	return entries
}

// fillOwners sets each GPU process's User, and replaces its Command with ps's
// full command line, which says far more than nvidia-smi's process_name (only
// argv[0], and empty when nvidia-smi runs in another PID namespace). Processes
// ps does not know keep User "" and nvidia-smi's name.
func fillOwners(gpus []inventory.GPU, ps map[int]psEntry) {
	for i := range gpus {
		for j := range gpus[i].Processes {
			p := &gpus[i].Processes[j]
			e, ok := ps[p.PID]
			if !ok || p.PID == 0 {
				continue
			}
			p.User = e.User
			if e.Command != "" {
				p.Command = e.Command
			}
		}
	}
}
