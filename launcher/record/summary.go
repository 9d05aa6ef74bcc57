package record

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Outcomes of a task, as shown in the summary.
const (
	OutcomeExited  = "exited"
	OutcomeStopped = "stopped" // stopped by tfhive once the run was decided: not a failure
	// OutcomeCancelled: `tfhive kill` stopped it (a SIGTERM to its
	// supervisor on its host) before tfhive did.
	OutcomeCancelled = "cancelled"
	OutcomeLost      = "lost" // its host or connection was lost
	OutcomeNoStart   = "not-started"
	// OutcomeHandedOver: another keeper adopted the run; this one let go
	// of the task, still running.
	OutcomeHandedOver = "handed-over"
)

// Run results.
const (
	ResultSucceeded   = "succeeded"
	ResultFailed      = "failed"
	ResultTimeout     = "timeout"
	ResultInterrupted = "interrupted"
	// ResultSteppedDown: another keeper adopted the run (tfhive attach -H
	// from elsewhere); this one stopped nothing. Exit 1.
	ResultSteppedDown = "stepped-down"
)

// Exit codes Run chooses for results that no task's own code explains.
const (
	ExitTimeout  = 124
	ExitHostLost = 4
)

// Summary is what happened, also written as summary.json in the log dir
// and printed by `tfhive run --json`.
type Summary struct {
	RunID  string `json:"run_id"`
	Result string `json:"result"`
	// ExitCode is what tfhive exits with: 0, the deciding task's own code
	// (128+N for signal N) unless tfhive has that code for an outcome of
	// its own, then 1 (TaskExitCode; the deciding task, Tasks[0], has its
	// own code), 124 timeout, 130/143 interrupted, 4 host lost.
	ExitCode int `json:"exit_code"`
	// Reason says in one line why the run ended as it did.
	Reason   string        `json:"reason"`
	LogDir   string        `json:"log_dir"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns"`
	// Command is the tasks' command line as given, its {NAME}
	// placeholders unfilled (each task's own is in plan.json); absent
	// when the keeper that wrote the summary adopted the run elsewhere
	// (attach -H), knowing it not.
	Command []string `json:"command,omitempty"`
	// Tasks: the task that decided a failure first, then plan order.
	Tasks []TaskResult `json:"tasks"`
	// Code is the --sync tree and where it was sent; absent without.
	Code *CodeReport `json:"code,omitempty"`
	// Captures are --capture's regexes by name, Metrics the run's values
	// (RunMetrics); both absent without --capture.
	Captures map[string]string `json:"captures,omitempty"`
	Metrics  map[string]string `json:"metrics,omitempty"`
	// Slurm is the job of a run on a Slurm cluster (--on slurm).
	Slurm *SlurmJob `json:"slurm,omitempty"`
}

// TaskResult is one task's fate.
type TaskResult struct {
	ID      string `json:"id"`
	Role    string `json:"role"`
	Index   int    `json:"index"`
	Host    string `json:"host"`
	Address string `json:"address"`
	GPUs    []int  `json:"gpus"`
	Outcome string `json:"outcome"`
	// ExitCode is the task's status (128+N for signal N); nil when unknown.
	ExitCode *int          `json:"exit_code"`
	Error    string        `json:"error,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	Log      string        `json:"log"`
	// LogTruncated: the task's output files on its host (a kept task's)
	// could not take all its output, a full disk: the log and the console
	// have what they took.
	LogTruncated bool `json:"log_truncated,omitempty"`
	// Metrics are the values --capture found in its output.
	Metrics map[string]string `json:"metrics,omitempty"`
	// GPUUsage is what --sample saw of its GPUs; absent without samples.
	GPUUsage *GPUUsage `json:"gpu_usage,omitempty"`
	// Attempts are its runs, first to last, with --restarts; absent
	// without.
	Attempts []Attempt `json:"attempts,omitempty"`
	// Intruders are the processes --sample saw on the task's GPUs that
	// were not the run's (launcher/intruders.go).
	Intruders []Intruder `json:"intruders,omitempty"`
	// LastLines are the last lines the task wrote on stderr (at most 5,
	// each cut at 200 bytes): kept for the task that decided a failed
	// run, so that the summary says why without opening its log.
	LastLines []string `json:"last_lines,omitempty"`
	// HungAt is where the task was when the run was last found silent
	// for --hang-after: its main thread's innermost Python frame, or its
	// wait channel (launcher/stacks.Where); its stacks file beside.
	HungAt string `json:"hung_at,omitempty"`
}

// RecordError: the run ended (Result) but its log dir could not take its
// record, summary.json. The run's own outcome stands; tfhive exits 1,
// saying both.
type RecordError struct {
	Result string
	Err    error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("the run %s, but its log dir could not take its record: %v", e.Result, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

// WriteSummaryJSON prints the summary document.
func WriteSummaryJSON(w io.Writer, s *Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// ExitPreempted is a run's exit code when a high-priority run preempted
// one of its tasks (a --priority low run, on a host whose policy allows
// preempt_low). main's exit-code table names it.
const ExitPreempted = 5

// ResultPreempted: a high-priority run preempted one of the run's tasks.
const ResultPreempted = "preempted"

// ResultStdoutClosed: the run was stopped because its stdout closed.
const ResultStdoutClosed = "stdout-closed"

// ResultCancelled: `tfhive kill` stopped the run (SkyPilot's CANCELLED);
// its keeper only recorded it.
const ResultCancelled = "cancelled"

// ExitCancelled is a cancelled run's code: 128 + SIGTERM, what tfhive
// kill sends, as for a keeper interrupted by SIGTERM.
const ExitCancelled = 143

// ExitStdoutClosed is 128 + SIGPIPE: what a shell shows for a producer
// whose reader left (`yes | head`), in the family of 130 and 143 for
// SIGINT and SIGTERM. main's exit-code table names it.
const ExitStdoutClosed = 141

// ExitTaskReserved is a failed run's code when its deciding task's own
// code is one tfhive gives an outcome of its own (OwnExitCode): 1, the
// generic failure, so that a task's 2 never reads as bad usage nor its 3
// as no GPUs. The summary's deciding task keeps its own code.
const ExitTaskReserved = 1

// OwnExitCode: tfhive exits with code for an outcome of its own, never
// passed on from a task: 2 usage, 3 no GPUs, 4 host lost, 5 preempted, 6 idle-stopped,
// 7 hung, 124 timeout, 130 / 143 interrupted, 141 stdout closed.
func OwnExitCode(code int) bool {
	switch code {
	case 2, 3, ExitHostLost, ExitPreempted, ExitIdleStopped, ExitHung, ExitTimeout, 130, ExitStdoutClosed, 143:
		return true
	}
	return false
}

// TaskExitCode is a failed run's exit code for its deciding task's own
// code: that code, or ExitTaskReserved when it is one of tfhive's own.
// A shell's 126 (not executable) and 127 (not found), 255 (what ssh
// keeps for itself, never tfhive) and 128+N for the other signals pass
// through.
func TaskExitCode(task int) int {
	if OwnExitCode(task) {
		return ExitTaskReserved
	}
	return task
}
