package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// sigwho is a task that holds its GPUs until SIGTERM and then says who
// sent it: sigwaitinfo gives the sender's uid and pid as the kernel
// recorded them, which no file and no other user can forge. (No braces:
// tfhive would read them as placeholders.)
const sigwho = `import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
print("ready pid=%d gpus=%s" % (os.getpid(), os.environ["CUDA_VISIBLE_DEVICES"]), flush=True)
i = signal.sigwaitinfo([signal.SIGTERM])
print("term from uid=%d pid=%d" % (i.si_uid, i.si_pid), flush=True)
sys.exit(9)
`

// preemptHost is one shared 2-GPU host whose policy lets high runs of
// user high preempt low runs; low holds them with a low run.
type preemptHost struct {
	f         *sshtest.Fleet
	low, high *sshtest.User
}

func newPreemptHost(t *testing.T) *preemptHost {
	f := sshtest.StartShared(t, sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml", AliveInterval: 1})
	p := &preemptHost{f: f, low: sshtest.AddUser(t, "low"), high: sshtest.AddUser(t, "high")}
	if err := f.Host("h1").SetPolicy("preempt_low: true\nhigh:\n  users: [" + p.high.Name + "]\n"); err != nil {
		t.Fatal(err)
	}
	return p
}

// runAs is `tfhive run` logged in to the fleet as u.
func (p *preemptHost) runAs(t *testing.T, u *sshtest.User, args ...string) []string {
	argv, _ := runArgs(t, p.f, args...)
	argv[2] = p.f.HostsYAMLAs(t, u)
	return argv
}

// startLow starts the low user's low run holding both GPUs with sigwho,
// and returns it once the task said ready, with the task's pid and the
// GPUs it holds.
func (p *preemptHost) startLow(t *testing.T) (low *running, pid int, gpus string) {
	t.Helper()
	args := p.runAs(t, p.low, "--workers", "1", "--gpus-per-worker", "2", "--priority", "low", "--sample", "0",
		"--name", "low-a", "--", "/usr/bin/python3", "-c", sigwho)
	low = startTfhive(t, p.f, readStdout, args...)
	if !low.readUntil(func(l string) bool {
		_, ready, ok := strings.Cut(l, "] ready ")
		n, _ := fmt.Sscanf(ready, "pid=%d gpus=%s", &pid, &gpus)
		return ok && n == 2
	}) {
		low.Wait()
		t.Fatalf("the low run did not start:\n%s%s", low.read.String(), low.other.String())
	}
	return low, pid, gpus
}

// A high run of one user preempts the low run of another on a host whose
// policy allows it: the low run's own supervisor (running as the low
// user) sends the SIGTERM — the high user could not, and nothing of
// theirs tried — the low run exits 5 naming the high run and its user,
// and the high run starts on the GPUs the low run held.
func TestPreemptAcrossUsers(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	p := newPreemptHost(t)
	low, _, gpus := p.startLow(t)

	args := p.runAs(t, p.high, "--workers", "1", "--gpus-per-worker", "2", "--priority", "high", "--wait", "2m",
		"--name", "high-b", "--", "sh", "-c", "echo ran as $(id -un) gpus=$CUDA_VISIBLE_DEVICES")
	high := startTfhive(t, p.f, readStdout, args...)

	low.readAll()
	err := low.Wait()
	if code := low.ProcessState.ExitCode(); code != 5 {
		t.Fatalf("low run: %v (exit %d), want exit 5\n%s%s", err, code, low.read.String(), low.other.String())
	}
	wantContains(t, "low run's output", low.read.String(), "run low-a preempted",
		"preempted by run high-b of "+p.high.Name+" (--priority high)", "(exit 5)")
	// The kernel's word on who signalled the task: the low user.
	term := "term from uid=" + strconv.Itoa(p.low.UID) + " "
	if !strings.Contains(low.read.String(), term) {
		t.Errorf("the task's SIGTERM did not come from a process of %s (uid %d):\n%s", p.low.Name, p.low.UID, low.read.String())
	}

	high.readAll()
	if err := high.Wait(); err != nil {
		t.Fatalf("high run: %v\n%s%s", err, high.read.String(), high.other.String())
	}
	wantContains(t, "high run's output", high.read.String(), "ran as "+p.high.Name+" gpus="+gpus+"\n", "run high-b succeeded")
	wantContains(t, "high run's stderr", high.other.String(), "tfhive: preempting run low-a of "+p.low.Name+" (--priority low) on h1 for its 2 GPUs")
}

// A colleague the policy does not allow --priority high tries anyway:
// tfhive asks nothing of the low run; then, by hand, they hold a bare
// lock named as a request to preempt it, and a request and a high ticket
// whose holders' command lines are exactly tfhive's. The low run's watch
// finds them, believes the kernel about who holds them, and leaves the
// run alone, looking again and again. A run of the user the policy names
// then preempts it, the forgeries still held: the forged high ticket,
// older than its own, keeps nothing from it.
func TestPreemptForgedRequest(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	p := newPreemptHost(t)
	forger := sshtest.AddUser(t, "forger")
	low, pid, _ := p.startLow(t)
	lowDone := make(chan struct{})
	go func() { low.readAll(); low.Wait(); close(lowDone) }()

	r := tfhive(t, p.f.Env(), p.f.Dir, p.runAs(t, forger, "--workers", "1", "--gpus-per-worker", "2", "--priority", "high",
		"--wait", "3s", "--name", "forged", "--", "true")...)
	// Its wait ends with nothing asked of the low run. (The GPUs being
	// held, the error names the claims, not the policy rule: the rule
	// refuses free GPUs only.)
	wantCode(t, r, 3)
	if strings.Contains(r.stderr, "preempting") {
		t.Errorf("the forger's run asked to preempt:\n%s", r.stderr)
	}

	dir := p.f.Host("h1").ClaimsPath()
	hold := func(file string, label ...string) {
		background(t, p.f.Host("h1"), forger, "exec flock -n -o "+dir+"/"+file+" bash --norc -c 'echo ready; exec sleep 300' "+strings.Join(label, " "))
	}
	background(t, p.f.Host("h1"), forger, "exec flock "+dir+"/tfhive-preempt.crude.low-a.lock sh -c 'echo ready; exec sleep 300'")
	hold("tfhive-ticket.0.1000.forged.lock", "tfhive-ticket", dir, "0.1000.forged", "forged", "high", "1000", "2")
	hold("tfhive-preempt.forged.low-a.lock", "tfhive-preempt", dir, "forged.low-a", "forged", "low-a")

	// The watch globs the claims directory once a second, and reads the
	// holders of what it finds; once it acts it never looks again. So
	// each time the directory is opened after the forgeries were in
	// place but the last, the watch has weighed them and said no. The
	// bound below only fails a watch that never looks at all.
	opens := dirOpens(t, p.f.Host("h1").ClaimsDir())
	for range 3 {
		select {
		case <-opens:
		case <-lowDone:
			t.Fatalf("the low run ended:\n%s%s", low.read.String(), low.other.String())
		case <-time.After(time.Minute):
			t.Fatal("the low run's watch never looked at the claims directory")
		}
	}
	select {
	case <-lowDone:
		t.Fatalf("the low run ended:\n%s%s", low.read.String(), low.other.String())
	default:
	}
	if st, err := os.ReadFile(filepath.Join(p.f.Host("h1").Proc(), strconv.Itoa(pid), "status")); err != nil || !strings.Contains(string(st), "\nUid:\t"+strconv.Itoa(p.low.UID)+"\t") {
		t.Fatalf("the low run's task %d is gone: %v", pid, err)
	}

	args := p.runAs(t, p.high, "--workers", "1", "--gpus-per-worker", "2", "--priority", "high", "--wait", "20s",
		"--name", "high-b", "--", "echo", "high-ran")
	high := startTfhive(t, p.f, readStdout, args...)
	highDone := make(chan struct{})
	go func() { high.readAll(); high.Wait(); close(highDone) }()
	select {
	case <-lowDone:
	case <-highDone:
		t.Fatalf("the high run ended, the low run still runs:\n%s%s", high.read.String(), high.other.String())
	}
	if code := low.ProcessState.ExitCode(); code != 5 {
		t.Fatalf("low run: exit %d, want 5\n%s%s", code, low.read.String(), low.other.String())
	}
	wantContains(t, "low run's output", low.read.String(), "preempted by run high-b of "+p.high.Name+" (--priority high)",
		"term from uid="+strconv.Itoa(p.low.UID)+" ")
	<-highDone
	if code := high.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("high run: exit %d\n%s%s", code, high.read.String(), high.other.String())
	}
	wantContains(t, "high run's output", high.read.String(), "high-ran")
}

// dirOpens reports each opening of dir itself (a listing, a glob), from
// now on.
func dirOpens(t *testing.T, dir string) <-chan struct{} {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_OPEN); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "inotify")
	t.Cleanup(func() { f.Close() })
	ch := make(chan struct{}, 1024)
	go func() {
		buf := make([]byte, 64*1024)
		for {
			n, err := f.Read(buf)
			if err != nil {
				return
			}
			for off := 0; off+syscall.SizeofInotifyEvent <= n; {
				ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
				if ev.Mask&syscall.IN_ISDIR != 0 && ev.Len == 0 {
					select {
					case ch <- struct{}{}:
					default:
					}
				}
				off += syscall.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}()
	return ch
}

// A colleague makes the request's file first (its name, HIGH.LOW, is
// anyone's to guess once the high run's ticket and the low run's claims
// are there; the test makes it before, so that it is there when the
// ticket appears): the high run says whose it is, asks under a name
// nobody could make ahead of it, and the low run is preempted all the
// same; the colleague's file is left as it was.
func TestPreemptPremadeRequest(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	p := newPreemptHost(t)
	mallory := sshtest.AddUser(t, "mallory")
	low, _, gpus := p.startLow(t)
	dir := p.f.Host("h1").ClaimsPath()
	premade := dir + "/tfhive-preempt.high-b.low-a.lock"
	out, err := p.f.Host("h1").Command(mallory, "/bin/sh", "-c", ": >"+premade).CombinedOutput()
	if err != nil {
		t.Fatalf("as mallory: %v\n%s", err, out)
	}

	args := p.runAs(t, p.high, "--workers", "1", "--gpus-per-worker", "2", "--priority", "high", "--wait", "15s",
		"--name", "high-b", "--", "sh", "-c", "echo high-ran gpus=$CUDA_VISIBLE_DEVICES")
	high := startTfhive(t, p.f, readStdout, args...)
	lowDone, highDone := make(chan struct{}), make(chan struct{})
	go func() { low.readAll(); low.Wait(); close(lowDone) }()
	go func() { high.readAll(); high.Wait(); close(highDone) }()
	select {
	case <-lowDone:
	case <-highDone:
		t.Fatalf("the high run ended, the low run still runs:\n%s%s", high.read.String(), high.other.String())
	}
	if code := low.ProcessState.ExitCode(); code != 5 {
		t.Fatalf("low run: exit %d, want 5\n%s%s", code, low.read.String(), low.other.String())
	}
	wantContains(t, "low run's output", low.read.String(), "preempted by run high-b of "+p.high.Name+" (--priority high)",
		"term from uid="+strconv.Itoa(p.low.UID)+" ")
	<-highDone
	if code := high.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("high run: exit %d\n%s%s", code, high.read.String(), high.other.String())
	}
	wantContains(t, "high run's output", high.read.String(), "high-ran gpus="+gpus+"\n")
	wantContains(t, "high run's stderr", high.other.String(),
		"tfhive: warning: h1: tfhive-preempt.high-b.low-a.lock was made by "+mallory.Name+", not by this run",
		"tfhive: preempting run low-a of "+p.low.Name+" (--priority low) on h1 for its 2 GPUs")
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(p.f.Host("h1").ClaimsDir(), filepath.Base(premade)), &st); err != nil || int(st.Uid) != mallory.UID {
		t.Errorf("mallory's file: %v, uid %d", err, st.Uid)
	}
}

// On a host whose policy says preempt_low: true and names no high users,
// anyone may use --priority high, and so preempt a low run: but only by
// a high run that really waits for its GPUs. A colleague's hand-made high
// ticket that asks 1 GPU, with 2 of the 4 free, and a request naming the
// low run, stop nothing; nor does a ticket label held on another file
// than the ticket's, asking all 4. A real high run of another user that
// needs the low run's GPUs (all 4) preempts it.
func TestPreemptNeedsAWaitingRun(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.StartShared(t, sshtest.Profile{Name: "h1", GPU: "idle-4gpu.xml", AliveInterval: 1})
	p := &preemptHost{f: f, low: sshtest.AddUser(t, "low"), high: sshtest.AddUser(t, "high")}
	mallory := sshtest.AddUser(t, "mallory")
	if err := f.Host("h1").SetPolicy("preempt_low: true\n"); err != nil {
		t.Fatal(err)
	}
	low, pid, _ := p.startLow(t)
	lowDone := make(chan struct{})
	go func() { low.readAll(); low.Wait(); close(lowDone) }()

	dir := f.Host("h1").ClaimsPath()
	var forged []*exec.Cmd
	hold := func(file string, label ...string) {
		forged = append(forged, background(t, f.Host("h1"), mallory, "exec flock -n -o "+dir+"/"+file+" bash --norc -c 'echo ready; exec sleep 300' "+strings.Join(label, " ")))
	}
	hold("tfhive-ticket.0.1000.fake.lock", "tfhive-ticket", dir, "0.1000.fake", "fake", "high", "1000", "1")
	hold("tfhive-preempt.fake.low-a.lock", "tfhive-preempt", dir, "fake.low-a", "fake", "low-a")
	hold("decoy.lock", "tfhive-ticket", dir, "0.1000.fake2", "fake2", "high", "1000", "4")
	hold("tfhive-preempt.fake2.low-a.lock", "tfhive-preempt", dir, "fake2.low-a", "fake2", "low-a")

	// Each opening of the directory but the last after the forgeries were
	// in place is a look of the watch at them that said no.
	opens := dirOpens(t, f.Host("h1").ClaimsDir())
	for range 3 {
		select {
		case <-opens:
		case <-lowDone:
			t.Fatalf("the low run ended:\n%s%s", low.read.String(), low.other.String())
		case <-time.After(time.Minute):
			t.Fatal("the low run's watch never looked at the claims directory")
		}
	}
	select {
	case <-lowDone:
		t.Fatalf("the low run ended:\n%s%s", low.read.String(), low.other.String())
	default:
	}
	if st, err := os.ReadFile(filepath.Join(f.Host("h1").Proc(), strconv.Itoa(pid), "status")); err != nil || !strings.Contains(string(st), "\nUid:\t"+strconv.Itoa(p.low.UID)+"\t") {
		t.Fatalf("the low run's task %d is gone: %v", pid, err)
	}
	// The forged high ticket would keep a GPU in the queue: gone first.
	for _, c := range forged {
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		c.Wait()
	}

	args := p.runAs(t, p.high, "--workers", "1", "--gpus-per-worker", "4", "--priority", "high", "--wait", "20s",
		"--name", "high-b", "--", "echo", "high-ran")
	high := startTfhive(t, f, readStdout, args...)
	highDone := make(chan struct{})
	go func() { high.readAll(); high.Wait(); close(highDone) }()
	select {
	case <-lowDone:
	case <-highDone:
		t.Fatalf("the high run ended, the low run still runs:\n%s%s", high.read.String(), high.other.String())
	}
	if code := low.ProcessState.ExitCode(); code != 5 {
		t.Fatalf("low run: exit %d, want 5\n%s%s", code, low.read.String(), low.other.String())
	}
	wantContains(t, "low run's output", low.read.String(), "preempted by run high-b of "+p.high.Name+" (--priority high)")
	<-highDone
	if code := high.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("high run: exit %d\n%s%s", code, high.read.String(), high.other.String())
	}
	wantContains(t, "high run's output", high.read.String(), "high-ran")
}
