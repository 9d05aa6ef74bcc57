package probe

import (
	"testing"
	"time"
)

// A ticket waits since its holder started, as the host's kernel dates it
// (uptime less the holder's start in ticks), to the tick: its label's
// SINCE (0 here: 1970) only names its file.
func TestTicketsDatedByHolder(t *testing.T) {
	dir := "/tmp/c"
	holders := "  101  1001 mallory  12 flock -n -o " + dir + "/tfhive-ticket.1.0.forged.lock bash --norc -c x tfhive-ticket " + dir + " 1.0.forged forged normal 0 2\n" +
		"  102  1002 bob       0 flock -n -o " + dir + "/tfhive-ticket.1.5000.w.lock bash --norc -c x tfhive-ticket " + dir + " 1.5000.w w normal 5000 1\n" +
		"T 1000.50\nS 101 98825\nS 102 100020\n"
	s := claimsSection{dir: dir, locks: []byte("0:2a:1 101\n0:2a:2 102\n"), holders: []byte(holders)}
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	ts := parseTickets(s, now)
	if len(ts) != 2 {
		t.Fatalf("tickets: %+v", ts)
	}
	want := map[string]time.Time{
		"forged": now.Add(-12250 * time.Millisecond), // 1000.50 - 988.25
		"w":      now.Add(-300 * time.Millisecond),   // 1000.50 - 1000.20
	}
	for _, tk := range ts {
		if !tk.Since.Equal(want[tk.RunID]) {
			t.Errorf("%s since %v, want %v", tk.RunID, tk.Since, want[tk.RunID])
		}
	}
}

// Without the host's word on a holder's start, ps's whole seconds stand;
// a start that disagrees with ps (a pid used again between the two reads)
// is not believed.
func TestHolderAgeFallsBackToPS(t *testing.T) {
	hs := parseHolders([]byte("  7 0 root 40 flock x\n  8 0 root 3 flock y\nT 100.00\nS 8 2000\n"))
	if hs[7].age != 40*time.Second {
		t.Errorf("holder 7: age %v, want 40s", hs[7].age)
	}
	if hs[8].age != 3*time.Second {
		t.Errorf("holder 8: age %v, want ps's 3s (its start says 80s)", hs[8].age)
	}
}

// A requeued run's ticket says how often it was requeued in the word
// ticket.sh's inner script ends with, before the label: read from the
// end, the label is the same as an older tfhive's, whose ticket says 0;
// a word that is not a small count says 0.
func TestTicketRequeued(t *testing.T) {
	dir := "/tmp/c"
	label := func(script string) string {
		return "flock -n -o -E 75 " + dir + "/tfhive-ticket.1.5000.w.lock bash --norc -c " + script + " tfhive-ticket " + dir + " 1.5000.w w normal 5000 2,2"
	}
	for script, want := range map[string]int{
		`rm -f "$1/$0.$2.lock" #tfhive-requeued=2`:     2,
		`rm -f "$1/$0.$2.lock" #tfhive-requeued=0`:     0,
		`rm -f "$1/$0.$2.lock"`:                        0,
		`rm -f "$1/$0.$2.lock" #tfhive-requeued=`:      0,
		`rm -f "$1/$0.$2.lock" #tfhive-requeued=2x`:    0,
		`rm -f "$1/$0.$2.lock" #tfhive-requeued=99999`: 0,
	} {
		tk, ok := ParseTicketLabel(label(script), dir)
		if !ok || tk.RunID != "w" || tk.Priority != "normal" || len(tk.Shape) != 2 || tk.Requeued != want {
			t.Errorf("%q: %+v, %t; want run w requeued %d", script, tk, ok, want)
		}
	}
}

// A parked ticket (its run runs) is no waiter, and a requeued one's state
// says how often it was requeued, both only from a state holder of the
// ticket's own user: another user's state holder naming bob's ticket
// hides nothing, and no state dates a ticket.
func TestTicketState(t *testing.T) {
	dir := "/tmp/c"
	ticket := func(pid, user, name, run string) string {
		return "  " + pid + " 1001 " + user + " 30 flock -n -o -s -E 75 " + dir + "/tfhive-ticket." + name + ".lock bash --norc -c x tfhive-ticket " + dir + " " + name + " " + run + " normal 5000 1\n"
	}
	state := func(pid, user, name, st string) string {
		return "  " + pid + " 1001 " + user + " 1 flock -n -s -o " + dir + "/tfhive-ticket." + name + ".lock bash --norc -c exec cat >/dev/null tfhive-ticket-state " + dir + " " + name + " " + st + "\n"
	}
	holders := ticket("101", "alice", "1.5000.a", "a") + state("201", "alice", "1.5000.a", "parked") +
		ticket("102", "bob", "1.5000.b", "b") + state("202", "mallory", "1.5000.b", "parked") +
		ticket("103", "carol", "1.5000.c", "c") + state("203", "carol", "1.5000.c", "requeued=2") +
		state("204", "dave", "1.5000.d", "parked")
	locks := "0:2a:1 101\n0:2a:1 201\n0:2a:2 102\n0:2a:2 202\n0:2a:3 103\n0:2a:3 203\n0:2a:4 204\n"
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	ts := parseTickets(claimsSection{dir: dir, locks: []byte(locks), holders: []byte(holders)}, now)
	got := map[string]int{}
	for _, tk := range ts {
		got[tk.RunID] = tk.Requeued
		if !tk.Since.Equal(now.Add(-30 * time.Second)) {
			t.Errorf("%s since %v, want its holder's start", tk.RunID, tk.Since)
		}
	}
	if len(got) != 2 || got["c"] != 2 {
		t.Errorf("tickets %v, want b (mallory's state names nothing of hers) and c requeued 2; a parked", got)
	}
	if _, ok := got["b"]; !ok {
		t.Errorf("bob's ticket hidden by mallory's state holder: %v", got)
	}
}
