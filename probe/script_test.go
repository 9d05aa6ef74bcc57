package probe

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alessio/shellescape"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// section strips the one leading newline splitProbeOutput leaves on the ps
// and tcp sections when they are not empty (harmless to their parsers).
func section(b []byte) string { return strings.TrimPrefix(string(b), "\n") }

func TestSplitProbeOutput(t *testing.T) {
	const nicLine = `1: lo    inet 127.0.0.1/8 scope host lo\       valid_lft forever preferred_lft forever`
	const tail = "@@tfhive-ps\n 4242 alice    python train.py --x\n@@tfhive-tcp\n  sl  local_address\n   0: 00000000:0016 00000000:0000 0A\n@@tfhive-nic\n" + nicLine + "\n@@tfhive-claims m b-1 /tmp\n@@tfhive-locks\n@@tfhive-holders\n@@tfhive-end\n"
	tests := []struct {
		name         string
		in           string
		exit         int
		smi          string
		ps, tcp, nic string
		err          string
	}{
		{name: "well formed", in: "@@tfhive-smi 0\n<?xml?>\n<nvidia_smi_log>\n</nvidia_smi_log>\n" + tail,
			exit: 0, smi: "<?xml?>\n<nvidia_smi_log>\n</nvidia_smi_log>",
			ps: " 4242 alice    python train.py --x", tcp: "  sl  local_address\n   0: 00000000:0016 00000000:0000 0A", nic: nicLine},
		{name: "failed nvidia-smi", in: "@@tfhive-smi 9\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n@@tfhive-ps\n@@tfhive-tcp\n@@tfhive-nic\n@@tfhive-claims m b-1 /tmp\n@@tfhive-locks\n@@tfhive-holders\n@@tfhive-end\n",
			exit: 9, smi: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."},
		{name: "empty nvidia-smi output as the script prints it", in: "@@tfhive-smi 127\n\n@@tfhive-ps\n@@tfhive-tcp\n@@tfhive-nic\n@@tfhive-claims m b-1 /tmp\n@@tfhive-locks\n@@tfhive-holders\n@@tfhive-end\n",
			exit: 127},
		{name: "empty nvidia-smi output, no blank line", in: "@@tfhive-smi 0\n" + tail,
			ps: " 4242 alice    python train.py --x", tcp: "  sl  local_address\n   0: 00000000:0016 00000000:0000 0A", nic: nicLine},
		{name: "empty sections", in: "@@tfhive-smi 0\n<x/>\n@@tfhive-ps\n@@tfhive-tcp\n@@tfhive-nic\n@@tfhive-claims m b-1 /tmp\n@@tfhive-locks\n@@tfhive-holders\n@@tfhive-end\n",
			smi: "<x/>"},
		{name: "rc-file junk before the first marker", in: "Welcome to gpu01!\n\nYou have new mail.\n@@tfhive-smi 0\n<x/>\n" + tail,
			smi: "<x/>", ps: " 4242 alice    python train.py --x", tcp: "  sl  local_address\n   0: 00000000:0016 00000000:0000 0A", nic: nicLine},
		{name: "anything after the end marker is ignored", in: "@@tfhive-smi 0\n<x/>\n@@tfhive-ps\n@@tfhive-tcp\n@@tfhive-nic\n@@tfhive-claims m b-1 /tmp\n@@tfhive-locks\n@@tfhive-holders\n@@tfhive-end\nlogout\n",
			smi: "<x/>"},
		{name: "negative exit", in: "@@tfhive-smi -1\n@@tfhive-ps\n@@tfhive-tcp\n@@tfhive-nic\n@@tfhive-claims m b-1 /tmp\n@@tfhive-locks\n@@tfhive-holders\n@@tfhive-end\n", exit: -1},

		// Truncated or foreign output.
		{name: "nothing", in: "", err: `unexpected probe output ""`},
		{name: "only junk", in: "bash: sh: command not found\n", err: `unexpected probe output "bash: sh: command not found"`},
		{name: "junk without newline before the marker", in: "motd@@tfhive-smi 0\n<x/>\n" + tail,
			err: `unexpected probe output "motd@@tfhive-smi 0"`},
		{name: "first marker cut", in: "@@tfhive-smi 0", err: `unexpected probe output "@@tfhive-smi 0"`},
		{name: "first marker without exit status", in: "@@tfhive-smi\n<x/>\n", err: `unexpected probe output "@@tfhive-smi"`},
		{name: "exit status not a number", in: "@@tfhive-smi x\n" + tail, err: `unexpected probe output "@@tfhive-smi x"`},
		{name: "no ps marker", in: "@@tfhive-smi 0\n<nvidia_smi_log>\n<gpu>", err: "probe output ends early (no @@tfhive-ps)"},
		{name: "no tcp marker", in: "@@tfhive-smi 0\n<x/>\n@@tfhive-ps\n 4242 alice python\n", err: "probe output ends early (no @@tfhive-tcp)"},
		{name: "no nic marker", in: "@@tfhive-smi 0\n<x/>\n@@tfhive-ps\n@@tfhive-tcp\n  sl  local_address\n", err: "probe output ends early (no @@tfhive-nic)"},
		{name: "no claims marker", in: "@@tfhive-smi 0\n<x/>\n@@tfhive-ps\n@@tfhive-tcp\n@@tfhive-nic\n1: lo    inet 127.0.0.1/8 scope host lo\n", err: "probe output ends early (no @@tfhive-claims)"},
		{name: "no end marker", in: "@@tfhive-smi 0\n<x/>\n@@tfhive-ps\n@@tfhive-tcp\n@@tfhive-nic\n@@tfhive-claims m b-1 /tmp\n@@tfhive-locks\n@@tfhive-holders\n", err: "probe output ends early (no @@tfhive-end)"},
		{name: "end marker cut", in: "@@tfhive-smi 0\n<x/>\n@@tfhive-ps\n@@tfhive-tcp\n@@tfhive-nic\n@@tfhive-claims m b-1 /tmp\n@@tfhive-locks\n@@tfhive-holders\n@@tfhive-en", err: "probe output ends early (no @@tfhive-end)"},
		{name: "markers out of order", in: "@@tfhive-smi 0\n@@tfhive-tcp\n@@tfhive-ps\n@@tfhive-end\n", err: "probe output ends early (no @@tfhive-tcp)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			po, err := splitProbeOutput([]byte(tt.in))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error = %v, want %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if po.smiExit != tt.exit {
				t.Errorf("smiExit = %d, want %d", po.smiExit, tt.exit)
			}
			if string(po.smi) != tt.smi {
				t.Errorf("smi = %q, want %q", po.smi, tt.smi)
			}
			if section(po.ps) != tt.ps {
				t.Errorf("ps = %q, want %q", po.ps, tt.ps)
			}
			if section(po.tcp) != tt.tcp {
				t.Errorf("tcp = %q, want %q", po.tcp, tt.tcp)
			}
			if section(po.nic) != tt.nic {
				t.Errorf("nic = %q, want %q", po.nic, tt.nic)
			}
		})
	}
}

func TestProbeScriptFirstLineCut(t *testing.T) {
	long := strings.Repeat("x", 300)
	_, err := splitProbeOutput([]byte(long + "\n"))
	if want := `unexpected probe output "` + strings.Repeat("x", 120) + `"`; err == nil || err.Error() != want {
		t.Errorf("error = %v, want the first line cut at 120 bytes", err)
	}
}

// fakeGPU makes a bin directory holding the fake nvidia-smi and a fake host
// directory serving output (and exit status, when not 0).
func fakeGPU(t *testing.T, output []byte, exit int) (binDir, gpuDir string) {
	t.Helper()
	binDir, gpuDir = t.TempDir(), t.TempDir()
	fake := readTestdata(t, "fake/nvidia-smi")
	if err := os.WriteFile(filepath.Join(binDir, "nvidia-smi"), fake, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, gpuDir, "output", string(output))
	if exit != 0 {
		writeFile(t, gpuDir, "exit", strconv.Itoa(exit)+"\n")
	}
	return binDir, gpuDir
}

// runProbeScript runs the probe's command line the way sshd does: with
// the login shell's -c (sh here; csh and fish quote the same way).
func runProbeScript(t *testing.T, path, gpuDir string, timeout time.Duration) probeOutput {
	t.Helper()
	testListenPort(t) // for checkTCPSection
	command := probeCommand(timeout, false, "", 0, false, "")
	if strings.Contains(command, "\n") {
		t.Errorf("the command line holds a newline (csh cannot quote one): %q", command)
	}
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Env = []string{"PATH=" + path, "TFHIVE_FAKE_GPU=" + gpuDir, "LC_ALL=C"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sh -c: %v\nstderr: %s", err, stderr.Bytes())
	}
	if stderr.Len() > 0 {
		t.Errorf("the probe script wrote to stderr: %s", stderr.Bytes())
	}
	po, err := splitProbeOutput(out)
	if err != nil {
		t.Fatalf("%v\noutput:\n%s", err, out)
	}
	return po
}

// checkTCPSection checks that the ports section lists a port this test
// listens on, whichever way the script read them.
func checkTCPSection(t *testing.T, tcp []byte) {
	t.Helper()
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		return
	}
	if strings.Contains(string(tcp), "@@tfhive") {
		t.Errorf("tcp section holds a marker: %q", tcp)
	}
	if ports := parseListeningPorts(tcp); !slices.Contains(ports, testListenPort(t)) {
		t.Errorf("tcp section lacks port %d, listening: %v\n%.300s", testListenPort(t), ports, tcp)
	}
}

var testListener struct {
	sync.Once
	ln   net.Listener // held: a collected listener is closed
	port int
}

// testListenPort is a port this test process listens on, on 127.0.0.1.
func testListenPort(t *testing.T) int {
	testListener.Do(func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		testListener.ln, testListener.port = ln, ln.Addr().(*net.TCPAddr).Port
	})
	return testListener.port
}

// Without ss (no iproute2) the ports come from /proc/net/tcp{,6}.
func TestProbeScriptPortsWithoutSS(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp")
	}
	binDir, gpuDir := fakeGPU(t, readTestdata(t, "nvidia-smi/idle-2gpu.xml"), 0)
	writeFile(t, binDir, "ss", "#!/bin/sh\necho 'ss: not here' >&2\nexit 127\n")
	os.Chmod(filepath.Join(binDir, "ss"), 0o755)
	po := runProbeScript(t, binDir+":/usr/bin:/bin", gpuDir, 10*time.Second)
	if !strings.HasPrefix(section(po.tcp), "  sl  local_address") {
		t.Errorf("tcp section does not start with /proc/net/tcp's header: %.80q", po.tcp)
	}
	checkTCPSection(t, po.tcp)
}

// With ss, its netlink query is used, asking for listening sockets only
// (one state: ss leaves out the State column).
func TestProbeScriptPortsWithSS(t *testing.T) {
	if _, err := exec.LookPath("ss"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ss (iproute2) is missing in CI")
		}
		t.Skip("no ss here")
	}
	binDir, gpuDir := fakeGPU(t, readTestdata(t, "nvidia-smi/idle-2gpu.xml"), 0)
	po := runProbeScript(t, binDir+":/usr/bin:/bin", gpuDir, 10*time.Second)
	if !strings.HasPrefix(section(po.tcp), "Recv-Q") {
		t.Errorf("tcp section does not start with ss's header: %.80q", po.tcp)
	}
	checkTCPSection(t, po.tcp)
}

func TestProbeScriptFakeNvidiaSMI(t *testing.T) {
	xml := readTestdata(t, "nvidia-smi/idle-2gpu.xml")
	binDir, gpuDir := fakeGPU(t, xml, 0)
	po := runProbeScript(t, binDir+":/usr/bin:/bin", gpuDir, 10*time.Second)

	if po.smiExit != 0 {
		t.Errorf("smiExit = %d, want 0", po.smiExit)
	}
	// $(…) drops trailing newlines; nothing else may change.
	if want := bytes.TrimRight(xml, "\n"); !bytes.Equal(po.smi, want) {
		t.Errorf("smi section differs from idle-2gpu.xml (%d vs %d bytes)", len(po.smi), len(want))
	}
	if len(po.ps) != 0 {
		t.Errorf("ps section = %q, want empty (no GPU processes)", po.ps)
	}
	checkTCPSection(t, po.tcp)
	calls, err := os.ReadFile(filepath.Join(gpuDir, "calls"))
	if err != nil || string(calls) != "-q -x\n" {
		t.Errorf("nvidia-smi calls = %q (%v), want one `-q -x`", calls, err)
	}
	// And it parses to the golden inventory's GPUs.
	if smi := parseSMI(po.smiExit, po.smi, 10*time.Second); len(smi.GPUs) != 2 || smi.DriverError != "" {
		t.Errorf("parsed %d GPUs (driver error %q), want 2", len(smi.GPUs), smi.DriverError)
	}
}

// GPU processes' pids are handed to ps, whose owners come back.
func TestProbeScriptProcessOwners(t *testing.T) {
	if _, err := exec.LookPath("ps"); err != nil {
		t.Skip("no ps")
	}
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	pid := sleeper.Process.Pid
	// Make every <pid> our sleeper: the script must pass each pid once.
	xml := replacePIDs(string(readTestdata(t, "nvidia-smi/busy-4gpu.xml")), pid)
	binDir, gpuDir := fakeGPU(t, []byte(xml), 0)
	po := runProbeScript(t, binDir+":/usr/bin:/bin", gpuDir, 10*time.Second)

	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	ps := parsePS(po.ps)
	if len(ps) != 1 {
		t.Fatalf("ps section %q: %d processes, want 1", po.ps, len(ps))
	}
	if e := ps[pid]; e.User != me.Username || e.Command != "sleep 30" {
		t.Errorf("ps says %+v for pid %d, want user %s, command `sleep 30`", e, pid, me.Username)
	}
}

// replacePIDs sets every <pid>N</pid> in xml to pid.
func replacePIDs(xml string, pid int) string {
	var b strings.Builder
	for {
		i := strings.Index(xml, "<pid>")
		if i < 0 {
			b.WriteString(xml)
			return b.String()
		}
		j := strings.Index(xml[i:], "</pid>")
		b.WriteString(xml[:i] + "<pid>" + strconv.Itoa(pid) + "</pid>")
		xml = xml[i+j+len("</pid>"):]
	}
}

func TestProbeScriptNvidiaSMIFails(t *testing.T) {
	msg := "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
	binDir, gpuDir := fakeGPU(t, []byte(msg), 9)
	po := runProbeScript(t, binDir+":/usr/bin:/bin", gpuDir, 10*time.Second)
	if po.smiExit != 9 || string(po.smi) != strings.TrimSuffix(msg, "\n") {
		t.Errorf("smiExit %d smi %q, want 9 and the driver message", po.smiExit, po.smi)
	}
	checkTCPSection(t, po.tcp)
}

func TestProbeScriptNoNvidiaSMI(t *testing.T) {
	for _, d := range []string{"/usr/bin", "/bin"} {
		if _, err := os.Stat(filepath.Join(d, "nvidia-smi")); err == nil {
			t.Skipf("this machine has %s/nvidia-smi", d)
		}
	}
	po := runProbeScript(t, "/usr/bin:/bin", t.TempDir(), 10*time.Second)
	if po.smiExit != 127 {
		t.Errorf("smiExit = %d, want 127", po.smiExit)
	}
	if len(po.smi) != 0 || len(po.ps) != 0 {
		t.Errorf("smi %q ps %q, want both empty", po.smi, po.ps)
	}
	checkTCPSection(t, po.tcp)
}

func TestProbeScriptHungNvidiaSMI(t *testing.T) {
	if _, err := exec.LookPath("timeout"); err != nil {
		t.Skip("no coreutils timeout")
	}
	binDir, gpuDir := fakeGPU(t, nil, 0)
	writeFile(t, gpuDir, "hang", "")
	start := time.Now()
	po := runProbeScript(t, binDir+":/usr/bin:/bin", gpuDir, 500*time.Millisecond) // rounded up to 1s
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("script took %s with a 1s nvidia-smi timeout", d)
	}
	if po.smiExit != 124 {
		t.Errorf("smiExit = %d, want 124 (timeout's status)", po.smiExit)
	}
}

func TestProbeScriptTimeoutRounding(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{{time.Millisecond, "t=1;"}, {time.Second, "t=1;"}, {1500 * time.Millisecond, "t=2;"}, {30 * time.Second, "t=30;"}} {
		if got := probeScript(tt.d, false, "", 0, false); !strings.HasPrefix(got, tt.want) {
			t.Errorf("probeScript(%s, false) starts %q, want %q", tt.d, got[:6], tt.want)
		}
	}
}

// sshd runs the command with the user's login shell: the quoting survives
// csh (which cannot quote a newline) and zsh as well as sh.
func TestProbeCommandUnderLoginShells(t *testing.T) {
	xml := readTestdata(t, "nvidia-smi/idle-2gpu.xml")
	binDir, gpuDir := fakeGPU(t, xml, 0)
	testListenPort(t)
	for _, shell := range []string{"tcsh", "zsh", "bash"} {
		path := sshtest.LoginShell(t, shell)
		if path == "" {
			continue
		}
		// Then as the launcher's: a quoted command reading stdin.
		then := "exec sh -c " + shellescape.Quote(`IFS= read -r n || exit 0; echo "then got $n"`)
		cmd := exec.Command(path, "-c", probeCommand(10*time.Second, false, "", 0, false, then))
		cmd.Env = []string{"PATH=" + binDir + ":/usr/bin:/bin", "TFHIVE_FAKE_GPU=" + gpuDir, "LC_ALL=C", "HOME=" + t.TempDir()}
		cmd.Stdin = strings.NewReader("42\n")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s -c: %v\n%s", shell, err, out)
			continue
		}
		if !bytes.HasSuffix(out, []byte("\n"+markEnd+"\nthen got 42\n")) {
			t.Errorf("%s: output does not end with the marker and then's line:\n%s", shell, out)
		}
		po, err := splitProbeOutput(out)
		if err != nil {
			t.Errorf("%s: %v\n%s", shell, err, out)
			continue
		}
		if !bytes.Equal(po.smi, bytes.TrimRight(xml, "\n")) || po.smiExit != 0 {
			t.Errorf("%s: nvidia-smi section differs (exit %d)", shell, po.smiExit)
		}
		checkTCPSection(t, po.tcp)
	}
}
