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
)

// A claim is a flock on a lock file held by a live process, the task's
// holder. Everything tfhive says about a claim comes from the kernel, never
// from a file another user could have written:
//   - that it is held: /proc/locks;
//   - by whom: the holding process's real uid (ps);
//   - for which run and task: the holder's own command line, which only
//     its owner could have chosen (so a label names the run of the user the
//     kernel says holds it, never anyone else's).
//
// The lock files live in a directory only root (or the user themself) can
// own: /tmp by default, as /tmp/tfhive-claim.NAME.lock, or
// $TFHIVE_CLAIMS_DIR on the host when root or the user owns it. They are
// created exclusively, opened read-only, and never written.
const (
	ClaimsDirDefault = "/tmp"
	ClaimFilePrefix  = "tfhive-claim."
	ClaimFileSuffix  = ".lock"
	// HolderMarker is the argument that follows the holder's script in its
	// command line, before the claims dir, the run id, the task and the
	// claim list.
	HolderMarker = "tfhive-sup"
)

// Claim is a GPU or a port held by a running task, or a lock file that
// blocks it.
type Claim struct {
	Kind string `json:"kind"` // "gpu" or "port"
	ID   int    `json:"id"`   // the GPU index or the port
	// UUID is the GPU's, which names its lock file.
	UUID string `json:"uuid,omitempty"`
	// RunID and Task are the holder's label; empty when its command line
	// is not a tfhive task's or cannot be read (label unknown).
	RunID string `json:"run_id"`
	Task  string `json:"task"`
	// User holds the claim, by the holding process's uid; "" when the
	// host hides other users' processes.
	User string `json:"user"`
	// PID is the holding process.
	PID   int       `json:"pid,omitempty"`
	Since time.Time `json:"since"`
	// Blocked, when set, says why nobody can claim it: a lock file that is
	// not a regular file or that tfhive may not read, and who owns it.
	Blocked string `json:"blocked,omitempty"`
	// File is the lock file, for messages.
	File string `json:"file,omitempty"`
}

// ClaimName is the name of a lock file's claim: gpu-UUID (gpu-INDEX when
// the driver gives no UUID) or port-N.
func ClaimName(kind string, id int, uuid string) string {
	if kind == "gpu" && uuid != "" {
		return "gpu-" + uuid
	}
	return kind + "-" + strconv.Itoa(id)
}

// HolderClaim is how a claim is written in the holder's command line:
// gpu:INDEX:UUID or port:N.
func HolderClaim(kind string, id int, uuid string) string {
	if kind == "gpu" {
		return "gpu:" + strconv.Itoa(id) + ":" + uuid
	}
	return kind + ":" + strconv.Itoa(id)
}

// claimsScript lists the lock files (device, inode, owner, mode, name)
// and the ones tfhive could not open, then every flock held on the host
// with its holder's pid, then those holders as ps sees them: real uid and
// command line. Holders are read from /proc/locks, never by trying a lock
// (a probe that tried them would make a concurrent run's claim fail for
// nothing). The machine id goes first: two names of one machine share it.
const claimsScript = `d=${TFHIVE_CLAIMS_DIR:-` + ClaimsDirDefault + `};
m=-; if [ -r /etc/machine-id ]; then read -r m </etc/machine-id; fi;
echo ` + markClaims + ` "${m:--}" "$d";
set -- "$d"/` + ClaimFilePrefix + `*` + ClaimFileSuffix + `;
if [ -e "$1" ] || [ -L "$1" ]; then
  stat -c 'F %d %i %U %f %n' "$@" 2>/dev/null;
  for f; do if [ -L "$f" ] || [ ! -r "$f" ]; then echo "U $f"; fi; done;
fi;
echo ` + markLocks + `;
l=$(awk '$2 == "FLOCK" && $5 > 0 { print $6, $5 }' /proc/locks 2>/dev/null);
printf '%s\n' "$l";
echo ` + markHolders + `;
set -- $l; p=; while [ $# -ge 2 ]; do p=$p${p:+,}$2; shift 2; done;
if [ -n "$p" ]; then ps -ww -o pid= -o uid= -o user:32= -o etimes= -o args= -p "$p" 2>/dev/null; fi;
`

const (
	markClaims  = "@@tfhive-claims"
	markLocks   = "@@tfhive-locks"
	markHolders = "@@tfhive-holders"
)

type fileID struct {
	major, minor uint32
	ino          uint64
}

// lockFile is one lock file as stat saw it.
type lockFile struct {
	name   string // the claim name: gpu-UUID, port-N
	path   string
	owner  string
	mode   uint32
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
	machineID, dir string
	files          []byte
	locks          []byte
	holders        []byte
}

// parseClaims turns the claims sections into the claims held now and the
// lock files that block a claim. gpuIndex maps a GPU UUID to its index
// (nil in a claims-only probe: the holders' labels give the index then).
// now dates the holders.
func parseClaims(s claimsSection, gpuIndex map[string]int, now time.Time) []Claim {
	files := map[fileID]*lockFile{}
	var all []*lockFile
	byPath := map[string]*lockFile{}
	sc := bufio.NewScanner(bytes.NewReader(s.files))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "F "):
			f := strings.SplitN(line[2:], " ", 5)
			if len(f) != 5 {
				continue
			}
			dev, err1 := strconv.ParseUint(f[0], 10, 64)
			ino, err2 := strconv.ParseUint(f[1], 10, 64)
			mode, err3 := strconv.ParseUint(f[3], 16, 32)
			name, ok := claimFileName(f[4])
			if err1 != nil || err2 != nil || err3 != nil || !ok {
				continue
			}
			lf := &lockFile{name: name, path: f[4], owner: f[2], mode: uint32(mode)}
			files[fileID{unix.Major(dev), unix.Minor(dev), ino}] = lf
			all = append(all, lf)
			byPath[lf.path] = lf
		case strings.HasPrefix(line, "U "):
			if lf := byPath[line[2:]]; lf != nil {
				lf.noRead = true
			}
		}
	}
	holders := parseHolders(s.holders)

	held := map[string]bool{} // claim names some holder holds
	seen := map[string]bool{} // one claim per holder label and name
	var claims []Claim
	add := func(c Claim) {
		// One claim per thing held and holder label (a task's label is
		// in each of its holders' command lines).
		key := fmt.Sprint(ClaimName(c.Kind, c.ID, c.UUID), c.User, c.RunID, c.Task)
		if !seen[key] {
			seen[key] = true
			claims = append(claims, c)
		}
	}
	type lockEntry struct {
		pid int
		lf  *lockFile
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
	// First each lock on one of our files, as the claim of that file; then
	// the rest of each tfhive holder's label, so that a claim whose lock
	// file was deleted under its holder still counts.
	for _, e := range entries {
		if e.lf == nil {
			continue
		}
		c, ok := claimFromName(e.lf.name, gpuIndex)
		if !ok {
			continue
		}
		c.File = e.lf.path
		if e.vis {
			c.User, c.PID, c.Since = e.h.user, e.pid, since(e.h)
			if dir, run, task, list, ok := holderLabel(e.h.args); ok && dir == s.dir {
				c.RunID, c.Task = run, task
				for _, lc := range list {
					// A claims-only probe knows a GPU by its UUID alone.
					if c.ID < 0 && lc.Kind == "gpu" && lc.UUID == c.UUID {
						c.ID = lc.ID
					}
				}
			}
		}
		held[e.lf.name] = true
		add(c)
	}
	for _, e := range entries {
		if !e.vis {
			continue
		}
		// Another claims dir's holder (another fake host on one kernel, a
		// container) is none of this host's business.
		dir, run, task, list, ok := holderLabel(e.h.args)
		if !ok || dir != s.dir {
			continue
		}
		for _, c := range list {
			if idx, ok := gpuIndex[c.UUID]; ok && c.Kind == "gpu" {
				c.ID = idx
			}
			c.RunID, c.Task, c.User, c.PID, c.Since = run, task, e.h.user, e.pid, since(e.h)
			held[ClaimName(c.Kind, c.ID, c.UUID)] = true
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
	slices.SortFunc(claims, func(a, b Claim) int {
		return cmp.Or(strings.Compare(a.Kind, b.Kind), cmp.Compare(a.ID, b.ID), strings.Compare(a.RunID, b.RunID))
	})
	return claims
}

// blockReason says why a lock file cannot be used by tfhive, "" when it
// can.
func blockReason(lf *lockFile) string {
	switch {
	case lf.mode&unix.S_IFMT == unix.S_IFLNK:
		return fmt.Sprintf("%s is a symbolic link owned by %s", lf.path, lf.owner)
	case lf.mode&unix.S_IFMT != unix.S_IFREG:
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

// parseHolders reads `ps -o pid= -o uid= -o user:32= -o etimes= -o args=`.
func parseHolders(out []byte) map[int]holder {
	hs := map[int]holder{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
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
	return hs
}

// holderLabel reads a tfhive holder's command line: `flock … bash --norc
// -c SCRIPT tfhive-sup DIR RUN TASK CLAIMS`. The label is the last five
// words; anything else is not a tfhive holder.
func holderLabel(args string) (dir, run, task string, claims []Claim, ok bool) {
	f := strings.Fields(args)
	if len(f) < 6 || f[len(f)-5] != HolderMarker || !strings.HasSuffix(f[0], "flock") {
		return "", "", "", nil, false
	}
	dir, run, task = f[len(f)-4], f[len(f)-3], f[len(f)-2]
	if !ValidRunID(run) || !validTask(task) {
		return "", "", "", nil, false
	}
	for _, s := range strings.Split(f[len(f)-1], ",") {
		parts := strings.Split(s, ":")
		n, err := strconv.Atoi(parts[min(1, len(parts)-1)])
		switch {
		case len(parts) == 3 && parts[0] == "gpu" && err == nil && validUUID(parts[2]):
			claims = append(claims, Claim{Kind: "gpu", ID: n, UUID: parts[2]})
		case len(parts) == 2 && parts[0] == "port" && err == nil:
			claims = append(claims, Claim{Kind: "port", ID: n})
		default:
			return "", "", "", nil, false
		}
	}
	return dir, run, task, claims, true
}

// claimFileName is the claim name of a lock file's path, if it is one.
func claimFileName(path string) (string, bool) {
	base := path[strings.LastIndex(path, "/")+1:]
	if !strings.HasPrefix(base, ClaimFilePrefix) || !strings.HasSuffix(base, ClaimFileSuffix) {
		return "", false
	}
	return strings.TrimSuffix(strings.TrimPrefix(base, ClaimFilePrefix), ClaimFileSuffix), true
}

// claimFromName turns gpu-UUID, gpu-N or port-N into a claim; a GPU UUID
// this host's inventory does not list is not one of its GPUs.
func claimFromName(name string, gpuIndex map[string]int) (Claim, bool) {
	kind, id, ok := strings.Cut(name, "-")
	if !ok {
		return Claim{}, false
	}
	switch kind {
	case "port":
		n, err := strconv.Atoi(id)
		return Claim{Kind: "port", ID: n}, err == nil && n > 0
	case "gpu":
		if n, err := strconv.Atoi(id); err == nil {
			return Claim{Kind: "gpu", ID: n}, true
		}
		if idx, ok := gpuIndex[id]; ok {
			return Claim{Kind: "gpu", ID: idx, UUID: id}, true
		}
		if gpuIndex == nil && validUUID(id) {
			return Claim{Kind: "gpu", ID: -1, UUID: id}, true
		}
	}
	return Claim{}, false
}

// ValidRunID: run ids appear in command lines, file names and labels, so
// they are kept to letters, digits and ._- (and start with one of the
// first two).
func ValidRunID(s string) bool {
	if s == "" || len(s) > 64 || !isAlnum(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func validTask(s string) bool {
	role, idx, ok := strings.Cut(s, ":")
	_, err := strconv.Atoi(idx)
	return ok && err == nil && role != "" && ValidRunID(role)
}

// validUUID accepts what nvidia-smi prints (GPU-xxxxxxxx-…, MIG-…).
func validUUID(s string) bool {
	if s == "" || len(s) > 80 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
