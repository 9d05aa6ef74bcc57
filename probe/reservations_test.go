package probe

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/claim"
	"github.com/tfhive/tfhive/probe/inventory"
)

// TestBookingsFromClaimsDir: the claims script lists the reservation
// files with their owners and never opens one; a link, a FIFO, a hard
// link and a malformed name grant nothing, and say why.
func TestBookingsFromClaimsDir(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().Truncate(time.Second)
	b := inventory.Booking{ID: "0000000a", GPUs: []int{1}, From: now, Until: now.Add(time.Hour), Note: "deadline"}
	good := inventory.BookingName(b)
	touch := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	touch(good)
	b.ID = "0000000b"
	os.Symlink(filepath.Join(dir, good), filepath.Join(dir, inventory.BookingName(b)))
	b.ID = "0000000c"
	if err := syscall.Mkfifo(filepath.Join(dir, inventory.BookingName(b)), 0o644); err != nil {
		t.Fatal(err)
	}
	b.ID = "0000000d"
	touch(inventory.BookingName(b))
	b.ID = "0000000e"
	os.Link(filepath.Join(dir, inventory.BookingName(inventory.Booking{ID: "0000000d", GPUs: []int{1}, From: now, Until: now.Add(time.Hour), Note: "deadline"})), filepath.Join(dir, inventory.BookingName(b)))
	touch("tfhive-reservation.0000000f.1.2.x.")
	touch("tfhive-reservation.0000000a.x")
	touch("tfhive-reservation with spaces")

	s := parseBookings(runClaimsScript(t, dir).files, dir)
	me := currentUserName(t)
	if s.me != me || s.overflow {
		t.Fatalf("me %q (want %q), overflow %v", s.me, me, s.overflow)
	}
	// A name not in the format has no ID, whatever its first field says
	// (else tfhive-reservation.ID.x would be found by unreserve ID).
	want := map[string]string{"0000000a": "", "0000000b": "symbolic link", "0000000c": "not a regular file",
		"0000000d": "2 names", "0000000e": "2 names",
		dir + "/tfhive-reservation.0000000f.1.2.x.": "GPUs", dir + "/tfhive-reservation.0000000a.x": "not tfhive-reservation.ID"}
	if len(s.bookings) != len(want) {
		t.Fatalf("bookings %+v, want %d", s.bookings, len(want))
	}
	for _, x := range s.bookings {
		key := x.ID
		if key == "" {
			key = x.File
		}
		w, ok := want[key]
		if !ok || (w == "") != (x.Ignored == "") || !strings.Contains(x.Ignored, w) || x.User != me {
			t.Errorf("%s: user %q ignored %q, want %q", key, x.User, x.Ignored, w)
		}
		if x.ID == "0000000a" && (x.Note != "deadline" || x.Made.IsZero() || !x.From.Equal(now)) {
			t.Errorf("the good one read as %+v", x)
		}
	}
}

// TestBookingsOverflow: past $rmax files the host's reservations are
// unknown.
func TestBookingsOverflow(t *testing.T) {
	dir := t.TempDir()
	for i := range 3 {
		os.WriteFile(filepath.Join(dir, "tfhive-reservation.0000000"+strconv.Itoa(i)+".1.2.0."), nil, 0o644)
	}
	cl := runClaimsScriptCaps(t, dir, "10", "2")
	if s := parseBookings(cl.files, dir); !s.overflow || len(s.bookings) != 2 {
		t.Errorf("overflow %v with %d bookings, want true with 2", s.overflow, len(s.bookings))
	}
}

// The policy's reservations: section is read strictly: limits for all,
// groups and users; a negative one is an error naming file and line.
func TestReservationPolicyParsed(t *testing.T) {
	p, err := ParsePolicy("policy.yaml", []byte("reservations:\n  max_hours: 8\n  groups: {interns: {max_gpus: 1}}\n  users:\n    alice: {ahead_days: 30}\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := p.Reservations
	if r == nil || *r.MaxHours != 8 || *r.Groups["interns"].MaxGPUs != 1 || *r.Users["alice"].AheadDays != 30 {
		t.Fatalf("reservations %+v", r)
	}
	for text, want := range map[string]string{
		"reservations:\n  max_hours: -1\n":                   "policy.yaml:2: reservations: max_hours must be 0 or more",
		"reservations:\n  users:\n    bob: {max_gpus: -2}\n": "policy.yaml:3: reservations: max_gpus must be 0 or more",
		"reservations:\n  max_days: 3\n":                     "policy.yaml:2:",
	} {
		if _, err := ParsePolicy("policy.yaml", []byte(text)); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}

// One find and one awk list both the reservations and the lock files: each
// list is cut at its own cap and says so, whatever the other does, and
// the lock files' overflow mark stays the section's last line.
func TestBookingsAndClaimsCutApart(t *testing.T) {
	dir := t.TempDir()
	for i := range 3 {
		os.WriteFile(filepath.Join(dir, "tfhive-reservation.0000000"+strconv.Itoa(i)+".1.2.0."), nil, 0o644)
		os.WriteFile(filepath.Join(dir, claim.FilePrefix+"port-"+strconv.Itoa(30000+i)+claim.FileSuffix), nil, 0o644)
	}
	for _, c := range []struct {
		rmax, cmax       string
		bookings, files  int
		bookCut, lockCut bool
	}{
		{"3", "3", 3, 3, false, false},
		{"2", "3", 2, 3, true, false},
		{"3", "2", 3, 2, false, true},
		{"1", "1", 1, 1, true, true},
	} {
		cl := runClaimsScriptCaps(t, dir, c.cmax, c.rmax)
		b := parseBookings(cl.files, dir)
		files := strings.Count("\n"+string(cl.files), "\nF ")
		if b.overflow != c.bookCut || len(b.bookings) != c.bookings || cl.overflow != c.lockCut || files != c.files {
			t.Errorf("rmax %s, cmax %s: %d bookings (cut %v), %d lock files (cut %v); want %d (%v), %d (%v)\n%s",
				c.rmax, c.cmax, len(b.bookings), b.overflow, files, cl.overflow, c.bookings, c.bookCut, c.files, c.lockCut, cl.files)
		}
	}
}
