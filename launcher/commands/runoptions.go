package commands

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/probe/inventory"
)

// DefaultReconnect is --reconnect's default.
const (
	DefaultReconnect  = launcher.DefaultReconnect
	DefaultUnattended = launcher.DefaultUnattended
)

// RunOptions are `tfhive run`'s.
//
// A run's record (repro.json, repro.go) holds them as JSON, in Go's
// field names, for `tfhive rerun`: a field that JSON cannot carry is
// tagged out, and what a rerun must not repeat is cleared there.
type RunOptions struct {
	Streams `json:"-"`
	Hosts   HostOptions
	Job     Job
	// Env holds --env values: K=V, or K for this machine's value.
	Env            []string
	Workdir, Setup string // override the hosts file's when not empty
	LogDir         string // "" for tfhive-runs/RUN_ID
	Grace          time.Duration
	Timeout        time.Duration // 0: none
	Wait           time.Duration // --wait; 0: none
	// Reconnect is --reconnect: how long a dropped host is redialled
	// while its tasks run on (launcher.Options.Reconnect); 0: never.
	Reconnect time.Duration
	// Unattended is --unattended: with --detach, how long the tasks run on
	// with no keeper before their supervisors stop them.
	Unattended time.Duration
	// Detach starts a keeper that runs the job (detach.go) and returns
	// once every task has started.
	Detach bool
	Quiet  bool
	JSON   bool // the summary as JSON on stdout, task output on stderr
	// Check runs doctor's checks on the plan's hosts before claiming
	// anything, importing Imports too, and refuses to start when they
	// differ (a *CheckError).
	Check   bool
	Imports []string
	// Capture are --capture NAME=REGEX values, CaptureFrom
	// --capture-from's task ("": every task).
	Capture     []string
	CaptureFrom string
	// Sample is --sample: how often the tasks' GPUs are sampled; 0: never.
	Sample time.Duration
	// IdleStop is --idle-stop: stop the run once its GPUs sat idle this
	// long (stricter than a host's policy only); 0: the policies'.
	IdleStop time.Duration
	// Restarts, RestartOn and RestartBackoff are --restarts,
	// --restart-on and --restart-backoff (lifecycle.Restart).
	Restarts       int
	RestartOn      string
	RestartBackoff time.Duration
	// StopSignal is --stop-signal ("SIGTERM", "INT", ...); "": SIGTERM.
	StopSignal string
	// Requeue is --requeue, RequeueSet whether it was given (--wait
	// requeues unless --requeue=false), RequeueOn --requeue-on's codes
	// (requeue.go).
	Requeue, RequeueSet bool
	RequeueOn           string
	// HangAfter, OnHang and HangNative are --hang-after, --on-hang
	// (warn, stop; "": warn) and --hang-native (launcher.Hang).
	HangAfter  time.Duration
	OnHang     string
	HangNative bool
	// Notify is --notify's targets (launcher/notify); none: the hosts
	// file's notify:. Never in the run's record: a webhook's URL is its
	// secret (a rerun notifies as its own --notify, or the hosts file,
	// says).
	Notify []string `json:"-"`
	// Slurm is --on slurm's: the job goes to a Slurm cluster (slurm.go).
	// Such a run leaves no repro.json: rerun is for runs on hosts.
	Slurm SlurmOptions `json:"-"`
	// Signals routes SIGINT/SIGTERM to the launcher while tasks run; nil,
	// none do.
	Signals *job.Signals `json:"-"`
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
				return nil, &UsageError{Msg: fmt.Sprintf("--env %s: %s is not set here", k, k), Fix: "write --env " + k + "=VALUE, or export it first"}
			}
			v = local
		}
		env[k] = v
	}
	return env, nil
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkLinkFlags: --detach, --unattended and --sample, which Run checks
// first and a sweep for all its trials (trial: the run is one of them).
func (o *RunOptions) checkLinkFlags(trial bool) error {
	if o.Detach && o.Reconnect == 0 {
		return &UsageError{Msg: "--detach needs --reconnect: a detached run's tasks outlive the sessions that started them", Fix: "drop --reconnect 0"}
	}
	// A detached sweep's trials run on unattended as a detached run does.
	if !o.Detach && o.Unattended != 0 && !trial {
		return &UsageError{Msg: "--unattended is for --detach", Fix: "a run in the foreground stops its tasks --reconnect after its link is gone"}
	}
	if o.Sample < 0 || (o.Sample > 0 && o.Sample < launcher.MinSample) {
		return &UsageError{Msg: fmt.Sprintf("--sample must be 0 (never) or at least %s", launcher.MinSample)}
	}
	return o.checkHangFlags()
}

// checkTimesAndImports: no negative duration, --import only with --check
// and only Python module names; the modules --check imports.
func (o *RunOptions) checkTimesAndImports() ([]string, error) {
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"grace", o.Grace}, {"timeout", o.Timeout}, {"wait", o.Wait}, {"reconnect", o.Reconnect}, {"unattended", o.Unattended}, {"idle-stop", o.IdleStop}} {
		if d.v < 0 {
			return nil, usagef("--%s must not be negative", d.flag)
		}
	}
	if o.IdleStop > 0 && o.IdleStop < inventory.MinIdle {
		return nil, usagef("--idle-stop %s: want %s or more (an idle rule under a second never acts)", o.IdleStop, inventory.MinIdle)
	}
	if len(o.Imports) > 0 && !o.Check {
		return nil, &UsageError{Msg: "--import is for --check", Fix: "add --check, or see tfhive doctor --import"}
	}
	return doctorModules(o.Imports)
}
