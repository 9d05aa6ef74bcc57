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
