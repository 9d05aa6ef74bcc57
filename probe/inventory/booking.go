package inventory

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Booking is one user's reservation of GPUs on a host for a window
// (tfhive reserve): an empty file in the host's claims dir whose name
// says what is reserved and when (BookingName), and whose owner, as the
// kernel has it, says who. Nothing is read from inside it: a name is
// listed by find with its owner from one lstat, never opened, so no link
// and no FIFO is ever followed or waited on, and what a colleague writes
// in a file of hers books for her, never for another.
type Booking struct {
	ID    string    `json:"id"`
	User  string    `json:"user"`
	GPUs  []int     `json:"gpus"`
	From  time.Time `json:"from"`
	Until time.Time `json:"until"`
	Note  string    `json:"note,omitempty"`
	// Made is the file's ctime, which nobody may set back (a rename or a
	// chmod moves it on): of two overlapping reservations the earlier
	// made holds.
	Made time.Time `json:"made"`
	File string    `json:"file"`
	// Ignored says why the file grants nothing ("": it is honoured): a
	// name not in the format, a link or a file with other names, a
	// window over the host's policy, one that overlaps an earlier one.
	Ignored string `json:"ignored,omitempty"`
}

// BookingPrefix begins a reservation's file name.
const BookingPrefix = "tfhive-reservation."

// Bounds of a reservation's name: its note and its GPUs.
const (
	MaxBookingNote = 60
	MaxBookingGPUs = 64
)

// BookingName is the file name of b in the claims dir:
// tfhive-reservation.ID.FROM.UNTIL.GPUS.NOTE, FROM and UNTIL in Unix
// seconds (UTC), GPUS the indexes with commas, NOTE base64url (maybe
// empty). Everything a reservation says is in its name, which only its
// owner (or root) may change in a sticky dir.
func BookingName(b Booking) string {
	gpus := make([]string, len(b.GPUs))
	for i, g := range b.GPUs {
		gpus[i] = strconv.Itoa(g)
	}
	return BookingPrefix + b.ID + "." + strconv.FormatInt(b.From.Unix(), 10) + "." + strconv.FormatInt(b.Until.Unix(), 10) +
		"." + strings.Join(gpus, ",") + "." + base64.RawURLEncoding.EncodeToString([]byte(b.Note))
}

// ValidBookingID: 8 lower-case hex digits, as tfhive reserve makes them.
func ValidBookingID(s string) bool {
	if len(s) != 8 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ParseBookingName reads a reservation's file name; an error says what
// is wrong with it.
func ParseBookingName(name string) (Booking, error) {
	rest, ok := strings.CutPrefix(name, BookingPrefix)
	f := strings.Split(rest, ".")
	if !ok || len(f) != 5 {
		return Booking{}, fmt.Errorf("its name is not tfhive-reservation.ID.FROM.UNTIL.GPUS.NOTE")
	}
	b := Booking{ID: f[0]}
	if !ValidBookingID(b.ID) {
		return Booking{}, fmt.Errorf("its id %q is not 8 hex digits", b.ID)
	}
	from, err1 := strconv.ParseInt(f[1], 10, 64)
	until, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil || from < 0 || until <= from || until > 1<<40 {
		return Booking{}, fmt.Errorf("its window %s-%s is not two Unix times, the second later", f[1], f[2])
	}
	b.From, b.Until = time.Unix(from, 0).UTC(), time.Unix(until, 0).UTC()
	for _, g := range strings.Split(f[3], ",") {
		n, err := strconv.Atoi(g)
		if err != nil || n < 0 || n >= 1<<16 || len(g) > 5 || slices.Contains(b.GPUs, n) || len(b.GPUs) >= MaxBookingGPUs {
			return Booking{}, fmt.Errorf("its GPUs %q are not distinct indexes", f[3])
		}
		b.GPUs = append(b.GPUs, n)
	}
	slices.Sort(b.GPUs)
	note, err := base64.RawURLEncoding.DecodeString(f[4])
	if err != nil {
		return Booking{}, fmt.Errorf("its note is not base64url")
	}
	if err := CheckBookingNote(string(note)); err != nil {
		return Booking{}, fmt.Errorf("its note %v", err)
	}
	b.Note = string(note)
	return b, nil
}

// CheckBookingNote says what is wrong with a reservation's note (nil:
// nothing): at most MaxBookingNote bytes of UTF-8, one line with no
// control character (C0, DEL, C1) and no bidi embedding, override or
// isolate, which would reorder what follows it on a colleague's screen
// (as view's sanitiser has it). tfhive reserve refuses such a note, and
// a file named with one by hand is ignored; what shows a note escapes it
// all the same.
func CheckBookingNote(note string) error {
	switch {
	case len(note) > MaxBookingNote:
		return fmt.Errorf("is over %d bytes", MaxBookingNote)
	case !utf8.ValidString(note):
		return fmt.Errorf("is not UTF-8")
	case strings.ContainsFunc(note, func(r rune) bool {
		return r < ' ' || r >= 0x7f && r < 0xa0 || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
	}):
		return fmt.Errorf("holds a control or bidi character")
	}
	return nil
}

// Overlaps says whether b's window meets [from, until); a zero until is
// no end.
func (b Booking) Overlaps(from, until time.Time) bool {
	return b.Until.After(from) && (until.IsZero() || b.From.Before(until))
}

// Honoured says whether b grants anything.
func (b Booking) Honoured() bool { return b.Ignored == "" }

// Holds says whether b is honoured and in its window at t.
func (b Booking) Holds(t time.Time) bool {
	return b.Honoured() && !t.Before(b.From) && t.Before(b.Until)
}

// sharesGPU is the GPUs a and b both reserve.
func sharesGPU(a, b Booking) []int {
	var both []int
	for _, g := range a.GPUs {
		if slices.Contains(b.GPUs, g) {
			both = append(both, g)
		}
	}
	return both
}
