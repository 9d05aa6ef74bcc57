package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/tensorboard"
	"github.com/tfhive/tfhive/schedule"
)

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	data, _ := json.Marshal(v)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func planOf(id, host string, argv ...string) schedule.Plan {
	return schedule.Plan{RunID: id, Tasks: []schedule.Task{{ID: "worker:0", Role: "worker", Host: host, Argv: argv}}}
}

// A run's TensorBoard dir and host come from its plan; a sweep's are
// every started trial's with a model dir, on the first's host; a run
// without one, or none at all, is refused before any host is reached.
func TestTensorBoardDirs(t *testing.T) {
	root := t.TempDir()
	writeJSONFile(t, filepath.Join(root, "r1", rundir.Plan), planOf("r1", "h1", "python3", "t.py", "--model_dir=/shared/r1"))
	writeJSONFile(t, filepath.Join(root, "bare", rundir.Plan), planOf("bare", "h1", "python3", "t.py"))
	writeJSONFile(t, filepath.Join(root, "lr", rundir.Sweep), record.Sweep{Name: "lr", Command: []string{"t"},
		Params: []record.SweepParam{{Name: "lr", Values: []string{"0.1", "0.01", "0.001"}}}})
	writeJSONFile(t, filepath.Join(root, "lr-001", rundir.Plan), planOf("lr-001", "h2", "t", "--logdir", "/s/lr-001"))
	writeJSONFile(t, filepath.Join(root, "lr-002", rundir.Plan), planOf("lr-002", "h3", "t", "--logdir", "/s/lr-002"))

	host, dirs, err := tensorBoardDirs(root, filepath.Join(root, "r1"), "r1")
	if err != nil || host != "h1" || len(dirs) != 1 || dirs[0] != (tensorboard.Dir{Name: "r1", Path: "/shared/r1"}) {
		t.Errorf("r1: %q %v %v", host, dirs, err)
	}
	host, dirs, err = tensorBoardDirs(root, filepath.Join(root, "lr"), "lr")
	if err != nil || host != "h2" || tensorboard.Spec(dirs) != "lr-001:/s/lr-001,lr-002:/s/lr-002" {
		t.Errorf("the sweep: %q %v %v", host, dirs, err)
	}
	var usage *UsageError
	if _, _, err := tensorBoardDirs(root, filepath.Join(root, "bare"), "bare"); !errors.As(err, &usage) || !strings.Contains(err.Error(), "names no model dir") {
		t.Errorf("a run without a model dir: %v", err)
	}
	var none *NoRunError
	if _, _, err := tensorBoardDirs(root, filepath.Join(root, "nosuch"), "nosuch"); !errors.As(err, &none) {
		t.Errorf("no such run: %v", err)
	}
}

// Bad usage is one line before anything is read or dialled; --stop with
// nothing to stop says so and succeeds; a record whose pid is no keeper
// of the user's is not signalled.
func TestTensorBoardUsageAndStop(t *testing.T) {
	root := t.TempDir()
	var out, errb bytes.Buffer
	o := TensorBoardOptions{Streams: Streams{Stdout: &out, Stderr: &errb}, LogRoot: root}
	var usage *UsageError
	for _, bad := range []TensorBoardOptions{{}, {Name: "../x"}, {Name: "r", Port: 70000}, {Stop: true, Detach: true}} {
		bad.Streams, bad.LogRoot = o.Streams, root
		if err := TensorBoard(context.Background(), bad); !errors.As(err, &usage) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	// A record of pid 1 (not a tfhive tensorboard) is left alone.
	writeJSONFile(t, filepath.Join(root, "r1", rundir.TensorBoard), tbState{PID: 1, URL: "http://localhost:6006/"})
	os.Chmod(filepath.Join(root, "r1", rundir.TensorBoard), 0o600)
	o.Stop = true
	if err := TensorBoard(context.Background(), o); err != nil || !strings.Contains(errb.String(), "no detached TensorBoard in "+root) || out.Len() != 0 {
		t.Errorf("--stop with nothing to stop: %v %q %q", err, out.String(), errb.String())
	}
}
