package doctor

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/remotetest"
)

// fakePackages writes Python packages that stand in for TensorFlow and
// PyTorch (their version attributes and build info only), one that
// prints while imported, one that fails to import and one that shows an
// environment variable as its version.
func fakePackages(t *testing.T, dir string) {
	t.Helper()
	files := map[string]string{
		"tensorflow/__init__.py":     "__version__ = '2.16.1'\nfrom . import sysconfig\n",
		"tensorflow/sysconfig.py":    "def get_build_info():\n    return {'cuda_version': '12.3', 'cudnn_version': '8', 'is_cuda_build': True}\n",
		"torch/__init__.py":          "__version__ = '2.1.0+cu121'\nfrom . import version\n",
		"torch/version.py":           "cuda = '12.1'\n",
		"torch/backends/__init__.py": "",
		"torch/backends/cudnn.py":    "def version():\n    return 8902\n",
		"torch/cuda/__init__.py":     "",
		"torch/cuda/nccl.py":         "def version():\n    return (2, 18, 1)\n",
		"noisy.py":                   "print('@@tfhive-python {\"version\": \"forged\"}')\n__version__ = '1.0'\n",
		"broken.py":                  "raise RuntimeError('no')\n",
		"fromenv.py":                 "import os\n__version__ = os.environ.get('DOCTOR_TEST_ENV', 'unset')\n",
		"slow.py":                    "import time\ntime.sleep(60)\n",
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func needPython(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import platform; print(platform.python_version())").Output()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is required in CI")
		}
		t.Skip("no python3 here")
	}
	return strings.TrimSpace(string(out))
}

// The check runs here through the local executor, as it would on a
// host: in the workdir, after the setup snippet, with the hosts file's
// env, and reads what Python and the fake frameworks report.
func TestDoctorScript(t *testing.T) {
	version := needPython(t)
	dir := t.TempDir()
	fakePackages(t, filepath.Join(dir, "pkgs"))
	host := func(edit func(*inventory.Host)) []inventory.HostInventory {
		h := inventory.Host{Name: "here", Local: true, Workdir: dir, Setup: "export PYTHONPATH=$PWD/pkgs\necho setup talks",
			Env: map[string]string{"DOCTOR_TEST_ENV": "from the hosts file"}}
		if edit != nil {
			edit(&h)
		}
		return []inventory.HostInventory{{Host: h, Name: h.Name, Driver: "550.54.15"}}
	}
	execs := map[string]remote.Executor{"here": remote.Local{}}
	opts := Options{Modules: Modules([]string{"noisy", "broken", "fromenv", "nosuch", "nosuch.sub"}), Timeout: 20 * time.Second, Parallel: 1}
	ctx := context.Background()

	d := Check(ctx, host(nil), execs, opts)[0]
	if d.Error != "" {
		t.Fatalf("error: %s", d.Error)
	}
	for _, c := range []struct {
		what string
		got  *string
		want string
	}{
		{"python version", d.Python.Version, version},
		{"driver", d.Driver, "550.54.15"},
		{"tensorflow", d.Modules["tensorflow"], "2.16.1"},
		{"torch", d.Modules["torch"], "2.1.0+cu121"},
		{"noisy", d.Modules["noisy"], "1.0"},
		{"broken", d.Modules["broken"], "error: RuntimeError"},
		{"fromenv", d.Modules["fromenv"], "from the hosts file"},
		{"nosuch", d.Modules["nosuch"], "-"},
		{"nosuch.sub", d.Modules["nosuch.sub"], "-"},
		{"tensorflow's CUDA", d.CUDA["tensorflow"], "12.3"},
		{"tensorflow's cuDNN", d.CuDNN["tensorflow"], "8"},
		{"torch's CUDA", d.CUDA["torch"], "12.1"},
		{"torch's cuDNN", d.CuDNN["torch"], "8.9.2"},
		{"torch's NCCL", d.NCCL["torch"], "2.18.1"},
	} {
		if show(c.got) != c.want {
			t.Errorf("%s = %q, want %q", c.what, show(c.got), c.want)
		}
	}
	if d.Python.Executable == nil || !filepath.IsAbs(*d.Python.Executable) {
		t.Errorf("python executable = %q, want an absolute path", show(d.Python.Executable))
	}
	if d.DiskFreeBytes == nil || *d.DiskFreeBytes <= 0 {
		t.Errorf("free disk = %v", d.DiskFreeBytes)
	}

	// --workdir and --setup win over the hosts file's; a workdir that is
	// not there, or a setup that fails, stops the check and says so.
	for _, c := range []struct {
		opts func(*Options)
		want string
	}{
		{func(o *Options) { o.Workdir = filepath.Join(dir, "nowhere") }, "cannot cd to " + filepath.Join(dir, "nowhere")},
		{func(o *Options) { o.Setup = "test -e /nonexistent &&\n  echo never" }, "setup failed: test -e /nonexistent &&"},
	} {
		o := opts
		c.opts(&o)
		if d := Check(ctx, host(nil), execs, o)[0]; d.Error != c.want {
			t.Errorf("error %q, want %q", d.Error, c.want)
		}
	}

	// With a --sync tree, the check goes there unless --workdir says
	// otherwise, and the host's code is the tree's hash.
	tree := filepath.Join(dir, "code", strings.Repeat("ab", 32))
	os.MkdirAll(filepath.Join(tree, "pkgs"), 0o755)
	os.WriteFile(filepath.Join(tree, "pkgs", "fromtree.py"), []byte("__version__ = 'tree'\n"), 0o644)
	o := opts
	o.Modules = []string{"fromtree"}
	o.Code = &Code{Hash: strings.Repeat("ab", 32), Dirs: map[string]string{"here": tree}}
	if d := Check(ctx, host(nil), execs, o)[0]; d.Error != "" || show(d.Modules["fromtree"]) != "tree" || show(d.Code) != o.Code.Hash {
		t.Errorf("in the tree: error %q, fromtree %q, code %q", d.Error, show(d.Modules["fromtree"]), show(d.Code))
	}
	o.Workdir = dir
	if d := Check(ctx, host(nil), execs, o)[0]; d.Error != "" || d.Modules["fromtree"] != nil || show(d.Code) != o.Code.Hash {
		t.Errorf("--workdir over the tree: error %q, fromtree %q, code %q", d.Error, show(d.Modules["fromtree"]), show(d.Code))
	}

	// No Python on the PATH: nothing is installed, and that is no error.
	d = Check(ctx, host(func(h *inventory.Host) { h.Setup = "PATH=/nonexistent" }), execs, opts)[0]
	if d.Error != "" || d.Python.Executable != nil || d.Modules["torch"] != nil || d.DiskFreeBytes == nil {
		t.Errorf("no python: error %q, executable %q, torch %q", d.Error, show(d.Python.Executable), show(d.Modules["torch"]))
	}

	// Python stuck importing is stopped on the host.
	o = opts
	o.Modules, o.Timeout = []string{"slow"}, time.Second
	if d := Check(ctx, host(nil), execs, o)[0]; !strings.HasPrefix(d.Error, "python timed out after 1s importing slow") {
		t.Errorf("a stuck import: error %q", d.Error)
	}

	// A host not reached is not checked.
	away := []inventory.HostInventory{{Name: "away", Err: &inventory.HostError{Kind: inventory.ErrRefused, Message: "connection refused"}}}
	if d := Check(ctx, away, execs, opts)[0]; !d.Unreachable || d.Error != "not reached: connection refused" {
		t.Errorf("unreachable host: %+v", d)
	}
}

// What a host prints is checked, never taken as it comes.
func TestDoctorParse(t *testing.T) {
	opts := Options{Modules: Modules(nil), Timeout: time.Second}
	long := strings.Repeat("x", 1000)
	for _, c := range []struct {
		out, err string
		check    func(Host) bool
	}{
		{"", "no report", nil},
		{"welcome to gpu01\n@@tfhive-doctor\ndisk 10 4096\npython /usr/bin/python3\n@@tfhive-python {\"version\": \"3.11.2\", \"modules\": {\"torch\": \"2.1\"}}\npython-exit 0\n", "",
			func(d Host) bool {
				return show(d.Python.Version) == "3.11.2" && show(d.Modules["torch"]) == "2.1" && *d.DiskFreeBytes == 40960 &&
					show(d.Python.Executable) == "/usr/bin/python3"
			}},
		{"banner @@tfhive-doctor\n", "no report", nil},
		{"@@tfhive-doctor\ndisk -1 4096\ndisk-kib lots\npython /p\n@@tfhive-python {\"version\": \"" + long + "\\nforged\"}\n", "",
			func(d Host) bool {
				return d.DiskFreeBytes == nil && len(*d.Python.Version) < 300 && !strings.Contains(*d.Python.Version, "forged")
			}},
		{"@@tfhive-doctor\ndisk 9223372036854775807 4096\npython /p\n@@tfhive-python not json\npython-exit 1\n", "python failed (exit 1)",
			func(d Host) bool { return d.DiskFreeBytes == nil }},
		{"@@tfhive-doctor\ndisk-kib 100\npython /p\npython-exit 124\n", "python timed out after 1s importing tensorflow, torch",
			func(d Host) bool { return *d.DiskFreeBytes == 102400 }},
		{"@@tfhive-doctor\nerror setup failed: source venv/bin/activate\n", "setup failed: source venv/bin/activate", nil},
	} {
		var d Host
		if got := d.parse([]byte(c.out), opts); got != c.err || c.check != nil && !c.check(d) {
			t.Errorf("parse(%.60q) = %q, want %q; %+v", c.out, got, c.err, d)
		}
	}
}

func TestValidModule(t *testing.T) {
	for name, want := range map[string]bool{
		"numpy": true, "torch.distributed": true, "_private": true, "a1.b_2": true,
		"": false, "1abc": false, "a..b": false, ".a": false, "a.": false, "os;rm -rf /": false,
		"$(id)": false, "-c": false, "a b": false, "naïve": false, strings.Repeat("a", 201): false,
	} {
		if got := ValidModule(name); got != want {
			t.Errorf("ValidModule(%q) = %v, want %v", name, got, want)
		}
	}
}

// A host whose check says more than maxDoctorOut is stopped there, and
// its report is not read: the host's check says why.
func TestDoctorReportPastItsBound(t *testing.T) {
	f := &remotetest.Fake{}
	f.Handle(remotetest.Any, func(p *remotetest.Proc) int {
		io.WriteString(p.Stdout, "@@tfhive-doctor\npython /usr/bin/python3\n")
		if p.Flood(p.Stdout, 64<<20) < 0 {
			t.Error("the flooding check was not stopped")
		}
		return 0
	})
	his := []inventory.HostInventory{{Host: inventory.Host{Name: "h1"}, Name: "h1"}}
	d := Check(context.Background(), his, map[string]remote.Executor{"h1": f}, Options{Timeout: 20 * time.Second, Parallel: 1})[0]
	if want := "its answer passed 64 KiB: its report is not read"; d.Error != want || d.Python.Executable != nil {
		t.Errorf("error %q, python %v; want %q, none", d.Error, d.Python.Executable, want)
	}
}
