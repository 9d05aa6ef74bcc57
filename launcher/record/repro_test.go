package record

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/testkit"
)

// A record of the first format (the request under commands' Go names,
// written by the tfhive before this record had names of its own: these
// fixtures are two runs of that tfhive, kept as they were) is read as
// today's, every option where it was.
func TestReadReproGoNames(t *testing.T) {
	r := readFixture(t, "repro-format1.json")
	if r.Format != ReproFormatGoNames || r.RunID != "20261202-004414-7cef7b" || r.HostsFrom != "this machine, without SSH" ||
		!reflect.DeepEqual(r.Command, []string{"true"}) || !reflect.DeepEqual(r.Fleet, []string{"localhost"}) {
		t.Errorf("record %+v", r)
	}
	want := ReproRequest{
		Hosts: ReproHosts{ConnectTimeout: 10 * time.Second, CommandTimeout: 30 * time.Second, Parallel: 256, Local: true},
		Job: ReproJob{MaxUtilPct: 10, MaxMemMiB: 1024, Framework: "tf", Workers: 1, Strategy: "spread",
			PortRange: "2222-2400", Priority: "normal", Command: []string{"true"}},
		Grace: 10 * time.Second, Reconnect: 5 * time.Minute, Sample: 10 * time.Second, RestartBackoff: 10 * time.Second,
	}
	if !reflect.DeepEqual(r.Request, want) {
		t.Errorf("request\n%+v\nwant\n%+v", r.Request, want)
	}

	r = readFixture(t, "repro-format1-many.json")
	q := r.Request
	if !q.Hosts.Quiet || !q.Quiet || q.Job.Workers != 2 || q.Job.Name != "fixture-many" ||
		!reflect.DeepEqual(q.Job.Command, []string{"sh", "-c", "echo loss 0.5"}) ||
		!reflect.DeepEqual(q.Env, []string{"A=1"}) || q.Setup != "true" || q.Grace != 3*time.Second ||
		q.Timeout != 5*time.Minute || q.Sample != 0 || !reflect.DeepEqual(q.Capture, []string{`loss=loss (\S+)`}) ||
		q.Restarts != 1 || q.RestartOn != "1-127" {
		t.Errorf("request %+v", q)
	}
}

// Today's format, as the first format's record reads in it: the names
// this record chose, held by the golden file.
func TestReproFormat(t *testing.T) {
	r := readFixture(t, "repro-format1-many.json")
	r.Format = ReproFormat
	got, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "repro-format2.json")
	testkit.Golden(t, path, append(got, '\n'))
	back := readFixture(t, "repro-format2.json")
	if !reflect.DeepEqual(back, r) {
		t.Errorf("read back\n%+v\nwant\n%+v", back, r)
	}
}

// A record of another format is refused as such; one that is not JSON,
// or not a record, is an error of its own.
func TestReadReproRefuses(t *testing.T) {
	_, err := ReadRepro([]byte(`{"format": 3, "request": {"whatever": 1}}`))
	var fe *ReproFormatError
	if !errors.As(err, &fe) || fe.Format != 3 || err.Error() != "a record of format 3; this tfhive reads formats 1 and 2" {
		t.Errorf("format 3: %v", err)
	}
	if _, err := ReadRepro([]byte(`{}`)); !errors.As(err, &fe) || fe.Format != 0 {
		t.Errorf("no format: %v", err)
	}
	for _, doc := range []string{`not json`, `[1]`, `{"format": 2, "request": []}`, `{"format": 1, "request": {"Job": 7}}`} {
		if _, err := ReadRepro([]byte(doc)); err == nil || errors.As(err, &fe) {
			t.Errorf("%s: %v", doc, err)
		}
	}
}

func readFixture(t *testing.T, name string) *Repro {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ReadRepro(data)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
