package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// A host's policy file: shown by status --json; a per-user limit refuses
// a GPU beyond it (exit 3, naming rule and host) or, under --wait, makes
// the run wait until the user's other run is done; --priority high only
// for those it names; a malformed file is exit 2 naming file and line; a
// file others may write is ignored with one warning.
func TestPolicyOnTheHost(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml", AliveInterval: 1})
	h := f.Host("h1")
	if err := h.SetPolicy("limits:\n  users:\n    \"*\": 1\nhigh:\n  users: [nobody-here]\n"); err != nil {
		t.Fatal(err)
	}
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status", "--json")...)
	wantCode(t, r, 0)
	var doc struct {
		Hosts []struct {
			Policy struct {
				File   string
				Limits struct{ Users map[string]int }
			}
		}
	}
	json.Unmarshal([]byte(r.stdout), &doc)
	if p := doc.Hosts[0].Policy; p.File != h.PolicyFile() || p.Limits.Users["*"] != 1 {
		t.Errorf("status --json policy: %+v\n%s", p, r.stdout)
	}

	// One run holds one GPU; a second GPU for the same user is refused.
	done := filepath.Join(t.TempDir(), "done")
	hold := `echo ready; while [ ! -e ` + done + ` ]; do sleep 0.1; done`
	args, _ := runArgs(t, f, "--workers", "1", "--name", "first", "--", "sh", "-c", hold)
	first := startTfhive(t, f, readStdout, args...)
	if !first.readUntil(func(l string) bool { return strings.HasSuffix(l, "ready") }) {
		first.Wait()
		t.Fatalf("the first run did not start:\n%s%s", first.read.String(), first.other.String())
	}
	first.discardRest()
	args, _ = runArgs(t, f, "--workers", "1", "--", "true")
	r = tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 3)
	wantContains(t, "stderr", r.stderr, "policy of h1: each user may hold 1 GPUs at once (1 held)")

	// --priority high is only for whom the policy names.
	args, _ = runArgs(t, f, "--workers", "1", "--priority", "high", "--", "true")
	r = tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 3)
	wantContains(t, "stderr", r.stderr, "policy of h1: --priority high is only for users nobody-here")

	// Under --wait, the run waits for the user's first run to end.
	args, _ = runArgs(t, f, "--workers", "1", "--wait", "60s", "--", "true")
	second := startTfhive(t, f, readStderr, args...)
	if !second.readUntil(func(l string) bool { return strings.HasPrefix(l, "tfhive: waiting") }) {
		second.Wait()
		t.Fatalf("the second run did not wait:\n%s%s", second.read.String(), second.other.String())
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	second.readAll()
	if err := second.Wait(); err != nil {
		t.Fatalf("the second run: %v\n%s%s", err, second.read.String(), second.other.String())
	}
	first.Wait()

	// Malformed: exit 2, file and line.
	if err := h.SetPolicy("limits:\n  user:\n    bob: 2\n"); err != nil {
		t.Fatal(err)
	}
	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status")...)
	wantCode(t, r, 2)
	wantContains(t, "stderr", r.stderr, "tfhive: error: h1: policy: "+h.PolicyFile()+":2: field user not found")

	// Writable by others: ignored, one warning.
	if err := h.SetPolicy("limits:\n  users:\n    \"*\": 0\n"); err != nil {
		t.Fatal(err)
	}
	os.Chmod(h.PolicyFile(), 0o666)
	args, _ = runArgs(t, f, "--workers", "1", "--", "true")
	r = tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 0)
	if strings.Count(r.stderr, "is ignored") != 1 {
		t.Errorf("want one warning:\n%s", r.stderr)
	}
	wantContains(t, "stderr", r.stderr, "tfhive: warning: h1: "+h.PolicyFile()+" is ignored: group or others may write it (mode 666)")
}

// A policy file is read whole or refused, never cut: a rule after line
// 2000 holds (it was dropped, and the host failed open); a file over the
// size limit is exit 2 naming it, before any plan, on every command that
// plans or shows the host.
func TestPolicyReadWholeOrRefused(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.Start(t, sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml"})
	h := f.Host("h1")
	long := strings.Repeat("# the lab's notes\n", 2100)
	if err := h.SetPolicy(long + "limits:\n  users:\n    \"*\": 1\n"); err != nil {
		t.Fatal(err)
	}
	args, _ := runArgs(t, f, "--workers", "2", "--", "true")
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 3)
	wantContains(t, "stderr", r.stderr, "policy of h1: each user may hold 1 GPUs at once")

	if err := h.SetPolicy(long + strings.Repeat("#", 256<<10) + "\n"); err != nil {
		t.Fatal(err)
	}
	size := len(long) + 256<<10 + 1
	want := "tfhive: error: h1: policy: " + h.PolicyFile() + ": it is " + strconv.Itoa(size) + " bytes, more than the 256 KiB a policy file may have; it is refused whole, never read in part\n"
	for _, cmd := range [][]string{fleetArgs(f, "status"), args} {
		r = tfhive(t, f.Env(), f.Dir, cmd...)
		wantCode(t, r, 2)
		if !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "tfhive: error:") != 1 {
			t.Errorf("%s: stderr %q, want %q", cmd[0], r.stderr, want)
		}
	}
}
