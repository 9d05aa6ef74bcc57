package tensorboard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/schedule"
)

// The model dir is the chief's (else worker 0's, else the first task's):
// TFHIVE_MODEL_DIR in its env, else --model_dir, --logdir or --log_dir
// in its command line, = or a word apart; a flag after -- of the
// command's own, or a value that is a flag, is not one.
func TestModelDir(t *testing.T) {
	task := func(role string, i int, host string, env map[string]string, argv ...string) schedule.Task {
		return schedule.Task{Role: role, Index: i, Host: host, Env: env, Argv: argv}
	}
	for _, c := range []struct {
		name      string
		tasks     []schedule.Task
		host, dir string
		wantErr   bool
	}{
		{"flag =", []schedule.Task{task("worker", 0, "h1", nil, "python3", "train.py", "--model_dir=/shared/r1")}, "h1", "/shared/r1", false},
		{"flag word", []schedule.Task{task("worker", 0, "h1", nil, "python3", "train.py", "--logdir", "/tmp/tb")}, "h1", "/tmp/tb", false},
		{"single dash, log-dir", []schedule.Task{task("worker", 0, "h1", nil, "python3", "-u", "t.py", "-log-dir=runs/x")}, "h1", "runs/x", false},
		{"env wins", []schedule.Task{task("worker", 0, "h1", map[string]string{EnvModelDir: "/e"}, "t", "--model_dir=/f")}, "h1", "/e", false},
		{"the chief first", []schedule.Task{task("ps", 0, "p", nil, "t", "--model_dir=/ps"), task("worker", 0, "w", nil, "t", "--model_dir=/w"),
			task("chief", 0, "c", nil, "t", "--model_dir=/c")}, "w", "/w", false},
		{"worker 0 over ps", []schedule.Task{task("ps", 0, "p", nil, "t", "--model_dir=/ps"), task("worker", 1, "w1", nil, "t", "--model_dir=/w1"),
			task("worker", 0, "w0", nil, "t", "--model_dir=/w0")}, "w0", "/w0", false},
		{"a task without, another with", []schedule.Task{task("worker", 0, "a", nil, "t"), task("worker", 1, "b", nil, "t", "--model_dir=/b")}, "b", "/b", false},
		{"a value that is a flag", []schedule.Task{task("worker", 0, "h", nil, "t", "--logdir", "--lr=1")}, "", "", true},
		{"none", []schedule.Task{task("worker", 0, "h", nil, "python3", "train.py", "--lr=0.1")}, "", "", true},
		{"a longer name", []schedule.Task{task("worker", 0, "h", nil, "t", "--model_dir_x=/no")}, "", "", true},
	} {
		host, dir, err := ModelDir(schedule.Plan{RunID: "r1", Tasks: c.tasks})
		if (err != nil) != c.wantErr || host != c.host || dir != c.dir {
			t.Errorf("%s: %q %q %v, want %q %q (error %v)", c.name, host, dir, err, c.host, c.dir, c.wantErr)
		}
	}
}

func TestWordsAndSpec(t *testing.T) {
	for line, want := range map[string]Word{
		"@@tfhive-tensorboard port=41234 pid=77\r\n": {Port: 41234, PID: 77},
		"@@tfhive-tensorboard error no tensorboard":  {Err: "no tensorboard"},
		"@@tfhive-tensorboard exit 143":              {Exited: true, Exit: 143},
	} {
		if got, ok := ParseWord(line); !ok || got != want {
			t.Errorf("%q: %+v %v, want %+v", line, got, ok, want)
		}
	}
	for _, line := range []string{"port=1 pid=2", "@@tfhive-tensorboard port=0 pid=1", "@@tfhive-tensorboard port=70000 pid=1", "TensorBoard 2.21.0 at http://127.0.0.1:6006/"} {
		if w, ok := ParseWord(line); ok {
			t.Errorf("%q read as %+v", line, w)
		}
	}
	if got := Spec([]Dir{{"a-001", "/s/a-001"}, {"a-002", "/s/a 002"}}); got != "a-001:/s/a-001,a-002:/s/a 002" {
		t.Errorf("spec %q", got)
	}
	if CheckDir("/s/a,b") == nil || CheckDir("/s/a b") != nil {
		t.Error("CheckDir")
	}
}

// listen, in a fake tensorboard, listens on its --port of 127.0.0.1 as
// TensorBoard does, until killed.
const listen = `port=; prev=; for a in "$@"; do [ "$prev" = --port ] && port=$a; prev=$a; done
exec python3 -c 'import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
time.sleep(300)' "$port"`

// The script as the host runs it, under Command, with a tensorboard of
// the test's own on the PATH (a shell that listens on its port): it says
// the port it chose and the pid once TensorBoard listens there; stdin's end stops the fake TensorBoard's whole
// process group, and the script says its exit. A missing tensorboard and
// a failing setup are said.
func TestScriptStopsTensorBoardOnStdinEnd(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	bin := t.TempDir()
	// It says its arguments, then its flagfile's text and the modes of
	// the file and its dir.
	fake := "#!/bin/sh\necho \"fake tensorboard $* | $(cat \"$2\") $(stat -c %a \"$2\" \"${2%/*}\" | tr '\\n' ' ')\" >&2\nsleep 300 &\n" + listen + "\n"
	if err := writeExec(bin+"/tensorboard", fake); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", Command)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	errp, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	secret := NewSecret()
	io.WriteString(in, Input([]Dir{{"r1", "/m"}}, "", "export PATH="+bin+":$PATH", map[string]string{"FROM_HOSTS": "x"}, secret))
	buf := make([]byte, 256)
	n, _ := out.Read(buf)
	w, ok := ParseWord(strings.SplitN(string(buf[:n]), "\n", 2)[0])
	if !ok || w.Port == 0 || w.PID == 0 {
		t.Fatalf("the script said %q", buf[:n])
	}
	// The fake says its arguments before stdin ends: it was started, with
	// the secret path in a flagfile only the user can read, never on its
	// command line (every local user reads that).
	line, _ := bufio.NewReader(errp).ReadString('\n')
	args, flags, _ := strings.Cut(line, " | ")
	if !strings.HasPrefix(args, "fake tensorboard --flagfile /") || !strings.Contains(args, " --logdir_spec r1:/m --host 127.0.0.1 --port ") || strings.Contains(args, secret) {
		t.Errorf("tensorboard's arguments: %q", args)
	}
	if want := "--path_prefix=/" + secret + " 600 700 \n"; flags != want || len(secret) != 32 {
		t.Errorf("tensorboard's flagfile and its modes: %q, want %q", flags, want)
	}
	flagfile := strings.Fields(args)[3]
	in.Close()
	rest, _ := io.ReadAll(out)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the script did not end after stdin's end")
	}
	if !strings.Contains(string(rest), "@@tfhive-tensorboard exit") {
		t.Errorf("no exit said: %q", rest)
	}
	if _, err := os.Stat(filepath.Dir(flagfile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the flagfile's dir is left: %v", err)
	}
	// Its group is gone, the sleep it started too (once reaped: the
	// sleep's parent was the fake).
	for deadline := time.Now().Add(10 * time.Second); syscall.Kill(-w.PID, 0) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the fake TensorBoard's process group is still there")
		}
	}

	for setup, want := range map[string]string{"": "no tensorboard on the PATH", "false": "setup failed: false"} {
		cmd := exec.Command("sh", "-c", Command)
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		cmd.Stdin = strings.NewReader(Input([]Dir{{"r1", "/m"}}, "", setup, nil, "ab"))
		got, _ := cmd.Output()
		if !strings.Contains(string(got), "@@tfhive-tensorboard error "+want) {
			t.Errorf("setup %q: %q", setup, got)
		}
	}
}

// Forward carries each connection to the one dial opens, both ways, and
// on ctx's end closes the listener and every connection.
func TestForward(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "tags of "+r.URL.Path) }))
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var dials atomic.Int32
	go func() {
		Forward(ctx, ln, func(ctx context.Context) (net.Conn, error) {
			dials.Add(1)
			var d net.Dialer
			return d.DialContext(ctx, "tcp", srv.Listener.Addr().String())
		})
		close(done)
	}()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 3 {
		resp, err := client.Get("http://" + ln.Addr().String() + "/data/plugin/scalars/tags")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "tags of /data/plugin/scalars/tags" {
			t.Errorf("request %d: %q", i, body)
		}
	}
	// An idle connection open at the end is closed too.
	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Forward did not return after ctx's end")
	}
	idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); err == nil {
		t.Error("a connection is still open")
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("the listener is still open")
	}
	if n := dials.Load(); n != 4 {
		t.Errorf("%d dials for 4 connections (3 requests, 1 idle)", n)
	}
}

// This machine's TensorBoard reads its secret from a 0600 file in a 0700
// dir, and its arguments do not hold it; remove takes both away.
func TestFlagFile(t *testing.T) {
	secret := NewSecret()
	if secret == NewSecret() || len(secret) != 32 {
		t.Fatalf("secrets %q", secret)
	}
	path, remove, err := FlagFile(secret)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	fi, _ := os.Stat(path)
	di, _ := os.Stat(filepath.Dir(path))
	if err != nil || string(data) != "--path_prefix=/"+secret+"\n" || fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Errorf("flagfile %q (%v), modes %v %v", data, err, fi.Mode(), di.Mode())
	}
	if args := strings.Join(Flags([]Dir{{"r", "/m"}}, 7, path), " "); strings.Contains(args, secret) || !strings.HasPrefix(args, "--flagfile "+path+" ") {
		t.Errorf("arguments %q", args)
	}
	remove()
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("left: %v", err)
	}
}

// The port the script chose is free a moment before TensorBoard binds
// it: a process of another (here, one outside TensorBoard's process
// group) that listens there first would get the secret path and the
// user's browser. The script says no port then, but an error naming the
// port and who holds it, and stops TensorBoard; one that ends before it
// listens is said too.
func TestScriptRefusesSquattedPort(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	bin := t.TempDir()
	squatter := filepath.Join(bin, "squatter.pid")
	// The fake starts a listener on its port in a session of its own (a
	// colleague's process, as far as the group goes), then waits.
	fake := "#!/bin/sh\n" + strings.Replace(listen, "exec python3", "setsid python3", 1) + " </dev/null >/dev/null 2>&1 &\necho $! >" + squatter + "\nsleep 300\n"
	if err := writeExec(bin+"/tensorboard", fake); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(squatter); err == nil {
			var pid int
			if _, err := fmt.Sscan(string(b), &pid); err == nil && pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	// run is what the script says, its stdin (tfhive's session) open
	// until its first word.
	run := func() string {
		t.Helper()
		cmd := exec.Command("sh", "-c", Command)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		cmd.WaitDelay = 20 * time.Second
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Wait()
		defer in.Close()
		io.WriteString(in, Input([]Dir{{"r1", "/m"}}, "", "export PATH="+bin+":$PATH", nil, NewSecret()))
		line, _ := bufio.NewReader(out).ReadString('\n')
		return line
	}
	got := run()
	if !regexp.MustCompile(`@@tfhive-tensorboard error port \d+ of 127\.0\.0\.1 is held by another process \(uid \d+\), not the TensorBoard started`).MatchString(got) || strings.Contains(got, "port=") {
		t.Errorf("a squatted port: the script said %q", got)
	}
	if err := writeExec(bin+"/tensorboard", "#!/bin/sh\nexit 3\n"); err != nil {
		t.Fatal(err)
	}
	if got := run(); !regexp.MustCompile(`@@tfhive-tensorboard error TensorBoard ended \(exit 3\) before it listened on 127\.0\.0\.1:\d+`).MatchString(got) || strings.Contains(got, "port=") {
		t.Errorf("a TensorBoard that ended at once: the script said %q", got)
	}
}

// Listener tells TensorBoard's own listening socket from another's: a
// socket listening on the port that a process of the group holds, or
// that none does.
func TestListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp")
	}
	there, ours, uid, err := Listener(port, syscall.Getpgrp())
	if err != nil || !there || !ours || uid != os.Geteuid() {
		t.Errorf("this test's own listener, its group: %t %t %d %v", there, ours, uid, err)
	}
	// pid 1's group is not this test's.
	if there, ours, _, err := Listener(port, 1); err != nil || !there || ours {
		t.Errorf("another group: %t %t %v, want listening, not ours", there, ours, err)
	}
	ln.Close()
	if there, _, _, err := Listener(port, syscall.Getpgrp()); err != nil || there {
		t.Errorf("closed: %t %v", there, err)
	}
}
