package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// A host whose tools print without end (nvidia-smi's report, ss's
// listening sockets) fails closed at the cap on probe output, with one
// line saying so: its output is not held whole in tfhive's memory, nor
// planned on. Both ways a probe's output is read: status's plain session
// and run's kept one (a supervisor's spare).
func TestProbeOutputBounded(t *testing.T) {
	f := sshtest.Start(t, sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml"})
	h := f.Host("h1")
	bin := filepath.Join(h.Dir, "bin")
	smi := filepath.Join(bin, "nvidia-smi")
	real, err := os.ReadFile(smi)
	if err != nil {
		t.Fatal(err)
	}
	// 24 MB: three times the cap, a tenth of the report that took 690 MB.
	const flood = "#!/bin/sh\nhead -c 24000000 /dev/zero | tr '\\000' x\n"
	const want = "probe output passed 8 MiB (a tool on the host printing without end?): the host is not used"
	check := func(what string) {
		t.Helper()
		st := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status")...)
		wantCode(t, st, 4)
		// The host's one row, its DETAIL whole into a pipe.
		rows := rowsOf(st.stdout, "h1")
		if len(rows) != 1 || !strings.Contains(rows[0][len(rows[0])-1], want) {
			t.Errorf("%s: status: want one row for h1 saying %q:\n%s", what, want, st.stdout)
		}
		for _, row := range rows {
			if row[5] == "free" {
				t.Errorf("%s: a flooding host shows free GPUs:\n%s", what, st.stdout)
			}
		}
		args, _ := runArgs(t, f, "--workers", "1", "--", "true")
		r := tfhive(t, f.Env(), f.Dir, args...)
		wantCode(t, r, 4)
		wantContains(t, what+": run", r.stderr, want)
		if strings.Contains(r.stdout, "exited 0") {
			t.Errorf("%s: a task ran on a flooding host:\n%s", what, r.stdout)
		}
	}
	if err := os.WriteFile(smi, []byte(flood), 0o755); err != nil {
		t.Fatal(err)
	}
	check("nvidia-smi")
	os.WriteFile(smi, real, 0o755)
	if err := os.WriteFile(filepath.Join(bin, "ss"), []byte(flood), 0o755); err != nil {
		t.Fatal(err)
	}
	check("ss")
	os.Remove(filepath.Join(bin, "ss"))
	st := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status")...)
	wantCode(t, st, 0)
}
