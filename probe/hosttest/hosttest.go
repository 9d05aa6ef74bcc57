// Package hosttest gives tests fake hosts without sshd, as rig's rigtest
// does: each Host is a remote.Executor that runs commands on this machine
// with sh (as remote.Local does, in a process group of its own) but as a
// host of its own: its own HOME (so its run files, ~/.tfhive/runs-KEY/…,
// are its own), a PATH with a fake nvidia-smi reporting the Profile's GPUs
// (testdata/fake/nvidia-smi, as probe/sshtest installs it, with GPU UUIDs of
// the host's own), its own claims directory ($TFHIVE_CLAIMS_DIR) and policy
// file ($TFHIVE_POLICY), and an environment of nothing else (env -i), as a
// login over SSH starts. Fleet.Dial, given to probe.Options.Dial (or
// commands.HostOptions.Dial), connects a fleet's hosts by name, so that a
// command runs in process, end to end, on several hosts, in milliseconds.
//
// The fake hosts are one machine: they share this machine's process table,
// /proc/locks, /tmp, network ports and /etc/machine-id. Their claims dirs
// keep their claims apart (a machine is its machine id and claims dir), and
// their HOMEs their files; a test that needs hosts as separate as a lab's
// (pids, a private /tmp, SSH itself: keys, sessions, dropped links) uses
// probe/sshtest. For a host whose commands are played by Go code, see
// probe/remote/remotetest.
//
// Only tests may import it. It imports probe/remote and probe/inventory
// and no other tfhive package.
package hosttest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/sshtest"
)

// Profile describes one fake host.
type Profile struct {
	Name string
	// GPUs is how many idle GPUs the host's nvidia-smi reports; with
	// Capture "" and GPUs 0 the host has no nvidia-smi at all.
	GPUs int
	// Capture, when set, is a file under testdata/nvidia-smi that the
	// host's nvidia-smi prints instead ("busy-4gpu.xml",
	// "driver-failed.txt"), its GPUs given UUIDs of the host's own.
	Capture string
	// GPUExit is nvidia-smi's exit status.
	GPUExit int
	// Python, when set, puts a fake python3 on the host's PATH
	// (testdata/fake/python3): this machine's own, claiming this version,
	// without its site packages (python3 -S): a host without modules, as
	// importing a torch installed here takes seconds.
	Python string
	// Down: the host cannot be reached; Dial fails with a refused
	// connection, as a host whose sshd is not running.
	Down bool
}

// Host is a fake host; it is its own remote.Executor.
type Host struct {
	Profile
	// Dir holds the host's own files: home/, bin/ (its PATH's first
	// directory), gpu/ (what its nvidia-smi serves), claims/ and etc/.
	Dir string

	mu    sync.Mutex
	dials int
	// sessions counts the commands started on the host (Start, Run).
	sessions int
	down     bool
}

var _ remote.Executor = (*Host)(nil)

// Fleet is a test's fake hosts.
type Fleet struct {
	Hosts []*Host
}

// Start makes the fake hosts of ps, under t's temporary directory.
func Start(t testing.TB, ps ...Profile) *Fleet {
	t.Helper()
	f := &Fleet{}
	seen := map[string]bool{}
	for _, p := range ps {
		if p.Name == "" || seen[p.Name] {
			t.Fatalf("hosttest: host name %q empty or repeated", p.Name)
		}
		seen[p.Name] = true
		h, err := newHost(t.TempDir(), p)
		if err != nil {
			t.Fatalf("hosttest: %s: %v", p.Name, err)
		}
		f.Hosts = append(f.Hosts, h)
	}
	return f
}

// Names are the hosts' names, in order, comma-separated: one -H value.
func (f *Fleet) Names() string {
	var ns []string
	for _, h := range f.Hosts {
		ns = append(ns, h.Name)
	}
	return strings.Join(ns, ",")
}

// Host returns the host of that name, or nil.
func (f *Fleet) Host(name string) *Host {
	for _, h := range f.Hosts {
		if h.Name == name {
			return h
		}
	}
	return nil
}

// Dial connects to h: the fake host of h.Name (the no-hosts default's
// local host is the fleet's first host). A host not in the fleet fails
// as a name that does not resolve, a host that is Down as a refused
// connection. It is a probe.Dialer.
func (f *Fleet) Dial(ctx context.Context, h inventory.Host) (remote.Executor, *inventory.HostError) {
	if err := ctx.Err(); err != nil {
		return nil, &inventory.HostError{Kind: inventory.ErrTimeout, Message: err.Error()}
	}
	fh := f.Host(h.Name)
	if h.Local && fh == nil && len(f.Hosts) > 0 {
		fh = f.Hosts[0]
	}
	if fh == nil {
		return nil, &inventory.HostError{Kind: inventory.ErrDNS, Message: fmt.Sprintf("cannot resolve %s: no such fake host", h.Name)}
	}
	fh.mu.Lock()
	defer fh.mu.Unlock()
	fh.dials++
	if fh.down {
		return nil, &inventory.HostError{Kind: inventory.ErrRefused, Message: fmt.Sprintf("%s: connection refused", h.Name)}
	}
	return fh, nil
}

func newHost(dir string, p Profile) (*Host, error) {
	h := &Host{Profile: p, Dir: dir, down: p.Down}
	for _, d := range []string{"home", "bin", "gpu", "etc"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	// As an administrator makes it: sticky and writable by all, as /tmp.
	if err := os.Mkdir(h.ClaimsDir(), 0o755); err != nil {
		return nil, err
	}
	if err := os.Chmod(h.ClaimsDir(), os.ModeSticky|0o777); err != nil {
		return nil, err
	}
	if err := h.writeGPU(); err != nil {
		return nil, err
	}
	if p.Python != "" {
		if err := os.WriteFile(filepath.Join(dir, "gpu", "python-version"), []byte(p.Python+"\n"), 0o644); err != nil {
			return nil, err
		}
		// Bare (-S): the machine's site packages stay out.
		if err := os.WriteFile(filepath.Join(dir, "gpu", "python-bare"), nil, 0o644); err != nil {
			return nil, err
		}
		if err := install("python3", filepath.Join(dir, "bin")); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func (h *Host) writeGPU() error {
	var data []byte
	switch {
	case h.Capture != "":
		b, err := os.ReadFile(filepath.Join(RepoRoot(), "testdata", "nvidia-smi", h.Capture))
		if err != nil {
			return err
		}
		data = ownUUIDs(b, h.Name)
	case h.GPUs > 0:
		data = report(h.Name, h.GPUs)
	default:
		return nil
	}
	gdir := filepath.Join(h.Dir, "gpu")
	if err := os.WriteFile(filepath.Join(gdir, "output"), data, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(gdir, "exit"), []byte(strconv.Itoa(h.GPUExit)), 0o644); err != nil {
		return err
	}
	return install("nvidia-smi", filepath.Join(h.Dir, "bin"))
}

// install copies testdata/fake/name into bin.
func install(name, bin string) error {
	data, err := os.ReadFile(filepath.Join(RepoRoot(), "testdata", "fake", name))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(bin, name), data, 0o755)
}

// RepoRoot is the repository's root, where testdata is.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Home is the host's HOME.
func (h *Host) Home() string { return filepath.Join(h.Dir, "home") }

// ClaimsDir is the host's claims directory ($TFHIVE_CLAIMS_DIR, standing
// for /tmp): sticky and writable by all.
func (h *Host) ClaimsDir() string { return filepath.Join(h.Dir, "claims") }

// PolicyFile is the host's policy file ($TFHIVE_POLICY, standing for
// /etc/tfhive/policy.yaml), absent unless SetPolicy wrote it.
func (h *Host) PolicyFile() string { return filepath.Join(h.Dir, "etc", "policy.yaml") }

// SetPolicy writes the host's policy file; "" removes it.
func (h *Host) SetPolicy(yaml string) error {
	if yaml == "" {
		if err := os.Remove(h.PolicyFile()); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	return os.WriteFile(h.PolicyFile(), []byte(yaml), 0o644)
}

// SetGPUUsage sets what the host's nvidia-smi --query-gpu reports, one
// "UTIL MEM" line per query, the last repeated (tfhive run --sample, ps).
func (h *Host) SetGPUUsage(lines ...string) error {
	return os.WriteFile(filepath.Join(h.Dir, "gpu", "usage"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// SMICalls counts the host's nvidia-smi invocations.
func (h *Host) SMICalls() int {
	data, _ := os.ReadFile(filepath.Join(h.Dir, "gpu", "calls"))
	return strings.Count(string(data), "\n")
}

// MachineID is the machine id the host's sessions read: this machine's
// (the fake hosts share it), "" when it has none.
func (h *Host) MachineID() string {
	data, _ := os.ReadFile("/etc/machine-id")
	return strings.TrimSpace(string(data))
}

// RunDir is run id's directory on the host, ~/.tfhive/runs-KEY/ID
// (launcher/supervisor/scripts/rundir.sh), KEY naming this machine's
// process table, which the fake hosts share.
func (h *Host) RunDir(id string) string {
	return filepath.Join(h.Home(), ".tfhive", sshtest.LocalRunsKey(), id)
}

// SetDown makes later dials of the host fail (true), or succeed again.
// Commands already started go on.
func (h *Host) SetDown(down bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.down = down
}

// Dials counts the connections opened to the host (probes and redials).
func (h *Host) Dials() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dials
}

// Env is the environment of the host's commands.
func (h *Host) Env() []string {
	return []string{
		"HOME=" + h.Home(),
		"PATH=" + filepath.Join(h.Dir, "bin") + ":/usr/local/bin:/usr/bin:/bin",
		"SHELL=/bin/sh",
		"LANG=C.UTF-8",
		"TFHIVE_FAKE_GPU=" + filepath.Join(h.Dir, "gpu"),
		"TFHIVE_CLAIMS_DIR=" + h.ClaimsDir(),
		"TFHIVE_POLICY=" + h.PolicyFile(),
	}
}

// wrap is cmd run as the host runs it: from its HOME, with its
// environment alone. exec keeps the process (and its group) the one
// remote.Local started, and the command line sh -c CMD.
func (h *Host) wrap(cmd string) string {
	var b strings.Builder
	b.WriteString("cd " + quote(h.Home()) + " && exec env -i")
	for _, kv := range h.Env() {
		b.WriteString(" " + quote(kv))
	}
	b.WriteString(" sh -c " + quote(cmd))
	return b.String()
}

// quote is s as one sh word.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Run runs cmd on the host (remote.Executor).
func (h *Host) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return remote.Run(ctx, h, cmd, stdin, stdout, stderr)
}

// Start starts cmd on the host (remote.Executor).
func (h *Host) Start(ctx context.Context, cmd string, stdout, stderr io.Writer) (remote.Started, error) {
	h.mu.Lock()
	h.sessions++
	h.mu.Unlock()
	return remote.Local{}.Start(ctx, h.wrap(cmd), stdout, stderr)
}

// Sessions counts the commands started on the host: each a session an
// SSH host would have opened (a spare taken is none).
func (h *Host) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions
}

// Close does nothing: the host's commands go on, as a local host's.
func (h *Host) Close() error { return nil }

// Shell runs cmd on the host and returns its stdout; a failure fails t.
func (h *Host) Shell(t testing.TB, cmd string) string {
	t.Helper()
	var out, errb strings.Builder
	rc, err := h.Run(context.Background(), cmd, nil, &out, &errb)
	if err != nil || rc != 0 {
		t.Fatalf("%s: %s: exit %d, %v: %s", h.Name, cmd, rc, err, errb.String())
	}
	return out.String()
}

// report is an `nvidia-smi -q -x` report of n idle GPUs of host name.
func report(name string, n int) []byte {
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n\t<driver_version>535.129.03</driver_version>\n\t<cuda_version>12.2</cuda_version>\n")
	fmt.Fprintf(&b, "\t<attached_gpus>%d</attached_gpus>\n", n)
	for i := range n {
		fmt.Fprintf(&b, `	<gpu id="00000000:%02X:00.0">
		<product_name>NVIDIA A100-SXM4-40GB</product_name>
		<mig_mode><current_mig>Disabled</current_mig></mig_mode>
		<uuid>%s</uuid>
		<minor_number>%d</minor_number>
		<fb_memory_usage><total>40960 MiB</total><used>4 MiB</used></fb_memory_usage>
		<utilization><gpu_util>0 %%</gpu_util><memory_util>0 %%</memory_util></utilization>
		<processes></processes>
	</gpu>
`, i+1, uuid(name, i), i)
	}
	b.WriteString("</nvidia_smi_log>\n")
	return []byte(b.String())
}

// ownUUIDs gives a capture's GPUs UUIDs of host name's own, in order of
// first appearance: tfhive takes hosts with one GPU UUID for one machine.
func ownUUIDs(data []byte, name string) []byte {
	s := string(data)
	index := map[string]string{}
	var out strings.Builder
	for {
		i := strings.Index(s, "<uuid>")
		if i < 0 {
			out.WriteString(s)
			break
		}
		j := strings.Index(s[i:], "</uuid>")
		if j < 0 {
			out.WriteString(s)
			break
		}
		old := strings.TrimSpace(s[i+len("<uuid>") : i+j])
		if _, ok := index[old]; !ok {
			index[old] = uuid(name, len(index))
		}
		out.WriteString(s[:i] + "<uuid>" + index[old] + "</uuid>")
		s = s[i+j+len("</uuid>"):]
	}
	return []byte(out.String())
}

// uuid is GPU i of host name's UUID, in nvidia-smi's form.
func uuid(name string, i int) string {
	sum := sha256.Sum256([]byte(name + "\x00" + strconv.Itoa(i)))
	x := hex.EncodeToString(sum[:16])
	return "GPU-" + x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
}
