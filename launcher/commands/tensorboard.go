package commands

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tfhive/tfhive/launcher/job"
	"github.com/tfhive/tfhive/launcher/logroot"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/tensorboard"
	"github.com/tfhive/tfhive/probe/localfile"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/schedule"
)

// TensorBoardOptions are `tfhive tensorboard`'s.
type TensorBoardOptions struct {
	Streams
	Hosts   HostOptions
	LogRoot string // --log-root; "" for tfhive-runs
	Name    string // the run's or the sweep's id; for --stop, "" for every one
	Port    int    // --port: this machine's; 0 for 6006 or the next free
	Detach  bool   // --detach: leave it serving, until --stop
	Stop    bool   // --stop: end detached TensorBoards
}

// defaultPort is TensorBoard's own; the next few are tried when it is
// taken and --port was not given.
const defaultPort = 6006

// How long TensorBoard may take to answer once started: it imports
// TensorFlow first (several seconds, more on a loaded host), then reads
// the event files.
const tensorBoardStartWithin = 3 * time.Minute

// tbKeeperEnv marks a detached TensorBoard's keeper: this tfhive started
// again in a session of its own, its word on descriptor 3.
const tbKeeperEnv = "TFHIVE_TENSORBOARD_KEEPER"

// tbState is what a detached TensorBoard's keeper leaves in the run's
// (or sweep's) dir while it serves, for --stop and a second --detach.
type tbState struct {
	PID  int    `json:"pid"`
	URL  string `json:"url"`
	Host string `json:"host"`
}

// TensorBoard serves a run's (or a sweep's trials') TensorBoard on this
// machine: a real TensorBoard started on the host that holds the model
// dir, its port forwarded over tfhive's SSH connection to the host, until
// Ctrl-C (or, detached, --stop).
func TensorBoard(ctx context.Context, o TensorBoardOptions) error {
	if o.Stop {
		if o.Detach || o.Port != 0 {
			return usagef("--stop takes no --detach or --port")
		}
		return stopTensorBoards(o)
	}
	if o.Name == "" {
		return &UsageError{Msg: "tensorboard takes one run id or sweep name (tfhive runs lists the runs)"}
	}
	if err := checkRunID("", o.Name); err != nil {
		return err
	}
	if o.Port < 0 || o.Port > 65535 {
		return usagef("--port %d: want a port, 1 to 65535", o.Port)
	}
	root, err := checkLogRoot(o.LogRoot)
	if err != nil {
		return err
	}
	dir := filepath.Join(root, o.Name)
	host, dirs, err := tensorBoardDirs(root, dir, o.Name)
	if err != nil {
		return err
	}
	keeper := os.Getenv(tbKeeperEnv) != ""
	if o.Detach && !keeper {
		return detachTensorBoard(o, dir)
	}
	if keeper {
		// Held for the keeper's life: --stop signals only its holder.
		release, err := rundir.HoldFileLock(dir, rundir.TensorBoardLock)
		if errors.Is(err, rundir.ErrLockHeld) {
			return fmt.Errorf("TensorBoard of %s is already served (tfhive tensorboard --stop %s stops it)", o.Name, o.Name)
		}
		if err != nil {
			return fmt.Errorf("log dir: %w", err)
		}
		defer release()
	}
	ln, err := listenTB(o.Port)
	if err != nil {
		return err
	}
	defer ln.Close()
	// 127.0.0.1 is every local user's, here and on the host: TensorBoard
	// serves under a secret path, which only this URL says.
	secret := tensorboard.NewSecret()
	url := fmt.Sprintf("http://localhost:%d/%s/", ln.Addr().(*net.TCPAddr).Port, secret)
	ready := func(where string) {
		fmt.Fprintln(o.Stdout, url)
		if !keeper {
			fmt.Fprintf(o.Stderr, "tfhive: TensorBoard of %s on %s (%s); Ctrl-C stops it\n", o.Name, where, tensorboard.Spec(dirs))
			return
		}
		if err := writeTBState(filepath.Join(dir, rundir.TensorBoard), tbState{PID: os.Getpid(), URL: url, Host: where}); err != nil {
			fmt.Fprintf(o.Stderr, "tfhive: warning: %v\n", err)
		}
		f := os.NewFile(3, "keeper")
		f.WriteString("started " + url + "\n")
		f.Close()
	}
	if keeper {
		defer os.Remove(filepath.Join(dir, rundir.TensorBoard))
	}
	return serveTensorBoard(ctx, o, host, dirs, secret, ln, ready)
}

// writeTBState writes the state file 0600, made new (nobody else can have
// it open from before): its URL holds the secret.
func writeTBState(path string, st tbState) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".new"
	os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(data, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// tensorBoardDirs are the TensorBoard runs of dir (a run's, or a sweep's
// trials') and the host to serve them from: the run's chief's (a sweep's
// first trial's); a sweep's other trials' dirs are read there too (a
// shared directory, as the recipes' /shared/{run_id}).
func tensorBoardDirs(root, dir, name string) (string, []tensorboard.Dir, error) {
	rec, isSweep, err := logroot.Sweep(dir)
	if err != nil {
		return "", nil, err
	}
	ids := []string{name}
	if isSweep {
		ids = nil
		for _, t := range rec.Trials {
			ids = append(ids, t.ID)
		}
	}
	var host string
	var dirs []tensorboard.Dir
	for _, id := range ids {
		p, err := readPlan(filepath.Join(root, id))
		if errors.Is(err, fs.ErrNotExist) {
			if isSweep {
				continue // a trial not started yet
			}
			return "", nil, &NoRunError{Msg: fmt.Sprintf("no run or sweep %s in %s (tfhive runs lists its runs)", name, root)}
		}
		if err != nil {
			return "", nil, err
		}
		h, d, err := tensorboard.ModelDir(p)
		if err != nil {
			if isSweep {
				continue
			}
			return "", nil, &UsageError{Msg: err.Error(), Fix: "TensorBoard reads the directory a run writes its summaries in"}
		}
		if err := tensorboard.CheckDir(d); err != nil {
			return "", nil, err
		}
		if host == "" {
			host = h
		}
		dirs = append(dirs, tensorboard.Dir{Name: id, Path: d})
	}
	if len(dirs) == 0 {
		return "", nil, &UsageError{Msg: fmt.Sprintf("sweep %s has no trial with a model dir yet (--model_dir, --logdir or --log_dir in its command; or --env %s=DIR)", name, tensorboard.EnvModelDir)}
	}
	return host, dirs, nil
}

// planMax bounds a plan.json read back.
const planMax = 64 << 20

func readPlan(dir string) (schedule.Plan, error) {
	data, err := localfile.Read(filepath.Join(dir, rundir.Plan), planMax)
	if err != nil {
		return schedule.Plan{}, err
	}
	var p schedule.Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return p, fmt.Errorf("%s: %v", filepath.Join(dir, rundir.Plan), err)
	}
	return p, nil
}

// listenTB listens on this machine's 127.0.0.1 (never every address: the
// forward is the user's own): --port, or 6006 and the next nine.
func listenTB(port int) (net.Listener, error) {
	if port != 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return nil, fmt.Errorf("--port %d: %w", port, err)
		}
		return ln, nil
	}
	var first error
	for p := defaultPort; p < defaultPort+10; p++ {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err == nil {
			return ln, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, fmt.Errorf("ports %d to %d are taken here (%v): choose one with --port", defaultPort, defaultPort+9, first)
}

// serveTensorBoard starts TensorBoard on host over dirs, forwards ln to
// it, calls ready once it answers, and stops it when ctx ends (nil: the
// user's Ctrl-C is how it ends) or when it ends by itself (an error).
func serveTensorBoard(ctx context.Context, o TensorBoardOptions, host string, dirs []tensorboard.Dir, secret string, ln net.Listener, ready func(where string)) error {
	fleet, err := openFleet(o.Hosts, o.Stderr, probeClaims)
	if err != nil {
		return err
	}
	defer fleet.Close()
	i := -1
	for j, h := range fleet.Hosts {
		if h.Name == host {
			i = j
		}
	}
	if i < 0 {
		return &UsageError{Msg: fmt.Sprintf("the run's model dir is on %s, which is not among the hosts", host), Fix: "give the hosts the run was started on (-H or --hosts)"}
	}
	inv, err := job.ProbeAll(ctx, fleet)
	if err != nil {
		return tbInterrupted(err)
	}
	if herr := inv.Hosts[i].Err; herr != nil {
		return fmt.Errorf("%s: %s", host, herr.Message)
	}
	exec := fleet.Executor(i)
	h := fleet.Hosts[i]
	dial, err := dialerOf(exec)
	if err != nil {
		return fmt.Errorf("%s: %v", host, err)
	}
	// The session outlives ctx: it is ended below, in order (stdin first,
	// so that the host's script stops TensorBoard).
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var stderr tailBuffer // TensorBoard's lines, the last said when it fails
	p, err := exec.Start(sctx, tensorboard.Command, pw, &stderr)
	if err != nil {
		return fmt.Errorf("%s: starting TensorBoard: %v", host, err)
	}
	end := func() {
		p.Close() // stdin's end: the script stops TensorBoard
		done := make(chan struct{})
		go func() { p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			p.Kill()
		}
		pw.Close()
	}
	if _, err := io.WriteString(p.Stdin(), tensorboard.Input(dirs, h.Workdir, h.Setup, h.Env, secret)); err != nil {
		end()
		return fmt.Errorf("%s: starting TensorBoard: %v", host, err)
	}
	words := make(chan tensorboard.Word, 4)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if w, ok := tensorboard.ParseWord(sc.Text()); ok {
				words <- w
			}
		}
		close(words)
	}()
	lastLines := stderr.last
	var port int
	select {
	case w, ok := <-words:
		switch {
		case !ok || w.Exited:
			end()
			return fmt.Errorf("%s: the TensorBoard script ended before starting it: %s", host, lastLines())
		case w.Err != "":
			end()
			if bin, ok := localTensorBoard(dirs); ok && strings.HasPrefix(w.Err, "no tensorboard") {
				fmt.Fprintf(o.Stderr, "tfhive: %s has no tensorboard after its setup; this machine's (%s) reads the shared directory\n", host, bin)
				return serveHere(ctx, o, bin, dirs, secret, ln, ready)
			}
			return fmt.Errorf("%s: %s", host, w.Err)
		}
		port = w.Port
	case <-time.After(tensorBoardStartWithin):
		// The script says the port once TensorBoard listens on it.
		end()
		return fmt.Errorf("%s: TensorBoard did not listen within %s:\n%s", host, tensorBoardStartWithin, lastLines())
	case <-ctx.Done():
		end()
		return tbInterrupted(ctx.Err())
	}
	exited := make(chan error, 1)
	go func() {
		for w := range words {
			if w.Exited {
				exited <- fmt.Errorf("TensorBoard ended (exit %d)", w.Exit)
				return
			}
		}
		exited <- errors.New("the connection to TensorBoard ended")
	}()
	// The script said the port once TensorBoard listened there: nil.
	err = serveUntil(ctx, o, host, secret, ln, func(ctx context.Context) (net.Conn, error) { return dial(ctx, port) }, nil, exited, lastLines, ready)
	end()
	return err
}

// serveUntil waits for TensorBoard (at where, under /secret/) to answer through up, then
// calls ready and forwards ln's connections to it until ctx ends (nil) or
// exited says it ended (an error, with its last lines). listening, when
// not nil, says before each request whether TensorBoard's own socket
// listens yet (an error: another's does, and nothing is sent there).
func serveUntil(ctx context.Context, o TensorBoardOptions, where, secret string, ln net.Listener, up func(context.Context) (net.Conn, error),
	listening func() (bool, error), exited <-chan error, lastLines func() string, ready func(string)) error {
	// TensorBoard answers once it has imported TensorFlow and bound its
	// port: asked through the forward itself, every half second.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return up(ctx) }, DisableKeepAlives: true}}
	deadline := time.Now().Add(tensorBoardStartWithin)
	for {
		ask := true
		if listening != nil {
			var err error
			if ask, err = listening(); err != nil {
				return err
			}
		}
		if ask {
			resp, err := client.Get("http://localhost/" + secret + "/")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
		}
		select {
		case err := <-exited:
			return fmt.Errorf("%s: %v before it served:\n%s", where, err, lastLines())
		case <-ctx.Done():
			return tbInterrupted(ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: TensorBoard did not answer within %s:\n%s", where, tensorBoardStartWithin, lastLines())
		}
	}
	ready(where)
	fctx, stopForward := context.WithCancel(ctx)
	forwarded := make(chan struct{})
	go func() { tensorboard.Forward(fctx, ln, up); close(forwarded) }()
	var gone error
	select {
	case <-ctx.Done():
	case err := <-exited:
		gone = fmt.Errorf("%s: %v:\n%s", where, err, lastLines())
	}
	stopForward()
	<-forwarded
	if gone == nil {
		fmt.Fprintf(o.Stderr, "tfhive: TensorBoard of %s on %s stopped\n", o.Name, where)
	}
	return gone
}

// tbInterrupted is nil for Ctrl-C before TensorBoard served: the user's
// way out, not a failure of it.
func tbInterrupted(err error) error {
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// dialerOf opens connections to the host's 127.0.0.1:port: a direct-tcpip
// channel of its SSH connection, or this machine's own for a local host.
func dialerOf(e remote.Executor) (func(context.Context, int) (net.Conn, error), error) {
	addr := func(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
	switch c := e.(type) {
	case *remote.SSH:
		client := c.Client()
		return func(ctx context.Context, port int) (net.Conn, error) {
			return client.DialContext(ctx, "tcp", addr(port))
		}, nil
	case remote.Local:
		var d net.Dialer
		return func(ctx context.Context, port int) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr(port)) }, nil
	}
	return nil, fmt.Errorf("its connection cannot forward a port")
}

// detachTensorBoard starts the keeper, this tfhive again in a session of
// its own, and returns once it serves, printing its address; a keeper
// already serving the run is said, not doubled.
func detachTensorBoard(o TensorBoardOptions, dir string) error {
	if st, pid, ok := liveTBKeeper(dir, o.Stderr); ok {
		fmt.Fprintln(o.Stdout, st.URL)
		fmt.Fprintf(o.Stderr, "tfhive: TensorBoard of %s already served (pid %d); tfhive tensorboard --stop %s stops it\n", o.Name, pid, o.Name)
		return nil
	}
	if err := rundir.Check(dir); err != nil {
		return &UsageError{Msg: fmt.Sprintf("%s: %v", dir, err)}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// Made new, 0600: TensorBoard's last lines, said there when it fails,
	// may hold the secret path, and another user may hold an older one open.
	logPath := filepath.Join(dir, rundir.TensorBoardLog)
	os.Remove(logPath)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("log dir: %w", err)
	}
	defer logf.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	defer pr.Close()
	cmd := osexec.Command(self, os.Args[1:]...)
	cmd.Env = append(os.Environ(), tbKeeperEnv+"=3")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{pw}
	// No terminal: no SIGHUP when this one closes, no Ctrl-C meant for it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		return fmt.Errorf("starting TensorBoard's keeper: %w", err)
	}
	word, _ := bufio.NewReader(pr).ReadString('\n')
	if url, ok := strings.CutPrefix(strings.TrimSpace(word), "started "); ok {
		cmd.Process.Release()
		fmt.Fprintln(o.Stdout, url)
		fmt.Fprintf(o.Stderr, "tfhive: TensorBoard of %s served until tfhive tensorboard --stop %s\n", o.Name, o.Name)
		return nil
	}
	// The keeper ended before serving: its own words say why, and its
	// code is this one's.
	werr := cmd.Wait()
	if said, err := os.ReadFile(filepath.Join(dir, rundir.TensorBoardLog)); err == nil {
		o.Stderr.Write(said)
	}
	code := 1
	var ee *osexec.ExitError
	if errors.As(werr, &ee) && ee.ExitCode() > 0 {
		code = ee.ExitCode()
	}
	return &ExitError{Code: code}
}

// liveTBKeeper is dir's detached TensorBoard, when its keeper is alive:
// the process of the user's that holds the run dir's tensorboard.lock
// (its state file, of the user's own, says the address; the pid in it is
// only what a file says). A state file whose lock nobody holds is stale:
// its keeper was killed (SIGKILL, a reboot), and its pid may be another
// process's by now; it is said on stderr and removed.
func liveTBKeeper(dir string, stderr io.Writer) (tbState, int, bool) {
	path := filepath.Join(dir, rundir.TensorBoard)
	data, err := localfile.ReadOwned(path, 1<<16)
	if err != nil {
		return tbState{}, 0, false
	}
	var st tbState
	jerr := json.Unmarshal(data, &st)
	pid, known := rundir.LockHolder(dir, rundir.TensorBoardLock)
	if !known {
		// No /proc/locks to ask: a lock held is all flock can say, and
		// the state's pid is then taken for its holder's.
		if release, err := rundir.HoldFileLock(dir, rundir.TensorBoardLock); err == nil {
			release()
		} else if errors.Is(err, rundir.ErrLockHeld) && jerr == nil && st.PID > 1 {
			pid = st.PID
		}
	}
	if pid == 0 {
		fmt.Fprintf(stderr, "tfhive: %s is stale (no keeper of that TensorBoard is alive): removed\n", path)
		os.Remove(path)
		return tbState{}, 0, false
	}
	return st, pid, true
}

// stopTensorBoards stops the detached TensorBoard of o.Name, or every one
// of the log root, and waits for each keeper to end (its TensorBoard on
// the host stopped first).
func stopTensorBoards(o TensorBoardOptions) error {
	root, err := checkLogRoot(o.LogRoot)
	if err != nil {
		return err
	}
	var dirs []string
	if o.Name != "" {
		if err := checkRunID("", o.Name); err != nil {
			return err
		}
		dirs = []string{filepath.Join(root, o.Name)}
	} else {
		ents, _ := os.ReadDir(root)
		for _, e := range ents {
			if e.IsDir() {
				dirs = append(dirs, filepath.Join(root, e.Name()))
			}
		}
	}
	stopped := 0
	for _, d := range dirs {
		st, pid, ok := liveTBKeeper(d, o.Stderr)
		if !ok {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
			return fmt.Errorf("TensorBoard of %s (pid %d): %v", filepath.Base(d), pid, err)
		}
		// Until it lets go of its lock (its pid could be reused once it is
		// gone; the lock's holder could not).
		deadline := time.Now().Add(30 * time.Second)
		for held, _ := rundir.LockHolder(d, rundir.TensorBoardLock); held == pid; held, _ = rundir.LockHolder(d, rundir.TensorBoardLock) {
			if time.Now().After(deadline) {
				return fmt.Errorf("TensorBoard of %s (pid %d) did not stop within 30s", filepath.Base(d), pid)
			}
			time.Sleep(50 * time.Millisecond)
		}
		fmt.Fprintf(o.Stdout, "stopped TensorBoard of %s (%s on %s)\n", filepath.Base(d), st.URL, st.Host)
		stopped++
	}
	if stopped == 0 {
		what := "in " + root
		if o.Name != "" {
			what = "of " + o.Name
		}
		fmt.Fprintf(o.Stderr, "tfhive: no detached TensorBoard %s\n", what)
	}
	return nil
}

// localTensorBoard is this machine's tensorboard, when it can serve dirs:
// one on the PATH, and every dir an absolute one that is here (a shared
// directory: the host's own disk is not).
func localTensorBoard(dirs []tensorboard.Dir) (string, bool) {
	bin, err := osexec.LookPath("tensorboard")
	if err != nil {
		return "", false
	}
	for _, d := range dirs {
		if st, err := os.Stat(d.Path); !filepath.IsAbs(d.Path) || err != nil || !st.IsDir() {
			return "", false
		}
	}
	return bin, true
}

// serveHere is serveTensorBoard with this machine's TensorBoard, for a
// host without one: bound to 127.0.0.1 on a port free a moment before,
// under /secret (read from a 0600 flagfile),
// in a process group of its own that is stopped whole (TERM, then KILL
// after 5 s) at the end.
func serveHere(ctx context.Context, o TensorBoardOptions, bin string, dirs []tensorboard.Dir, secret string, ln net.Listener, ready func(string)) error {
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := free.Addr().(*net.TCPAddr).Port
	free.Close()
	flagfile, removeFlags, err := tensorboard.FlagFile(secret)
	if err != nil {
		return fmt.Errorf("this machine: TensorBoard's flagfile: %v", err)
	}
	defer removeFlags()
	var tail tailBuffer
	cmd := osexec.Command(bin, tensorboard.Flags(dirs, port, flagfile)...)
	cmd.Stdout, cmd.Stderr = &tail, &tail
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("this machine: starting TensorBoard: %v", err)
	}
	exited := make(chan error, 1)
	waited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		if err == nil {
			err = errors.New("exit 0")
		}
		exited <- fmt.Errorf("TensorBoard ended (%v)", err)
		close(waited)
	}()
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-waited:
		case <-time.After(5 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-waited
		}
	}()
	var d net.Dialer
	up := func(ctx context.Context) (net.Conn, error) {
		return d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	}
	// The port is anyone's until TensorBoard binds it: nothing is asked
	// of it before the socket listening there is TensorBoard's (Linux's
	// /proc says; elsewhere the launch machine is taken to be the user's
	// own).
	var listening func() (bool, error)
	if runtime.GOOS == "linux" {
		pgid := cmd.Process.Pid
		listening = func() (bool, error) {
			there, ours, uid, err := tensorboard.Listener(port, pgid)
			switch {
			case err != nil:
				return false, fmt.Errorf("this machine: cannot tell whose port %d is: %v", port, err)
			case there && !ours:
				return false, fmt.Errorf("this machine: port %d of 127.0.0.1 is held by another process (uid %d), not the TensorBoard started: not served (run tfhive tensorboard again)", port, uid)
			}
			return there, nil
		}
	}
	return serveUntil(ctx, o, "this machine", secret, ln, up, listening, exited, tail.last, ready)
}

// tailBuffer keeps the last 64 KiB written to it, for the last lines of
// a TensorBoard that failed.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > 64<<10 {
		t.buf = t.buf[len(t.buf)-64<<10:]
	}
	return len(b), nil
}

// last is its last five lines.
func (t *tailBuffer) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, "\n")
}
