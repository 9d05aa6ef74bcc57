package report

import (
	"encoding/json"
	"strings"
	"testing"
)

// A reservation's note comes from a file name on a host, which anyone
// could have written by hand: the report shows its bidi and C1
// characters inert, as it does other host-supplied text.
func TestRecordEscapesReservationNote(t *testing.T) {
	var p Plan
	if err := json.Unmarshal([]byte(`{"reservations":[{"Host":"gpu01","ID":"0123abcd","User":"bob","Note":"a\u202eb\u009bc","GPUs":[0],
		"From":"2026-12-02T12:00:00Z","Until":"2026-12-02T13:00:00Z"}]}`), &p); err != nil {
		t.Fatal(err)
	}
	r := &Run{ID: "r1", Plan: &p}
	for _, x := range r.record() {
		if x.K != "in reservation" {
			continue
		}
		if strings.ContainsAny(x.V, "\u202e\u009b") || !strings.Contains(x.V, "(a\uFFFDb\uFFFDc)") {
			t.Errorf("in reservation: %q, want the note's bidi and C1 characters as U+FFFD", x.V)
		}
		return
	}
	t.Error("no reservation in the record")
}
