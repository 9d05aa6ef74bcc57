package rundir

import (
	"path/filepath"
	"strconv"
)

// Root holds the runs' and the sweeps' directories, in the directory
// tfhive was started in, unless --log-dir says otherwise.
const Root = "tfhive-runs"

// Path is the directory of the run (or sweep) id under Root.
func Path(id string) string { return filepath.Join(Root, id) }

// The records of a run's directory, besides the tasks' logs (TaskLog).
const (
	Summary     = "summary.json" // record.Summary, written at the run's end
	Plan        = "plan.json"    // the plan the tasks started on
	Repro       = "repro.json"   // record.Repro: what `tfhive rerun` runs again
	Console     = "console.log"  // a detached run's (or sweep's) console
	KeeperLog   = "keeper.log"   // a detached run's own lines and errors
	Lock        = "keeper.lock"  // held by the run's tfhive while it runs (lock.go)
	Events      = "events.csv"   // the run's timeline
	Metrics     = "metrics.csv"  // --capture's values, as they came
	LiveMetrics = "metrics.json" // --capture's latest values, while the run goes on
	GPUUsage    = "gpu-usage.csv"
	Report      = "report.html" // `tfhive report`'s
	SlurmJob    = "slurm.json"  // record.SlurmJob: a run --on slurm's job
	// A detached `tfhive tensorboard`'s (of a run or a sweep): its keeper's
	// pid and address, while it serves, and its lines.
	TensorBoard    = "tensorboard.json"
	TensorBoardLog = "tensorboard.log"
)

// The files of a sweep's directory besides Console, KeeperLog and Lock.
const (
	Sweep        = "sweep.json" // record.Sweep
	SweepStop    = "stop"       // written by `tfhive kill SWEEP`: start no more trials
	SweepEarlier = "earlier"    // the directories of trials run again, renamed
)

// LogSuffix ends every log of a run's directory: the tasks' (TaskLog),
// Console and KeeperLog.
const LogSuffix = ".log"

// TaskLog is the log of the task role:index ("worker-1.log"). index is
// a string as `logs --task ROLE:INDEX` gives it.
func TaskLog(role, index string) string { return role + "-" + index + LogSuffix }

// Stacks is the directory of the tasks' stacks, taken when the run went
// silent (--hang-after) or by `tfhive stacks`; StacksOf is a task's file
// there ("stacks/worker-1.txt").
const Stacks = "stacks"

// StacksOf is task role:index's stacks file, under the run's directory.
func StacksOf(role, index string) string { return filepath.Join(Stacks, role+"-"+index+".txt") }

// TaskLogOf is TaskLog for a task of the plan.
func TaskLogOf(role string, index int) string { return TaskLog(role, strconv.Itoa(index)) }
