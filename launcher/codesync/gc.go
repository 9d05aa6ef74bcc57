package codesync

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/alessio/shellescape"

	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/shscript"
)

// MinKeep is the least time GC keeps a tree after its last use: a run
// that found a tree in its probe starts its tasks there moments later.
const MinKeep = time.Minute

// Kinds of directory GC reports (scripts/gc.sh).
const (
	Removed  = 'R' // a tree nothing uses
	Stale    = 'T' // a transfer's, which ended unfinished a day ago or more
	InUse    = 'U' // a tree a process uses
	Recent   = 'N' // a tree used within the keep time
	Underway = 'W' // a transfer's, perhaps still under way
)

// GCDir is one directory of a host's cache.
type GCDir struct {
	Kind byte
	Name string
	KiB  int64 // disk usage, as du -sk counts it
}

// GCReport is what GC found, and removed, in one host's cache.
type GCReport struct {
	Dir string // the host's cache (code/); "" if it could not say
	// Home names the cache itself (its .id): hosts that report the same
	// share one cache (one home over NFS). "" when it has none yet.
	Home string
	Dirs []GCDir
}

// Freed is the disk space of what was (or, dry, would be) removed.
func (r GCReport) Freed() int64 {
	var n int64
	for _, d := range r.Dirs {
		if d.Kind == Removed || d.Kind == Stale {
			n += d.KiB
		}
	}
	return n
}

// maxGCListing bounds gc.sh's answer: a line and a size for each
// directory of the cache, thousands of trees in a megabyte. One past it is
// not read: a tree left out of a listing cut short would not be known to
// be in use.
const maxGCListing = 4 << 20

// GC removes, on one host, the trees no process uses that were last used
// more than keep ago (at least MinKeep), and the directories of
// transfers that ended unfinished; dry removes nothing and reports the
// same. only, when not nil, narrows what may go to those names: what no
// host sharing the cache uses (Shared).
func GC(ctx context.Context, ex remote.Executor, keep time.Duration, dry bool, only []string) (GCReport, error) {
	mins := max(int((keep+time.Minute-1)/time.Minute), int(MinKeep/time.Minute))
	d := "0"
	if dry {
		d = "1"
	}
	o := "-"
	if only != nil {
		o = strings.Join(only, " ")
	}
	cmd := "exec sh -c " + shellescape.Quote(gcSh.With(shscript.Set("mins", strconv.Itoa(mins)), shscript.Set("dry", d), shscript.Set("only", o)))
	rc, out, errb, err := remote.RunBounded(ctx, ex, cmd, nil, maxGCListing, maxStderr)
	rep := parseGC(string(out))
	switch {
	case errors.Is(err, remote.ErrTooMuchOutput) && dry:
		return rep, fmt.Errorf("%w: what its cache holds is unknown, so nothing is removed there", err)
	case errors.Is(err, remote.ErrTooMuchOutput):
		return rep, fmt.Errorf("%w: which trees it removed is unknown", err)
	case err != nil:
		return rep, err
	}
	if rc != 0 {
		msg := hostError(string(errb))
		if msg == "" {
			msg = fmt.Sprintf("exit %d", rc)
		}
		return rep, fmt.Errorf("gc failed: %s", msg)
	}
	if rep.Dir == "" {
		return rep, fmt.Errorf("gc: unexpected answer %q", firstLine(string(out)))
	}
	return rep, nil
}

// parseGC reads gc.sh's output. Sizes are matched to the names listed
// before them; a line of anything else is skipped.
func parseGC(out string) GCReport {
	var r GCReport
	sizes := false
	byName := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "@@tfhive-gc "):
			r.Dir = strings.TrimPrefix(line, "@@tfhive-gc ")
		case strings.HasPrefix(line, "@@tfhive-home "):
			if id := strings.TrimPrefix(line, "@@tfhive-home "); len(id) == 32 && strings.Trim(id, "0123456789abcdef") == "" {
				r.Home = id
			}
		case line == "@@tfhive-du":
			sizes = true
		case sizes:
			kib, name, ok := strings.Cut(line, "\t")
			n, err := strconv.ParseInt(kib, 10, 64)
			if i, known := byName[name]; ok && err == nil && known {
				r.Dirs[i].KiB = n
			}
		case len(line) > 2 && line[1] == ' ' && strings.IndexByte("RTUNW", line[0]) >= 0:
			byName[line[2:]] = len(r.Dirs)
			r.Dirs = append(r.Dirs, GCDir{Kind: line[0], Name: line[2:]})
		}
	}
	return r
}

// Shared decides for hosts that share one cache (reports of the same
// Home, from a dry GC each): the names that may go, those every host
// would remove (nothing there uses them, or a transfer's that ended
// unfinished), and the report to show once for all of them, each tree
// under the reason to keep it that some host gave.
func Shared(reports []GCReport) (only []string, merged GCReport) {
	merged = GCReport{Dir: reports[0].Dir, Home: reports[0].Home}
	idx := map[string]int{}
	for _, r := range reports {
		for _, d := range r.Dirs {
			i, seen := idx[d.Name]
			if !seen {
				idx[d.Name] = len(merged.Dirs)
				merged.Dirs = append(merged.Dirs, d)
				continue
			}
			// A host that keeps it (in use, recent, under way) wins.
			if m := &merged.Dirs[i]; removable(m.Kind) && !removable(d.Kind) {
				m.Kind = d.Kind
			}
		}
	}
	only = []string{}
	for i, d := range merged.Dirs {
		seenAll := true
		for _, r := range reports {
			found := false
			for _, x := range r.Dirs {
				found = found || x.Name == d.Name
			}
			seenAll = seenAll && found
		}
		if !seenAll && removable(d.Kind) {
			// A tree one host does not list (it arrived since): kept.
			merged.Dirs[i].Kind = Recent
		}
		if removable(merged.Dirs[i].Kind) {
			only = append(only, d.Name)
		}
	}
	return only, merged
}

func removable(k byte) bool { return k == Removed || k == Stale }
