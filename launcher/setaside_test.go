package launcher

import (
	"testing"
)

// What set-aside.sh says is read as it means: one line, its first word
// what was done; no answer is an error, never "nothing to move".
func TestParseAside(t *testing.T) {
	for _, tt := range []struct {
		out  string
		want Aside
		err  bool
	}{
		{"login banner\n@@tfhive-aside moved t-001.2\n", Aside{Host: "h", Moved: "t-001.2"}, false},
		{"@@tfhive-aside running worker:0\n", Aside{Host: "h", Running: "worker:0"}, false},
		{"@@tfhive-aside none no trace of run t-001 in /x\n", Aside{Host: "h", None: "no trace of run t-001 in /x"}, false},
		{"@@tfhive-aside failed Permission denied\n", Aside{Host: "h"}, true},
		{"", Aside{Host: "h"}, true},
	} {
		got := parseAside("h", tt.out)
		if (got.Err != nil) != tt.err {
			t.Errorf("%q: error %v, want one: %v", tt.out, got.Err, tt.err)
		}
		got.Err = nil
		if got != tt.want {
			t.Errorf("%q: %+v, want %+v", tt.out, got, tt.want)
		}
	}
}
