package job

import (
	"context"
	"math"
	mrand "math/rand/v2"
	"time"

	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
)

// Retry is when a run plans and starts again after an attempt that
// could not start: a claim lost to a run that started at the same moment
// is retried soon against fresh claims, after a random, growing delay
// (runs that lost to each other must not retry in lockstep and collide
// again); not enough GPUs is retried only under --wait, with backoff,
// until its deadline. Anything else ends the run.
type Retry struct {
	// Wait is --wait: how long to keep trying for enough GPUs; 0, not at
	// all, unless Forever.
	Wait time.Duration
	// Forever keeps trying for enough GPUs until ctx ends: a sweep's trial
	// without --wait waits its turn until the sweep ends.
	Forever bool
	// Waiting, when set, is told before each pause why, for how long, and
	// what is left of Wait (never negative).
	Waiting func(err error, delay, left time.Duration)
	// Now, Sleep and Rand stand in for the clock, a pause that ends early
	// with its context, and math/rand/v2's Int64N; nil means the real ones.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	Rand  func(n int64) int64
	// Wake ends a --wait pause early: the hosts' locks changed (a waiting
	// run's tickets say so: HoldTickets), so GPUs may have been freed.
	// Only the real pause listens (Sleep nil).
	Wake <-chan struct{}
}

// Do calls attempt until it returns an error Retry does not retry (or none)
// and returns what that attempt returned, or ctx's error when ctx ends a
// pause.
func (r Retry) Do(ctx context.Context, attempt func(ctx context.Context) (*record.Summary, error)) (*record.Summary, error) {
	now, sleep := r.Now, r.Sleep
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = func(ctx context.Context, d time.Duration) error { return sleepWake(ctx, d, r.Wake) }
	}
	deadline := now().Add(r.Wait)
	for n := 1; ; n++ {
		sum, err := attempt(ctx)
		left := deadline.Sub(now())
		if r.Forever {
			// No deadline: as much as a duration holds is left.
			left = math.MaxInt64
		}
		random := r.Rand
		if random == nil {
			random = mrand.Int64N
		}
		delay, again := lifecycle.NextRetry(err, n, left, random)
		if !again {
			return sum, err
		}
		if r.Waiting != nil {
			r.Waiting(err, delay, max(left, 0))
		}
		if err := sleep(ctx, delay); err != nil {
			return nil, err
		}
	}
}

// sleepWake is pause that also ends when wake gets a value (nil:
// never), though not before minWakePause: a host whose locks change all
// the time must not have the run probe back to back.
func sleepWake(ctx context.Context, d time.Duration, wake <-chan struct{}) error {
	start := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	case <-wake:
	}
	if rest := minWakePause - time.Since(start); rest > 0 && rest < d-time.Since(start) {
		t.Reset(rest)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// minWakePause is the least pause between two probes of a waiting run.
const minWakePause = 100 * time.Millisecond

// pause waits d, or less if ctx ends first (its error then).
func pause(ctx context.Context, d time.Duration) error { return sleepWake(ctx, d, nil) }
