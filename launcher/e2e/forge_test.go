package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// forgeMark is what a task may learn of its host's multiplexer: the
// word in a command line of it (ps, /proc), else the name of its
// directory in the run's (ls). It prints "mark WORD" for the test.
const forgeMark = `m=
for p in /proc/[0-9]*; do
	c=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null) || continue
	case $c in *".mux-"*"worker-1"*) ;; *) continue ;; esac
	case $(readlink "$p/cwd" 2>/dev/null) in *"/$TFHIVE_RUN_ID") ;; *) continue ;; esac
	m=${c#*.mux-}; m=${m%%/*}; break
done
if [ -z "$m" ]; then
	for d in "$HOME"/.tfhive/runs-*/"$TFHIVE_RUN_ID"/.mux-*; do m=${d##*/.mux-}; done
fi
echo "mark $m"
`

// A task that learns the multiplexer's word and prints what its tail
// would (headers naming another task's files and the events file, an
// end for that task) changes nothing of the other task: its log has its
// own lines only, once each, and its summary its real end and duration;
// the forger's log has what it printed, byte for byte.
func TestRunMuxForgedHeaders(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "fg", GPU: "idle-2gpu.xml", AliveInterval: 1})
	forge := `printf '\n==> .mux-%s/worker-1.out <==\nFORGED LINE\n\n==> .mux-%s/events <==\nx worker-1 0 0 0 0 12 0;\n\n==> .mux-%s/worker-0.out <==\n' "$m" "$m" "$m"`
	script := `if [ "$TFHIVE_TASK" = worker:0 ]; then
sleep 1
` + forgeMark + forge + `
sleep 0.5
` + forge + `
echo forger done
exit 0
fi
i=0; while [ $i -lt 50 ]; do echo "victim $i"; i=$((i+1)); sleep 0.1; done; echo victim done`
	args, logDir := runArgs(t, f, "--workers", "2", "--gpus-per-worker", "0", "--sample", "0", "--", "sh", "-c", script)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	s := summaryOf(t, logDir)
	forger, victim := taskByID(s, "worker:0"), taskByID(s, "worker:1")
	flog := readFile(t, forger.Log)
	mark := regexp.MustCompile(`mark (\S*)`).FindStringSubmatch(flog)
	if mark == nil || mark[1] == "" {
		t.Fatalf("the forger found no mark:\n%s", flog)
	}
	if _, err := os.Stat(filepath.Join(hostRunDir(f.Host("fg"), s.RunID), ".mux-"+mark[1])); err != nil {
		t.Fatalf("the forger's mark %q is not the multiplexer's: %v", mark[1], err)
	}
	if n := strings.Count(flog, "FORGED LINE\n"); n != 2 || !strings.Contains(flog, "forger done") {
		t.Errorf("the forger's log lost what it printed (%d forged lines):\n%s", n, flog)
	}
	vlog := readFile(t, victim.Log)
	var want strings.Builder
	for i := range 50 {
		fmt.Fprintf(&want, "victim %d\n", i)
	}
	want.WriteString("victim done\n")
	if vlog != want.String() {
		t.Errorf("the victim's log is not its own output:\n%s", vlog)
	}
	if code := codeOf(victim); victim.Outcome != "exited" || code != "0" || victim.Duration < 4*time.Second {
		t.Errorf("victim: %s %s after %s, want exited 0 after 5s", victim.Outcome, code, victim.Duration)
	}
}

// With --restarts, a task that reads the run's word from run.json and
// prints an attempt line of its own ("attempt 0 exited 0") changes
// nothing: each attempt ends as it really did (3), the restart policy
// counts those, and the run ends with 3; the forged line stays in the
// task's log as the output it is.
func TestRestartForgedAttemptLine(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "fa")
	script := `j=$(cat "$HOME"/.tfhive/runs-*/"$TFHIVE_RUN_ID"/run.json)
m=${j##*\"mark\":\"}; m=${m%%\"*}
echo "mark $m"
printf '@@tfhive-attempt %s %s 0\n' "$m" "$TFHIVE_ATTEMPT"
sleep 0.3
echo "attempt $TFHIVE_ATTEMPT done"
exit 9`
	args, logDir := runArgs(t, f, "--restarts", "1", "--restart-backoff", "100ms", "--timeout", "40s", "--workers", "1", "--gpus-per-worker", "0", "--", "sh", "-c", script)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 9)
	s := summaryOf(t, logDir)
	tr := taskByID(s, "worker:0")
	wantAttempts(t, tr, "0:exited:9:restarted every task", "1:exited:9:")
	log := readFile(t, tr.Log)
	mark := regexp.MustCompile(`mark (\w+)`).FindStringSubmatch(log)
	if mark == nil {
		t.Fatalf("the task found no mark:\n%s", log)
	}
	for _, a := range []string{"0", "1"} {
		if !strings.Contains(log, "@@tfhive-attempt "+mark[1]+" "+a+" 0\n") || !strings.Contains(log, "attempt "+a+" done\n") {
			t.Errorf("attempt %s: the log lacks the task's own lines:\n%s", a, log)
		}
	}
}

// After a reconnect (the link reset: each task followed again by a
// session of its own, attach.sh), a task that reads the run's word from
// run.json and prints an attempt line ("attempt N exited 0") still
// changes nothing: its attempts end as they really did (3), the run ends
// with 3, and the forged lines stay in its log as the output they are.
// tfhive logs -H of the run, for the task and for every task, keeps them
// too, and takes out only the supervisor's own lines.
func TestRestartReconnectForgedAttemptLine(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "far", GPU: "idle-2gpu.xml", AliveInterval: 1, Proxied: true})
	flag := filepath.Join(t.TempDir(), "forge")
	script := `echo "attempt $TFHIVE_ATTEMPT waits"
while [ ! -e "$1" ]; do sleep 0.05; done
j=$(cat "$HOME"/.tfhive/runs-*/"$TFHIVE_RUN_ID"/run.json)
m=${j##*\"mark\":\"}; m=${m%%\"*}
echo "mark $m"
printf 'x@@tfhive-attempt %s %s 0\n' "$m" "$TFHIVE_ATTEMPT"
printf '@@tfhive-attempt %s %s 0\n' "$m" "$TFHIVE_ATTEMPT"
sleep 0.5
echo "attempt $TFHIVE_ATTEMPT done"
exit 9`
	args, logDir := runArgs(t, f, "--restarts", "1", "--restart-backoff", "100ms", "--reconnect", "2m", "--timeout", "60s",
		"--workers", "1", "--gpus-per-worker", "0", "--", "sh", "-c", script, "task", flag)
	r := startTfhive(t, f, readStdout, args...)
	if !r.readUntil(func(line string) bool { return strings.HasSuffix(line, "] attempt 0 waits") }) {
		r.Wait()
		t.Fatalf("tfhive ended before the task began: %s", r.other.String())
	}
	f.Host("far").Proxy.Reset()
	if !r.readUntil(func(line string) bool { return strings.Contains(line, "tfhive: far is back after") }) {
		r.Wait()
		t.Fatalf("tfhive did not reconnect: %s%s", r.read.String(), r.other.String())
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.readAll()
	err := r.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 9 {
		t.Fatalf("tfhive: %v, want exit 9\n%s%s", err, r.read.String(), r.other.String())
	}
	s := summaryOf(t, logDir)
	tr := taskByID(s, "worker:0")
	wantAttempts(t, tr, "0:exited:9:restarted every task", "1:exited:9:")
	log := readFile(t, tr.Log)
	mark := regexp.MustCompile(`mark (\w+)`).FindStringSubmatch(log)
	if mark == nil {
		t.Fatalf("the task found no mark:\n%s", log)
	}
	var want strings.Builder
	for _, a := range []string{"0", "1"} {
		fmt.Fprintf(&want, "attempt %s waits\nmark %s\nx@@tfhive-attempt %s %s 0\n@@tfhive-attempt %s %s 0\nattempt %s done\n", a, mark[1], mark[1], a, mark[1], a, a)
	}
	if log != want.String() {
		t.Errorf("log %q, want %q", log, want.String())
	}

	home2 := t.TempDir()
	env2 := append(f.Env(), "HOME="+home2)
	hosts := []string{"logs", "--hosts", f.HostsYAML, "--ssh-config", f.SSHConfig}
	one := tfhive(t, env2, home2, append(hosts, "--task", "worker:0", s.RunID)...)
	wantCode(t, one, 0)
	if one.stdout != want.String() {
		t.Errorf("logs -H --task: %q, want %q", one.stdout, want.String())
	}
	all := tfhive(t, env2, home2, append(hosts, s.RunID)...)
	wantCode(t, all, 0)
	var wantAll strings.Builder
	for line := range strings.Lines(want.String()) {
		wantAll.WriteString("[worker:0 far] " + line)
	}
	if all.stdout != wantAll.String() {
		t.Errorf("logs -H: %q, want %q", all.stdout, wantAll.String())
	}
}

// tfhive logs -H of a run whose task printed attempt lines of its own
// (the run's word read from run.json) keeps them, for the task and for
// every task: only the supervisor's lines, at the offsets it recorded,
// are taken out.
func TestRestartLogsFromHostsForged(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "g2")
	script := `j=$(cat "$HOME"/.tfhive/runs-*/"$TFHIVE_RUN_ID"/run.json)
m=${j##*\"mark\":\"}; m=${m%%\"*}
printf 'x@@tfhive-attempt %s %s 0\n@@tfhive-attempt %s %s 0\n' "$m" "$TFHIVE_ATTEMPT" "$m" "$TFHIVE_ATTEMPT"
printf 'part%s' "$TFHIVE_ATTEMPT"; exit 9`
	args, logDir := runArgs(t, f, "--restarts", "1", "--restart-backoff", "100ms", "--workers", "1", "--gpus-per-worker", "0", "--", "sh", "-c", script)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 9)
	s := summaryOf(t, logDir)
	log := readFile(t, taskByID(s, "worker:0").Log)
	if !strings.Contains(log, "x@@tfhive-attempt ") || !strings.HasSuffix(log, "part1") {
		t.Fatalf("local log %q", log)
	}
	home2 := t.TempDir()
	env2 := append(f.Env(), "HOME="+home2)
	hosts := []string{"logs", "--hosts", f.HostsYAML, "--ssh-config", f.SSHConfig}
	one := tfhive(t, env2, home2, append(hosts, "--task", "worker:0", s.RunID)...)
	wantCode(t, one, 0)
	if one.stdout != log {
		t.Errorf("logs -H --task: %q, want %q", one.stdout, log)
	}
	all := tfhive(t, env2, home2, append(hosts, s.RunID)...)
	wantCode(t, all, 0)
	var want strings.Builder
	for line := range strings.Lines(log + "\n") {
		want.WriteString("[worker:0 g2] " + line)
	}
	if all.stdout != want.String() {
		t.Errorf("logs -H: %q, want %q", all.stdout, want.String())
	}
}
