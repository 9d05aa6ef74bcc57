package sshtest

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// Answering hosts answer as the source host did, each with GPUs of its
// own, through OpenSSH's client with strict host-key checking; a session
// whose stdin is not the recording's fails, never hangs or lies.
func TestAnsweringHostsReplay(t *testing.T) {
	f := AnsweringHosts(t, "a", 3, 0, Profile{Name: "src", GPU: "idle-2gpu.xml"})
	ssh := func(host, cmd, stdin string) (string, error) {
		c := exec.Command("ssh", "-F", f.SSHConfig, "-o", "BatchMode=yes", host, cmd)
		c.Env = f.Env()
		c.Stdin = strings.NewReader(stdin)
		out, err := c.CombinedOutput()
		return string(out), err
	}
	uuids := map[string]bool{}
	for _, h := range f.Hosts {
		out, err := ssh(h.Name, "nvidia-smi -q -x", "")
		if err != nil || !strings.Contains(out, "<nvidia_smi_log>") {
			t.Fatalf("%s: %v\n%s", h.Name, err, out)
		}
		u := regexp.MustCompile(`GPU-[0-9a-f-]+`).FindString(out)
		if u == "" || uuids[u] {
			t.Errorf("%s: GPU UUID %q not its own", h.Name, u)
		}
		uuids[u] = true
	}
	if out, err := ssh("a0000", "cat; exit 3", "hello\n"); err == nil || !strings.Contains(out, "hello") {
		t.Fatalf("recording: %v %q", err, out)
	}
	out, err := ssh("a0001", "cat; exit 3", "hello\n")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || out != "hello\n" {
		t.Errorf("replay: %v %q", err, out)
	}
	out, err = ssh("a0002", "cat; exit 3", "other\n")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 255 || !strings.Contains(out, "stdin differs") {
		t.Errorf("replay with other stdin: %v %q", err, out)
	}
}
