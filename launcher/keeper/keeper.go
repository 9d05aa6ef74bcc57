package keeper

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

	"github.com/tfhive/tfhive/launcher/rundir"
)

// The keeper's environment: set by the first tfhive, read by the keeper.
const (
	Env       = "TFHIVE_KEEPER"        // the pipe's descriptor, "3"
	RunEnv    = "TFHIVE_KEEPER_RUN_ID" // the run id chosen for it
	LogDirEnv = "TFHIVE_KEEPER_LOG_DIR"
)

// Mode: this tfhive is a detached run's keeper.
func Mode() bool { return os.Getenv(Env) != "" }

// RunID and LogDir are what the first tfhive chose for the keeper's run:
// its id and log dir.
func RunID() string  { return os.Getenv(RunEnv) }
func LogDir() string { return os.Getenv(LogDirEnv) }

// Spawn starts the keeper, this tfhive again with the same command
// line, its console and own lines in dir (opened with flag: O_EXCL for a
// run's, O_APPEND for a sweep's, which a resumed sweep adds to), and
// waits for its word: -1 once it said "started", else the keeper's exit
// code, what it said copied to stderr.
func Spawn(dir, id string, flag int, stderr io.Writer) (int, error) {
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
	cmd.Env = append(os.Environ(), Env+"=3", RunEnv+"="+id, LogDirEnv+"="+dir)
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

// Started tells the first tfhive that every task was told to go.
func Started() {
	if !Mode() {
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
