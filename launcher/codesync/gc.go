package codesync

import (
	"bytes"
	"context"
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
	Dir  string // the host's cache (code/); "" if it could not say
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

// GC removes, on one host, the trees no process uses that were last used
// more than keep ago (at least MinKeep), and the directories of
// transfers that ended unfinished; dry removes nothing and reports the
// same.
func GC(ctx context.Context, ex remote.Executor, keep time.Duration, dry bool) (GCReport, error) {
	mins := max(int((keep+time.Minute-1)/time.Minute), int(MinKeep/time.Minute))
	d := "0"
	if dry {
		d = "1"
	}
	cmd := "exec sh -c " + shellescape.Quote(gcSh.With(shscript.Set("mins", strconv.Itoa(mins)), shscript.Set("dry", d)))
	var out, errb bytes.Buffer
	rc, err := ex.Run(ctx, cmd, nil, &out, &errb)
	rep := parseGC(out.String())
	if err != nil {
		return rep, err
	}
	if rc != 0 {
		msg := hostError(errb.String())
		if msg == "" {
			msg = fmt.Sprintf("exit %d", rc)
		}
		return rep, fmt.Errorf("gc failed: %s", msg)
	}
	if rep.Dir == "" {
		return rep, fmt.Errorf("gc: unexpected answer %q", firstLine(out.String()))
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
