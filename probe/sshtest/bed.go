package sshtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Bed says how separate the fake hosts of a fleet are from each other and
// from the test.
type Bed int

const (
	// Plain hosts are sshd processes of this machine: one process table,
	// one /proc/locks, one /tmp and one machine-id for all of them and the
	// test. The test user gets a HOME of each host's own; other users
	// share their real homes. It needs nothing but sshd.
	Plain Bed = iota + 1
	// SharedHome hosts are as separate as a lab's machines: each sshd is
	// PID 1 of a PID, mount and UTS namespace of its own (its own /proc and
	// /proc/locks, a private /tmp, its own machine-id and hostname), and
	// every user has one home on all of them, as an NFS-mounted /home
	// gives. It needs root.
	SharedHome
	// PrivateHomes hosts are separate as SharedHome ones, and every user
	// has a home of each host's own.
	PrivateHomes
	// Clones hosts are separate as SharedHome ones, with one home, and
	// are clones of one image: every host reports the same
	// /etc/machine-id (its hostname is its own, unless Profile.Hostname
	// gives several one), and its claims directory (its own) at the same
	// path, as /tmp is on every real host. VMs cloned without
	// systemd-machine-id-setup, containers of one image and a lab's
	// imaged machines look like this; anything keyed by the machine id
	// alone collides here.
	Clones
	// PrivateClones hosts are clones as Clones ones (one machine-id, a
	// claims directory each at one path), and every user has a home of
	// each host's own, as PrivateHomes: imaged machines without NFS homes.
	// CI's second pass runs the tests of the host-side state in a home on
	// it (.ci/run); PrivateHomes keeps distinct machine-ids tried.
	PrivateClones
)

// String is the bed's name as TFHIVE_TEST_BED takes it.
func (b Bed) String() string {
	switch b {
	case Plain:
		return "plain"
	case SharedHome:
		return "shared-home"
	case PrivateHomes:
		return "private-homes"
	case Clones:
		return "clones"
	case PrivateClones:
		return "private-clones"
	}
	return fmt.Sprintf("Bed(%d)", int(b))
}

// Separate says whether the bed's hosts have namespaces of their own.
func (b Bed) Separate() bool {
	return b == SharedHome || b == PrivateHomes || b == Clones || b == PrivateClones
}

// privateHomes says whether every host of the bed has a home of its own
// for each user, in namespaces of its own: PrivateHomes and
// PrivateClones.
func (b Bed) privateHomes() bool { return b == PrivateHomes || b == PrivateClones }

// clones says whether the bed's hosts report one machine-id and find
// their claims directories at one path: Clones and PrivateClones.
func (b Bed) clones() bool { return b == Clones || b == PrivateClones }

// SharesHome says whether every host of the bed sees one home for each
// user (as NFS gives): SharedHome and Clones.
func (b Bed) SharesHome() bool { return b == SharedHome || b == Clones }

// BedEnv names the environment variable that chooses the bed of fleets
// started without one (Start, StartShared): plain, shared-home,
// private-homes, clones or private-clones. Unset, it is clones when the test runs as root
// (what a lab's hosts are like: separate process tables and /tmp, one
// home, and often one machine-id; what CI runs), plain otherwise.
const BedEnv = "TFHIVE_TEST_BED"

// DefaultBed is the bed that Start and StartShared use.
func DefaultBed(t testing.TB) Bed {
	t.Helper()
	switch v := os.Getenv(BedEnv); v {
	case "":
		if os.Geteuid() == 0 {
			return Clones
		}
		return Plain
	case "plain":
		return Plain
	case "shared-home":
		return SharedHome
	case "private-homes":
		return PrivateHomes
	case "clones":
		return Clones
	case "private-clones":
		return PrivateClones
	default:
		t.Fatalf("sshtest: %s=%q: want plain, shared-home, private-homes, clones or private-clones", BedEnv, v)
		return 0
	}
}

// RequireSeparate fails (in CI) or skips (elsewhere) unless separate hosts
// can be made: that takes root and util-linux's unshare.
func RequireSeparate(t testing.TB) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "separate test hosts need root (PID and mount namespaces)"
	} else if _, err := exec.LookPath("unshare"); err != nil {
		why = "separate test hosts need unshare (apt-get install -y util-linux)"
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

var (
	keepMu    sync.Mutex
	keepPaths []string
)

// KeepVisible names directories of this machine under /tmp that separate
// hosts must still see behind their private /tmp, as a lab's hosts see
// the same programs: the binaries a test package built for its tasks. The
// fleet's own directory and the repository are always kept.
func KeepVisible(dirs ...string) {
	keepMu.Lock()
	defer keepMu.Unlock()
	keepPaths = append(keepPaths, dirs...)
}

// separateScript runs as root in the host's new namespaces, before sshd:
// it names the host, gives it a machine-id and a private /tmp that still
// shows the directories the test keeps, and, for private homes, binds the
// host's own /home; for clones, it binds the host's own claims directory
// where every clone's sessions find theirs. Arguments: HOSTNAME
// MACHINE_ID_FILE HOMES CLAIMS SEEN STAGING KEEP... -- SSHD ARGS... (HOMES
// empty: /home stays the machine's; CLAIMS empty: no bind).
//
// A kept directory gone by the time the host starts is not kept: another
// test's (KeepVisible's, TestSlurmRun's cluster), ended and removed
// between the fleet's list and this host's start, failed the host's
// mount and so its sshd ("special device … does not exist", once in a
// CI run: TestIdleStopOnTheHost). One that is there and will not mount
// still fails the host.
const separateScript = `set -eu
name=$1 mid=$2 homes=$3 claims=$4 seen=$5 stage=$6
shift 6
mount --make-rprivate /
hostname "$name"
mount --bind "$mid" /etc/machine-id
if [ -n "$homes" ]; then mount --bind "$homes" /home; fi
mount -t tmpfs -o mode=0700 sshtest-stage "$stage"
i=0 staged=' '
for d in "$@"; do
	[ "$d" != -- ] || break
	i=$((i + 1))
	mkdir "$stage/$i"
	if [ -d "$d" ]; then
		if mount --rbind "$d" "$stage/$i"; then staged="$staged$i "; else [ ! -d "$d" ]; fi
	fi
done
mount -t tmpfs -o mode=1777,nosuid,nodev sshtest-tmp /tmp
i=0
while [ "$1" != -- ]; do
	i=$((i + 1))
	case $staged in *" $i "*)
		mkdir -p "$1"
		mount --rbind "$stage/$i" "$1"
		;;
	esac
	shift
done
shift
umount -l "$stage"
if [ -n "$claims" ]; then
	mkdir -p "$seen"
	mount --bind "$claims" "$seen"
fi
exec "$@"
`

// stageDir is an empty directory of the machine that each separate host
// covers, in its own mount namespace only, with a tmpfs to stage the
// directories it keeps visible.
const stageDir = "/run/tfhive-sshtest"

// separateCommand wraps sshd's command line for a separate host: unshare
// makes the namespaces and, killed (Host.Stop), takes PID 1 of the
// namespace, and so every process of the host, with it.
func (h *Host) separateCommand(sshd []string) (*exec.Cmd, error) {
	if m := h.machine; m != nil {
		// Another name for m: its sshd runs in m's namespaces.
		init, err := m.InitPID()
		if err != nil {
			return nil, err
		}
		args := append([]string{"--target", strconv.Itoa(init), "--pid", "--mount", "--uts", "--"}, sshd...)
		return exec.Command("nsenter", args...), nil
	}
	if err := os.MkdirAll(stageDir, 0o755); err != nil {
		return nil, err
	}
	mid := filepath.Join(h.Dir, "machine-id")
	if h.bed.clones() {
		mid = filepath.Join(h.fleetDir(), "machine-id")
	}
	if _, err := os.Stat(mid); err != nil {
		sum := sha256.Sum256([]byte("sshtest machine " + filepath.Dir(mid)))
		if err := os.WriteFile(mid, []byte(hex.EncodeToString(sum[:16])+"\n"), 0o444); err != nil {
			return nil, err
		}
	}
	homes := ""
	if h.bed.privateHomes() {
		homes = h.homesDir()
	}
	claims := ""
	if h.bed.clones() {
		claims = h.ClaimsDir()
	}
	args := []string{"--pid", "--fork", "--mount-proc", "--mount", "--uts", "--kill-child=SIGKILL", "--",
		"/bin/sh", "-c", separateScript, "sshtest-host", h.hostname(), mid, homes, claims, h.ClaimsPath(), stageDir}
	args = append(args, h.keep...)
	args = append(args, "--")
	args = append(args, sshd...)
	return exec.Command("unshare", args...), nil
}

// InitPID is the pid, as this machine's test sees it, of a separate
// host's PID 1: the process that unshare forked.
func (h *Host) InitPID() (int, error) {
	if !h.bed.Separate() || h.cmd == nil {
		return 0, fmt.Errorf("sshtest: %s is not a separate host that is up", h.Name)
	}
	if h.machine != nil {
		return h.machine.InitPID()
	}
	pid := h.cmd.Process.Pid
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(data))
	if len(f) != 1 {
		return 0, fmt.Errorf("sshtest: %s: unshare has children %q, want one", h.Name, f)
	}
	return strconv.Atoi(f[0])
}

// initGone returns a function that waits until a separate host's PID 1,
// and so every process of the host, has died (it dies of its parent's
// death, a moment after unshare does): a host that Stop returned from is
// off. For other hosts it returns at once.
func (h *Host) initGone() func() {
	if !h.bed.Separate() || h.machine != nil {
		return func() {}
	}
	pid, err := h.InitPID()
	if err != nil {
		return func() {}
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return func() {}
	}
	return func() {
		defer unix.Close(fd)
		// Readable once the process has exited; bounded all the same.
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, 10_000); err != unix.EINTR {
				return
			}
		}
	}
}

// keepUnderTmp is the fleet's directory and the ones KeepVisible named,
// those of them under /tmp (the rest are seen anyway), without one that
// lies under another.
func keepUnderTmp(fleetDir string) []string {
	keepMu.Lock()
	// The repository too: tasks run its scripts (testdata), and a clone
	// may well lie under /tmp.
	dirs := append([]string{filepath.Dir(fleetDir), RepoRoot()}, keepPaths...)
	keepMu.Unlock()
	var out []string
	for _, d := range dirs {
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			continue // gone: a test's kept directory outlives no test
		}
		d = real
		if !strings.HasPrefix(d, "/tmp/") {
			continue
		}
		out = append(out, d)
	}
	var keep []string
	for _, d := range out {
		inside := false
		for _, o := range out {
			if o != d && strings.HasPrefix(d, o+"/") {
				inside = true
			}
		}
		if !inside && !containsString(keep, d) {
			keep = append(keep, d)
		}
	}
	return keep
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// homesDir is what a PrivateHomes host has as /home: a directory of its
// own with a home for every user AddUser made.
func (h *Host) homesDir() string { return filepath.Join(h.Dir, "homes") }

var (
	privateMu    sync.Mutex
	privateHosts = map[*Host]bool{}
	localUsers   = map[string]*User{}
)

// makePrivateHomes gives a PrivateHomes host its /home, with a home of its
// own for each user made so far; AddUser adds later users' to every such
// host still up.
func (h *Host) makePrivateHomes() error {
	if err := os.MkdirAll(h.homesDir(), 0o755); err != nil {
		return err
	}
	privateMu.Lock()
	defer privateMu.Unlock()
	for _, u := range localUsers {
		if err := h.addHome(u); err != nil {
			return err
		}
	}
	privateHosts[h] = true
	return nil
}

// addHome makes u's home on a PrivateHomes host, empty, u's own, 0700.
func (h *Host) addHome(u *User) error {
	home := filepath.Join(h.homesDir(), filepath.Base(u.Home))
	if err := os.Mkdir(home, 0o700); err != nil && !os.IsExist(err) {
		return err
	}
	return os.Chown(home, u.UID, u.GID)
}

// userAdded records u for the PrivateHomes hosts, those up now and later
// ones, until forget.
func userAdded(u *User) error {
	privateMu.Lock()
	defer privateMu.Unlock()
	localUsers[u.Name] = u
	for h := range privateHosts {
		if err := h.addHome(u); err != nil {
			return fmt.Errorf("sshtest: a home for %s on %s: %w", u.Name, h.Name, err)
		}
	}
	return nil
}

func userRemoved(name string) {
	privateMu.Lock()
	defer privateMu.Unlock()
	delete(localUsers, name)
}

func hostStopped(h *Host) {
	privateMu.Lock()
	defer privateMu.Unlock()
	delete(privateHosts, h)
}

// Command runs a program on the host as u (nil: the test's own user), the
// way a colleague's shell there would: in the host's namespaces on a
// separate bed, so that its processes, locks and /tmp are the host's, and
// with u's credentials, HOME and a login's PATH. On a Plain bed it is
// u.Command. Its pid (Process.Pid) is nsenter's, on this machine; HostPID
// says what the host calls the program.
func (h *Host) Command(u *User, name string, args ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if u != nil {
		cmd = u.Command(name, args...)
	} else {
		cmd = exec.Command(name, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if !h.bed.Separate() {
		return cmd
	}
	init, err := h.InitPID()
	if err != nil {
		// The command fails to start, saying why.
		return exec.Command("/bin/sh", "-c", "echo \"$1\" >&2; exit 127", "sshtest", err.Error())
	}
	ns := []string{"--target", strconv.Itoa(init), "--pid", "--mount", "--uts"}
	if u != nil {
		ns = append(ns, "--setuid", strconv.Itoa(u.UID), "--setgid", strconv.Itoa(u.GID))
	}
	if cmd.Dir != "" {
		// Entering a mount namespace moves to its root: the directory is
		// taken again there (a private home is the host's own).
		ns = append(ns, "--wdns="+cmd.Dir)
		cmd.Dir = ""
	}
	wrapped := exec.Command("nsenter", append(append(ns, "--", cmd.Path), args...)...)
	wrapped.Env, wrapped.Dir = cmd.Env, cmd.Dir
	// nsenter needs root to enter; it drops to u itself.
	wrapped.SysProcAttr = &syscall.SysProcAttr{}
	return wrapped
}

// HostPID is what the host calls the process pid of this machine (as
// Command's Process.Pid, or the program nsenter started for it): the
// same pid on a Plain bed; 0 when it is not the host's.
func (h *Host) HostPID(pid int) int {
	if !h.bed.Separate() {
		return pid
	}
	for range 2 {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return 0
		}
		for _, l := range strings.Split(string(data), "\n") {
			if f := strings.Fields(l); len(f) == 3 && f[0] == "NSpid:" {
				n, _ := strconv.Atoi(f[2])
				return n
			}
		}
		// nsenter itself, outside: its child is the program.
		kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		if f := strings.Fields(string(kids)); err != nil || len(f) != 1 {
			return 0
		} else if pid, err = strconv.Atoi(f[0]); err != nil {
			return 0
		}
	}
	return 0
}

// MachineID is the host's /etc/machine-id as its sessions read it: one of
// its own on a separate bed, the fleet's on a Clones one, the test
// machine's on a Plain one.
func (h *Host) MachineID() string {
	path := "/etc/machine-id"
	if h.bed.clones() {
		path = filepath.Join(h.fleetDir(), "machine-id")
	} else if h.bed.Separate() {
		path = filepath.Join(h.machineOf().Dir, "machine-id")
	}
	data, _ := os.ReadFile(path)
	return strings.TrimSpace(string(data))
}

// Proc is the host's /proc as the test can read it: the test machine's on
// a Plain bed; on a separate one the host's own (its pids), seen through
// its PID 1's root.
func (h *Host) Proc() string {
	if !h.bed.Separate() {
		return "/proc"
	}
	init, err := h.InitPID()
	if err != nil {
		return filepath.Join(h.Dir, "no-proc") // reads fail, saying so
	}
	return fmt.Sprintf("/proc/%d/root/proc", init)
}

// nobody is the user busy processes run as on a separate host.
var nobody = &User{Name: "nobody", UID: 65534, GID: 65534, Home: "/"}

// startBusyLater starts a separate host's busy processes in its
// namespaces, now that it is up, and serves the capture with their pids.
func (h *Host) startBusyLater() error {
	if h.capture == nil {
		return nil
	}
	data, err := h.startBusy(h.capture)
	h.capture = nil
	if err != nil {
		return err
	}
	path := filepath.Join(h.Dir, "gpu", "output")
	if err := os.WriteFile(path+".new", data, 0o644); err != nil {
		return err
	}
	return os.Rename(path+".new", path)
}

// waitHostPID is HostPID once the host has the process: nsenter starts
// it a moment after its own start. 0 after 10 s.
func (h *Host) waitHostPID(pid int) int {
	for range 1000 {
		if n := h.HostPID(pid); n > 0 {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0
}

// fleetDir is the fleet's directory, which holds hosts/NAME.
func (h *Host) fleetDir() string { return filepath.Dir(filepath.Dir(h.Dir)) }

// hostname is the host's hostname as its sessions see it: Hostname, or
// its name.
func (h *Host) hostname() string {
	if h.Hostname != "" {
		return h.Hostname
	}
	return h.Name
}

// ClaimsPath is the host's claims directory as its sessions name it
// ($TFHIVE_CLAIMS_DIR, and so in tfhive's messages and labels):
// ClaimsDir itself, or on a Clones bed one path for every host, as /tmp
// is, where each host sees its own. The test reads and writes the
// directory through ClaimsDir; a command on the host may use either.
func (h *Host) ClaimsPath() string {
	if h.bed.clones() {
		return filepath.Join(h.fleetDir(), "claims")
	}
	return h.ClaimsDir()
}
