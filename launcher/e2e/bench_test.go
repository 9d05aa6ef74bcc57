package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// TestBench is the benchmark harness (testdata/bench/run.sh runs it): real
// sshd test hosts behind a proxy adding a round-trip time, tfhive against
// pdsh, parallel-ssh and a plain ssh loop, contenders alternated run by run,
// medians and ratios printed as Markdown tables. It fails only when
// something does not work (a contender fails, a line is lost), never on
// timing. Skipped unless TFHIVE_BENCH is set. Parameters:
//
//	TFHIVE_BENCH_HOSTS           host counts, "1,8,32,64"
//	TFHIVE_BENCH_RTT             round-trip time added by the proxy, 50ms (0: no proxy)
//	TFHIVE_BENCH_REPS            measured runs per contender, 5 (after one warm-up round)
//	TFHIVE_BENCH_STREAM_MB       streaming volume, 200
//	TFHIVE_BENCH_TASKS_PER_HOST  tasks per host for the footprint, 8
//	TFHIVE_BENCH_SYNC_MB         size of the --sync tree, 100 (sent to 8 hosts, or all when fewer)
//	TFHIVE_BENCH_ONLY            comma-separated sections to run (probe,launch,start,teardown,stream,footprint,sync,
//	                             reconnect,detach,slowlogin,answering, and queue for TestBenchQueue); all by default
//	TFHIVE_BENCH_SLOW_HOSTS      host counts of the slow-login section, "8,32" (hosts of their own)
//	TFHIVE_BENCH_SLOW_TASKS      tasks per host there, "1,8" (the first is the baseline)
//	TFHIVE_BENCH_ANSWER_HOSTS    host counts on answering hosts, "1,32,256,1024"
//	TFHIVE_BENCH_ANSWER_PEERS    pdsh and parallel-ssh face answering hosts up to this many, 256
//	TFHIVE_BENCH_OWN_HOME        0: sessions get the test user's real HOME (and its ~/.bashrc) instead of
//	                             an empty one per host
//	TFHIVE_BENCH_TFHIVE          a tfhive binary to measure instead of this tree's (before/after
//	                             figures in one sitting: build the old one, run both)
//	TFHIVE_BENCH_FLEET           a file name: start the fleet (largest host count), write shell
//	                             variables to reach it there, and keep it until the file is removed
//	                             (for profiling by hand; with TFHIVE_BENCH_ONLY=answering, the
//	                             answering hosts, TFHIVE_BENCH_ANSWER_HOSTS's largest count)
func TestBench(t *testing.T) {
	if os.Getenv("TFHIVE_BENCH") == "" {
		t.Skip("benchmark: set TFHIVE_BENCH=1 (or run testdata/bench/run.sh)")
	}
	if raceEnabled {
		t.Skip("benchmark: not under -race")
	}
	benchBinary()
	b := &bench{t: t,
		hosts:        envInts(t, "TFHIVE_BENCH_HOSTS", []int{1, 8, 32, 64}),
		rtt:          envDuration(t, "TFHIVE_BENCH_RTT", 50*time.Millisecond),
		reps:         envInts(t, "TFHIVE_BENCH_REPS", []int{5})[0],
		streamMB:     envInts(t, "TFHIVE_BENCH_STREAM_MB", []int{200})[0],
		tasksPerHost: envInts(t, "TFHIVE_BENCH_TASKS_PER_HOST", []int{8})[0],
		syncMB:       envInts(t, "TFHIVE_BENCH_SYNC_MB", []int{100})[0],
		work:         t.TempDir(),
		answerHosts:  envInts(t, "TFHIVE_BENCH_ANSWER_HOSTS", []int{1, 32, 256, 1024}),
		answerPeers:  envInts(t, "TFHIVE_BENCH_ANSWER_PEERS", []int{256})[0],
		slowHosts:    envInts(t, "TFHIVE_BENCH_SLOW_HOSTS", []int{8, 32}),
		slowTasks:    envInts(t, "TFHIVE_BENCH_SLOW_TASKS", []int{1, 8}),
	}
	slices.Sort(b.answerHosts)
	slices.Sort(b.slowHosts)
	slices.Sort(b.slowTasks)
	slices.Sort(b.hosts)
	only := map[string]bool{}
	for _, s := range strings.Split(os.Getenv("TFHIVE_BENCH_ONLY"), ",") {
		if s = strings.TrimSpace(s); s != "" {
			only[s] = true
		}
	}
	want := func(section string) bool { return len(only) == 0 || only[section] }
	for _, tool := range []string{"ssh", "pdsh", "parallel-ssh"} {
		if _, err := exec.LookPath(tool); err != nil && (want("probe") || tool == "ssh" && want("stream")) {
			t.Fatalf("%s not found: apt-get install -y openssh-client pdsh pssh", tool)
		}
	}

	maxN := b.hosts[len(b.hosts)-1]
	start := time.Now()
	var ps []sshtest.Profile
	for i := range maxN {
		ps = append(ps, sshtest.Profile{Name: fmt.Sprintf("b%02d", i), GPU: "idle-2gpu.xml", RTT: b.rtt, RealHome: os.Getenv("TFHIVE_BENCH_OWN_HOME") == "0"})
	}
	b.fleet = sshtest.Start(t, ps...)
	if hold := os.Getenv("TFHIVE_BENCH_FLEET"); hold != "" {
		if len(only) == 1 && only["answering"] {
			b.answering() // holds the answering hosts instead
			return
		}
		b.holdFleet(hold)
		return
	}
	b.printf("# tfhive benchmark\n\n%d sshd test hosts on loopback, round-trip time %s added by a proxy per host, "+
		"%d measured runs per contender after one warm-up round, contenders alternated run by run; medians. "+
		"Machine: %d CPUs, %s. Fleet started in %s.\n",
		maxN, b.rtt, b.reps, runtime.NumCPU(), goVersion(), time.Since(start).Round(time.Millisecond))

	if want("probe") {
		b.probe()
	}
	if want("launch") {
		b.launch()
	}
	if want("start") {
		b.start()
	}
	if want("teardown") {
		b.teardown()
	}
	if want("stream") {
		b.stream()
	}
	if want("footprint") {
		b.footprint()
	}
	if want("sync") {
		b.sync()
	}
	if want("reconnect") {
		b.reconnect()
	}
	if want("detach") {
		b.detach()
	}
	if want("slowlogin") {
		b.slowLogin()
	}
	if want("answering") {
		b.answering()
	}
	b.targets()
}

// holdFleet writes where the fleet is to path and waits for path to go.
func (b *bench) holdFleet(path string) {
	maxN := b.hosts[len(b.hosts)-1]
	env := fmt.Sprintf("# source me; remove this file to stop the fleet\nexport HOME=%s\nunset SSH_AUTH_SOCK\nTFHIVE=%s\nSSH_CONFIG=%s\nHOSTS_YAML=%s\nHOSTS=%q\n",
		b.fleet.Home, tfhiveBin, b.fleet.SSHConfig, b.hostsFile(maxN), strings.Join(b.names(maxN), " "))
	for _, n := range b.hosts {
		env += fmt.Sprintf("HOSTS_YAML_%d=%s\n", n, b.hostsFile(n))
	}
	if err := os.WriteFile(path, []byte(env), 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.printf("fleet of %d hosts (RTT %s) up: source %s; remove it to stop\n", maxN, b.rtt, path)
	for {
		if _, err := os.Stat(path); err != nil {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

type bench struct {
	t            *testing.T
	fleet        *sshtest.Fleet
	hosts        []int
	rtt          time.Duration
	reps         int
	streamMB     int
	tasksPerHost int
	syncMB       int
	work         string
	seq          int // numbers temp dirs
	answerHosts  []int
	answerPeers  int
	slowHosts    []int
	slowTasks    []int

	// Results the targets are checked against.
	status, pdsh, run map[int]time.Duration
	probed            map[int]probeResult // the real-sshd probe table's
	answer            map[int]probeResult // the answering hosts' probe table's
	slow              map[[2]int]slowResult
	runStatus         map[int]time.Duration // status measured alongside run
	teardownMax       map[int]time.Duration
	streamRatio       float64
	captureRatio      float64 // streaming with --capture ÷ without
	streamOK          bool
	peakRSS           int64 // KiB
	peakHosts         int
	syncRatio         float64       // --sync of new code ÷ parallel tar | ssh
	syncExtra         time.Duration // run --sync of unchanged code − run
	syncHosts         int
	reconnectCuts     []*reconnectCut
	detachRatio       map[int]float64 // run --detach returned ÷ foreground run started
	startFloor        map[int]float64 // (start − status) ÷ (3 RTT + the start's CPU beyond status's ÷ CPUs)
}

func (b *bench) printf(format string, args ...any) {
	fmt.Fprintf(os.Stdout, format, args...)
}

// names are the first n hosts' names.
func (b *bench) names(n int) []string {
	var s []string
	for _, h := range b.fleet.Hosts[:n] {
		s = append(s, h.Name)
	}
	return s
}

// hostsFile writes a hosts.yaml for the first n hosts.
func (b *bench) hostsFile(n int) string {
	path := filepath.Join(b.fleet.Dir, fmt.Sprintf("hosts-%d.yaml", n))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	var y strings.Builder
	y.WriteString("hosts:\n")
	for _, name := range b.names(n) {
		fmt.Fprintf(&y, "  - %s\n", name)
	}
	if err := os.WriteFile(path, []byte(y.String()), 0o644); err != nil {
		b.t.Fatal(err)
	}
	return path
}

func (b *bench) tempDir() string {
	b.seq++
	d := filepath.Join(b.work, strconv.Itoa(b.seq))
	if err := os.MkdirAll(d, 0o755); err != nil {
		b.t.Fatal(err)
	}
	return d
}

// measured is one run of a contender.
type measured struct {
	elapsed time.Duration
	end     time.Time     // when the process had exited
	maxRSS  int64         // KiB
	cpu     time.Duration // the whole machine's CPU time meanwhile: hosts and client share it
	client  time.Duration // the command's own CPU time, its waited-for children included
	stdout  string
	stderr  string
	count   int // what the section counts (logins)
}

// execute runs argv with the fleet's client environment plus env, output
// to files (no copying goroutine between the process's exit and Wait),
// and fails the benchmark unless it exits 0. stdout "" discards it.
func (b *bench) execute(what string, env []string, discard bool, argv ...string) measured {
	b.t.Helper()
	dir := b.tempDir()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = append(b.fleet.Env(), env...), dir
	var outf *os.File
	if !discard {
		var err error
		if outf, err = os.Create(filepath.Join(dir, "stdout")); err != nil {
			b.t.Fatal(err)
		}
		defer outf.Close()
		cmd.Stdout = outf
	}
	errf, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		b.t.Fatal(err)
	}
	defer errf.Close()
	cmd.Stderr = errf
	cpu0 := machineCPU()
	start := time.Now()
	err = cmd.Run()
	m := measured{end: time.Now()}
	m.elapsed = m.end.Sub(start)
	m.cpu = machineCPU() - cpu0
	m.client = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.maxRSS = ru.Maxrss
	}
	if outf != nil {
		data, _ := os.ReadFile(outf.Name())
		m.stdout = string(data)
	}
	data, _ := os.ReadFile(errf.Name())
	m.stderr = string(data)
	if err != nil {
		b.t.Fatalf("%s: %s: %v\nstdout:\n%s\nstderr:\n%s", what, strings.Join(argv, " "), err, tail(m.stdout), tail(m.stderr))
	}
	return m
}

func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}

// contender is one way to do the thing measured.
type contender struct {
	name string
	run  func() measured
}

// race runs one warm-up round, then reps rounds of every contender,
// rotating the order each round, and returns each one's runs.
func (b *bench) race(cs ...contender) [][]measured {
	out := make([][]measured, len(cs))
	for round := 0; round <= b.reps; round++ {
		for k := range cs {
			i := (k + round) % len(cs)
			m := cs[i].run()
			if round > 0 {
				out[i] = append(out[i], m)
			}
		}
	}
	return out
}

func medianOf(ms []measured, f func(measured) float64) float64 {
	v := make([]float64, len(ms))
	for i, m := range ms {
		v[i] = f(m)
	}
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

func medianCPU(ms []measured) time.Duration {
	return time.Duration(medianOf(ms, func(m measured) float64 { return float64(m.cpu) }))
}

func medianClient(ms []measured) time.Duration {
	return time.Duration(medianOf(ms, func(m measured) float64 { return float64(m.client) }))
}

// machineCPU is the CPU time all processes have used (user, nice, system,
// irq, softirq) since boot, from /proc/stat.
func machineCPU() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} {
		if i < len(f) {
			n, _ := strconv.ParseInt(f[i], 10, 64)
			ticks += n
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

func medianElapsed(ms []measured) time.Duration {
	return time.Duration(medianOf(ms, func(m measured) float64 { return float64(m.elapsed) }))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

const smiQuery = "nvidia-smi -q -x"

// wantSMI checks that out holds one nvidia-smi document per host.
func (b *bench) wantSMI(what, out string, n int) {
	b.t.Helper()
	if got := strings.Count(out, "<nvidia_smi_log>"); got != n {
		b.t.Fatalf("%s: %d nvidia-smi answers for %d hosts:\n%s", what, got, n, tail(out))
	}
}

func (b *bench) sshArgs() []string {
	return []string{"-F", b.fleet.SSHConfig, "-o", "BatchMode=yes"}
}

// probe: tfhive status vs pdsh -R ssh vs parallel-ssh vs a sequential ssh
// loop, the same nvidia-smi query on N hosts.
func (b *bench) probe() {
	b.printf("\n## probe: `tfhive status` vs pdsh, parallel-ssh, an ssh loop (`%s` on every host)\n\n", smiQuery)
	b.status, b.pdsh, b.probed = map[int]time.Duration{}, map[int]time.Duration{}, map[int]probeResult{}
	b.probeTable(b.hosts, 0)
	b.printf("\ntfhive's round trip also runs `ps` for the GPU processes' owners (when there are any) and `ss` for the listening ports, and reads the claims: `/proc/locks` with awk, and `ps` for the lock holders when any lock is held on the machine; the others run `%s` alone. pdsh's fanout (`-f`) and parallel-ssh's parallelism (`-p`) are set to N (their defaults are 32). CPU is the whole machine's CPU time during the run (sshd, the hosts' shells and the client together): every fake host shares this machine's %d CPUs, so a run cannot take less than CPU ÷ %d. Client CPU is the command's own (pdsh's includes its ssh processes): what the machine running it pays when the hosts are real.\n", smiQuery, runtime.NumCPU(), runtime.NumCPU())
}

// probeResult is one host count's medians.
type probeResult struct {
	status, pdsh       time.Duration
	cpu                time.Duration // the machine's, during tfhive status
	client, pdshClient time.Duration
	rss                int64 // KiB, tfhive status's peak (0: not measured)
}

// probeTable races the contenders on each host count of ns and prints
// the table. Above peersUpTo hosts (0: never) only tfhive runs: pdsh and
// parallel-ssh start an ssh process per host, and a thousand of those
// take minutes of this machine's CPU per run. The ssh loop stops at 64
// hosts (it is sequential). With peersUpTo set, tfhive's peak RSS and
// own CPU are measured by the helper (executeRSS).
func (b *bench) probeTable(ns []int, peersUpTo int) map[int]probeResult {
	out := map[int]probeResult{}
	rssCol, rssAlign := "", ""
	if peersUpTo > 0 {
		rssCol, rssAlign = " tfhive peak RSS |", "---:|"
	}
	b.printf("| hosts | tfhive status | pdsh -R ssh | parallel-ssh | ssh loop | pdsh ÷ tfhive | parallel-ssh ÷ tfhive | ssh loop ÷ tfhive | status(N) ÷ status(1) | CPU tfhive / pdsh | client CPU tfhive / pdsh |%s\n", rssCol)
	b.printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|%s\n", rssAlign)
	var status1 time.Duration
	for _, n := range ns {
		names := b.names(n)
		hosts := b.hostsFile(n)
		sshOpts := strings.Join(b.sshArgs(), " ")
		cs := []contender{{"tfhive status", func() measured {
			argv := []string{tfhiveBin, "status", "--hosts", hosts, "--ssh-config", b.fleet.SSHConfig}
			if peersUpTo > 0 && n > peersUpTo {
				// A thousand answering hosts share this machine's CPUs with
				// the client: 65 of 1024 handshakes once ran past the
				// default 10 s on a loaded machine. Measured, not judged.
				argv = append(argv, "--connect-timeout", "60s")
			}
			var m measured
			if peersUpTo > 0 {
				m = b.executeRSS("tfhive status", false, argv...)
			} else {
				m = b.execute("tfhive status", nil, false, argv...)
			}
			for _, name := range names {
				if rows := rowsOf(m.stdout, name); len(rows) != 2 || rows[0][len(rows[0])-1] != "free" {
					b.t.Fatalf("tfhive status: host %s: %v\n%s", name, rows, m.stdout)
				}
			}
			return m
		}}}
		peers := peersUpTo == 0 || n <= peersUpTo
		if peers {
			cs = append(cs, contender{"pdsh", func() measured {
				m := b.execute("pdsh", []string{"PDSH_SSH_ARGS_APPEND=" + sshOpts}, false,
					"pdsh", "-R", "ssh", "-f", itoa(n), "-w", strings.Join(names, ","), smiQuery)
				b.wantSMI("pdsh", m.stdout, n)
				return m
			}}, contender{"parallel-ssh", func() measured {
				m := b.execute("parallel-ssh", nil, false,
					"parallel-ssh", "-p", itoa(n), "-t", "0", "-x", sshOpts, "-H", strings.Join(names, " "), "-i", smiQuery)
				b.wantSMI("parallel-ssh", m.stdout, n)
				return m
			}})
		}
		if peers && n <= 64 {
			cs = append(cs, contender{"ssh loop", func() measured {
				script := `for h in ` + strings.Join(names, " ") + `; do ssh ` + sshOpts + ` "$h" '` + smiQuery + `' || exit 1; done`
				m := b.execute("ssh loop", nil, false, "sh", "-c", script)
				b.wantSMI("ssh loop", m.stdout, n)
				return m
			}})
		}
		res := b.race(cs...)
		st := medianElapsed(res[0])
		if n == 1 || status1 == 0 {
			status1 = st
		}
		r := probeResult{status: st, cpu: medianCPU(res[0]), client: medianClient(res[0])}
		if peersUpTo > 0 {
			r.rss = slices.MaxFunc(res[0], func(x, y measured) int { return int(x.maxRSS - y.maxRSS) }).maxRSS
		}
		cell := func(i int, f func([]measured) string) string {
			if i < len(res) {
				return f(res[i])
			}
			return "—"
		}
		el := func(ms_ []measured) string { return ms(medianElapsed(ms_)) }
		over := func(ms_ []measured) string { return fmt.Sprintf("%.1f×", ratio(medianElapsed(ms_), st)) }
		if len(res) > 1 {
			r.pdsh, r.pdshClient = medianElapsed(res[1]), medianClient(res[1])
		}
		out[n] = r
		if peersUpTo == 0 {
			b.status[n], b.probed[n] = st, r
			if r.pdsh > 0 {
				b.pdsh[n] = r.pdsh
			}
		}
		rss := ""
		if peersUpTo > 0 {
			rss = fmt.Sprintf(" %.1f MiB |", float64(r.rss)/1024)
		}
		b.printf("| %d | %s | %s | %s | %s | %s | %s | %s | %.2f× | %s / %s | %s / %s |%s\n",
			n, ms(st), cell(1, el), cell(2, el), cell(3, el), cell(1, over), cell(2, over), cell(3, over), ratio(st, status1),
			ms(r.cpu), cell(1, func(m []measured) string { return ms(medianCPU(m)) }),
			ms(r.client), cell(1, func(m []measured) string { return ms(medianClient(m)) }), rss)
	}
	return out
}

// runArgs is `tfhive run` on the first n hosts with a log dir of its own.
func (b *bench) runArgs(n int, args ...string) ([]string, string) {
	logDir := filepath.Join(b.tempDir(), "logs")
	return append([]string{tfhiveBin, "run", "--hosts", b.hostsFile(n), "--ssh-config", b.fleet.SSHConfig,
		"--log-dir", logDir, "--gpus-per-worker", "0", "--port-range", "30000-39999"}, args...), logDir
}

// wantSucceeded checks the run's summary: every task exited 0.
func (b *bench) wantSucceeded(what, logDir string, tasks int) {
	b.t.Helper()
	s := summaryOf(b.t, logDir)
	if s.Result != "succeeded" || len(s.Tasks) != tasks {
		b.t.Fatalf("%s: %s with %d tasks, want succeeded with %d: %s", what, s.Result, len(s.Tasks), tasks, s.Reason)
	}
	for _, tr := range s.Tasks {
		if tr.Outcome != "exited" || tr.ExitCode == nil || *tr.ExitCode != 0 {
			b.t.Fatalf("%s: %s %s", what, tr.ID, tr.Outcome)
		}
	}
}

// launch: tfhive run with one trivial task per host vs tfhive status on
// the same hosts.
func (b *bench) launch() {
	b.run, b.runStatus = map[int]time.Duration{}, map[int]time.Duration{}
	if b.status == nil {
		b.status = map[int]time.Duration{}
	}
	b.printf("\n## launch: `tfhive run` (one `true` per host) vs `tfhive status`\n\n")
	b.printf("| hosts | tfhive run | tfhive status | run ÷ status | CPU run / status | client CPU run / status |\n|---:|---:|---:|---:|---:|---:|\n")
	for _, n := range b.hosts {
		hosts := b.hostsFile(n)
		res := b.race(
			contender{"tfhive run", func() measured {
				args, logDir := b.runArgs(n, "--workers", itoa(n), "--", "true")
				m := b.execute("tfhive run", nil, false, args...)
				b.wantSucceeded("tfhive run", logDir, n)
				return m
			}},
			contender{"tfhive status", func() measured {
				return b.execute("tfhive status", nil, false, tfhiveBin, "status", "--hosts", hosts, "--ssh-config", b.fleet.SSHConfig)
			}},
		)
		rn, st := medianElapsed(res[0]), medianElapsed(res[1])
		b.run[n], b.runStatus[n] = rn, st
		if _, ok := b.status[n]; !ok {
			b.status[n] = st
		}
		b.printf("| %d | %s | %s | %.2f× | %s / %s | %s / %s |\n", n, ms(rn), ms(st), ratio(rn, st),
			ms(medianCPU(res[0])), ms(medianCPU(res[1])), ms(medianClient(res[0])), ms(medianClient(res[1])))
	}
}

// start: from tfhive run's start to every task's first line, beside
// tfhive status (the logins and one probe) in the same run. Each worker
// prints the time as its very first act (exec date). The machine's CPU
// is sampled through the run, so that the CPU spent until the last first
// line is known: the fake hosts share this machine's CPUs, and what the
// start costs them beyond status's is a floor no round trip explains.
func (b *bench) start() {
	b.printf("\n## start: `tfhive run` → every task's first line\n\n")
	b.printf("Each worker runs `exec date +%%s%%N`; measured from tfhive's start to the latest printed time, beside `tfhive status` (logins and a probe) alternated with it. CPU is the whole machine's, for the run until that last first line (sampled every 5 ms) and for status; the CPU floor is the start's CPU beyond status's spread on %d CPUs.\n\n", runtime.NumCPU())
	b.printf("| hosts | start | tfhive status | start − status | in RTT | target: ≤ status + 3 RTT | CPU start / status | start − status ÷ (3 RTT + CPU floor) |\n|---:|---:|---:|---:|---:|---|---:|---:|\n")
	if b.startFloor == nil {
		b.startFloor = map[int]float64{}
	}
	for _, n := range b.hosts {
		hosts := b.hostsFile(n)
		res := b.race(
			contender{"tfhive run", func() measured {
				args, logDir := b.runArgs(n, "--workers", itoa(n), "--", "sh", "-c", "exec date +%s%N")
				trace := sampleCPU(5 * time.Millisecond)
				m := b.execute("tfhive run", nil, false, args...)
				trace.stop()
				b.wantSucceeded("start run", logDir, n)
				var last int64
				for i := range n {
					data, err := os.ReadFile(filepath.Join(logDir, fmt.Sprintf("worker-%d.log", i)))
					if err != nil {
						b.t.Fatal(err)
					}
					ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
					if err != nil {
						b.t.Fatalf("worker-%d.log: %q", i, data)
					}
					last = max(last, ns)
				}
				// The start and its CPU stand in for elapsed and cpu from here on.
				m.elapsed = time.Unix(0, last).Sub(m.end.Add(-m.elapsed))
				m.cpu = trace.until(time.Unix(0, last))
				return m
			}},
			contender{"tfhive status", func() measured {
				return b.execute("tfhive status", nil, false, tfhiveBin, "status", "--hosts", hosts, "--ssh-config", b.fleet.SSHConfig)
			}},
		)
		sn, st := medianElapsed(res[0]), medianElapsed(res[1])
		cs, cst := medianCPU(res[0]), medianCPU(res[1])
		beyond, rtts, v := sn-st, "", "met"
		if b.rtt > 0 {
			rtts = fmt.Sprintf("%.1f", float64(beyond)/float64(b.rtt))
		}
		switch {
		case b.rtt == 0:
			v = "not judged at RTT 0"
		case beyond > 3*b.rtt:
			v = "**missed**"
		}
		allowance := 3*b.rtt + max(0, cs-cst)/time.Duration(runtime.NumCPU())
		floorV := "not judged at RTT 0"
		if b.rtt > 0 {
			r := ratio(max(0, beyond), allowance)
			b.startFloor[n] = r
			floorV = fmt.Sprintf("%.2f× of %s", r, ms(allowance))
		}
		b.printf("| %d | %s | %s | %s | %s | %s | %s / %s | %s |\n", n, ms(sn), ms(st), ms(beyond), rtts, v, ms(cs), ms(cst), floorV)
	}
}

// cpuTrace is the machine's CPU time sampled every so often, to tell
// what a command had cost the machine at a moment before it ended.
type cpuTrace struct {
	done chan struct{}
	over chan struct{}
	at   []time.Time
	cpu  []time.Duration
}

// sampleCPU starts sampling machineCPU every step, until stop.
func sampleCPU(step time.Duration) *cpuTrace {
	c := &cpuTrace{done: make(chan struct{}), over: make(chan struct{})}
	c.at, c.cpu = append(c.at, time.Now()), append(c.cpu, machineCPU())
	go func() {
		defer close(c.over)
		tick := time.NewTicker(step)
		defer tick.Stop()
		for {
			select {
			case <-c.done:
				return
			case now := <-tick.C:
				c.at, c.cpu = append(c.at, now), append(c.cpu, machineCPU())
			}
		}
	}()
	return c
}

func (c *cpuTrace) stop() { close(c.done); <-c.over }

// until is the CPU from the first sample to the first sample at or after
// t (the last one when t is later): rounded up by a step at most, and by
// /proc/stat's 10 ms ticks.
func (c *cpuTrace) until(t time.Time) time.Duration {
	for i, at := range c.at {
		if !at.Before(t) {
			return c.cpu[i] - c.cpu[0]
		}
	}
	return c.cpu[len(c.cpu)-1] - c.cpu[0]
}

// teardown: from the last worker's exit to tfhive's exit. Each worker
// prints the time as its very last act (exec date).
func (b *bench) teardown() {
	b.teardownMax = map[int]time.Duration{}
	b.printf("\n## teardown: last worker's exit → tfhive's exit\n\n")
	b.printf("Each worker runs `sleep 1; exec date +%%s%%N`; measured from the latest printed time to tfhive's exit.\n\n")
	b.printf("| hosts | median | max | target 1 s + 2 RTT |\n|---:|---:|---:|---:|\n")
	limit := time.Second + 2*b.rtt
	for _, n := range b.hosts {
		res := b.race(contender{"tfhive run", func() measured {
			args, logDir := b.runArgs(n, "--workers", itoa(n), "--", "sh", "-c", "sleep 1; exec date +%s%N")
			m := b.execute("tfhive run", nil, false, args...)
			b.wantSucceeded("teardown run", logDir, n)
			var last int64
			for i := range n {
				data, err := os.ReadFile(filepath.Join(logDir, fmt.Sprintf("worker-%d.log", i)))
				if err != nil {
					b.t.Fatal(err)
				}
				ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
				if err != nil {
					b.t.Fatalf("worker-%d.log: %q", i, data)
				}
				last = max(last, ns)
			}
			// The teardown stands in for elapsed from here on.
			m.elapsed = m.end.Sub(time.Unix(0, last))
			return m
		}})
		med := medianElapsed(res[0])
		worst := slices.MaxFunc(res[0], func(x, y measured) int { return int(x.elapsed - y.elapsed) }).elapsed
		b.teardownMax[n] = worst
		b.printf("| %d | %s | %s | %s |\n", n, ms(med), ms(worst), ms(limit))
	}
}

// seqFor is the smallest N whose `seq N` prints at least mb MB, and how
// many bytes that is.
func seqFor(mb int) (int, int64) {
	target := int64(mb) * 1000 * 1000
	var total int64
	n := 0
	for digits, lo := 1, 1; ; digits, lo = digits+1, lo*10 {
		hi := lo*10 - 1
		per := int64(digits + 1)
		if total+int64(hi-lo+1)*per >= target {
			need := (target - total + per - 1) / per
			n = lo + int(need) - 1
			return n, total + need*per
		}
		total += int64(hi-lo+1) * per
	}
}

// checkSeq verifies that path holds exactly `seq n`.
func checkSeq(path string, n int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var want []byte
	for i := 1; i <= n; i++ {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("%s: line %d: %v (lines lost)", path, i, err)
		}
		want = strconv.AppendInt(want[:0], int64(i), 10)
		want = append(want, '\n')
		if !bytes.Equal(line, want) {
			return fmt.Errorf("%s: line %d is %q, want %q", path, i, line, want)
		}
	}
	if rest, _ := io.ReadAll(r); len(rest) > 0 {
		return fmt.Errorf("%s: %d bytes after the last line", path, len(rest))
	}
	return nil
}

// stream: one task printing streamMB MB of lines through tfhive run vs
// plain ssh to /dev/null; tfhive's log must hold every line. And the same
// run with a --capture whose literal (loss) no line holds: what the
// matching costs a task whose output is mostly not its metric.
func (b *bench) stream() {
	n, size := seqFor(b.streamMB)
	b.printf("\n## streaming: `seq %d` (%d MB, %d lines) from one host\n\n", n, size/1000/1000, n)
	b.printf("| tfhive run (console to /dev/null) | ssh host 'seq …' > /dev/null | tfhive ÷ ssh | tfhive MB/s | ssh MB/s | every line in tfhive's log | with --capture | ÷ without |\n|---:|---:|---:|---:|---:|---|---:|---:|\n")
	cmd := "seq " + itoa(n)
	b.streamOK = true
	tfhiveRun := func(what string, flags ...string) func() measured {
		return func() measured {
			args, logDir := b.runArgs(1, append(flags, "--workers", "1", "--", "sh", "-c", cmd)...)
			m := b.execute(what, nil, true, args...)
			b.wantSucceeded("stream run", logDir, 1)
			log := filepath.Join(logDir, "worker-0.log")
			if err := checkSeq(log, n); err != nil {
				b.streamOK = false
				b.t.Errorf("streaming through tfhive lost or changed output: %v", err)
			}
			os.Remove(log)
			return m
		}
	}
	res := b.race(
		contender{"tfhive run", tfhiveRun("tfhive run")},
		contender{"ssh", func() measured {
			return b.execute("ssh", nil, true, append(append([]string{"ssh"}, b.sshArgs()...), b.names(1)[0], cmd)...)
		}},
		contender{"tfhive run --capture", tfhiveRun("tfhive run --capture", "--capture", "loss=loss[=: ]+([0-9.e+-]+)")},
	)
	tf, sh, capt := medianElapsed(res[0]), medianElapsed(res[1]), medianElapsed(res[2])
	b.streamRatio, b.captureRatio = ratio(tf, sh), ratio(capt, tf)
	ok := "yes"
	if !b.streamOK {
		ok = "NO"
	}
	mbps := func(d time.Duration) float64 { return float64(size) / 1e6 / d.Seconds() }
	b.printf("| %s | %s | %.2f× | %.0f | %.0f | %s | %s | %.2f× |\n", ms(tf), ms(sh), b.streamRatio, mbps(tf), mbps(sh), ok, ms(capt), b.captureRatio)
}

// rssEnv makes the test binary a helper that runs its arguments and
// writes their peak RSS (KiB) to the file it names. Measured from this
// test process, a child's peak RSS is at least this process's own: Go
// starts children with vfork, and Linux carries the shared memory map's
// high-water mark into the child when its exec replaces the map (a
// /bin/true started by a 100 MB process reports 100 MB). By the end of
// a full run this process had grown to 86 MiB, and that was reported
// instead of tfhive's 50. A freshly started helper is small.
const rssEnv = "TFHIVE_BENCH_RSS_TO"

func reportRSS(to string, argv []string) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, rssEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, err)
		return 127
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		os.WriteFile(to, []byte(strconv.FormatInt(ru.Maxrss, 10)+" "+strconv.FormatInt(int64(cpu), 10)), 0o644)
	}
	return cmd.ProcessState.ExitCode()
}

// executeRSS is execute with the peak RSS measured by the helper.
func (b *bench) executeRSS(what string, discard bool, argv ...string) measured {
	b.t.Helper()
	self, err := os.Executable()
	if err != nil {
		b.t.Fatal(err)
	}
	to := filepath.Join(b.tempDir(), "maxrss")
	m := b.execute(what, []string{rssEnv + "=" + to}, discard, append([]string{self}, argv...)...)
	data, err := os.ReadFile(to)
	if err != nil {
		b.t.Fatalf("%s: no peak RSS measured: %v", what, err)
	}
	rss, cpu, _ := strings.Cut(string(data), " ")
	if m.maxRSS, err = strconv.ParseInt(rss, 10, 64); err != nil || m.maxRSS <= 0 {
		b.t.Fatalf("%s: peak RSS %q", what, data)
	}
	// The command's own CPU, not the helper's (a Go program's start).
	if ns, err := strconv.ParseInt(cpu, 10, 64); err == nil {
		m.client = time.Duration(ns)
	}
	return m
}

// footprint: tfhive's peak RSS running tasksPerHost tasks on every host.
func (b *bench) footprint() {
	n := b.hosts[len(b.hosts)-1]
	tasks := n * b.tasksPerHost
	b.peakHosts = n
	b.printf("\n## footprint: peak RSS of tfhive, %d hosts × %d tasks (`seq 1000; sleep 1` each)\n\n", n, b.tasksPerHost)
	b.printf("| tasks | peak RSS (median) | peak RSS (max) | wall time (median) | target |\n|---:|---:|---:|---:|---:|\n")
	res := b.race(contender{"tfhive run", func() measured {
		args, logDir := b.runArgs(n, "--workers", itoa(tasks), "--", "sh", "-c", "seq 1000; sleep 1")
		m := b.executeRSS("tfhive run", true, args...)
		b.wantSucceeded("footprint run", logDir, tasks)
		return m
	}})
	med := int64(medianOf(res[0], func(m measured) float64 { return float64(m.maxRSS) }))
	b.peakRSS = slices.MaxFunc(res[0], func(x, y measured) int { return int(x.maxRSS - y.maxRSS) }).maxRSS
	b.printf("| %d | %.1f MiB | %.1f MiB | %s | 64 MiB |\n", tasks, float64(med)/1024, float64(b.peakRSS)/1024, ms(medianElapsed(res[0])))
}

// targets prints the targets, met or missed (never a failure).
func (b *bench) targets() {
	b.printf("\n## targets\n\n| target | measured | |\n|---|---|---|\n")
	row := func(target, measured string, ok bool) {
		v := "met"
		if !ok {
			v = "**missed**"
		}
		b.printf("| %s | %s | %s |\n", target, measured, v)
	}
	big := 32
	if !slices.Contains(b.hosts, big) {
		big = b.hosts[len(b.hosts)-1]
	}
	if s1, ok := b.probed[1]; ok {
		if sb, ok := b.probed[big]; ok && big > 1 {
			// The fleet shares this machine's CPUs with the client: the
			// run cannot be shorter than its CPU time spread over them.
			floor := time.Duration(float64(sb.cpu) / float64(runtime.NumCPU()))
			base := max(s1.status, floor)
			r := ratio(sb.status, base)
			row(fmt.Sprintf("status(%d) ≤ 1.3 × max(status(1), machine CPU ÷ %d CPUs)", big, runtime.NumCPU()),
				fmt.Sprintf("%s ÷ max(%s, %s ÷ %d) = %.2f×", ms(sb.status), ms(s1.status), ms(sb.cpu), runtime.NumCPU(), r), r <= 1.3)
		}
	}
	if sb, ok := b.probed[big]; ok && sb.pdshClient > 0 {
		r := ratio(sb.client, sb.pdshClient)
		row(fmt.Sprintf("tfhive client CPU ≤ 1/10 of pdsh's (%d hosts)", big),
			fmt.Sprintf("%s / %s = 1/%.0f", ms(sb.client), ms(sb.pdshClient), 1/r), r <= 0.1)
	}
	if st, ok := b.status[big]; ok {
		if pd, ok := b.pdsh[big]; ok {
			r := ratio(pd, st)
			row(fmt.Sprintf("status ≥ 4× faster than pdsh (%d hosts)", big), fmt.Sprintf("%.1f×", r), r >= 4)
		}
		if rn, ok := b.run[big]; ok {
			r := ratio(rn, b.runStatus[big])
			row(fmt.Sprintf("run (1 task/host) ≤ 1.5× status (%d hosts)", big), fmt.Sprintf("%.2f×", r), r <= 1.5)
		}
	}
	if len(b.teardownMax) > 0 {
		worst := time.Duration(0)
		for _, d := range b.teardownMax {
			worst = max(worst, d)
		}
		row("teardown ≤ 1 s + 2 RTT ("+ms(time.Second+2*b.rtt)+")", "worst "+ms(worst), worst <= time.Second+2*b.rtt)
	}
	if b.streamRatio > 0 {
		row("streaming ≤ 1.2× plain ssh, nothing lost", fmt.Sprintf("%.2f×, lines complete: %v", b.streamRatio, b.streamOK), b.streamRatio <= 1.2 && b.streamOK)
		row("streaming with --capture ≤ 1.1× without", fmt.Sprintf("%.2f×", b.captureRatio), b.captureRatio <= 1.1)
	}
	if b.peakRSS > 0 {
		row(fmt.Sprintf("peak RSS ≤ 64 MiB (%d hosts × %d tasks)", b.peakHosts, b.tasksPerHost), fmt.Sprintf("%.1f MiB", float64(b.peakRSS)/1024), b.peakRSS <= 64*1024)
	}
	if b.syncRatio > 0 {
		row(fmt.Sprintf("`run --sync` of %d MB to %d hosts ≤ 1.2× %d parallel `tar c \\| ssh host tar x`", b.syncMB, b.syncHosts, b.syncHosts),
			fmt.Sprintf("%.2f×", b.syncRatio), b.syncRatio <= 1.2)
		budget := b.rtt + time.Duration(b.syncHosts)*50*time.Millisecond
		row(fmt.Sprintf("unchanged code: `run --sync` ≤ `run` + 1 RTT + 50 ms per host (%s, %d hosts)", ms(budget), b.syncHosts),
			"+"+ms(b.syncExtra), b.syncExtra <= budget)
	}
	for _, c := range b.reconnectCuts {
		limit := 3*b.rtt + c.wait
		med := medianDur(c.total)
		row(fmt.Sprintf("reconnect, %s: link back → output ≤ 3 RTT + step (%s)", c.name, ms(limit)), ms(med), med <= limit)
	}
	if r, ok := b.startFloor[big]; ok {
		row(fmt.Sprintf("start ≤ status + 3 RTT + its CPU beyond status's ÷ %d CPUs (%d hosts)", runtime.NumCPU(), big), fmt.Sprintf("%.2f×", r), r <= 1)
	}
	if r, ok := b.detachRatio[big]; ok {
		row(fmt.Sprintf("`run --detach` returns within a foreground start (%d hosts)", big), fmt.Sprintf("%.2f×", r), r <= 1)
	}
	b.slowTargets(row)
	b.answerTargets(row)
}

func envInts(t *testing.T, name string, def []int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want positive integers, comma-separated", name, v)
		}
		out = append(out, n)
	}
	return out
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	if v == "0" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		t.Fatalf("%s=%q: want a duration such as 50ms", name, v)
	}
	return d
}

func goVersion() string {
	out, _ := exec.Command("go", "env", "GOVERSION").Output()
	return strings.TrimSpace(string(out))
}

// benchBinary makes TFHIVE_BENCH_TFHIVE, when set, the tfhive that a
// benchmark measures: each benchmark test calls it (the queue's and the
// sweep's run before TestBench, and measured this tree's tfhive when only
// TestBench read it).
func benchBinary() {
	if bin := os.Getenv("TFHIVE_BENCH_TFHIVE"); bin != "" {
		tfhiveBin = bin
	}
}
