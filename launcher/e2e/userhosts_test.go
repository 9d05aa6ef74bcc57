package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// From an empty directory, with only ~/.config/tfhive/hosts.yaml naming
// an ssh config of Host aliases (and giving one host a name of its own),
// status, run --detach, ps, runs and kill reach the file's hosts with no
// host flag at all, and say where the hosts came from on stderr; stdout
// of --json stays one document.
func TestUserHostsFile(t *testing.T) {
	f := runFleet(t, "u1", "u2")
	conf := filepath.Join(f.Home, ".config", "tfhive")
	if err := os.MkdirAll(conf, 0o700); err != nil {
		t.Fatal(err)
	}
	copyFile(t, f.SSHConfig, filepath.Join(conf, "lab_ssh_config"), 0o600)
	hostsYAML := "ssh_config: lab_ssh_config\nhosts:\n  - u1\n  - address: u2\n    name: second\n"
	if err := os.WriteFile(filepath.Join(conf, "hosts.yaml"), []byte(hostsYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir() // empty: no hosts.yaml, no tfhive-runs
	env := f.Env()
	const note = "tfhive: hosts from ~/.config/tfhive/hosts.yaml\n"

	r := tfhive(t, env, dir, "status")
	wantCode(t, r, 0)
	if withoutClonesWarning(r.stderr) != note {
		t.Errorf("status's stderr %q, want %q", r.stderr, note)
	}
	if len(rowsOf(r.stdout, "u1")) != 2 || len(rowsOf(r.stdout, "second")) != 2 || len(rowsOf(r.stdout, "u2")) != 0 {
		t.Errorf("status: want 2 GPUs of u1 and of second (u2 by its name):\n%s", r.stdout)
	}
	// -H picks hosts of the file (by address, range or name), reached
	// with its ssh config; before, "cannot resolve u1", exit 4.
	for _, pick := range []struct{ flag, want, not string }{{"u[1-2]", "u1 second", ""}, {"second", "second", "u1"}} {
		r := tfhive(t, env, dir, "status", "-H", pick.flag)
		wantCode(t, r, 0)
		if want := "tfhive: hosts from -H, their settings from ~/.config/tfhive/hosts.yaml\n"; withoutClonesWarning(r.stderr) != want {
			t.Errorf("status -H %s: stderr %q, want %q", pick.flag, r.stderr, want)
		}
		for _, h := range strings.Fields(pick.want) {
			if len(rowsOf(r.stdout, h)) != 2 {
				t.Errorf("status -H %s: want 2 GPUs of %s:\n%s", pick.flag, h, r.stdout)
			}
		}
		if pick.not != "" && len(rowsOf(r.stdout, pick.not)) != 0 {
			t.Errorf("status -H %s shows %s:\n%s", pick.flag, pick.not, r.stdout)
		}
	}
	// run -H and --hostfile too reach the file's hosts with its ssh
	// config: a task on each.
	hf := filepath.Join(t.TempDir(), "hostfile")
	if err := os.WriteFile(hf, []byte("u1 slots=1\nu2 slots=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, pick := range [][]string{{"-H", "u[1-2]"}, {"--hostfile", hf}} {
		args := append([]string{"run", "--log-dir", filepath.Join(t.TempDir(), "logs")}, pick...)
		r := tfhive(t, env, dir, append(args, "--workers", "2", "--gpus-per-worker", "1", "--", "sh", "-c", "echo on $(hostname)")...)
		wantCode(t, r, 0)
		if strings.Count(r.stdout, "] on ") != 2 || !strings.Contains(r.stderr+r.stdout, "their settings from ~/.config/tfhive/hosts.yaml") {
			t.Errorf("run %s: want a task on each host and the settings' source named:\n%s%s", pick[0], r.stdout, r.stderr)
		}
	}
	// plan says it too (before, it said nothing of where its hosts came from).
	pl := tfhive(t, env, dir, "plan", "--workers", "2", "--", "true")
	wantCode(t, pl, 0)
	if got := withoutClonesWarning(pl.stderr); got != note {
		t.Errorf("plan's stderr %q, want %q", got, note)
	}
	j := tfhive(t, env, dir, "status", "--json")
	wantCode(t, j, 0)
	var doc struct {
		Hosts []struct {
			Host string `json:"host"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(j.stdout), &doc); err != nil || len(doc.Hosts) != 2 || doc.Hosts[1].Host != "second" {
		t.Errorf("status --json: %v, %+v\n%s", err, doc, j.stdout)
	}

	d := tfhive(t, env, dir, "run", "--detach", "--name", "mine", "--grace", "2s", "--workers", "2", "--gpus-per-worker", "1",
		"--", "sleep", "300")
	wantCode(t, d, 0)
	wantContains(t, "run --detach's stderr", d.stderr,
		"tfhive: run mine started, detached (hosts from ~/.config/tfhive/hosts.yaml); logs in tfhive-runs/mine")
	console, _ := os.ReadFile(filepath.Join(dir, "tfhive-runs", "mine", "console.log"))
	wantContains(t, "the run's console", string(console),
		"tfhive: run mine: 2 tasks on 2 hosts (hosts from ~/.config/tfhive/hosts.yaml), logs in ")

	p := tfhive(t, env, dir, "ps")
	wantCode(t, p, 0)
	if p.stderr != note {
		t.Errorf("ps's stderr %q, want %q", p.stderr, note)
	}
	if len(rowsOf(p.stdout, "mine")) != 2 || !strings.Contains(p.stdout, " u1 ") || !strings.Contains(p.stdout, " second ") {
		t.Errorf("ps: want run mine on u1 and second:\n%s", p.stdout)
	}

	l := tfhive(t, env, dir, "runs")
	wantCode(t, l, 0)
	if len(rowsOf(l.stdout, "mine")) != 1 {
		t.Errorf("runs: want run mine:\n%s", l.stdout)
	}

	n := tfhive(t, env, dir, "kill", "nothere")
	wantCode(t, n, 1)
	wantContains(t, "kill's error", n.stderr,
		"tfhive: error: no run nothere holds GPUs or ports on these hosts (hosts from ~/.config/tfhive/hosts.yaml)")
	k := tfhive(t, env, dir, "kill", "mine")
	wantCode(t, k, 0)
	wantContains(t, "kill", k.stdout, "tfhive: stopped run mine on u1 (1 task)", "tfhive: stopped run mine on second (1 task)")
	noLeftovers(t, f, 10*time.Second)
	w := tfhive(t, env, dir, "wait", "mine")
	if w.code == 0 {
		t.Errorf("wait for a killed run: exit 0\n%s", w.stderr)
	}
	l = tfhive(t, env, dir, "runs")
	wantCode(t, l, 0)
	if rows := rowsOf(l.stdout, "mine"); len(rows) != 1 || strings.Contains(strings.Join(rows[0], " "), "succeeded") {
		t.Errorf("runs after kill:\n%s", l.stdout)
	}

	// --ssh-config on the command line wins over the file's: one that
	// knows neither alias reaches no host.
	empty := filepath.Join(t.TempDir(), "ssh_config")
	os.WriteFile(empty, nil, 0o600)
	e := tfhive(t, env, dir, "status", "--ssh-config", empty, "--connect-timeout", "2s")
	wantCode(t, e, 4)
}
