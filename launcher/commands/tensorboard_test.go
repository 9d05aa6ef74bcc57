package commands

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/tensorboard"
	"github.com/tfhive/tfhive/schedule"
)

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	data, _ := json.Marshal(v)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func planOf(id, host string, argv ...string) schedule.Plan {
	return schedule.Plan{RunID: id, Tasks: []schedule.Task{{ID: "worker:0", Role: "worker", Host: host, Argv: argv}}}
}

// A run's TensorBoard dir and host come from its plan; a sweep's are
// every started trial's with a model dir, on the first's host; a run
// without one, or none at all, is refused before any host is reached.
func TestTensorBoardDirs(t *testing.T) {
	root := t.TempDir()
	writeJSONFile(t, filepath.Join(root, "r1", rundir.Plan), planOf("r1", "h1", "python3", "t.py", "--model_dir=/shared/r1"))
	writeJSONFile(t, filepath.Join(root, "bare", rundir.Plan), planOf("bare", "h1", "python3", "t.py"))
	writeJSONFile(t, filepath.Join(root, "lr", rundir.Sweep), record.Sweep{Name: "lr", Command: []string{"t"},
		Params: []record.SweepParam{{Name: "lr", Values: []string{"0.1", "0.01", "0.001"}}}})
	writeJSONFile(t, filepath.Join(root, "lr-001", rundir.Plan), planOf("lr-001", "h2", "t", "--logdir", "/s/lr-001"))
	writeJSONFile(t, filepath.Join(root, "lr-002", rundir.Plan), planOf("lr-002", "h3", "t", "--logdir", "/s/lr-002"))

	host, dirs, err := tensorBoardDirs(root, filepath.Join(root, "r1"), "r1")
	if err != nil || host != "h1" || len(dirs) != 1 || dirs[0] != (tensorboard.Dir{Name: "r1", Path: "/shared/r1"}) {
		t.Errorf("r1: %q %v %v", host, dirs, err)
	}
	host, dirs, err = tensorBoardDirs(root, filepath.Join(root, "lr"), "lr")
	if err != nil || host != "h2" || tensorboard.Spec(dirs) != "lr-001:/s/lr-001,lr-002:/s/lr-002" {
		t.Errorf("the sweep: %q %v %v", host, dirs, err)
	}
	var usage *UsageError
	if _, _, err := tensorBoardDirs(root, filepath.Join(root, "bare"), "bare"); !errors.As(err, &usage) || !strings.Contains(err.Error(), "names no model dir") {
		t.Errorf("a run without a model dir: %v", err)
	}
	var none *NoRunError
	if _, _, err := tensorBoardDirs(root, filepath.Join(root, "nosuch"), "nosuch"); !errors.As(err, &none) {
		t.Errorf("no such run: %v", err)
	}
}

// Bad usage is one line before anything is read or dialled; --stop with
// nothing to stop says so and succeeds; a record whose pid is no keeper
// of the user's is not signalled.
func TestTensorBoardUsageAndStop(t *testing.T) {
	root := t.TempDir()
	var out, errb bytes.Buffer
	o := TensorBoardOptions{Streams: Streams{Stdout: &out, Stderr: &errb}, LogRoot: root}
	var usage *UsageError
	for _, bad := range []TensorBoardOptions{{}, {Name: "../x"}, {Name: "r", Port: 70000}, {Stop: true, Detach: true}} {
		bad.Streams, bad.LogRoot = o.Streams, root
		if err := TensorBoard(context.Background(), bad); !errors.As(err, &usage) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	// A record of pid 1 (not a tfhive tensorboard) is left alone.
	writeJSONFile(t, filepath.Join(root, "r1", rundir.TensorBoard), tbState{PID: 1, URL: "http://localhost:6006/"})
	os.Chmod(filepath.Join(root, "r1", rundir.TensorBoard), 0o600)
	o.Stop = true
	if err := TensorBoard(context.Background(), o); err != nil || !strings.Contains(errb.String(), "no detached TensorBoard in "+root) || out.Len() != 0 {
		t.Errorf("--stop with nothing to stop: %v %q %q", err, out.String(), errb.String())
	}
}

// This machine's TensorBoard, for a host without one: started with the
// dirs' spec on 127.0.0.1 (a fake that serves HTTP as TensorBoard would,
// python3's http.server, in a child of its own), forwarded from ln once
// it answers; ctx's end stops its whole process group.
func TestServeHere(t *testing.T) {
	py, err := osexec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	bin := filepath.Join(t.TempDir(), "tensorboard")
	args := filepath.Join(t.TempDir(), "args")
	// It serves /SECRET/ (a dir of that name), as TensorBoard under
	// --path_prefix /SECRET; its args and flagfile are kept to look at.
	secret := tensorboard.NewSecret()
	site := t.TempDir()
	os.Mkdir(filepath.Join(site, secret), 0o755)
	fake := "#!/bin/sh\necho \"$@\" > " + args + "\ncat \"$2\" >> " + args + ".flags\nport=\nwhile [ $# -gt 0 ]; do [ \"$1\" = --port ] && port=$2; shift; done\n" +
		py + " -m http.server --directory " + site + " --bind 127.0.0.1 \"$port\" &\nwait\n"
	if err := os.WriteFile(bin, []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var errb bytes.Buffer
	o := TensorBoardOptions{Streams: Streams{Stdout: io.Discard, Stderr: &errb}, Name: "r1"}
	served := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- serveHere(ctx, o, bin, []tensorboard.Dir{{Name: "r1", Path: "/shared/r1"}}, secret, ln, func(where string) { served <- where })
	}()
	select {
	case where := <-served:
		if where != "this machine" {
			t.Errorf("served on %q", where)
		}
	case err := <-done:
		t.Fatalf("serveHere ended before serving: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("never served")
	}
	resp, err := http.Get("http://" + ln.Addr().String() + "/" + secret + "/")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("through the forward: %v %v", resp, err)
	}
	resp.Body.Close()
	if got, _ := os.ReadFile(args); !strings.HasPrefix(string(got), "--flagfile /") || !strings.Contains(string(got), " --logdir_spec r1:/shared/r1 --host 127.0.0.1 --port ") || strings.Contains(string(got), secret) {
		t.Errorf("tensorboard's arguments: %q", got)
	}
	if got, _ := os.ReadFile(args + ".flags"); string(got) != "--path_prefix=/"+secret+"\n" {
		t.Errorf("tensorboard's flagfile: %q", got)
	}
	cancel()
	if err := <-done; err != nil || !strings.Contains(errb.String(), "TensorBoard of r1 on this machine stopped") {
		t.Errorf("after ctx's end: %v %q", err, errb.String())
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("the forward still listens")
	}
	// The fake's server, a child of its own in its group, is gone too.
	got, _ := os.ReadFile(args)
	if ff := strings.Fields(string(got))[1]; fileExists(ff) {
		t.Errorf("the flagfile %s is left", ff)
	}
	port := strings.TrimSpace(string(got[strings.LastIndex(string(got), " ")+1:]))
	if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
		c.Close()
		t.Errorf("TensorBoard's port %s still answers", port)
	}
}

// The fallback is taken only with a tensorboard on the PATH and every dir
// an absolute directory here.
func TestLocalTensorBoard(t *testing.T) {
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "tensorboard"), []byte("#!/bin/sh\n"), 0o755)
	t.Setenv("PATH", bin)
	here := t.TempDir()
	if _, ok := localTensorBoard([]tensorboard.Dir{{Name: "a", Path: here}}); !ok {
		t.Error("a directory here")
	}
	for _, d := range []string{"relative", filepath.Join(here, "missing")} {
		if _, ok := localTensorBoard([]tensorboard.Dir{{Name: "a", Path: here}, {Name: "b", Path: d}}); ok {
			t.Errorf("%s taken", d)
		}
	}
	t.Setenv("PATH", t.TempDir())
	if _, ok := localTensorBoard([]tensorboard.Dir{{Name: "a", Path: here}}); ok {
		t.Error("no tensorboard here, taken")
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// A state file left by a keeper killed with SIGKILL names a pid that may
// be another process by now, even a tfhive tensorboard of the user's:
// --stop signals only the holder of the run dir's tensorboard.lock, and
// a state file that nobody holds the lock of is stale: said, removed,
// the process it names left alone.
func TestTensorBoardStopStaleState(t *testing.T) {
	if _, err := os.Stat("/proc/locks"); err != nil {
		t.Skip("no /proc/locks")
	}
	py, err := osexec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	root := t.TempDir()
	dir := filepath.Join(root, "r1")
	// The reused pid: a process whose command line is a tfhive
	// tensorboard's, waiting on its stdin.
	decoy := osexec.Command("sh", "-c", "read x", "tfhive", "tensorboard", "other")
	decoyIn, _ := decoy.StdinPipe()
	if err := decoy.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { decoyIn.Close(); decoy.Wait() }()
	writeJSONFile(t, filepath.Join(dir, rundir.TensorBoard), tbState{PID: decoy.Process.Pid, URL: "http://localhost:6006/x/"})
	os.Chmod(filepath.Join(dir, rundir.TensorBoard), 0o600)
	var out, errb bytes.Buffer
	o := TensorBoardOptions{Streams: Streams{Stdout: &out, Stderr: &errb}, LogRoot: root, Name: "r1", Stop: true}
	if err := TensorBoard(context.Background(), o); err != nil || out.Len() != 0 || !strings.Contains(errb.String(), "is stale") {
		t.Errorf("--stop of a stale state: %v %q %q", err, out.String(), errb.String())
	}
	if fileExists(filepath.Join(dir, rundir.TensorBoard)) {
		t.Error("the stale state file is left")
	}
	if !running(decoy.Process.Pid) {
		t.Fatal("the process the stale state named was signalled")
	}

	// A live keeper: the lock's holder (a python3 of the test's), not the
	// pid the state file says, is the one stopped.
	writeJSONFile(t, filepath.Join(dir, rundir.TensorBoard), tbState{PID: decoy.Process.Pid, URL: "http://localhost:6006/x/", Host: "h1"})
	os.Chmod(filepath.Join(dir, rundir.TensorBoard), 0o600)
	lock := filepath.Join(dir, rundir.TensorBoardLock)
	holder := osexec.Command(py, "-c", "import fcntl, sys; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()", lock)
	hin, _ := holder.StdinPipe()
	hout, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer hin.Close()
	if line, _ := bufio.NewReader(hout).ReadString('\n'); line != "held\n" {
		t.Fatalf("the holder said %q", line)
	}
	out.Reset()
	errb.Reset()
	waited := make(chan error, 1)
	go func() { waited <- holder.Wait() }()
	if err := TensorBoard(context.Background(), o); err != nil || !strings.Contains(out.String(), "stopped TensorBoard of r1 (http://localhost:6006/x/ on h1)") {
		t.Errorf("--stop of a live keeper: %v %q %q", err, out.String(), errb.String())
	}
	select {
	case err := <-waited:
		if ee, ok := err.(*osexec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
			t.Errorf("the holder ended: %v", err)
		}
	case <-time.After(20 * time.Second):
		holder.Process.Kill()
		t.Fatal("the lock's holder was not stopped")
	}
	if !running(decoy.Process.Pid) {
		t.Error("the state file's pid was signalled")
	}
}

// running: not gone and not a zombie (a child killed but not yet reaped).
func running(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := strings.LastIndexByte(string(data), ')')
	return err == nil && i > 0 && len(data) > i+2 && data[i+2] != 'Z'
}
