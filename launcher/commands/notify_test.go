package commands

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
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
	targets, err := notifyTargets([]string{srv.URL + "/hooks/x"}, HostOptions{})
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

// A detached TensorBoard's keeper's mark is tfhive's own: a --notify
// command never sees it (notify.Internal).
func TestTensorBoardKeeperEnvIsInternal(t *testing.T) {
	if !notify.Internal(tbKeeperEnv) {
		t.Errorf("%s: a --notify command would see it", tbKeeperEnv)
	}
}
