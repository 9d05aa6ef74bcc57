package doctor

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alessio/shellescape"
	"github.com/tfhive/tfhive/launcher/supervisor"
	"golang.org/x/sync/errgroup"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/shscript"
	"github.com/tfhive/tfhive/probe/wording"
)

// `tfhive doctor` and `run --check`: what a task would meet on each host
// (scripts/doctor.sh, with its Python part scripts/doctor.py), compared
// across the hosts (report.go).

// DefaultModules are imported on every host, shown as not installed where
// they are not.
var DefaultModules = []string{"tensorflow", "torch"}

// Host is what one host reported. A nil value is one the host does
// not have: no Python, a module not installed, no nvidia-smi, a framework
// built without CUDA.
type Host struct {
	Host string `json:"host"`
	// Error says why the host could not be checked (unreachable, its
	// workdir missing, its setup failed): what the check did not get to
	// is nil.
	Error string `json:"error,omitempty"`
	// Unreachable: the probe could not reach the host (Error says why).
	Unreachable bool   `json:"unreachable,omitempty"`
	Python      Python `json:"python"`
	// Modules maps each module imported to its version ("?" when it has
	// none to tell, "error: TYPE" when importing it failed).
	Modules map[string]*string `json:"modules"`
	// Driver is the NVIDIA driver version the probe's nvidia-smi reported;
	// DriverError why it reported none.
	Driver      *string `json:"driver"`
	DriverError string  `json:"driver_error,omitempty"`
	// NoDevices: nvidia-smi is there and found no devices, which status
	// says in the same words (a nil Driver alone is no nvidia-smi).
	NoDevices bool `json:"no_devices,omitempty"`
	// CUDA, CuDNN and NCCL map a framework (tensorflow, torch) to the
	// version it reports being built with.
	CUDA  map[string]*string `json:"cuda"`
	CuDNN map[string]*string `json:"cudnn"`
	NCCL  map[string]*string `json:"nccl"`
	// DiskFreeBytes is the space free in the workdir, for its user.
	DiskFreeBytes *int64 `json:"disk_free_bytes"`
	// Code is the hash of the code synced to the host (--sync); nil
	// until something is.
	Code *string `json:"code"`
	// Differs lists the items (Report.Majority's keys) where the host
	// is not with the value most hosts have.
	Differs []string `json:"differs"`
}

// Python is the interpreter a task's `python3` would be.
type Python struct {
	Executable *string `json:"executable"`
	Version    *string `json:"version"`
}

// MinTimeout is the least a host is given to import the modules: a
// cold import of TensorFlow and PyTorch from an NFS home, or on a host
// whose cores are busy, takes tens of seconds, and the hosts file's
// command_timeout (30s) is a probe's bound, not an import's. A longer
// command_timeout is used as it is.
const MinTimeout = 2 * time.Minute

// Options say where and how to look.
type Options struct {
	// Modules are imported on every host, in this order (Modules).
	Modules []string
	// Workdir and Setup override the hosts file's when not empty.
	Workdir, Setup string
	// Env is added over the hosts file's env (run's --env).
	Env map[string]string
	// Timeout bounds the check on each host (callers give at least
	// MinTimeout).
	Timeout  time.Duration
	Parallel int
	// Code is the --sync tree, present on the hosts it names: there it is
	// the workdir unless Workdir is set, as for a task, and its hash is
	// the host's code.
	Code *Code
}

// Code is a --sync tree and its directory on each host that has it.
type Code struct {
	Hash string
	Dirs map[string]string // by host name
}

var moduleRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// ValidModule reports whether name can be a Python module's dotted name:
// only such names are sent to the hosts.
func ValidModule(name string) bool { return len(name) <= 200 && moduleRE.MatchString(name) }

// Modules is DefaultModules, then imports not among them, in order.
func Modules(imports []string) []string {
	mods := slices.Clone(DefaultModules)
	for _, m := range imports {
		if !slices.Contains(mods, m) {
			mods = append(mods, m)
		}
	}
	return mods
}

//go:embed scripts/doctor.py
var doctorPy string

//go:embed scripts/doctor.sh
var scripts embed.FS

var doctorSh = shscript.Load(scripts, "scripts/doctor.sh")

// doctorInput is what a host's supervisor command is sent: the check as
// its one stage (read-stage.sh), behind its length. It travels on stdin,
// like a task's, so that the setup snippet and the env are never on a
// command line.
func doctorInput(h inventory.Host, o Options) string {
	wd, setup := h.Workdir, h.Setup
	if o.Code != nil && o.Code.Dirs[h.Name] != "" {
		wd = o.Code.Dirs[h.Name]
	}
	if o.Workdir != "" {
		wd = o.Workdir
	}
	if o.Setup != "" {
		setup = o.Setup
	}
	if strings.TrimSpace(setup) == "" {
		setup = ""
	}
	env := maps.Clone(h.Env)
	if env == nil {
		env = map[string]string{}
	}
	maps.Copy(env, o.Env)
	var vars []shscript.Var
	for _, k := range slices.Sorted(maps.Keys(env)) {
		vars = append(vars, shscript.Export(k, env[k]))
	}
	secs := max(int((o.Timeout+time.Second-1)/time.Second), 1)
	vars = append(vars,
		shscript.Set("tfhive_workdir", wd),
		shscript.Set("tfhive_setup", setup),
		shscript.Set("tfhive_setup_line", wording.FirstLine(strings.TrimSpace(setup))),
		shscript.Set("tfhive_t", strconv.Itoa(secs)),
		shscript.Set("tfhive_py", doctorPy),
		shscript.Set("tfhive_mods", shellescape.QuoteCommand(o.Modules)),
	)
	stage := doctorSh.With(vars...)
	return strconv.Itoa(len(stage)) + "\n" + stage
}

// Check checks every host of hosts that answered the probe, in
// parallel and bounded, each over its executor in execs with the
// supervisor command: on a fleet that keeps its probe sessions for it
// (probe.Fleet.KeepSessions(supervisor.Command)), the check costs one
// round trip. A host the probe could not reach is reported with its
// error, unchecked.
func Check(ctx context.Context, hosts []inventory.HostInventory, execs map[string]remote.Executor, o Options) []Host {
	out := make([]Host, len(hosts))
	var g errgroup.Group
	g.SetLimit(max(o.Parallel, 1))
	for i, hi := range hosts {
		out[i] = Host{Host: hi.Name}
		if hi.Err != nil {
			out[i].Error, out[i].Unreachable = "not reached: "+hi.Err.Message, true
			continue
		}
		g.Go(func() error {
			out[i] = checkHost(ctx, hi, execs[hi.Name], o)
			return nil
		})
	}
	g.Wait()
	return out
}

// Bounds on what a host may send: the report is a few hundred bytes,
// anything beyond is not ours to keep.
const (
	maxDoctorOut = 64 << 10
	maxDoctorErr = 4 << 10
	maxValueLen  = 200
)

func checkHost(ctx context.Context, hi inventory.HostInventory, ex remote.Executor, o Options) Host {
	d := Host{Host: hi.Name}
	if o.Code != nil && o.Code.Dirs[hi.Name] != "" {
		d.Code = ptr(o.Code.Hash)
	}
	switch {
	case hi.Driver != "":
		d.Driver = ptr(clip(hi.Driver))
	case hi.DriverError != "":
		d.DriverError = hi.DriverError
	case !hi.NoNvidiaSMI && len(hi.GPUs) == 0 && hi.Err == nil:
		d.NoDevices = true
	}
	if ex == nil {
		d.Error = "no connection"
		return d
	}
	// The host's own timeout stops Python; ours, a little later, stops
	// waiting for a host whose shell itself is stuck.
	limit := o.Timeout + 5*time.Second
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	// A report past its bound stops the check and is not read: a cut
	// one would say less than the host has, as if it were all.
	rctx, stop := context.WithCancel(cctx)
	defer stop()
	stdout, stderr := &remote.Bounded{Max: maxDoctorOut, Over: stop}, &tail{max: maxDoctorErr}
	// remote.Run, not ex.Run: an executor holding a spare session takes
	// it in its Start, which an embedded Run would not call.
	rc, err := remote.Run(rctx, ex, supervisor.Command, strings.NewReader(doctorInput(hi.Host, o)), stdout, stderr)
	switch {
	case stdout.Passed():
		d.Error = (&remote.TooMuchOutputError{Max: maxDoctorOut}).Error() + ": its report is not read"
		return d
	case err != nil && cctx.Err() != nil && ctx.Err() == nil:
		d.Error = fmt.Sprintf("check timed out after %s", limit)
		return d
	case err != nil:
		d.Error = "check failed: " + err.Error()
		return d
	}
	if perr := d.parse(stdout.Bytes(), o); perr != "" {
		d.Error = perr
		if rc != 0 || d.Error == "no report" {
			d.Error += fmt.Sprintf(" (exit %d)", rc)
		}
		if last := lastLine(stderr.String()); last != "" {
			d.Error += ": " + clip(last)
		}
	}
	return d
}

// parse reads the script's report into d and returns why it is
// incomplete, or "". Every value is checked: it comes from the host.
func (d *Host) parse(out []byte, o Options) string {
	if i := bytes.Index(out, []byte("@@tfhive-doctor\n")); i == 0 || i > 0 && out[i-1] == '\n' {
		out = out[i:]
	} else {
		return "no report"
	}
	pyExit := -1
	var report *pythonReport
	for line := range strings.Lines(string(out)) {
		key, val, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		switch key {
		case "error":
			return clip(val)
		case "disk":
			f := strings.Fields(val)
			if len(f) == 2 {
				blocks, err1 := strconv.ParseInt(f[0], 10, 64)
				size, err2 := strconv.ParseInt(f[1], 10, 64)
				if err1 == nil && err2 == nil && blocks >= 0 && size > 0 && blocks <= 1<<62/size {
					d.DiskFreeBytes = ptr(blocks * size)
				}
			}
		case "disk-kib":
			if kib, err := strconv.ParseInt(val, 10, 64); err == nil && kib >= 0 && kib <= 1<<52 {
				d.DiskFreeBytes = ptr(kib << 10)
			}
		case "python":
			if val != "" {
				d.Python.Executable = ptr(clip(val))
			}
		case "@@tfhive-python":
			var r pythonReport
			if json.Unmarshal([]byte(val), &r) == nil {
				report = &r
			}
		case "python-exit":
			pyExit, _ = strconv.Atoi(val)
		}
	}
	d.Modules, d.CUDA, d.CuDNN, d.NCCL = map[string]*string{}, map[string]*string{}, map[string]*string{}, map[string]*string{}
	for _, m := range o.Modules {
		d.Modules[m] = nil
	}
	for _, fw := range DefaultModules {
		d.CUDA[fw], d.CuDNN[fw] = nil, nil
	}
	d.NCCL["torch"] = nil
	if d.Python.Executable == nil {
		return "" // no Python: every module is missing
	}
	if report == nil {
		switch pyExit {
		case -1:
			return "no report"
		case 124, 137:
			return fmt.Sprintf("python timed out after %s importing %s", o.Timeout, strings.Join(o.Modules, ", "))
		}
		return fmt.Sprintf("python failed (exit %d)", pyExit)
	}
	if report.Executable != "" {
		d.Python.Executable = ptr(clip(report.Executable))
	}
	d.Python.Version = value(report.Version)
	for _, m := range o.Modules {
		d.Modules[m] = value(report.Modules[m])
	}
	for _, fw := range DefaultModules {
		d.CUDA[fw], d.CuDNN[fw] = value(report.CUDA[fw]), value(report.CuDNN[fw])
	}
	d.NCCL["torch"] = value(report.NCCL["torch"])
	return ""
}

// pythonReport is doctor.py's line, as it is sent.
type pythonReport struct {
	Executable string             `json:"executable"`
	Version    *string            `json:"version"`
	Modules    map[string]*string `json:"modules"`
	CUDA       map[string]*string `json:"cuda"`
	CuDNN      map[string]*string `json:"cudnn"`
	NCCL       map[string]*string `json:"nccl"`
}

func value(s *string) *string {
	if s == nil || *s == "" {
		return nil
	}
	return ptr(clip(*s))
}

// clip keeps a value from a host to one line of reasonable length.
func clip(s string) string {
	s = wording.FirstLine(strings.ToValidUTF8(s, "�"))
	if utf8.RuneCountInString(s) > maxValueLen {
		s = string([]rune(s)[:maxValueLen]) + "…"
	}
	return s
}

// lastLine is s's last line that is not blank.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}

func ptr[T any](v T) *T { return &v }

// tail keeps the last max bytes written and drops the rest: a host may
// print without end, and the check's own message comes last.
type tail struct {
	buf []byte
	max int
}

func (c *tail) Write(p []byte) (int, error) {
	c.buf = append(c.buf, p...)
	if len(c.buf) > c.max {
		c.buf = c.buf[len(c.buf)-c.max:]
	}
	return len(p), nil
}

func (c *tail) String() string { return string(c.buf) }
