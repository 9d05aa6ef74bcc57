package launcher

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/view"
)

// parseIntruder reads what follows the marker. User and command come from
// ps on the host; both are sanitised, the command may be empty (the
// process ended meanwhile).
func parseIntruder(s string) (record.Intruder, bool) {
	f := strings.SplitN(strings.TrimSpace(s), " ", 3)
	if len(f) < 2 {
		return record.Intruder{}, false
	}
	gpu, err1 := strconv.Atoi(f[0])
	pid, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || gpu < 0 || pid <= 0 {
		return record.Intruder{}, false
	}
	in := record.Intruder{GPU: gpu, PID: pid}
	if len(f) == 3 {
		user, cmd, _ := strings.Cut(strings.TrimSpace(f[2]), " ")
		in.User = view.SanitizeCells([]string{user})[0]
		in.Command = strings.TrimSpace(view.SanitizeCells([]string{cmd})[0])
	}
	return in, true
}

// intruder records in, seen on host, for each task using its GPU; the
// first sighting of a pid on a task's GPU is said on the console.
func (b *usageBook) intruder(host string, in record.Intruder) {
	b.mu.Lock()
	defer b.mu.Unlock()
	in.Seen = time.Now().UTC().Truncate(time.Second)
	for _, i := range b.byHost[host][in.GPU] {
		if b.intruders == nil {
			b.intruders = map[int][]record.Intruder{}
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
			b.say(i, fmt.Sprintf("intruder on GPU %d: %s", in.GPU, view.IntruderName(in)))
		}
	}
}

// intrudersOf is task i's intruders, nil when none was seen.
func (b *usageBook) intrudersOf(i int) []record.Intruder {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.intruders[i]
}
