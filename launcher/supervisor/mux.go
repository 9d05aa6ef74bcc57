package supervisor

import (
	"strconv"

	"github.com/tfhive/tfhive/probe/remote/shscript"
)

var muxSh = shscript.Load(Scripts, "scripts/rundir.sh", "scripts/clock.sh", "scripts/mux.sh")

// MuxMarker starts the multiplexer's first line: "@@tfhive-mux MARK ok",
// or "… failed WHY".
const MuxMarker = "@@tfhive-mux "

// MuxSampleTag starts each line of the run's sampler when the host's
// multiplexer runs it (sample.sh, mux.sh): on the multiplexer's stderr,
// followed by the session's mark and a space.
const MuxSampleTag = "@@tfhive-sampler "

// MuxInput is the multiplexer's stage for Command. fresh: the
// run's first start, which empties what an ended run of the same id left
// in its directory (a re-plan's start keeps the run's files).
func MuxInput(runID, mark string, fresh bool) string {
	f := "0"
	if fresh {
		f = "1"
	}
	s := muxSh.With(
		shscript.Set("tfhive_read", readStage.Text()),
		shscript.Set("tfhive_run", runID),
		shscript.Set("tfhive_mark", mark),
		shscript.Set("tfhive_fresh", f),
	)
	return strconv.Itoa(len(s)) + "\n" + s
}
