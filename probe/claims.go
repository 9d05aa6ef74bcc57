package probe

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tfhive/tfhive/probe/claim"
	"github.com/tfhive/tfhive/probe/inventory"
)

// The claims sections' markers (scripts/claims.sh prints them).
const (
	markClaims  = "@@tfhive-claims"
	markLocks   = "@@tfhive-locks"
	markHolders = "@@tfhive-holders"
)

type fileID struct {
	major, minor uint32
	ino          uint64
}

// MaxLockFiles bounds the lock files a probe lists (scripts/claims.sh's
// $cmax): a host keeps one per GPU and per port ever claimed there (2222-2400
// by default). A claims dir holding more claim-shaped names is someone's
// flood: the host's claims are unknown, and it fails closed.
const MaxLockFiles = 16384

// lockFile is one lock file as find saw it.
type lockFile struct {
	name   string // the claim name: gpu-UUID, port-N
	path   string
	owner  string
	kind   byte // find's %y: f regular, l symlink, p FIFO, d directory…
	noRead bool // tfhive may not open it, or it is a symlink
}

// holder is a process holding a flock, as ps saw it.
type holder struct {
	pid, uid int
	user     string
	age      time.Duration
	args     string
}

// claimsSection is the probe's claims output, cut in its parts.
type claimsSection struct {
	// machineID, processTable: see inventory.HostInventory.
	machineID, processTable, dir string
	files                        []byte
	// overflow: the claims dir lists more than MaxLockFiles lock files.
	overflow bool
	locks    []byte
	holders  []byte
	// held is holders parsed, when the caller did it once for both
	// parseClaims and parseTickets (nil: each parses holders itself).
	held map[int]holder
}

// holderMap is s.held, or holders parsed.
func (s claimsSection) holderMap() map[int]holder {
	if s.held != nil {
		return s.held
	}
	return parseHolders(s.holders)
}

// parseClaims turns the claims sections into the claims held now and the
// lock files that block a claim. gpuIndex maps a GPU UUID to its index
// (nil in a claims-only probe: the holders' labels give the index then).
// now dates the holders.
func parseClaims(s claimsSection, gpuIndex map[string]int, now time.Time) []inventory.Claim {
	files := map[fileID][]*lockFile{} // an inode may have many names
	var all []*lockFile
	byPath := map[string]*lockFile{}
	sc := bufio.NewScanner(bytes.NewReader(s.files))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "F "):
			// "F DEV INODE OWNER TYPE NAME", the name in the claims dir.
			f := strings.SplitN(line[2:], " ", 5)
			if len(f) != 5 || len(f[3]) != 1 {
				continue
			}
			dev, err1 := strconv.ParseUint(f[0], 10, 64)
			ino, err2 := strconv.ParseUint(f[1], 10, 64)
			name, ok := claimFileName(f[4])
			if err1 != nil || err2 != nil || !ok {
				continue
			}
			lf := &lockFile{name: name, path: lockPath(s.dir, f[4]), owner: f[2], kind: f[3][0]}
			id := fileID{unix.Major(dev), unix.Minor(dev), ino}
			files[id] = append(files[id], lf)
			all = append(all, lf)
			byPath[lf.path] = lf
		case strings.HasPrefix(line, "U "):
			if lf := byPath[lockPath(s.dir, line[2:])]; lf != nil {
				lf.noRead = true
			}
		}
	}
	holders := s.holderMap()

	held := map[string]bool{} // claim names some holder holds
	// locked: the lock a labelled claim's holder took on the file of that
	// claim's name, by add's key: the file and the holder of that lock.
	type lock struct {
		path string
		pid  int
	}
	locked := map[string]lock{}
	seen := map[string]bool{} // one claim per holder label and name
	var claims []inventory.Claim
	add := func(c inventory.Claim) {
		// One claim per thing held and holder label (a task's label is
		// in each of its holders' command lines).
		key := fmt.Sprint(claim.Name(c.Kind, c.ID, c.UUID), c.User, c.RunID, c.Task)
		if l, ok := locked[key]; ok && c.File == "" {
			c.File, c.PID = l.path, l.pid
		}
		if !seen[key] {
			seen[key] = true
			claims = append(claims, c)
		}
	}
	type lockEntry struct {
		pid int
		lfs []*lockFile
		h   holder
		vis bool
	}
	var entries []lockEntry
	sc = bufio.NewScanner(bytes.NewReader(s.locks))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		id, ok := parseLockID(f[0])
		pid, err := strconv.Atoi(f[1])
		if !ok || err != nil {
			continue
		}
		h, visible := holders[pid]
		entries = append(entries, lockEntry{pid, files[id], h, visible})
	}
	since := func(h holder) time.Time { return now.Add(-h.age).Truncate(time.Second) }
	// A tfhive holder's claims are what its label says, never a file's
	// name: a lock file's owner can unlink it under its holder, or link
	// the locked inode under another name. So first each lock on one of
	// our files whose holder's label does not name that file's claim (a
	// holder with no label, another user's flock), as held by that user,
	// label unknown; then each tfhive holder's label, whatever file it
	// locked (one deleted under it included).
	for _, e := range entries {
		for _, lf := range e.lfs {
			c, ok := claimFromName(lf.name, gpuIndex)
			if !ok {
				continue
			}
			if e.vis {
				if run, task, ok := labelNames(e.h.args, s.dir, lf.name); ok {
					// The label's claim, with the file it locked.
					locked[fmt.Sprint(lf.name, e.h.user, run, task)] = lock{lf.path, e.pid}
					continue
				}
			}
			c.File = lf.path
			if e.vis {
				c.User, c.UID, c.PID, c.Since = e.h.user, e.h.uid, e.pid, since(e.h)
			}
			held[lf.name] = true
			add(c)
		}
	}
	for _, e := range entries {
		if !e.vis {
			continue
		}
		// Another claims dir's holder (another fake host on one kernel, a
		// container) is none of this host's business.
		dir, run, task, list, ok := claim.ParseHolder(e.h.args)
		if !ok || dir != s.dir {
			continue
		}
		for _, c := range list {
			if idx, ok := gpuIndex[c.UUID]; ok && c.Kind == "gpu" {
				c.ID = idx
			}
			c.RunID, c.Task, c.User, c.UID, c.PID, c.Since = run, task, e.h.user, e.h.uid, e.pid, since(e.h)
			if pr := claim.Priority(e.h.args); pr != "normal" {
				c.Priority = pr
			}
			c.Requeued = claim.Requeued(e.h.args)
			held[claim.Name(c.Kind, c.ID, c.UUID)] = true
			add(c)
		}
	}
	for _, lf := range all {
		why := blockReason(lf)
		if why == "" || held[lf.name] {
			continue
		}
		c, ok := claimFromName(lf.name, gpuIndex)
		if !ok {
			continue
		}
		c.File, c.Blocked, c.User = lf.path, why, lf.owner
		add(c)
	}
	slices.SortFunc(claims, func(a, b inventory.Claim) int {
		return cmp.Or(strings.Compare(a.Kind, b.Kind), cmp.Compare(a.ID, b.ID), strings.Compare(a.RunID, b.RunID))
	})
	return claims
}

// labelNames: args is a tfhive holder's command line for claims dir dir
// whose label claims name (gpu-UUID, gpu-INDEX, port-N); run and task
// are the label's.
func labelNames(args, dir, name string) (run, task string, ok bool) {
	d, run, task, list, ok := claim.ParseHolder(args)
	if !ok || d != dir {
		return "", "", false
	}
	for _, c := range list {
		if claim.Name(c.Kind, c.ID, c.UUID) == name {
			return run, task, true
		}
	}
	return "", "", false
}

// blockReason says why a lock file cannot be used by tfhive, "" when it
// can.
func blockReason(lf *lockFile) string {
	switch {
	case lf.kind == 'l':
		return fmt.Sprintf("%s is a symbolic link owned by %s", lf.path, lf.owner)
	case lf.kind != 'f':
		return fmt.Sprintf("%s is not a regular file (owned by %s)", lf.path, lf.owner)
	case lf.noRead:
		return fmt.Sprintf("%s is owned by %s and not readable", lf.path, lf.owner)
	}
	return ""
}

// parseLockID reads /proc/locks' "MAJ:MIN:INODE" (hex, hex, decimal).
func parseLockID(s string) (fileID, bool) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return fileID{}, false
	}
	maj, err1 := strconv.ParseUint(parts[0], 16, 32)
	min, err2 := strconv.ParseUint(parts[1], 16, 32)
	ino, err3 := strconv.ParseUint(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return fileID{}, false
	}
	return fileID{uint32(maj), uint32(min), ino}, true
}

// parseHolders reads `ps -o pid= -o uid= -o user:32= -o etimes= -o args=`,
// then claims.sh's "T UPTIME" and "S PID TICKS" lines: a holder whose
// start the host gave, in clock ticks since boot, gets its age to the
// tick (ps's etimes is whole seconds, and two waiters' tickets taken in
// one second would tie).
func parseHolders(out []byte) map[int]holder {
	hs := map[int]holder{}
	uptime := -1.0
	starts := map[int]int64{}
	// Lines of the output in place: a Scanner's buffer per call was a
	// third of what a probe allocated.
	for line := range bytes.Lines(out) {
		f := strings.Fields(string(line))
		switch {
		case len(f) == 2 && f[0] == "T":
			if u, err := strconv.ParseFloat(f[1], 64); err == nil && u >= 0 {
				uptime = u
			}
			continue
		case len(f) == 3 && f[0] == "S":
			pid, err1 := strconv.Atoi(f[1])
			ticks, err2 := strconv.ParseInt(f[2], 10, 64)
			if err1 == nil && err2 == nil && ticks >= 0 {
				starts[pid] = ticks
			}
			continue
		}
		if len(f) < 5 {
			continue
		}
		pid, err1 := strconv.Atoi(f[0])
		uid, err2 := strconv.Atoi(f[1])
		age, err3 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		hs[pid] = holder{pid: pid, uid: uid, user: f[2], age: time.Duration(age) * time.Second, args: strings.Join(f[4:], " ")}
	}
	for pid, ticks := range starts {
		h, ok := hs[pid]
		if !ok || uptime < 0 {
			continue
		}
		// USER_HZ: 100 on every Linux tfhive runs on (the kernel's ABI for
		// /proc, whatever its own HZ). An age that disagrees with ps by
		// more than a second is not this process's: ps's stands.
		age := time.Duration(uptime*float64(time.Second)) - time.Duration(ticks)*(time.Second/userHZ)
		if d := age - h.age; age >= 0 && d > -time.Second && d < 2*time.Second {
			h.age = age
			hs[pid] = h
		}
	}
	return hs
}

// userHZ is the clock ticks per second of /proc/PID/stat's times.
const userHZ = 100

// lockPath is the path of the lock file name in the claims dir dir.
func lockPath(dir, name string) string {
	return strings.TrimSuffix(dir, "/") + "/" + name
}

// claimFileName is the claim name of a lock file's path, if it is one.
func claimFileName(path string) (string, bool) {
	base := path[strings.LastIndex(path, "/")+1:]
	if !strings.HasPrefix(base, claim.FilePrefix) || !strings.HasSuffix(base, claim.FileSuffix) {
		return "", false
	}
	return strings.TrimSuffix(strings.TrimPrefix(base, claim.FilePrefix), claim.FileSuffix), true
}

// claimFromName turns gpu-UUID, gpu-N or port-N into a claim; a GPU UUID
// this host's inventory does not list is not one of its GPUs.
func claimFromName(name string, gpuIndex map[string]int) (inventory.Claim, bool) {
	kind, id, ok := strings.Cut(name, "-")
	if !ok {
		return inventory.Claim{}, false
	}
	switch kind {
	case "port":
		n, err := strconv.Atoi(id)
		return inventory.Claim{Kind: "port", ID: n}, err == nil && n > 0
	case "gpu":
		if n, err := strconv.Atoi(id); err == nil {
			return inventory.Claim{Kind: "gpu", ID: n}, true
		}
		if idx, ok := gpuIndex[id]; ok {
			return inventory.Claim{Kind: "gpu", ID: idx, UUID: id}, true
		}
		if gpuIndex == nil && claim.ValidUUID(id) {
			return inventory.Claim{Kind: "gpu", ID: -1, UUID: id}, true
		}
	}
	return inventory.Claim{}, false
}
