package commands

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/remotetest"
)

// Flags without a meaning on Slurm are refused before anything is
// dialled, with the alternative where there is one; a flag run gains
// later is refused until it means something there.
func TestRunOnSlurmRefuses(t *testing.T) {
	for _, tt := range []struct {
		given []string
		msg   string
	}{
		{[]string{"sync"}, "--sync has no meaning with --on slurm"},
		{[]string{"workers", "restarts"}, "--restarts has no meaning"},
		{[]string{"some-flag-of-later"}, "--some-flag-of-later has no meaning"},
	} {
		o := RunOptions{Slurm: SlurmOptions{On: OnSlurm, Login: "nosuch", Given: tt.given}}
		err := Run(context.Background(), o)
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(ue.Msg, tt.msg) {
			t.Errorf("%v: %v, want a usage error %q", tt.given, err, tt.msg)
		}
	}
	err := Run(context.Background(), RunOptions{Slurm: SlurmOptions{On: "k8s"}})
	var ue *UsageError
	if !errors.As(err, &ue) {
		t.Errorf("--on k8s: %v, want a usage error", err)
	}
}

// kill and attach -H act on a run's slurm.json only when nobody else can
// have written it: in a shared working directory another user's record
// must not make kill hang (a FIFO), dial a login node of theirs or
// cancel a job of their choosing. Each refusal is one line, before any
// host is dialled; a record of the user's own is acted on, the marker
// cancel.sh leaves made from the run's and the job's ids alone.
func TestSlurmRecordRefused(t *testing.T) {
	t.Chdir(t.TempDir())
	dir := filepath.Join("tfhive-runs", "r1")
	good := record.SlurmJob{JobID: "42", Login: "login", Dir: "/home/me/tfhive-slurm/r1", Output: "/home/me/tfhive-slurm/r1/job-42.out",
		Tasks: []record.SlurmTask{{ID: "worker:0", Role: "worker", GPUs: []int{}}}}
	write := func(sj record.SlurmJob) {
		os.RemoveAll(dir)
		if err := rundir.Make(dir); err != nil {
			t.Fatal(err)
		}
		if err := rundir.WriteJSON(filepath.Join(dir, rundir.SlurmJob), sj); err != nil {
			t.Fatal(err)
		}
	}
	var dialled []string
	login := &remotetest.Fake{}
	var scripts []string
	login.Handle(remotetest.Exact("sh -s"), func(p *remotetest.Proc) int {
		b, _ := io.ReadAll(p.Stdin)
		scripts = append(scripts, string(b))
		return 0
	})
	hosts := HostOptions{Hosts: []string{"login"}, SSHConfig: "/dev/null", ConnectTimeout: time.Second, CommandTimeout: time.Second, Parallel: 1,
		Dial: func(ctx context.Context, h inventory.Host) (remote.Executor, *inventory.HostError) {
			dialled = append(dialled, h.Name)
			return login, nil
		}}
	kill := func(t *testing.T) (string, error) {
		var o out
		done := make(chan error, 1)
		go func() {
			done <- Kill(context.Background(), KillOptions{Streams: o.streams(), Hosts: hosts, RunID: "r1", Grace: time.Second})
		}()
		select {
		case err := <-done:
			return o.stdout.String(), err
		case <-time.After(10 * time.Second):
			t.Fatal("kill hangs")
			return "", nil
		}
	}
	attach := func(*testing.T) error {
		var o out
		return Attach(context.Background(), FollowOptions{Streams: o.streams(), RunID: "r1", Adopt: true, Hosts: hosts, Grace: time.Second})
	}
	bogus := good
	bogus.Output = "/home/me/.bashrc"
	for _, tt := range []struct {
		name    string
		prepare func()
		why     string
	}{
		{"writable by others", func() { write(good); os.Chmod(filepath.Join(dir, rundir.SlurmJob), 0o666) }, "it is writable by group and others"},
		{"another user's", func() {
			write(good)
			if os.Geteuid() != 0 {
				t.Skip("chown needs root")
			}
			os.Chown(filepath.Join(dir, rundir.SlurmJob), 65534, 65534)
		}, "it is owned by "},
		{"in a log dir others may write to", func() { write(good); os.Chmod(dir, 0o777) }, "is writable by group and others"},
		{"a FIFO", func() {
			write(good)
			path := filepath.Join(dir, rundir.SlurmJob)
			os.Remove(path)
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file"},
		{"a path of its choosing", func() { write(bogus) }, `its output "/home/me/.bashrc" is not job 42's file`},
		{"another run's directory", func() {
			other := good
			other.Dir, other.Output = "/home/me/tfhive-slurm/r2", "/home/me/tfhive-slurm/r2/job-42.out"
			write(other)
		}, "is not run r1's"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.prepare()
			dialled = nil
			for cmd, run := range map[string]func(*testing.T) error{"kill": func(t *testing.T) error { _, err := kill(t); return err }, "attach -H": attach} {
				err := run(t)
				var ue *UsageError
				if !errors.As(err, &ue) || !strings.Contains(ue.Msg, "run r1's Slurm job record tfhive-runs/r1/slurm.json refused: ") || !strings.Contains(ue.Msg, tt.why) {
					t.Errorf("%s: %v, want it refused: %q", cmd, err, tt.why)
				}
			}
			if len(dialled) > 0 {
				t.Errorf("dialled %v", dialled)
			}
		})
	}

	write(good)
	said, err := kill(t)
	if err != nil || !strings.Contains(said, "tfhive: cancelled Slurm job 42 of run r1 on login\n") {
		t.Fatalf("kill: %v\n%s", err, said)
	}
	if len(scripts) != 1 || !strings.Contains(scripts[0], "scancel") {
		t.Fatalf("%d scripts on the login node, want cancel.sh", len(scripts))
	}
	if !strings.Contains(scripts[0], "tfhive_rundir=tfhive-slurm/r1\n") || strings.Contains(scripts[0], "/home/me") {
		t.Errorf("cancel.sh's parameters:\n%.400s", scripts[0])
	}
}

// status --on slurm --watch refreshes no faster than a second (an sinfo
// each time, on the cluster's slurmctld), refused before anything is
// dialled.
func TestStatusOnSlurmWatchRefuses(t *testing.T) {
	for _, w := range []time.Duration{-time.Second, 500 * time.Millisecond} {
		err := Status(context.Background(), StatusOptions{Watch: w, Slurm: SlurmOptions{On: OnSlurm, Login: "nosuch"}})
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(ue.Msg, "--watch") {
			t.Errorf("--watch %s: %v, want a usage error", w, err)
		}
	}
}
