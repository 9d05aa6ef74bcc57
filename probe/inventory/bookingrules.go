package inventory

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// ReservationPolicy is a host policy's reservations: section: limits for
// everyone, then per group and per user.
//
//	reservations:
//	  max_hours: 8
//	  groups: {interns: {max_gpus: 1}}
//	  users: {alice: {max_hours: 48, ahead_days: 30}}
type ReservationPolicy struct {
	ReservationLimits `yaml:",inline"`
	Users             map[string]ReservationLimits `json:"users,omitempty" yaml:"users"`
	Groups            map[string]ReservationLimits `json:"groups,omitempty" yaml:"groups"`
}

// ReservationLimits bound one reservation: its length, its GPUs (with
// the user's others that overlap it) and how far ahead it may begin.
// nil: not said here.
type ReservationLimits struct {
	MaxHours  *float64 `json:"max_hours,omitempty" yaml:"max_hours"`
	MaxGPUs   *int     `json:"max_gpus,omitempty" yaml:"max_gpus"`
	AheadDays *float64 `json:"ahead_days,omitempty" yaml:"ahead_days"`
}

// The limits where a host's policy says nothing, as `scontrol create
// reservation` users expect a shared box's to be: a working day at
// most, up to a week ahead, any number of the host's GPUs.
const (
	DefaultReserveHours     = 24
	DefaultReserveAheadDays = 7
)

// Limits are the limits in force for one user.
type Limits struct {
	MaxHours, AheadDays float64
	MaxGPUs             int // -1: all of the host's
	// Rule says where each came from, for messages ("user alice",
	// "group interns", "the host's policy", "the default").
	HoursRule, GPUsRule, AheadRule string
}

// LimitsFor are user's limits under p (nil: the defaults): the user's
// own entry, else the most generous of their groups' (as a grant to a
// group is meant), else the policy's own, else the defaults. groups are
// the user's groups as the host lists them.
func LimitsFor(p *ReservationPolicy, user string, groups []string) Limits {
	l := Limits{MaxHours: DefaultReserveHours, AheadDays: DefaultReserveAheadDays, MaxGPUs: -1,
		HoursRule: "the default", GPUsRule: "the default", AheadRule: "the default"}
	if p == nil {
		return l
	}
	apply := func(r ReservationLimits, rule string) {
		if r.MaxHours != nil {
			l.MaxHours, l.HoursRule = *r.MaxHours, rule
		}
		if r.MaxGPUs != nil {
			l.MaxGPUs, l.GPUsRule = *r.MaxGPUs, rule
		}
		if r.AheadDays != nil {
			l.AheadDays, l.AheadRule = *r.AheadDays, rule
		}
	}
	apply(p.ReservationLimits, "the host's policy")
	var best ReservationLimits
	var hoursG, gpusG, aheadG string
	for _, g := range slices.Sorted(func(yield func(string) bool) {
		for k := range p.Groups {
			if !yield(k) {
				return
			}
		}
	}) {
		if !slices.Contains(groups, g) {
			continue
		}
		r := p.Groups[g]
		if r.MaxHours != nil && (best.MaxHours == nil || *r.MaxHours > *best.MaxHours) {
			best.MaxHours, hoursG = r.MaxHours, "group "+g
		}
		if r.MaxGPUs != nil && (best.MaxGPUs == nil || *r.MaxGPUs > *best.MaxGPUs) {
			best.MaxGPUs, gpusG = r.MaxGPUs, "group "+g
		}
		if r.AheadDays != nil && (best.AheadDays == nil || *r.AheadDays > *best.AheadDays) {
			best.AheadDays, aheadG = r.AheadDays, "group "+g
		}
	}
	apply(ReservationLimits{MaxHours: best.MaxHours}, hoursG)
	apply(ReservationLimits{MaxGPUs: best.MaxGPUs}, gpusG)
	apply(ReservationLimits{AheadDays: best.AheadDays}, aheadG)
	if r, ok := p.Users[user]; ok {
		apply(r, "user "+user)
	}
	return l
}

// Judge is what the host's rules make of its reservations.
type Judge struct {
	Policy *ReservationPolicy
	// GroupsOf lists a user's groups on the host (nil: none known).
	GroupsOf func(user string) []string
	// GPUs is how many GPUs the host has; -1: unknown (a claims-only
	// probe), and then GPU indexes and counts are not checked.
	GPUs int
}

// JudgeBookings sets each reservation's Ignored where the rules refuse
// it, taking them in the order they were made: over the policy in force
// for its owner, or overlapping (on a GPU) one made before it that is
// honoured. A file refused already (Ignored set) stays so. It returns
// bs, sorted by Made, then ID.
func (j Judge) JudgeBookings(bs []Booking) []Booking {
	slices.SortStableFunc(bs, func(a, b Booking) int { return cmp.Or(a.Made.Compare(b.Made), cmp.Compare(a.ID, b.ID)) })
	for i := range bs {
		if bs[i].Ignored == "" {
			bs[i].Ignored = j.WhyNot(bs[:i], bs[i], bs[i].Made)
		}
	}
	return bs
}

// WhyNot says why reservation b, made at now, may not be beside the
// honoured ones of before; "" when it may.
func (j Judge) WhyNot(before []Booking, b Booking, now time.Time) string {
	var groups []string
	if j.GroupsOf != nil {
		groups = j.GroupsOf(b.User)
	}
	l := LimitsFor(j.Policy, b.User, groups)
	hours := b.Until.Sub(b.From).Hours()
	maxGPUs := l.MaxGPUs
	if maxGPUs < 0 {
		maxGPUs = j.GPUs
	}
	switch {
	case !b.Until.After(b.From):
		return "its window is empty"
	case hours > l.MaxHours+1e-9:
		return fmt.Sprintf("it is %s long; %s allows at most %s h", Hours(b.Until.Sub(b.From)), l.HoursRule, strconv.FormatFloat(l.MaxHours, 'f', -1, 64))
	case b.From.After(now.Add(time.Duration(l.AheadDays * 24 * float64(time.Hour)))):
		return fmt.Sprintf("it begins more than %s days ahead, the most %s allows", strconv.FormatFloat(l.AheadDays, 'f', -1, 64), l.AheadRule)
	}
	if j.GPUs >= 0 {
		for _, g := range b.GPUs {
			if g >= j.GPUs {
				return fmt.Sprintf("the host has no GPU %d", g)
			}
		}
	}
	if o, both, ok := OverlapOf(before, b); ok {
		return fmt.Sprintf("GPU %s is reserved by %s from %s until %s (reservation %s)", intList(both), o.User,
			o.From.Local().Format(time.DateTime), o.Until.Local().Format(time.DateTime), o.ID)
	}
	mine := len(b.GPUs)
	for _, o := range before {
		if o.Honoured() && o.Overlaps(b.From, b.Until) && o.User == b.User {
			mine += len(o.GPUs)
		}
	}
	if maxGPUs >= 0 && mine > maxGPUs {
		return fmt.Sprintf("%s would hold %d GPUs reserved at once; %s allows at most %d", b.User, mine, l.GPUsRule, maxGPUs)
	}
	return ""
}

// OverlapOf is the first honoured reservation of before whose window
// meets b's on a GPU of b's, and those GPUs.
func OverlapOf(before []Booking, b Booking) (Booking, []int, bool) {
	for _, o := range before {
		if o.Honoured() && o.Overlaps(b.From, b.Until) {
			if both := sharesGPU(o, b); len(both) > 0 {
				return o, both, true
			}
		}
	}
	return Booking{}, nil, false
}

// Hours writes a duration as people read a reservation's: 4s, 90m, 8h,
// 1h30m.
func Hours(d time.Duration) string {
	s := d.Round(time.Second).String()
	for _, cut := range []string{"m0s", "h0m"} {
		if len(s) > len(cut) && s[len(s)-len(cut):] == cut {
			s = s[:len(s)-len(cut)+1]
		}
	}
	return s
}

func intList(xs []int) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ","
		}
		s += strconv.Itoa(x)
	}
	return s
}
