package probe

import (
	"bufio"
	"bytes"
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ClaimsDirDefault is where claims live on a host unless TFHIVE_CLAIMS_DIR
// is set there: a sticky, world-writable directory shared by every user,
// like /tmp itself. The files are only lock targets: a claim is the flock
// a task's supervisor holds on one, so it goes away with that process —
// kill -9 and reboot included — and a file nobody locks means nothing.
const ClaimsDirDefault = "/tmp/tfhive-claims"

// Claim is a GPU or a port held by a running task of some tfhive run.
type Claim struct {
	Kind  string    `json:"kind"` // "gpu" or "port"
	ID    int       `json:"id"`   // the GPU index or the port
	RunID string    `json:"run_id"`
	Task  string    `json:"task"`
	User  string    `json:"user"`
	Since time.Time `json:"since"`
	// PGID is the task's process group on the host (0 while it starts).
	PGID int `json:"pgid,omitempty"`
}

// claimsScript lists the lock files with their device and inode and
// content, then /proc/locks, which tells which of them are locked without
// taking any lock (a probe that tried them would make a concurrent run's
// claim fail for nothing).
const claimsScript = `d=${TFHIVE_CLAIMS_DIR:-` + ClaimsDirDefault + `};
echo ` + markClaims + `;
set -- "$d"/*.lock;
if [ -e "$1" ]; then
  stat -c 'F %d %i %n' "$@" 2>/dev/null;
  awk '{ print "C " FILENAME ":" $0 }' "$@" 2>/dev/null;
  echo ` + markLocks + `;
  cat /proc/locks 2>/dev/null;
else
  echo ` + markLocks + `;
fi;
`

const (
	markClaims = "@@tfhive-claims"
	markLocks  = "@@tfhive-locks"
)

type fileID struct {
	major, minor uint32
	ino          uint64
}

// parseClaims turns the claims section and /proc/locks into the claims
// currently held.
func parseClaims(files, procLocks []byte) []Claim {
	locked := map[fileID]bool{}
	sc := bufio.NewScanner(bytes.NewReader(procLocks))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// "1: FLOCK ADVISORY WRITE 1234 fe:00:9978529 0 EOF"; a line with
		// "->" is a waiter, not a holder.
		if len(f) < 6 || f[1] == "->" {
			continue
		}
		parts := strings.Split(f[5], ":")
		if len(parts) != 3 {
			continue
		}
		maj, err1 := strconv.ParseUint(parts[0], 16, 32)
		min, err2 := strconv.ParseUint(parts[1], 16, 32)
		ino, err3 := strconv.ParseUint(parts[2], 10, 64)
		if err1 == nil && err2 == nil && err3 == nil {
			locked[fileID{uint32(maj), uint32(min), ino}] = true
		}
	}
	ids := map[string]fileID{}
	content := map[string]string{}
	sc = bufio.NewScanner(bytes.NewReader(files))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "F "):
			f := strings.SplitN(line[2:], " ", 3)
			if len(f) != 3 {
				continue
			}
			dev, err1 := strconv.ParseUint(f[0], 10, 64)
			ino, err2 := strconv.ParseUint(f[1], 10, 64)
			if err1 == nil && err2 == nil {
				ids[baseName(f[2])] = fileID{unix.Major(dev), unix.Minor(dev), ino}
			}
		case strings.HasPrefix(line, "C "):
			name, text, ok := strings.Cut(line[2:], ".lock:")
			if ok {
				content[baseName(name+".lock")] = text
			}
		}
	}
	var claims []Claim
	for name, id := range ids {
		if !locked[id] {
			continue
		}
		c, ok := parseClaimName(name)
		if !ok {
			continue
		}
		for _, kv := range strings.Fields(content[name]) {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "run":
				c.RunID = v
			case "task":
				c.Task = v
			case "user":
				c.User = v
			case "since":
				if s, err := strconv.ParseInt(v, 10, 64); err == nil {
					c.Since = time.Unix(s, 0).UTC()
				}
			case "pgid":
				c.PGID, _ = strconv.Atoi(v)
			}
		}
		claims = append(claims, c)
	}
	slices.SortFunc(claims, func(a, b Claim) int {
		return cmp.Or(strings.Compare(a.Kind, b.Kind), cmp.Compare(a.ID, b.ID))
	})
	return claims
}

func parseClaimName(name string) (Claim, bool) {
	base := strings.TrimSuffix(name, ".lock")
	kind, id, ok := strings.Cut(base, "-")
	n, err := strconv.Atoi(id)
	if !ok || err != nil || (kind != "gpu" && kind != "port") {
		return Claim{}, false
	}
	return Claim{Kind: kind, ID: n}, true
}

func baseName(p string) string {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[i+1:]
	}
	return p
}
