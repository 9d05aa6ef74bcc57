package top

import (
	"context"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/tfhive/tfhive/launcher/hostops"
	"github.com/tfhive/tfhive/launcher/logroot"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// Source gathers top's snapshots (Refresh: Config.Refresh) and keeps the
// last probe's inventory, which stopping a run goes by.
type Source struct {
	// Probe probes the fleet's hosts, Hosts, once (status's probe with
	// ps's look at the runs).
	Probe func(context.Context) (inventory.Inventory, error)
	Hosts []inventory.Host
	Avail schedule.Availability
	Root  string // the log root
	// Warnings holds the fleet's last warning, for the footer.
	Warnings *LastLine

	mu  sync.Mutex
	inv inventory.Inventory // the last probe's
	// summaries: the ended runs' records, read once, not every refresh.
	summaries logroot.Cache
}

// Refresh probes every host once and reads the local log root.
func (s *Source) Refresh(ctx context.Context) Snapshot {
	snap := Snapshot{At: time.Now()}
	inv, err := s.Probe(ctx)
	if err != nil {
		snap.Err = err
		return snap
	}
	snap.Inv, snap.Status, snap.Queue = inv, schedule.Classify(inv, s.Avail), schedule.QueueWhy(inv)
	login := map[string]string{}
	for _, h := range s.Hosts {
		login[h.Name] = hostops.LoginUser(h)
	}
	s.mu.Lock() // a refresh asked for ('r') may overlap the timed one
	s.inv = inv
	if s.summaries == nil {
		s.summaries = logroot.Cache{}
	}
	recs, _ := logroot.RunsCached(s.Root, io.Discard, snap.At, s.summaries)
	s.mu.Unlock()
	snap.Mine = Mine(hostops.Runs(inv), login, recs)
	snap.Warning = s.Warnings.take()
	return snap
}

// Inventory is the last probe's.
func (s *Source) Inventory() inventory.Inventory {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inv
}

// LastLine keeps the last line written to it: the fleet's warnings while
// the screen is top's.
type LastLine struct {
	mu   sync.Mutex
	line string
}

func (l *LastLine) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := strings.TrimSpace(string(p)); s != "" {
		l.line = s
	}
	return len(p), nil
}

// take returns the last line and forgets it.
func (l *LastLine) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.line
	l.line = ""
	return s
}
