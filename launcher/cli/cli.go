// Package cli is tfhive's command line: the urfave/cli wiring of every
// command and its flags (flags.go turns them into the option structs of
// launcher/commands, which holds the commands themselves; plan_emit.go:
// plan's --emit flags), signals and a closed stdout, urfave/cli's
// complaints put in tfhive's voice (usage.go), `tfhive help` with its
// guides (launcher/help), and the reading of a command line for the
// shells' Tab (completion.go). Run returns what went wrong; package main
// alone turns that into an exit code, and Report says it. Only package
// main imports cli.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/commands"
	jobs "github.com/tfhive/tfhive/launcher/job" // the package; job is the --workers… flags' reader (flags.go)
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/wording"
)

// Run runs tfhive with injectable streams (args[0] is the program's name)
// and returns what went wrong, nil when nothing did; the caller picks the
// exit code and reports the error with Report. It may run many times in
// one process (the tests).
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
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
	// Closing ends the goroutine below: Run may run many times in one
	// process (the tests), and signal.Stop guarantees no later sends.
	defer func() {
		signal.Stop(pipe)
		signal.Stop(ch)
		close(ch)
	}()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := jobs.NewSignals(cancel)
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
	app := newApp(stdin, w, &notFound)
	err := app.RunContext(ctx, flagsFirst(app, args))
	if err == nil {
		err = notFound
	}
	if errors.Is(err, context.Canceled) && sigs.Last() == syscall.SIGTERM {
		err = ErrTerminated
	}
	if out.Closed() {
		err = afterStdoutClosed(err)
	}
	return err
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
	return launcher.ErrStdoutClosed
}

// ErrTerminated is a command that SIGTERM stopped before any task ran.
var ErrTerminated = errors.New("interrupted by SIGTERM")

// Report prints err in tfhive's one voice: `tfhive: error: …`, the
// error's detail lines, its hint. interrupted says that the caller counts
// err as an interruption (Ctrl-C, exit 130): a cancelled context then
// reads "interrupted". Errors said already (an ExitError, a closed
// stdout) print nothing.
func Report(w io.Writer, err error, interrupted bool) {
	if err == nil {
		return
	}
	var said *commands.ExitError
	if errors.As(err, &said) || errors.Is(err, launcher.ErrStdoutClosed) {
		return
	}
	msg := err.Error()
	if interrupted && errors.Is(err, context.Canceled) {
		msg = "interrupted"
	}
	// Each line one line, whatever it names (a path, a value given, a
	// host's words): a control or bidi character is written escaped.
	fmt.Fprintf(w, "tfhive: error: %s\n", wording.OneLine(msg))
	var d interface{ Details() []string }
	if errors.As(err, &d) {
		for _, line := range d.Details() {
			fmt.Fprintf(w, "tfhive:   %s\n", wording.OneLine(line))
		}
	}
	var h interface{ Hint() string }
	if errors.As(err, &h) && h.Hint() != "" {
		fmt.Fprintf(w, "tfhive: hint: %s\n", wording.OneLine(h.Hint()))
	}
}

func newApp(stdin io.Reader, w wiring, notFound *error) *cli.App {
	app := &cli.App{
		Name:            "tfhive",
		Usage:           "start distributed TensorFlow training on GPU hosts over SSH",
		Version:         version(),
		Reader:          stdin,
		Writer:          w.Stdout,
		ErrWriter:       w.Stderr,
		HideHelpCommand: true,
		// The commands, then the guides of launcher/help.
		CustomAppHelpTemplate: cli.AppHelpTemplate + guidesHelp(),
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
				Flags:        join(hostFlags(), statusFlags(), availabilityFlags(), slurmPlaceFlags(), []cli.Flag{colorFlag()}),
				OnUsageError: onUsage,
				Action:       action(w.status, commands.Status),
			},
			{
				Name:         "top",
				Usage:        "a live view of the fleet: GPUs and who holds them, the queue, your runs (? for keys)",
				Flags:        join(hostFlags(), topFlags(), availabilityFlags(), []cli.Flag{colorFlag()}),
				OnUsageError: onUsage,
				Action:       action(w.top, commands.Top),
			},
			{
				Name:         "plan",
				Usage:        "show where every task would run, without starting anything",
				ArgsUsage:    "-- CMD [ARGS...]",
				Flags:        join(hostFlags(), jobFlags(), syncFlags(), []cli.Flag{&cli.BoolFlag{Name: "json", Category: catOutput, Usage: "print the plan as a JSON document"}}, emitFlags()),
				OnUsageError: onUsage,
				Action:       action(w.plan, commands.Plan),
			},
			{
				Name:         "run",
				Usage:        "start the job on the hosts, stream its output, stop it when it is done",
				ArgsUsage:    "-- CMD [ARGS...]",
				Flags:        join(hostFlags(), jobFlags(), syncFlags(), runFlags(), slurmFlags(), []cli.Flag{colorFlag()}),
				OnUsageError: onUsage,
				Action:       action(w.run, commands.Run),
			},
			{
				Name:         "rerun",
				Usage:        "run a recorded run again as it was, under a new id, saying first what is not as it was (code, hosts, git commit, tfhive)",
				ArgsUsage:    "RUN_ID|LOG_DIR",
				Flags:        rerunFlags(),
				OnUsageError: onUsage,
				Action:       action(w.rerun, commands.Rerun),
			},
			{
				Name:         "sweep",
				Usage:        "run the command over a grid of --param values, each trial a run of its own, as many at once as the GPUs fit; then a table of the results",
				ArgsUsage:    "--param NAME=V1,V2,... -- CMD ... {NAME} ...",
				Flags:        join(sweepFlags(), hostFlags(), jobFlags(), syncFlags(), runFlags(), slurmFlags(), []cli.Flag{colorFlag()}),
				OnUsageError: onUsage,
				Action:       action(w.sweep, commands.Sweep),
			},
			{
				Name:         "doctor",
				Usage:        "compare Python, modules, driver and CUDA versions across the hosts",
				Flags:        join(hostFlags(), doctorFlags(), syncFlags(), jsonFlag("print the report as a JSON document")),
				OnUsageError: onUsage,
				Action:       action(w.doctor, commands.Doctor),
			},
			{
				Name:      "ps",
				Usage:     "list the runs holding GPUs and ports on the hosts",
				ArgsUsage: "[--watch [INTERVAL]]",
				Flags: join(hostFlags(), jsonFlag("print the runs as a JSON document"), []cli.Flag{&cli.BoolFlag{Name: "watch", Aliases: []string{"w"},
					Usage: "list them again every INTERVAL (given after it; default 2s) until Ctrl-C, on the same connections"}}),
				OnUsageError: onUsage,
				Action:       action(w.ps, commands.Ps),
			},
			{
				Name:         "queue",
				Usage:        "list the runs waiting for GPUs on the hosts (--wait), in the order they will start, and why each waits",
				Flags:        join(hostFlags(), jsonFlag("print the queue as a JSON document"), slurmPlaceFlags()),
				OnUsageError: onUsage,
				Action:       action(w.queue, commands.Queue),
			},
			{
				Name:  "runs",
				Usage: "list the runs recorded here (tfhive-runs/): start, duration, result, exit code, --capture's metrics, command",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "log-root", Usage: "list the runs in `DIR` instead of tfhive-runs"},
					&cli.StringFlag{Name: "sort", Usage: "order by the metric `NAME` (numbers numerically) instead of start time"},
					&cli.BoolFlag{Name: "reverse", Aliases: []string{"r"}, Usage: "the other way round (runs without the metric stay last)"},
					&cli.BoolFlag{Name: "json", Usage: "print the runs as a JSON document"},
					&cli.StringFlag{Name: "sweep", Usage: "show sweep `NAME`'s table of trials instead"},
					&cli.BoolFlag{Name: "csv", Usage: "with --sweep: print the table as CSV"},
				},
				OnUsageError: onUsage,
				Action:       action(w.runs, commands.Runs),
			},
			{
				Name:      "report",
				Usage:     "write a run's or a sweep's report: one HTML file to open offline or mail (timeline, GPU use, metrics, summary)",
				ArgsUsage: "RUN_ID|SWEEP",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "log-root", Usage: "the run or sweep is in `DIR` instead of tfhive-runs"},
					&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write it to `FILE` (- for stdout) instead of report.html in its dir"},
				},
				OnUsageError: onUsage,
				Action:       action(w.report, commands.Report),
			},
			{
				Name:      "compare",
				Usage:     "write one HTML page that puts runs side by side: every run's metrics overlaid (by step or time), their parameters and results in a sortable table, the best marked; of a sweep, its trials coloured by a parameter",
				ArgsUsage: "RUN_ID RUN_ID…|SWEEP",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "log-root", Usage: "the runs or sweep are in `DIR` instead of tfhive-runs"},
					&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write it to `FILE` (- for stdout) instead of compare.html in the log root"},
					&cli.StringFlag{Name: "best", Usage: "mark the best run by `'METRIC min|max'` (default: the first --capture, lowest for a loss or an error)"},
					&cli.StringFlag{Name: "color-by", Usage: "colour a sweep's trials by its parameter `NAME` (default: the first --param)"},
				},
				OnUsageError: onUsage,
				Action:       action(w.compare, commands.Compare),
			},
			{
				Name:      "attach",
				Usage:     "follow a detached run's console from its start, then live, and exit with its code; Ctrl-C only detaches; with -H or --hosts, find the run on the hosts and become its keeper (of a sweep, of its trials still running)",
				ArgsUsage: "[RUN_ID]",
				Flags: join([]cli.Flag{logDirFlag(), &cli.Int64Flag{Name: "since", Usage: "start at this `BYTE` of the console instead of its start"},
					&cli.DurationFlag{Name: "grace", Value: 10 * time.Second, Usage: "with -H or --hosts: time `D` between SIGTERM and SIGKILL when stopping tasks"},
					&cli.DurationFlag{Name: "reconnect", Value: commands.DefaultReconnect, Usage: "with -H or --hosts: redial a host whose link drops for up to `D`"},
					notifyFlag("")},
					hostFlags(), captureFlags(), hangFlags(), []cli.Flag{colorFlag()}),
				OnUsageError: onUsage,
				Action:       action(w.follow, commands.Attach),
			},
			{
				Name:         "wait",
				Usage:        "wait for a run to end and exit with its code",
				ArgsUsage:    "[RUN_ID]",
				Flags:        []cli.Flag{logDirFlag()},
				OnUsageError: onUsage,
				Action:       action(w.follow, commands.Wait),
			},
			{
				Name:      "logs",
				Usage:     "print a detached run's console, or one task's log (--task); -f follows it until the run ends; with -H or --hosts, read the output from the hosts (a run started elsewhere)",
				ArgsUsage: "[RUN_ID]",
				Flags: join([]cli.Flag{logDirFlag(), &cli.StringFlag{Name: "task", Usage: "one task's log: `ROLE:INDEX`, as worker:1"},
					&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "go on printing what is added until the run ends (with -H or --hosts: until the task ends)"}},
					hostFlags(), []cli.Flag{colorFlag()}),
				OnUsageError: onUsage,
				Action:       action(w.follow, commands.Logs),
			},
			{
				Name:      "tensorboard",
				Usage:     "serve a run's (or a sweep's) TensorBoard here: started on the host that holds its model dir, forwarded over tfhive's SSH connection; Ctrl-C stops it",
				ArgsUsage: "RUN_ID|SWEEP",
				Flags: join([]cli.Flag{
					&cli.StringFlag{Name: "log-root", Usage: "the run or sweep is in `DIR` instead of tfhive-runs"},
					&cli.IntFlag{Name: "port", Usage: "serve it on this machine's 127.0.0.1:`P` (default 6006, or the next free)"},
					&cli.BoolFlag{Name: "detach", Usage: "leave it serving after this command returns, until tfhive tensorboard --stop"},
					&cli.BoolFlag{Name: "stop", Usage: "stop the run's detached TensorBoard, or without RUN_ID every one of the log root"},
				}, hostFlags()),
				OnUsageError: onUsage,
				Action:       action(w.tensorboard, commands.TensorBoard),
			},
			{
				Name:         "kill",
				Usage:        "stop a run's tasks on every host (yours; root: any); it ends cancelled; or a sweep",
				ArgsUsage:    "RUN_ID",
				Flags:        join(hostFlags(), []cli.Flag{&cli.DurationFlag{Name: "grace", Value: 10 * time.Second, Usage: "time `D` between SIGTERM and SIGKILL"}}),
				OnUsageError: onUsage,
				Action:       action(w.kill, commands.Kill),
			},
			{
				Name:      "reserve",
				Usage:     "book GPUs on a host for a time window: inside it only your runs get them, and another user's run that would overlap it is refused",
				ArgsUsage: "--gpus N | --gpu HOST:I,J [--from TIME] --for D [--note T]",
				Flags: join(hostFlags(), []cli.Flag{
					&cli.IntFlag{Name: "gpus", Usage: "reserve `N` GPUs on the first host that has them unreserved in the window"},
					&cli.StringSliceFlag{Name: "gpu", Usage: "reserve these GPUs: `HOST:I,J` (repeat for more hosts)"},
					&cli.StringFlag{Name: "from", Value: "now", Usage: "the window begins at `TIME`: now, now+30m, 14:00, tomorrow 09:00, 2026-12-03 09:00, RFC 3339"},
					&cli.StringFlag{Name: "for", Usage: "the window lasts `D`: 4h, 90m, 2d"},
					&cli.StringFlag{Name: "note", Usage: "say what it is for: `TEXT`, one line"},
				}),
				OnUsageError: onUsage,
				Action:       action(w.reserve, commands.Reserve),
			},
			{
				Name:         "reservations",
				Usage:        "list the reservations on the hosts that have not ended: who, GPUs, window, note (and files that grant nothing, and why)",
				Flags:        join(hostFlags(), jsonFlag("print the reservations as a JSON document")),
				OnUsageError: onUsage,
				Action:       action(w.reservations, commands.Reservations),
			},
			{
				Name:         "unreserve",
				Usage:        "remove a reservation (yours; root: any)",
				ArgsUsage:    "ID",
				Flags:        hostFlags(),
				OnUsageError: onUsage,
				Action:       action(w.unreserve, commands.Unreserve),
			},
			{
				Name:      "stacks",
				Usage:     "take every task's stacks of a run that looks stuck, on every host at once (py-spy, else /proc), into its log dir's stacks/",
				ArgsUsage: "RUN_ID",
				Flags: join(hostFlags(), []cli.Flag{logDirFlag(),
					&cli.BoolFlag{Name: "native", Usage: "the C frames too (py-spy dump --native)"}}),
				OnUsageError: onUsage,
				Action:       action(w.stacks, commands.Stacks),
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
				Name:  "usage",
				Usage: "GPU-hours held and idle per user or host, from the hosts' ledgers (the lab's weekly table)",
				Flags: join(hostFlags(), []cli.Flag{
					&cli.StringFlag{Name: "since", Value: "7d", Usage: "the window: `D` back from now (7d, 36h)"},
					&cli.StringFlag{Name: "by", Value: "user", Usage: "one row per `WHAT`: user or host"},
				}, jsonFlag("print the table as a JSON document")),
				OnUsageError: onUsage,
				Action:       action(w.usage, commands.Usage),
			},
			{
				Name:         "version",
				Usage:        "print the version (as --version does)",
				OnUsageError: onUsage,
				Action: func(c *cli.Context) error {
					if err := noArgs(c); err != nil {
						return err
					}
					printVersion(c)
					return nil
				},
			},
		},
	}
	for _, cmd := range app.Commands {
		cmd.CustomHelpTemplate = commandHelpTemplate
	}
	return app
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

// `tfhive version`, `tfhive --version` and `-v` print the same line, as
// git's and go's do: "tfhive version dev-0123456789ab".
func init() { cli.VersionPrinter = printVersion }

func printVersion(c *cli.Context) {
	fmt.Fprintf(c.App.Writer, "%s version %s\n", c.App.Name, c.App.Version)
}

func version() string { return commands.Version() }
