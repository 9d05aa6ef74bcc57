// Package usage is `tfhive usage`: GPU-hours held and idle per user and
// host, from the ledgers each host's supervisors append to when an
// attempt ends (launcher/supervisor/scripts/ledger.sh), read from every
// host (scripts/usage.sh) and summed over a window. A ledger is believed
// only as its user's own (the host says who owns it; a file anyone else
// could have written is refused whole) and only for what it can prove:
// a line that does not parse, ends after the file was last written or
// before it starts, or holds more GPUs than the host has, is dropped and
// counted; idle time is never more than the time held.
package usage

import (
	"crypto/rand"
	"embed"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/remote/shscript"
)

//go:embed scripts/*.sh
var scripts embed.FS

var usageSh = shscript.Load(scripts, "scripts/usage.sh")

// The host script's bounds (usage.sh). Each user's are spent by their
// own files alone: a colleague's cannot exhaust them for you.
const (
	// UserNames is how many names in the claims directory of one owner's
	// are looked at; the rest of theirs are not.
	UserNames = 64
	// UserBytes is how many bytes of ledger lines one uid's ledgers
	// give; the rest of theirs is not read (some 140,000 attempts).
	UserBytes = 8 << 20
	// Owners and HostBytes bound the whole answer under HostLimit: more
	// owners of names, or more bytes of lines in all, are not read.
	Owners    = 1024
	HostBytes = 48 << 20
)

// HostLimit bounds one host's answer. usage.sh keeps its own under it
// (HostBytes of lines, Owners owners), saying what it left out; an
// answer past it anyway is stopped there and not believed at all (a cut
// answer would under-count without saying so): remote.RunBounded.
const HostLimit = 64 << 20

// limits are the script's bounds (tests make them small).
type limits struct{ names, user, owners, host int }

var defaults = limits{UserNames, UserBytes, Owners, HostBytes}

// Script is the host's script for ledgers from since's month on; secret
// leads every line of its own (NewSecret), so none of a ledger's can
// pass for one.
func Script(since time.Time, secret string) string { return script(since, secret, defaults) }

func script(since time.Time, secret string, l limits) string {
	return usageSh.With(
		shscript.Set("tfhive_from", since.UTC().AddDate(0, 0, -1).Format("2006-01")),
		shscript.Set("tfhive_secret", secret),
		shscript.Set("tfhive_names", strconv.Itoa(l.names)),
		shscript.Set("tfhive_user", strconv.Itoa(l.user)),
		shscript.Set("tfhive_owners", strconv.Itoa(l.owners)),
		shscript.Set("tfhive_host", strconv.Itoa(l.host)))
}

// NewSecret is a word for one call of Script.
func NewSecret() string { return rand.Text() }

// Marker is what leads the lines of usage.sh's own in a call with secret.
func Marker(secret string) string { return "@@tfhive-usage " + secret + " " }

// Entry is one attempt of one task, as its host's ledger says.
type Entry struct {
	Host, User, Run, Task string
	Start, End            time.Time
	GPUs                  int
	// IdleGPUSeconds: the GPU-seconds its GPUs sat idle.
	IdleGPUSeconds int64
}

// Host is what one host's ledgers gave.
type Host struct {
	Entries []Entry
	// Refused names the ledgers not believed, and why; Dropped counts
	// the lines that proved nothing.
	Refused []string
	Dropped int
	// Overflow: the host had more than usage.sh reads ("owners": more
	// than Owners owners of names; "bytes": more than HostBytes of
	// lines); the rest was not read.
	Overflow string
	// Short names the users ("alice", "uid 1003") of whose ledgers only
	// UserBytes were read, Crowded those who had more than UserNames
	// names in the claims directory: their sums are short.
	Short, Crowded []string
}

// Parse reads usage.sh's output from host, whose GPUs are ngpus (0:
// unknown, no bound). Only lines led by Marker(secret) are the script's
// own, and a ledger's lines are only those led by "L " after its
// ledger line: whatever a ledger holds is one of its own lines, for its
// own uid, at most.
func Parse(host, out, secret string, ngpus int) Host {
	var h Host
	users := map[string]string{}
	type line struct {
		uid   string
		mtime int64
		text  string
	}
	var lines []line
	var short, crowded []string
	var uid string
	var mtime int64
	inUsers := false
	mark := Marker(secret)
	for l := range strings.Lines(out) {
		l = strings.TrimSuffix(l, "\n")
		own, ok := strings.CutPrefix(l, mark)
		if ok {
			uid, inUsers = "", false
			word, rest, _ := strings.Cut(own, " ")
			switch word {
			case "refused":
				h.Refused = append(h.Refused, rest)
			case "ledger":
				if f := strings.Fields(rest); len(f) == 4 {
					if m, err := strconv.ParseInt(f[1], 10, 64); err == nil {
						uid, mtime = f[0], m
					}
				}
			case "users":
				inUsers = true
			case "overflow":
				if rest == "bytes" || rest == "owners" {
					h.Overflow = rest
				}
			case "short":
				short = append(short, rest)
			case "crowded":
				crowded = append(crowded, rest)
			}
			continue
		}
		if text, ok := strings.CutPrefix(l, "L "); ok && uid != "" {
			lines = append(lines, line{uid, mtime, text})
		} else if pw, ok := strings.CutPrefix(l, "U "); ok && inUsers {
			// getent: name:password:uid:...
			if f := strings.Split(pw, ":"); len(f) >= 3 {
				users[f[2]] = f[0]
			}
		}
	}
	name := func(uid string) string {
		if users[uid] != "" {
			return users[uid]
		}
		return "uid " + uid
	}
	for _, u := range short {
		if validUID(u) {
			h.Short = append(h.Short, name(u))
		}
	}
	for _, u := range crowded {
		if validUID(u) {
			h.Crowded = append(h.Crowded, name(u))
		}
	}
	for _, ln := range lines {
		e, ok := parseLine(ln.text, ln.mtime, ngpus)
		if !ok {
			h.Dropped++
			continue
		}
		e.Host, e.User = host, name(ln.uid)
		h.Entries = append(h.Entries, e)
	}
	return h
}

// validUID: a uid as usage.sh says one, digits only.
func validUID(s string) bool {
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil && len(s) <= 10
}

// parseLine reads "1 START END GPUS IDLE RUN TASK"; ok false when it
// proves nothing.
func parseLine(s string, mtime int64, ngpus int) (Entry, bool) {
	f := strings.Fields(s)
	if len(f) != 7 || f[0] != "1" {
		return Entry{}, false
	}
	var n [4]int64
	for i := range n {
		v, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil || v < 0 {
			return Entry{}, false
		}
		n[i] = v
	}
	start, end, gpus, idle := n[0], n[1], n[2], n[3]
	if end < start || end > mtime || gpus < 1 || (ngpus > 0 && gpus > int64(ngpus)) {
		return Entry{}, false
	}
	idle = min(idle, (end-start)*gpus)
	return Entry{Run: f[5], Task: f[6], Start: time.Unix(start, 0), End: time.Unix(end, 0), GPUs: int(gpus), IdleGPUSeconds: idle}, true
}

// Row is one user's or host's sums over the window (record.UsageRow).
type Row = record.UsageRow

// Sum adds up the entries' parts within [from, to], by user or host:
// an attempt that began before the window counts for its part within
// it, its idle time in proportion. Rows are sorted by GPU-hours, most
// first.
func Sum(entries []Entry, from, to time.Time, byHost bool) []Row {
	rows := map[string]*Row{}
	runs := map[string]map[string]bool{}
	for _, e := range entries {
		s, t := maxTime(e.Start, from), minTime(e.End, to)
		if t.Before(s) || (t.Equal(s) && !e.End.Equal(e.Start)) {
			continue
		}
		key := e.User
		if byHost {
			key = e.Host
		}
		r := rows[key]
		if r == nil {
			r = &Row{Key: key}
			rows[key], runs[key] = r, map[string]bool{}
		}
		part := t.Sub(s).Seconds()
		r.GPUHours += part * float64(e.GPUs) / 3600
		if whole := e.End.Sub(e.Start).Seconds(); whole > 0 {
			r.IdleHours += float64(e.IdleGPUSeconds) * part / whole / 3600
		}
		runs[key][e.User+" "+e.Run] = true
	}
	out := make([]Row, 0, len(rows))
	for k, r := range rows {
		r.Runs = len(runs[k])
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b Row) int {
		if a.GPUHours != b.GPUHours {
			if a.GPUHours > b.GPUHours {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// FormatSince writes d as --since takes it: whole days as "7d", else
// as Go writes a duration without its zero tail ("36h", "1h30m").
func FormatSince(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	}
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

// ParseSince reads --since: a Go duration or whole days ("7d").
func ParseSince(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err == nil && n > 0 && n <= 3660 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	} else if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, nil
	}
	return 0, fmt.Errorf("--since %q: want a duration such as 7d, 36h or 90m", s)
}
