package job

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/schedule"
)

// fakeClock is a clock that only moves when a pause is taken.
type fakeClock struct {
	now    time.Time
	pauses []time.Duration
	lefts  []time.Duration
	cancel bool // the next pause ends with the context
}

var (
	errConflict = &lifecycle.ClaimConflictError{Conflicts: []string{"a (one of gpu 0)"}}
	errCapacity = &schedule.CapacityError{Msg: "not enough free GPUs"}
)

func (c *fakeClock) retry(wait time.Duration) Retry {
	return Retry{
		Wait: wait,
		Now:  func() time.Time { return c.now },
		Sleep: func(_ context.Context, d time.Duration) error {
			if c.cancel {
				return context.Canceled
			}
			c.now = c.now.Add(d)
			c.pauses = append(c.pauses, d)
			return nil
		},
		Rand:    func(n int64) int64 { return n / 2 },
		Waiting: func(_ error, _, left time.Duration) { c.lefts = append(c.lefts, left) },
	}
}

// attempts answers with errs in turn, then with a summary.
func attempts(errs ...error) (func(context.Context) (*record.Summary, error), *int) {
	n := 0
	return func(context.Context) (*record.Summary, error) {
		n++
		if n <= len(errs) {
			return nil, errs[n-1]
		}
		return &record.Summary{RunID: "r"}, nil
	}, &n
}

func TestRetryDo(t *testing.T) {
	s := time.Second
	boom := errors.New("boom")
	tests := []struct {
		name     string
		wait     time.Duration
		errs     []error
		wantErr  error
		attempts int
		pauses   []time.Duration
		lefts    []time.Duration
	}{
		{"first try", 0, nil, nil, 1, nil, nil},
		{"two lost claims, then started", 0, []error{errConflict, errConflict}, nil, 3,
			[]time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, []time.Duration{0, 0}},
		{"claims lost every time: 8 retries", 0, slices.Repeat([]error{errConflict}, 20), errConflict, lifecycle.MaxClaimRetries + 1,
			[]time.Duration{100e6, 200e6, 400e6, 800e6, 1500e6, 1500e6, 1500e6, 1500e6}, slices.Repeat([]time.Duration{0}, 8)},
		{"not enough GPUs, no --wait", 0, []error{errCapacity}, errCapacity, 1, nil, nil},
		{"not enough GPUs until --wait runs out", 3 * s, slices.Repeat([]error{errCapacity}, 20), errCapacity, 6,
			[]time.Duration{s / 4, s / 2, s, s, s / 4}, []time.Duration{3 * s, 2750 * time.Millisecond, 2250 * time.Millisecond, 1250 * time.Millisecond, s / 4}},
		{"GPUs free up under --wait", time.Minute, []error{errCapacity, errCapacity}, nil, 3,
			[]time.Duration{s / 4, s / 2}, []time.Duration{time.Minute, time.Minute - s/4}},
		{"another error ends it", time.Minute, []error{errCapacity, boom}, boom, 2,
			[]time.Duration{s / 4}, []time.Duration{time.Minute}},
	}
	for _, tt := range tests {
		c := &fakeClock{now: time.Unix(1e9, 0)}
		attempt, n := attempts(tt.errs...)
		sum, err := c.retry(tt.wait).Do(context.Background(), attempt)
		if err != tt.wantErr || (err == nil) != (sum != nil) {
			t.Errorf("%s: got %v, %v; want error %v", tt.name, sum, err, tt.wantErr)
		}
		if *n != tt.attempts || !slices.Equal(c.pauses, tt.pauses) || !slices.Equal(c.lefts, tt.lefts) {
			t.Errorf("%s: %d attempts, pauses %v, --wait left %v; want %d, %v, %v", tt.name, *n, c.pauses, c.lefts, tt.attempts, tt.pauses, tt.lefts)
		}
	}
}

func TestRetryDoInterruptedPause(t *testing.T) {
	c := &fakeClock{now: time.Unix(1e9, 0), cancel: true}
	attempt, n := attempts(errConflict)
	sum, err := c.retry(0).Do(context.Background(), attempt)
	if sum != nil || !errors.Is(err, context.Canceled) || *n != 1 {
		t.Errorf("got %v, %v after %d attempts; want context.Canceled after 1", sum, err, *n)
	}
}

func TestPause(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// An hour's pause ends at once with its context.
	if err := pause(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Pause = %v, want context.Canceled", err)
	}
	if err := pause(context.Background(), 0); err != nil {
		t.Errorf("pause(0) = %v", err)
	}
}

// A --wait pause ends when the tickets' hosts say their locks changed:
// an hour's pause, woken, returns (else the test would hang).
func TestSleepWake(t *testing.T) {
	wake := make(chan struct{}, 1)
	wake <- struct{}{}
	done := make(chan error, 1)
	go func() { done <- sleepWake(context.Background(), time.Hour, wake) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("sleepWake = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a woken pause did not end")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sleepWake(ctx, time.Hour, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("sleepWake = %v, want context.Canceled", err)
	}
}
