// Package claim is the one home of the claim format that a task's holders
// write on a host and the probe reads back: the lock files' names and the
// label a holder carries in its own command line. The shell that writes
// them is the supervisor's (launcher); the parser of /proc/locks is the
// probe's. It imports only the standard library and inventory.
package claim

import (
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/probe/inventory"
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
	DirDefault = "/tmp"
	FilePrefix = "tfhive-claim."
	FileSuffix = ".lock"
	// HolderMarker is the argument that follows the holder's script in its
	// command line, before the claims dir, the run id, the task and the
	// claim list.
	HolderMarker = "tfhive-sup"
)

// KindTask is the claim of a task that holds neither a GPU nor a port (a
// torch rank on CPUs other than rank 0, which holds MASTER_PORT): a
// shared lock on one file, task-0, that claims nothing and that any
// number of tasks hold at once. It gives the task a holder, and so a
// label, as every other task has: ps, top and kill find it on its host.
const KindTask = "task"

// Name is the name of a lock file's claim: gpu-UUID (gpu-INDEX when
// the driver gives no UUID) or port-N.
func Name(kind string, id int, uuid string) string {
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

// ParseHolder reads a tfhive holder's command line: `flock … bash --norc
// -c SCRIPT tfhive-sup DIR RUN TASK CLAIMS [PRIORITY]`. The label is the
// last five words, or six for a run of --priority low or high (Priority);
// anything else is not a tfhive holder.
func ParseHolder(args string) (dir, run, task string, claims []inventory.Claim, ok bool) {
	f := strings.Fields(args)
	if len(f) >= 7 && f[len(f)-6] == HolderMarker && isPriority(f[len(f)-1]) {
		f = f[:len(f)-1]
	}
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
		case len(parts) == 3 && parts[0] == "gpu" && err == nil && ValidUUID(parts[2]):
			claims = append(claims, inventory.Claim{Kind: "gpu", ID: n, UUID: parts[2]})
		case len(parts) == 2 && parts[0] == "port" && err == nil:
			claims = append(claims, inventory.Claim{Kind: "port", ID: n})
		case s == KindTask+":0":
			claims = append(claims, inventory.Claim{Kind: KindTask})
		default:
			return "", "", "", nil, false
		}
	}
	return dir, run, task, claims, true
}

// RequeuedWord starts the word just before a requeued run's holder
// label (and a waiting run's ticket label): "#tfhive-requeued=N", a
// comment ending the holder's script, N how often the run went back to
// the queue.
const RequeuedWord = "#tfhive-requeued="

// Requeued is how often the holder's run was requeued, by the word
// before its label (RequeuedWord); 0 for none, or a word that is not a
// small count.
func Requeued(args string) int {
	f := strings.Fields(args)
	n := len(f)
	if n >= 7 && f[n-6] == HolderMarker && isPriority(f[n-1]) {
		n--
	}
	if n < 7 || f[n-5] != HolderMarker {
		return 0
	}
	return RequeuedCount(f[n-6])
}

// RequeuedCount reads a RequeuedWord's count: 0 unless it is one.
func RequeuedCount(w string) int {
	v, ok := strings.CutPrefix(w, RequeuedWord)
	if !ok || v == "" || len(v) > 4 || strings.Trim(v, "0123456789") != "" {
		return 0
	}
	n, _ := strconv.Atoi(v)
	return n
}

// Priority is the run's --priority as its holder's label says it: "low"
// or "high" when the label ends with it, else "normal". The label is the
// one place a run's priority is known on a host once it holds its GPUs
// (a high run's waiting for them preempts low runs by it).
func Priority(args string) string {
	f := strings.Fields(args)
	if len(f) >= 7 && f[len(f)-6] == HolderMarker && isPriority(f[len(f)-1]) {
		return f[len(f)-1]
	}
	return "normal"
}

func isPriority(s string) bool { return s == "low" || s == "high" }

// RunIDRule says what ValidRunID accepts, for the hint of every command
// that refuses a run id.
const RunIDRule = "a run id is letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64 characters"

// ValidRunID is the one rule for run ids, wherever one comes in (run
// --name, kill, wait, attach, logs) or is read from a host: run ids
// appear in command lines, file names and labels, so they are kept to
// letters, digits and ._- (and start with one of the first two: never
// "-x", "." or "..").
func ValidRunID(s string) bool {
	if s == "" || len(s) > maxRunID || !isAlnum(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// maxRunID is the longest run id: it is part of a holder's label and of
// host file names (~/.tfhive/runs-KEY/RUN/...).
const maxRunID = 64

func validTask(s string) bool {
	role, idx, ok := strings.Cut(s, ":")
	_, err := strconv.Atoi(idx)
	return ok && err == nil && role != "" && ValidRunID(role)
}

// ValidUUID accepts what nvidia-smi prints (GPU-xxxxxxxx-…, MIG-…).
func ValidUUID(s string) bool {
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
