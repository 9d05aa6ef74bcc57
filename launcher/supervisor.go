package launcher

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/alessio/shellescape"

	"github.com/tfhive/tfhive/probe/claim"
	"github.com/tfhive/tfhive/probe/inventory"
)

// task is what the supervisor needs to run one task on its host.
type task struct {
	Env     map[string]string
	Workdir string // remote path; a leading ~ is the remote home
	Setup   string // shell snippet run before the command
	Argv    []string
	// HeartbeatTimeout: with no heartbeat from tfhive for this long, the
	// link is taken as dead and the task is stopped.
	HeartbeatTimeout time.Duration
	// Claims are the GPUs and ports the task holds for its whole life.
	Claims []inventory.Claim
	// RunID and ID label the claims' holders (the task's id: worker:0).
	RunID, ID string
}

// Control lines tfhive writes to a supervisor's stdin.
const (
	ctlGo        = "g\n" // claims are all held: start the task
	ctlAbort     = "a\n" // another task could not claim: give up
	ctlHeartbeat = "h\n"
	ctlTerm      = "t\n"
	ctlKill      = "k\n"
)

// The supervisor's first stdout line, before any task output: its claims
// are held ("ok"), or a lock file cannot be used ("blocked WHY"). A claim
// someone else holds ends the supervisor with exitClaimBusy before it
// says anything.
const (
	claimMarker  = "@@tfhive-claim "
	claimOK      = claimMarker + "ok"
	claimBlocked = claimMarker + "blocked "
	// exitClaimBusy is the supervisor's status when a claim was taken or
	// tfhive aborted the start.
	exitClaimBusy = 75
)

// SupervisorCommand is the remote command line of every task: it reads
// a line with the script's length, then exactly that many bytes (dd with
// iflag=fullblock reads one block of that size and never ahead, unlike a
// shell reading a script), so that what follows on stdin — the second
// stage, heartbeats and stop requests — reaches the supervisor. A dd
// without fullblock (an old busybox) falls back to bs=1: exact too, but a
// read and a write per byte, milliseconds of CPU per task. It is the same
// for every task, so that a probe session can start it ahead of the plan
// (probe.Options.Then) and it holds no secret: `ps` shows only this. EOF
// before the length line ends it quietly: a spare session that was not
// needed.
var SupervisorCommand = supervisorCommand()

// readStage reads a length line and evaluates that many bytes of stdin.
const readStage = `IFS= read -r tfhive_n || exit 75; eval "$(dd bs="$tfhive_n" count=1 iflag=fullblock 2>/dev/null || dd bs=1 count="$tfhive_n" 2>/dev/null)"`

func supervisorCommand() string {
	// --norc: bash started under sshd would otherwise source ~/.bashrc
	// again (the login shell already did, and the task's shell will), which
	// on hosts with conda or pyenv costs hundreds of milliseconds per task.
	// sh only to say that bash is missing.
	outer := `command -v bash >/dev/null 2>&1 && exec bash --norc -c ` + shellescape.Quote(readStage) + `; ` +
		`exec sh -c ` + shellescape.Quote(readStage)
	return "exec sh -c " + shellescape.Quote(outer)
}

// supervisorInput is all a supervisor is sent before its control lines:
// the claim stage and the task stage, each behind its length.
func supervisorInput(t task) string {
	claim, run := claimStage(t), runStage(t)
	return strconv.Itoa(len(claim)) + "\n" + claim + strconv.Itoa(len(run)) + "\n" + run
}

// firstClaimFD is the first descriptor a lock file is opened on; 3 is the
// supervisor's copy of stdin.
const firstClaimFD = 4

// claimStage takes the task's claims, then becomes the task's holders:
//
//	flock -n -o /proc/self/fd/4 flock -n -o /proc/self/fd/5 … bash -c STAGE tfhive-sup RUN TASK CLAIMS
//
// Each flock process holds one lock for as long as its command runs, so
// /proc/locks names a live process whose uid is the task's owner and
// whose command line carries the label; nothing is written into a file.
// A lock file is created exclusively (noclobber: O_EXCL never follows a
// symlink) and opened read-only, only once it is a regular file; flock
// then locks that very file through the descriptor. -o keeps the locks
// out of the task: killing the holders releases them.
func claimStage(t task) string {
	var b strings.Builder
	b.WriteString(claimCheck)
	if len(t.Claims) == 0 {
		fmt.Fprintf(&b, "exec bash --norc -c %s %s - %s %s -\n", shellescape.Quote(readStage), claim.HolderMarker,
			shellescape.Quote(t.RunID), shellescape.Quote(t.ID))
		return b.String()
	}
	b.WriteString(claimDir)
	var chain, labels []string
	for i, c := range t.Claims {
		fd := firstClaimFD + i
		file := claim.FilePrefix + claim.Name(c.Kind, c.ID, c.UUID) + claim.FileSuffix
		fmt.Fprintf(&b, "tfhive_open %d %s\n", fd, shellescape.Quote(file))
		chain = append(chain, fmt.Sprintf("flock -n -o -E %d /proc/self/fd/%d", exitClaimBusy, fd))
		labels = append(labels, claim.HolderClaim(c.Kind, c.ID, c.UUID))
	}
	fmt.Fprintf(&b, "umask \"$tfhive_umask\"\nexec %s bash --norc -c %s %s \"$tfhive_dir\" %s %s %s\n", strings.Join(chain, " "),
		shellescape.Quote(readStage), claim.HolderMarker, shellescape.Quote(t.RunID), shellescape.Quote(t.ID),
		shellescape.Quote(strings.Join(labels, ",")))
	return b.String()
}

// claimCheck: the task stage needs bash (read -t, process substitution,
// descriptors above 9) and the claims flock.
const claimCheck = `[ -n "${BASH_VERSION-}" ] || { echo 'tfhive: bash not found on this host' >&2; exit 127; }
tfhive_blocked() { printf '%s%s\n' '` + claimBlocked + `' "$1"; exit 76; }
`

// claimDir finds the claims directory and opens lock files in it. /tmp is
// root's and sticky on every Linux; a configured one must be owned by root
// or by the user, and be sticky if others may write to it, or another
// user could swap the files under us.
const claimDir = `command -v flock >/dev/null 2>&1 || { echo 'tfhive: flock not found on this host (util-linux)' >&2; exit 127; }
tfhive_dir=/tmp
if [ -n "${TFHIVE_CLAIMS_DIR-}" ]; then
	tfhive_dir=$TFHIVE_CLAIMS_DIR
	{ [ -d "$tfhive_dir" ] && [ ! -L "$tfhive_dir" ]; } || tfhive_blocked "claims dir $tfhive_dir (TFHIVE_CLAIMS_DIR) is not a directory"
	case $tfhive_dir in /*[[:space:]]* | [!/]*) tfhive_blocked "claims dir $tfhive_dir (TFHIVE_CLAIMS_DIR) must be an absolute path without spaces" ;; esac
	read -r tfhive_uid tfhive_mode tfhive_owner <<<"$(stat -c '%u %a %U' "$tfhive_dir")"
	[ "$tfhive_uid" = 0 ] || [ "$tfhive_uid" = "$EUID" ] || tfhive_blocked "claims dir $tfhive_dir (TFHIVE_CLAIMS_DIR) is owned by $tfhive_owner, not by root or you"
	if [ $((8#$tfhive_mode & 8#022)) != 0 ] && [ $((8#$tfhive_mode & 8#1000)) = 0 ]; then
		tfhive_blocked "claims dir $tfhive_dir (TFHIVE_CLAIMS_DIR) is writable by others and not sticky"
	fi
fi
tfhive_umask=$(umask)
umask 022
tfhive_open() {
	tfhive_f=$tfhive_dir/$2
	[ -e "$tfhive_f" ] || [ -L "$tfhive_f" ] || (set -C; : >"$tfhive_f") 2>/dev/null
	if [ -L "$tfhive_f" ] || [ ! -f "$tfhive_f" ]; then
		tfhive_blocked "$tfhive_f is not a regular file (owned by $(stat -c %U "$tfhive_f" 2>/dev/null))"
	fi
	eval "exec $1<\"\$tfhive_f\"" 2>/dev/null || tfhive_blocked "$tfhive_f is owned by $(stat -c %U "$tfhive_f" 2>/dev/null) and not readable"
}
`

// runStage is the task stage, run by the holders' innermost bash: it says
// its claims are held, waits for go, then supervises the task.
func runStage(t task) string {
	var b strings.Builder
	for i := range t.Claims {
		fmt.Fprintf(&b, "exec %d<&-\n", firstClaimFD+i)
	}
	b.WriteString("printf '%s\\n' " + shellescape.Quote(claimOK) + "\n" + waitForGo)
	timeout := int(t.HeartbeatTimeout / time.Second)
	if timeout < 2 {
		timeout = 2
	}
	fmt.Fprintf(&b, "tfhive_hb_timeout=%d\n", timeout)
	keys := make([]string, 0, len(t.Env))
	for k := range t.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "export %s=%s\n", k, shellescape.Quote(t.Env[k]))
	}
	fmt.Fprintf(&b, "tfhive_cmd=%s\n", shellescape.Quote(taskShell(t)))
	b.WriteString(supervisorBody)
	return b.String()
}

// waitForGo: nothing starts until every task of the run holds its claims.
const waitForGo = `IFS= read -r tfhive_go || exit 75
[ "$tfhive_go" = g ] || exit 75
`

// taskShell is what runs inside the task's new session: cd, setup, exec.
func taskShell(t task) string {
	var b strings.Builder
	if t.Workdir != "" {
		fmt.Fprintf(&b, "cd %s || { echo %s >&2; exit 126; }\n", remotePath(t.Workdir),
			shellescape.Quote("tfhive: cannot cd to "+t.Workdir))
	}
	if strings.TrimSpace(t.Setup) != "" {
		fmt.Fprintf(&b, "{\n%s\n} || { echo %s >&2; exit 126; }\n", t.Setup, shellescape.Quote("tfhive: setup failed: "+firstLineOf(t.Setup)))
	}
	b.WriteString("exec " + shellescape.QuoteCommand(t.Argv))
	return b.String()
}

// remotePath quotes a path for the remote shell, keeping a leading ~ as
// the remote user's home.
func remotePath(p string) string {
	switch {
	case p == "~":
		return `"$HOME"`
	case strings.HasPrefix(p, "~/"):
		return `"$HOME"/` + shellescape.Quote(p[2:])
	}
	return shellescape.Quote(p)
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// supervisorBody runs the task, in bash:
//   - the task runs in its own session and process group (setsid), stdin
//     empty, in its workdir after the setup snippet, with exactly the given
//     environment added — values travel on stdin, never on a command line;
//   - "t"/"k" on stdin send SIGTERM/SIGKILL to the task's group only (never
//     by pattern: other users' jobs are not ours to kill);
//   - EOF on stdin (tfhive died, its connection closed) or no line for
//     tfhive_hb_timeout seconds (the link went silent: read -t, no file,
//     no polling) stops the group: TERM, then KILL 5 s later;
//   - SIGTERM to the supervisor (tfhive kill) stops the task the same way,
//     a second one kills it;
//   - the supervisor killed outright (its holders then release the claims)
//     stops the task at once: a watcher reading a pipe only the supervisor
//     holds open sees EOF; a holder killed is seen at the next control
//     line (heartbeats come every keepalive interval);
//   - the supervisor exits with the task's status (128+N for signal N).
//
// A group kill falls back to the pid: right after & the child may not
// have called setsid yet. Variables are prefixed tfhive_ so as not to meet
// the user's.
const supervisorBody = `command -v setsid >/dev/null 2>&1 || { echo 'tfhive: setsid not found on this host (util-linux)' >&2; exit 127; }
tfhive_signal() {
	kill -"$1" -"$tfhive_pid" 2>/dev/null || kill -"$1" "$tfhive_pid" 2>/dev/null
}
tfhive_abandon() {
	tfhive_signal TERM
	tfhive_n=0
	while kill -0 -"$tfhive_pid" 2>/dev/null && [ "$tfhive_n" -lt 50 ]; do
		sleep 0.1
		tfhive_n=$((tfhive_n + 1))
	done
	tfhive_signal KILL
}
tfhive_stops=0
tfhive_stop() {
	tfhive_stops=$((tfhive_stops + 1))
	if [ "$tfhive_stops" = 1 ]; then tfhive_signal TERM; else tfhive_signal KILL; fi
}
# The claim holders are this shell's flock ancestors: one of them killed
# has released its claim, so the task must not go on.
tfhive_holders=
tfhive_p=$PPID
while [ -r "/proc/$tfhive_p/stat" ] && read -r tfhive_stat <"/proc/$tfhive_p/stat" && [ "${tfhive_stat#* (flock) }" != "$tfhive_stat" ]; do
	tfhive_holders="$tfhive_holders $tfhive_p"
	tfhive_stat=${tfhive_stat#* (flock) }
	tfhive_p=${tfhive_stat#* }
	tfhive_p=${tfhive_p%% *}
done
tfhive_held() {
	for tfhive_h in $tfhive_holders; do kill -0 "$tfhive_h" 2>/dev/null || return 1; done
}
exec 3<&0
setsid bash -c "$tfhive_cmd" tfhive-task </dev/null 3<&- &
tfhive_pid=$!
(
	while IFS= read -r -t "$tfhive_hb_timeout" tfhive_c && tfhive_held; do
		case $tfhive_c in
		t) tfhive_signal TERM ;;
		k) tfhive_signal KILL ;;
		esac
	done
	tfhive_abandon
) <&3 &
tfhive_reader=$!
exec 3<&-
exec 7> >(read -r _; tfhive_abandon; kill "$tfhive_reader" 2>/dev/null) 
tfhive_watch=$!
trap tfhive_stop TERM
tfhive_rc=
while [ -z "$tfhive_rc" ]; do
	wait "$tfhive_pid"
	tfhive_st=$?
	kill -0 "$tfhive_pid" 2>/dev/null || tfhive_rc=$tfhive_st
done
trap '' TERM
kill "$tfhive_watch" "$tfhive_reader" 2>/dev/null
exit "$tfhive_rc"
`
