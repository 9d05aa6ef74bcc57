// Package slurmtest is a test bed for Slurm jobs: a one-machine Slurm
// cluster (Debian's slurm-wlm and munge) in a temp dir, with nodes on
// loopback addresses, for tests that submit what `tfhive plan --emit
// slurm` prints. It needs root (slurmd runs jobs as their users) and
// unshare(1).
//
// How it is built, and why:
//   - munged with its own key, socket, pid, log and seed files in the
//     temp dir; munged wants the socket's directory reachable by all and
//     writable by no one else: a 0711 dir with the socket in a 0755 one.
//   - slurmctld and one `slurmd -N nodeK` per node, as root (SlurmUser,
//     SlurmdUser), on free ports, every state, spool, pid and log file in
//     the temp dir. No cgroups here: proctrack/linuxproc, task/none.
//   - Node nodeK is NodeAddr 127.0.3.K. Job steps must resolve node names
//     as on a real cluster, so the daemons run in their own mount
//     namespace (unshare --mount) with /etc/hosts and /etc/slurm bind
//     mounted over; jobs inherit it from slurmd. This machine's own files
//     are never touched.
//   - No slurmdbd and no database: each finished job's record goes to a
//     jobcomp/filetxt file, which `sacct --completion` reads, and
//     MinJobAge keeps jobs visible to `scontrol show job`.
//
// It imports nothing of tfhive.
package slurmtest

import (
	"bytes"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Programs are what the test bed runs; Require checks for them.
var Programs = []string{"munged", "slurmctld", "slurmd", "sbatch", "scontrol", "sinfo", "srun", "squeue", "scancel", "sacct", "unshare", "mount"}

// Require fails (with CI=true) or skips the test when Slurm or munge is
// not installed: CI installs them (.ci/run), so there a missing program
// is an error, never a reason to skip.
func Require(t testing.TB) {
	t.Helper()
	var missing []string
	for _, p := range Programs {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	if os.Geteuid() != 0 {
		missing = append(missing, "root (slurmd runs as root)")
	}
	if len(missing) == 0 {
		return
	}
	msg := "a one-machine Slurm needs " + strings.Join(missing, ", ") +
		" (apt-get install --no-install-recommends slurm-wlm munge)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Cluster is a running one-machine Slurm.
type Cluster struct {
	Dir   string   // the temp dir holding everything
	Conf  string   // slurm.conf, for SLURM_CONF
	Nodes []string // node1 … nodeN
	// JobComp is the jobcomp/filetxt file: one line per finished job,
	// which `sacct --completion` reads.
	JobComp string

	t     testing.TB
	procs []*daemon
}

// daemon is one started process; done closes when it has exited.
type daemon struct {
	what string
	cmd  *exec.Cmd
	done chan struct{}
}

// Start brings up a cluster of n nodes (at most 9) with cpus CPUs and
// gpus GPUs each, and stops it when the test ends. The GPUs are Slurm
// generic resources whose device files are stand-ins (character devices
// like /dev/null): Slurm hands them out and sets CUDA_VISIBLE_DEVICES,
// and nothing uses them. It fails the test, with the daemons'
// logs, when the cluster does not come up. A port taken between choosing
// it and a daemon binding it (other tests run on this machine) costs a
// second try with other ports.
func Start(t testing.TB, n, cpus, gpus int) *Cluster {
	t.Helper()
	Require(t)
	for attempt := 1; ; attempt++ {
		c, err := start(t, n, cpus, gpus)
		if err == nil {
			t.Cleanup(c.stop)
			return c
		}
		logs := c.Logs()
		c.stop()
		if attempt == 3 || !strings.Contains(logs, "Address already in use") {
			t.Fatalf("slurm test bed: %v\n%s", err, logs)
		}
		t.Logf("slurm test bed: %v (a port was taken meanwhile); trying again", err)
	}
}

func start(t testing.TB, n, cpus, gpus int) (*Cluster, error) {
	dir, err := os.MkdirTemp("", "tfhive-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "etc", "slurm.conf"), JobComp: filepath.Join(dir, "jobcomp.txt"), t: t}
	for k := 1; k <= n; k++ {
		c.Nodes = append(c.Nodes, "node"+strconv.Itoa(k))
	}
	for _, d := range []string{"munge", "etc", "state", "spool", "log", "dev"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return c, err
		}
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return c, err
	}
	key := make([]byte, 1024)
	rand.Read(key)
	if err := os.WriteFile(filepath.Join(dir, "munge.key"), key, 0o600); err != nil {
		return c, err
	}
	socket := filepath.Join(dir, "munge", "munge.socket")
	if err := c.run("munged", "--foreground", "--socket="+socket, "--key-file="+filepath.Join(dir, "munge.key"),
		"--pid-file="+filepath.Join(dir, "munged.pid"), "--log-file="+filepath.Join(dir, "log", "munged.log"),
		"--seed-file="+filepath.Join(dir, "munge.seed")); err != nil {
		return c, err
	}

	hosts, err := os.ReadFile("/etc/hosts")
	if err != nil {
		return c, err
	}
	ports := freePorts(t, n+2)
	var nodes, gres strings.Builder
	gresNode := ""
	if gpus > 0 {
		for g := range gpus {
			dev := filepath.Join(dir, "dev", "nvidia"+strconv.Itoa(g))
			if err := unix.Mknod(dev, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
				return c, fmt.Errorf("a stand-in GPU device: %w", err)
			}
		}
		gresNode = fmt.Sprintf(" Gres=gpu:%d", gpus)
		fmt.Fprintf(&gres, "AutoDetect=off\nName=gpu File=%s/dev/nvidia[0-%d]\n", dir, gpus-1)
	}
	for k, name := range c.Nodes {
		fmt.Fprintf(&nodes, "NodeName=%s NodeHostname=localhost NodeAddr=127.0.3.%d Port=%d CPUs=%d%s\n", name, k+1, ports[k+2], cpus, gresNode)
		hosts = fmt.Appendf(hosts, "127.0.3.%d %s\n", k+1, name)
	}
	short, _, _ := strings.Cut(hostname(t), ".")
	conf := fmt.Sprintf(`ClusterName=tfhive
SlurmctldHost=%s(127.0.0.1)
SlurmctldPort=%d
SlurmdPort=%d
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=%s
StateSaveLocation=%s/state
SlurmdSpoolDir=%s/spool/%%n
SlurmctldPidFile=%s/slurmctld.pid
SlurmdPidFile=%s/slurmd-%%n.pid
SlurmctldLogFile=%s/log/slurmctld.log
SlurmdLogFile=%s/log/slurmd-%%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SlurmdParameters=config_overrides
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=%s
MinJobAge=3600
ReturnToService=2
MailProg=/bin/true
SchedulerParameters=batch_sched_delay=0
GresTypes=gpu
%sPartitionName=debug Nodes=%s Default=YES MaxTime=INFINITE State=UP
`, short, ports[0], ports[1], socket, dir, dir, dir, dir, dir, dir, c.JobComp, nodes.String(), strings.Join(c.Nodes, ","))
	if err := os.WriteFile(c.Conf, []byte(conf), 0o644); err != nil {
		return c, err
	}
	if err := os.WriteFile(filepath.Join(dir, "etc", "gres.conf"), []byte(gres.String()), 0o644); err != nil {
		return c, err
	}
	if err := os.WriteFile(filepath.Join(dir, "hosts"), hosts, 0o644); err != nil {
		return c, err
	}
	// munged makes its socket when it is ready; slurmctld needs it.
	if err := c.poll("munged's socket", 60*time.Second, func() bool { _, err := os.Stat(socket); return err == nil }); err != nil {
		return c, err
	}
	if err := c.runInNamespace("slurmctld", "-D", "-f", c.Conf); err != nil {
		return c, err
	}
	for _, name := range c.Nodes {
		if err := c.runInNamespace("slurmd", "-D", "-f", c.Conf, "-N", name); err != nil {
			return c, err
		}
	}
	return c, c.poll("every node to be idle", 60*time.Second, func() bool {
		out, err := c.Command("sinfo", "--noheader", "--format=%t", "--nodes="+strings.Join(c.Nodes, ",")).Output()
		return err == nil && strings.TrimSpace(string(out)) == "idle"
	})
}

func hostname(t testing.TB) string {
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// freePorts are n distinct TCP ports nothing listens on now, below
// Linux's range for outgoing connections' ports (32768 up), which the
// other tests on this machine use by the thousand.
func freePorts(t testing.TB, n int) []int {
	var ports []int
	for len(ports) < n {
		p := 10000 + mrand.IntN(22000)
		if slices.Contains(ports, p) {
			continue
		}
		l, err := net.Listen("tcp", ":"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l.Close()
		ports = append(ports, p)
	}
	return ports
}

// run starts a daemon in the foreground, its output in the log dir.
func (c *Cluster) run(name string, args ...string) error {
	return c.start(exec.Command(name, args...), name)
}

// runInNamespace starts a daemon in a mount namespace of its own in which
// /etc/hosts names the nodes and /etc/slurm holds the cluster's config.
func (c *Cluster) runInNamespace(name string, args ...string) error {
	script := `mount --bind "$1/hosts" /etc/hosts && mount --bind "$1/etc" /etc/slurm && shift && exec "$@"`
	return c.start(exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh", c.Dir, name}, args...)...), name+" "+strings.Join(args, " "))
}

func (c *Cluster) start(cmd *exec.Cmd, what string) error {
	safe := regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(what, "-")
	out, err := os.Create(filepath.Join(c.Dir, "log", "stdout-"+safe+".log"))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("starting %s: %w", what, err)
	}
	out.Close()
	d := &daemon{what: what, cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(d.done)
	}()
	c.procs = append(c.procs, d)
	return nil
}

// waitFor polls ready (every 50 ms, up to 60 s).
func (c *Cluster) waitFor(what string, ready func() bool) {
	c.t.Helper()
	if err := c.poll(what, 60*time.Second, ready); err != nil {
		c.t.Fatalf("slurm test bed: %v\n%s", err, c.Logs())
	}
}

// waitForJob polls ready for up to 3 minutes: a job may train.
func (c *Cluster) waitForJob(what string, ready func() bool) {
	c.t.Helper()
	if err := c.poll(what, 3*time.Minute, ready); err != nil {
		c.t.Fatalf("slurm test bed: %v\n%s", err, c.Logs())
	}
}

// poll calls ready every 50 ms until it is true, a daemon has exited or
// limit has passed.
func (c *Cluster) poll(what string, limit time.Duration, ready func() bool) error {
	for deadline := time.Now().Add(limit); !ready(); {
		for _, d := range c.procs {
			select {
			case <-d.done:
				return fmt.Errorf("%s exited (%v) while waiting for %s", d.what, d.cmd.ProcessState, what)
			default:
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no %s after %s", what, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// Logs is every daemon's log, for failure messages.
func (c *Cluster) Logs() string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(c.Dir, "log", "*.log"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		fmt.Fprintf(&b, "--- %s\n%s", filepath.Base(f), data)
	}
	return b.String()
}

// Env is the environment for Slurm's client commands to use the cluster.
func (c *Cluster) Env() []string {
	return append(os.Environ(), "SLURM_CONF="+c.Conf)
}

// Command is a Slurm client command for this cluster.
func (c *Cluster) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env, cmd.Dir = c.Env(), c.Dir
	return cmd
}

// Job is a finished job as Slurm recorded it.
type Job struct {
	ID    string
	State string // COMPLETED, FAILED, …, from scontrol and jobcomp
	// ExitCode is the batch script's exit status, from ExitCode=N:S.
	ExitCode int
	Output   string // what the job printed (--output)
	// Sacct is what `sacct --completion` says of the job once it has
	// ended: "STATE EXIT:SIGNAL", e.g. "COMPLETED 0:0", "FAILED 7:0".
	Sacct string
}

// Run submits script with sbatch, in env (nil: the test's own environment
// plus SLURM_CONF) plus extra sbatch arguments, and returns the job once
// it has ended.
func (c *Cluster) Run(script string, env []string, args ...string) Job {
	c.t.Helper()
	path := filepath.Join(c.Dir, fmt.Sprintf("job-%d.sh", time.Now().UnixNano()))
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		c.t.Fatal(err)
	}
	out := filepath.Join(c.Dir, "job-%j.out")
	cmd := c.Command("sbatch", append(append([]string{"--parsable", "--output=" + out}, args...), path)...)
	if env != nil {
		cmd.Env = append(env, "SLURM_CONF="+c.Conf)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("sbatch: %v\n%s%s", err, stderr.String(), c.Logs())
	}
	j := Job{ID: strings.TrimSpace(stdout.String())}
	// sbatch --wait would do, but it polls at growing intervals (2 s,
	// then more): seconds lost per job.
	var fields map[string]string
	c.waitForJob("job "+j.ID+" to end", func() bool {
		show, err := c.Command("scontrol", "--oneliner", "show", "job", j.ID).Output()
		if err != nil {
			return false
		}
		fields = map[string]string{}
		for _, f := range strings.Fields(string(show)) {
			if k, v, ok := strings.Cut(f, "="); ok {
				fields[k] = v
			}
		}
		return ended[fields["JobState"]]
	})
	j.State = fields["JobState"]
	code, _, _ := strings.Cut(fields["ExitCode"], ":")
	j.ExitCode, _ = strconv.Atoi(code)
	data, _ := os.ReadFile(strings.ReplaceAll(out, "%j", j.ID))
	j.Output = string(data)
	j.Sacct = c.sacct(j.ID)
	return j
}

// RunArray submits a job array's script as Run submits a job, and
// returns its n array tasks once every one has ended, by array index
// (each Job's ID is the array task's, JOBID_INDEX; Sacct is left empty).
func (c *Cluster) RunArray(script string, env []string, n int, args ...string) []Job {
	c.t.Helper()
	path := filepath.Join(c.Dir, fmt.Sprintf("array-%d.sh", time.Now().UnixNano()))
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		c.t.Fatal(err)
	}
	out := filepath.Join(c.Dir, "array-%A_%a.out")
	cmd := c.Command("sbatch", append(append([]string{"--parsable", "--output=" + out}, args...), path)...)
	if env != nil {
		cmd.Env = append(env, "SLURM_CONF="+c.Conf)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("sbatch: %v\n%s%s", err, stderr.String(), c.Logs())
	}
	id, _, _ := strings.Cut(strings.TrimSpace(stdout.String()), ";")
	jobs := make([]Job, n)
	// scontrol lists an array's tasks one record (line) each once they
	// are out of the pending block (ArrayTaskId=2-3 while pending).
	c.waitForJob("job array "+id+" to end", func() bool {
		show, err := c.Command("scontrol", "--oneliner", "show", "job", id).Output()
		if err != nil {
			return false
		}
		done := 0
		for _, line := range strings.Split(string(show), "\n") {
			fields := map[string]string{}
			for _, f := range strings.Fields(line) {
				if k, v, ok := strings.Cut(f, "="); ok {
					fields[k] = v
				}
			}
			k, err := strconv.Atoi(fields["ArrayTaskId"])
			if err != nil || k < 0 || k >= n || !ended[fields["JobState"]] {
				continue
			}
			code, _, _ := strings.Cut(fields["ExitCode"], ":")
			jobs[k].ID, jobs[k].State = id+"_"+strconv.Itoa(k), fields["JobState"]
			jobs[k].ExitCode, _ = strconv.Atoi(code)
			done++
		}
		return done == n
	})
	for k := range jobs {
		name := strings.ReplaceAll(strings.ReplaceAll(out, "%A", id), "%a", strconv.Itoa(k))
		data, _ := os.ReadFile(name)
		jobs[k].Output = string(data)
	}
	return jobs
}

// ended are the states of a job that is over.
var ended = map[string]bool{
	"COMPLETED": true, "FAILED": true, "CANCELLED": true, "TIMEOUT": true, "NODE_FAIL": true,
	"OUT_OF_MEMORY": true, "PREEMPTED": true, "BOOT_FAIL": true, "DEADLINE": true,
}

// sacct is the job's state and exit code as `sacct --completion` reads
// them from the jobcomp file, where Slurm writes them as the job ends.
func (c *Cluster) sacct(id string) string {
	c.t.Helper()
	var got string
	c.waitFor("sacct to list job "+id, func() bool {
		out, err := c.Command("sacct", "--completion", "--jobs="+id, "--noheader", "--parsable2", "--format=JobID,State,ExitCode").Output()
		if err != nil {
			return false
		}
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Split(line, "|"); len(f) == 3 && f[0] == id {
				got = f[1] + " " + f[2]
				return true
			}
		}
		return false
	})
	return got
}

// stop ends the daemons (SIGTERM, then SIGKILL) and removes the temp dir.
func (c *Cluster) stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		d := c.procs[i]
		d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(10 * time.Second):
			d.cmd.Process.Kill()
			<-d.done
		}
	}
	if c.t.Failed() {
		c.t.Logf("slurm test bed logs:\n%s", c.Logs())
	}
	os.RemoveAll(c.Dir)
}
