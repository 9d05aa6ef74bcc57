package launcher

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/alessio/shellescape"
	"github.com/tfhive/tfhive/probe"
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
	// Claims are the lock files ("gpu-0", "port-2222") the supervisor
	// holds for the task's whole life; Meta is written into them.
	Claims []string
	Meta   string
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
// are held ("ok"), or one is held by someone else ("busy NAME HOLDER").
const (
	claimMarker = "@@tfhive-claim "
	claimOK     = claimMarker + "ok"
	claimBusy   = claimMarker + "busy "
	// exitClaimBusy is the supervisor's status when it gave up its claims.
	exitClaimBusy = 75
)

// SupervisorCommand is the remote command line of every task: it reads
// a line with the script's length, then exactly that many bytes (dd with
// iflag=fullblock reads one block of that size and never ahead, unlike a
// shell reading a script), so that what follows on stdin — heartbeats
// and stop requests — reaches the supervisor. A dd without fullblock
// (an old busybox) falls back to bs=1: exact too, but a read and a
// write per byte, milliseconds of CPU per task. It is the same for every
// task, so that a probe session can start it ahead of the plan
// (probe.Options.Then) and it holds no secret: `ps` shows only this. EOF
// before the length line ends it quietly: a spare session that was not
// needed.
var SupervisorCommand = supervisorCommand()

func supervisorCommand() string {
	// bash when the host has it: dash cannot redirect descriptors above 9,
	// and each claim holds one.
	inner := `eval "$(dd bs="$0" count=1 iflag=fullblock 2>/dev/null || dd bs=1 count="$0" 2>/dev/null)"`
	// --norc: bash started under sshd would otherwise source ~/.bashrc
	// again (the login shell already did, and the task's shell will), which
	// on hosts with conda or pyenv costs hundreds of milliseconds per task.
	outer := `IFS= read -r tfhive_n || exit 0; ` +
		`command -v bash >/dev/null 2>&1 && exec bash --norc -c ` + shellescape.Quote(inner) + ` "$tfhive_n"; ` +
		`exec sh -c ` + shellescape.Quote(inner) + ` "$tfhive_n"`
	return "exec sh -c " + shellescape.Quote(outer)
}

// supervisorInput is what a supervisor is sent first: the script's length
// on a line, then the script.
func supervisorInput(script string) string {
	return strconv.Itoa(len(script)) + "\n" + script
}

// firstClaimFD is the first descriptor a claim lock is held on; 3 is the
// supervisor's copy of stdin.
const firstClaimFD = 4

// supervisorScript wraps one task on its host:
//   - the task runs in its own session and process group (setsid), stdin
//     empty, in its workdir after the setup snippet, with exactly the given
//     environment added — values travel on stdin, never on a command line;
//   - "t"/"k" on stdin send SIGTERM/SIGKILL to the task's group only (never
//     by pattern: other users' jobs are not ours to kill);
//   - EOF on stdin (tfhive died, its connection closed) or no heartbeat for
//     HeartbeatTimeout (the link went silent) stops the group: TERM, then
//     KILL 5 s later;
//   - the supervisor exits with the task's status (128+N for signal N).
//
// Variables are prefixed tfhive_ so as not to meet the user's.
func supervisorScript(t task) string {
	var b strings.Builder
	timeout := int(t.HeartbeatTimeout / time.Second)
	if timeout < 2 {
		timeout = 2
	}
	check := timeout / 3
	if check < 1 {
		check = 1
	}
	fmt.Fprintf(&b, "tfhive_hb_timeout=%d\ntfhive_check=%d\n", timeout, check)
	keys := make([]string, 0, len(t.Env))
	for k := range t.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "export %s=%s\n", k, shellescape.Quote(t.Env[k]))
	}
	fmt.Fprintf(&b, "tfhive_cmd=%s\n", shellescape.Quote(taskShell(t)))
	b.WriteString(supervisorStart)
	closeFDs := claimScript(&b, t)
	b.WriteString(strings.ReplaceAll(supervisorBody, "@CLOSE@", closeFDs))
	return b.String()
}

// claimScript takes every claim with flock -n, each on its own descriptor
// held by the supervisor alone (the task and the helper subshells get them
// closed, so a kill -9 of the supervisor releases the claims), says "ok" or
// "busy" on stdout and waits for tfhive's go. It returns the redirections
// that close the claim descriptors.
func claimScript(b *strings.Builder, t task) string {
	okLine := "printf '%s\\n' " + shellescape.Quote(claimOK) + "\n"
	if len(t.Claims) == 0 {
		b.WriteString(okLine + waitForGo)
		return ""
	}
	last := firstClaimFD + len(t.Claims) - 1
	fmt.Fprintf(b, claimHead, last, 9-firstClaimFD+1, probe.ClaimsDirDefault, shellescape.Quote(t.Meta),
		shellescape.Quote(claimBusy), exitClaimBusy)
	var closing strings.Builder
	for i, c := range t.Claims {
		fd := firstClaimFD + i
		fmt.Fprintf(b, "exec %d<>\"$tfhive_dir/%s.lock\" && flock -n %d || tfhive_busy %s\n", fd, c, fd, c)
		fmt.Fprintf(&closing, " %d>&-", fd)
	}
	fmt.Fprintf(b, "umask \"$tfhive_umask\"\ntfhive_claims=%s\n", shellescape.Quote(strings.Join(t.Claims, " ")))
	b.WriteString(claimNote + okLine + waitForGo)
	return closing.String()
}

// claimHead prepares the claims directory (sticky and world-writable, the
// files 0666, so that every user's runs can lock and annotate them). The
// supervisor starts as few programs as it can: bash's EPOCHSECONDS
// instead of date, mkdir and chmod only for a directory not yet sticky.
const claimHead = `command -v flock >/dev/null 2>&1 || { echo 'tfhive: flock not found on this host (util-linux)' >&2; exit 127; }
if [ -z "${BASH_VERSION-}" ] && [ %d -gt 9 ]; then echo 'tfhive: this host has no bash; without it a task can hold at most %d claims' >&2; exit 127; fi
tfhive_dir=${TFHIVE_CLAIMS_DIR:-%s}
tfhive_umask=$(umask)
umask 0
[ -k "$tfhive_dir" ] || { mkdir -p "$tfhive_dir" 2>/dev/null && chmod 1777 "$tfhive_dir" 2>/dev/null; }
tfhive_meta=%s" user=$(id -un) since=${EPOCHSECONDS:-$(date +%%s)}"
tfhive_busy() {
	printf '%%s%%s %%s\n' %s "$1" "$(head -c 300 "$tfhive_dir/$1.lock" 2>/dev/null | tr '\n' ' ')"
	exit %d
}
`

// claimNote writes who holds the claims into the lock files, for status,
// ps and kill; the task's process group is added once it runs.
const claimNote = `tfhive_note() {
	for tfhive_f in $tfhive_claims; do printf '%s pgid=%s\n' "$tfhive_meta" "$1" >"$tfhive_dir/$tfhive_f.lock"; done
}
tfhive_note 0
`

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

// supervisorBody is POSIX sh plus setsid, mktemp, stat -c and date +%s
// (util-linux, coreutils or busybox: any Linux GPU host has them).
// A group kill falls back to the pid: right after `&` the child may not
// have called setsid yet.
const supervisorStart = `command -v setsid >/dev/null 2>&1 || { echo 'tfhive: setsid not found on this host (util-linux)' >&2; exit 127; }
`

// supervisorBody runs the task once the claims are held; @CLOSE@ closes
// the claim descriptors for everything but the supervisor itself.
const supervisorBody = `tfhive_sh=sh
command -v bash >/dev/null 2>&1 && tfhive_sh=bash
tfhive_hb=$(mktemp "${TMPDIR:-/tmp}/tfhive-hb.XXXXXX") || exit 127
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
tfhive_sup=$$
exec 3<&0
setsid "$tfhive_sh" -c "$tfhive_cmd" tfhive-task </dev/null@CLOSE@ &
tfhive_pid=$!
[ -n "${tfhive_claims-}" ] && tfhive_note "$tfhive_pid"
(
	while IFS= read -r tfhive_c; do
		case $tfhive_c in
		h) touch "$tfhive_hb" ;;
		t) tfhive_signal TERM ;;
		k) tfhive_signal KILL ;;
		esac
	done
	tfhive_abandon
) <&3@CLOSE@ &
(
	while sleep "$tfhive_check"; do
		# A supervisor killed outright has released the claims: the task
		# must not run on unclaimed GPUs.
		# Then the rest of the supervisor's group goes too (the stdin
		# reader holds the session open).
		kill -0 "$tfhive_sup" 2>/dev/null || { tfhive_abandon; kill -KILL 0; }
		tfhive_now=${EPOCHSECONDS:-$(date +%s)}
		tfhive_last=$(stat -c %Y "$tfhive_hb" 2>/dev/null || echo "$tfhive_now")
		if [ $((tfhive_now - tfhive_last)) -gt "$tfhive_hb_timeout" ]; then
			tfhive_abandon
			exit
		fi
	done
) </dev/null@CLOSE@ &
exec 3<&-
wait "$tfhive_pid" 2>/dev/null
tfhive_rc=$?
rm -f "$tfhive_hb"
trap '' TERM
kill -TERM 0 2>/dev/null
exit "$tfhive_rc"
`
