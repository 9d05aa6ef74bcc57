package schedule

import (
	"testing"
	"time"
)

func TestParseWhen(t *testing.T) {
	loc := time.FixedZone("CET", 3600)
	now := time.Date(2026, 12, 2, 15, 30, 20, 0, loc) // Wednesday, 14:30:20 UTC
	for _, c := range []struct {
		in, want string // want: RFC 3339 UTC, or "" for an error
	}{
		{"now", "2026-12-02T14:30:20Z"},
		{"NOW", "2026-12-02T14:30:20Z"},
		{"now+30m", "2026-12-02T15:00:20Z"},
		{"now+4s", "2026-12-02T14:30:24Z"},
		{"now+1d", "2026-12-03T14:30:20Z"},
		{"18:00", "2026-12-02T17:00:00Z"},
		{"14:00", "2026-12-03T13:00:00Z"}, // passed today: tomorrow's
		{"today 18:00", "2026-12-02T17:00:00Z"},
		{"tomorrow 09:00", "2026-12-03T08:00:00Z"},
		{"Tomorrow 09:00:30", "2026-12-03T08:00:30Z"},
		{"2026-12-24 09:00", "2026-12-24T08:00:00Z"},
		{"2026-12-24T09:00:05", "2026-12-24T08:00:05Z"},
		{"2026-12-24T09:00:00Z", "2026-12-24T09:00:00Z"},
		{"2026-12-24T09:00:00+02:00", "2026-12-24T07:00:00Z"},
		{"25:00", ""},
		{"9:5", ""},
		{"yesterday 09:00", ""},
		{"now+", ""},
		{"now+-3h", ""},
		{"soon", ""},
		{"", ""},
	} {
		got, err := ParseWhen(c.in, now, loc)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("ParseWhen(%q) = %v, want an error", c.in, got)
		case c.want != "" && err != nil:
			t.Errorf("ParseWhen(%q): %v", c.in, err)
		case c.want != "" && got.Format(time.RFC3339) != c.want:
			t.Errorf("ParseWhen(%q) = %s, want %s", c.in, got.Format(time.RFC3339), c.want)
		}
	}
}

func TestParseFor(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration // 0: an error
	}{
		{"4s", 4 * time.Second}, {"90m", 90 * time.Minute}, {"1h30m", 90 * time.Minute}, {"2d", 48 * time.Hour},
		{"0s", 0}, {"-1h", 0}, {"d", 0}, {"1.5d", 0}, {"x", 0},
	} {
		got, err := ParseFor(c.in)
		if (c.want == 0) != (err != nil) || got != c.want {
			t.Errorf("ParseFor(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}
