package lifecycle

import (
	"errors"
	"time"

	"github.com/tfhive/tfhive/schedule"
)

// MaxClaimRetries bounds how often a run that lost claims to runs starting
// at the same moment plans again before giving up (exit 3).
const MaxClaimRetries = 8

// NextRetry decides whether to try again after attempt n failed with
// err, and after how long; left is what is left of --wait, random draws
// a claim conflict's delay below its argument.
func NextRetry(err error, n int, left time.Duration, random func(n int64) int64) (time.Duration, bool) {
	var conflict *ClaimConflictError
	var capacity *schedule.CapacityError
	var queued *QueuedSinceError
	switch {
	case errors.As(err, &queued) && n <= MaxClaimRetries:
		// The next plan is on a probe begun after (a fleet's later
		// probes are never a seed): no run raced this one, nothing to
		// spread out.
		return 0, true
	case errors.As(err, &conflict) && n <= MaxClaimRetries:
		ceiling := min(100*time.Millisecond<<n, 3*time.Second)
		return time.Duration(random(int64(ceiling))), true
	case errors.As(err, &conflict), errors.As(err, &capacity), errors.As(err, &queued):
		if left <= 0 {
			return 0, false
		}
		// Capped at a second: a waiting run learns soon that GPUs were
		// freed, and one probe a second is cheap.
		return min(250*time.Millisecond<<min(n-1, 5), time.Second, left), true
	}
	return 0, false
}
