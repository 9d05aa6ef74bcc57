package inventory

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func TestBookingNameRoundTrip(t *testing.T) {
	b := Booking{ID: "0123abcd", GPUs: []int{0, 3}, From: t0, Until: t0.Add(time.Hour), Note: "paper deadline: ICML"}
	name := BookingName(b)
	got, err := ParseBookingName(name)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != b.ID || !got.From.Equal(b.From) || !got.Until.Equal(b.Until) || got.Note != b.Note || len(got.GPUs) != 2 || got.GPUs[1] != 3 {
		t.Errorf("ParseBookingName(%q) = %+v, want %+v", name, got, b)
	}
	for _, bad := range []string{
		"tfhive-reservation.0123abcd.100.50.0.",    // ends before it begins
		"tfhive-reservation.0123ABCD.100.200.0.",   // id
		"tfhive-reservation.0123abcd.100.200.0,0.", // one GPU twice
		"tfhive-reservation.0123abcd.100.200..",    // no GPU
		"tfhive-reservation.0123abcd.100.200.0",    // no note field
		"tfhive-reservation.0123abcd.100.200.0.!!", // note not base64url
		"tfhive-reservation.0123abcd.100.200.0.Cg", // a newline in the note
		// What a note may not hold, written by hand into a file name
		// (tfhive reserve refuses them): a C1 CSI, a bidi override, an
		// isolate, bytes that are not UTF-8.
		BookingPrefix + "0123abcd.100.200.0." + base64.RawURLEncoding.EncodeToString([]byte("a\xc2\x9bb")),
		BookingPrefix + "0123abcd.100.200.0." + base64.RawURLEncoding.EncodeToString([]byte("a\u202eb")),
		BookingPrefix + "0123abcd.100.200.0." + base64.RawURLEncoding.EncodeToString([]byte("a\u2066b")),
		BookingPrefix + "0123abcd.100.200.0." + base64.RawURLEncoding.EncodeToString([]byte("a\xffb")),
	} {
		if _, err := ParseBookingName(bad); err == nil {
			t.Errorf("ParseBookingName(%q) took it", bad)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestJudgeBookings(t *testing.T) {
	mk := func(id, user string, made, from, d time.Duration, gpus ...int) Booking {
		return Booking{ID: id, User: user, GPUs: gpus, Made: t0.Add(made), From: t0.Add(from), Until: t0.Add(from + d)}
	}
	pol := &ReservationPolicy{
		ReservationLimits: ReservationLimits{MaxHours: ptr(8.0)},
		Groups:            map[string]ReservationLimits{"interns": {MaxGPUs: ptr(1)}, "staff": {MaxHours: ptr(12.0)}},
		Users:             map[string]ReservationLimits{"carol": {AheadDays: ptr(30.0)}},
	}
	groups := map[string][]string{"dave": {"interns"}, "erin": {"interns", "staff"}}
	j := Judge{Policy: pol, GPUs: 4, GroupsOf: func(u string) []string { return groups[u] }}
	bs := j.JudgeBookings([]Booking{
		mk("00000002", "bob", 2*time.Second, time.Hour, time.Hour, 1, 2), // overlaps alice's on GPU 1
		mk("00000001", "alice", time.Second, 0, 2*time.Hour, 0, 1),
		mk("00000003", "bob", 3*time.Second, 2*time.Hour, time.Hour, 1), // after alice's: fine
		mk("00000004", "bob", 4*time.Second, 0, 9*time.Hour, 3),         // 9 h > 8 h
		mk("00000005", "bob", 5*time.Second, 10*24*time.Hour, time.Hour, 3),
		mk("00000006", "carol", 6*time.Second, 10*24*time.Hour, time.Hour, 3), // carol may book 30 days ahead
		mk("00000007", "dave", 7*time.Second, 30*time.Hour, time.Hour, 2, 3),  // an intern: one GPU
		mk("00000008", "erin", 8*time.Second, 40*time.Hour, 11*time.Hour, 2),  // staff's 12 h
		mk("00000009", "bob", 9*time.Second, 50*time.Hour, time.Hour, 4),      // no GPU 4
		{ID: "0000000a", User: "mallory", Made: t0, Ignored: "it is a symbolic link"},
	})
	want := map[string]string{
		"00000001": "", "00000002": "GPU 1 is reserved by alice", "00000003": "",
		"00000004": "at most 8 h", "00000005": "more than 7 days ahead", "00000006": "",
		"00000007": "allows at most 1", "00000008": "", "00000009": "no GPU 4", "0000000a": "symbolic link",
	}
	if bs[0].ID != "0000000a" || bs[1].ID != "00000001" {
		t.Errorf("not in the order made: %s, %s", bs[0].ID, bs[1].ID)
	}
	for _, b := range bs {
		w := want[b.ID]
		if (w == "") != (b.Ignored == "") || !strings.Contains(b.Ignored, w) {
			t.Errorf("reservation %s: Ignored %q, want %q", b.ID, b.Ignored, w)
		}
	}
}

func TestLimitsForDefaults(t *testing.T) {
	l := LimitsFor(nil, "alice", nil)
	if l.MaxHours != 24 || l.AheadDays != 7 || l.MaxGPUs != -1 {
		t.Errorf("defaults %+v", l)
	}
	l = LimitsFor(&ReservationPolicy{ReservationLimits: ReservationLimits{MaxGPUs: ptr(0)}}, "alice", nil)
	if l.MaxGPUs != 0 || l.GPUsRule != "the host's policy" {
		t.Errorf("max_gpus 0: %+v", l)
	}
}

func TestHours(t *testing.T) {
	for d, want := range map[time.Duration]string{4 * time.Second: "4s", 90 * time.Minute: "1h30m", 8 * time.Hour: "8h", 45 * time.Minute: "45m"} {
		if got := Hours(d); got != want {
			t.Errorf("Hours(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestCheckBookingNote(t *testing.T) {
	for _, ok := range []string{"", "paper deadline: ICML", "Überprüfung – 日本語", strings.Repeat("x", MaxBookingNote)} {
		if err := CheckBookingNote(ok); err != nil {
			t.Errorf("CheckBookingNote(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"a\nb", "a\x1bb", "a\x7fb", "a\xc2\x9bb", "a\u0080b", "a\u009fb", "a\u202ab", "a\u202eb",
		"a\u2066b", "a\u2069b", "a\xffb", "\xc0\xaf", strings.Repeat("x", MaxBookingNote+1)} {
		if err := CheckBookingNote(bad); err == nil {
			t.Errorf("CheckBookingNote(%q) took it", bad)
		}
	}
}
