package supervisor

import (
	"strconv"
	"strings"
	"time"

	"github.com/tfhive/tfhive/probe/remote/shscript"
)

var sampleSh = shscript.Load(Scripts, "scripts/sample.sh")

// SampleInput is a host's sampler (scripts/sample.sh) as a stage for
// Command or the host's multiplexer: the GPUs of the run's
// tasks there, every interval, each line behind tag (empty in a session
// of its own).
func SampleInput(gpus []int, every time.Duration, run, tag string) string {
	ids := make([]string, len(gpus))
	for i, g := range gpus {
		ids[i] = strconv.Itoa(g)
	}
	s := sampleSh.With(
		shscript.Set("tfhive_ids", strings.Join(ids, ",")),
		shscript.Set("tfhive_every", strconv.FormatFloat(every.Seconds(), 'f', 3, 64)),
		shscript.Set("tfhive_run", run),
		shscript.Set("tfhive_tag", tag),
	)
	return strconv.Itoa(len(s)) + "\n" + s
}

// SampleMarker starts each sample of a host's sampler session
// (scripts/sample.sh): what a login shell printed before the first one is
// not a sample.
const SampleMarker = "@@tfhive-sample"

// IntruderMarker starts a sampler's line naming a process on one of the
// run's GPUs that does not descend from the run's claim holders or
// supervisors (scripts/sample.sh): "@@tfhive-intruder GPU PID USER
// COMMAND".
const IntruderMarker = "@@tfhive-intruder"
