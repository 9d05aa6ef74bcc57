package probe

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/remote/shscript"

	"github.com/tfhive/tfhive/probe/sshtest"
)

func TestParsePolicyExample(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(sshtest.RepoRoot(), "testdata", "policy", "example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePolicy("/etc/tfhive/policy.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if p.Limits.Users["*"] != 2 || p.Limits.Groups["students"] != 4 || p.High.Users[0] != "alice" || !p.PreemptLow ||
		len(p.Reserved) != 1 || p.Reserved[0].GPUs[1] != 1 || p.File != "/etc/tfhive/policy.yaml" {
		t.Errorf("parsed %+v", p)
	}
	if !p.Reserved[0].Active(1, 9*60) || p.Reserved[0].Active(1, 18*60) || p.Reserved[0].Active(6, 10*60) {
		t.Error("reservation hours")
	}
	if p, err := ParsePolicy("f", nil); err != nil || p == nil {
		t.Errorf("an empty file: %v, %v", p, err)
	}
}

func TestParsePolicyErrorsNameTheLine(t *testing.T) {
	for in, want := range map[string]string{
		"limits:\n  users:\n    bob: two\n":                                                        "f:3: cannot unmarshal",
		"limits:\n  user:\n    bob: 2\n":                                                           "f:2: field user not found",
		"preempt_low: true\nhigh: [\n":                                                             "f:2: did not find",
		"limits:\n  groups:\n    g: -1\n":                                                          "f:3: limits: groups: g: a limit must be 0 or more",
		"reserved:\n  - group: g\n    gpus: [0]\n    hours: 9-18\n":                                "f:4: reserved: hours \"9-18\"",
		"reserved:\n  - group: g\n    gpus: [0]\n    hours: \"22:00-06:00\"\n    days: [monday]\n": "f:5: reserved: day \"monday\"",
		"reserved:\n  - gpus: [0]\n":                                                               "f:2: reserved: every entry needs a group",
	} {
		_, err := ParsePolicy("f", []byte(in))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %q…", in, err, want)
		}
	}
}

func TestPolicyHonouredOnlyFromRoot(t *testing.T) {
	sec := func(s, d string) []byte {
		return []byte("p /etc/tfhive/policy.yaml\ns " + s + "\nz 18\nd " + d + "\nu alice alice ml\nt 1 09 05\n|preempt_low: true\ng ml:x:10:bob,carol\n")
	}
	p, ctx, warn, perr := policyOf(sec("0 644 regular file", "0 755 directory"))
	if p == nil || !p.PreemptLow || warn != "" || perr != "" || ctx.User != "alice" || ctx.Minute != 545 || ctx.Weekday != 1 || len(ctx.Members["ml"]) != 2 {
		t.Errorf("root's policy: %+v %+v %q %q", p, ctx, warn, perr)
	}
	for s, d := range map[string]string{"1000 644 regular file": "0 755 directory", "0 664 regular file": "0 755 directory",
		"0 644 regular file ": "0 777 directory", "0 777 symbolic link": "0 755 directory"} {
		if p, _, warn, _ := policyOf(sec(s, d)); p != nil || !strings.HasPrefix(warn, "/etc/tfhive/policy.yaml is ignored: ") {
			t.Errorf("%s in %s: policy %v, warning %q", s, d, p, warn)
		}
	}
	if p, _, warn, _ := policyOf(nil); p != nil || warn != "" {
		t.Error("no policy")
	}
}

// A policy file is read whole or refused, never cut: one over the size
// limit (or whose size is unknown) is a policy error, which no plan
// passes over, not a policy of the lines read.
func TestPolicyReadWholeOrRefused(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "policy.yaml")
	// 2100 lines, then a rule: no line of it may be dropped.
	text := strings.Repeat("# a comment line\n", 2100) + "high:\n  users: [alice]\n"
	os.WriteFile(f, []byte(text), 0o644)
	sec := runPolicyScript(t, f)
	p, _, warn, perr := policyOf(sec)
	if os.Getuid() == 0 {
		if p == nil || perr != "" || len(p.High.Users) != 1 || p.High.Users[0] != "alice" {
			t.Errorf("2102 lines: policy %+v, warning %q, error %q; want high: alice", p, warn, perr)
		}
	}
	ps, _ := readPolicySection(sec)
	if ps.size != int64(len(text)) || strings.Join(ps.text, "\n")+"\n" != text {
		t.Errorf("read %d lines of size %d, want the whole file (%d bytes)", len(ps.text), ps.size, len(text))
	}

	big := text + strings.Repeat("#", MaxPolicySize)
	os.WriteFile(f, []byte(big), 0o644)
	sec = runPolicyScript(t, f)
	ps, _ = readPolicySection(sec)
	if ps.size != int64(len(big)) || len(strings.Join(ps.text, "\n")) > MaxPolicySize {
		t.Errorf("size %d, %d lines read", ps.size, len(ps.text))
	}
	// As root's file would be: trusted, and refused for its size alone.
	trusted := regexp.MustCompile(`(?m)^s \d+ \d+`).ReplaceAll(sec, []byte("s 0 644"))
	trusted = regexp.MustCompile(`(?m)^d \d+ \d+`).ReplaceAll(trusted, []byte("d 0 755"))
	want := fmt.Sprintf("%s: it is %d bytes, more than the 256 KiB a policy file may have; it is refused whole, never read in part", f, len(big))
	if p, _, warn, perr := policyOf(trusted); p != nil || warn != "" || perr != want {
		t.Errorf("a policy over the limit: %+v %q %q, want error %q", p, warn, perr, want)
	}
}

// runPolicyScript runs the policy part of the probe on file f.
func runPolicyScript(t *testing.T, f string) []byte {
	t.Helper()
	script := exec.Command("sh", "-c", shscript.LoadOneLine(scripts, "scripts/policy.sh").With(shscript.Set("claims_only", "0"), shscript.Set("pbytes", strconv.Itoa(MaxPolicySize))))
	script.Env = append(os.Environ(), "TFHIVE_POLICY="+f)
	out, err := script.Output()
	if err != nil {
		t.Fatal(err)
	}
	_, sec := cutPolicy(out)
	return sec
}

func TestParsePolicyIdle(t *testing.T) {
	p, err := ParsePolicy("f", []byte("idle: {below: 5%, warn: 30m, stop: 2h}\n"))
	if err != nil || p.Idle == nil || p.Idle.Below != 5 || p.Idle.Warn.D() != 30*time.Minute || p.Idle.Stop.D() != 2*time.Hour {
		t.Fatalf("%+v, %v", p, err)
	}
	if p, err := ParsePolicy("f", []byte("idle:\n  below: 0\n  stop: 4s\n")); err != nil || p.Idle.Below != 0 || p.Idle.Stop.D() != 4*time.Second {
		t.Errorf("below 0: %+v, %v", p, err)
	}
	for in, want := range map[string]string{
		"idle: {below: 5%, warn: soon}\n":              "f:1:",
		"idle:\n  below: 120%\n  stop: 2h\n":           "f:2:",
		"idle:\n  below: 5%\n":                         "f:1: idle: needs warn or stop",
		"idle:\n  below: 5%\n  warn: 2h\n  stop: 1h\n": "f:4: idle: warn must be shorter than stop",
		"idle:\n  stop: 1h\n  after: 2h\n":             "f:3: field after not found",
		// A rule under a second reads 0 tenths on the host: it never acts.
		"idle:\n  below: 5%\n  stop: 1ns\n":              "f:3:",
		"idle:\n  below: 5%\n  warn: 50ms\n  stop: 1h\n": "f:3:",
		"idle:\n  below: nan\n  stop: 1h\n":              "f:2:",
		"idle:\n  below: .inf\n  stop: 1h\n":             "f:2:",
		"idle:\n  below: inf\n  stop: 1h\n":              "f:2:",
	} {
		_, err := ParsePolicy("f", []byte(in))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %q…", in, err, want)
		}
	}
}
