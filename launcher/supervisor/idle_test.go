package supervisor

import (
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
)

func TestIdleWords(t *testing.T) {
	if w := idleWords(Task{}); w != "" {
		t.Errorf("no GPU: %q, want nothing watched", w)
	}
	tk := Task{IdleGPUs: []int{0, 2}, Idle: inventory.IdleRule{Below: 5, Warn: 2 * time.Second, Stop: 4 * time.Second}, IdleEvery: 500 * time.Millisecond}
	if w := idleWords(tk); w != "5 20 40 5" {
		t.Errorf("%q", w)
	}
	if w := idleWords(Task{IdleGPUs: []int{1}, Idle: inventory.IdleRule{Below: 5}}); w != "5 0 0 600" {
		t.Errorf("no rule: %q, want a sample a minute for the ledger", w)
	}
}

// The idle lines come out of the stream wherever they are (after a
// partial line of the task's own), each heard once, in order.
func TestPreemptTapIdleLines(t *testing.T) {
	var out strings.Builder
	var rec Preemption
	var heard []string
	rec.OnIdle = func(what string, d time.Duration) { heard = append(heard, what+" "+d.String()) }
	tap := NewPreemptTap(&out, "M", &rec)
	for _, p := range []string{"step 1\npart", "ial@@tfhive-idle M warn 2", "1\nstep 2\n@@tfhive-idle M busy\n", "@@tfhive-idle M stopped 45\n"} {
		tap.Write([]byte(p))
	}
	tap.Flush()
	if out.String() != "step 1\npartialstep 2\n" {
		t.Errorf("passed on %q", out.String())
	}
	if strings.Join(heard, ",") != "warn 2.1s,busy -1ns,stopped 4.5s" {
		t.Errorf("heard %q", heard)
	}
	if since, stopped, after := rec.IdleNow(); !since.IsZero() || !stopped || after != 4500*time.Millisecond {
		t.Errorf("%v %v %v", since, stopped, after)
	}
}

// A ledger line is heard by OnLedger with the host's words, never as an
// idle state, and never passed on as output.
func TestPreemptTapLedgerLine(t *testing.T) {
	var out strings.Builder
	var rec Preemption
	var heard []string
	rec.OnIdle = func(what string, d time.Duration) { heard = append(heard, "idle "+what) }
	rec.OnLedger = func(why string) { heard = append(heard, why) }
	tap := NewPreemptTap(&out, "M", &rec)
	tap.Write([]byte("step 1\n@@tfhive-idle M ledger /tmp/tfhive-usage.7 is owned by uid 9, not by you\n"))
	tap.Flush()
	if out.String() != "step 1\n" || strings.Join(heard, ",") != "/tmp/tfhive-usage.7 is owned by uid 9, not by you" {
		t.Errorf("passed on %q, heard %q", out.String(), heard)
	}
	if since, stopped, _ := rec.IdleNow(); !since.IsZero() || stopped {
		t.Errorf("a ledger line changed the idle state")
	}
}
