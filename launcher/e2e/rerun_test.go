package e2e

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/record"
)

// A run records what it takes to run it again; `tfhive rerun` runs the
// same command under a new id, on the hosts the same hosts file gives,
// and says first what is not as it was: the --sync tree, the hosts. (A
// sweep's trial is a run like this one, in a run dir of its own.)
func TestRerun(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "r1", "r2")
	launch := t.TempDir()
	src := filepath.Join(launch, "code")
	os.Mkdir(src, 0o755)
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	yaml := "hosts:\n  - address: r1\n  - address: r2\n"
	write(filepath.Join(launch, "hosts.yaml"), yaml)
	write(filepath.Join(src, "ident"), "v1\n")
	script := `echo "ident=$(cat ident) run=$TFHIVE_RUN_ID task=$TFHIVE_TASK arg=$1"`
	// --sync is relative to the launch dir: the record holds it absolute.
	r := tfhive(t, f.Env(), launch, "run", "--ssh-config", f.SSHConfig, "--name", "orig", "--grace", "2s",
		"--sync", "code", "--sync-exclude", "*.tmp", "--workers", "2", "--gpus-per-worker", "0",
		"--", "sh", "-c", script, "sh", "a b")
	wantCode(t, r, 0)
	wantContains(t, "stdout", r.stdout, "ident=v1 run=orig task=worker:0 arg=a b", "ident=v1 run=orig task=worker:1 arg=a b")
	orig := readJSON[record.Repro](t, filepath.Join(launch, "tfhive-runs", "orig"), "repro.json")
	if orig.Format != record.ReproFormat || orig.Code == nil || len(orig.Code.Hash) != 64 || orig.HostsFrom != "./hosts.yaml" ||
		orig.HostsFile != filepath.Join(launch, "hosts.yaml") || !reflect.DeepEqual(orig.Fleet, []string{"r1", "r2"}) ||
		len(orig.Hosts) != 2 || orig.Hosts[0].Driver == "" || orig.Hosts[0].CUDA == "" || orig.LaunchDir != launch || orig.Git != nil {
		t.Fatalf("record %+v", orig)
	}

	// The tree changed, and the hosts file lost a host: both are said,
	// then the same command runs on the one host left.
	write(filepath.Join(src, "ident"), "v2\n")
	write(filepath.Join(launch, "hosts.yaml"), "hosts:\n  - address: r1\n")
	r = tfhive(t, f.Env(), launch, "rerun", "orig")
	wantCode(t, r, 0)
	m := regexp.MustCompile(`run=(\S+) task=worker:0`).FindStringSubmatch(r.stdout)
	if m == nil || m[1] == "orig" {
		t.Fatalf("the rerun has no id of its own:\n%s", r.stdout)
	}
	id := m[1]
	wantContains(t, "stdout", r.stdout, "ident=v2 run="+id+" task=worker:0 arg=a b", "ident=v2 run="+id+" task=worker:1 arg=a b")
	wantContains(t, "stderr", r.stderr, "tfhive: rerun of orig: --sync tree then "+orig.Code.Hash[:12]+", now ",
		"tfhive: rerun of orig: hosts then r1,r2, now r1\n")
	again := readJSON[record.Repro](t, filepath.Join(launch, "tfhive-runs", id), "repro.json")
	if again.RerunOf != "orig" || again.Code == nil || again.Code.Hash == orig.Code.Hash ||
		!reflect.DeepEqual(again.Command, orig.Command) || !reflect.DeepEqual(again.Fleet, []string{"r1"}) {
		t.Errorf("the rerun's record %+v", again)
	}
	s := summaryOf(t, filepath.Join(launch, "tfhive-runs", id))
	if s.Result != record.ResultSucceeded || len(s.Tasks) != 2 || s.Tasks[0].Host != "r1" || s.Tasks[1].Host != "r1" {
		t.Errorf("the rerun's summary %+v", s)
	}

	// Run again as it was: nothing differs, and --name names it.
	r = tfhive(t, f.Env(), launch, "rerun", id, "--name", "third", "--quiet")
	wantCode(t, r, 0)
	wantContains(t, "stderr", r.stderr, "tfhive: rerun of "+id+": the --sync tree, the hosts, the git commit and tfhive are as they were\n")
	third := readJSON[record.Repro](t, filepath.Join(launch, "tfhive-runs", "third"), "repro.json")
	if !reflect.DeepEqual(third.Request.Job.Command, orig.Command) {
		t.Errorf("third's request %+v", third.Request)
	}

	// What runs is the record's: a flag that would change it is refused,
	// and so is a run without a record.
	r = tfhive(t, f.Env(), launch, "rerun", "orig", "--workers", "3")
	wantCode(t, r, 2)
	os.Remove(filepath.Join(launch, "tfhive-runs", "orig", "repro.json"))
	r = tfhive(t, f.Env(), launch, "rerun", "orig")
	wantCode(t, r, 2)
	wantContains(t, "stderr", r.stderr, "tfhive: error: run orig has no record of how it was started (repro.json)")
	if n := strings.Count(r.stderr, "tfhive: error:"); n != 1 {
		t.Errorf("%d error lines:\n%s", n, r.stderr)
	}
}

// A sweep's trial is a run of its own: `tfhive rerun` of one runs its
// command again, its values substituted as they were, under a new id.
func TestRerunSweepTrial(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := runFleet(t, "t1", "t2")
	launch := t.TempDir()
	r := tfhive(t, f.Env(), launch, fleetArgs(f, "sweep", "--name", "sw", "--grace", "2s", "--param", "x=1,it's 2",
		"--workers", "1", "--gpus-per-worker", "0", "--",
		"sh", "-c", `echo "trial=$TFHIVE_TRIAL run=$TFHIVE_RUN_ID x=$x arg=$1"`, "sh", "{x}")...)
	wantCode(t, r, 0)
	trial := readJSON[record.Repro](t, filepath.Join(launch, "tfhive-runs", "sw-002"), "repro.json")
	if trial.RunID != "sw-002" || !reflect.DeepEqual(trial.Command, []string{"sh", "-c", `echo "trial=$TFHIVE_TRIAL run=$TFHIVE_RUN_ID x=$x arg=$1"`, "sh", "it's 2"}) {
		t.Fatalf("the trial's record %+v", trial)
	}
	r = tfhive(t, f.Env(), launch, "rerun", "sw-002")
	wantCode(t, r, 0)
	m := regexp.MustCompile(`\] trial=sw-002 run=(\S+) x=it's 2 arg=it's 2\n`).FindStringSubmatch(r.stdout)
	if m == nil || m[1] == "sw-002" {
		t.Fatalf("the rerun of sw-002:\n%s\n%s", r.stdout, r.stderr)
	}
	again := readJSON[record.Repro](t, filepath.Join(launch, "tfhive-runs", m[1]), "repro.json")
	if again.RerunOf != "sw-002" || !reflect.DeepEqual(again.Command, trial.Command) {
		t.Errorf("the rerun's record %+v", again)
	}
}

// A run recorded by the tfhive before the record had names of its own
// (format 1: launcher/record/testdata holds one as that tfhive wrote it)
// runs again on this machine, as it did, without SSH; the rerun's record
// is today's.
func TestRerunFormatGoNames(t *testing.T) {
	launch := t.TempDir()
	const id = "20261202-004414-7cef7b"
	run := filepath.Join(launch, "tfhive-runs", id)
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("..", "record", "testdata", "repro-format1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "repro.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	r := tfhive(t, append(os.Environ(), "HOME="+launch), launch, "rerun", id, "--name", "again")
	wantCode(t, r, 0)
	wantContains(t, "stderr", r.stderr, "tfhive: rerun of "+id+": ")
	wantContains(t, "stdout", r.stdout, "run again succeeded")
	again := readJSON[record.Repro](t, filepath.Join(launch, "tfhive-runs", "again"), "repro.json")
	if again.Format != record.ReproFormat || again.RerunOf != id || !again.Request.Hosts.Local ||
		!reflect.DeepEqual(again.Request.Job.Command, []string{"true"}) || again.Request.Job.Workers != 1 {
		t.Errorf("the rerun's record %+v", again)
	}
}
