package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tfhive/tfhive/schedule"
)

var (
	errConflict = &ClaimConflictError{Conflicts: []string{"a (one of gpu 0)"}}
	errCapacity = &schedule.CapacityError{Msg: "not enough free GPUs"}
)

func TestRetryNext(t *testing.T) {
	// Rand answers its ceiling minus one, so the ceiling shows.
	rand := func(n int64) int64 { return n - 1 }
	ns := time.Nanosecond
	tests := []struct {
		name  string
		err   error
		n     int
		left  time.Duration
		again bool
		delay time.Duration
	}{
		{"success", nil, 1, time.Hour, false, 0},
		{"other error", errors.New("boom"), 1, time.Hour, false, 0},
		{"blocked claims never retried", &ClaimBlockedError{Blocked: []string{"x"}}, 1, time.Hour, false, 0},
		{"interrupted", context.Canceled, 1, time.Hour, false, 0},

		{"conflict 1: random below 200ms", errConflict, 1, 0, true, 200*time.Millisecond - ns},
		{"conflict 4: below 1.6s", errConflict, 4, 0, true, 1600*time.Millisecond - ns},
		{"conflict 5: ceiling 3s", errConflict, 5, 0, true, 3*time.Second - ns},
		{"conflict 8: last quick retry", errConflict, 8, 0, true, 3*time.Second - ns},
		{"wrapped conflict", fmt.Errorf("start: %w", errConflict), 1, 0, true, 200*time.Millisecond - ns},
		{"conflict 9 without --wait: give up", errConflict, MaxClaimRetries + 1, 0, false, 0},
		{"conflict 9 under --wait: backoff", errConflict, MaxClaimRetries + 1, time.Hour, true, time.Second},
		{"conflict 9, little --wait left", errConflict, MaxClaimRetries + 1, 300 * time.Millisecond, true, 300 * time.Millisecond},

		{"queued since the plan's probe: at once", &QueuedSinceError{Hosts: []string{"a"}}, 1, 0, true, 0},
		{"queued since, 8th: at once", &QueuedSinceError{Hosts: []string{"a"}}, MaxClaimRetries, 0, true, 0},
		{"queued since, 9th, waiting: backoff", &QueuedSinceError{Hosts: []string{"a"}}, MaxClaimRetries + 1, time.Hour, true, time.Second},

		{"capacity without --wait", errCapacity, 1, 0, false, 0},
		{"capacity, --wait over", errCapacity, 3, -time.Second, false, 0},
		{"capacity 1", errCapacity, 1, time.Hour, true, 250 * time.Millisecond},
		{"capacity 2", errCapacity, 2, time.Hour, true, 500 * time.Millisecond},
		{"capacity 3: capped at 1s", errCapacity, 3, time.Hour, true, time.Second},
		{"capacity 6", errCapacity, 6, time.Hour, true, time.Second},
		{"capacity 60: no overflow", errCapacity, 60, time.Hour, true, time.Second},
		{"capacity, less left than the backoff", errCapacity, 3, 300 * time.Millisecond, true, 300 * time.Millisecond},
		{"wrapped capacity", fmt.Errorf("plan: %w", errCapacity), 1, time.Hour, true, 250 * time.Millisecond},
	}
	for _, tt := range tests {
		delay, again := NextRetry(tt.err, tt.n, tt.left, rand)
		if again != tt.again || delay != tt.delay {
			t.Errorf("%s: nextRetry(%v, %d, %s) = %s, %v; want %s, %v", tt.name, tt.err, tt.n, tt.left, delay, again, tt.delay, tt.again)
		}
	}
}
