package keeper

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"

	notifyArgs "github.com/tfhive/tfhive/launcher/notify"
	"github.com/tfhive/tfhive/launcher/rundir"
)

// The keeper's environment: set by the first tfhive, read by the keeper.
const (
	Env       = "TFHIVE_KEEPER"        // the pipe's descriptor, "3"
	RunEnv    = "TFHIVE_KEEPER_RUN_ID" // the run id chosen for it
	LogDirEnv = "TFHIVE_KEEPER_LOG_DIR"
	// HandEnv: descriptor 4 holds what the command line does not (hand).
	HandEnv = "TFHIVE_KEEPER_HAND"
)

// Mode: this tfhive is a detached run's keeper.
func Mode() bool { return os.Getenv(Env) != "" }

// RunID and LogDir are what the first tfhive chose for the keeper's run:
// its id and log dir.
func RunID() string  { return os.Getenv(RunEnv) }
func LogDir() string { return os.Getenv(LogDirEnv) }

// Spawn starts the keeper, this tfhive again with the same command
// line but for the --notify targets given (notify, as parsed), which it
// hands over on a pipe instead (see Notify), its console and own lines in dir (opened with flag: O_EXCL for a
// run's, O_APPEND for a sweep's, which a resumed sweep adds to), and
// waits for its word: -1 once it said "started", else the keeper's exit
// code, what it said copied to stderr.
func Spawn(dir, id string, flag int, notify []string, stderr io.Writer) (int, error) {
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
	hr, hw, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer hw.Close()
	args := os.Args[1:]
	cmd := exec.Command(self, notifyArgs.WithoutTargets(args, notify)...)
	cmd.Env = append(os.Environ(), Env+"=3", RunEnv+"="+id, LogDirEnv+"="+dir, HandEnv+"=4")
	cmd.Stdout, cmd.Stderr = console, klog
	cmd.ExtraFiles = []*os.File{pw, hr}
	// Its own session: no terminal, so no SIGHUP when this one closes, and
	// no Ctrl-C meant for this tfhive.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	pw.Close()
	hr.Close()
	if err != nil {
		return 0, fmt.Errorf("starting the keeper: %w", err)
	}
	// After Start, the keeper reading: a hand bigger than the pipe holds
	// does not block, and a keeper that ended first fails the write
	// (EPIPE), its own words then saying why.
	json.NewEncoder(hw).Encode(hand{Notify: notify, Args: args})
	hw.Close()
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

// hand is what the first tfhive gives its keeper on descriptor 4.
type hand struct {
	// Notify is the --notify values, out of the keeper's command line.
	Notify []string `json:"notify"`
	// Args is the first tfhive's command line, whole: for repro.json,
	// which records it redacted (notify.RedactArgs).
	Args []string `json:"args"`
}

var (
	handOnce sync.Once
	handed   *hand
)

// taken is the keeper's hand, read once: nil for any other tfhive, or
// a keeper started without one.
func taken() *hand {
	handOnce.Do(func() {
		if !Mode() || os.Getenv(HandEnv) != "4" {
			return
		}
		// Descriptor 4 is the pipe until closed here: no file opened
		// before can have its number.
		f := os.NewFile(4, "keeper-hand")
		defer f.Close()
		h := hand{Args: os.Args[1:]}
		if err := json.NewDecoder(f).Decode(&h); err != nil {
			// The first tfhive ended before it wrote: it said nothing of
			// its own, the run goes on without its --notify.
			fmt.Fprintf(os.Stderr, "tfhive: warning: the --notify targets were not handed over (%v): none told\n", err)
		}
		handed = &h
	})
	return handed
}

// Notify is the --notify values for this tfhive: a keeper's, handed on
// its pipe (its command line, readable by any local user, lacks them);
// any other's, flags (what urfave/cli parsed).
func Notify(flags []string) []string {
	if h := taken(); h != nil {
		return h.Notify
	}
	return flags
}

// Args is this tfhive's command line as the user typed it: a keeper's,
// its first tfhive's.
func Args() []string {
	if h := taken(); h != nil {
		return h.Args
	}
	return os.Args[1:]
}
