package logroot

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/probe/localfile"
)

// top lists the log root every refresh: an ended run's summary is read
// once, and read again only when the file is another (a run name used
// again).
func TestRunsCachedReadsASummaryOnce(t *testing.T) {
	root := filepath.Join(t.TempDir(), "tfhive-runs")
	dir := filepath.Join(root, "r1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, rundir.Summary)
	write := func(result string, mod time.Time) {
		if err := os.WriteFile(path, []byte(`{"run_id": "r1", "result": "`+result+`", "started": "2026-11-27T10:00:00Z"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	then := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	write("succeeded", then)
	cache := Cache{}
	list := func() string {
		rs, err := RunsCached(root, io.Discard, time.Now(), cache)
		if err != nil || len(rs) != 1 {
			t.Fatalf("%v, %+v", err, rs)
		}
		return rs[0].Result
	}
	if got := list(); got != "succeeded" {
		t.Fatalf("first list: %s", got)
	}
	// The cached record stands for the file while it is the same file:
	// overwritten in place keeping size and time, the cache still answers.
	write("cancelled", then)
	if got := list(); got != "succeeded" {
		t.Errorf("an unchanged summary was read again: %s", got)
	}
	write("cancelled", then.Add(time.Second))
	if got := list(); got != "cancelled" {
		t.Errorf("a new summary was not read: %s", got)
	}
}

// A run dir of another user's is listed as hers; the user's own has no
// owner.
func TestRunsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a run dir of another user's needs root")
	}
	root := t.TempDir()
	for _, id := range []string{"mine", "hers"} {
		dir := filepath.Join(root, id)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, rundir.Summary), []byte(`{"run_id": "`+id+`", "result": "succeeded"}`), 0o644)
	}
	const nobody = 65534
	if err := os.Chown(filepath.Join(root, "hers"), nobody, nobody); err != nil {
		t.Fatal(err)
	}
	rs, err := Runs(root, io.Discard, time.Now())
	if err != nil || len(rs) != 2 {
		t.Fatalf("Runs: %v %+v", err, rs)
	}
	owners := map[string]string{}
	for _, r := range rs {
		owners[r.RunID] = r.Owner
	}
	if owners["mine"] != "" || owners["hers"] != localfile.UserName(nobody) {
		t.Errorf("owners %q", owners)
	}
}
