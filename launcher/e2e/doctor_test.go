package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/doctor"
	"github.com/tfhive/tfhive/probe/sshtest"
)

// One fleet for doctor and run --check: hosts a and b run the machine's
// own python3, odd the same claiming another version, all three without
// the machine's site packages (PythonBare: nothing here needs PyTorch,
// whose import cost 1.3 s of CPU a host and check; TestTFDoctorAndCheck
// imports the real TensorFlow and PyTorch). Sessions get the host's own
// empty HOME, so the test user's rc files (a pyenv on the PATH) stay out
// of them.
func doctorFleet(t *testing.T) *sshtest.Fleet {
	return doctorFleetOn(t, sshtest.DefaultBed(t))
}

func doctorFleetOn(t *testing.T, bed sshtest.Bed) *sshtest.Fleet {
	p := func(name, python string) sshtest.Profile {
		return sshtest.Profile{Name: name, GPU: "idle-2gpu.xml", AliveInterval: 1, Python: python, PythonBare: true}
	}
	return sshtest.StartOn(t, bed, p("a", ""), p("b", ""), p("odd", "3.99.0"))
}

func TestDoctor(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own: its tasks listen on no port (testing.md)
	f := doctorFleet(t)
	justAB := []string{"-H", "a", "-H", "b", "--ssh-config", f.SSHConfig}
	// Sessions are counted as in TestRunReusesTheProbeSession: the check
	// goes on in the probe's session.
	for _, h := range f.Hosts {
		rc := `case $(cat /proc/$PPID/comm) in sshd*) echo "${BASH_EXECUTION_STRING:0:60}" >>"$TFHIVE_FAKE_GPU/sessions";; esac` + "\n"
		if err := os.WriteFile(filepath.Join(h.Home(), ".bashrc"), []byte(rc), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The odd host is marked, the others not; exit 1 names host and item.
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "doctor")...)
	wantCode(t, r, 1)
	for _, h := range f.Hosts {
		b, _ := os.ReadFile(filepath.Join(h.Dir, "gpu", "sessions"))
		if n := strings.Count(string(b), "\n"); n != 1 {
			t.Errorf("%s: %d sessions, want 1:\n%s", h.Name, n, b)
		}
	}
	odd, a := rowsOf(r.stdout, "odd"), rowsOf(r.stdout, "a")
	header := splitCols(strings.SplitN(r.stdout, "\n", 2)[0])
	v := slices.Index(header, "VERSION")
	if len(odd) != 1 || len(a) != 1 || v < 0 || odd[0][v] != "3.99.0*" || strings.HasSuffix(a[0][v], "*") {
		t.Fatalf("table:\n%s", r.stdout)
	}
	if strings.Count(r.stdout, "*") != 1 {
		t.Errorf("more than the odd version marked:\n%s", r.stdout)
	}
	wantContains(t, "header", r.stdout, "HOST", "PYTHON", "TENSORFLOW", "TORCH", "DRIVER", "DISK")
	want := "tfhive: error: the hosts differ: odd: python version 3.99.0, where 2 of 3 hosts have " + a[0][v] + "\n"
	if withoutClonesWarning(r.stderr) != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", r.stderr, want)
	}

	// Equal hosts: exit 0, nothing marked.
	r = tfhive(t, f.Env(), f.Dir, append([]string{"doctor"}, justAB...)...)
	wantCode(t, r, 0)
	if strings.Contains(r.stdout, "*") || len(rowsOf(r.stdout, "a")) != 1 || len(rowsOf(r.stdout, "b")) != 1 || withoutClonesWarning(r.stderr) != "" {
		t.Errorf("equal hosts:\n%s\n%s", r.stdout, r.stderr)
	}

	// A host not reached is a row with a note, and exit 4 when the rest
	// are alike.
	r = tfhive(t, f.Env(), f.Dir, append([]string{"doctor", "-H", "127.0.0.1:1", "--connect-timeout", "2s"}, justAB...)...)
	wantCode(t, r, 4)
	if rows := rowsOf(r.stdout, "127.0.0.1:1"); len(rows) != 1 || !strings.HasPrefix(rows[0][len(rows[0])-1], "not reached: connection refused") ||
		strings.Contains(r.stdout, "*") {
		t.Errorf("a host not reached:\n%s", r.stdout)
	}
	wantContains(t, "stderr", r.stderr, "tfhive: error: 1 of 3 hosts could not be reached")

	// --json, with a module of the standard library imported too.
	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "doctor", "--json", "--import", "json")...)
	wantCode(t, r, 1)
	var rep doctor.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	var raw map[string]json.RawMessage
	json.Unmarshal([]byte(r.stdout), &raw)
	for _, k := range []string{"hosts", "majority", "differs"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("--json has no %q:\n%s", k, r.stdout)
		}
	}
	if !rep.Differs || len(rep.Hosts) != 3 {
		t.Fatalf("--json: differs %v, %d hosts", rep.Differs, len(rep.Hosts))
	}
	maj := rep.Majority["python.version"]
	if maj == nil || *maj == "3.99.0" || *maj != a[0][v] {
		t.Errorf("majority python.version %v", maj)
	}
	for _, h := range rep.Hosts {
		wantDiffers := []string{}
		if h.Host == "odd" {
			wantDiffers = []string{"python.version"}
		}
		if h.Error != "" || !slices.Equal(h.Differs, wantDiffers) || h.Python.Executable == nil || h.Driver == nil ||
			*h.Driver != "535.129.03" || h.DiskFreeBytes == nil || h.Modules["json"] == nil || h.Code != nil {
			t.Errorf("--json host %s: %+v", h.Host, h)
		}
		if torch, ok := h.Modules["torch"]; !ok {
			t.Errorf("--json host %s has no torch entry (null when not installed): %v", h.Host, h.Modules)
		} else if torch != nil {
			// This machine has PyTorch (python3-torch): the bare python3
			// must not see it, or each check pays its import.
			t.Errorf("--json host %s: torch %s imported: its python3 is not bare (sshtest PythonBare)", h.Host, *torch)
		}
	}

	// A host whose nvidia-smi finds no devices (exit 6, as a real one
	// says it): doctor says so, as status does, never "no nvidia-smi".
	gpu := filepath.Join(f.Host("b").Dir, "gpu")
	for name, data := range map[string]string{"output": "No devices were found\n", "exit": "6\n"} {
		if err := os.WriteFile(filepath.Join(gpu, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r = tfhive(t, f.Env(), f.Dir, "doctor", "-H", "b", "--ssh-config", f.SSHConfig)
	if rows := rowsOf(r.stdout, "b"); len(rows) != 1 || !strings.Contains(strings.Join(rows[0], "  "), "found no devices") || strings.Contains(r.stdout, "no nvidia-smi") {
		t.Errorf("doctor of a host whose nvidia-smi finds no devices (exit %d):\n%s%s", r.code, r.stdout, r.stderr)
	}
	noLeftovers(t, f, 10*time.Second)
}

func TestRunCheck(t *testing.T) {
	f := doctorFleet(t)

	// The plan's hosts differ: nothing is claimed or started, exit 2
	// names host and item.
	args, logDir := runArgs(t, f, "--check", "--workers", "3", "--", "true")
	r := tfhive(t, f.Env(), f.Dir, args...)
	wantCode(t, r, 2)
	wantContains(t, "stderr", r.stderr, "tfhive: error: --check: odd: python version 3.99.0, where 2 of 3 hosts have ",
		"tfhive: hint: tfhive doctor shows every host")
	if _, err := os.Stat(logDir); !os.IsNotExist(err) {
		t.Errorf("the log dir was made (%v): the run started", err)
	}
	for _, h := range f.Hosts {
		if entries, _ := os.ReadDir(h.ClaimsDir()); len(entries) > 0 {
			t.Errorf("%s: claim files made: the run claimed before the check", h.Name)
		}
	}

	// The same hosts alike: the run starts and succeeds.
	logDir = filepath.Join(t.TempDir(), "logs")
	r = tfhive(t, f.Env(), f.Dir, "run", "-H", "a", "-H", "b", "--ssh-config", f.SSHConfig, "--log-dir", logDir,
		"--check", "--import", "json", "--workers", "2", "--", "true")
	wantCode(t, r, 0)
	if s := summaryOf(t, logDir); s.Result != "succeeded" || len(s.Tasks) != 2 {
		t.Errorf("summary %+v", s)
	}
	noLeftovers(t, f, 10*time.Second)
}
