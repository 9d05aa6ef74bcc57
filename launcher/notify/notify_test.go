package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/help"
	"github.com/tfhive/tfhive/launcher/record"
)

func TestParseTarget(t *testing.T) {
	for _, c := range []struct{ in, shown, err string }{
		{"https://hooks.slack.com/services/T0/B0/s3cret", "https://hooks.slack.com/…", ""},
		{"http://chat.lab.example:8065/hooks/abc", "http://chat.lab.example:8065/…", ""},
		{"https://hooks.example?token=s3cret", "https://hooks.example/…", ""},
		{"https://me:pw@hooks.example", "https://hooks.example", ""},
		{"HTTPS://hooks.example/", "https://hooks.example", ""},
		{"true", "true", ""},
		{"sh -c 'echo s3cret'", "sh …", ""},
		{"ftp://files.example/s3cret", "", "--notify ftp://files.example/…: a webhook is an https:// or http:// URL (else give a command)"},
		{"https:///s3cret", "", "--notify https:///…: the URL names no host"},
		{"https://h.example/%zz/s3cret", "", "--notify https://h.example/…: not a valid URL"},
		{"no-such-notifier-xyz --token s3cret", "", "--notify no-such-notifier-xyz: no such command (neither on $PATH nor an executable file); a webhook starts with https:// or http://"},
		{"  ", "", "--notify: empty target"},
		// A mistyped URL is a command that is not there, its secret unshown.
		{"https:/hooks.slack.com/services/T/B/s3cret", "", "--notify https:/hooks.slack.com/…: no such command (neither on $PATH nor an executable file); a webhook starts with https:// or http://"},
		{"https:hooks.slack.com", "", "--notify https:hooks.slack.com: no such command (neither on $PATH nor an executable file); a webhook starts with https:// or http://"},
		{"xoxb-1234567890-s3cret0123456789abcdef", "", "--notify xoxb-1…: no such command (neither on $PATH nor an executable file); a webhook starts with https:// or http://"},
		{"me@s3cret.example", "", "--notify me@s3c…: no such command (neither on $PATH nor an executable file); a webhook starts with https:// or http://"},
		// VAR=value before the command, as sh takes it.
		{"SLACK_TOKEN=xoxb-s3cret true --to me", "SLACK_TOKEN=… true …", ""},
		{"A=1 B_2=s3cret true", "A=… B_2=… true", ""},
		{"SLACK_TOKEN='s3cret x' true", "SLACK_TOKEN=… …", ""},
		{"SLACK_TOKEN=s3cret no-such-notifier-xyz", "", "--notify no-such-notifier-xyz: no such command (neither on $PATH nor an executable file); a webhook starts with https:// or http://"},
		{"SLACK_TOKEN=s3cret", "", "--notify SLACK_TOKEN=…: variables set, but no command to run"},
	} {
		tg, err := ParseTarget(c.in)
		switch {
		case c.err != "":
			if err == nil || err.Error() != c.err {
				t.Errorf("ParseTarget(%q): %v, want %q", c.in, err, c.err)
			}
		case err != nil:
			t.Errorf("ParseTarget(%q): %v", c.in, err)
		case tg.String() != c.shown:
			t.Errorf("ParseTarget(%q) shown %q, want %q", c.in, tg.String(), c.shown)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ParseTarget(%q)'s error shows the secret: %v", c.in, err)
		}
	}
	if l, err := ParseTargets([]string{"none"}); err != nil || l != nil {
		t.Errorf("none: %v, %v; want no targets", l, err)
	}
	if _, err := ParseTargets([]string{"none", "true"}); err == nil {
		t.Error("none beside a target: no error")
	}
}

func TestRedactArgs(t *testing.T) {
	in := []string{"run", "--notify", "https://h.example/hooks/s3cret", "--notify=https://h.example/x?k=s3cret",
		"--notify", "mail-me --token s3cret", "-notify", "https://h.example/hooks/s3cret", "-notify=https://h.example/x?k=s3cret",
		"-notify", "TOKEN=s3cret true", "--notify", "https:/h.example/hooks/s3cret",
		"--", "train", "--notify", "https://keep.example/as/is"}
	got := strings.Join(RedactArgs(in), " ")
	want := "run --notify https://h.example/… --notify=https://h.example/… --notify mail-me … -notify https://h.example/… -notify=https://h.example/… " +
		"-notify TOKEN=… true --notify https:/h.example/… -- train --notify https://keep.example/as/is"
	if got != want {
		t.Errorf("RedactArgs:\n got %s\nwant %s", got, want)
	}
	if strings.Join(in, " ") == got {
		t.Error("RedactArgs changed its input in place")
	}
}

// A keeper's command line is the first tfhive's less the flags whose
// values are its targets, in every spelling; the run's own command's
// --notify stays (after --, or after the flags, once every target's
// flag is out).
func TestWithoutTargets(t *testing.T) {
	in := []string{"run", "--notify", "a", "-notify", "b", "--notify=c", "-notify=d", "--workers", "8",
		"--", "train", "--notify", "a"}
	got := strings.Join(WithoutTargets(in, []string{"a", "b", "c", "d"}), " ")
	if want := "run --workers 8 -- train --notify a"; got != want {
		t.Errorf("WithoutTargets:\n got %s\nwant %s", got, want)
	}
	in = []string{"run", "--notify=a", "-H", "h1", "python3", "train.py", "--notify", "a"}
	if got := strings.Join(WithoutTargets(in, []string{"a"}), " "); got != "run -H h1 python3 train.py --notify a" {
		t.Errorf("WithoutTargets of the command's own --notify: %s", got)
	}
}

// hook is a webhook on loopback that records each body.
type hook struct {
	mu     sync.Mutex
	bodies []map[string]any
	status int
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var m map[string]any
	json.Unmarshal(b, &m)
	h.mu.Lock()
	h.bodies = append(h.bodies, m)
	status := h.status
	h.mu.Unlock()
	if status != 0 {
		w.WriteHeader(status)
		io.WriteString(w, "hook broke\nsecond line")
	}
}

func (h *hook) got() []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]map[string]any(nil), h.bodies...)
}

func target(t *testing.T, s string) Target {
	t.Helper()
	tg, err := ParseTarget(s)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

type warnings struct {
	mu    sync.Mutex
	lines []string
}

func (w *warnings) add(s string) { w.mu.Lock(); w.lines = append(w.lines, s); w.mu.Unlock() }

func TestWebhookEndAndRows(t *testing.T) {
	h := &hook{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	var warn warnings
	n := &Notifier{Targets: []Target{target(t, srv.URL+"/hooks/s3cret")}, Warn: warn.add,
		Base: Event{Run: "r1", User: "ann", LogDir: "/runs/r1"}}
	n.Row("worker:0", "h1", "idle-warning", "GPUs idle 30m")
	n.Row("worker:1", "h1", "idle-warning", "GPUs idle 30m") // the same, within a minute: unsent
	n.Row("", "", "hang", "no progress for 10m")
	n.Row("worker:0", "h1", "exit", "code 0")   // not a kind to send
	n.Row("worker:0", "h1", "preempted", "by…") // the end says it
	n.End(context.Background(), "failed", 9, "worker:1 on h1 exited 9")
	got := h.got()
	kinds := map[string]int{}
	for _, b := range got {
		kinds[b["event"].(string)]++
	}
	if len(got) != 3 || kinds["idle-warning"] != 1 || kinds["hang"] != 1 || kinds["failed"] != 1 {
		t.Fatalf("the hook got %v, want one idle-warning, one hang, one failed", kinds)
	}
	end := got[2]
	if end["event"] != "failed" {
		t.Fatalf("the last body is %v, want the end", end)
	}
	if end["text"] != "tfhive: run r1 failed, exit 9: worker:1 on h1 exited 9" || end["exit_code"] != 9.0 ||
		end["end"] != true || end["result"] != "failed" || end["run"] != "r1" || end["user"] != "ann" || end["log_dir"] != "/runs/r1" {
		t.Errorf("end body: %v", end)
	}
	if len(warn.lines) != 0 {
		t.Errorf("warnings: %q", warn.lines)
	}
}

func TestFailingWebhookIsAWarningWithoutTheSecret(t *testing.T) {
	h := &hook{status: 500}
	srv := httptest.NewServer(h)
	defer srv.Close()
	// A port nothing listens on: refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String() + "/hooks/s3cret"
	l.Close()
	var warn warnings
	n := &Notifier{Targets: []Target{target(t, srv.URL+"/hooks/s3cret"), target(t, refused)}, Warn: warn.add, Base: Event{Run: "r2"}}
	n.End(context.Background(), "succeeded", 0, "")
	if len(warn.lines) != 2 {
		t.Fatalf("warnings %q, want one per failed target", warn.lines)
	}
	all := strings.Join(warn.lines, "\n")
	for _, want := range []string{"notify " + srv.URL + "/…: succeeded not delivered: HTTP 500 Internal Server Error: hook broke",
		"notify http://" + l.Addr().String() + "/…: succeeded not delivered: "} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "s3cret") || strings.Contains(all, "\n\n") || strings.Contains(all, "second line") {
		t.Errorf("warnings show the secret or more than a line each:\n%s", all)
	}
}

func TestCommandSeesTheEvent(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "got")
	script := filepath.Join(dir, "notify.sh")
	os.WriteFile(script, []byte("#!/bin/sh\n{ echo \"$TFHIVE_EVENT|$TFHIVE_RUN|$TFHIVE_EXIT_CODE|$TFHIVE_TEXT\"; cat; } >\""+out+"\"\n"), 0o755)
	var warn warnings
	n := &Notifier{Targets: []Target{target(t, script)}, Warn: warn.add, Base: Event{Run: "r3"}}
	n.End(context.Background(), "interrupted", 130, "")
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	env, stdin, _ := strings.Cut(string(b), "\n")
	if env != "cancelled|r3|130|tfhive: run r3 cancelled (interrupted), exit 130" {
		t.Errorf("environment: %q", env)
	}
	var e Event
	if err := json.Unmarshal([]byte(stdin), &e); err != nil || e.Kind != "cancelled" || e.Result != "interrupted" || !e.End {
		t.Errorf("stdin %q: %+v, %v", stdin, e, err)
	}
	if len(warn.lines) != 0 {
		t.Errorf("warnings: %q", warn.lines)
	}
}

// A command sees the event's variables and the user's environment, never
// what tfhive set in its own for itself (a keeper's TFHIVE_KEEPER…, a
// detached TensorBoard's keeper's mark).
func TestCommandLacksTfhivesOwnEnvironment(t *testing.T) {
	for _, kv := range [][2]string{{"TFHIVE_KEEPER", "3"}, {"TFHIVE_KEEPER_RUN_ID", "r6"}, {"TFHIVE_KEEPER_LOG_DIR", "/logs/r6"},
		{"TFHIVE_KEEPER_HAND", "4"}, {"TFHIVE_TENSORBOARD_KEEPER", "3"}, {"TFHIVE_HOSTS", "/my/hosts.yaml"}, {"MY_TOKEN", "mine"}} {
		t.Setenv(kv[0], kv[1])
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "got")
	var warn warnings
	n := &Notifier{Targets: []Target{target(t, "env >"+out)}, Warn: warn.add, Base: Event{Run: "r6"}}
	n.End(context.Background(), "succeeded", 0, "")
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err, warn.lines)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = v
		}
	}
	for k := range got {
		if strings.HasPrefix(k, "TFHIVE_KEEPER") || k == "TFHIVE_TENSORBOARD_KEEPER" {
			t.Errorf("the command sees tfhive's own %s=%s", k, got[k])
		}
	}
	for k, v := range map[string]string{"TFHIVE_HOSTS": "/my/hosts.yaml", "MY_TOKEN": "mine", "TFHIVE_EVENT": "succeeded", "TFHIVE_RUN": "r6"} {
		if got[k] != v {
			t.Errorf("%s=%q, want %q (the user's, or the event's)", k, got[k], v)
		}
	}
}

func TestFailingAndStuckCommands(t *testing.T) {
	var warn warnings
	n := &Notifier{Targets: []Target{target(t, "echo broke >&2; exit 3"), target(t, "sleep 60")},
		Warn: warn.add, Base: Event{Run: "r4"}, Timeout: 200 * time.Millisecond}
	start := time.Now()
	n.End(context.Background(), "succeeded", 0, "")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a stuck command held the end for %s", d)
	}
	all := strings.Join(warn.lines, "\n")
	for _, want := range []string{"notify echo …: succeeded not delivered: exit status 3: broke", "notify sleep …: succeeded not delivered: still running after"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
}

func TestSteppedDownSendsNothing(t *testing.T) {
	h := &hook{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	n := &Notifier{Targets: []Target{target(t, srv.URL)}, Base: Event{Run: "r5"}}
	n.End(context.Background(), "stepped-down", 0, "")
	if got := h.got(); len(got) != 0 {
		t.Errorf("a keeper that stepped down sent %v", got)
	}
}

// The guide's example of what is sent is what such an end sends: its
// text is the event's line, and its exit code tfhive's for the task's
// code in its detail (a task's own 7 is tfhive's hung: it reads as 1).
func TestGuideExampleEvent(t *testing.T) {
	g, _ := help.Guide("notifications")
	_, body, ok := strings.Cut(g, "```json\n")
	body, _, _ = strings.Cut(body, "```")
	var e Event
	if err := json.Unmarshal([]byte(body), &e); !ok || err != nil || e.ExitCode == nil {
		t.Fatalf("the guide's example: %v\n%s", err, body)
	}
	var code int
	if _, err := fmt.Sscanf(e.Detail[strings.LastIndex(e.Detail, "exited "):], "exited %d", &code); err != nil {
		t.Fatalf("detail %q: %v", e.Detail, err)
	}
	if want := record.TaskExitCode(code); *e.ExitCode != want {
		t.Errorf("the example's exit_code is %d; a task that exited %d gives %d", *e.ExitCode, code, want)
	}
	shown := e.Text
	e.Text = ""
	if got := e.text(); got != shown {
		t.Errorf("the example's text %q; the event says %q", shown, got)
	}
}
