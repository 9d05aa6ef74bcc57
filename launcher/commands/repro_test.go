package commands

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/codesync"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
)

// fill sets every exported field v reaches to a value other than its
// zero, but those JSON leaves out.
func fill(t *testing.T, v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			fill(t, v.Field(i), path+"."+f.Name)
		}
	case reflect.String:
		v.SetString("x" + path)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.String {
			t.Fatalf("%s: a slice of %s: say how a run's record holds it", path, v.Type().Elem())
		}
		v.Set(reflect.ValueOf([]string{"a" + path, "b"}))
	default:
		t.Fatalf("%s: a %s: tag it json:\"-\" or say how a run's record holds it", path, v.Kind())
	}
}

// Every option of a run goes through its record and back: a field added
// to RunOptions that the record does not carry fails here, not in a
// rerun; and every field of the record is an option.
func TestRunOptionsThroughTheRecord(t *testing.T) {
	var o RunOptions
	fill(t, reflect.ValueOf(&o).Elem(), "RunOptions")
	req := reproRequest(o)
	data, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var read record.ReproRequest
	if err := json.Unmarshal(data, &read); err != nil {
		t.Fatal(err)
	}
	if back := runOptionsOf(read); !reflect.DeepEqual(o, back) {
		t.Errorf("the record changed the options:\n%+v\n%+v", o, back)
	}
	var r record.ReproRequest
	fill(t, reflect.ValueOf(&r).Elem(), "ReproRequest")
	if back := reproRequest(runOptionsOf(r)); !reflect.DeepEqual(r, back) {
		t.Errorf("the options changed the record:\n%+v\n%+v", r, back)
	}
}

// A run on the fake hosts leaves its record: the command, where the hosts
// came from, the hosts the plan used with the versions the probe saw, and
// its options with paths made absolute.
func TestRunWritesItsRecord(t *testing.T) {
	b := twoHosts(t)
	var o out
	ro := b.runOptions(o.streams(), fakeJob("rec", 2, `true`))
	ro.Job.GPUsPerWorker = 1
	if err := Run(context.Background(), ro); err != nil {
		t.Fatalf("run: %v\n%s", err, o.stderr.String())
	}
	data, err := os.ReadFile(filepath.Join(ro.LogDir, rundir.Repro))
	if err != nil {
		t.Fatal(err)
	}
	var r record.Repro
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.Format != record.ReproFormat || r.RunID != "rec" || r.Version == "" || !reflect.DeepEqual(r.Command, ro.Job.Command) {
		t.Errorf("record %+v", r)
	}
	if !reflect.DeepEqual(r.Fleet, []string{"a", "b"}) || len(r.Hosts) != 2 {
		t.Errorf("fleet %v, hosts %+v", r.Fleet, r.Hosts)
	}
	for _, h := range r.Hosts {
		if h.Driver == "" || h.CUDA == "" || h.Python != "" {
			t.Errorf("host %+v: the probe's driver and CUDA, no Python without --check", h)
		}
	}
	cwd, _ := os.Getwd()
	if r.LaunchDir != cwd || r.HostsFrom == "" {
		t.Errorf("launch dir %q, hosts from %q", r.LaunchDir, r.HostsFrom)
	}
	req := runOptionsOf(r.Request)
	if !reflect.DeepEqual(req.Job.Command, ro.Job.Command) || req.Job.Workers != 2 || req.Job.GPUsPerWorker != 1 || req.Grace != 2*time.Second {
		t.Errorf("request %+v", req)
	}
}

// A run without a record, or with one of another format, is refused in
// one line (exit 2), before anything is started.
func TestRerunRefusesRecords(t *testing.T) {
	dir := t.TempDir()
	var o out
	run := filepath.Join(dir, "old")
	os.Mkdir(run, 0o755)
	err := Rerun(context.Background(), RerunOptions{Streams: o.streams(), Run: run})
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(ue.Msg, "run old has no record of how it was started") {
		t.Errorf("no record: %v", err)
	}
	os.WriteFile(filepath.Join(run, rundir.Repro), []byte(`{"format": 3, "run_id": "old"}`), 0o644)
	err = Rerun(context.Background(), RerunOptions{Streams: o.streams(), Run: run})
	if !errors.As(err, &ue) || !strings.Contains(ue.Msg, "format 3; this tfhive reads formats 1 and 2") {
		t.Errorf("format 3: %v", err)
	}
	os.WriteFile(filepath.Join(run, rundir.Repro), []byte(`{"format": 1, "run_id": "old", "request": {"Job": {}}}`), 0o644)
	err = Rerun(context.Background(), RerunOptions{Streams: o.streams(), Run: run})
	if !errors.As(err, &ue) || !strings.Contains(ue.Msg, "holds no run") {
		t.Errorf("no command: %v", err)
	}
	err = Rerun(context.Background(), RerunOptions{Streams: o.streams(), Run: "no-such-run"})
	if !errors.As(err, &ue) || ue.Msg != "no run no-such-run in tfhive-runs here" {
		t.Errorf("no run: %v", err)
	}
	if o.stdout.Len() > 0 {
		t.Errorf("stdout: %s", o.stdout.String())
	}
}

// What differs is said one line each; a value from the record that is
// not plain text is quoted.
func TestRerunDifferences(t *testing.T) {
	cwd, _ := os.Getwd()
	rec := &record.Repro{RunID: "r1", Version: "old\x1b[31m", LaunchDir: cwd, Fleet: []string{"localhost"},
		Code: &record.ReproCode{Hash: strings.Repeat("a", 64)}, Git: codesync.GitState(cwd)}
	ro := RunOptions{Hosts: HostOptions{Local: true}}
	lines := rerunDifferences(rec, ro, nil)
	want := []string{
		"rerun of r1: --sync tree then aaaaaaaaaaaa, now none",
		`rerun of r1: tfhive then "old\x1b[31m", now ` + Version(),
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("lines\n%q\nwant\n%q", lines, want)
	}
	rec.Version, rec.Code = Version(), nil
	if lines := rerunDifferences(rec, ro, nil); len(lines) != 1 || !strings.Contains(lines[0], "as they were") {
		t.Errorf("nothing differs: %q", lines)
	}
}

// A record someone else could have written is refused, naming whose it
// is, unless trusted; the user's own is read.
func TestReadReproOwner(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	os.Mkdir(dir, 0o755)
	doc := `{"format": ` + strconv.Itoa(record.ReproFormat) + `, "run_id": "run", "request": {}}`
	path := filepath.Join(dir, rundir.Repro)
	os.WriteFile(path, []byte(doc), 0o644)
	if _, foreign, err := readRepro(dir, "run", false); err != nil || foreign != "" {
		t.Fatalf("the user's own record: %q, %v", foreign, err)
	}
	os.Chmod(path, 0o666)
	_, _, err := readRepro(dir, "run", false)
	var ue *UsageError
	if !errors.As(err, &ue) || ue.Msg != "run run's record "+path+" refused: it is writable by group and others" ||
		!strings.Contains(ue.Fix, "tfhive rerun --trust "+dir+" runs it anyway") {
		t.Errorf("a record others may write: %v (%s)", err, ue.Fix)
	}
	r, foreign, err := readRepro(dir, "run", true)
	if err != nil || r.RunID != "run" || foreign != "--trust: its record "+path+" runs as you, though it is writable by group and others" {
		t.Errorf("trusted: %+v %q %v", r, foreign, err)
	}
}

// A run recorded by the tfhive before the record had names of its own
// (format 1: a run of that tfhive, kept as it was) runs again: on this
// machine, as it did, and its rerun's record is today's.
func TestRerunFormatGoNames(t *testing.T) {
	dir := t.TempDir()
	const id = "20261202-004414-7cef7b"
	run := filepath.Join(dir, id)
	os.Mkdir(run, 0o755)
	data, err := os.ReadFile(filepath.Join("..", "record", "testdata", "repro-format1.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(run, rundir.Repro), data, 0o644)
	var o out
	again := filepath.Join(dir, "again")
	if err := Rerun(context.Background(), RerunOptions{Streams: o.streams(), Run: run, LogDir: again}); err != nil {
		t.Fatalf("rerun: %v\n%s", err, o.stderr.String())
	}
	if !strings.Contains(o.stderr.String(), "tfhive: rerun of "+id+": ") {
		t.Errorf("stderr says nothing of what differs:\n%s", o.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(again, rundir.Summary)); err != nil {
		t.Errorf("the rerun left no summary: %v", err)
	}
	data, err = os.ReadFile(filepath.Join(again, rundir.Repro))
	if err != nil {
		t.Fatal(err)
	}
	r, err := record.ReadRepro(data)
	if err != nil || r.Format != record.ReproFormat || r.RerunOf != id || !r.Request.Hosts.Local ||
		!reflect.DeepEqual(r.Request.Job.Command, []string{"true"}) {
		t.Errorf("the rerun's record: %+v, %v", r, err)
	}
}
