package launcher

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/view"
)

// intruderMarker starts a sampler's line naming a process on one of the
// run's GPUs that does not descend from the run's claim holders or
// supervisors (scripts/sample.sh): "@@tfhive-intruder GPU PID USER
// COMMAND".
const intruderMarker = "@@tfhive-intruder"

// Intruder is a process --sample saw on one of a task's GPUs that was not
// the run's: another user's job, or one started by hand beside the run.
// It is reported, never signalled.
type Intruder struct {
	GPU     int       `json:"gpu"`
	PID     int       `json:"pid"`
	User    string    `json:"user"`
	Command string    `json:"command"`
	Seen    time.Time `json:"first_seen"`
}

// String is how the console and the summary name it: user:pid command,
// as tfhive status names a GPU's processes.
func (in Intruder) String() string {
	user := in.User
	if user == "" {
		user = "?"
	}
	return fmt.Sprintf("%s:%d %s", user, in.PID, view.Truncate(in.Command, 60))
}

// parseIntruder reads what follows the marker. User and command come from
// ps on the host; both are sanitised, the command may be empty (the
// process ended meanwhile).
func parseIntruder(s string) (Intruder, bool) {
	f := strings.SplitN(strings.TrimSpace(s), " ", 3)
	if len(f) < 2 {
		return Intruder{}, false
	}
	gpu, err1 := strconv.Atoi(f[0])
	pid, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || gpu < 0 || pid <= 0 {
		return Intruder{}, false
	}
	in := Intruder{GPU: gpu, PID: pid}
	if len(f) == 3 {
		user, cmd, _ := strings.Cut(strings.TrimSpace(f[2]), " ")
		in.User = view.SanitizeCells([]string{user})[0]
		in.Command = strings.TrimSpace(view.SanitizeCells([]string{cmd})[0])
	}
	return in, true
}

// intruder records in, seen on host, for each task using its GPU; the
// first sighting of a pid on a task's GPU is said on the console.
func (b *usageBook) intruder(host string, in Intruder) {
	b.mu.Lock()
	defer b.mu.Unlock()
	in.Seen = time.Now().UTC().Truncate(time.Second)
	for _, i := range b.byHost[host][in.GPU] {
		if b.intruders == nil {
			b.intruders = map[int][]Intruder{}
		}
		known := false
		for _, x := range b.intruders[i] {
			known = known || (x.PID == in.PID && x.GPU == in.GPU)
		}
		if known {
			continue
		}
		b.intruders[i] = append(b.intruders[i], in)
		if b.say != nil {
			b.say(i, fmt.Sprintf("intruder on GPU %d: %s", in.GPU, in))
		}
	}
}

// intrudersOf is task i's intruders, nil when none was seen.
func (b *usageBook) intrudersOf(i int) []Intruder {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.intruders[i]
}

// writeIntruderNotes: one line per intruder seen on a task's GPUs.
func writeIntruderNotes(w io.Writer, s *Summary) error {
	for _, t := range s.Tasks {
		for _, in := range t.Intruders {
			if _, err := fmt.Fprintf(w, "note: %s on %s: intruder on GPU %d: %s (first seen %s)\n", t.ID, view.SanitizeCells([]string{t.Host})[0],
				in.GPU, in, in.Seen.Format("15:04:05 UTC")); err != nil {
				return err
			}
		}
	}
	return nil
}
