package supervisor

import (
	"cmp"
	"embed"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alessio/shellescape"
	"github.com/tfhive/tfhive/probe/claim"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote/shscript"
	"github.com/tfhive/tfhive/probe/wording"
)

// Task is what the supervisor needs to run one task on its host.
type Task struct {
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
	// Keep, when not zero, keeps the supervisor beyond its session (see
	// scripts/supervisor-run.sh): with no control line for this long it
	// stops the task. Zero: the end of the session stops it.
	Keep time.Duration
	// RunInfo, for a kept run's first task on each host, describes the
	// run for a keeper that adopts it (record.RunInfo, launcher/adopt.go); "" otherwise.
	RunInfo string
	// Mark is this tfhive's random word for a kept task's truncation line
	// (TruncatedMarker), for the attempt lines and for any task's
	// preemption line (PreemptedMarker).
	Mark string
	// Restarts: the task may be restarted (lifecycle.Restart); the supervisor
	// then reports each attempt's end and waits for "r" or "e".
	Restarts bool
	// Mux: kept, and started by its host's multiplexer (launcher/mux.go), which
	// follows its output files itself.
	Mux bool
	// Seeded: the task's start was planned on an older probe than its
	// own (a sweep's trial on the newest coalesced probe:
	// probe.Coalescer); SeenTickets are the pids of the holders of the
	// waiting tickets that probe saw on the task's host. Its claim check
	// then ends it, saying ClaimQueued, when a run began to wait there
	// since (scripts/claim-check.sh), so that the run plans again on a
	// probe that sees the queue.
	Seeded      bool
	SeenTickets []int
	// Requeued is how often the run went back to the queue (preempted,
	// or --requeue-on): its holders' command line says so, in the word
	// before their label (RequeuedWord), for `tfhive ps` and `top`.
	Requeued int
	// FirstAttempt is the number of its first attempt (TFHIVE_ATTEMPT):
	// above 0 in a run started again after a lost host (lifecycle.Relaunch).
	FirstAttempt int
	// Priority is the run's --priority, carried by the holders' label
	// when low or high.
	Priority string
	// Preempt, for a low run on a host whose policy allows preempt_low,
	// is who may preempt it there (scripts/preempt-watch.sh); "": nobody.
	Preempt string
	// Grace is the run's --grace: from the stop signal to SIGKILL, when
	// a preemption, the link's loss or tfhive kill stops the task.
	Grace time.Duration
	// StopSignal is --stop-signal's name without SIG; "": TERM.
	StopSignal string
	// Idle is the idle rule on the task's host (schedule.IdleRules) and
	// IdleGPUs the run's GPUs there that nvidia-smi reports the use of
	// (scripts/idle-watch.sh): the task is idle when all of them are; no
	// GPU: nothing watches, the task is never idle. IdleEvery is how often
	// they are sampled.
	Idle      inventory.IdleRule
	IdleGPUs  []int
	IdleEvery time.Duration
}

// Control lines tfhive writes to a supervisor's stdin.
const (
	CtlGo        = "g\n" // claims are all held: start the task
	CtlAbort     = "a\n" // another task could not claim: give up
	CtlHeartbeat = "h\n"
	CtlTerm      = "t\n"
	CtlKill      = "k\n"
	// CtlIdleHold: GPUs of the run on another host are busy: the task's
	// idle watch holds its stop for a link timeout (scripts/idle-watch.sh).
	CtlIdleHold = "b\n"
)

// The supervisor's first stdout line, before any task output: its claims
// are held ("ok"), or a lock file cannot be used ("blocked WHY"). A claim
// someone else holds ends the supervisor with ExitClaimBusy before it
// says anything. The scripts hold these as text (TestScriptsFormats).
const (
	ClaimMarker  = "@@tfhive-claim "
	ClaimOK      = ClaimMarker + "ok"
	ClaimBlocked = ClaimMarker + "blocked "
	// ClaimFailed: a kept task cannot have its files on the host (its run
	// directory refused, say); the task could not start.
	ClaimFailed = ClaimMarker + "failed "
	// ClaimQueued: a start planned on an older probe (Task.Seeded) met a
	// run that began to wait on the host since; the supervisor then ends
	// with ExitClaimBusy, its claims given back.
	ClaimQueued = ClaimMarker + "queued"
	// ExitClaimBusy is the supervisor's status when a claim was taken or
	// tfhive aborted the start.
	ExitClaimBusy = 75
)

// The supervisor's scripts. Its input on stdin is two stages, each
// read by read-stage.sh: supervisor-claim.sh takes the task's claims and
// becomes its holders, whose innermost bash runs supervisor-run.sh, the
// supervisor proper, which starts the task's shell, task.sh.
//
//go:embed scripts/*.sh
var Scripts embed.FS

var (
	readStage      = shscript.LoadOneLine(Scripts, "scripts/read-stage.sh")
	supervisorLine = shscript.LoadOneLine(Scripts, "scripts/supervisor-command.sh")
	claimSh        = shscript.Load(Scripts, "scripts/supervisor-claim.sh")
	runSh          = shscript.Load(Scripts, "scripts/claim-check.sh", "scripts/rundir.sh", "scripts/pipe.sh", "scripts/signals.sh", "scripts/preempt-watch.sh", "scripts/clock.sh", "scripts/idle-watch.sh", "scripts/ledger.sh", "scripts/supervisor-run.sh")
	attachSh       = shscript.Load(Scripts, "scripts/rundir.sh", "scripts/attach.sh")
	taskSh         = shscript.Load(Scripts, "scripts/task.sh")
)

// Command is the remote command line of every task: bash
// reading the first stage of its input (scripts/supervisor-command.sh,
// read-stage.sh). It is the same for every task, so that a probe session
// can start it ahead of the plan (probe.Options.Then) and it holds no
// secret: `ps` shows only this.
var Command = "exec sh -c " + shellescape.Quote(supervisorLine.With(shscript.Set("tfhive_read", readStage.Text())))

// Input is all a supervisor is sent before its control lines:
// the claim stage and the task stage, each behind its length.
func Input(t Task) string {
	claim, run := claimStage(t), runStage(t)
	return strconv.Itoa(len(claim)) + "\n" + claim + strconv.Itoa(len(run)) + "\n" + run
}

// claimStage takes the task's claims, then becomes the task's holders
// (scripts/supervisor-claim.sh).
func claimStage(t Task) string {
	var locks, labels []string
	for _, c := range t.Claims {
		locks = append(locks, shellescape.Quote(claim.FilePrefix+claim.Name(c.Kind, c.ID, c.UUID)+claim.FileSuffix))
		labels = append(labels, claim.HolderClaim(c.Kind, c.ID, c.UUID))
	}
	// A requeued run's holders end their script with a comment saying
	// so: the word before the label, which every reader of the label
	// counts from the end (probe/claim, claim-check.sh, preempt-watch.sh),
	// so that they read it as before.
	read := readStage.Text()
	if t.Requeued > 0 {
		read += " " + claim.RequeuedWord + strconv.Itoa(t.Requeued)
	}
	return claimSh.With(
		shscript.Set("tfhive_read", read),
		shscript.Set("tfhive_run", t.RunID),
		shscript.Set("tfhive_task", t.ID),
		shscript.Set("tfhive_locks", strings.Join(locks, " ")),
		shscript.Set("tfhive_labels", strings.Join(labels, ",")),
		shscript.Set("tfhive_prio", labelPriority(t.Priority)),
	)
}

// runStage is the task stage, run by the holders' innermost bash: it says
// its claims are held, waits for go, then supervises the task
// (scripts/supervisor-run.sh). The environment is exported ahead of it,
// sorted, so that the same task always sends the same bytes.
func runStage(t Task) string {
	timeout := max(int(t.HeartbeatTimeout/time.Second), 2)
	vars := []shscript.Var{
		shscript.Set("tfhive_nclaims", strconv.Itoa(len(t.Claims))),
		shscript.Set("tfhive_seen", seenWords(t)),
		shscript.Set("tfhive_hb_timeout", strconv.Itoa(timeout)),
		shscript.Set("tfhive_keep", strconv.Itoa(keepSeconds(t.Keep))),
		shscript.Set("tfhive_runinfo", t.RunInfo),
		shscript.Set("tfhive_mark", t.Mark),
		shscript.Set("tfhive_restarts", boolDigit(t.Restarts)),
		shscript.Set("tfhive_mux", boolDigit(t.Mux)),
		shscript.Set("tfhive_attempt0", strconv.Itoa(t.FirstAttempt)),
		shscript.Set("tfhive_preempt", t.Preempt),
		shscript.Set("tfhive_grace", strconv.Itoa(int(t.Grace/(100*time.Millisecond)))),
		shscript.Set("tfhive_stopsig", cmp.Or(t.StopSignal, "TERM")),
		shscript.Set("tfhive_idle", idleWords(t)),
		shscript.Set("tfhive_idle_ids", joinInts(t.IdleGPUs)),
	}
	for _, k := range slices.Sorted(maps.Keys(t.Env)) {
		vars = append(vars, shscript.Export(k, t.Env[k]))
	}
	vars = append(vars, shscript.Set("tfhive_cmd", taskShell(t)))
	return runSh.With(vars...)
}

// seenWords is tfhive_seen: "-" for a start planned on a probe of its
// own, else the seen tickets' holders as " PID … ".
func seenWords(t Task) string {
	if !t.Seeded {
		return "-"
	}
	var b strings.Builder
	b.WriteByte(' ')
	for _, pid := range t.SeenTickets {
		b.WriteString(strconv.Itoa(pid))
		b.WriteByte(' ')
	}
	return b.String()
}

func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// labelPriority is the holders' label's last word: the priority when low
// or high, nothing when normal.
func labelPriority(p string) string {
	if p == "low" || p == "high" {
		return p
	}
	return ""
}

// keepSeconds is Keep for the script: 0 stays 0 (not kept), anything
// else at least a second.
func keepSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return max(int((d+time.Second-1)/time.Second), 1)
}

// AttachInput is all a later session of a kept supervisor's task is sent
// before the control lines it passes on (scripts/attach.sh): it follows
// the task's output from the offsets given, bytes of stdout and stderr
// already received. mark is the word of its truncation line.
func AttachInput(runID, taskID string, outOff, errOff int64, gen int, mark, rmark string) string {
	s := attachSh.With(
		shscript.Set("tfhive_run", runID),
		shscript.Set("tfhive_task", taskID),
		shscript.Set("tfhive_off_out", strconv.FormatInt(outOff, 10)),
		shscript.Set("tfhive_off_err", strconv.FormatInt(errOff, 10)),
		shscript.Set("tfhive_gen", strconv.Itoa(gen)),
		shscript.Set("tfhive_mark", mark),
		shscript.Set("tfhive_rmark", rmark),
	)
	return strconv.Itoa(len(s)) + "\n" + s
}

// StreamMarker starts each stream of a kept supervisor's task, in its
// first session and in every later one: what a login shell printed
// before it is not the task's, and the bytes after it are the task's
// output file from the offset asked for.
const StreamMarker = "@@tfhive-stream"

// TruncatedMarker, then the session's mark and a newline, is what a kept
// task's session says on stderr after the last byte of the task's
// output, once the task has ended, when the host's files could not take
// all of it (a full disk). The mark is a random word the task cannot
// know: bytes of its own output never pass for this line, and the line
// is never counted as output.
const TruncatedMarker = "@@tfhive-truncated "

// PreemptedMarker, then the session's mark, is what a task's session says
// on stderr after the task's last byte when a high run preempted it
// (scripts/preempt-watch.sh), followed by " HIGH USER" ("- -" when a
// later session could not know) and a newline.
const PreemptedMarker = "@@tfhive-preempted "

// CancelledMarker, then the session's mark, is what a task's session says
// on stderr after the task's last byte when a SIGTERM to its supervisor
// (tfhive kill) stopped it, followed by " kill" and a newline: tfhive's
// own stops are control lines, so that is someone cancelling the run.
const CancelledMarker = "@@tfhive-cancelled "

// StoppedMarker, then the session's mark, is what a task's session says
// on stderr after the task's last byte when the supervisor passed
// tfhive's "t" or "k" on to the task while it still ran, followed by "
// signalled" and a newline: tfhive stopped it, whatever its status. A
// task that ended on its own as the control line came (it failed at the
// same moment as the task that decided the run) has no such line, and
// keeps its own end.
const StoppedMarker = "@@tfhive-stopped "

// taskShell is what runs inside the task's new session: cd, setup, exec
// (scripts/task.sh).
func taskShell(t Task) string {
	setup := t.Setup
	if strings.TrimSpace(setup) == "" {
		setup = ""
	}
	return taskSh.With(
		shscript.Set("tfhive_workdir", t.Workdir),
		shscript.Set("tfhive_setup", setup),
		shscript.Set("tfhive_setup_line", wording.FirstLine(strings.TrimSpace(setup))),
		shscript.Set("tfhive_argv", shellescape.QuoteCommand(t.Argv)),
	)
}

// WriteChunked sends a stage, s, to Command in small pieces: x/crypto
// keeps, for the life of each channel, a packet buffer as large as its
// largest write, and a script carrying TF_CONFIG is tens of kilobytes at
// a few hundred tasks.
func WriteChunked(w io.Writer, s string) error {
	const chunk = 2 << 10
	for len(s) > 0 {
		n := min(chunk, len(s))
		if _, err := io.WriteString(w, s[:n]); err != nil {
			return err
		}
		s = s[n:]
	}
	return nil
}
