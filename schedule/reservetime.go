package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseWhen reads a reservation's --from as people write it, at now in
// loc (the user's zone): "now", "now+30m", "14:00" (the next 14:00:
// today, or tomorrow once it has passed, as Slurm's --begin), "today
// 14:00", "tomorrow 09:00", "2026-12-03 09:00" (loc's) and RFC 3339
// ("2026-12-03T09:00:00Z"). The result is UTC, to the second.
func ParseWhen(s string, now time.Time, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	now = now.In(loc)
	bad := func() (time.Time, error) {
		return time.Time{}, usageErr("write it as now, now+30m, 14:00, tomorrow 09:00, 2026-12-03 09:00 or RFC 3339",
			"--from %q is not a time", s)
	}
	low := strings.ToLower(s)
	switch {
	case low == "now":
		return now.UTC().Truncate(time.Second), nil
	case strings.HasPrefix(low, "now+"):
		d, err := ParseFor(s[4:])
		if err != nil {
			return bad()
		}
		return now.Add(d).UTC().Truncate(time.Second), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC().Truncate(time.Second), nil
	}
	for _, layout := range []string{"2006-01-02 15:04", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t.UTC(), nil
		}
	}
	day, clock, two := strings.Cut(low, " ")
	if !two {
		day, clock = "", low
	}
	h, m, sec, ok := parseClock(clock)
	if !ok {
		return bad()
	}
	y, mo, d := now.Date()
	at := time.Date(y, mo, d, h, m, sec, 0, loc)
	switch day {
	case "":
		if !at.After(now) {
			at = time.Date(y, mo, d+1, h, m, sec, 0, loc)
		}
	case "today":
	case "tomorrow":
		at = time.Date(y, mo, d+1, h, m, sec, 0, loc)
	default:
		return bad()
	}
	return at.UTC(), nil
}

// parseClock reads HH:MM or HH:MM:SS.
func parseClock(s string) (h, m, sec int, ok bool) {
	f := strings.Split(s, ":")
	if len(f) < 2 || len(f) > 3 {
		return 0, 0, 0, false
	}
	var n [3]int
	for i, p := range f {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 || (i > 0 && len(p) != 2) || len(p) > 2 {
			return 0, 0, 0, false
		}
		n[i] = x
	}
	if n[0] > 23 || n[1] > 59 || n[2] > 59 {
		return 0, 0, 0, false
	}
	return n[0], n[1], n[2], true
}

// ParseFor reads a reservation's --for: a Go duration (4s, 90m, 1h30m)
// or whole days (2d).
func ParseFor(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err == nil && days > 0 && days < 1000 {
			return time.Duration(days) * 24 * time.Hour, nil
		}
	} else if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, nil
	}
	return 0, fmt.Errorf("%q is not a positive duration (4s, 90m, 8h, 2d)", s)
}
