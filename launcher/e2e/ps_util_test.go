package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// ps shows the live utilisation of each run's GPUs: what the host's
// nvidia-smi reports now (the fake serves "UTIL MEM"), for the GPUs the
// run claims there and no others; a run holding no GPU asks nvidia-smi
// nothing.
func TestPsLiveGPUUse(t *testing.T) {
	f := runFleet(t, "u1")
	h := f.Host("u1")
	if err := os.WriteFile(filepath.Join(h.Dir, "gpu", "usage"), []byte("55 2048\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := `echo up; while [ ! -e "$1/may-end" ]; do sleep 0.05; done`
	args, _ := runArgs(t, f, "--workers", "1", "--gpus-per-worker", "1", "--sample", "0", "--", "sh", "-c", script, "task", dir)
	r := startTfhive(t, f, readStdout, args...)
	id := ""
	if !r.readUntil(func(line string) bool {
		if m := runIDLine.FindStringSubmatch(line); m != nil {
			id = m[1]
		}
		return strings.HasSuffix(line, "] up") && id != ""
	}) {
		r.Wait()
		t.Fatalf("the task did not start: %s%s", r.read.String(), r.other.String())
	}
	r.discardRest()

	queries := func() int {
		b, _ := os.ReadFile(filepath.Join(h.Dir, "gpu", "queries"))
		return strings.Count(string(b), "\n")
	}
	js := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "ps", "--json")...)
	wantCode(t, js, 0)
	var doc struct {
		Runs []struct {
			RunID  string `json:"run_id"`
			GPUs   []int  `json:"gpus"`
			GPUUse []struct {
				GPU  int     `json:"gpu"`
				Util float64 `json:"util_pct"`
				Mem  float64 `json:"mem_mib"`
			} `json:"gpu_usage"`
		}
	}
	if err := json.Unmarshal([]byte(js.stdout), &doc); err != nil {
		t.Fatalf("ps --json: %v\n%s", err, js.stdout)
	}
	if len(doc.Runs) != 1 || doc.Runs[0].RunID != id || len(doc.Runs[0].GPUs) != 1 || len(doc.Runs[0].GPUUse) != 1 ||
		doc.Runs[0].GPUUse[0].GPU != doc.Runs[0].GPUs[0] || doc.Runs[0].GPUUse[0].Util != 55 || doc.Runs[0].GPUUse[0].Mem != 2048 {
		t.Errorf("ps --json: want run %s's one GPU at 55%% and 2048 MiB:\n%s", id, js.stdout)
	}
	if n := queries(); n != 1 {
		t.Errorf("nvidia-smi was asked %d times for utilisation, want once per ps", n)
	}
	table := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "ps")...)
	wantCode(t, table, 0)
	wantContains(t, "ps", table.stdout, "GPU UTIL / MEM")
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(id) + ` .*  55% 2\.0G  `).MatchString(table.stdout) {
		t.Errorf("ps: want run %s's row with 55%% 2.0G:\n%s", id, table.stdout)
	}
	if err := os.WriteFile(filepath.Join(dir, "may-end"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, r.other.String())
	}

	// A run holding ports only: ps asks nvidia-smi nothing.
	before := queries()
	args, _ = runArgs(t, f, "--ps", "1", "--workers", "1", "--gpus-per-worker", "0", "--sample", "0", "--", "sh", "-c", script, "task", dir+"/2")
	os.MkdirAll(dir+"/2", 0o755)
	r = startTfhive(t, f, readStdout, args...)
	up := 0
	if !r.readUntil(func(line string) bool {
		if strings.HasSuffix(line, "] up") {
			up++
		}
		return up == 2
	}) {
		r.Wait()
		t.Fatalf("the tasks did not start: %s%s", r.read.String(), r.other.String())
	}
	r.discardRest()
	table = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "ps")...)
	wantCode(t, table, 0)
	if queries() != before || strings.Contains(table.stdout, "%") {
		calls, _ := os.ReadFile(filepath.Join(h.Dir, "gpu", "calls"))
		t.Errorf("a run without GPUs: nvidia-smi asked %d times, ps:\n%s\ncalls:\n%s", queries()-before, table.stdout, calls)
	}
	os.WriteFile(filepath.Join(dir, "2", "may-end"), nil, 0o644)
	if err := r.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, r.other.String())
	}
	noLeftovers(t, f, 10*time.Second)
}
