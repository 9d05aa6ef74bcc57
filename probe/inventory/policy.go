package inventory

import (
	"slices"
	"strconv"
	"strings"
)

// Policy is a host's fair-sharing rules, from its policy file
// (/etc/tfhive/policy.yaml), as `tfhive status --json` shows them. The
// planner (schedule) applies them; only a file that root owns and that
// nobody else may write is one.
type Policy struct {
	// File is where it was read.
	File string `json:"file" yaml:"-"`
	// Limits cap the GPUs a user, or a group's members together, hold
	// on the host at once.
	Limits PolicyLimits `json:"limits,omitzero" yaml:"limits"`
	// High lists who may use --priority high; nil: anyone.
	High *PolicyWho `json:"high,omitempty" yaml:"high"`
	// Reserved GPUs are kept for a group's members in given hours.
	Reserved []Reservation `json:"reserved,omitempty" yaml:"reserved"`
	// PreemptLow lets a high-priority run stop low-priority ones here.
	PreemptLow bool `json:"preempt_low" yaml:"preempt_low"`
	// Reservations bound what users may reserve (tfhive reserve); nil:
	// the defaults (bookingrules.go).
	Reservations *ReservationPolicy `json:"reservations,omitempty" yaml:"reservations"`
	// Idle warns about, then stops, runs whose GPUs sit idle (idle.go).
	Idle *PolicyIdle `json:"idle,omitempty" yaml:"idle"`
}

// PolicyLimits are GPUs held at once, by user name ("*": anyone not
// named) and by group.
type PolicyLimits struct {
	Users  map[string]int `json:"users,omitempty" yaml:"users"`
	Groups map[string]int `json:"groups,omitempty" yaml:"groups"`
}

// PolicyWho names users and groups.
type PolicyWho struct {
	Users  []string `json:"users,omitempty" yaml:"users"`
	Groups []string `json:"groups,omitempty" yaml:"groups"`
}

// Reservation keeps GPUs for a group's members during Hours
// ("09:00-18:00", host time; it may wrap past midnight) on Days (mon …
// sun; none: every day).
type Reservation struct {
	Group string   `json:"group" yaml:"group"`
	GPUs  []int    `json:"gpus" yaml:"gpus"`
	Hours string   `json:"hours" yaml:"hours"`
	Days  []string `json:"days,omitempty" yaml:"days"`
}

// PolicyContext is what the probe learned alongside a policy, for the
// planner: who we are on the host, its clock, its groups.
type PolicyContext struct {
	User   string
	Groups []string
	// Weekday (1 Monday … 7 Sunday) and Minute of the day, host time.
	Weekday, Minute int
	// Members are each group's members as the host lists them (getent).
	Members map[string][]string
}

// ParseHours reads "HH:MM-HH:MM" into minutes of the day.
func ParseHours(s string) (from, to int, ok bool) {
	a, b, found := strings.Cut(s, "-")
	from, ok1 := minuteOf(a)
	to, ok2 := minuteOf(b)
	return from, to, found && ok1 && ok2 && from != to
}

func minuteOf(s string) (int, bool) {
	h, m, ok := strings.Cut(strings.TrimSpace(s), ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || hh < 0 || hh > 24 || mm < 0 || mm > 59 || len(m) != 2 || (hh == 24 && mm != 0) {
		return 0, false
	}
	return hh*60 + mm, true
}

// DayNumber is 1 for mon … 7 for sun, 0 for anything else.
func DayNumber(s string) int {
	return slices.Index([]string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}, strings.ToLower(s)) + 1
}

// Active says whether the reservation holds at that weekday (1 Monday)
// and minute of the day.
func (r Reservation) Active(weekday, minute int) bool {
	from, to, ok := ParseHours(r.Hours)
	if !ok {
		return false
	}
	day := weekday
	if from > to && minute < to {
		// After midnight in hours that began the day before.
		day = (weekday+5)%7 + 1
	}
	if len(r.Days) > 0 && !slices.ContainsFunc(r.Days, func(d string) bool { return DayNumber(d) == day }) {
		return false
	}
	if from < to {
		return minute >= from && minute < to
	}
	return minute >= from || minute < to
}

// In says whether the user is one of users or in one of groups.
func (c *PolicyContext) In(users, groups []string) bool {
	if slices.Contains(users, c.User) {
		return true
	}
	for _, g := range groups {
		if slices.Contains(c.Groups, g) {
			return true
		}
	}
	return false
}
