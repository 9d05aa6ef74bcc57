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
