// Command tfhive starts distributed TensorFlow training on GPU hosts reached
// over SSH: hosts in, probe, plan, run, summary out. This file wires flags to
// the probe, schedule and launcher packages and maps errors to exit codes;
// nothing here is logic worth testing on its own.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	mrand "math/rand/v2"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/probe"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

func main() {
	os.Exit(Main(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

// Main runs tfhive with injectable streams and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	// Closing ends the goroutine below: Main may run many times in one
	// process (the tests), and signal.Stop guarantees no later sends.
	defer func() {
		signal.Stop(sigs)
		close(sigs)
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &signals{run: make(chan os.Signal, 4)}
	go func() {
		for sig := range sigs {
			s.deliver(sig, cancel)
		}
	}()
	// urfave/cli reports a help topic it cannot find only through
	// CommandNotFound, which returns nothing: the error waits here.
	var notFound error
	err := newApp(stdin, stdout, stderr, s, &notFound).RunContext(ctx, args)
	if err == nil {
		err = notFound
	}
	if errors.Is(err, context.Canceled) && s.last() == syscall.SIGTERM {
		err = &exitError{msg: "interrupted by SIGTERM", code: exitTerminated}
	}
	return report(stderr, err)
}

// signals routes SIGINT/SIGTERM: before tasks run they cancel the context
// (probing stops at once); once tasks run they go to the launcher, which
// stops the tasks gracefully and kills them on a second signal.
type signals struct {
	mu      sync.Mutex
	running bool
	lastSig os.Signal
	run     chan os.Signal
}

func (s *signals) deliver(sig os.Signal, cancel context.CancelFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastSig = sig
	if s.running {
		select {
		case s.run <- sig:
		default:
		}
		return
	}
	cancel()
}

// toContext makes signals cancel the context again (between attempts).
func (s *signals) toContext() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = false
}

// toLauncher hands later signals to the launcher; false if one already
// cancelled the run.
func (s *signals) toLauncher() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = true
	return s.lastSig == nil
}

func (s *signals) last() os.Signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastSig
}

// Exit codes, documented in README.md.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitNoGPUs      = 3
	exitUnreachable = 4
	exitInterrupted = 130
	exitTerminated  = 143
)

// exitError carries an exit code chosen by a command (e.g. a task's own).
type exitError struct {
	msg  string
	code int
}

func (e *exitError) Error() string { return e.msg }
func (e *exitError) ExitCode() int { return e.code }

type usageError struct{ msg, hint string }

func (e *usageError) Error() string { return e.msg }
func (e *usageError) ExitCode() int { return exitUsage }
func (e *usageError) Hint() string  { return e.hint }

func usagef(format string, a ...any) error { return &usageError{msg: fmt.Sprintf(format, a...)} }

// unreachableError is returned after output was printed, when some hosts
// could not be probed.
type unreachableError struct {
	bad, total int
	hints      []string
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("%d of %d hosts could not be reached", e.bad, e.total)
}
func (e *unreachableError) ExitCode() int     { return exitUnreachable }
func (e *unreachableError) Details() []string { return e.hints }

// report prints err in tfhive's one voice and picks the exit code.
func report(w io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	code := exitFailure
	var ec interface{ ExitCode() int }
	if errors.As(err, &ec) {
		code = ec.ExitCode()
	} else if errors.Is(err, context.Canceled) {
		code = exitInterrupted
		err = errors.New("interrupted")
	}
	fmt.Fprintf(w, "tfhive: error: %s\n", err)
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

func newApp(stdin io.Reader, stdout, stderr io.Writer, sigs *signals, notFound *error) *cli.App {
	app := &cli.App{
		Name:            "tfhive",
		Usage:           "start distributed TensorFlow training on GPU hosts over SSH",
		Version:         version(),
		Reader:          stdin,
		Writer:          stdout,
		ErrWriter:       stderr,
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
		CommandNotFound: func(c *cli.Context, name string) {
			if c.Command.Name == c.App.Name {
				*notFound = unknownCommand(c, name)
			} else {
				*notFound = &usageError{msg: fmt.Sprintf("unexpected argument %q", name), hint: "see `" + c.App.Name + " " + c.Command.Name + " --help`"}
			}
		},
		Commands: []*cli.Command{
			{
				Name:         "status",
				Usage:        "show every GPU on every host",
				Flags:        append(hostFlags(), statusFlags()...),
				OnUsageError: onUsage,
				Action:       func(c *cli.Context) error { return statusCmd(c, stdout, stderr) },
			},
			{
				Name:         "plan",
				Usage:        "show where every task would run, without starting anything",
				ArgsUsage:    "-- CMD [ARGS...]",
				Flags:        append(append(append(hostFlags(), jobFlags()...), &cli.BoolFlag{Name: "json", Usage: "print the plan as a JSON document"}), emitFlags()...),
				OnUsageError: onUsage,
				Action:       func(c *cli.Context) error { return planCmd(c, stdout, stderr) },
			},
			{
				Name:         "run",
				Usage:        "start the job on the hosts, stream its output, stop it when it is done",
				ArgsUsage:    "-- CMD [ARGS...]",
				Flags:        append(append(hostFlags(), jobFlags()...), runFlags()...),
				OnUsageError: onUsage,
				Action:       func(c *cli.Context) error { return runCmd(c, stdout, stderr, sigs) },
			},
			{
				Name:         "ps",
				Usage:        "list the runs holding GPUs and ports on the hosts",
				Flags:        append(hostFlags(), &cli.BoolFlag{Name: "json", Usage: "print the runs as a JSON document"}),
				OnUsageError: onUsage,
				Action:       func(c *cli.Context) error { return psCmd(c, stdout, stderr) },
			},
			{
				Name:         "kill",
				Usage:        "stop a run's tasks on every host (yours; root may stop any)",
				ArgsUsage:    "RUN_ID",
				Flags:        append(hostFlags(), &cli.DurationFlag{Name: "grace", Value: 10 * time.Second, Usage: "time between SIGTERM and SIGKILL"}),
				OnUsageError: onUsage,
				Action:       func(c *cli.Context) error { return killCmd(c, stdout, stderr) },
			},
			{
				Name:         "version",
				Usage:        "print the version",
				OnUsageError: onUsage,
				Action: func(c *cli.Context) error {
					if c.Args().Present() {
						return usagef("unexpected argument %q", c.Args().First())
					}
					fmt.Fprintln(stdout, "tfhive", version())
					return nil
				},
			},
		},
	}
	return app
}

// onUsage puts urfave/cli's (and package flag's) parse errors in tfhive's
// voice; they all mean bad usage, exit 2.
func onUsage(c *cli.Context, err error, _ bool) error {
	msg := strings.TrimPrefix(err.Error(), "flag: ")
	isRoot := c.Command.Name == c.App.Name
	help := c.App.Name + " --help"
	if !isRoot {
		help = c.App.Name + " " + c.Command.Name + " --help"
	}
	e := &usageError{msg: msg, hint: "see `" + help + "`"}
	// This message stays in package flag's words: the e2e tests (and
	// perhaps scripts) match it.
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		if isRoot && commandFlag(c.App, name) {
			e.hint = fmt.Sprintf("%s is a command's flag: put it after the command name", dashed(name))
		} else if near := closest(name, flagNames(c.Command.Flags)); near != "" {
			e.hint = fmt.Sprintf("did you mean %s?", dashed(near))
		}
		return e
	}
	if m := invalidValueRE.FindStringSubmatch(msg); m != nil {
		// "parse error" says nothing the value does not; the flag's kind
		// does.
		e.msg = fmt.Sprintf("invalid value %s for %s", m[1], dashed(m[2]))
		if m[3] != "parse error" {
			e.msg += ": " + m[3]
		}
		if kind := flagKind(c.Command.Flags, m[2]); kind != "" {
			e.hint = dashed(m[2]) + " takes " + kind
		}
		return e
	}
	if m := twoFormsRE.FindStringSubmatch(msg); m != nil {
		e.msg = fmt.Sprintf("%s and %s are the same flag", dashed(m[2]), dashed(m[1]))
		e.hint = "use one of them"
		return e
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		e.msg = fmt.Sprintf("flag %s needs a value", dashed(name))
	}
	return e
}

var (
	invalidValueRE = regexp.MustCompile(`^invalid (?:boolean )?value ("(?:[^"\\]|\\.)*") for (?:flag )?-(\S+): (.*)$`)
	twoFormsRE     = regexp.MustCompile(`^Cannot use two forms of the same flag: (\S+) (\S+)$`)
)

// dashed writes a flag name as it is typed: -H, --host.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

func flagNames(flags []cli.Flag) []string {
	var names []string
	for _, f := range flags {
		names = append(names, f.Names()...)
	}
	return names
}

func commandFlag(app *cli.App, name string) bool {
	for _, cmd := range app.Commands {
		if slices.Contains(flagNames(cmd.Flags), name) {
			return true
		}
	}
	return false
}

// flagKind names what a flag's value must look like, for the hint.
func flagKind(flags []cli.Flag, name string) string {
	for _, f := range flags {
		if !slices.Contains(f.Names(), name) {
			continue
		}
		switch f.(type) {
		case *cli.DurationFlag:
			return "a duration such as 500ms, 10s, 2m or 1h30m"
		case *cli.IntFlag:
			return "a whole number"
		case *cli.BoolFlag:
			return "no value, or =true / =false"
		}
	}
	return ""
}

// rootCmd runs when no command was named: help, or an unknown command.
// `help [COMMAND]` works although it is not listed.
func rootCmd(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) == 0 {
		return cli.ShowAppHelp(c)
	}
	if args[0] != "help" {
		return unknownCommand(c, args[0])
	}
	switch {
	case len(args) == 1:
		return cli.ShowAppHelp(c)
	case c.App.Command(args[1]) == nil:
		return unknownCommand(c, args[1])
	case len(args) > 2:
		return &usageError{msg: fmt.Sprintf("unexpected argument %q", args[2]), hint: "see `" + c.App.Name + " --help`"}
	}
	return cli.ShowCommandHelp(c, args[1])
}

func unknownCommand(c *cli.Context, name string) error {
	var names []string
	for _, cmd := range c.App.Commands {
		if !cmd.Hidden {
			names = append(names, cmd.Names()...)
		}
	}
	e := &usageError{msg: fmt.Sprintf("unknown command %q", name)}
	if near := closest(name, names); near != "" {
		e.hint = fmt.Sprintf("did you mean %q?", near)
	}
	return e
}

// closest returns the candidate a typo most likely meant, or "" when none
// is close: within two edits (a swap of neighbours counts as one), fewer
// edits than the word has letters, or the only candidate it begins.
func closest(word string, candidates []string) string {
	best, bestDist := "", 3
	for _, cand := range candidates {
		if d := editDistance(word, cand); d < bestDist && d < len([]rune(word)) {
			best, bestDist = cand, d
		}
	}
	if best != "" {
		return best
	}
	var prefixed []string
	for _, cand := range candidates {
		if len(word) >= 2 && strings.HasPrefix(cand, word) {
			prefixed = append(prefixed, cand)
		}
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	return ""
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and transpositions of adjacent letters.
func editDistance(a, b string) int {
	s, t := []rune(a), []rune(b)
	d := make([][]int, len(s)+1)
	for i := range d {
		d[i] = make([]int, len(t)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(s); i++ {
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(s)][len(t)]
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

func hostFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "host", Aliases: []string{"H"}, Usage: "`[user@]host[:port]` to use (repeatable or comma-separated); overrides --hosts"},
		&cli.StringFlag{Name: "hosts", EnvVars: []string{"TFHIVE_HOSTS"}, Usage: "hosts `FILE` (default ./hosts.yaml when it exists, else localhost without SSH)"},
		&cli.StringFlag{Name: "ssh-config", Usage: "ssh_config `FILE` to honour (default ~/.ssh/config)"},
		&cli.BoolFlag{Name: "accept-new-host-keys", Usage: "trust and record host keys not yet in known_hosts (trust on first use)"},
		&cli.DurationFlag{Name: "connect-timeout", Value: 10 * time.Second, Usage: "limit for TCP connect plus SSH handshake, per host"},
		&cli.DurationFlag{Name: "command-timeout", Value: 30 * time.Second, Usage: "limit for the probe (nvidia-smi) on each host"},
		&cli.IntFlag{Name: "parallel", Value: 64, Usage: "hosts dialled and probed at once"},
	}
}

func statusFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.BoolFlag{Name: "json", Usage: "print the status as a JSON document"},
		&cli.DurationFlag{Name: "watch", Usage: "refresh every `INTERVAL` (e.g. 2s) until interrupted, reusing connections"},
	}, availabilityFlags()...)
}

func runFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "env", Usage: "set `K=V` in every task, or K to pass this machine's value (repeatable)"},
		&cli.StringFlag{Name: "workdir", Usage: "remote `DIR` tasks start in (overrides the hosts file)"},
		&cli.StringFlag{Name: "setup", Usage: "shell `SNIPPET` run before each task (overrides the hosts file)"},
		&cli.StringFlag{Name: "log-dir", Usage: "where logs go (default tfhive-runs/RUN_ID)"},
		&cli.DurationFlag{Name: "grace", Value: 10 * time.Second, Usage: "time between SIGTERM and SIGKILL when stopping tasks"},
		&cli.DurationFlag{Name: "timeout", Usage: "stop everything after this long (exit 124)"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "show only tfhive's own lines and the summary"},
		&cli.BoolFlag{Name: "json", Usage: "print the summary as JSON on stdout (task output goes to stderr)"},
		&cli.DurationFlag{Name: "wait", Usage: "wait up to `D` for enough GPUs to free up instead of exiting 3"},
	}
}

// availabilityFlags decide which GPUs count as free, for status and plans.
func availabilityFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "max-util", Value: schedule.DefaultMaxUtilPct, Usage: "a GPU above this utilisation `PCT` is busy"},
		&cli.IntFlag{Name: "max-mem", Value: schedule.DefaultMaxMemMiB, Usage: "a GPU with more than this memory in use (`MiB`) is busy"},
		&cli.StringSliceFlag{Name: "exclude", Usage: "never use `host[:i,j]` (repeatable; e.g. gpu01:0,1 or gpu02)"},
	}
}

// jobFlags describe the job, shared by plan and run.
func jobFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "framework", Value: schedule.FrameworkTF, Usage: "tf (TF_CONFIG for ps, chief, workers, evaluator) or torch (MASTER_ADDR, RANK, WORLD_SIZE… as torchrun sets them; chief and workers are the ranks)"},
		&cli.IntFlag{Name: "ps", Usage: "parameter server tasks"},
		&cli.IntFlag{Name: "workers", Value: schedule.DefaultWorkers, Usage: "worker tasks"},
		&cli.BoolFlag{Name: "chief", Usage: "add a chief task"},
		&cli.BoolFlag{Name: "evaluator", Usage: "add an evaluator task (kept out of the training cluster)"},
		&cli.IntFlag{Name: "gpus-per-worker", Value: schedule.DefaultGPUsPerWorker, Usage: "GPUs for each worker, chief and evaluator (0 = CPU)"},
		&cli.IntFlag{Name: "gpus-per-ps", Usage: "GPUs for each parameter server"},
		&cli.StringFlag{Name: "strategy", Value: schedule.StrategySpread, Usage: "spread (round-robin across hosts) or pack (fill a host first)"},
		&cli.StringFlag{Name: "port-range", Value: schedule.DefaultPortRange, Usage: "`LO-HI` ports for tasks"},
		&cli.BoolFlag{Name: "tf-flags", Usage: "append --ps_hosts --worker_hosts --job_name --task_index (TF1 between-graph scripts)"},
		&cli.StringFlag{Name: "name", Usage: "run id (default: time-based and unique)"},
	}, availabilityFlags()...)
}

// fleetFromFlags validates every host-related flag and file; nothing is
// dialled yet.
func fleetFromFlags(c *cli.Context, stderr io.Writer, takesArgs, claimsOnly bool) (*probe.Fleet, error) {
	if c.Args().Present() && !takesArgs {
		return nil, usagef("unexpected argument %q", c.Args().First())
	}
	for _, d := range []string{"connect-timeout", "command-timeout"} {
		if c.Duration(d) <= 0 {
			return nil, usagef("--%s must be positive", d)
		}
	}
	if c.Int("parallel") < 1 {
		return nil, usagef("--parallel must be at least 1")
	}
	home, _ := os.UserHomeDir()
	hosts, err := probe.LoadHosts(probe.HostOptions{
		Flags:       c.StringSlice("host"),
		File:        c.String("hosts"),
		DefaultFile: "hosts.yaml",
		SSHConfig:   c.String("ssh-config"),
		Home:        home,
		LocalUser:   localUser(),
	})
	if err != nil {
		return nil, err
	}
	opts := probe.Options{
		SSH: probe.SSHOptions{
			ConnectTimeout:    c.Duration("connect-timeout"),
			AcceptNewHostKeys: c.Bool("accept-new-host-keys"),
			AgentSocket:       os.Getenv("SSH_AUTH_SOCK"),
			Warn: func(msg string) {
				prefix := "tfhive: warning: "
				if isTerminal(stderr) {
					prefix = "\r\x1b[K" + prefix // over the progress line
				}
				fmt.Fprintf(stderr, "%s%s\n", prefix, msg)
			},
		},
		CommandTimeout: c.Duration("command-timeout"),
		Parallel:       c.Int("parallel"),
		ClaimsOnly:     claimsOnly,
	}
	if isTerminal(stderr) && len(hosts) > 1 {
		opts.Progress = func(done, total int) {
			if done < total {
				fmt.Fprintf(stderr, "\rprobing hosts: %d/%d", done, total)
			} else {
				fmt.Fprint(stderr, "\r\x1b[K")
			}
		}
	}
	return probe.NewFleet(hosts, opts), nil
}

func availabilityFromFlags(c *cli.Context, hosts []inventory.Host) (schedule.Availability, error) {
	ex, err := schedule.ParseExclude(c.StringSlice("exclude"))
	if err != nil {
		return schedule.Availability{}, err
	}
	names := make([]string, len(hosts))
	for i, h := range hosts {
		names[i] = h.Name
	}
	if err := ex.Validate(names); err != nil {
		return schedule.Availability{}, err
	}
	a := schedule.Availability{MaxUtilPct: c.Int("max-util"), MaxMemMiB: c.Int("max-mem"), Exclude: ex}
	if a.MaxUtilPct < 0 || a.MaxUtilPct > 100 {
		return a, usagef("--max-util must be between 0 and 100")
	}
	if a.MaxMemMiB < 0 {
		return a, usagef("--max-mem must not be negative")
	}
	return a, nil
}

func statusCmd(c *cli.Context, stdout, stderr io.Writer) error {
	fleet, err := fleetFromFlags(c, stderr, false, false)
	if err != nil {
		return err
	}
	avail, err := availabilityFromFlags(c, fleet.Hosts)
	if err != nil {
		return err
	}
	if err := notNegative(c, "watch"); err != nil {
		return err
	}
	defer fleet.Close()
	ctx := c.Context

	show := func(w io.Writer) (inventory.Inventory, error) {
		inv := fleet.Probe(ctx)
		if ctx.Err() != nil {
			return inv, ctx.Err()
		}
		st := schedule.Classify(inv, avail)
		if c.Bool("json") {
			return inv, launcher.WriteStatusJSON(w, inv, st)
		}
		return inv, launcher.WriteStatusTable(w, inv, st)
	}

	every := c.Duration("watch")
	if every == 0 {
		inv, err := show(stdout)
		if err != nil {
			return err
		}
		return unreachable(inv)
	}
	tty := isTerminal(stdout)
	for {
		var buf strings.Builder
		if _, err := show(&buf); err != nil {
			if ctx.Err() != nil {
				return nil // Ctrl-C ends a watch normally
			}
			return err
		}
		if tty {
			// Redraw in place, like watch(1).
			fmt.Fprintf(stdout, "\x1b[H\x1b[2JEvery %s: tfhive status    %s\n\n%s", every, time.Now().Format("15:04:05"), buf.String())
		} else {
			fmt.Fprintf(stdout, "%s\n", buf.String())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}

// requestFromFlags builds and validates the job request before any host
// is touched.
func requestFromFlags(c *cli.Context, hosts []inventory.Host) (schedule.Request, error) {
	avail, err := availabilityFromFlags(c, hosts)
	if err != nil {
		return schedule.Request{}, err
	}
	lo, hi, err := schedule.ParsePortRange(c.String("port-range"))
	if err != nil {
		return schedule.Request{}, err
	}
	req := schedule.Request{
		Availability:  avail,
		Framework:     c.String("framework"),
		PS:            c.Int("ps"),
		Workers:       c.Int("workers"),
		Chief:         c.Bool("chief"),
		Evaluator:     c.Bool("evaluator"),
		GPUsPerWorker: c.Int("gpus-per-worker"),
		GPUsPerPS:     c.Int("gpus-per-ps"),
		Strategy:      c.String("strategy"),
		PortLo:        lo,
		PortHi:        hi,
		Command:       c.Args().Slice(),
		TFFlags:       c.Bool("tf-flags"),
		RunID:         c.String("name"),
	}
	if req.RunID == "" {
		req.RunID = newRunID(time.Now())
	}
	if len(req.Command) == 0 {
		return req, &usageError{msg: "no command given", hint: "put the training command after --, e.g. tfhive " + c.Command.Name + " --workers 2 -- python train.py"}
	}
	return req, req.Validate()
}

// newRunID is time-based, sorts by start time and does not collide between
// two runs started in the same second.
func newRunID(now time.Time) string {
	var b [3]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s-%x", now.Format("20060102-150405"), b)
}

func planCmd(c *cli.Context, stdout, stderr io.Writer) error {
	if handled, err := emitPlan(c, stdout); handled {
		return err
	}
	fleet, err := fleetFromFlags(c, stderr, true, false)
	if err != nil {
		return err
	}
	req, err := requestFromFlags(c, fleet.Hosts)
	if err != nil {
		return err
	}
	defer fleet.Close()
	plan, err := probeAndPlan(c.Context, fleet, req, stderr)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return launcher.WritePlanJSON(stdout, plan)
	}
	return launcher.WritePlan(stdout, plan)
}

func runCmd(c *cli.Context, stdout, stderr io.Writer, sigs *signals) error {
	// A run is a long, mostly idle supervisor of many streams whose CPU
	// goes on starting them: collecting garbage more often keeps its heap
	// near what is live, for a few milliseconds of CPU. GOGC, when set,
	// wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	fleet, err := fleetFromFlags(c, stderr, true, false)
	if err != nil {
		return err
	}
	req, err := requestFromFlags(c, fleet.Hosts)
	if err != nil {
		return err
	}
	env, err := parseEnv(c.StringSlice("env"))
	if err != nil {
		return err
	}
	if err := notNegative(c, "grace", "timeout", "wait"); err != nil {
		return err
	}
	logDir := c.String("log-dir")
	if logDir == "" {
		logDir = filepath.Join("tfhive-runs", req.RunID)
	}
	if err := checkLogDir(logDir, c.IsSet("log-dir")); err != nil {
		return err
	}
	defer fleet.Close()
	// Each host's probe session goes on as its first task's supervisor,
	// started before the plan is known: the task then starts without a
	// session of its own (two round trips, sshd's fork, a login shell).
	fleet.KeepSessions(launcher.SupervisorCommand)

	out := stdout
	if c.Bool("json") {
		out = stderr
	}
	console := launcher.NewConsole(out, isTerminal(out))
	opts := launcher.RunOptions{
		Env: env, Workdir: c.String("workdir"), Setup: c.String("setup"),
		LogDir: logDir, Grace: c.Duration("grace"), Timeout: c.Duration("timeout"),
		KeepAlive: fleet.KeepAlive, Parallel: c.Int("parallel"),
		Console: console, Quiet: c.Bool("quiet"), Signals: sigs.run,
		Hosts: map[string]inventory.Host{}, Execs: map[string]probe.Executor{},
	}
	for _, h := range fleet.Hosts {
		opts.Hosts[h.Name] = h
	}
	deadline := time.Now().Add(c.Duration("wait"))
	var sum *launcher.Summary
	for attempt := 1; ; attempt++ {
		opts.Plan, err = probeAndPlan(c.Context, fleet, req, stderr)
		if err == nil {
			fleet.KeepSpares(opts.Plan.Hosts())
			for i, h := range fleet.Hosts {
				opts.Execs[h.Name] = fleet.Executor(i)
			}
			if !sigs.toLauncher() {
				console.Close()
				return context.Canceled
			}
			sum, err = launcher.Run(c.Context, opts)
			sigs.toContext()
		}
		delay, retry := retryAfter(err, attempt, deadline)
		if !retry {
			break
		}
		left := ""
		if c.Duration("wait") > 0 {
			left = fmt.Sprintf(" (%s of --wait left)", max(time.Until(deadline), 0).Round(time.Second))
		}
		fmt.Fprintf(stderr, "tfhive: waiting: %s; trying again in %s%s\n", firstLine(err), delay.Round(100*time.Millisecond), left)
		select {
		case <-c.Context.Done():
			console.Close()
			return c.Context.Err()
		case <-time.After(delay):
		}
	}
	if cerr := console.Close(); err == nil {
		err = cerr
	}
	if sum == nil {
		return err
	}
	if c.Bool("json") {
		launcher.WriteSummaryJSON(stdout, sum)
	} else {
		launcher.WriteSummary(stdout, sum)
	}
	if err != nil {
		return err
	}
	if sum.ExitCode != 0 {
		return &exitError{msg: fmt.Sprintf("run %s %s: %s", sum.RunID, sum.Result, sum.Reason), code: sum.ExitCode}
	}
	return nil
}

// notNegative refuses negative durations; zero means "none" for each of
// these flags.
func notNegative(c *cli.Context, flags ...string) error {
	for _, f := range flags {
		if c.Duration(f) < 0 {
			return usagef("--%s must not be negative", f)
		}
	}
	return nil
}

// checkLogDir refuses, before any host is contacted, a log dir that run
// could not create or fill. It creates nothing: the launcher does, once
// tasks are about to start, so a run that ends earlier leaves no empty
// directory behind.
func checkLogDir(dir string, given bool) error {
	hint := "choose another --log-dir"
	if !given {
		hint = "give --log-dir DIR, or start tfhive in a directory you can write to"
	}
	bad := func(format string, a ...any) error {
		return &usageError{msg: "log dir " + dir + " " + fmt.Sprintf(format, a...), hint: hint}
	}
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return bad("is not a directory")
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return bad("cannot be read: %v", pathErr(err))
		}
		if len(entries) > 0 {
			if !given {
				hint = "choose another --name or --log-dir"
			}
			return bad("already exists and is not empty")
		}
		if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
			return bad("is not writable: %v", err)
		}
		return nil
	}
	// The launcher creates the missing directories below the nearest one
	// that exists: that one must be a directory it may write to.
	for p := dir; ; {
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return bad("cannot be created: %v", pathErr(err))
		}
		if _, lerr := os.Lstat(p); lerr == nil {
			return bad("cannot be created: %s is a symbolic link to nothing", p)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return bad("cannot be created: %v", pathErr(err))
		}
		p = parent
		fi, err = os.Stat(p)
		if err != nil {
			continue
		}
		if !fi.IsDir() {
			return bad("cannot be created: %s is not a directory", p)
		}
		if err := unix.Access(p, unix.W_OK|unix.X_OK); err != nil {
			return bad("cannot be created in %s: %v", p, err)
		}
		return nil
	}
}

// pathErr drops the operation and path an *fs.PathError repeats.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// maxClaimRetries bounds how often a run that lost claims to runs starting
// at the same moment plans again before giving up with exit 3.
const maxClaimRetries = 8

// retryAfter decides whether run tries again, and when: a claim lost to a
// run that started at the same moment is retried soon against fresh
// claims, after a random, growing delay (runs that lost to each other must
// not retry in lockstep and collide again); not enough GPUs is retried
// only under --wait, with backoff, until its deadline.
func retryAfter(err error, attempt int, deadline time.Time) (time.Duration, bool) {
	var conflict *launcher.ClaimConflictError
	var capacity *schedule.CapacityError
	left := time.Until(deadline)
	switch {
	case errors.As(err, &conflict) && attempt <= maxClaimRetries:
		ceiling := min(100*time.Millisecond<<attempt, 3*time.Second)
		return time.Duration(mrand.Int64N(int64(ceiling))), true
	case errors.As(err, &conflict), errors.As(err, &capacity):
		if left <= 0 {
			return 0, false
		}
		return min(time.Second<<min(attempt-1, 5), 30*time.Second, left), true
	}
	return 0, false
}

func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}

func psCmd(c *cli.Context, stdout, stderr io.Writer) error {
	fleet, err := fleetFromFlags(c, stderr, false, true)
	if err != nil {
		return err
	}
	defer fleet.Close()
	inv := fleet.Probe(c.Context)
	if err := c.Context.Err(); err != nil {
		return err
	}
	runs := launcher.Runs(inv)
	if c.Bool("json") {
		err = launcher.WriteRunsJSON(stdout, runs)
	} else {
		err = launcher.WriteRuns(stdout, runs, time.Now())
	}
	if err != nil {
		return err
	}
	return unreachable(inv)
}

func killCmd(c *cli.Context, stdout, stderr io.Writer) error {
	if c.NArg() != 1 {
		return &usageError{msg: "kill takes one run id", hint: "tfhive ps lists the runs holding GPUs"}
	}
	runID := c.Args().First()
	if c.Duration("grace") < 0 {
		return usagef("--grace must not be negative")
	}
	fleet, err := fleetFromFlags(c, stderr, true, true)
	if err != nil {
		return err
	}
	defer fleet.Close()
	inv := fleet.Probe(c.Context)
	if err := c.Context.Err(); err != nil {
		return err
	}
	var targets []launcher.RunOnHost
	var others []string
	execs := map[string]probe.Executor{}
	for _, r := range launcher.Runs(inv) {
		if r.RunID != runID {
			continue
		}
		for i, h := range fleet.Hosts {
			if h.Name != r.Host {
				continue
			}
			// Only your own runs; root may stop any. The user is the
			// holding processes' owner as the host's kernel says.
			if h.User != r.User && h.User != "root" {
				others = append(others, fmt.Sprintf("%s holds claims labelled %s on %s", orUnknown(r.User), runID, h.Name))
				continue
			}
			execs[h.Name] = fleet.Executor(i)
			targets = append(targets, r)
		}
	}
	if len(targets) == 0 {
		if err := unreachable(inv); err != nil {
			return err
		}
		if len(others) > 0 {
			return &exitError{msg: fmt.Sprintf("run %s is not yours to stop: %s; only they or root can stop it", runID, strings.Join(others, "; ")), code: exitFailure}
		}
		return &exitError{msg: fmt.Sprintf("no run %s holds GPUs or ports on these hosts", runID), code: exitFailure}
	}
	for _, o := range others {
		fmt.Fprintf(stderr, "tfhive: warning: %s; left alone\n", o)
	}
	var failed []string
	for _, res := range launcher.Kill(c.Context, targets, execs, c.Duration("grace"), c.Int("parallel")) {
		if res.Err != nil {
			failed = append(failed, res.Host+": "+res.Err.Error())
			continue
		}
		if res.Tasks == 0 {
			fmt.Fprintf(stdout, "tfhive: run %s on %s had already ended\n", runID, res.Host)
			continue
		}
		fmt.Fprintf(stdout, "tfhive: stopped run %s on %s (%s)\n", runID, res.Host, launcher.CountOf(res.Tasks, "task"))
	}
	if len(failed) > 0 {
		return &exitError{msg: "could not stop run " + runID + " everywhere: " + strings.Join(failed, "; "), code: exitFailure}
	}
	return unreachable(inv)
}

func orUnknown(user string) string {
	if user == "" {
		return "an unknown user"
	}
	return user
}

// parseEnv reads --env K=V and --env K (this machine's value). Nothing
// else from the local environment reaches the tasks.
func parseEnv(specs []string) (map[string]string, error) {
	env := map[string]string{}
	for _, s := range specs {
		k, v, hasValue := strings.Cut(s, "=")
		if !envNameRE.MatchString(k) {
			return nil, usagef("--env %q: %q is not a variable name", s, k)
		}
		if !hasValue {
			local, ok := os.LookupEnv(k)
			if !ok {
				return nil, &usageError{msg: fmt.Sprintf("--env %s: %s is not set here", k, k), hint: "write --env " + k + "=VALUE, or export it first"}
			}
			v = local
		}
		env[k] = v
	}
	return env, nil
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// probeAndPlan is the shared first half of plan and run: probe every host
// once, plan, and say which hosts the plan had to do without.
func probeAndPlan(ctx context.Context, fleet *probe.Fleet, req schedule.Request, stderr io.Writer) (*schedule.Plan, error) {
	inv := fleet.Probe(ctx)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// With no host reached there is no capacity to speak of: that is
	// exit 4 with each host's reason, not "not enough GPUs".
	if e, ok := unreachable(inv).(*unreachableError); ok && e.bad == e.total {
		return nil, e
	}
	plan, err := schedule.Make(inv, req)
	if err != nil {
		return nil, err
	}
	for _, h := range inv.Hosts {
		if h.Err != nil {
			fmt.Fprintf(stderr, "tfhive: warning: %s not used: %s\n", h.Name, h.Err.Message)
		}
	}
	return plan, nil
}

func unreachable(inv inventory.Inventory) error {
	e := &unreachableError{total: len(inv.Hosts)}
	for _, h := range inv.Hosts {
		if h.Err == nil {
			continue
		}
		e.bad++
		line := h.Name + ": " + h.Err.Message
		if h.Err.Hint != "" {
			line += " (hint: " + h.Err.Hint + ")"
		}
		e.hints = append(e.hints, line)
	}
	if e.bad == 0 {
		return nil
	}
	return e
}

func localUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
