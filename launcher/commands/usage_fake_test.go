package commands

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/hosttest"
)

// fakeLedger writes the test user's ledger for this month on host h: one
// attempt of an hour on one GPU, ended an hour ago.
func fakeLedger(t *testing.T, h *hosttest.Host, run string) {
	t.Helper()
	now := time.Now()
	l := filepath.Join(h.ClaimsDir(), fmt.Sprintf("tfhive-usage.%d", os.Getuid()))
	if err := os.MkdirAll(l, 0o755); err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf("1 %d %d 1 0 %s worker:0\n", now.Add(-2*time.Hour).Unix(), now.Add(-time.Hour).Unix(), run)
	if err := os.WriteFile(filepath.Join(l, now.UTC().Format("2006-01")+".csv"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A host that stalls while its ledgers are read (here its dd never
// returns) is given the command timeout: usage names it, with why, and
// sums the others'.
func TestUsageOnFakeHostsNamesAStalledHost(t *testing.T) {
	b := twoHosts(t)
	b.hosts.CommandTimeout = 3 * time.Second
	for _, h := range b.fleet.Hosts {
		fakeLedger(t, h, "on-"+h.Name)
	}
	stall := filepath.Join(b.fleet.Hosts[0].Dir, "bin", "dd")
	if err := os.WriteFile(stall, []byte("#!/bin/sh\nexec sleep 120\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var o syncOut
	done := make(chan error, 1)
	go func() {
		done <- Usage(context.Background(), UsageOptions{Streams: o.streams(), Hosts: b.hosts, Since: "1d", By: "host"})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("usage: %v\n%s", err, o.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("usage waited on the stalled host:\n%s", o.String())
	}
	s := o.String()
	contains(t, "usage", s, "tfhive: warning: a: reading its usage ledgers timed out after 3s (--command-timeout): its use is left out\n",
		"\nb ")
	if strings.Contains(s, "\na ") {
		t.Errorf("the stalled host has a row:\n%s", s)
	}
}

// An owner with more names in a host's claims directory than usage
// looks at is named (as getent names them) in a warning with the host,
// and the host's answer is still summed.
func TestUsageOnFakeHostsNamesACrowdedOwner(t *testing.T) {
	b := twoHosts(t)
	for _, h := range b.fleet.Hosts {
		fakeLedger(t, h, "on-"+h.Name)
	}
	month := time.Now().UTC().Format("2006-01")
	for i := range 65 {
		p := filepath.Join(b.fleet.Hosts[0].ClaimsDir(), fmt.Sprintf("tfhive-usage.%d.%s.csv", 100000+i, month))
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var o out
	if err := Usage(context.Background(), UsageOptions{Streams: o.streams(), Hosts: b.hosts, Since: "1d", By: "host"}); err != nil {
		t.Fatalf("usage: %v\n%s", err, o.stderr.String())
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	contains(t, "usage", o.stderr.String(), "tfhive: warning: a: "+me.Username+" has more than 64 usage ledger names in its claims directory: the rest were not read, their sums may be short\n")
	contains(t, "usage", o.stdout.String(), "\nb ")
}

// What a host says is never printed raw: a refused ledger's reason (here
// a host whose find gives an owner with a terminal's escape in it) and
// the host's stderr (one whose script fails, saying an escape)
// each reach the terminal as one inert line.
func TestUsageOnFakeHostsEscapesWhatAHostSays(t *testing.T) {
	b := twoHosts(t)
	month := time.Now().UTC().Format("2006-01")
	find := "#!/bin/sh\ncase \"$*\" in\n*tfhive-usage*) printf 'F \\033[2J 644 0 0 f tfhive-usage.1." + month + ".csv\\n' ;;\n*) exec /usr/bin/find \"$@\" ;;\nesac\n"
	if err := os.WriteFile(filepath.Join(b.fleet.Hosts[0].Dir, "bin", "find"), []byte(find), 0o755); err != nil {
		t.Fatal(err)
	}
	// The read stage evaluates what dd gives it: here a stage that fails.
	dd := "#!/bin/sh\necho \"printf '\\\\033]0;pwned\\\\007 no script\\\\n' >&2; exit 1\"\n"
	if err := os.WriteFile(filepath.Join(b.fleet.Hosts[1].Dir, "bin", "dd"), []byte(dd), 0o755); err != nil {
		t.Fatal(err)
	}
	var o out
	Usage(context.Background(), UsageOptions{Streams: o.streams(), Hosts: b.hosts, Since: "1d"})
	s := o.stderr.String()
	contains(t, "usage", s, `tfhive: warning: a: tfhive-usage.1.`+month+`.csv is not believed: owned by uid \x1b[2J, not 1`+"\n",
		`tfhive: warning: b: reading its usage ledgers failed: \x1b]0;pwned\a no script`+"\n")
	if strings.ContainsAny(s, "\x1b\x07") {
		t.Errorf("raw escapes on stderr: %q", s)
	}
}

// A host whose answer passes usage.HostLimit (here its stage prints
// without end) is stopped there and its ledgers are not read: usage
// names it, with why, and sums the others'.
func TestUsageOnFakeHostsStopsAFlood(t *testing.T) {
	b := twoHosts(t)
	for _, h := range b.fleet.Hosts {
		fakeLedger(t, h, "on-"+h.Name)
	}
	// The read stage evaluates what dd gives it: here a stage that
	// prints without end.
	dd := "#!/bin/sh\necho 'exec yes flood'\n"
	if err := os.WriteFile(filepath.Join(b.fleet.Hosts[1].Dir, "bin", "dd"), []byte(dd), 0o755); err != nil {
		t.Fatal(err)
	}
	var o out
	if err := Usage(context.Background(), UsageOptions{Streams: o.streams(), Hosts: b.hosts, Since: "1d", By: "host"}); err != nil {
		t.Fatalf("usage: %v\n%s", err, o.stderr.String())
	}
	contains(t, "usage", o.stderr.String(), "tfhive: warning: b: its answer passed 64 MiB: its usage ledgers are not read, its use is left out\n")
	contains(t, "usage", o.stdout.String(), "\na ")
	if strings.Contains(o.stdout.String(), "\nb ") {
		t.Errorf("the flooding host has a row:\n%s", o.stdout.String())
	}
}
