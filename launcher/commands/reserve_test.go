package commands

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

func TestParseGPUPicks(t *testing.T) {
	got, err := parseGPUPicks([]string{"gpu01:1,0", "[fd00::1]:3", "gpu02:2"})
	if err != nil || !slices.Equal(got["gpu01"], []int{0, 1}) || !slices.Equal(got["[fd00::1]"], []int{3}) || !slices.Equal(got["gpu02"], []int{2}) {
		t.Errorf("parseGPUPicks = %v, %v", got, err)
	}
	for _, bad := range []string{"gpu01", "gpu01:", ":0", "gpu01:0,0", "gpu01:x", "gpu01:-1"} {
		if _, err := parseGPUPicks([]string{bad}); err == nil {
			t.Errorf("parseGPUPicks(%q) took it", bad)
		}
	}
}

// Bad flags are exit 2 before any host is reached.
func TestReserveBadFlags(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		o    ReserveOptions
		want string
	}{
		{ReserveOptions{For: "1h"}, "give --gpus N or --gpu HOST:I,J"},
		{ReserveOptions{GPUs: 1, GPU: []string{"h:0"}, For: "1h"}, "give --gpus N or --gpu HOST:I,J"},
		{ReserveOptions{GPUs: 1}, "give the reservation's length with --for"},
		{ReserveOptions{GPUs: 1, For: "soon"}, `--for "soon" is not a positive duration`},
		{ReserveOptions{GPUs: 1, For: "1h", From: "yesterday"}, `--from "yesterday" is not a time`},
		{ReserveOptions{GPUs: 1, For: "1h", Note: "a\nb"}, `--note "a\nb" holds a control or bidi character`},
		{ReserveOptions{GPUs: 1, For: "1h", Note: "a\xc2\x9bb"}, `--note "a\u009bb" holds a control or bidi character`},
		{ReserveOptions{GPUs: 1, For: "1h", Note: "a\u202eb"}, `--note "a\u202eb" holds a control or bidi character`},
		{ReserveOptions{GPUs: 1, For: "1h", Note: "a\xffb"}, `--note "a\xffb" is not UTF-8`},
		{ReserveOptions{GPUs: 1, For: "1h", Note: strings.Repeat("x", 61)}, "is over 60 bytes"},
		{ReserveOptions{GPU: []string{"h"}, For: "1h"}, `--gpu "h": want HOST:I,J`},
	} {
		c.o.Now, c.o.Zone, c.o.Stdout, c.o.Stderr = now, time.UTC, io.Discard, io.Discard
		err := Reserve(t.Context(), c.o)
		var ue *UsageError
		var se *schedule.UsageError
		if (!errors.As(err, &ue) && !errors.As(err, &se)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a usage error saying %q", c.o, err, c.want)
		}
	}
}

// A note read back from a host's file name is shown inert, never
// trusted to have been checked by a tfhive reserve.
func TestWriteReservationsEscapesNote(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	var b strings.Builder
	rows := []reservationRow{{Host: "gpu01", State: "now", Booking: inventory.Booking{ID: "0123abcd", User: "bob", GPUs: []int{0},
		From: t0, Until: t0.Add(time.Hour), Note: "a\u202eb\u009bc\xffd\x1b[2Je"}}}
	if err := writeReservations(&b, rows, t0); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.ContainsAny(out, "\u202e\u009b\x1b") || !strings.Contains(out, "a\uFFFDb\uFFFDc\uFFFDd^[[2Je") {
		t.Errorf("reservations table:\n%s\nwant the note's bidi, C1, invalid and escape bytes shown inert", out)
	}
}

// unreserve removes the user's own files of the id (anyone's as root);
// another user's file that merely shares it is named, never removed, and
// fails nothing of the user's.
func TestUnreserveFiles(t *testing.T) {
	file := func(user, name string) inventory.Booking {
		return inventory.Booking{ID: "0123abcd", User: user, File: "/tmp/claims/" + name}
	}
	inv := inventory.Inventory{Hosts: []inventory.HostInventory{
		{Name: "h1", Me: "alice", Bookings: []inventory.Booking{file("alice", "mine"), file("bob", "forged"), {ID: "99999999", User: "alice", File: "/tmp/claims/other"}}},
		{Name: "h2", Me: "alice", Bookings: []inventory.Booking{file("bob", "forged2")}},
		{Name: "h3", Me: "root", Bookings: []inventory.Booking{file("bob", "bobs")}},
	}}
	remove, others := unreserveFiles(inv, "0123abcd")
	if len(remove) != 2 || !slices.Equal(remove[0], []string{"mine"}) || !slices.Equal(remove[2], []string{"bobs"}) {
		t.Errorf("removed %v, want alice's on h1 and, as root, bob's on h3", remove)
	}
	if !slices.Equal(others, []string{"h1: reservation 0123abcd is bob's", "h2: reservation 0123abcd is bob's"}) {
		t.Errorf("others %q", others)
	}
}
