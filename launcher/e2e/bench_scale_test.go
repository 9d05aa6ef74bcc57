package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// sub is a benchmark of the same parameters on another fleet, with temp
// dirs of its own.
func (b *bench) sub(name string, fleet *sshtest.Fleet, hosts []int) *bench {
	work := filepath.Join(b.work, name)
	if err := os.MkdirAll(work, 0o755); err != nil {
		b.t.Fatal(err)
	}
	return &bench{t: b.t, fleet: fleet, hosts: hosts, rtt: b.rtt, reps: b.reps, work: work}
}

// answering: tfhive status vs pdsh and parallel-ssh on answering hosts
// (sshtest.AnsweringHosts): hundreds of hosts whose own CPU is not this
// machine's, so that what is measured is the client and the fan-out.
func (b *bench) answering() {
	ns := b.answerHosts
	maxN := ns[len(ns)-1]
	start := time.Now()
	af := sshtest.AnsweringHosts(b.t, "a", maxN, b.rtt, sshtest.Profile{Name: "source", GPU: "idle-2gpu.xml"})
	b.printf("\n## probe on answering hosts: `tfhive status` vs pdsh, parallel-ssh (`%s`)\n\n", smiQuery)
	b.printf("%d answering hosts, each an x/crypto SSH server of this test process on its own loopback address with its own host key, "+
		"behind the same RTT proxy (%s) as the sshd hosts; each answers a command with what a real sshd host of the test bed "+
		"said to it (recorded once, in the warm-up round). Their CPU is near zero: what is measured is the client and its fan-out, "+
		"as against hosts with CPUs of their own. pdsh and parallel-ssh run up to %d hosts (one ssh process per host). "+
		"Started in %s.\n\n", maxN, b.rtt, b.answerPeers, time.Since(start).Round(time.Millisecond))
	ab := b.sub("answering", af, ns)
	if hold := os.Getenv("TFHIVE_BENCH_FLEET"); hold != "" {
		ab.holdFleet(hold)
		return
	}
	b.answer = ab.probeTable(ns, b.answerPeers)
	rec := af.Recordings()
	b.printf("\n%d distinct commands were recorded from the source host, every other session replayed.\n", rec)
	if rec > 4 {
		// A command that differs from run to run is recorded every time:
		// the hosts would be the source's sshd, not answering hosts.
		b.t.Errorf("answering hosts: %d commands recorded, want at most 4 (tfhive status, nvidia-smi): a command differs from run to run", rec)
	}
}

// slowResult is one (hosts, tasks per host) cell of the slow-login table.
type slowResult struct {
	run    time.Duration
	logins int           // per run (median)
	cpu    time.Duration // the machine's, hosts and client (median)
	client time.Duration // tfhive's own (median)
}

// slowLogin: tfhive run at 1 and more tasks per host on hosts whose
// login shell burns 200 ms of CPU (sshtest.Profile.LoginCPU), counting
// the logins (sessions sshd started) per run.
func (b *bench) slowLogin() {
	ns, ks := b.slowHosts, b.slowTasks
	maxN := ns[len(ns)-1]
	var ps []sshtest.Profile
	for i := range maxN {
		ps = append(ps, sshtest.Profile{Name: fmt.Sprintf("s%02d", i), GPU: "idle-2gpu.xml", RTT: b.rtt, LoginCPU: loginCPU})
	}
	sb := b.sub("slow", sshtest.Start(b.t, ps...), ns)
	b.slow = map[[2]int]slowResult{}
	b.printf("\n## slow logins: `tfhive run` (`true` per task) on hosts whose `~/.bashrc` burns %s of CPU per login\n\n", ms(loginCPU))
	b.printf("As conda's or pyenv's init does on real GPU hosts. Logins are the sessions the hosts' sshd started during the run (counted in their logs): each pays the `.bashrc`.\n\n")
	b.printf("CPU is the whole machine's during the run (the hosts' sshd, login shells and supervisors, and tfhive), tfhive's own in brackets: the hosts share this machine's %d CPUs, so a run cannot take less than CPU ÷ %d.\n\n", runtime.NumCPU(), runtime.NumCPU())
	b.printf("| hosts | tasks per host | tfhive run | logins per run | run ÷ run at 1 task per host | CPU: machine (tfhive's) | machine CPU ÷ %d CPUs |\n|---:|---:|---:|---:|---:|---:|---:|\n", runtime.NumCPU())
	for _, n := range ns {
		var one time.Duration
		for _, k := range ks {
			res := sb.race(contender{"tfhive run", func() measured {
				before := sb.sessions(n)
				args, logDir := sb.runArgs(n, "--workers", itoa(n*k), "--", "true")
				m := sb.execute("tfhive run", nil, false, args...)
				sb.wantSucceeded("slow-login run", logDir, n*k)
				m.count = sb.sessions(n) - before
				return m
			}})
			r := slowResult{run: medianElapsed(res[0]), logins: int(medianOf(res[0], func(m measured) float64 { return float64(m.count) })),
				cpu:    time.Duration(medianOf(res[0], func(m measured) float64 { return float64(m.cpu) })),
				client: time.Duration(medianOf(res[0], func(m measured) float64 { return float64(m.client) }))}
			if k == ks[0] {
				one = r.run
			}
			b.slow[[2]int{n, k}] = r
			b.printf("| %d | %d | %s | %d | %.2f× | %s (%s) | %s |\n", n, k, ms(r.run), r.logins, ratio(r.run, one), ms(r.cpu), ms(r.client), ms(r.cpu/time.Duration(runtime.NumCPU())))
		}
	}
}

// loginCPU is what the slow-login hosts' ~/.bashrc costs: conda's init.
const loginCPU = 200 * time.Millisecond

// sessions is how many sessions the first n hosts' sshd have started.
func (b *bench) sessions(n int) int {
	total := 0
	for _, h := range b.fleet.Hosts[:n] {
		total += h.Sessions()
	}
	return total
}

// slowTargets: one login per host per run, and more tasks per host cost
// no more logins' worth of time.
func (b *bench) slowTargets(row func(target, measured string, ok bool)) {
	if len(b.slow) == 0 {
		return
	}
	k1, kN := b.slowTasks[0], b.slowTasks[len(b.slowTasks)-1]
	for _, n := range b.slowHosts {
		big := b.slow[[2]int{n, kN}]
		row(fmt.Sprintf("slow logins: logins per run = hosts (%d hosts × %d tasks)", n, kN), fmt.Sprintf("%d", big.logins), big.logins == n)
		if kN != k1 {
			small := b.slow[[2]int{n, k1}].run
			r := ratio(big.run, small)
			row(fmt.Sprintf("slow logins: run at %d tasks/host ≤ 1.3 × at %d (%d hosts)", kN, k1, n), fmt.Sprintf("%.2f×", r), r <= 1.3)
			// Restated as the status targets are: the fleet shares the
			// client's CPUs, and every task's supervisor is processes of
			// its own on its host.
			floor := big.cpu / time.Duration(runtime.NumCPU())
			x := ratio(big.run, max(small, floor))
			row(fmt.Sprintf("slow logins: run at %d tasks/host ≤ 1.3 × max(run at %d, machine CPU ÷ %d CPUs) (%d hosts)", kN, k1, runtime.NumCPU(), n),
				fmt.Sprintf("%s ÷ max(%s, %s) = %.2f×", ms(big.run), ms(small), ms(floor), x), x <= 1.3)
		}
	}
}

// answerTargets: the answering hosts' targets.
func (b *bench) answerTargets(row func(target, measured string, ok bool)) {
	if len(b.answer) == 0 {
		return
	}
	one, ok := b.answer[1]
	for _, n := range b.answerHosts {
		r := b.answer[n]
		if n == 256 && ok {
			x := ratio(r.status, one.status)
			row("answering hosts: status(256) ≤ 1.5 × status(1)", fmt.Sprintf("%s ÷ %s = %.2f×", ms(r.status), ms(one.status), x), x <= 1.5)
		}
		if n == 256 || n == b.answerHosts[len(b.answerHosts)-1] && n < 256 {
			per := r.client / time.Duration(n)
			row(fmt.Sprintf("answering hosts: client CPU ≤ 3 ms per host (%d hosts)", n), fmt.Sprintf("%s ÷ %d = %.2f ms", ms(r.client), n, float64(per)/1e6), per <= 3*time.Millisecond)
			row(fmt.Sprintf("answering hosts: peak RSS ≤ 64 MiB (%d hosts)", n), fmt.Sprintf("%.1f MiB", float64(r.rss)/1024), r.rss <= 64*1024)
		}
		if (n == 32 || n == 256) && r.pdsh > 0 {
			x := ratio(r.pdsh, r.status)
			row(fmt.Sprintf("answering hosts: pdsh ÷ tfhive ≥ 4 (%d hosts)", n), fmt.Sprintf("%.1f×", x), x >= 4)
		}
		if n > 256 {
			b.printf("| answering hosts: %d hosts (no target) | status %s (%.2f× status(1)), client CPU %s (%.2f ms per host), peak RSS %.1f MiB | measured |\n",
				n, ms(r.status), ratio(r.status, one.status), ms(r.client), float64(r.client)/1e6/float64(n), float64(r.rss)/1024)
		}
	}
}
