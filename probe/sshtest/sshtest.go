// Package sshtest starts a fleet of real OpenSSH sshd processes on loopback
// for end-to-end tests: one per fake host, each with its own port, host
// key, temp dir and fake nvidia-smi serving a GPU inventory (and, when
// asked, a fake ip serving its network interfaces), plus the
// known_hosts, ssh_config and hosts.yaml a client needs to reach them with
// strict host-key checking. Only tests may import it, and it imports no
// other tfhive package, so that it tests tfhive from outside.
package sshtest

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Profile describes one fake host.
type Profile struct {
	Name string
	// GPU is a file under testdata/nvidia-smi served as nvidia-smi's output
	// ("idle-2gpu.xml", "driver-failed.txt"); "" means no nvidia-smi at all.
	GPU     string
	GPUExit int  // nvidia-smi's exit status
	Hang    bool // nvidia-smi never answers
	// NIC is a file under testdata/nic served by a fake ip on the host's
	// PATH as `ip -o addr show`'s output ("fleet-a.txt"): the host's
	// network interfaces. "" leaves the machine's own ip (and interfaces).
	NIC string
	// BusyPIDs replaces the <pid> values of the GPU file, in order of first
	// appearance, with real processes owned by another user (nobody when
	// running as root) whose command line is the given string.
	BusyPIDs []string
	// CPUHogs, when set, starts that many busy loops beside the host's
	// sshd (in its namespaces on a separate bed), at nice 0, as the data
	// loaders of a busy training box keep every core busy: a loaded
	// host. sshd (and so every session and task of the host) and its hogs
	// are pinned to one CPU (taskset), each loaded host's the next of
	// this machine's: unpinned, the scheduler spread the hogs over idle
	// cores and the load tfhive met stayed far below a lab's (issue 33
	// measured 6-11 on 2 cores). They end with the host, and after 10
	// minutes in any case.
	CPUHogs int
	// Hostname is the hostname a separate host reports (default: Name):
	// clones of one image may all say the same.
	Hostname string
	// Python, when set, puts a fake python3 on the host's PATH
	// (testdata/fake/python3): the machine's own, claiming this version.
	Python string
	// PythonBare puts the same fake python3 there, run without the
	// machine's site packages (python3 -S): the stdlib only, so that a
	// test's doctor imports no PyTorch (1.3 s of CPU each time here).
	PythonBare bool

	// Client-side trouble.
	NotKnown     bool // absent from known_hosts
	Hashed       bool // known_hosts entry hashed (HashKnownHosts)
	WrongKey     bool // known_hosts holds another key for it
	NoAuthorized bool // the client key is not authorized
	PasswordOnly bool // sshd offers only password authentication
	Silent       bool // a TCP listener that never speaks SSH, not sshd
	Jump         string
	// Listen overrides the loopback address sshd listens on (127.0.0.1).
	Listen string
	// Proxied puts a pausable TCP proxy between clients and sshd.
	Proxied bool
	// RTT, when set, puts the proxy in front (as Proxied) and makes it add
	// this round-trip time: RTT/2 each way, plus one RTT per new
	// connection for the TCP handshake. A latency, not a bandwidth limit.
	RTT time.Duration
	// AliveInterval sets ServerAliveInterval (seconds) in the ssh_config.
	AliveInterval int
	// RealHome gives the test user's sessions its real HOME and rc files.
	// By default they get an empty HOME of the host's own (Host.Home), so
	// that the login shell (bash sources ~/.bashrc even for `ssh host cmd`)
	// runs nothing of the machine's: a pyenv or conda init there is slow,
	// and one killed mid-way can leave a lock that stalls every later login.
	// Other local users (AddUser) always get their own homes.
	RealHome bool
	// LoginCPU, when set, gives the host (without RealHome) a ~/.bashrc
	// that burns that much CPU in every login shell sshd starts, as
	// conda's or pyenv's init does on real GPU hosts (100–500 ms).
	// Host.Sessions counts those logins.
	LoginCPU time.Duration
	// HomeSize, when set, makes Host.Home a tmpfs of that many bytes (a
	// disk that fills up), unmounted at the test's end. It needs root:
	// without, the test skips (fails in CI).
	HomeSize int64

	// SameMachineAs names another host of the fleet that this one really
	// is, reached under a second name through an sshd of its own: its GPUs
	// report that host's UUIDs (GPU i has the UUID of that host's GPU i)
	// and its sessions share that host's claims directory. Without it
	// every host's GPUs have UUIDs of their own, even when hosts serve the
	// same capture, since the fake hosts stand for different machines.
	SameMachineAs string
	// ExtraListen are more loopback addresses (as "127.0.0.2") the same
	// sshd also listens on, at the same port: a second name for the very
	// same host. known_hosts holds the host key for them too, and the
	// ssh_config has a Host entry for each address, so that an address of
	// Host.ExtraAddrs written in a hosts file reaches this sshd. Each
	// address may be extra for one host only. A Proxied host's extra
	// addresses reach sshd directly.
	ExtraListen []string
}

// Host is a running fake host.
type Host struct {
	Profile
	Addr string
	Port int
	Dir  string
	Key  ssh.PublicKey
	// Procs are the busy processes started for BusyPIDs; Busy their pids
	// as the host sees them (its nvidia-smi lists those).
	Procs []*os.Process
	Busy  []int
	// Proxy is set for Proxied hosts; clients reach sshd through it.
	Proxy *Proxy
	// ExtraAddrs are the Profile's ExtraListen: sshd listens there too, at
	// Port.
	ExtraAddrs []string
	// machine is the SameMachineAs host, resolved; nil for a host that is
	// its own machine.
	machine *Host
	cmd     *exec.Cmd
	exited  chan struct{}
	ln      net.Listener
	// answering: served by this process (AnsweringHosts), no sshd.
	answering bool
	// capture is a separate host's GPU capture until its busy processes
	// run (startBusyLater).
	capture []byte
	// bed is the fleet's; home is the test user's HOME on the host; keep
	// are the directories a separate host still sees under its /tmp.
	bed  Bed
	home string
	keep []string
	// hogs are the CPUHogs' processes; cpu the CPU they and sshd are
	// pinned to (CPUHogs > 0).
	hogs []*exec.Cmd
	cpu  int
	// untie unregisters the host's processes from the reaper (lifeline.go)
	// once Stop has stopped them.
	untie []func()
}

// tieGroup registers the process group pgid with the reaper until Stop.
func (h *Host) tieGroup(pgid int) error {
	untie, err := tieGroup(pgid)
	h.untie = append(h.untie, untie)
	return err
}

// nextCPU is the next loaded host's CPU (modulo this machine's), so that
// loaded hosts of fleets running side by side load every core.
var nextCPU atomic.Int32

// startHogs starts the host's CPUHogs busy loops, each its own process
// (one per core a data loader keeps busy), bounded by timeout.
func (h *Host) startHogs() error {
	for range h.CPUHogs {
		c := h.Command(nil, "taskset", "-c", strconv.Itoa(h.cpu), "timeout", "600", "sh", "-c", "while :; do :; done")
		// A group of its own, for the reaper: timeout cannot pass a
		// SIGKILL on to its loop.
		c.SysProcAttr.Setpgid = true
		if err := c.Start(); err != nil {
			return fmt.Errorf("a CPU hog: %w", err)
		}
		h.hogs = append(h.hogs, c)
		if err := h.tieGroup(c.Process.Pid); err != nil {
			return err
		}
	}
	return nil
}

// Fleet is a running set of fake hosts and the client files to reach them.
type Fleet struct {
	Dir        string
	Home       string // an empty HOME for the client
	ClientKey  string
	KnownHosts string
	SSHConfig  string
	HostsYAML  string
	Hosts      []*Host
	byName     map[string]*Host
	answering  *answering // AnsweringHosts's
	// Bed is how separate the hosts are.
	Bed Bed
}

// LoginShell is the path of the named shell, for tests that run remote
// command lines under it as sshd would under a user's login shell; ""
// (logged) when this machine lacks it. CI installs tcsh, whose quoting
// differs most from sh's, so there its absence fails the test.
func LoginShell(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if name == "tcsh" && os.Getenv("CI") == "true" {
			t.Fatal("tcsh is missing in CI")
		}
		t.Logf("no %s here", name)
		return ""
	}
	return path
}

// RepoRoot is the repository's top directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Require fails (in CI) or skips (elsewhere) when sshd is not installed.
func Require(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("sshd is required in CI: apt-get install -y openssh-server")
		}
		t.Skip("sshd not installed (apt-get install -y openssh-server)")
	}
}

// Start starts the fleet on the default bed (DefaultBed); everything is
// stopped and removed at test end.
func Start(t testing.TB, profiles ...Profile) *Fleet {
	t.Helper()
	return start(t, DefaultBed(t), false, profiles)
}

// StartOn starts the fleet on the given bed.
func StartOn(t testing.TB, bed Bed, profiles ...Profile) *Fleet {
	t.Helper()
	return start(t, bed, false, profiles)
}

// StartShared starts a fleet that other local users (see AddUser) can log
// in to with the fleet's client key and use as their own: the fleet's
// directories down to each host's bin/, gpu/ and nic/ are readable by all, the
// fake nvidia-smi's call log writable by all, the authorized_keys file
// readable by all (sshd reads it as the user logging in). Host keys, the
// sshd configs and the client files stay the test runner's own.
func StartShared(t testing.TB, profiles ...Profile) *Fleet {
	t.Helper()
	return start(t, DefaultBed(t), true, profiles)
}

// StartSharedOn starts a fleet as StartShared does, on the given bed.
func StartSharedOn(t testing.TB, bed Bed, profiles ...Profile) *Fleet {
	t.Helper()
	return start(t, bed, true, profiles)
}

func start(t testing.TB, bed Bed, shared bool, profiles []Profile) *Fleet {
	t.Helper()
	Require(t)
	if bed.Separate() {
		RequireSeparate(t)
	}
	if os.Geteuid() == 0 {
		// sshd's privilege separation needs this directory when run as root.
		os.MkdirAll("/run/sshd", 0o755)
	}
	dir := t.TempDir()
	f := &Fleet{Dir: dir, Home: filepath.Join(dir, "home"), byName: map[string]*Host{}, Bed: bed}
	must(t, os.MkdirAll(f.Home, 0o700))
	var keep []string
	if bed.Separate() {
		keep = keepUnderTmp(dir)
	}

	f.ClientKey = filepath.Join(dir, "client_key")
	clientPub := writeKey(t, f.ClientKey)
	authorized := filepath.Join(dir, "authorized_keys")
	must(t, os.WriteFile(authorized, ssh.MarshalAuthorizedKey(clientPub), 0o600))

	for _, p := range profiles {
		if p.HomeSize > 0 && os.Geteuid() != 0 {
			if os.Getenv("CI") == "true" {
				t.Fatal("sshtest: HomeSize needs root to mount a tmpfs")
			}
			t.Skip("sshtest: HomeSize needs root to mount a tmpfs")
		}
		h := &Host{Profile: p, Addr: "127.0.0.1", Dir: filepath.Join(dir, "hosts", p.Name), bed: bed, keep: keep}
		// One home for every host (NFS) on a SharedHome bed; a home of
		// each host's own on the others.
		h.home = filepath.Join(h.Dir, "home")
		if bed.SharesHome() {
			h.home = filepath.Join(dir, "hosthome")
		}
		if p.Listen != "" {
			h.Addr = p.Listen
		}
		h.ExtraAddrs = append([]string(nil), p.ExtraListen...)
		f.Hosts = append(f.Hosts, h)
		f.byName[p.Name] = h
	}
	must(t, f.resolveMachines())
	errs := make([]error, len(profiles))
	// A separate host that is another's machine enters that one's
	// namespaces, so machines start first.
	for _, second := range []bool{false, true} {
		var wg sync.WaitGroup
		for i, h := range f.Hosts {
			if (h.machine != nil) != second {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = h.start(t, authorized)
			}()
		}
		wg.Wait()
	}
	t.Cleanup(f.Stop)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("sshtest: host %s: %v", profiles[i].Name, err)
		}
	}
	if shared {
		must(t, f.share(authorized))
	}
	for _, h := range f.Hosts {
		if h.Proxied || h.RTT > 0 {
			h.Proxy = startProxy(t, h.Addr, h.Port, h.RTT/2)
		}
	}
	f.writeClientFiles(t)
	return f
}

// Host returns the fake host with that name.
func (f *Fleet) Host(name string) *Host { return f.byName[name] }

// Env is the environment to run the tfhive binary with: an empty HOME
// (and no XDG_CONFIG_HOME: the per-user hosts file is HOME's) and no
// ssh-agent, so only the fleet's own files are used.
func (f *Fleet) Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "SSH_AUTH_SOCK=") || strings.HasPrefix(kv, "TFHIVE_") ||
			strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+f.Home)
}

// Stop stops every fake host.
func (f *Fleet) Stop() {
	for _, h := range f.Hosts {
		h.Stop()
	}
}

// Stop stops the host's sshd (or listener) and its busy processes.
func (h *Host) Stop() {
	if h.cmd != nil {
		down := h.initGone()
		// The whole group: the listener and its per-connection children,
		// as when a host goes down.
		syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
		<-h.exited
		down()
		h.cmd = nil
	}
	if h.ln != nil {
		h.ln.Close()
	}
	if h.Proxy != nil {
		h.Proxy.Close()
	}
	for _, p := range h.Procs {
		p.Kill()
		p.Wait()
	}
	h.Procs = nil
	for _, c := range h.hogs {
		c.Process.Kill()
		c.Wait()
	}
	h.hogs = nil
	hostStopped(h)
	if h.answering {
		h.untieAll()
		return
	}
	// What the host's sessions left running (a kept supervisor outlives
	// its session) goes down with it, as on a real host, so that no test
	// leaves processes behind for the next.
	for _, l := range h.Leftovers() {
		if pid, err := strconv.Atoi(strings.Fields(l)[0]); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	h.untieAll()
}

func (h *Host) untieAll() {
	for _, u := range h.untie {
		u()
	}
	h.untie = nil
}

// Home is the HOME the test user's sessions get on this host (unless
// RealHome): empty at the start, for a test's own rc files. On a
// bed that shares homes (SharesHome) it is the same directory for every
// host of the fleet.
func (h *Host) Home() string { return h.home }

// mountHome puts a tmpfs of HomeSize bytes on Home. It is unmounted after
// the fleet has stopped (cleanups run last first, and the fleet's is
// registered after its hosts have started), lazily: a process of the
// host's that outlived it must not keep the temp dir from going.
func (h *Host) mountHome(t testing.TB) error {
	if err := syscall.Mount("tfhive-sshtest", h.Home(), "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV,
		fmt.Sprintf("size=%d,mode=0755", h.HomeSize)); err != nil {
		return fmt.Errorf("mounting a tmpfs on %s: %w", h.Home(), err)
	}
	untie, err := tie("mount", h.Home())
	t.Cleanup(func() {
		syscall.Unmount(h.Home(), syscall.MNT_DETACH)
		untie()
	})
	return err
}

// ClaimsDir is the host's own claims directory: the fake hosts share one
// machine, but GPU 0 of one is not GPU 0 of another. A SameMachineAs host
// has that host's. It exists from the start, owned by the test runner
// and sticky and writable by all like /tmp, as an administrator would
// have made it.
func (h *Host) ClaimsDir() string { return filepath.Join(h.machineOf().Dir, "claims") }

// PolicyFile is the host's policy file ($TFHIVE_POLICY in its sessions,
// standing for /etc/tfhive/policy.yaml), absent unless SetPolicy wrote
// it. Its directory is root's (when the test runs as root), mode 0755.
func (h *Host) PolicyFile() string { return filepath.Join(h.machineOf().Dir, "etc", "policy.yaml") }

// SetPolicy writes the host's policy file, mode 0644; "" removes it.
func (h *Host) SetPolicy(yaml string) error {
	if yaml == "" {
		err := os.Remove(h.PolicyFile())
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	if err := os.MkdirAll(filepath.Dir(h.PolicyFile()), 0o755); err != nil {
		return err
	}
	tmp := h.PolicyFile() + ".new"
	if err := os.WriteFile(tmp, []byte(yaml), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, h.PolicyFile())
}

// machineOf is the host that h really is.
func (h *Host) machineOf() *Host {
	if h.machine != nil {
		return h.machine
	}
	return h
}

// resolveMachines checks SameMachineAs and ExtraListen before anything
// starts, and follows SameMachineAs chains to the host at their end.
func (f *Fleet) resolveMachines() error {
	extraOf := map[string]string{}
	for _, h := range f.Hosts {
		for _, a := range h.ExtraAddrs {
			if ip := net.ParseIP(a); ip == nil || ip.To4() == nil || !ip.IsLoopback() {
				return fmt.Errorf("sshtest: host %s: ExtraListen %q is not an IPv4 loopback address", h.Name, a)
			}
			if other, dup := extraOf[a]; dup {
				// Their ssh_config entries, both "Host ADDR", would collide.
				return fmt.Errorf("sshtest: ExtraListen %s given for both %s and %s", a, other, h.Name)
			}
			extraOf[a] = h.Name
		}
		if h.SameMachineAs == "" {
			continue
		}
		m := h
		for range f.Hosts {
			next := f.byName[m.SameMachineAs]
			if next == nil {
				return fmt.Errorf("sshtest: host %s: SameMachineAs %q names no host of the fleet", m.Name, m.SameMachineAs)
			}
			if m = next; m.SameMachineAs == "" {
				break
			}
		}
		if m.SameMachineAs != "" {
			return fmt.Errorf("sshtest: host %s: SameMachineAs goes round in a circle", h.Name)
		}
		h.machine = m
	}
	return nil
}

// share opens the fleet to other users. Directories t.TempDir made are
// 0700 (the test's own parent directory too), and a umask may have
// narrowed the rest, so every mode is set here, not left to creation.
func (f *Fleet) share(authorized string) error {
	for d := filepath.Dir(filepath.Dir(f.Dir)); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("sshtest: %s (mode %v) is closed to other users, so is the fleet under it: set TMPDIR to a directory they can reach", d, fi.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	for _, d := range []string{filepath.Dir(f.Dir), f.Dir, filepath.Join(f.Dir, "hosts")} {
		if err := os.Chmod(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.Chmod(authorized, 0o644); err != nil {
		return err
	}
	for _, h := range f.Hosts {
		if err := os.Chmod(h.Dir, 0o755); err != nil {
			return err
		}
		for _, sub := range []string{"bin", "gpu", "nic"} {
			err := filepath.WalkDir(filepath.Join(h.Dir, sub), func(path string, d os.DirEntry, err error) error {
				if err != nil {
					return err
				}
				fi, err := d.Info()
				if err != nil {
					return err
				}
				mode := os.FileMode(0o644)
				if d.IsDir() || fi.Mode()&0o100 != 0 {
					mode = 0o755
				}
				return os.Chmod(path, mode)
			})
			if err != nil && !os.IsNotExist(err) {
				return err
			}
		}
		// Whoever runs nvidia-smi first creates its call log; made here,
		// so that it is not the first user's alone.
		calls := filepath.Join(h.Dir, "gpu", "calls")
		c, err := os.OpenFile(calls, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
		if err != nil {
			return err
		}
		c.Close()
		if err := os.Chmod(calls, 0o666); err != nil {
			return err
		}
	}
	return nil
}

// SMICalls counts the fake nvidia-smi's invocations on this host.
func (h *Host) SMICalls() int { return len(h.smiCalls()) }

// SMICallsWith counts the fake nvidia-smi's invocations with exactly
// these arguments ("-q -x": the probe's query) on this host.
func (h *Host) SMICallsWith(args string) int {
	n := 0
	for _, l := range h.smiCalls() {
		if l == args {
			n++
		}
	}
	return n
}

// smiCalls are the fake nvidia-smi's invocations on this host, each its
// arguments: its log's whole lines, a line a call.
func (h *Host) smiCalls() []string {
	data, _ := os.ReadFile(filepath.Join(h.Dir, "gpu", "calls"))
	var calls []string
	for l := range strings.Lines(string(data)) {
		if args, whole := strings.CutSuffix(l, "\n"); whole {
			calls = append(calls, args)
		}
	}
	return calls
}

func (h *Host) start(t testing.TB, authorized string) error {
	if err := os.MkdirAll(filepath.Join(h.Dir, "gpu"), 0o755); err != nil {
		return err
	}
	if h.machine == nil {
		// Made as the product expects an administrator to have made it
		// (it refuses one owned by anyone but root or the user): not left
		// to the first session, which may be another user's.
		if err := os.Mkdir(h.ClaimsDir(), 0o700); err != nil {
			return err
		}
		if err := os.Chmod(h.ClaimsDir(), os.ModeSticky|0o777); err != nil {
			return err
		}
	}
	if h.Silent {
		ln, err := net.Listen("tcp", h.Addr+":0")
		if err != nil {
			return err
		}
		h.ln, h.Port = ln, ln.Addr().(*net.TCPAddr).Port
		h.Key = writeKey(t, filepath.Join(h.Dir, "host_key"))
		go func() {
			var held []net.Conn // accept and never answer
			for {
				c, err := ln.Accept()
				if err != nil {
					for _, c := range held {
						c.Close()
					}
					return
				}
				held = append(held, c)
			}
		}()
		return nil
	}
	if err := h.writeGPU(); err != nil {
		return err
	}
	if err := h.writePython(); err != nil {
		return err
	}
	if err := h.writeNIC(); err != nil {
		return err
	}
	h.Key = writeKey(t, filepath.Join(h.Dir, "host_key"))
	ak := authorized
	if h.NoAuthorized {
		ak = filepath.Join(h.Dir, "authorized_keys")
		other := writeKey(t, filepath.Join(h.Dir, "other_key"))
		if err := os.WriteFile(ak, ssh.MarshalAuthorizedKey(other), 0o600); err != nil {
			return err
		}
	}
	setEnv := fmt.Sprintf("PATH=%s:/usr/local/bin:/usr/bin:/bin TFHIVE_FAKE_GPU=%s TFHIVE_FAKE_NIC=%s TFHIVE_CLAIMS_DIR=%s TFHIVE_POLICY=%s",
		filepath.Join(h.Dir, "bin"), filepath.Join(h.Dir, "gpu"), filepath.Join(h.Dir, "nic"), h.ClaimsPath(), h.PolicyFile())
	// sshd keeps the first SetEnv it meets: the test user's Match comes
	// first, everyone else gets the PATH alone.
	envCfg := "SetEnv " + setEnv + "\n"
	if h.bed.privateHomes() {
		if err := h.makePrivateHomes(); err != nil {
			return err
		}
	}
	if !h.RealHome {
		if err := os.Mkdir(h.Home(), 0o755); err != nil && !os.IsExist(err) {
			return err
		} else if err == nil && h.HomeSize > 0 {
			// Mounted once, by the host that made it (a shared home is
			// the fleet's).
			if err := h.mountHome(t); err != nil {
				return err
			}
		}
		if err := h.writeSlowLogin(); err != nil {
			return err
		}
		me, err := user.Current()
		if err != nil {
			return err
		}
		envCfg = fmt.Sprintf("Match User %s\n\tSetEnv %s HOME=%s\nMatch all\n\tSetEnv %s\n", me.Username, setEnv, h.Home(), setEnv)
	}
	pubkey, password := "yes", "no"
	if h.PasswordOnly {
		pubkey, password = "no", "yes"
	}
	pidFile := filepath.Join(h.Dir, "sshd.pid")
	if h.bed.Separate() {
		// sshd would write the pid it sees there: 1.
		pidFile = "none"
	}
	// What its sessions leave running carries this in its environment
	// (Leftovers): the reaper's to kill, should the test die first.
	untie, err := tie("marker", "TFHIVE_FAKE_GPU="+filepath.Join(h.Dir, "gpu"))
	h.untie = append(h.untie, untie)
	if err != nil {
		return err
	}
	listen := "ListenAddress " + h.Addr
	for _, a := range h.ExtraAddrs {
		listen += "\nListenAddress " + a
	}
	// Ports come from the kernel; a rare collision between picking and
	// sshd binding is retried.
	for attempt := 0; ; attempt++ {
		port, err := freePort(h.Addr, h.ExtraAddrs)
		if err != nil {
			return err
		}
		h.Port = port
		cfg := fmt.Sprintf(`Port %d
%s
HostKey %s
PidFile %s
AuthorizedKeysFile %s
StrictModes no
UsePAM no
PubkeyAuthentication %s
PasswordAuthentication %s
KbdInteractiveAuthentication no
PermitRootLogin yes
MaxStartups 200
LogLevel VERBOSE
%s`, h.Port, listen, filepath.Join(h.Dir, "host_key"), pidFile, ak,
			pubkey, password, envCfg)
		cfgFile := filepath.Join(h.Dir, "sshd_config")
		if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
			return err
		}
		err = h.runSSHD(cfgFile, 1+len(h.ExtraAddrs))
		if err == nil {
			if err := h.startHogs(); err != nil {
				return err
			}
			return h.startBusyLater()
		}
		if attempt == 5 {
			return err
		}
	}
}

var (
	listeningRE = regexp.MustCompile(`Server listening on .* port (\d+)`)
	bindFailRE  = regexp.MustCompile(`Bind to port \d+ on \S+ failed`)
)

// runSSHD starts sshd and waits for it to say it listens on all its
// addresses: no sleeps, and a bind failure is seen at once (sshd carries on
// when only some of its addresses fail).
func (h *Host) runSSHD(cfgFile string, addrs int) error {
	sshd := []string{"/usr/sbin/sshd", "-D", "-e", "-f", cfgFile}
	if h.CPUHogs > 0 {
		// taskset execs sshd: the pid is sshd's, its sessions inherit
		// the CPU.
		h.cpu = int(nextCPU.Add(1)-1) % runtime.NumCPU()
		sshd = append([]string{"taskset", "-c", strconv.Itoa(h.cpu)}, sshd...)
	}
	cmd := exec.Command(sshd[0], sshd[1:]...)
	if h.bed.Separate() {
		var err error
		if cmd, err = h.separateCommand(sshd); err != nil {
			return err
		}
	}
	logFile, err := os.Create(filepath.Join(h.Dir, "sshd.log"))
	if err != nil {
		return err
	}
	// An os.Pipe, not an io.Pipe: exec would otherwise copy in a goroutine
	// that Wait joins, and sshd's children keep the pipe open.
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stderr = pw
	// Its own group (Stop kills the group); SIGKILLed by the kernel if
	// this process ends first, and its group by the reaper (lifeline.go).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = startTied(cmd)
	pw.Close()
	if err != nil {
		pr.Close()
		return err
	}
	untie, err := tieGroup(cmd.Process.Pid)
	if err != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		pr.Close()
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		signalled := false
		listening := 0
		// Its last lines, for why it exited: mount says what failed on
		// one line and points to dmesg on the next.
		var last []string
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logFile, line)
			switch {
			case signalled:
			case bindFailRE.MatchString(line):
				ready <- fmt.Errorf("sshd: %s", line)
				signalled = true
			case listeningRE.MatchString(line):
				if listening++; listening == addrs {
					ready <- nil
					signalled = true
				}
			}
			last = append(last[max(len(last)-2, 0):], line)
		}
		if !signalled {
			ready <- fmt.Errorf("sshd exited: %s", strings.Join(last, " / "))
		}
		logFile.Close()
	}()
	go func() { <-exited; pr.Close() }()
	select {
	case err := <-ready:
		if err != nil {
			select {
			case <-exited:
			default:
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-exited
			}
			untie()
			return err
		}
	case <-time.After(20 * time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		untie()
		return fmt.Errorf("sshd did not start listening within 20s (see %s)", logFile.Name())
	}
	h.cmd, h.exited = cmd, exited
	h.untie = append(h.untie, untie)
	return nil
}

func (h *Host) writeGPU() error {
	gdir := filepath.Join(h.Dir, "gpu")
	if h.GPU == "" {
		return os.MkdirAll(filepath.Join(h.Dir, "bin"), 0o755)
	}
	data, err := os.ReadFile(filepath.Join(RepoRoot(), "testdata", "nvidia-smi", h.GPU))
	if err != nil {
		return err
	}
	data = gpuUUIDs(data, h.machineOf().Name)
	if h.bed.Separate() {
		// Its busy processes are the host's: started in its namespaces
		// once it is up (startBusyLater).
		h.capture = data
	} else if data, err = h.startBusy(data); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(gdir, "output"), data, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(gdir, "exit"), []byte(strconv.Itoa(h.GPUExit)), 0o644); err != nil {
		return err
	}
	if h.Hang {
		if err := os.WriteFile(filepath.Join(gdir, "hang"), nil, 0o644); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(h.Dir, "bin"), 0o755); err != nil {
		return err
	}
	fake, err := os.ReadFile(filepath.Join(RepoRoot(), "testdata", "fake", "nvidia-smi"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(h.Dir, "bin", "nvidia-smi"), fake, 0o755)
}

// writePython installs the fake python3 with the version it claims, or
// bare, for a host whose Profile asks for one.
func (h *Host) writePython() error {
	if h.Python == "" && !h.PythonBare {
		return nil
	}
	if h.Python != "" {
		if err := os.WriteFile(filepath.Join(h.Dir, "gpu", "python-version"), []byte(h.Python+"\n"), 0o644); err != nil {
			return err
		}
	}
	if h.PythonBare {
		if err := os.WriteFile(filepath.Join(h.Dir, "gpu", "python-bare"), nil, 0o644); err != nil {
			return err
		}
	}
	fake, err := os.ReadFile(filepath.Join(RepoRoot(), "testdata", "fake", "python3"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(h.Dir, "bin", "python3"), fake, 0o755)
}

// writeNIC puts the fake ip and the host's capture in place, for a host
// whose Profile names one.
func (h *Host) writeNIC() error {
	if h.NIC == "" {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(RepoRoot(), "testdata", "nic", h.NIC))
	if err != nil {
		return err
	}
	for _, d := range []string{"nic", "bin"} {
		if err := os.MkdirAll(filepath.Join(h.Dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(h.Dir, "nic", "output"), data, 0o644); err != nil {
		return err
	}
	fake, err := os.ReadFile(filepath.Join(RepoRoot(), "testdata", "fake", "ip"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(h.Dir, "bin", "ip"), fake, 0o755)
}

var pidRE = regexp.MustCompile(`<pid>\s*(\d+)\s*</pid>`)

var uuidRE = regexp.MustCompile(`<uuid>\s*(GPU-[^<\s]*)\s*</uuid>`)

// gpuUUIDs gives the GPUs of a capture UUIDs of the machine's own: the
// product takes hosts reporting the same GPU UUID for one machine. GPU i
// (in order of first appearance) gets the same UUID on every host that is
// this machine, whatever capture it serves.
func gpuUUIDs(data []byte, machine string) []byte {
	index := map[string]int{}
	return uuidRE.ReplaceAllFunc(data, func(b []byte) []byte {
		old := string(uuidRE.FindSubmatch(b)[1])
		i, ok := index[old]
		if !ok {
			i = len(index)
			index[old] = i
		}
		return []byte("<uuid>" + fakeUUID(machine+"\x00"+strconv.Itoa(i)) + "</uuid>")
	})
}

// fakeUUID is a GPU UUID derived from seed, in nvidia-smi's form.
func fakeUUID(seed string) string {
	sum := sha256.Sum256([]byte(seed))
	x := hex.EncodeToString(sum[:16])
	return "GPU-" + x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
}

// startBusy starts one long-lived process per distinct pid of the capture
// (for the first len(BusyPIDs) of them),
// owned by another user when we can, and rewrites the capture to name them,
// so that the probe's owner lookup meets real processes.
func (h *Host) startBusy(data []byte) ([]byte, error) {
	mapping := map[string]string{}
	var order []string
	for _, m := range pidRE.FindAllSubmatch(data, -1) {
		if _, ok := mapping[string(m[1])]; !ok {
			mapping[string(m[1])] = ""
			order = append(order, string(m[1]))
		}
	}
	for i, old := range order {
		if i >= len(h.BusyPIDs) {
			// Above any pid_max (at most 2^22), so never a live process
			// on the test machine: its owner is reliably unknown.
			mapping[old] = strconv.Itoa(5000000 + i)
			continue
		}
		var cmd *exec.Cmd
		if h.bed.Separate() {
			// exec -a names the process as the capture has it.
			cmd = h.Command(nobody, "/bin/bash", "-c", `exec -a "$1" /bin/sleep 100000`, "sshtest", h.BusyPIDs[i])
		} else {
			cmd = &exec.Cmd{Path: "/bin/sleep", Args: []string{h.BusyPIDs[i], "100000"}}
			cmd.SysProcAttr = &syscall.SysProcAttr{}
			if os.Geteuid() == 0 {
				cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
			}
		}
		cmd.SysProcAttr.Setpgid = true
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		h.Procs = append(h.Procs, cmd.Process)
		if err := h.tieGroup(cmd.Process.Pid); err != nil {
			return nil, err
		}
		pid := cmd.Process.Pid
		if h.bed.Separate() {
			if pid = h.waitHostPID(pid); pid == 0 {
				return nil, fmt.Errorf("busy process %q: no pid on the host", h.BusyPIDs[i])
			}
		}
		h.Busy = append(h.Busy, pid)
		mapping[old] = strconv.Itoa(pid)
	}
	return pidRE.ReplaceAllFunc(data, func(b []byte) []byte {
		old := pidRE.FindSubmatch(b)[1]
		if n := mapping[string(old)]; n != "" {
			return []byte("<pid>" + n + "</pid>")
		}
		return b
	}), nil
}

// writeClientFiles writes known_hosts, ssh_config and hosts.yaml for the
// fleet as a careful user would have them.
func (f *Fleet) writeClientFiles(t testing.TB) {
	t.Helper()
	var kh, cfg, hy strings.Builder
	user := currentUser()
	hy.WriteString("hosts:\n")
	for _, h := range f.Hosts {
		name := knownhosts.Normalize(net.JoinHostPort(h.Addr, strconv.Itoa(h.Port)))
		if h.Proxy != nil {
			name = h.Name // looked up by HostKeyAlias, which has no port
		}
		key := h.Key
		if h.WrongKey {
			key = writeKey(t, filepath.Join(h.Dir, "impostor_key"))
		}
		names := []string{name}
		for _, a := range h.ExtraAddrs {
			names = append(names, knownhosts.Normalize(net.JoinHostPort(a, strconv.Itoa(h.Port))))
		}
		for _, name := range names {
			switch {
			case h.NotKnown:
			case h.Hashed:
				kh.WriteString(knownhosts.Line([]string{knownhosts.HashHostname(name)}, key) + "\n")
			default:
				kh.WriteString(knownhosts.Line([]string{name}, key) + "\n")
			}
		}
		port := h.Port
		if h.Proxy != nil {
			port = h.Proxy.Port
			// Host keys stay those of the host, not of the proxy's
			// address (HostKeyAlias), as when a proxy or port forward
			// sits in front of a host. The alias is the host's name: the
			// fake hosts share one address but each has its own key.
			fmt.Fprintf(&cfg, "Host %s\n  HostKeyAlias %s\n", h.Name, h.Name)
		} else {
			fmt.Fprintf(&cfg, "Host %s\n", h.Name)
		}
		f.writeHostConfig(&cfg, h, h.Addr, port, user)
		for _, a := range h.ExtraAddrs {
			fmt.Fprintf(&cfg, "Host %s\n", a)
			f.writeHostConfig(&cfg, h, a, h.Port, user)
		}
		fmt.Fprintf(&hy, "  - address: %s\n", h.Name)
	}
	f.KnownHosts = filepath.Join(f.Dir, "known_hosts")
	f.SSHConfig = filepath.Join(f.Dir, "ssh_config")
	f.HostsYAML = filepath.Join(f.Dir, "hosts.yaml")
	must(t, os.WriteFile(f.KnownHosts, []byte(kh.String()), 0o600))
	must(t, os.WriteFile(f.SSHConfig, []byte(cfg.String()), 0o600))
	must(t, os.WriteFile(f.HostsYAML, []byte(hy.String()), 0o600))
}

// writeHostConfig writes the body of an ssh_config Host entry reaching h
// at addr:port.
func (f *Fleet) writeHostConfig(cfg *strings.Builder, h *Host, addr string, port int, user string) {
	fmt.Fprintf(cfg, "  HostName %s\n  Port %d\n  User %s\n  IdentityFile %s\n  UserKnownHostsFile %s\n",
		addr, port, user, f.ClientKey, filepath.Join(f.Dir, "known_hosts"))
	if h.AliveInterval > 0 {
		fmt.Fprintf(cfg, "  ServerAliveInterval %d\n  ServerAliveCountMax 3\n", h.AliveInterval)
	}
	if h.Jump != "" {
		fmt.Fprintf(cfg, "  ProxyJump %s\n", h.Jump)
	}
}

// HostsYAMLAs writes a hosts file like HostsYAML that logs in as u on every
// host; the client still runs as the test runner, with Env, KnownHosts and
// SSHConfig. It returns the file's path.
func (f *Fleet) HostsYAMLAs(t testing.TB, u *User) string {
	t.Helper()
	var hy strings.Builder
	hy.WriteString("hosts:\n")
	for _, h := range f.Hosts {
		fmt.Fprintf(&hy, "  - address: %s\n    user: %s\n", h.Name, u.Name)
	}
	path := filepath.Join(f.Dir, "hosts-"+u.Name+".yaml")
	must(t, os.WriteFile(path, []byte(hy.String()), 0o644))
	must(t, os.Chmod(path, 0o644))
	return path
}

func writeKey(t testing.TB, path string) ssh.PublicKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	must(t, err)
	block, err := ssh.MarshalPrivateKey(priv, "")
	must(t, err)
	must(t, os.WriteFile(path, pem.EncodeToMemory(block), 0o600))
	sshPub, err := ssh.NewPublicKey(pub)
	must(t, err)
	must(t, os.WriteFile(path+".pub", ssh.MarshalAuthorizedKey(sshPub), 0o644))
	return sshPub
}

// freePort is a port free on addr and on every extra address.
func freePort(addr string, extra []string) (int, error) {
	for attempt := 0; ; attempt++ {
		ln, err := net.Listen("tcp", addr+":0")
		if err != nil {
			return 0, err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		free := true
		for _, a := range extra {
			l, err := net.Listen("tcp", net.JoinHostPort(a, strconv.Itoa(port)))
			if err != nil {
				if attempt == 20 {
					ln.Close()
					return 0, err
				}
				free = false
				break
			}
			l.Close()
		}
		ln.Close()
		if free {
			return port, nil
		}
	}
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	out, err := exec.Command("id", "-un").Output()
	if err != nil {
		return "root"
	}
	return strings.TrimSpace(string(out))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Leftovers lists the processes still running that were started through
// this host's sshd (they carry its TFHIVE_FAKE_GPU in their environment),
// as "pid cmdline" strings; sshd itself and the busy processes don't.
func (h *Host) Leftovers() []string {
	marker := []byte("TFHIVE_FAKE_GPU=" + filepath.Join(h.Dir, "gpu") + "\x00")
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append(env, 0), marker) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && bytes.Contains(stat, []byte(") Z ")) {
			continue // a zombie is already dead
		}
		out = append(out, fmt.Sprintf("%d %s", pid, bytes.ReplaceAll(bytes.TrimRight(cmdline, "\x00"), []byte{0}, []byte{' '})))
	}
	return out
}

// ServeProcesses makes the fake nvidia-smi list these pids (real
// processes of the machine, of any user) on GPU gpu (the capture's
// order), after the ones it lists already: a process appearing on a GPU
// while a run holds it. The capture is replaced whole (a rename), so a
// probe never reads half of it.
func (h *Host) ServeProcesses(gpu int, pids ...int) error {
	path := filepath.Join(h.Dir, "gpu", "output")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(data)
	at := -1
	for i := 0; i <= gpu; i++ {
		j := strings.Index(s[at+1:], "</processes>")
		if j < 0 {
			return fmt.Errorf("%s: no GPU %d in the capture", h.Name, gpu)
		}
		at += 1 + j
	}
	var add strings.Builder
	for _, pid := range pids {
		fmt.Fprintf(&add, "\t\t\t<process_info>\n\t\t\t\t<gpu_instance_id>N/A</gpu_instance_id>\n\t\t\t\t<compute_instance_id>N/A</compute_instance_id>\n"+
			"\t\t\t\t<pid>%d</pid>\n\t\t\t\t<type>C</type>\n\t\t\t\t<process_name>python</process_name>\n\t\t\t\t<used_memory>100 MiB</used_memory>\n\t\t\t</process_info>\n", pid)
	}
	s = s[:at] + strings.TrimPrefix(add.String(), "\t\t") + "\t\t" + s[at:]
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
