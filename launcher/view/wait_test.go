package view

import (
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

func TestWaitingLine(t *testing.T) {
	ahead := []schedule.QueueEntry{{}, {}}
	ahead[0].RunID, ahead[0].User = "r9", "bob"
	ahead[1].RunID, ahead[1].User = "r17", "alice"
	for _, c := range []struct {
		w         Waiting
		line, key string
	}{
		{Waiting{GPUs: 4, Free: 2, Queued: true, Ahead: ahead[1:], Left: time.Hour + 23*time.Minute + 44*time.Second + time.Millisecond, Wait: 2 * time.Hour},
			"tfhive: waiting for 4 GPUs (2 free now): 2nd in the queue (after run r17 of alice); 1:23:45 left of --wait 2h",
			"tfhive: waiting for 4 GPUs: 2nd in the queue (after run r17 of alice)"},
		{Waiting{GPUs: 1, Queued: true, Left: 90 * time.Second, Wait: 90 * time.Second},
			"tfhive: waiting for 1 GPU (0 free now): 1st in the queue; 1:30 left of --wait 1m30s",
			"tfhive: waiting for 1 GPU: 1st in the queue"},
		{Waiting{GPUs: 2, Queued: true, Ahead: ahead, Wait: 10 * time.Minute},
			"tfhive: waiting for 2 GPUs (0 free now): 3rd in the queue (after run r17 of alice); 0:00 left of --wait 10m",
			"tfhive: waiting for 2 GPUs: 3rd in the queue (after run r17 of alice)"},
		{Waiting{Reason: "no free port for worker:0 on gpu01\nmore", Queued: true, Left: time.Minute, Wait: time.Hour + 30*time.Minute},
			"tfhive: waiting: no free port for worker:0 on gpu01: 1st in the queue; 1:00 left of --wait 1h30m",
			"tfhive: waiting: no free port for worker:0 on gpu01: 1st in the queue"},
		{Waiting{GPUs: 1, Queued: true, Ahead: []schedule.QueueEntry{{Ticket: inventory.Ticket{RunID: "x\x1b]0;pwned\a", User: "m\nallory"}}}},
			"tfhive: waiting for 1 GPU (0 free now): 2nd in the queue (after run x^[]0;pwned^G of m^Jallory)",
			"tfhive: waiting for 1 GPU: 2nd in the queue (after run x^[]0;pwned^G of m^Jallory)"},
		{Waiting{Reason: "claim on gpu01 lost to run x"},
			"tfhive: waiting: claim on gpu01 lost to run x",
			"tfhive: waiting: claim on gpu01 lost to run x"},
	} {
		if got := c.w.Line(); got != c.line {
			t.Errorf("Line:\n got %q\nwant %q", got, c.line)
		}
		if got := c.w.Key(); got != c.key {
			t.Errorf("Key:\n got %q\nwant %q", got, c.key)
		}
	}
}

func TestWaitingFit(t *testing.T) {
	ahead := []schedule.QueueEntry{{Ticket: inventory.Ticket{RunID: "r17", User: "alice"}}}
	w := Waiting{GPUs: 4, Free: 2, Queued: true, Ahead: ahead, Left: time.Hour, Wait: 2 * time.Hour}
	for cols, want := range map[int]string{
		0:   w.Line(),
		200: w.Line(),
		100: "tfhive: waiting for 4 GPUs: 2nd in the queue (after run r17 of alice); 1:00:00 left of --wait 2h",
		79:  "tfhive: waiting for 4 GPUs: 2nd in the queue; 1:00:00 left of --wait 2h",
		40:  "tfhive: waiting for 4 GPUs: 2nd in the …",
	} {
		if got := w.Fit(cols); got != want || len([]rune(got)) > max(cols, len(w.Line())) {
			t.Errorf("Fit(%d):\n got %q\nwant %q", cols, got, want)
		}
	}
}

func TestOrdinal(t *testing.T) {
	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 22: "22nd", 101: "101st", 111: "111th"} {
		if got := Ordinal(n); got != want {
			t.Errorf("Ordinal(%d) = %s, want %s", n, got, want)
		}
	}
}
