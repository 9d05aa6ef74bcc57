// Command tfhive starts distributed TensorFlow training on GPU hosts reached
// over SSH: hosts in, probe, plan, run, summary out. The command line (its
// commands, flags, help and guides, completion) is launcher/cli; this file
// holds the one table from an error's kind to tfhive's exit code. Package
// main may import anything of tfhive; nothing imports it.
package main

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/cli"
	"github.com/tfhive/tfhive/launcher/commands"
	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/profiling"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/hosts"
	"github.com/tfhive/tfhive/schedule"
)

func main() {
	os.Exit(Main(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

// Main runs tfhive with injectable streams and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	stop := profiling.Start(stderr)
	defer stop()
	return report(stderr, cli.Run(args, stdin, stdout, stderr))
}

// Exit codes, documented in README.md ("Exit codes").
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitNoGPUs      = 3
	exitUnreachable = 4
	// exitPreempted: a --priority high run preempted the run (a task's
	// supervisor stopped it); the run's summary carries it.
	exitPreempted = record.ExitPreempted
	// exitHung: --on-hang stop stopped the run once no task had printed
	// anything for --hang-after (result hung); the summary carries it.
	exitHung = record.ExitHung
	// exitIdleStopped: a host's idle rule stopped the run (its GPUs sat
	// idle; the run's summary carries it).
	exitIdleStopped = record.ExitIdleStopped
	exitInterrupted = 130
	// exitStdoutClosed: stdout's reader left (`| head`); a run was
	// stopped as by Ctrl-C. 128 + SIGPIPE, as 130 and 143 are 128 +
	// SIGINT and SIGTERM: what a shell shows for any producer whose
	// reader left, under `set -o pipefail` too, and nothing a task's own
	// code or tfhive's other codes mean, unlike 130.
	exitStdoutClosed = record.ExitStdoutClosed
	exitTerminated   = 143
)

// exitCode is the one table from what went wrong to how tfhive exits.
func exitCode(err error) int {
	var (
		runFailed   *commands.RunFailedError
		exit        *commands.ExitError
		usage       *commands.UsageError
		config      *hosts.ConfigError
		request     *schedule.UsageError
		capacity    *schedule.CapacityError
		conflict    *lifecycle.ClaimConflictError
		queued      *lifecycle.QueuedSinceError
		blocked     *lifecycle.ClaimBlockedError
		unreachable *commands.UnreachableError
		differ      *commands.DifferError
		check       *commands.CheckError
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &exit):
		return exit.Code
	case errors.As(err, &runFailed):
		// The deciding task's own code, or 1 where that is one of
		// tfhive's own (record.OwnExitCode: 2–7, 124, 130, 141, 143;
		// record.TaskExitCode: lifecycle chose it), 124 timeout,
		// 130/143 interrupted, 143 cancelled (tfhive kill), 4 host
		// lost, 7 hung (exitHung): a task's own 7 reads as 1, so a 7
		// is always tfhive's.
		if runFailed.Summary.Result == record.ResultPreempted {
			return exitPreempted
		}
		if runFailed.Summary.Result == record.ResultIdleStopped {
			return exitIdleStopped
		}
		return runFailed.Summary.ExitCode
	case errors.As(err, &usage), errors.As(err, &config), errors.As(err, &request), errors.As(err, &check):
		return exitUsage
	case errors.As(err, &capacity), errors.As(err, &conflict), errors.As(err, &queued), errors.As(err, &blocked):
		return exitNoGPUs
	case errors.As(err, &unreachable):
		return exitUnreachable
	case errors.As(err, &differ):
		return exitFailure
	case errors.Is(err, cli.ErrTerminated):
		return exitTerminated
	case errors.Is(err, launcher.ErrStdoutClosed):
		return exitStdoutClosed
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	}
	return exitFailure
}

// report prints err in tfhive's one voice and returns the exit code.
func report(w io.Writer, err error) int {
	code := exitCode(err)
	cli.Report(w, err, code == exitInterrupted)
	return code
}
