// Command tfhive starts distributed TensorFlow training on GPU hosts reached
// over SSH: hosts in, probe, plan, run, summary out. This file is the map:
// the commands and their flags, signals, and the one table from an error's
// kind to tfhive's exit code. flags.go turns flags into the option structs
// of launcher/commands, which holds the commands themselves (plan_emit.go:
// plan's --emit flags); usage.go puts
// urfave/cli's complaints in tfhive's voice; completion.go reads a command
// line for the shells' Tab. Package main may import anything of tfhive;
// nothing imports it.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/urfave/cli/v2"

	"github.com/tfhive/tfhive/launcher/commands"
	"github.com/tfhive/tfhive/probe/hosts"
	"github.com/tfhive/tfhive/schedule"
)

func main() {
	os.Exit(Main(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

// Main runs tfhive with injectable streams and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	// SIGPIPE is asked for only so that Go does not die of it: a write to
	// stdout or stderr whose reader left then fails with EPIPE, which
	// commands.Stdout, for stdout, turns into a stop. The signal itself
	// says nothing (it comes for any pipe or socket, an SSH connection's
	// too) and is never read: its own channel, once full, drops the rest,
	// and ch never fills with it. Unlike signal.Ignore, this leaves
	// SIGPIPE as it was for the programs tfhive starts (a detached run's
	// keeper).
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	// Closing ends the goroutine below: Main may run many times in one
	// process (the tests), and signal.Stop guarantees no later sends.
	defer func() {
		signal.Stop(pipe)
		signal.Stop(ch)
		close(ch)
	}()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := commands.NewSignals(cancel)
	go func() {
		for sig := range ch {
			sigs.Deliver(sig)
		}
	}()
	out := commands.WatchStdout(stdout, sigs)
	// urfave/cli reports a help topic it cannot find only through
	// CommandNotFound, which returns nothing: the error waits here.
	var notFound error
	w := wiring{Streams: commands.Streams{Stdout: out, Stderr: stderr}, sigs: sigs}
	err := newApp(stdin, w, &notFound).RunContext(ctx, args)
	if err == nil {
		err = notFound
	}
	if errors.Is(err, context.Canceled) && sigs.Last() == syscall.SIGTERM {
		err = errTerminated
	}
	if out.Closed() {
		err = afterStdoutClosed(err)
	}
	return report(stderr, err)
}

// afterStdoutClosed is a command's end once its stdout closed: like a
// program of coreutils under `| head`, tfhive then ends quietly with
// 141 (128 + SIGPIPE), having written what it could; `run` has stopped
// its run and said so. Errors of their own, not of the closing (a run
// that failed before it, hosts that could not be reached), are reported
// as ever: stderr still has a reader.
func afterStdoutClosed(err error) error {
	var runFailed *commands.RunFailedError
	switch {
	case err == nil, errors.Is(err, syscall.EPIPE), errors.Is(err, context.Canceled):
	case errors.As(err, &runFailed) && runFailed.Summary.Result == record.ResultStdoutClosed:
	default:
		return err
	}
	return commands.ErrStdoutClosed
}

// Exit codes, documented in README.md.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitNoGPUs      = 3
	exitUnreachable = 4
	// exitPreempted: a --priority high run preempted the run (a task's
	// supervisor stopped it); the run's summary carries it.
	exitPreempted   = record.ExitPreempted
	exitInterrupted = 130
	// exitStdoutClosed: stdout's reader left (`| head`); a run was
	// stopped as by Ctrl-C. 128 + SIGPIPE, as 130 and 143 are 128 +
	// SIGINT and SIGTERM: what a shell shows for any producer whose
	// reader left, under `set -o pipefail` too, and nothing a task's own
	// code or tfhive's other codes mean, unlike 130.
	exitStdoutClosed = record.ExitStdoutClosed
	exitTerminated   = 143
)

// errTerminated is a command that SIGTERM stopped before any task ran.
var errTerminated = errors.New("interrupted by SIGTERM")

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
		// The deciding task's own code, 124 timeout, 130/143, 4 host lost.
		if runFailed.Summary.Result == record.ResultPreempted {
			return exitPreempted
		}
		return runFailed.Summary.ExitCode
	case errors.As(err, &usage), errors.As(err, &config), errors.As(err, &request), errors.As(err, &check):
		return exitUsage
	case errors.As(err, &capacity), errors.As(err, &conflict), errors.As(err, &blocked):
		return exitNoGPUs
	case errors.As(err, &unreachable):
		return exitUnreachable
	case errors.As(err, &differ):
		return exitFailure
	case errors.Is(err, errTerminated):
		return exitTerminated
	case errors.Is(err, commands.ErrStdoutClosed):
		return exitStdoutClosed
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	}
	return exitFailure
}

// report prints err in tfhive's one voice and returns the exit code.
func report(w io.Writer, err error) int {
	code := exitCode(err)
	if err == nil {
		return code
	}
	var said *commands.ExitError
	if errors.As(err, &said) || errors.Is(err, commands.ErrStdoutClosed) {
		return code
	}
	msg := err.Error()
	if code == exitInterrupted && errors.Is(err, context.Canceled) {
		msg = "interrupted"
	}
	fmt.Fprintf(w, "tfhive: error: %s\n", msg)
	var d interface{ Details() []string }
	if errors.As(err, &d) {
		for _, line := range d.Details() {
			fmt.Fprintf(w, "tfhive:   %s\n", line)
		}
	}
	var h interface{ Hint() string }
	if errors.As(err, &h) && h.Hint() != "" {
		fmt.Fprintf(w, "tfhive: hint: %s\n", h.Hint())
	}
	return code
}

func newApp(stdin io.Reader, w wiring, notFound *error) *cli.App {
	return &cli.App{
		Name:            "tfhive",
		Usage:           "start distributed TensorFlow training on GPU hosts over SSH",
		Version:         version(),
		Reader:          stdin,
		Writer:          w.Stdout,
		ErrWriter:       w.Stderr,
		HideHelpCommand: true,
		// -H, --exclude and --env values may hold commas of their own.
		DisableSliceFlagSeparator: true,
		OnUsageError:              onUsage,
		// Errors are printed by report, in one voice, and never exit here.
		ExitErrHandler: func(*cli.Context, error) {},
		// Reached with no command, or with a word that names none.
		Action: rootCmd,
		// `tfhive --help nosuch` and `tfhive status --help extra` end here
		// instead of in urfave/cli's "No help topic" error, which exits 3.
		CommandNotFound: func(c *cli.Context, name string) { *notFound = helpNotFound(c, name) },
		Commands: []*cli.Command{
			{
				Name:         "status",
				Usage:        "show every GPU on every host",
				Flags:        join(hostFlags(), statusFlags(), availabilityFlags()),
				OnUsageError: onUsage,
				Action:       action(w.status, commands.Status),
			},
			{
				Name:         "plan",
				Usage:        "show where every task would run, without starting anything",
				ArgsUsage:    "-- CMD [ARGS...]",
				Flags:        join(hostFlags(), jobFlags(), syncFlags(), jsonFlag("print the plan as a JSON document"), emitFlags()),
				OnUsageError: onUsage,
				Action:       action(w.plan, commands.Plan),
			},
			{
				Name:         "run",
				Usage:        "start the job on the hosts, stream its output, stop it when it is done",
				ArgsUsage:    "-- CMD [ARGS...]",
				Flags:        join(hostFlags(), jobFlags(), syncFlags(), runFlags()),
				OnUsageError: onUsage,
				Action:       action(w.run, commands.Run),
			},
			{
				Name:         "doctor",
				Usage:        "compare Python, modules, driver and CUDA versions across the hosts",
				Flags:        join(hostFlags(), doctorFlags(), syncFlags(), jsonFlag("print the report as a JSON document")),
				OnUsageError: onUsage,
				Action:       action(w.doctor, commands.Doctor),
			},
			{
				Name:         "ps",
				Usage:        "list the runs holding GPUs and ports on the hosts",
				Flags:        join(hostFlags(), jsonFlag("print the runs as a JSON document")),
				OnUsageError: onUsage,
				Action:       action(w.ps, commands.Ps),
			},
			{
				Name:         "queue",
				Usage:        "list the runs waiting for GPUs on the hosts (--wait), in the order they will start, and why each waits",
				Flags:        join(hostFlags(), jsonFlag("print the queue as a JSON document")),
				OnUsageError: onUsage,
				Action:       action(w.queue, commands.Queue),
			},
			{
				Name:  "runs",
				Usage: "list the runs recorded here (tfhive-runs/): start, duration, result, exit code and --capture's metrics",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "log-root", Usage: "list the runs in `DIR` instead of tfhive-runs"},
					&cli.StringFlag{Name: "sort", Usage: "order by the metric `NAME` (numbers numerically) instead of start time"},
					&cli.BoolFlag{Name: "reverse", Aliases: []string{"r"}, Usage: "the other way round (runs without the metric stay last)"},
					&cli.BoolFlag{Name: "json", Usage: "print the runs as a JSON document"},
				},
				OnUsageError: onUsage,
				Action:       action(w.runs, commands.Runs),
			},
			{
				Name:      "attach",
				Usage:     "follow a detached run's console from its start, then live, and exit with its code; Ctrl-C only detaches; with -H or --hosts, find the run on the hosts and become its keeper",
				ArgsUsage: "RUN_ID",
				Flags: join([]cli.Flag{logDirFlag(), &cli.Int64Flag{Name: "since", Usage: "start at this `BYTE` of the console instead of its start"},
					&cli.DurationFlag{Name: "grace", Value: 10 * time.Second, Usage: "with -H or --hosts: time between SIGTERM and SIGKILL when stopping tasks"},
					&cli.DurationFlag{Name: "reconnect", Value: commands.DefaultReconnect, Usage: "with -H or --hosts: redial a host whose link drops for up to `D`"}},
					hostFlags(), captureFlags()),
				OnUsageError: onUsage,
				Action:       action(w.follow, commands.Attach),
			},
			{
				Name:         "wait",
				Usage:        "wait for a run to end and exit with its code",
				ArgsUsage:    "RUN_ID",
				Flags:        []cli.Flag{logDirFlag()},
				OnUsageError: onUsage,
				Action:       action(w.follow, commands.Wait),
			},
			{
				Name:      "logs",
				Usage:     "print a detached run's console, or one task's log (--task); -f follows it until the run ends; with -H or --hosts, read the output from the hosts (a run started elsewhere)",
				ArgsUsage: "RUN_ID",
				Flags: join([]cli.Flag{logDirFlag(), &cli.StringFlag{Name: "task", Usage: "one task's log: `ROLE:INDEX`, as worker:1"},
					&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "go on printing what is added until the run ends (with -H or --hosts: until the task ends)"}},
					hostFlags()),
				OnUsageError: onUsage,
				Action:       action(w.follow, commands.Logs),
			},
			{
				Name:         "kill",
				Usage:        "stop a run's tasks on every host (yours; root may stop any)",
				ArgsUsage:    "RUN_ID",
				Flags:        join(hostFlags(), []cli.Flag{&cli.DurationFlag{Name: "grace", Value: 10 * time.Second, Usage: "time between SIGTERM and SIGKILL"}}),
				OnUsageError: onUsage,
				Action:       action(w.kill, commands.Kill),
			},
			completionCommand(w),
			completeCommand(w),
			{
				Name:         "gc",
				Usage:        "remove the --sync trees on the hosts that nothing uses, and say how much space that freed",
				Flags:        join(hostFlags(), gcFlags(), jsonFlag("print what gc found and did on each host as a JSON document")),
				OnUsageError: onUsage,
				Action:       action(w.gc, commands.GC),
			},
			{
				Name:         "version",
				Usage:        "print the version",
				OnUsageError: onUsage,
				Action: func(c *cli.Context) error {
					if err := noArgs(c); err != nil {
						return err
					}
					fmt.Fprintln(w.Stdout, "tfhive", version())
					return nil
				},
			},
		},
	}
}

// action runs a command with the options its flags give.
func action[O any](options func(*cli.Context) (O, error), command func(context.Context, O) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		o, err := options(c)
		if err != nil {
			return err
		}
		return command(c.Context, o)
	}
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return "dev"
}
