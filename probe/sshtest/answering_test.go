package sshtest

import (
	"fmt"
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

// A replayed probe lists a GPU host's few dozen listening sockets, not
// this machine's thousands.
func TestHostListening(t *testing.T) {
	var b strings.Builder
	b.WriteString("@@tfhive-ps\n@@tfhive-tcp\nRecv-Q Send-Q Local Address:Port\n")
	for i := range 3000 {
		fmt.Fprintf(&b, "0 128 127.0.0.1:%d 0.0.0.0:*\n", 10000+i)
	}
	b.WriteString("@@tfhive-nic\n1: lo inet 127.0.0.1/8\n")
	got := string(hostListening([]byte(b.String())))
	before, after, ok := strings.Cut(got, "@@tfhive-tcp\n")
	if !ok || before != "@@tfhive-ps\n" {
		t.Fatalf("the sections before the listing changed: %q", got[:min(len(got), 80)])
	}
	listing, rest, ok := strings.Cut(after, "@@tfhive-nic\n")
	if !ok || rest != "1: lo inet 127.0.0.1/8\n" {
		t.Fatalf("the sections after the listing changed: %q", after[max(0, len(after)-80):])
	}
	lines := strings.Split(strings.TrimSuffix(listing, "\n"), "\n")
	if len(lines) != 1+listeningLines || lines[1] != "0 128 127.0.0.1:10000 0.0.0.0:*" {
		t.Errorf("the listing has %d lines (want its header and %d), the first %q", len(lines), listeningLines, lines[1])
	}
	if same := "x\n@@tfhive-smi 0\n"; string(hostListening([]byte(same))) != same {
		t.Errorf("output without a listing changed")
	}
}
