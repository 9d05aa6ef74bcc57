package commands

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/tfhive/tfhive/launcher/rundir"
)

// `tfhive run --detach` starts a keeper: this very tfhive, run again in a
// session of its own with the same command line, its stdin empty and its
// output in the run's log dir (console.log, keeper.log). The keeper is an
// ordinary `tfhive run` with --reconnect: it probes, plans, claims and
// starts, says "started" on a pipe once every task has been told to go,
// then enforces the run's lifecycle to its end and writes the summary.
// The first tfhive waits for that word only: it prints the run id and
// exits 0, or, when the keeper ended first, exits with the keeper's code
// after showing what it said. Nothing is handed over: the keeper holds
// the connections from the start.
//
// Every run, kept or not, holds an exclusive lock on keeper.lock in its
// log dir for as long as it runs: `tfhive wait`, `attach` and `logs -f`
// learn that it ended from the kernel, not from a pid in a file.

// The keeper's environment: set by the first tfhive, read by the keeper.
const (
	keeperEnv       = "TFHIVE_KEEPER"        // the pipe's descriptor, "3"
	keeperRunEnv    = "TFHIVE_KEEPER_RUN_ID" // the run id chosen for it
	keeperLogDirEnv = "TFHIVE_KEEPER_LOG_DIR"
)

// ExitError ends tfhive with Code, having said all there is to say.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit %d", e.Code) }

// keeperMode: this tfhive is a detached run's keeper.
func keeperMode() bool { return os.Getenv(keeperEnv) != "" }

// detach starts the keeper and waits for it to say the tasks started.
func detach(o RunOptions) error {
	id := o.Job.Name
	if id == "" {
		id = newRunID(time.Now())
	}
	dir := o.LogDir
	if dir == "" {
		dir = rundir.Path(id)
	}
	if err := checkLogDir(dir, o.LogDir != ""); err != nil {
		return err
	}
	if err := rundir.Make(dir); err != nil {
		return fmt.Errorf("log dir: %w", err)
	}
	code, err := spawnKeeper(dir, id, os.O_EXCL, o.Stderr)
	if err != nil {
		return err
	}
	if code < 0 {
		if o.JSON {
			fmt.Fprintf(o.Stdout, "{\"run_id\": %q, \"log_dir\": %q}\n", id, dir)
		} else {
			fmt.Fprintln(o.Stdout, id)
		}
		from := ""
		if f := hostsFrom(o.Hosts); f != "" {
			from = " (" + f + ")"
		}
		fmt.Fprintf(o.Stderr, "tfhive: run %s started, detached%s; logs in %s\n", id, from, dir)
		fmt.Fprintf(o.Stderr, "tfhive: hint: tfhive attach %s follows it, tfhive wait %s waits for its end, tfhive kill %s stops it\n", id, id, id)
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.Summary)); errors.Is(err, os.ErrNotExist) {
		// Nothing ran: no log dir is left behind.
		os.RemoveAll(dir)
	}
	return &ExitError{Code: code}
}

// spawnKeeper starts the keeper, this tfhive again with the same command
// line, its console and own lines in dir (opened with flag: O_EXCL for a
// run's, O_APPEND for a sweep's, which a resumed sweep adds to), and
// waits for its word: -1 once it said "started", else the keeper's exit
// code, what it said copied to stderr.
func spawnKeeper(dir, id string, flag int, stderr io.Writer) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	console, err := rundir.OpenFile(filepath.Join(dir, rundir.Console), os.O_CREATE|os.O_WRONLY|flag)
	if err != nil {
		return 0, fmt.Errorf("log dir: %w", err)
	}
	defer console.Close()
	klog, err := rundir.OpenFile(filepath.Join(dir, rundir.KeeperLog), os.O_CREATE|os.O_RDWR|flag)
	if err != nil {
		return 0, fmt.Errorf("log dir: %w", err)
	}
	defer klog.Close()
	start, _ := klog.Seek(0, io.SeekEnd)
	pr, pw, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer pr.Close()
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Env = append(os.Environ(), keeperEnv+"=3", keeperRunEnv+"="+id, keeperLogDirEnv+"="+dir)
	cmd.Stdout, cmd.Stderr = console, klog
	cmd.ExtraFiles = []*os.File{pw}
	// Its own session: no terminal, so no SIGHUP when this one closes, and
	// no Ctrl-C meant for this tfhive.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		return 0, fmt.Errorf("starting the keeper: %w", err)
	}
	word, _ := bufio.NewReader(pr).ReadString('\n')
	if word == "started\n" {
		cmd.Process.Release()
		return -1, nil
	}
	// The keeper ended before its tasks started: its own words say why.
	werr := cmd.Wait()
	klog.Seek(start, io.SeekStart)
	io.Copy(stderr, klog)
	code := 1
	var ee *exec.ExitError
	if errors.As(werr, &ee) && ee.ExitCode() > 0 {
		code = ee.ExitCode()
	}
	return code, nil
}

// keeperStarted tells the first tfhive that every task was told to go.
func keeperStarted() {
	if !keeperMode() {
		return
	}
	// Once: descriptor 3 is closed after, and its number may then be
	// any file's (a task's log, a run started again after a lost host).
	keeperSaid.Do(func() {
		f := os.NewFile(3, "keeper")
		f.WriteString("started\n")
		f.Close()
	})
}

var keeperSaid sync.Once
