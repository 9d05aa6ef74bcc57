package sshtest_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// lifelineChildEnv makes TestHostsDieWithTheTest the child that starts
// the hosts.
const lifelineChildEnv = "SSHTEST_LIFELINE_CHILD"

// A test process killed outright (SIGKILL: what go test's -timeout ends
// with, and what runs no cleanup) takes its test hosts with it: a
// separate host's unshare, PID 1 and sshd, a plain host's sshd, their
// CPU hogs and busy processes, what their sessions left running, and a
// local user's processes and the user itself.
func TestHostsDieWithTheTest(t *testing.T) {
	if os.Getenv(lifelineChildEnv) == "1" {
		lifelineChild(t)
		return
	}
	sshtest.Require(t)
	child := exec.Command(os.Args[0], "-test.run=^TestHostsDieWithTheTest$", "-test.timeout=2m")
	child.Env = append(os.Environ(), lifelineChildEnv+"=1")
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	var pids []int
	userName := ""
	sc := bufio.NewScanner(out)
	for pids == nil && sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "USER: "); ok {
			userName = name
		}
		if list, ok := strings.CutPrefix(line, "PIDS:"); ok {
			for _, f := range strings.Fields(list) {
				pid, err := strconv.Atoi(f)
				if err != nil {
					t.Fatalf("child said %q", line)
				}
				pids = append(pids, pid)
			}
		}
	}
	if pids == nil {
		child.Wait()
		t.Fatal("the child said no pids")
	}
	// Held before the kill: a pidfd names the process, not a pid that
	// may be reused.
	type proc struct {
		pid, fd int
		what    string
	}
	var procs []proc
	for _, pid := range pids {
		what, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			t.Fatalf("pid %d (%s) is gone before the kill: %v", pid, what, err)
		}
		defer unix.Close(fd)
		procs = append(procs, proc{pid, fd, strings.ReplaceAll(string(what), "\x00", " ")})
	}
	if len(procs) < 4 {
		t.Fatalf("the child named %d processes, want its hosts' and theirs", len(procs))
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	killed := time.Now()
	const bound = 15 * time.Second
	for _, p := range procs {
		left := max(time.Until(killed.Add(bound)), 0)
		fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left.Milliseconds()))
		for err == unix.EINTR {
			n, err = unix.Poll(fds, int(max(time.Until(killed.Add(bound)), 0).Milliseconds()))
		}
		if n == 0 {
			t.Errorf("pid %d (%s) still runs %v after its test process was killed", p.pid, p.what, bound)
		}
	}
	t.Logf("%d processes gone %v after the kill", len(procs), time.Since(killed).Round(time.Millisecond))
	if userName != "" {
		for {
			if _, err := user.Lookup(userName); err != nil {
				break
			}
			if time.Since(killed) > bound {
				t.Errorf("user %s is still there %v after its test process was killed", userName, bound)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// lifelineChild starts hosts of every kind, says what runs for them and
// waits to be killed.
func lifelineChild(t *testing.T) {
	sh := func(f *sshtest.Fleet, host string) {
		sshAs(t, f, currentLogin(), host, "setsid sleep 1000 </dev/null >/dev/null 2>&1 &")
	}
	var fleets []*sshtest.Fleet
	p := sshtest.Profile{Name: "h", GPU: "busy-4gpu.xml", BusyPIDs: []string{"python train.py"}, CPUHogs: 1}
	plain := sshtest.StartOn(t, sshtest.Plain, p)
	sh(plain, "h")
	fleets = append(fleets, plain)
	var extra []int
	if os.Geteuid() == 0 {
		sep := sshtest.Start(t, p)
		sh(sep, "h")
		fleets = append(fleets, sep)
		u := sshtest.AddUser(t, "lifeline")
		c := u.Command("sleep", "1000")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		extra = append(extra, c.Process.Pid)
		fmt.Printf("USER: %s\n", u.Name)
	}
	pids := descendants(os.Getpid())
	for _, f := range fleets {
		for _, h := range f.Hosts {
			for _, l := range h.Leftovers() {
				pid, _ := strconv.Atoi(strings.Fields(l)[0])
				pids = append(pids, pid)
			}
		}
	}
	pids = append(pids, extra...)
	var list strings.Builder
	for _, pid := range pids {
		fmt.Fprintf(&list, " %d", pid)
	}
	fmt.Printf("PIDS:%s\n", list.String())
	select {} // until killed; -test.timeout bounds it
}

// descendants lists every live process under pid, this machine's view.
func descendants(pid int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// After the command's closing parenthesis: state, then ppid.
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[0] != "Z" {
			parent[p], _ = strconv.Atoi(f[1])
		}
	}
	var out []int
	for p := range parent {
		for a := parent[p]; a > 1; a = parent[a] {
			if a == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}
