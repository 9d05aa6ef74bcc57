package e2e

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// webhook is a Slack-like hook on loopback, in the test's process: it
// keeps each JSON body it is sent and answers status (0: 200).
type webhook struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
}

func newWebhook(t *testing.T, status int) *webhook {
	h := &webhook{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("the hook was sent %q: %v", b, err)
		}
		h.mu.Lock()
		h.bodies = append(h.bodies, m)
		h.mu.Unlock()
		if status != 0 {
			w.WriteHeader(status)
		}
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *webhook) got() []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]map[string]any(nil), h.bodies...)
}

// A detached run's keeper tells its end to each --notify target once: a
// webhook (the JSON body's text and fields), a command (the event in
// its environment and on stdin); a hook that answers 500 and one that
// refuses the connection are a line of warning each in keeper.log, and
// the run's own code (9) is wait's. The hooks' secrets (their paths) are
// nowhere in the log dir.
func TestNotifyDetachedEnd(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "n1")
	good, broken := newWebhook(t, 0), newWebhook(t, 500)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String() + "/hooks/s3cret-refused"
	l.Close()
	out := t.TempDir()
	command := `cat >"` + out + `/stdin.json"; echo "$TFHIVE_EVENT $TFHIVE_RUN $TFHIVE_EXIT_CODE" >"` + out + `/env"`
	args, logDir := runArgs(t, f, "--detach", "--workers", "1", "--gpus-per-worker", "0",
		// Each spelling urfave/cli takes.
		"--notify", good.URL+"/hooks/s3cret-good", "-notify", broken.URL+"/hooks/s3cret-broken",
		"--notify="+refused, "-notify="+command,
		"--", "sh", "-c", "sleep 0.5; exit 9")
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	id := strings.TrimSpace(r.stdout)
	// The keeper lives while its task sleeps: its command line, any
	// local user's to read, holds no target.
	if cmdline, ok := keeperCmdline(logDir); !ok {
		t.Log("the keeper ended before its command line was read")
	} else if strings.Contains(cmdline, "s3cret") || strings.Contains(cmdline, "-notify") {
		t.Errorf("the keeper's command line holds --notify: %q", cmdline)
	}
	w := tfhive(t, f.Env(), f.Dir, "wait", "--log-dir", logDir, id)
	wantCode(t, w, 9)

	// wait returns once the keeper let go of the run: it has told.
	got := good.got()
	if len(got) != 1 {
		t.Fatalf("the hook got %d bodies, want 1: %v", len(got), got)
	}
	b := got[0]
	if b["event"] != "failed" || b["run"] != id || b["exit_code"] != 9.0 || b["end"] != true ||
		!strings.HasPrefix(b["text"].(string), "tfhive: run "+id+" failed, exit 9: ") {
		t.Errorf("the hook's body: %v", b)
	}
	if n := len(broken.got()); n != 1 {
		t.Errorf("the broken hook was sent %d bodies, want 1 (no retries)", n)
	}
	env, err := os.ReadFile(filepath.Join(out, "env"))
	if err != nil || string(env) != "failed "+id+" 9\n" {
		t.Errorf("the command's environment said %q (%v)", env, err)
	}
	var e map[string]any
	if data, err := os.ReadFile(filepath.Join(out, "stdin.json")); err != nil || json.Unmarshal(data, &e) != nil || e["event"] != "failed" || e["run"] != id {
		t.Errorf("the command's stdin: %q (%v)", data, err)
	}
	klog := readFile(t, filepath.Join(logDir, "keeper.log"))
	var warned []string
	for _, line := range strings.Split(klog, "\n") {
		if strings.HasPrefix(line, "tfhive: warning: notify ") {
			warned = append(warned, line)
		}
	}
	if len(warned) != 2 || !strings.Contains(klog, "tfhive: warning: notify "+broken.URL+"/…: failed not delivered: HTTP 500") ||
		!strings.Contains(klog, "tfhive: warning: notify http://"+l.Addr().String()+"/…: failed not delivered: ") {
		t.Errorf("keeper.log's warnings, want one line for each failed hook:\n%s", klog)
	}
	entries, _ := os.ReadDir(logDir)
	for _, en := range entries {
		if data := readFile(t, filepath.Join(logDir, en.Name())); strings.Contains(data, "s3cret") {
			t.Errorf("%s holds a hook's secret:\n%s", en.Name(), data)
		}
	}
	wantContains(t, "repro.json", readFile(t, filepath.Join(logDir, "repro.json")), `"--notify",`, `"-notify",`, `"--notify=http://`+l.Addr().String()+`/…"`, `"-notify=cat …"`)
	// The keeper claimed the end on the host: attach -H of the ended run,
	// from another machine, does not tell it again.
	home := t.TempDir()
	a := tfhive(t, append(f.Env(), "HOME="+home), home, "attach", "--hosts", f.HostsYAML, "--ssh-config", f.SSHConfig,
		"--log-dir", filepath.Join(home, "adopted"), "--notify", good.URL+"/hooks/s3cret-good", id)
	wantCode(t, a, 9)
	if n := len(good.got()); n != 1 {
		t.Errorf("after attach -H of the ended run the hook has %d bodies, want the keeper's alone", n)
	}
}

// A detached run whose keeper was killed ends without it; attach -H from
// another machine adopts the ended run and tells its end (the hosts
// file's notify: there), once: a second attach -H finds it told.
func TestNotifyAtAttach(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "n2")
	hook := newWebhook(t, 0)
	flag := filepath.Join(t.TempDir(), "end")
	args, logDir := runArgs(t, f, "--detach", "--workers", "1", "--gpus-per-worker", "0",
		"--", "sh", "-c", `while [ ! -e "$1" ]; do sleep 0.05; done`, "worker", flag)
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	id := strings.TrimSpace(r.stdout)
	if err := syscall.Kill(keeperOf(t, logDir), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The other machine's hosts file: the fleet's, with its notify:.
	hosts := filepath.Join(t.TempDir(), "hosts.yaml")
	yaml, err := os.ReadFile(f.HostsYAML)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hosts, append([]byte("notify: "+hook.URL+"/hooks/s3cret\n"), yaml...), 0o600); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	env := append(f.Env(), "HOME="+home)
	for i := range 2 {
		a := tfhive(t, env, home, "attach", "--hosts", hosts, "--ssh-config", f.SSHConfig,
			"--log-dir", filepath.Join(home, "adopted-"+string(rune('1'+i))), "--grace", "2s", id)
		wantCode(t, a, 0)
		if got := hook.got(); len(got) != 1 || got[0]["event"] != "succeeded" || got[0]["run"] != id {
			t.Fatalf("after attach -H %d the hook got %v, want the run's end once", i+1, got)
		}
		if strings.Contains(a.stdout+a.stderr, "s3cret") {
			t.Errorf("attach -H shows the hook's secret:\n%s\n%s", a.stdout, a.stderr)
		}
	}
	noLeftovers(t, f, 10*time.Second)
}

// keeperCmdline is the command line of the keeper of the run in logDir,
// found by its environment; ok false when none runs.
func keeperCmdline(logDir string) (string, bool) {
	pids, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range pids {
		env, err := os.ReadFile(p)
		if err != nil || !slices.Contains(strings.Split(string(env), "\x00"), "TFHIVE_KEEPER_LOG_DIR="+logDir) {
			continue
		}
		if cmdline, err := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline")); err == nil {
			return strings.ReplaceAll(string(cmdline), "\x00", " "), true
		}
	}
	return "", false
}
