package launcher

import "github.com/tfhive/tfhive/launcher/lifecycle"

// Cancel stands for `tfhive kill SWEEP` where a signal is expected
// (Interrupt, the caller's signal routing): the sweep's tfhive stops its
// running trials with it, and each ends cancelled (exit 143), as a run
// that tfhive kill stops on the hosts does, not interrupted: nobody
// pressed Ctrl-C.
var Cancel cancelSignal

type cancelSignal struct{}

func (cancelSignal) String() string { return lifecycle.CancelledReason }

// Signal makes it an os.Signal.
func (cancelSignal) Signal() {}
