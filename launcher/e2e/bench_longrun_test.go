package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// The long-run sections: how soon output flows again once a lost link is
// back (reconnect), and what `run --detach` costs against a foreground
// start (detach).

// liveRun is tfhive started in the background, its stdout read line by
// line as it comes and each line stamped when read: the stopwatch for
// "output on the console", which execute (the whole run) cannot give.
type liveRun struct {
	b      *bench
	what   string
	cmd    *exec.Cmd
	start  time.Time
	stderr bytes.Buffer
	more   chan struct{} // a line or the end came; capacity 1

	mu     sync.Mutex
	lines  []stamped
	eof    bool
	next   int // the first line until has not looked at
	waited bool
}

type stamped struct {
	at   time.Time
	text string
}

func (b *bench) startLive(what string, env []string, argv ...string) *liveRun {
	b.t.Helper()
	l := &liveRun{b: b, what: what, cmd: exec.Command(argv[0], argv[1:]...), more: make(chan struct{}, 1)}
	l.cmd.Env, l.cmd.Dir, l.cmd.Stderr = env, b.tempDir(), &l.stderr
	pipe, err := l.cmd.StdoutPipe()
	if err != nil {
		b.t.Fatal(err)
	}
	l.start = time.Now()
	if err := l.cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() {
		if !l.waited {
			l.cmd.Process.Signal(syscall.SIGTERM)
			kill := time.AfterFunc(30*time.Second, func() { l.cmd.Process.Kill() })
			l.wait()
			kill.Stop()
		}
	})
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			s := stamped{at: time.Now(), text: sc.Text()}
			l.mu.Lock()
			l.lines = append(l.lines, s)
			l.mu.Unlock()
			l.signal()
		}
		l.mu.Lock()
		l.eof = true
		l.mu.Unlock()
		l.signal()
	}()
	return l
}

func (l *liveRun) signal() {
	select {
	case l.more <- struct{}{}:
	default:
	}
}

// until hands match the lines not yet looked at, in order, and returns
// the first it takes; false when tfhive's output ended first.
func (l *liveRun) until(match func(text string) bool) (stamped, bool) {
	for {
		l.mu.Lock()
		lines, eof := l.lines[l.next:], l.eof
		l.mu.Unlock()
		for _, s := range lines {
			l.next++
			if match(s.text) {
				return s, true
			}
		}
		if eof {
			return stamped{}, false
		}
		<-l.more
	}
}

// wait reads the output to its end and waits for tfhive's exit.
func (l *liveRun) wait() error {
	l.until(func(string) bool { return false })
	l.waited = true
	return l.cmd.Wait()
}

// fail stops tfhive and fails the benchmark with what it said.
func (l *liveRun) fail(format string, args ...any) {
	l.b.t.Helper()
	if !l.waited {
		l.cmd.Process.Kill()
		l.wait()
	}
	l.b.t.Fatalf("%s: %s\nstderr:\n%s", l.what, fmt.Sprintf(format, args...), tail(l.stderr.String()))
}

// reconnectCut is one way the link fails, reps times in one run.
type reconnectCut struct {
	name string
	step string // the backoff step that applies once the link is back
	wait time.Duration
	// cut fails the link and brings it back (the k-th time); it returns
	// when the link was back.
	cut func(k int) time.Time

	back, attach, total []time.Duration
}

// reconnect: one task on a host behind the proxy (the run's RTT, and
// keepalives every second) prints a numbered line every 5 ms, one run
// long; its link is cut in each way reps times. Measured from the link
// being back to tfhive's console line saying so (redial and SSH
// handshake), and on to the task's first line (the attach session and
// the output held meanwhile); every line must be shown exactly once, in
// order, on the console and in the log file.
func (b *bench) reconnect() {
	f := sshtest.Start(b.t, sshtest.Profile{Name: "far", GPU: "idle-2gpu.xml", RTT: b.rtt, Proxied: true, AliveInterval: 1,
		RealHome: os.Getenv("TFHIVE_BENCH_OWN_HOME") == "0"})
	p := f.Host("far").Proxy
	enough := filepath.Join(b.tempDir(), "enough")
	logDir := filepath.Join(b.tempDir(), "logs")
	l := b.startLive("reconnect run", f.Env(), tfhiveBin, "run", "--hosts", f.HostsYAML, "--ssh-config", f.SSHConfig,
		"--log-dir", logDir, "--gpus-per-worker", "0", "--port-range", "30000-39999", "--workers", "1",
		"--", "sh", "-c", `i=0; while [ ! -e "$1" ]; do i=$((i+1)); echo "$i"; sleep 0.005; done`, "task", enough)

	last := 0 // the task's last line on the console
	isTask := func(text string) bool {
		label, num, ok := strings.Cut(text, "] ")
		if !ok || !strings.HasPrefix(label, "[worker:0") {
			return false
		}
		if n, err := strconv.Atoi(num); err != nil || n != last+1 {
			l.fail("console line %q after line %d: a line lost or shown twice", text, last)
		}
		last++
		return true
	}
	await := func(what string, match func(text string, task bool) bool) stamped {
		s, ok := l.until(func(text string) bool { return match(text, isTask(text)) })
		if !ok {
			l.fail("tfhive ended before %s", what)
		}
		return s
	}
	said := func(sub string) func(string, bool) bool {
		return func(text string, _ bool) bool { return strings.Contains(text, sub) }
	}
	await("the task's first line", func(_ string, task bool) bool { return task })

	cuts := []*reconnectCut{
		// A NAT that forgot the connection: dropped with a reset, and
		// dialled again at once.
		{name: "reset, back at once", step: "none: the first redial is immediate", cut: func(int) time.Time {
			up := time.Now()
			p.Reset()
			return up
		}},
		// A link gone silent (keepalives unanswered after 3 s): the first
		// redial's TCP connection is accepted but its handshake is held,
		// and goes on when the link is back, within the 10 s connect timeout.
		{name: "silent until noticed", step: "none: the redial under way goes on", cut: func(int) time.Time {
			p.Pause()
			await("noticing the silent link", said("tfhive: lost the connection to far"))
			time.Sleep(500*time.Millisecond + 2*b.rtt)
			up := time.Now()
			p.Resume()
			return up
		}},
		// A link down (no route, refused): every redial fails at once,
		// at 0, 0.25, 0.75, 1.75, 3.75, 5.75 … s after the loss. Back
		// 2 to 4 s after it, evenly spread over the runs, it is back
		// somewhere in a redialMax step of 2 s.
		{name: "down 2–4 s, redials failing", step: "2 s (redialMax: the step after 1.75 s of failed redials)", wait: 2 * time.Second,
			cut: func(k int) time.Time {
				p.Pause()
				stop, stopped := make(chan struct{}), make(chan struct{})
				go func() {
					defer close(stopped)
					for {
						p.Reset() // every connection through it, the redials' too
						select {
						case <-stop:
							return
						case <-time.After(20 * time.Millisecond):
						}
					}
				}()
				lost := await("noticing the link down", said("tfhive: lost the connection to far"))
				down := 2*time.Second + time.Duration(float64(2*time.Second)*(float64(k)+0.5)/float64(b.reps))
				time.Sleep(time.Until(lost.at.Add(down)))
				close(stop)
				<-stopped
				up := time.Now()
				p.Resume()
				return up
			}},
	}
	for k := range b.reps {
		for _, c := range cuts {
			up := c.cut(k)
			back := await("the link back", said("tfhive: far is back after"))
			first := await("output after the link was back", func(_ string, task bool) bool { return task })
			c.back = append(c.back, back.at.Sub(up))
			c.attach = append(c.attach, first.at.Sub(back.at))
			c.total = append(c.total, first.at.Sub(up))
			// Settled in its new session before the next cut.
			for range 10 {
				await("output after the link was back", func(_ string, task bool) bool { return task })
			}
		}
	}
	if err := os.WriteFile(enough, nil, 0o644); err != nil {
		b.t.Fatal(err)
	}
	l.until(func(text string) bool { isTask(text); return false })
	if err := l.wait(); err != nil {
		l.fail("%v", err)
	}
	b.wantSucceeded("reconnect run", logDir, 1)
	if err := checkSeq(filepath.Join(logDir, "worker-0.log"), last); err != nil {
		b.t.Fatalf("reconnect run: %v", err)
	}

	b.reconnectCuts = cuts
	b.printf("\n## reconnect: the link back → output flowing again\n\n")
	times := itoa(b.reps) + " times"
	if b.reps == 1 {
		times = "once"
	}
	b.printf("One task prints a numbered line every 5 ms; its host's link (RTT %s, keepalives every second) is cut each way %s "+
		"in one run and comes back; every line reached the console and the log once, in order. Medians; target 3 RTT + the backoff step in force.\n\n", b.rtt, times)
	b.printf("| link | backoff step | back → connected | connected → output | back → output | max | target |\n|---|---|---:|---:|---:|---:|---:|\n")
	for _, c := range cuts {
		b.printf("| %s | %s | %s | %s | %s | %s | %s |\n", c.name, c.step, ms(medianDur(c.back)), ms(medianDur(c.attach)),
			ms(medianDur(c.total)), ms(slices.Max(c.total)), ms(3*b.rtt+c.wait))
	}
	b.printf("\nConnected is tfhive's console line saying the host is back: a new SSH connection (TCP, key exchange, " +
		"authentication: about 7 round trips with Go's SSH client), then an attach session (open, exec, the held output: about 3). " +
		"With the link down, most of the time is the wait for the next redial: half a step on average.\n")
}

func medianDur(ds []time.Duration) time.Duration {
	v := slices.Clone(ds)
	slices.Sort(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}

// detach: `tfhive run --detach` until it returns against a foreground
// `tfhive run` until every task's first line is on its console (the
// first line, on one host), the same tasks: `echo started`, one per
// host. The detached run is carried to its end by its keeper and
// `tfhive wait`, off the clock.
func (b *bench) detach() {
	b.detachRatio = map[int]float64{}
	b.printf("\n## detach: `tfhive run --detach` returning vs a foreground `tfhive run` started\n\n")
	b.printf("| hosts | run --detach (returned) | run (every task's first line) | detach ÷ run |\n|---:|---:|---:|---:|\n")
	for _, n := range b.hosts {
		res := b.race(
			contender{"run --detach", func() measured {
				args, logDir := b.runArgs(n, "--detach", "--workers", itoa(n), "--", "echo", "started")
				m := b.execute("tfhive run --detach", nil, false, args...)
				id := strings.TrimSpace(m.stdout)
				b.execute("tfhive wait", nil, false, tfhiveBin, "wait", "--log-dir", logDir, id)
				b.wantSucceeded("detached run", logDir, n)
				return m
			}},
			contender{"run", func() measured {
				args, logDir := b.runArgs(n, "--workers", itoa(n), "--", "echo", "started")
				l := b.startLive("tfhive run", b.fleet.Env(), args...)
				started := map[string]bool{}
				s, ok := l.until(func(text string) bool {
					if label, rest, ok := strings.Cut(text, "] "); ok && rest == "started" && strings.HasPrefix(label, "[worker:") {
						started[label] = true
					}
					return len(started) == n
				})
				if !ok {
					l.fail("%d of %d tasks started", len(started), n)
				}
				if err := l.wait(); err != nil {
					l.fail("%v", err)
				}
				b.wantSucceeded("tfhive run", logDir, n)
				return measured{elapsed: s.at.Sub(l.start)}
			}},
		)
		d, r := medianElapsed(res[0]), medianElapsed(res[1])
		b.detachRatio[n] = ratio(d, r)
		b.printf("| %d | %s | %s | %.2f× |\n", n, ms(d), ms(r), b.detachRatio[n])
	}
}
