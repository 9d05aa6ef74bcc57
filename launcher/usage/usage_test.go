package usage

import (
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/remote/shscript/shscripttest"
)

// What a host's script said: alice's ledger, with a line past the
// file's last write (forged), one with more GPUs than the host has, one
// that does not parse and one whose idle time is more than it held;
// bob's refused; the users' names.
const hostOut = `@@tfhive-usage 1764700000
@@tfhive-ledger 1001 1764690000 300 tfhive-usage.1001.2025-12.csv
1 1764600000 1764603600 2 3600 r1 worker:0
1 1764603600 1764607200 1 7200 r2 worker:0
1 1764607200 1764699999 1 0 r3 worker:0
1 1764600000 1764603600 9 0 r4 worker:0
1 x 1764603600 1 0 r5 worker:0
@@tfhive-refused tfhive-usage.1002.2025-12.csv owned by uid 1001, not 1002
@@tfhive-ledger 1003 1764690000 300 tfhive-usage.1003.2025-12.csv
1 1764500000 1764507200 1 3600 r9 chief:0
@@tfhive-users
alice:x:1001:1001::/home/alice:/bin/bash
`

func TestParseBelievesOnlyWhatItCanProve(t *testing.T) {
	h := Parse("g1", hostOut, 4)
	if len(h.Entries) != 3 || h.Dropped != 3 || len(h.Refused) != 1 {
		t.Fatalf("%+v", h)
	}
	if e := h.Entries[1]; e.User != "alice" || e.IdleGPUSeconds != 3600 || e.GPUs != 1 || e.Run != "r2" {
		t.Errorf("idle is bounded by the time held: %+v", e)
	}
	if e := h.Entries[2]; e.User != "uid 1003" || e.Task != "chief:0" {
		t.Errorf("a uid with no name: %+v", e)
	}
}

func TestSumByUserAndHost(t *testing.T) {
	h := Parse("g1", hostOut, 4)
	from, to := time.Unix(1764601800, 0), time.Unix(1764700000, 0)
	rows := Sum(h.Entries, from, to, false)
	// r1: half of its hour in the window, 2 GPUs: 1 GPU-hour, idle half
	// of its hour: 0.5; r2: 1 GPU-hour, all idle; r9 before the window.
	if len(rows) != 1 || rows[0].Key != "alice" || rows[0].GPUHours != 2 || rows[0].IdleHours != 1.5 || rows[0].Runs != 2 {
		t.Errorf("by user: %+v", rows)
	}
	rows = Sum(h.Entries, time.Unix(0, 0), to, true)
	if len(rows) != 1 || rows[0].Key != "g1" || rows[0].GPUHours != 5 || rows[0].Runs != 3 {
		t.Errorf("by host: %+v", rows)
	}
}

func TestParseSince(t *testing.T) {
	for in, want := range map[string]time.Duration{"7d": 7 * 24 * time.Hour, "36h": 36 * time.Hour, "90m": 90 * time.Minute} {
		if d, err := ParseSince(in); err != nil || d != want {
			t.Errorf("%s: %s, %v", in, d, err)
		}
	}
	for _, in := range []string{"", "0d", "-1h", "week", "1.5d"} {
		if _, err := ParseSince(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func TestScriptsShellcheck(t *testing.T) {
	shscripttest.Shellcheck(t, scripts)
}

func TestScriptSentAsWritten(t *testing.T) {
	shscripttest.SameMeaning(t, "usage.sh", usageSh)
}
