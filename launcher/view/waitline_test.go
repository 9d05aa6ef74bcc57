package view

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/schedule"
)

func TestWaitLineNotTerminal(t *testing.T) {
	var b bytes.Buffer
	l := NewWaitLine(&b, false, func() int { return 0 })
	short := &schedule.CapacityError{Msg: "not enough free GPUs", Asked: 4, Found: 2}
	ahead := []schedule.QueueEntry{{}}
	ahead[0].RunID, ahead[0].User = "r17", "alice"
	// A retry a second for an hour, the free count flapping: one line
	// while nothing changes, one more when its place does.
	for i := range 3600 {
		short.Found = i % 3
		l.Show(WaitingFor(short, ahead, true, time.Duration(7200-i)*time.Second, 2*time.Hour))
	}
	l.Show(WaitingFor(short, nil, true, time.Hour, 2*time.Hour))
	fmt.Fprintln(l, "tfhive: warning: gpu02 not used")
	l.Done()
	want := "tfhive: waiting for 4 GPUs (0 free now): 2nd in the queue (after run r17 of alice); 2:00:00 left of --wait 2h\n" +
		"tfhive: waiting for 4 GPUs (2 free now): 1st in the queue; 1:00:00 left of --wait 2h\n" +
		"tfhive: warning: gpu02 not used\n"
	if got := b.String(); !strings.HasPrefix(got, want) || !strings.HasPrefix(got[len(want):], "tfhive: waited ") || !strings.HasSuffix(got, " for 4 GPUs\n") {
		t.Errorf("got:\n%s\nwant:\n%stfhive: waited … for 4 GPUs", got, want)
	}
	if strings.Contains(b.String(), "\x1b") || strings.Contains(b.String(), "\r") {
		t.Errorf("escapes off a terminal: %q", b.String())
	}
}

func TestWaitLineTerminal(t *testing.T) {
	var b bytes.Buffer
	l := NewWaitLine(&b, true, func() int { return 0 })
	short := &schedule.CapacityError{Msg: "not enough free GPUs", Asked: 1}
	for i := range 1000 {
		l.Show(WaitingFor(short, nil, true, time.Duration(1000-i)*time.Second, time.Hour))
	}
	if n := strings.Count(b.String(), "\n"); n != 0 {
		t.Errorf("%d lines while waiting, want the one line redrawn", n)
	}
	if n := strings.Count(b.String(), "\r\x1b[K"); n != 1000 {
		t.Errorf("%d redraws, want 1000", n)
	}
	// Another line erases the drawn one first, and is whole.
	b.Reset()
	fmt.Fprintln(l, "tfhive: preempting run x")
	l.Show(WaitingFor(short, nil, true, time.Second, time.Hour))
	l.Done()
	got := b.String()
	if !strings.HasPrefix(got, "\r\x1b[Ktfhive: preempting run x\n\r\x1b[Ktfhive: waiting for 1 GPU (0 free now): 1st in the queue; 0:01 left of --wait 1h\r\x1b[Ktfhive: waited ") {
		t.Errorf("got %q", got)
	}
	if strings.Count(got, "\n") != 2 {
		t.Errorf("want 2 lines ended, got %q", got)
	}
	// A line wider than the terminal is cut to fit: a wrapped one would
	// leave a row behind at each redraw.
	b.Reset()
	l.width = func() int { return 40 }
	l.Show(WaitingFor(short, nil, true, time.Second, time.Hour))
	if got := b.String(); got != "\r\x1b[Ktfhive: waiting for 1 GPU: 1st in the …" {
		t.Errorf("got %q", got)
	}
	l.width = func() int { return 0 }
	// A retry that is not for GPUs says its error; without --wait, no
	// queue and no clock.
	b.Reset()
	l.Show(WaitingFor(errors.New("claim on a lost to run y\ndetail"), nil, false, 0, 0))
	if got := b.String(); got != "\r\x1b[Ktfhive: waiting: claim on a lost to run y" {
		t.Errorf("got %q", got)
	}
}
