// Command trainer is a small but real distributed trainer that stands in for
// TensorFlow in tfhive's end-to-end tests. It reads its cluster the way
// TensorFlow does, and genuinely uses it: the parameters live on the ps
// tasks, workers pull them and push gradients over TCP, so killing a ps makes
// the workers fail, and a worker that cannot reach a ps says so. Like any
// user program, it imports only the standard library, nothing of tfhive.
//
// # Cluster
//
// From TF_CONFIG (the rules of TensorFlow's TFConfigClusterResolver, see
// ParseTFConfig), or from the TF1 flags --ps_hosts, --worker_hosts,
// --job_name and --task_index, used whenever --job_name is given.
//
// # Tasks
//
//   - ps: listens on exactly its own host:port (never a wildcard address),
//     prints "ps <i> listening on <addr>", and holds shard i of the
//     parameters (coordinates j with j % numPS == i) until SIGTERM, then
//     exits 0 quietly.
//   - worker, no chief in the cluster (TF1 between-graph / async PS
//     training): connects to every ps (retrying until --connect-timeout,
//     since tasks start concurrently), then runs asynchronous SGD on its own
//     shard of a synthetic linear regression (y = x·w* + noise; w* is the
//     same everywhere, the examples depend on the worker's index). Each step
//     pulls every shard, computes the loss on its whole shard and the
//     gradient on a mini-batch, and pushes each shard's part to its ps.
//   - chief in the cluster (TF2 ParameterServerStrategy): the workers only
//     serve "gradient of your shard at these parameters" on their own
//     address; the chief pulls the parameters, asks every reachable worker
//     for its gradient each step, averages them, pushes them to the ps and
//     stops when the mean loss is below --target. A worker that goes away
//     is redialled in the background and training goes on with the others;
//     with none reachable for --connect-timeout the chief fails. With no
//     worker in the cluster the chief computes gradients itself.
//   - evaluator (not in the cluster, as TensorFlow wants): prints its loss on
//     a held-out set every --eval-every until SIGTERM (exit 0).
//   - no ps in the cluster: the chief, or else worker 0, holds all the
//     parameters in one shard and serves them on its own address (worker 0
//     then waits for the other workers to finish before it exits; for one
//     that never connects, until --connect-timeout after its start).
//
// # Output (stdout, one line each; <l> is a %.6g float)
//
//	ps <i> listening on <addr>
//	worker <i> step <s> loss <l>          at step 1, every --log-every steps and at the end
//	worker <i> reached loss <l> at step <s>
//	worker <i> serving on <addr>          chief mode
//	worker <i> waiting for the other workers (parameters are held here)
//	chief step <s> loss <l> workers <n>
//	chief reached loss <l> at step <s>
//	chief holding the parameters on <addr>   no ps in the cluster
//	evaluator loss <l>
//	line <i> of <N> from <task>           --lines N
//
// Errors go to stderr as "trainer: …". Exit codes: 0 success (or stopped
// by SIGTERM while serving); 1 failure (a ps or worker unreachable or lost,
// did not converge, cannot listen); 2 bad TF_CONFIG ("trainer: bad
// TF_CONFIG: …") or bad flags ("trainer: bad flags: …"); --fail-code
// (default 3) at --fail-at-step. Training tasks (async workers, the chief)
// keep the default SIGTERM action, like a Python trainer.
//
// # Flags (-x and --x both work)
//
//	--steps N            max SGD steps per worker (chief: per chief), default 2000
//	--target F           loss to reach, default 1e-3 (the loss floor is ~5e-5)
//	--sleep D            pause per step (and between --lines lines), default 0
//	--fail-at-step N     exit with --fail-code at step N (worker, chief; in chief
//	                     mode a worker counts the gradients it serves); 0 = never
//	--fail-code C        default 3
//	--fail-attempts N    --fail-at-step only in the first N attempts ($TFHIVE_ATTEMPT
//	                     below N, unset counting as 0), to test restarts; 0 = every
//	--lines N            print N numbered lines ("line 1 of N from worker:0"; the task is
//	                     from the config if it parses, else $TFHIVE_TASK, else
//	                     "trainer"), --sleep apart, and exit 0; no cluster needed
//	--dim D              parameter dimension, default 16 (same on every task)
//	--connect-timeout D  how long to keep retrying a task that is not listening
//	                     yet, and the limit for one RPC; default 30s
//	--log-every N        progress line every N steps, default 10
//	--eval-every D       evaluator period, default 1s
//
// Defaults: 256 examples per worker shard, mini-batches of 64, label noise
// σ 0.01 (loss floor ~5e-5), learning rate 0.5 per step (async workers use
// 0.5/numWorkers per push; the chief averages the workers' gradients),
// parameters start at zero, loss starts around 6-14. With 1-4 workers and
// 1-2 ps a run reaches 1e-3 in about 5-30 steps: tens of milliseconds on
// loopback. Convergence is checked every step, so a --fail-at-step later than
// that never fires unless the run is kept going with --target 0 (which never
// converges: the run then ends at --steps with exit 1). --sleep stretches a
// run for tests that must act while it trains.
//
// # By hand
//
// One ps and two workers on this machine, in three shells:
//
//	go build -o /tmp/trainer ./testdata/trainer
//	C='"cluster":{"ps":["127.0.0.1:2222"],"worker":["127.0.0.1:2223","127.0.0.1:2224"]}'
//	TF_CONFIG="{$C,\"task\":{\"type\":\"ps\",\"index\":0}}" /tmp/trainer
//	TF_CONFIG="{$C,\"task\":{\"type\":\"worker\",\"index\":0}}" /tmp/trainer
//	TF_CONFIG="{$C,\"task\":{\"type\":\"worker\",\"index\":\"1\"}}" /tmp/trainer
//
// or TF1 style:
//
//	/tmp/trainer --ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=ps --task_index=0
//	/tmp/trainer --ps_hosts=127.0.0.1:2222 --worker_hosts=127.0.0.1:2223,127.0.0.1:2224 --job_name=worker --task_index=1
//
// The workers print their loss and exit 0; stop the ps with kill (SIGTERM:
// exit 0) or Ctrl-C. Adding "chief":["127.0.0.1:2225"] to the cluster and
// starting a chief task switches to chief mode; an evaluator task uses the
// same cluster with "task":{"type":"evaluator","index":0}.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Exit codes.
const (
	exitOK        = 0
	exitFailed    = 1
	exitBadConfig = 2
)

type options struct {
	psHosts, workerHosts, jobName string
	taskIndex                     int

	steps          int
	target         float64
	sleep          time.Duration
	failAt         int
	failCode       int
	failAttempts   int
	lines          int
	dim            int
	connectTimeout time.Duration
	logEvery       int
	evalEvery      time.Duration
}

// printer writes whole lines to stdout and "trainer: "-prefixed lines to
// stderr, safe for concurrent use.
type printer struct {
	mu          sync.Mutex
	stdout, err io.Writer
}

func (p *printer) printf(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.stdout, format+"\n", a...)
}

func (p *printer) errorf(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.err, "trainer: "+format+"\n", a...)
}

func main() {
	stop := func() context.Context {
		ctx, _ := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		return ctx
	}
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr, stop))
}

// run is the whole program. stop is called by tasks that serve until told
// to stop (ps, evaluator, chief-mode workers) and returns a context that
// ends when they should (SIGTERM); training tasks never call it.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer, stop func() context.Context) int {
	out := &printer{stdout: stdout, err: stderr}
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		out.errorf("%v", err)
		return exitBadConfig
	}

	if o.failAttempts > 0 {
		// An attempt past the failing ones runs as asked otherwise.
		if n, _ := strconv.Atoi(getenv("TFHIVE_ATTEMPT")); n >= o.failAttempts {
			o.failAt = 0
		}
	}
	cfg, cfgErr := loadConfig(o, getenv)
	if o.lines > 0 {
		name := "trainer"
		if cfgErr == nil {
			name = cfg.Name()
		} else if t := getenv("TFHIVE_TASK"); t != "" {
			name = t
		}
		for i := 1; i <= o.lines; i++ {
			out.printf("line %d of %d from %s", i, o.lines, name)
			if o.sleep > 0 && i < o.lines {
				time.Sleep(o.sleep)
			}
		}
		return exitOK
	}
	if cfgErr != nil {
		out.errorf("%v", cfgErr)
		return exitBadConfig
	}

	ctx := context.Background()
	switch {
	case cfg.Type == typePS:
		return runPS(stop(), cfg, o, out)
	case cfg.Type == typeEvaluator:
		return runEvaluator(stop(), cfg, o, out)
	case cfg.Type == typeChief:
		return runChief(ctx, cfg, o, out)
	case cfg.ChiefMode(): // a worker under a chief
		return runWorkerServer(stop(), cfg, o, out)
	default:
		return runWorker(ctx, cfg, o, out)
	}
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("trainer", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported as one "trainer: bad flags" line
	fs.Usage = func() {}
	fs.StringVar(&o.psHosts, "ps_hosts", "", "TF1: comma-separated ps addresses")
	fs.StringVar(&o.workerHosts, "worker_hosts", "", "TF1: comma-separated worker addresses")
	fs.StringVar(&o.jobName, "job_name", "", "TF1: ps or worker; when set, TF_CONFIG is ignored")
	fs.IntVar(&o.taskIndex, "task_index", 0, "TF1: index of this task in its job")
	fs.IntVar(&o.steps, "steps", 2000, "max SGD steps")
	fs.Float64Var(&o.target, "target", 1e-3, "stop when the loss is below this")
	fs.DurationVar(&o.sleep, "sleep", 0, "pause per step (and per --lines line)")
	fs.IntVar(&o.failAt, "fail-at-step", 0, "exit with --fail-code at this step (0: never)")
	fs.IntVar(&o.failCode, "fail-code", 3, "exit code of --fail-at-step")
	fs.IntVar(&o.failAttempts, "fail-attempts", 0, "--fail-at-step only while $TFHIVE_ATTEMPT is below this (0: always)")
	fs.IntVar(&o.lines, "lines", 0, "print this many numbered lines and exit 0 without training")
	fs.IntVar(&o.dim, "dim", 16, "parameter dimension")
	fs.DurationVar(&o.connectTimeout, "connect-timeout", 30*time.Second, "how long to retry connecting to a task, and the limit for one RPC")
	fs.IntVar(&o.logEvery, "log-every", 10, "print progress every this many steps")
	fs.DurationVar(&o.evalEvery, "eval-every", time.Second, "evaluator: print the loss this often")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fmt.Fprintln(stderr, "usage: trainer [flags]   (cluster from TF_CONFIG, or TF1 --job_name and friends)")
			fs.PrintDefaults()
			return nil, err
		}
		return nil, badFlags("%v", err)
	}
	if fs.NArg() > 0 {
		return nil, badFlags("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.jobName == "" && (set["ps_hosts"] || set["worker_hosts"] || set["task_index"]) {
		return nil, badFlags("--ps_hosts, --worker_hosts and --task_index need --job_name (without it TF_CONFIG is read)")
	}
	for _, c := range []struct {
		name string
		bad  bool
	}{
		{"--steps must be 1 or more", o.steps < 1},
		{"--target must be a number 0 or more", !(o.target >= 0) || !finite(o.target)},
		{"--sleep must be 0 or more", o.sleep < 0},
		{"--fail-at-step must be 0 or more", o.failAt < 0},
		{"--fail-code must be 0-255", o.failCode < 0 || o.failCode > 255},
		{"--fail-attempts must be 0 or more", o.failAttempts < 0},
		{"--lines must be 0 or more", o.lines < 0},
		{"--dim must be 1-1000000", o.dim < 1 || o.dim > 1_000_000},
		{"--connect-timeout must be more than 0", o.connectTimeout <= 0},
		{"--log-every must be 1 or more", o.logEvery < 1},
		{"--eval-every must be more than 0", o.evalEvery <= 0},
	} {
		if c.bad {
			return nil, badFlags("%s", c.name)
		}
	}
	return o, nil
}

func loadConfig(o *options, getenv func(string) string) (Config, error) {
	if o.jobName != "" {
		return ParseTF1Flags(o.psHosts, o.workerHosts, o.jobName, o.taskIndex)
	}
	return ParseTFConfig(getenv("TF_CONFIG"))
}

// failNow reports a --fail-at-step failure and returns its exit code.
func failNow(out *printer, task string, step int, o *options) int {
	out.errorf("%s: failing at step %d as asked (--fail-at-step), exit %d", task, step, o.failCode)
	return o.failCode
}

func fmtLoss(l float64) string { return strconv.FormatFloat(l, 'g', 6, 64) }
