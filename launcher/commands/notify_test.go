package commands

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tfhive/tfhive/launcher/csvlog"
	"github.com/tfhive/tfhive/launcher/notify"
	"github.com/tfhive/tfhive/launcher/record"
)

// The rows other features add to a run's timeline (idle, hang) reach
// --notify as the run's own do, through events.csv's subscriber: a fake
// that writes them (as the engine's timeline does) sees each sent once,
// and the rows that are not a person's (start, exit, preempted: the end
// says it) not at all.
func TestTimelineRowsNotify(t *testing.T) {
	var mu sync.Mutex
	var kinds []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var e notify.Event
		if err := json.Unmarshal(b, &e); err != nil {
			t.Errorf("body %q: %v", b, err)
		}
		mu.Lock()
		kinds = append(kinds, e.Kind+" "+e.Task+" "+e.Detail)
		mu.Unlock()
	}))
	defer srv.Close()
	targets, err := notifyTargets([]string{srv.URL + "/hooks/x"}, HostOptions{}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	n := newNotifier(targets, "r1", t.TempDir(), &stderr)
	tl := csvlog.NewEvents(filepath.Join(t.TempDir(), "events.csv"), false)
	tl.Subscribe(onEvent(n))
	tl.Add("worker:0", "h1", record.EventStart, "")
	tl.Add("worker:0", "h1", "idle-warning", "GPUs at 0% for 30m")
	tl.Add("worker:1", "h1", "idle-warning", "GPUs at 0% for 30m")
	tl.Add("", "", "hang", "no line and no metric for 10m; stacks in stacks/")
	tl.Add("worker:0", "h1", record.EventPreempted, "by run hi of bob")
	tl.Add("worker:0", "h1", record.EventExit, "code 143")
	tl.Close()
	n.Wait()
	got := strings.Join(kinds, "\n")
	if len(kinds) != 2 || !strings.Contains(got, "idle-warning worker:0 GPUs at 0% for 30m") || !strings.Contains(got, "hang  no line and no metric for 10m; stacks in stacks/") {
		t.Errorf("the hook got:\n%s", got)
	}
	if stderr.Len() != 0 {
		t.Errorf("warnings: %s", stderr.String())
	}
}

// A hosts file named with --hosts (or $TFHIVE_HOSTS) that someone other
// than the user or root may have written gives no notify command, which
// would run as the user here: it is skipped with a warning naming the
// file and line, and its webhook stands. The user's own file, writable by
// her only, gives both.
func TestSharedHostsFileNotifyCommand(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "hosts.yaml")
	if err := os.WriteFile(file, []byte("notify: [\"true --token s3cret\", \"https://hooks.example/x\"]\nhosts: [gpu01]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	load := func() ([]notify.Target, string) {
		t.Helper()
		var stderr bytes.Buffer
		ts, err := notifyTargets(nil, HostOptions{File: file}, &stderr)
		if err != nil {
			t.Fatal(err)
		}
		return ts, stderr.String()
	}
	if ts, warn := load(); len(ts) != 2 || warn != "" {
		t.Errorf("own file: targets %v, warnings %q; want both, none", ts, warn)
	}
	shared := func(why string) {
		t.Helper()
		ts, warn := load()
		if len(ts) != 1 || !ts[0].Webhook() {
			t.Errorf("%s: targets %v, want the webhook only", why, ts)
		}
		if !strings.HasPrefix(warn, "tfhive: warning: "+file+":1: notify: command true … not run: ") || strings.Contains(warn, "s3cret") || strings.Count(warn, "\n") != 1 {
			t.Errorf("%s: warning %q", why, warn)
		}
	}
	if err := os.Chmod(file, 0o664); err != nil {
		t.Fatal(err)
	}
	shared("group-writable")
	if os.Geteuid() == 0 {
		if err := os.Chmod(file, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(file, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		shared("another user's")
	}
}

// A detached TensorBoard's keeper's mark is tfhive's own: a --notify
// command never sees it (notify.Internal).
func TestTensorBoardKeeperEnvIsInternal(t *testing.T) {
	if !notify.Internal(tbKeeperEnv) {
		t.Errorf("%s: a --notify command would see it", tbKeeperEnv)
	}
}
