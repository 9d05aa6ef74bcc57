package probe

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
)

// MaxBookingFiles bounds the reservation files a probe lists
// (scripts/claims.sh's $rmax). A claims dir holding more is someone's
// flood: the host's reservations are unknown, and it fails closed.
const MaxBookingFiles = 1024

// bookingsSection is what claims.sh said of the reservations: who we are
// on the host, each file, and whether the list was cut.
type bookingsSection struct {
	me       string
	bookings []inventory.Booking
	overflow bool
}

// parseBookings reads claims.sh's "R USER", "V OWNER TYPE LINKS CTIME
// NAME" and "XV" lines (among the lock files' lines, which it leaves
// alone). A file is its owner's reservation, whatever its name says of
// anything else; one that is not a regular file of one name, or whose
// name is not in the format, is kept with Ignored saying why: it grants
// nothing, and `tfhive reservations` shows it, naming its owner. A name
// not in the format has no ID.
func parseBookings(files []byte, dir string) bookingsSection {
	var s bookingsSection
	for line := range bytes.Lines(files) {
		l := strings.TrimSuffix(string(line), "\n")
		switch {
		case l == "XV":
			s.overflow = true
		case strings.HasPrefix(l, "R "):
			if u := strings.TrimSpace(l[2:]); u != "-" {
				s.me = u
			}
		case strings.HasPrefix(l, "V "):
			f := strings.Fields(l[2:])
			if len(f) != 5 {
				continue
			}
			b, err := inventory.ParseBookingName(f[4])
			if err != nil {
				// No ID: a name that does not parse is nobody's reservation
				// of that id (tfhive-reservation.ID.x would be another's
				// file that unreserve ID finds).
				b = inventory.Booking{Ignored: err.Error()}
			}
			b.User, b.File = f[0], lockPath(dir, f[4])
			if ct, err := strconv.ParseFloat(f[3], 64); err == nil && ct >= 0 && !math.IsInf(ct, 0) {
				sec, frac := math.Modf(ct)
				b.Made = time.Unix(int64(sec), int64(frac*1e9)).UTC()
			} else if b.Ignored == "" {
				b.Ignored = "its ctime is unknown"
			}
			switch {
			case b.Ignored != "":
			case f[1] == "l":
				b.Ignored = "it is a symbolic link"
			case f[1] != "f":
				b.Ignored = "it is not a regular file"
			case f[2] != "1":
				// Another name for one inode is someone's hard link: it
				// would book, under its owner's name, what its maker chose.
				b.Ignored = "it has " + f[2] + " names (a hard link)"
			}
			s.bookings = append(s.bookings, b)
		}
	}
	return s
}

// GroupsOf lists a user's groups as the policy's context knows them: the
// groups whose members the host listed, and our own user's.
func GroupsOf(ctx *inventory.PolicyContext) func(string) []string {
	return func(user string) []string {
		if ctx == nil {
			return nil
		}
		var gs []string
		if user == ctx.User {
			gs = append(gs, ctx.Groups...)
		}
		for g, ms := range ctx.Members {
			for _, m := range ms {
				if m == user {
					gs = append(gs, g)
				}
			}
		}
		return gs
	}
}

// judgeBookings is the host's reservations as its rules make them
// (inventory.Judge): its policy's limits, its GPUs. A claims-only probe
// (ps, kill) knows neither GPUs nor policy: the defaults apply there and
// GPU indexes are not checked, which only ps's listing sees.
func judgeBookings(h *inventory.HostInventory, bs []inventory.Booking) []inventory.Booking {
	if len(bs) == 0 {
		return nil
	}
	j := inventory.Judge{GroupsOf: GroupsOf(h.PolicyContext), GPUs: -1}
	if h.Policy != nil {
		j.Policy = h.Policy.Reservations
	}
	if n := PhysicalGPUs(h.GPUs); n > 0 {
		j.GPUs = n
	}
	return j.JudgeBookings(bs)
}

// PhysicalGPUs counts the GPUs that are not MIG instances.
func PhysicalGPUs(gs []inventory.GPU) int {
	n := 0
	for _, g := range gs {
		if g.MIGInstance == nil {
			n++
		}
	}
	return n
}

// reservedAt says which physical GPUs an honoured reservation holds at t.
func reservedAt(bs []inventory.Booking, t time.Time) func(int) bool {
	return func(gpu int) bool {
		for _, b := range bs {
			if b.Holds(t) && slices.Contains(b.GPUs, gpu) {
				return true
			}
		}
		return false
	}
}

// checkReservationPolicy refuses a policy's reservations: limits that
// are negative (0 is a limit: nobody of them may reserve).
func checkReservationPolicy(p *inventory.ReservationPolicy, bad func(string, ...any) error) error {
	if p == nil {
		return nil
	}
	check := func(l inventory.ReservationLimits, path ...any) error {
		for _, f := range []struct {
			name string
			neg  bool
		}{
			{"max_hours", l.MaxHours != nil && (*l.MaxHours < 0 || math.IsNaN(*l.MaxHours))},
			{"max_gpus", l.MaxGPUs != nil && *l.MaxGPUs < 0},
			{"ahead_days", l.AheadDays != nil && (*l.AheadDays < 0 || math.IsNaN(*l.AheadDays))},
		} {
			if f.neg {
				return bad("reservations: "+f.name+" must be 0 or more", append(path, f.name)...)
			}
		}
		return nil
	}
	if err := check(p.ReservationLimits, "reservations"); err != nil {
		return err
	}
	for _, kind := range []struct {
		name string
		m    map[string]inventory.ReservationLimits
	}{{"groups", p.Groups}, {"users", p.Users}} {
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range kind.m {
				if !yield(k) {
					return
				}
			}
		}) {
			if err := check(kind.m[k], "reservations", kind.name, k); err != nil {
				return err
			}
		}
	}
	return nil
}
