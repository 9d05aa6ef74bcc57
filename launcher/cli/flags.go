package cli

import (
	"fmt"
	"slices"
	"time"

	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/urfave/cli/v2"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/commands"
	jobs "github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/schedule"
)

// wiring turns a command's flags into its options.
type wiring struct {
	commands.Streams
	sigs *jobs.Signals
}

// streams are the command's streams with its --color, for the commands
// that colour (colorFlag).
func (w wiring) streams(c *cli.Context) commands.Streams {
	s := w.Streams
	s.Color = c.String("color")
	return s
}

func (w wiring) status(c *cli.Context) (commands.StatusOptions, error) {
	return commands.StatusOptions{
		Streams: w.streams(c), Hosts: hostOptions(c), Availability: availability(c),
		JSON: c.Bool("json"), Watch: c.Duration("watch"), Slurm: slurmOptions(c),
	}, noArgs(c)
}

func (w wiring) top(c *cli.Context) (commands.TopOptions, error) {
	return commands.TopOptions{
		Streams: w.streams(c), Stdin: c.App.Reader, Hosts: hostOptions(c), Availability: availability(c),
		Interval: c.Duration("interval"), Grace: c.Duration("grace"), LogRoot: c.String("log-root"),
	}, noArgs(c)
}

func (w wiring) plan(c *cli.Context) (commands.PlanOptions, error) {
	o := commands.PlanOptions{Streams: w.Streams, Hosts: hostOptions(c), Job: job(c), JSON: c.Bool("json"), Emit: emitOptions(c)}
	return o, torchrunFlags(c, &o.Job)
}

// torchrunFlags maps torchrun's --nnodes N and --nproc-per-node K onto j
// for --framework torch: N×K ranks (the chief one of them), packed K to a
// host on exactly N hosts (schedule.Request.RanksPerHost). Where they do
// not map (TensorFlow, with --workers) they are refused, naming tfhive's
// words.
func torchrunFlags(c *cli.Context, j *commands.Job) error {
	if !c.IsSet("nnodes") && !c.IsSet("nproc-per-node") {
		return nil
	}
	nodes, per := 1, 1 // torchrun's defaults
	if c.IsSet("nnodes") {
		nodes = c.Int("nnodes")
	}
	if c.IsSet("nproc-per-node") {
		per = c.Int("nproc-per-node")
	}
	if nodes < 1 || per < 1 || nodes > 1<<12 || per > 1<<12 {
		return &commands.UsageError{Msg: fmt.Sprintf("--nnodes %d --nproc-per-node %d: each must be 1 to 4096", nodes, per)}
	}
	if nodes*per > schedule.MaxTasks {
		return &commands.UsageError{Msg: fmt.Sprintf("--nnodes %d --nproc-per-node %d is %d ranks: at most %d", nodes, per, nodes*per, schedule.MaxTasks)}
	}
	if j.Framework != schedule.FrameworkTorch {
		return &commands.UsageError{Msg: "--nnodes and --nproc-per-node are torchrun's: they need --framework torch",
			Fix: fmt.Sprintf("add --framework torch, or give --workers %d", nodes*per)}
	}
	if c.IsSet("workers") {
		return &commands.UsageError{Msg: "--workers and --nnodes/--nproc-per-node both count the ranks; give one",
			Fix: fmt.Sprintf("--nnodes %d --nproc-per-node %d is %d ranks", nodes, per, nodes*per)}
	}
	j.Workers, j.RanksPerHost = nodes*per, per
	if j.Chief {
		j.Workers-- // the chief is rank 0, one of the N×K
	}
	if !c.IsSet("strategy") {
		j.Strategy = schedule.StrategyPack
	}
	return nil
}

func (w wiring) run(c *cli.Context) (commands.RunOptions, error) {
	o := commands.RunOptions{
		Streams: w.streams(c), Hosts: hostOptions(c), Job: job(c),
		Env: c.StringSlice("env"), Workdir: c.String("workdir"), Setup: c.String("setup"), LogDir: c.String("log-dir"),
		Grace: c.Duration("grace"), Timeout: c.Duration("timeout"), Wait: c.Duration("wait"),
		Reconnect: c.Duration("reconnect"), Detach: c.Bool("detach"),
		Unattended: unattended(c),
		Quiet:      c.Bool("quiet"), JSON: c.Bool("json"), Signals: w.sigs,
		Check: c.Bool("check"), Imports: c.StringSlice("import"),
		Capture: c.StringSlice("capture"), CaptureFrom: c.String("capture-from"),
		Sample: c.Duration("sample"), IdleStop: c.Duration("idle-stop"),
		Restarts: c.Int("restarts"), RestartOn: c.String("restart-on"), RestartBackoff: c.Duration("restart-backoff"),
		Notify:     c.StringSlice("notify"),
		StopSignal: c.String("stop-signal"), Requeue: c.Bool("requeue"), RequeueSet: c.IsSet("requeue"), RequeueOn: c.String("requeue-on"),
		HangAfter: c.Duration("hang-after"), OnHang: c.String("on-hang"), HangNative: c.Bool("hang-native"),
	}
	o.Slurm = slurmOptions(c)
	return o, torchrunFlags(c, &o.Job)
}

// sweep is the run flags every trial gets, and the sweep's own.
func (w wiring) sweep(c *cli.Context) (commands.SweepOptions, error) {
	r, err := w.run(c)
	return commands.SweepOptions{
		Run: r, Params: c.StringSlice("param"), Random: c.Int("random"), Seed: c.Int64("seed"),
		MaxParallel: c.Int("max-parallel"), MaxFailures: c.Int("max-failures"),
		Sort: c.String("sort"), Reverse: c.Bool("reverse"), CSV: c.Bool("csv"),
	}, err
}

// sweepFlags are `tfhive sweep`'s own.
func sweepFlags() []cli.Flag {
	const cat = "sweep"
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "param", Category: cat, Usage: "a parameter and its values, `NAME=V1,V2,...`: {NAME} in the command and $NAME in the tasks (repeatable: the grid of all combinations)"},
		&cli.IntFlag{Name: "random", Category: cat, Usage: "run `N` combinations of the grid picked at random (see --seed)"},
		&cli.Int64Flag{Name: "seed", Category: cat, Usage: "with --random: the `S` that picks them (the same S, the same trials)"},
		&cli.IntFlag{Name: "max-parallel", Category: cat, Usage: "run at most `K` trials at once (default: as many as the hosts' GPUs fit)"},
		&cli.IntFlag{Name: "max-failures", Category: cat, Usage: "start no more trials once `N` have failed (default: run them all)"},
		&cli.StringFlag{Name: "sort", Category: cat, Usage: "order the table by the --capture'd metric `NAME` (numbers numerically)"},
		&cli.BoolFlag{Name: "reverse", Category: cat, Aliases: []string{"r"}, Usage: "with --sort: the other way round"},
		&cli.BoolFlag{Name: "csv", Category: cat, Usage: "print the table as CSV"},
	}
}

func (w wiring) gc(c *cli.Context) (commands.GCOptions, error) {
	o := commands.GCOptions{Streams: w.Streams, Hosts: hostOptions(c), DryRun: c.Bool("dry-run"), JSON: c.Bool("json")}
	// Given, 0 included, or not: 0 is not the default (a week of run
	// files).
	if c.IsSet("older-than") {
		d := c.Duration("older-than")
		o.OlderThan = &d
	}
	return o, noArgs(c)
}

func (w wiring) doctor(c *cli.Context) (commands.DoctorOptions, error) {
	return commands.DoctorOptions{
		Streams: w.Streams, Hosts: hostOptions(c), JSON: c.Bool("json"),
		Workdir: c.String("workdir"), Setup: c.String("setup"), Imports: c.StringSlice("import"),
		Sync: c.String("sync"), SyncExclude: c.StringSlice("sync-exclude"),
	}, noArgs(c)
}

func (w wiring) ps(c *cli.Context) (commands.PsOptions, error) {
	o := commands.PsOptions{Streams: w.Streams, Hosts: hostOptions(c), JSON: c.Bool("json")}
	if !c.Bool("watch") {
		return o, noArgs(c)
	}
	// --watch [INTERVAL], as watch -n: the one word after it, if any.
	o.Watch = commands.DefaultPsWatch
	switch args := c.Args().Slice(); {
	case len(args) > 1:
		return o, &commands.UsageError{Msg: fmt.Sprintf("unexpected argument %q", args[1])}
	case len(args) == 1:
		d, err := time.ParseDuration(args[0])
		if err != nil || d < 100*time.Millisecond {
			return o, &commands.UsageError{Msg: fmt.Sprintf("--watch %q: not an interval of 100ms or more", args[0]), Fix: "e.g. tfhive ps --watch 5s"}
		}
		o.Watch = d
	}
	return o, nil
}

func (w wiring) queue(c *cli.Context) (commands.QueueOptions, error) {
	return commands.QueueOptions{Streams: w.Streams, Hosts: hostOptions(c), JSON: c.Bool("json"), Slurm: slurmOptions(c)}, noArgs(c)
}

func (w wiring) runs(c *cli.Context) (commands.RunsOptions, error) {
	return commands.RunsOptions{Streams: w.Streams, LogRoot: c.String("log-root"), JSON: c.Bool("json"),
		Sort: c.String("sort"), Reverse: c.Bool("reverse"), Sweep: c.String("sweep"), CSV: c.Bool("csv")}, noArgs(c)
}

func (w wiring) report(c *cli.Context) (commands.ReportOptions, error) {
	o := commands.ReportOptions{Streams: w.Streams, LogRoot: c.String("log-root"), Name: c.Args().First(), Out: c.String("output")}
	if c.NArg() != 1 {
		return o, &commands.UsageError{Msg: "report takes one run id or sweep name (tfhive runs lists the runs)"}
	}
	return o, nil
}

func (w wiring) tensorboard(c *cli.Context) (commands.TensorBoardOptions, error) {
	o := commands.TensorBoardOptions{Streams: w.Streams, Hosts: hostOptions(c), LogRoot: c.String("log-root"),
		Name: c.Args().First(), Port: c.Int("port"), Detach: c.Bool("detach"), Stop: c.Bool("stop")}
	if c.NArg() > 1 || c.NArg() == 0 && !o.Stop {
		return o, &commands.UsageError{Msg: "tensorboard takes one run id or sweep name (tfhive runs lists the runs)"}
	}
	if c.IsSet("port") && o.Port == 0 {
		return o, &commands.UsageError{Msg: "--port 0: TensorBoard cannot choose its own port here; give one, or leave --port out for 6006 or the next free"}
	}
	return o, nil
}

func (w wiring) compare(c *cli.Context) (commands.CompareOptions, error) {
	o := commands.CompareOptions{Streams: w.Streams, LogRoot: c.String("log-root"), Names: c.Args().Slice(), Out: c.String("output"),
		Best: c.String("best"), ColorBy: c.String("color-by")}
	if c.NArg() == 0 {
		return o, &commands.UsageError{Msg: "compare takes run ids, or one sweep's name", Fix: "tfhive runs lists the runs"}
	}
	return o, nil
}

func (w wiring) kill(c *cli.Context) (commands.KillOptions, error) {
	o := commands.KillOptions{Streams: w.Streams, Hosts: hostOptions(c), RunID: c.Args().First(), Grace: c.Duration("grace")}
	if c.NArg() != 1 {
		return o, &commands.UsageError{Msg: "kill takes one run id", Fix: "tfhive ps lists the runs holding GPUs"}
	}
	return o, nil
}

// reserve is `tfhive reserve`'s options.
func (w wiring) reserve(c *cli.Context) (commands.ReserveOptions, error) {
	o := commands.ReserveOptions{Streams: w.Streams, Hosts: hostOptions(c), GPUs: c.Int("gpus"), GPU: c.StringSlice("gpu"),
		From: c.String("from"), For: c.String("for"), Note: c.String("note")}
	return o, noArgs(c)
}

func (w wiring) reservations(c *cli.Context) (commands.ReservationsOptions, error) {
	return commands.ReservationsOptions{Streams: w.Streams, Hosts: hostOptions(c), JSON: c.Bool("json")}, noArgs(c)
}

func (w wiring) unreserve(c *cli.Context) (commands.UnreserveOptions, error) {
	o := commands.UnreserveOptions{Streams: w.Streams, Hosts: hostOptions(c), ID: c.Args().First()}
	if c.NArg() != 1 {
		return o, &commands.UsageError{Msg: "unreserve takes one reservation id", Fix: "tfhive reservations lists them"}
	}
	return o, nil
}

// stacks is `tfhive stacks`'s options: one run id.
func (w wiring) stacks(c *cli.Context) (commands.StacksOptions, error) {
	o := commands.StacksOptions{Streams: w.Streams, Hosts: hostOptions(c), RunID: c.Args().First(), LogDir: c.String("log-dir"), Native: c.Bool("native")}
	if c.NArg() != 1 {
		return o, &commands.UsageError{Msg: "stacks takes one run id", Fix: "tfhive ps lists the runs holding GPUs"}
	}
	return o, nil
}

// follow is wait's, attach's and logs' options: one run id.
func (w wiring) follow(c *cli.Context) (commands.FollowOptions, error) {
	o := commands.FollowOptions{Streams: w.streams(c), RunID: c.Args().First(), LogDir: c.String("log-dir"),
		Task: c.String("task"), Follow: c.Bool("follow"), Since: c.Int64("since")}
	if c.Command.Name == "logs" {
		o.Hosts, o.FromHosts = hostOptions(c), c.IsSet("host") || c.IsSet("hosts") || c.IsSet("hostfile")
	}
	if c.Command.Name == "attach" {
		o.Hosts, o.Grace, o.Reconnect = hostOptions(c), c.Duration("grace"), c.Duration("reconnect")
		o.Adopt = c.IsSet("host") || c.IsSet("hosts") || c.IsSet("hostfile")
		o.Capture, o.CaptureFrom = c.StringSlice("capture"), c.String("capture-from")
		o.HangAfter, o.OnHang, o.HangNative = c.Duration("hang-after"), c.String("on-hang"), c.Bool("hang-native")
		o.Notify = c.StringSlice("notify")
		if o.Grace < 0 || o.Reconnect <= 0 {
			return o, &commands.UsageError{Msg: "--grace must not be negative, --reconnect must be positive"}
		}
	}
	if c.NArg() > 1 {
		return o, &commands.UsageError{Msg: fmt.Sprintf("%s takes one run id; unexpected argument %q", c.Command.Name, c.Args().Get(1)),
			Fix: "tfhive ps lists the runs holding GPUs; tfhive runs lists this directory's"}
	}
	if o.Since < 0 {
		return o, &commands.UsageError{Msg: "--since must not be negative"}
	}
	return o, nil
}

func noArgs(c *cli.Context) error {
	if c.Args().Present() {
		return &commands.UsageError{Msg: fmt.Sprintf("unexpected argument %q", c.Args().First())}
	}
	return nil
}

func hostOptions(c *cli.Context) commands.HostOptions {
	return commands.HostOptions{
		Hosts:             c.StringSlice("host"),
		File:              c.String("hosts"),
		Hostfile:          c.String("hostfile"),
		SSHConfig:         c.String("ssh-config"),
		AcceptNewHostKeys: c.Bool("accept-new-host-keys"),
		Quiet:             c.Bool("quiet"), // run's -q, as ssh -q
		ConnectTimeout:    c.Duration("connect-timeout"),
		CommandTimeout:    c.Duration("command-timeout"),
		Parallel:          c.Int("parallel"),
	}
}

func availability(c *cli.Context) commands.Availability {
	return commands.Availability{MaxUtilPct: c.Int("max-util"), MaxMemMiB: c.Int("max-mem"), Exclude: c.StringSlice("exclude")}
}

func job(c *cli.Context) commands.Job {
	return commands.Job{
		Availability:  availability(c),
		Framework:     c.String("framework"),
		PS:            c.Int("ps"),
		Workers:       c.Int("workers"),
		Chief:         c.Bool("chief"),
		Evaluator:     c.Bool("evaluator"),
		GPUsPerWorker: c.Int("gpus-per-worker"),
		GPUsPerPS:     c.Int("gpus-per-ps"),
		Strategy:      c.String("strategy"),
		PortRange:     c.String("port-range"),
		TFFlags:       c.Bool("tf-flags"),
		NIC:           c.String("nic"),
		Priority:      c.String("priority"),
		Name:          c.String("name"),
		Command:       c.Args().Slice(),
		Sync:          c.String("sync"),
		SyncExclude:   c.StringSlice("sync-exclude"),
	}
}

func join(lists ...[]cli.Flag) []cli.Flag { return slices.Concat(lists...) }

func jsonFlag(usage string) []cli.Flag { return []cli.Flag{&cli.BoolFlag{Name: "json", Usage: usage}} }

// colorFlag is --color, for the commands that colour: status's states,
// the task prefixes of run, attach and logs.
func colorFlag() cli.Flag {
	return &cli.StringFlag{Name: "color", Category: catOutput, Value: "auto", Usage: "`WHEN` to colour the output: auto (on a terminal, unless NO_COLOR is set or TERM=dumb), always or never"}
}

func hostFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "host", Category: catHosts, Aliases: []string{"H"}, Usage: "`[user@]host[:port]` to use (repeatable or comma-separated); overrides --hosts"},
		&cli.StringFlag{Name: "hosts", Category: catHosts, EnvVars: []string{"TFHIVE_HOSTS"}, Usage: "hosts `FILE` (default ./hosts.yaml, else ~/.config/tfhive/hosts.yaml, else this machine)"},
		&cli.StringFlag{Name: "hostfile", Category: catHosts, Usage: "hosts from an MPI/DeepSpeed hostfile `FILE` (lines: host slots=N; slots cap the GPUs used there)"},
		&cli.StringFlag{Name: "ssh-config", Category: catHosts, Usage: "ssh_config `FILE` to honour (default: the hosts file's ssh_config, else ~/.ssh/config)"},
		&cli.BoolFlag{Name: "accept-new-host-keys", Category: catHosts, Usage: "trust and record host keys not yet in known_hosts (trust on first use)"},
		&cli.DurationFlag{Name: "connect-timeout", Category: catHosts, Value: 10 * time.Second, Usage: "limit `D` for TCP connect plus SSH handshake, per host"},
		&cli.DurationFlag{Name: "command-timeout", Category: catHosts, Value: 30 * time.Second, Usage: "limit `D` for the probe (nvidia-smi) on each host"},
		// 256: a few hundred hosts in one wave (each wave costs a login's
		// round trips), while the burst of handshakes, descriptors and
		// memory stays bounded (`tfhive help hosts`, SSH).
		&cli.IntFlag{Name: "parallel", Category: catHosts, Value: 256, Usage: "`N` hosts dialled and probed at once"},
	}
}

func statusFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "json", Usage: "print the status as a JSON document"},
		&cli.DurationFlag{Name: "watch", Usage: "refresh every `INTERVAL` (e.g. 2s) until interrupted, reusing connections"},
	}
}

func topFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "interval", Usage: "refresh every `D` (default 2s; not on a terminal: print once, or every D when given)"},
		&cli.DurationFlag{Name: "grace", Value: 10 * time.Second, Usage: "time `D` between SIGTERM and SIGKILL when x stops a run"},
		&cli.StringFlag{Name: "log-root", Usage: "the `DIR` holding your runs' log dirs (default tfhive-runs)"},
	}
}

// notifyFlag is --notify: run's, attach -H's, rerun's.
func notifyFlag(cat string) cli.Flag {
	return &cli.StringSliceFlag{Name: "notify", Category: cat, Usage: "tell `TARGET` when the run ends, idles or hangs: an https:// (or http://) webhook (Slack, Mattermost) or a local command (repeatable; default: the hosts file's notify:; none: not at all)"}
}

func runFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringSliceFlag{Name: "env", Category: catJob, Usage: "set `K=V` in every task, or K to pass this machine's value (repeatable)"},
		&cli.StringFlag{Name: "workdir", Category: catJob, Usage: "remote `DIR` tasks start in (overrides the hosts file)"},
		&cli.StringFlag{Name: "setup", Category: catJob, Usage: "shell `SNIPPET` run before each task (overrides the hosts file)"},
		&cli.StringFlag{Name: "log-dir", Category: catRun, Usage: "the run's log `DIR` (default tfhive-runs/RUN_ID)"},
		&cli.DurationFlag{Name: "grace", Category: catRun, Value: 10 * time.Second, Usage: "time `D` between the stop signal and SIGKILL whenever tfhive stops tasks (preemption, kill, timeout), at most 30m"},
		&cli.StringFlag{Name: "stop-signal", Category: catRun, Value: "SIGTERM", Usage: "the signal `SIG` every stop sends first (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2)"},
		&cli.BoolFlag{Name: "requeue", Category: catRun, Usage: "once preempted, go back to the queue at the run's old place and start again, tasks seeing TFHIVE_RESUME=1 (the default with --wait; --requeue=false: never)"},
		&cli.StringFlag{Name: "requeue-on", Category: catRun, Usage: "requeue the run as --requeue does when a task exits with one of these `CODES` (85 or 85,86: a task that saved its checkpoint asks)"},
		&cli.DurationFlag{Name: "timeout", Category: catRun, Usage: "stop everything after `D` (exit 124)"},
		&cli.DurationFlag{Name: "reconnect", Category: catRun, Value: commands.DefaultReconnect, Usage: "redial a host whose link drops for up to `D`, its tasks running on (0: a lost link loses its tasks)"},
		&cli.BoolFlag{Name: "detach", Category: catRun, Aliases: []string{"d"}, Usage: "return once every task has started; a keeper process goes on with the run (see tfhive attach, wait, logs)"},
		&cli.DurationFlag{Name: "unattended", Category: catRun, Value: commands.DefaultUnattended, Usage: "with --detach: stop the tasks once no keeper has been heard from for `D`"},
		&cli.BoolFlag{Name: "quiet", Category: catRun, Aliases: []string{"q"}, Usage: "show only tfhive's own lines and the summary"},
		&cli.BoolFlag{Name: "json", Category: catRun, Usage: "print the summary as JSON on stdout (task output goes to stderr)"},
		&cli.DurationFlag{Name: "wait", Category: catPlacement, Usage: "wait up to `D` for enough GPUs to free up instead of exiting 3; once preempted, requeue (--requeue)"},
		&cli.BoolFlag{Name: "check", Category: catRun, Usage: "check the hosts as tfhive doctor does before claiming anything; refuse to start if they differ (exit 2)"},
		importFlag(catRun),
		&cli.DurationFlag{Name: "idle-stop", Category: catRun, Usage: "stop the run (idle-stopped, exit 6) once its GPUs sat idle for `D`, decided on each host; stricter than a host's idle policy only (tfhive help idle)"},
		&cli.DurationFlag{Name: "sample", Category: catRun, Value: launcher.DefaultSample, Usage: "sample the tasks' GPUs (utilisation, memory) every `D` for the summary and gpu-usage.csv (0: never)"},
		&cli.IntFlag{Name: "restarts", Category: catRun, Usage: "restart a failed task up to `N` times, under the same claims (TF workers alone, everything else with every task)"},
		&cli.StringFlag{Name: "restart-on", Category: catRun, Usage: "restart only on these exit `CODES` or a lost host, as 1-127,137,lost (default: any failure)"},
		&cli.DurationFlag{Name: "restart-backoff", Category: catRun, Value: lifecycle.DefaultRestartBackoff, Usage: "wait `D` before a task's first restart, doubling with each, up to 5m"},
		notifyFlag(catRun),
	}, append(captureFlags(), hangFlags()...)...)
}

// hangFlags take the tasks' stacks when the run goes silent, for run and
// for attach -H (which keeps the run from then on).
func hangFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "hang-after", Category: catRun, Usage: "once no task has printed anything for `D`, take every task's stacks into the log dir's stacks/ and warn (see --on-hang; tfhive help hangs)"},
		&cli.StringFlag{Name: "on-hang", Category: catRun, Value: commands.OnHangWarn, Usage: "what --hang-after does then: `warn`, or stop the run (result hung, exit 7)"},
		&cli.BoolFlag{Name: "hang-native", Category: catRun, Usage: "with --hang-after: the stacks' C frames too (py-spy dump --native)"},
	}
}

// captureFlags record values from the tasks' output in the summary, for
// run and for attach -H (which keeps the run from then on).
func captureFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "capture", Category: catRun, Usage: "record `NAME=REGEX`: the last match of REGEX's first group in each task's output, as NAME in summary.json (repeatable; a group named step is the value's step, for the report)"},
		&cli.StringFlag{Name: "capture-from", Category: catRun, Usage: "match --capture in this `TASK`'s output only, as worker:0"},
	}
}

// doctorFlags are `tfhive doctor`'s own; --import is also run --check's.
func doctorFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "workdir", Usage: "remote `DIR` to check in (overrides the hosts file)"},
		&cli.StringFlag{Name: "setup", Usage: "shell `SNIPPET` to run first (overrides the hosts file)"},
		importFlag(""),
	}
}

// unattended is --unattended's value: its default only with --detach, so
// that a foreground run given none is not refused.
func unattended(c *cli.Context) time.Duration {
	if c.IsSet("unattended") || c.Bool("detach") {
		return c.Duration("unattended")
	}
	return 0
}

func logDirFlag() cli.Flag {
	return &cli.StringFlag{Name: "log-dir", Usage: "the run's log `DIR`, when not tfhive-runs/RUN_ID"}
}

// importFlag is --import, in category (run's run control, doctor's own).
func importFlag(category string) cli.Flag {
	return &cli.StringSliceFlag{Name: "import", Category: category, Usage: "also import Python `MODULE` and show its version (repeatable)"}
}

// availabilityFlags decide which GPUs count as free, for status and plans.
func availabilityFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "max-util", Category: catPlacement, Value: schedule.DefaultMaxUtilPct, Usage: "a GPU above this utilisation `PCT` is busy"},
		&cli.IntFlag{Name: "max-mem", Category: catPlacement, Value: schedule.DefaultMaxMemMiB, Usage: "a GPU with more than this memory in use (`MiB`) is busy"},
		&cli.StringSliceFlag{Name: "exclude", Category: catPlacement, Usage: "never use `host[:i,j]` (repeatable; e.g. gpu01:0,1 or gpu02)"},
	}
}

// jobFlags describe the job, shared by plan and run.
func jobFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.IntFlag{Name: "workers", Category: catJob, Value: schedule.DefaultWorkers, Usage: "`N` worker tasks"},
		&cli.IntFlag{Name: "ps", Category: catJob, Usage: "`N` parameter server tasks"},
		&cli.BoolFlag{Name: "chief", Category: catJob, Usage: "add a chief task"},
		&cli.BoolFlag{Name: "evaluator", Category: catJob, Usage: "add an evaluator task (kept out of the training cluster)"},
		&cli.IntFlag{Name: "gpus-per-worker", Category: catJob, Value: schedule.DefaultGPUsPerWorker, Usage: "`N` GPUs for each worker, chief and evaluator (0: CPU only)"},
		&cli.IntFlag{Name: "gpus-per-ps", Category: catJob, Usage: "`N` GPUs for each parameter server"},
		// torchrun's words, for those who look for them: refused with
		// tfhive's equivalent (torchrunFlags).
		&cli.IntFlag{Name: "nnodes", Category: catJob, Usage: "torchrun's `N` hosts, with --framework torch: N×K ranks on exactly N hosts"},
		&cli.IntFlag{Name: "nproc-per-node", Category: catJob, Usage: "torchrun's `K` ranks per host, with --framework torch: each host used holds exactly K (packed)"},
		&cli.StringFlag{Name: "framework", Category: catJob, Value: schedule.FrameworkTF, Usage: "`FRAMEWORK`: tf (TF_CONFIG for ps, chief, workers, evaluator) or torch (MASTER_ADDR, RANK, WORLD_SIZE… as torchrun sets them; chief and workers are the ranks)"},
		&cli.BoolFlag{Name: "tf-flags", Category: catJob, Usage: "append --ps_hosts --worker_hosts --job_name --task_index (TF1 between-graph scripts)"},
		&cli.StringFlag{Name: "name", Category: catJob, Usage: "the run `ID` (default: time-based and unique)"},
		&cli.StringFlag{Name: "strategy", Category: catPlacement, Value: schedule.StrategySpread, Usage: "`HOW`: spread (round-robin across hosts) or pack (fill a host first)"},
		&cli.StringFlag{Name: "port-range", Category: catPlacement, Value: schedule.DefaultPortRange, Usage: "ports `LO-HI` for the tasks"},
		&cli.StringFlag{Name: "priority", Category: catPlacement, Value: schedule.PriorityNormal, Usage: "`LEVEL`: low, normal or high, the order among runs waiting for GPUs (--wait), within what each host's policy allows"},
		&cli.StringFlag{Name: "nic", Category: catPlacement, Usage: "`NAME` of the interface that carries the tasks' traffic on every host, or auto to pick one per host (default: the hosts' cluster addresses, no interface set)"},
	}, availabilityFlags()...)
}

// syncFlags send a directory to every host used (plan says what would be
// sent; doctor sends it to every host and checks there).
func syncFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "sync", Category: catJob, Usage: "make local `DIR`'s content present on every host used (~/.cache/tfhive/code/HASH there), the tasks' default workdir and {code_dir}"},
		&cli.StringSliceFlag{Name: "sync-exclude", Category: catJob, Usage: "leave `GLOB` out of --sync (a name at any depth, or a path with /; repeatable)"},
	}
}

func gcFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "older-than", Usage: "keep --sync trees used within `D` (at least 1m) and ended runs' host files touched within D (0s: none; default: trees unused now, run files 7d)"},
		&cli.BoolFlag{Name: "dry-run", Usage: "remove nothing; say what would be removed"},
	}
}

func (w wiring) usage(c *cli.Context) (commands.UsageOptions, error) {
	return commands.UsageOptions{Streams: w.Streams, Hosts: hostOptions(c), Since: c.String("since"), By: c.String("by"), JSON: c.Bool("json")}, noArgs(c)
}
