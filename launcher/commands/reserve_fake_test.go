package commands

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/hosttest"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/schedule"
)

// reserve runs tfhive reserve on b's hosts with o's flags.
func (b *bed) reserve(o ReserveOptions) (*out, error) {
	var w out
	o.Streams, o.Hosts = w.streams(), b.hosts
	if o.For == "" {
		o.For = "1h"
	}
	return &w, Reserve(b.t.Context(), o)
}

// A reservation whose file name could be over 255 bytes is exit 2 before
// any host is reached: its length is reckoned from the flags alone (the
// largest GPU list they allow, the note, the window).
func TestReserveNameTooLongTouchesNothing(t *testing.T) {
	b := newBed(t, hosttest.Profile{Name: "a", GPUs: 2})
	note := strings.Repeat("n", 60)
	for _, o := range []ReserveOptions{
		{GPUs: 64, Note: note},
		{GPUs: 65},
		{GPU: []string{"a:0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63"}, Note: note},
		{GPU: []string{"a:0", "a:10000,10001,10002,10003,10004,10005,10006,10007,10008,10009,10010,10011,10012,10013,10014,10015,10016,10017,10018,10019,10020,10021,10022,10023,10024,10025,10026,10027,10028,10029,10030,10031,10032,10033,10034,10035,10036,10037,10038,10039"}},
	} {
		_, err := b.reserve(o)
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "over the 255") && !strings.Contains(err.Error(), "--gpus must be 1 to 64, got 65") {
			t.Errorf("%+v: %v, want exit 2 for its name's length", o, err)
		}
	}
	if n := b.fleet.Host("a").Dials(); n != 0 {
		t.Errorf("the host was reached %d times for reservations refused by their flags", n)
	}
	// 64 GPUs without a note fit a name (232 bytes at most): the host
	// is asked, and has too few.
	if _, err := b.reserve(ReserveOptions{GPUs: 64}); !errors.As(err, new(*schedule.CapacityError)) {
		t.Errorf("reserve --gpus 64 on a host of 2: %v, want exit 3", err)
	}
}

// A host that cannot be reached is exit 4, naming it and why, before a
// lack of GPUs (exit 3) or anything else is said of it.
func TestReserveUnreachableIsExit4(t *testing.T) {
	b := newBed(t, hosttest.Profile{Name: "a", GPUs: 2}, hosttest.Profile{Name: "down", Down: true})
	for _, o := range []ReserveOptions{
		{GPU: []string{"down:0"}},
		{GPU: []string{"a:0", "down:1"}},
		{GPUs: 4}, // more than a has: down might have had them
	} {
		w, err := b.reserve(o)
		var ue *UnreachableError
		if !errors.As(err, &ue) || len(ue.Lines) != 1 || !strings.HasPrefix(ue.Lines[0], "down: ") {
			t.Errorf("%+v: %v (%+v), want exit 4 naming down and why", o, err, ue)
		}
		if w.stdout.Len() > 0 {
			t.Errorf("%+v: reserved something:\n%s", o, w.stdout.String())
		}
	}
	if got := b.fleet.Host("a").Shell(t, `ls "$TFHIVE_CLAIMS_DIR" | grep -c tfhive-reservation || true`); strings.TrimSpace(got) != "0" {
		t.Errorf("reservations made on a: %s", got)
	}
	// What a host reached can give is given, the other named as not used,
	// as plan and run do.
	w, err := b.reserve(ReserveOptions{GPUs: 2})
	if err != nil || !strings.Contains(w.stdout.String(), "reserved GPUs 0,1 on a") || !strings.Contains(w.stderr.String(), "tfhive: warning: down not used: ") {
		t.Errorf("reserve --gpus 2 beside a host down: %v\n%s%s", err, w.stdout.String(), w.stderr.String())
	}
	// With every host reached, too few GPUs stays exit 3.
	b2 := newBed(t, hosttest.Profile{Name: "a", GPUs: 2})
	if _, err := b2.reserve(ReserveOptions{GPUs: 4}); !errors.As(err, new(*schedule.CapacityError)) {
		t.Errorf("reserve --gpus 4 of 2: %v, want exit 3", err)
	}
}

// lostAfterBooking is an executor of a host whose link is lost once a
// reservation file is in its claims dir: every later command fails as
// an ssh connection lost does, its fate unknown (an error), or with
// ssh's own exit 255 (rc255).
type lostAfterBooking struct {
	remote.Executor
	claims string
	rc255  bool
}

func (l lostAfterBooking) lost() bool {
	names, _ := filepath.Glob(filepath.Join(l.claims, "tfhive-reservation.*"))
	return len(names) > 0
}

func (l lostAfterBooking) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if l.lost() && l.rc255 {
		io.WriteString(stderr, "Connection to a closed by remote host.\n")
		return 255, nil
	}
	if l.lost() {
		return -1, errors.New("connection to a lost")
	}
	return l.Executor.Run(ctx, cmd, stdin, stdout, stderr)
}

func (l lostAfterBooking) Start(ctx context.Context, cmd string, stdout, stderr io.Writer) (remote.Started, error) {
	if l.lost() {
		return nil, errors.New("connection to a lost")
	}
	return l.Executor.Start(ctx, cmd, stdout, stderr)
}

// A host lost between making its reservation and the probe that checks
// it is exit 4, naming it, as any host not reached (not 3: no other
// reservation was seen to hold its GPUs); nothing is said reserved, and
// the other hosts' files are taken back.
func TestReserveLostBeforeTheCheckIsExit4(t *testing.T) {
	for _, rc255 := range []bool{true, false} {
		b := newBed(t, hosttest.Profile{Name: "a", GPUs: 2}, hosttest.Profile{Name: "b", GPUs: 2})
		a := b.fleet.Host("a")
		b.hosts.Dial = func(ctx context.Context, h inventory.Host) (remote.Executor, *inventory.HostError) {
			e, herr := b.fleet.Dial(ctx, h)
			if herr == nil && h.Name == "a" {
				e = lostAfterBooking{Executor: e, claims: a.ClaimsDir(), rc255: rc255}
			}
			return e, herr
		}
		w, err := b.reserve(ReserveOptions{GPU: []string{"b:0", "a:1"}})
		var ue *UnreachableError
		if !errors.As(err, &ue) || len(ue.Lines) != 1 || !strings.HasPrefix(ue.Lines[0], "a: the reservation was made but could not be checked: ") {
			t.Fatalf("rc 255 %v: %v (%+v), want exit 4 naming a", rc255, err, ue)
		}
		if w.stdout.Len() > 0 {
			t.Errorf("rc 255 %v: reserved something:\n%s", rc255, w.stdout.String())
		}
		if got := b.fleet.Host("b").Shell(t, `ls "$TFHIVE_CLAIMS_DIR" | grep -c tfhive-reservation || true`); strings.TrimSpace(got) != "0" {
			t.Errorf("rc 255 %v: b's reservation was not taken back: %s", rc255, got)
		}
	}
}

// ps --json carries what ps's table does: the runs, and the reservations
// honoured now or ahead, each as reservations --json has it (an empty
// list when there are none).
func TestPsJSONHasTheReservations(t *testing.T) {
	b := newBed(t, hosttest.Profile{Name: "a", GPUs: 2})
	ps := func(asJSON bool) string {
		var w out
		if err := Ps(t.Context(), PsOptions{Streams: w.streams(), Hosts: b.hosts, JSON: asJSON}); err != nil {
			t.Fatalf("ps (json %v): %v\n%s", asJSON, err, w.stderr.String())
		}
		return w.stdout.String()
	}
	if got := ps(true); !strings.Contains(got, `"reservations": []`) {
		t.Errorf("ps --json without a reservation: want an empty list\n%s", got)
	}
	w, err := b.reserve(ReserveOptions{GPU: []string{"a:1"}, Note: "paper deadline"})
	if err != nil {
		t.Fatalf("reserve: %v\n%s", err, w.stderr.String())
	}
	var doc struct {
		Runs         []any            `json:"runs"`
		Reservations []map[string]any `json:"reservations"`
	}
	got := ps(true)
	if err := json.Unmarshal([]byte(got), &doc); err != nil {
		t.Fatalf("ps --json: %v\n%s", err, got)
	}
	if doc.Runs == nil || len(doc.Reservations) != 1 {
		t.Fatalf("ps --json: want runs and the one reservation\n%s", got)
	}
	r := doc.Reservations[0]
	id, _ := r["id"].(string)
	if r["host"] != "a" || r["state"] != "now" || r["note"] != "paper deadline" || id == "" || !strings.Contains(w.stdout.String(), id) {
		t.Errorf("ps --json's reservation: %v, want a's, now, its note and id (reserve said %s)", r, w.stdout.String())
	}
	if table := ps(false); !strings.Contains(table, id) || !strings.Contains(table, "paper deadline") {
		t.Errorf("ps's table lacks the reservation %s:\n%s", id, table)
	}
}

// A window that has ended and a --gpu host not among the hosts are exit
// 2 before any host is dialled: a host that is down among them is never
// tried (it would be exit 4).
func TestReserveBadWindowOrHostTouchesNothing(t *testing.T) {
	b := newBed(t, hosttest.Profile{Name: "a", GPUs: 2}, hosttest.Profile{Name: "down", Down: true})
	past := time.Now().Add(-3 * time.Hour).Format(time.RFC3339)
	for _, c := range []struct {
		o    ReserveOptions
		want string
	}{
		{ReserveOptions{GPUs: 1, From: past, For: "1h"}, "has ended already"},
		{ReserveOptions{GPU: []string{"a:0", "down:0"}, From: past, For: "1h"}, "has ended already"},
		{ReserveOptions{GPU: []string{"a:0", "elsewhere:1"}}, "--gpu elsewhere: no host elsewhere among the hosts"},
		{ReserveOptions{GPU: []string{"elsewhere:1"}}, "--gpu elsewhere: no host elsewhere among the hosts"},
	} {
		w, err := b.reserve(c.o)
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want exit 2 saying %q", c.o, err, c.want)
		}
		if w.stdout.Len() > 0 {
			t.Errorf("%+v: reserved something:\n%s", c.o, w.stdout.String())
		}
	}
	for _, h := range []string{"a", "down"} {
		if n := b.fleet.Host(h).Dials(); n != 0 {
			t.Errorf("%s was dialled %d times for reservations refused before any host is touched", h, n)
		}
	}
}
