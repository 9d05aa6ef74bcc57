package commands

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/claim"
	"github.com/tfhive/tfhive/schedule"
)

// The commands refuse bad options before any host is dialled: the host
// here refuses connections, so a check made too late shows up as an
// UnreachableError instead of the usage error.
func TestOptionsRefusedBeforeAnyHost(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("SSH_AUTH_SOCK", "")
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("TFHIVE_HOSTS", "")
	t.Chdir(dir)
	var out, errb bytes.Buffer
	streams := Streams{Stdout: &out, Stderr: &errb}
	hosts := HostOptions{Hosts: []string{"127.0.0.1:1"}, ConnectTimeout: time.Second, CommandTimeout: time.Second, Parallel: 4}
	job := Job{Framework: "tf", Workers: 1, Strategy: "spread", PortRange: "20000-20100", Name: "r1", Command: []string{"true"}}
	run := func(edit func(*RunOptions)) error {
		o := RunOptions{Streams: streams, Hosts: hosts, Job: job, Grace: time.Second}
		edit(&o)
		return Run(context.Background(), o)
	}
	notifyHosts := filepath.Join(dir, "notify-hosts.yaml")
	if err := os.WriteFile(notifyHosts, []byte("notify: ftp://x.example/s3cret\nhosts: [\"127.0.0.1:1\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tree := t.TempDir()
	if err := os.Symlink("/etc/passwd", filepath.Join(tree, "passwd")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, msg, hint string
		err             error
	}{
		{"run without a command", "no command given", "put the training command after --, e.g. tfhive run --workers 2 -- python train.py",
			run(func(o *RunOptions) { o.Job.Command = nil })},
		{"plan without a command", "no command given", "put the training command after --, e.g. tfhive plan --workers 2 -- python train.py",
			Plan(context.Background(), PlanOptions{Streams: streams, Hosts: hosts, Job: Job{Framework: "tf", Workers: 1, Strategy: "spread", PortRange: "20000-20100"}})},
		{"env name", `--env "1X=2": "1X" is not a variable name`, "",
			run(func(o *RunOptions) { o.Env = []string{"1X=2"} })},
		{"env unset here", "--env TFHIVE_NO_SUCH_VAR: TFHIVE_NO_SUCH_VAR is not set here", "write --env TFHIVE_NO_SUCH_VAR=VALUE, or export it first",
			run(func(o *RunOptions) { o.Env = []string{"TFHIVE_NO_SUCH_VAR"} })},
		{"negative wait", "--wait must not be negative", "", run(func(o *RunOptions) { o.Wait = -time.Second })},
		{"negative restarts", "--restarts must not be negative", "", run(func(o *RunOptions) { o.Restarts = -1 })},
		{"idle-stop under a second", "--idle-stop 50ms: want 1s or more (an idle rule under a second never acts)", "",
			run(func(o *RunOptions) { o.IdleStop = 50 * time.Millisecond })},
		{"negative restart backoff", "--restart-backoff must not be negative", "",
			run(func(o *RunOptions) { o.Restarts, o.RestartBackoff = 1, -time.Second })},
		{"restart-on alone", "--restart-on is for --restarts", "add --restarts N", run(func(o *RunOptions) { o.RestartOn = "1-127" })},
		{"stop-signal", `--stop-signal "KILL": not one of SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2`, "", run(func(o *RunOptions) { o.StopSignal = "KILL" })},
		{"grace too long", "--grace 2h0m0s: at most 30m0s", "", run(func(o *RunOptions) { o.Grace = 2 * time.Hour })},
		{"requeue-on code", `--requeue-on "143": "143" is not an exit code from 1 to 125`, "", run(func(o *RunOptions) { o.RequeueOn = "143" })},
		{"requeue-on refused", "--requeue-on asks for a requeue, --requeue=false refuses it", "drop one of them",
			run(func(o *RunOptions) { o.RequeueOn, o.RequeueSet = "85", true })},
		{"restart-on code", `--restart-on: "0" is not an exit code 1-255, a range of them (1-127) or lost`, "",
			run(func(o *RunOptions) { o.Restarts, o.RestartOn = 1, "0" })},
		{"restart-on word", `--restart-on: "lots" is not an exit code 1-255, a range of them (1-127) or lost`, "",
			run(func(o *RunOptions) { o.Restarts, o.RestartOn = 1, "1-127,lots" })},
		{"no parallelism", "--parallel must be at least 1", "", run(func(o *RunOptions) { o.Hosts.Parallel = 0 })},
		{"max-util", "--max-util must be between 0 and 100", "",
			Status(context.Background(), StatusOptions{Streams: streams, Hosts: hosts, Availability: Availability{MaxUtilPct: 101}})},
		{"top interval", "--interval must not be negative", "",
			Top(context.Background(), TopOptions{Streams: streams, Hosts: hosts, Interval: -time.Second})},
		{"top color", `--color "rainbow": want auto, always or never`, "",
			Top(context.Background(), TopOptions{Streams: Streams{Stdout: streams.Stdout, Stderr: streams.Stderr, Color: "rainbow"}, Hosts: hosts})},
		{"kill grace", "--grace must not be negative", "",
			Kill(context.Background(), KillOptions{Streams: streams, Hosts: hosts, RunID: "r1", Grace: -time.Second})},
		{"sync symlink out", "--sync: symlink passwd points outside " + tree + " (-> /etc/passwd)",
			"tfhive sends symlinks as they are and never follows one out of the tree: make it relative and inside, copy what it points to into the tree, or leave it out with --sync-exclude passwd",
			run(func(o *RunOptions) { o.Job.Sync = tree })},
		{"plan sync not a dir", "--sync " + filepath.Join(tree, "passwd") + ": not a directory", "--sync takes the directory whose content every host should have",
			Plan(context.Background(), PlanOptions{Streams: streams, Hosts: hosts, Job: Job{Framework: "tf", Workers: 1, Strategy: "spread", PortRange: "20000-20100", Sync: filepath.Join(tree, "passwd"), Command: []string{"true"}}})},
		{"sync-exclude alone", "--sync-exclude without --sync", "add --sync DIR: --sync-exclude leaves paths of DIR out",
			run(func(o *RunOptions) { o.Job.SyncExclude = []string{"*.ckpt"} })},
		{"doctor sync symlink out", "--sync: symlink passwd points outside " + tree + " (-> /etc/passwd)",
			"tfhive sends symlinks as they are and never follows one out of the tree: make it relative and inside, copy what it points to into the tree, or leave it out with --sync-exclude passwd",
			Doctor(context.Background(), DoctorOptions{Streams: streams, Hosts: hosts, Sync: tree})},
		{"doctor sync-exclude alone", "--sync-exclude without --sync", "add --sync DIR: --sync-exclude leaves paths of DIR out",
			Doctor(context.Background(), DoctorOptions{Streams: streams, Hosts: hosts, SyncExclude: []string{"*.ckpt"}})},
		{"gc older-than", "--older-than must not be negative", "",
			GC(context.Background(), GCOptions{Streams: streams, Hosts: hosts, OlderThan: ptr(-time.Second)})},
		{"capture regex", "--capture loss: error parsing regexp: missing closing ): `loss ([0-9.]+`", "REGEX is Go's syntax (RE2); its first group is what is recorded",
			run(func(o *RunOptions) { o.Capture = []string{"loss=loss ([0-9.]+"} })},
		{"capture no group", `--capture loss: "loss [0-9.]+" has no group: put what to record in parentheses, as loss=([0-9.]+)`, "REGEX is Go's syntax (RE2); its first group is what is recorded",
			run(func(o *RunOptions) { o.Capture = []string{"loss=loss [0-9.]+"} })},
		{"capture name", `--capture "val-loss=(x)": "val-loss" is not a plain name (letters, digits and _, not starting with a digit, at most 64)`, "",
			run(func(o *RunOptions) { o.Capture = []string{"val-loss=(x)"} })},
		{"capture twice", "--capture loss given twice", "",
			run(func(o *RunOptions) { o.Capture = []string{"loss=(x)", "loss=(y)"} })},
		{"capture from unknown", "--capture-from worker:2: the run has no such task", "its tasks are ps:0, worker:0 to worker:1",
			run(func(o *RunOptions) {
				o.Capture, o.CaptureFrom, o.Job.PS, o.Job.Workers = []string{"loss=(x)"}, "worker:2", 1, 2
			})},
		{"capture from unknown, detached", "--capture-from chief:0: the run has no such task", "its tasks are worker:0",
			run(func(o *RunOptions) {
				o.Capture, o.CaptureFrom, o.Detach, o.Reconnect = []string{"loss=(x)"}, "chief:0", true, time.Minute
			})},
		{"capture from malformed", `--capture-from "worker": want ROLE:INDEX, as worker:0`, "",
			run(func(o *RunOptions) { o.Capture, o.CaptureFrom = []string{"loss=(x)"}, "worker" })},
		{"capture from alone", "--capture-from without --capture", "add --capture NAME=REGEX: --capture-from says whose output it reads",
			run(func(o *RunOptions) { o.CaptureFrom = "worker:0" })},
		{"attach capture without hosts", "--capture is for attach -H or --hosts, which keeps the run", "give --capture to tfhive run: its own tfhive captures",
			Attach(context.Background(), FollowOptions{Streams: streams, RunID: "r1", Capture: []string{"loss=(x)"}})},
		{"run name too long", `--name "` + strings.Repeat("x", 65) + `" is not a run id`, claim.RunIDRule,
			run(func(o *RunOptions) { o.Job.Name = strings.Repeat("x", 65) })},
		{"run name dash", `--name "-x" is not a run id`, claim.RunIDRule, run(func(o *RunOptions) { o.Job.Name = "-x" })},
		{"run name dot", `--name "." is not a run id`, claim.RunIDRule, run(func(o *RunOptions) { o.Job.Name = "." })},
		{"run name dot dot, detached", `--name ".." is not a run id`, claim.RunIDRule,
			run(func(o *RunOptions) { o.Job.Name, o.Detach, o.Reconnect = "..", true, time.Minute })},
		{"kill path", `"../../x" is not a run id`, claim.RunIDRule,
			Kill(context.Background(), KillOptions{Streams: streams, Hosts: hosts, RunID: "../../x"})},
		{"logs -H dot", `"." is not a run id`, claim.RunIDRule,
			Logs(context.Background(), FollowOptions{Streams: streams, Hosts: hosts, FromHosts: true, RunID: "."})},
		{"notify scheme", "--notify ftp://files.example/…: a webhook is an https:// or http:// URL (else give a command)", "",
			run(func(o *RunOptions) { o.Notify = []string{"ftp://files.example/s3cret"} })},
		{"notify no host, detached", "--notify https:///…: the URL names no host", "",
			run(func(o *RunOptions) { o.Notify, o.Detach, o.Reconnect = []string{"https:///s3cret"}, true, time.Minute })},
		{"notify command", "--notify no-such-notifier-xyz: no such command (neither on $PATH nor an executable file); a webhook starts with https:// or http://", "",
			run(func(o *RunOptions) { o.Notify = []string{"no-such-notifier-xyz --token s3cret"} })},
		{"notify hosts file", notifyHosts + ":1: notify: ftp://x.example/…: a webhook is an https:// or http:// URL (else give a command)", "",
			run(func(o *RunOptions) { o.Hosts.Hosts, o.Hosts.File = nil, notifyHosts })},
		{"attach -H notify", "--notify mailto:me: no such command (neither on $PATH nor an executable file); a webhook starts with https:// or http://", "",
			Attach(context.Background(), FollowOptions{Streams: streams, Hosts: hosts, Adopt: true, RunID: "r1", Grace: time.Second, Reconnect: time.Second, Notify: []string{"mailto:me"}})},
		{"attach notify without hosts", "--notify is for attach -H (adopting a run whose keeper is gone)", "the run's keeper tells its --notify targets",
			Attach(context.Background(), FollowOptions{Streams: streams, RunID: "r1", Notify: []string{"true"}})},
		{"sweep notify", "--notify is for run: a sweep's trials do not notify", "tfhive wait SWEEP && your-command tells you when it ends",
			Sweep(context.Background(), SweepOptions{Run: RunOptions{Streams: streams, Hosts: hosts, Job: job, Grace: time.Second, Notify: []string{"true"}}, Params: []string{"lr=1,2"}})},
		{"ps connect timeout", "--connect-timeout must be positive", "",
			Ps(context.Background(), PsOptions{Streams: streams, Hosts: HostOptions{Hosts: hosts.Hosts, CommandTimeout: time.Second, Parallel: 1}})},
	}
	for _, c := range cases {
		var ue *UsageError
		if !errors.As(c.err, &ue) || ue.Msg != c.msg || ue.Hint() != c.hint {
			t.Errorf("%s: %T %v, want usage error %q (hint %q)", c.name, c.err, c.err, c.msg, c.hint)
		}
	}
	// The planner's own checks of the request come before any host too.
	for name, err := range map[string]error{
		"run": run(func(o *RunOptions) { o.Job.NIC = "eth 0" }),
		"plan": Plan(context.Background(), PlanOptions{Streams: streams, Hosts: hosts,
			Job: Job{Framework: "tf", Workers: 1, Strategy: "spread", PortRange: "20000-20100", NIC: "eth 0", Command: []string{"true"}}}),
	} {
		var se *schedule.UsageError
		if !errors.As(err, &se) || se.Msg != `bad --nic "eth 0": not an interface name` {
			t.Errorf("%s --nic 'eth 0': %T %v, want the planner's usage error", name, err, err)
		}
	}
	if out.Len() != 0 || errb.Len() != 0 {
		t.Errorf("output from refused commands:\n%s%s", out.String(), errb.String())
	}
}
