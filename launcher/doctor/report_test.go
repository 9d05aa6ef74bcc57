package doctor

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/testkit"
)

const doctorGoldenDir = "testdata/doctor"

func strs(vs ...string) []*string {
	out := make([]*string, len(vs))
	for i, v := range vs {
		if v != "-" {
			out[i] = ptr(v)
		}
	}
	return out
}

// The value most hosts have wins, "none" counting as a value; a tie
// for the most has no majority.
func TestMajority(t *testing.T) {
	for _, tt := range []struct {
		values []string // "-" is nil
		want   string   // "-" is nil; "tie" is no majority
	}{
		{nil, "-"},
		{[]string{"a"}, "a"},
		{[]string{"a", "a", "b"}, "a"},
		{[]string{"b", "a", "a"}, "a"},
		{[]string{"a", "b"}, "tie"},
		{[]string{"-", "-", "a"}, "-"},
		{[]string{"a", "-", "a"}, "a"},
		{[]string{"a", "b", "c"}, "tie"},
		{[]string{"a", "a", "b", "b", "c"}, "tie"},
		{[]string{"a", "a", "b", "c", "d"}, "a"}, // the most, not more than half
	} {
		got, ok := majority(strs(tt.values...))
		switch {
		case tt.want == "tie" && ok:
			t.Errorf("majority(%q) = %v, want none", tt.values, show(got))
		case tt.want != "tie" && (!ok || show(got) != tt.want):
			t.Errorf("majority(%q) = %v (%v), want %q", tt.values, show(got), ok, tt.want)
		}
	}
}

func show(v *string) string {
	if v == nil {
		return "-"
	}
	return *v
}

// doctorHost is a host that reports every item, as Python 3.11.2 with
// torch 2.1.0 and no tensorflow.
func doctorHost(name string, edit func(*Host)) Host {
	d := Host{
		Host:          name,
		Python:        Python{Executable: ptr("/usr/bin/python3"), Version: ptr("3.11.2")},
		Modules:       map[string]*string{"tensorflow": nil, "torch": ptr("2.1.0"), "numpy": ptr("1.26.4")},
		Driver:        ptr("550.54.15"),
		CUDA:          map[string]*string{"tensorflow": nil, "torch": ptr("12.1")},
		CuDNN:         map[string]*string{"tensorflow": nil, "torch": ptr("8.9.2")},
		NCCL:          map[string]*string{"torch": ptr("2.18.1")},
		DiskFreeBytes: ptr(int64(120 << 30)),
	}
	if edit != nil {
		edit(&d)
	}
	return d
}

var doctorMods = Modules([]string{"numpy"})

func TestCompareDoctorMarksTheMinority(t *testing.T) {
	hosts := []Host{
		doctorHost("gpu01", nil),
		doctorHost("gpu02", func(d *Host) {
			d.Python.Version = ptr("3.12.1")
			d.DiskFreeBytes = ptr(int64(3 << 30)) // never compared
		}),
		doctorHost("gpu03", func(d *Host) { d.Modules["numpy"] = nil }),
		doctorHost("gpu04", nil),
	}
	r := Compare(hosts, doctorMods)
	if !r.Differs {
		t.Error("Differs = false")
	}
	for _, tt := range []struct {
		host    string
		differs []string
	}{{"gpu01", nil}, {"gpu02", []string{"python.version"}}, {"gpu03", []string{"modules.numpy"}}, {"gpu04", nil}} {
		i := slices.IndexFunc(r.Hosts, func(d Host) bool { return d.Host == tt.host })
		if got := r.Hosts[i].Differs; !slices.Equal(got, tt.differs) || got == nil {
			t.Errorf("%s differs in %q, want %q", tt.host, got, tt.differs)
		}
	}
	if v := r.Majority["python.version"]; v == nil || *v != "3.11.2" {
		t.Errorf("majority python.version = %v", show(v))
	}
	if v, ok := r.Majority["modules.tensorflow"]; !ok || v != nil {
		t.Errorf("majority modules.tensorflow = %v, %v; want null (not installed)", show(v), ok)
	}
	if _, ok := r.Majority["disk"]; ok {
		t.Error("free disk was compared")
	}
	want := []Problem{
		{"gpu02", "python version", "gpu02: python version 3.12.1, where 3 of 4 hosts have 3.11.2"},
		{"gpu03", "numpy", "gpu03: numpy (not installed), where 3 of 4 hosts have 1.26.4"},
	}
	if got := r.Problems(); !slices.Equal(got, want) {
		t.Errorf("Problems() = %q\nwant %q", got, want)
	}
}

// Hosts not reached take no part and differ in nothing; a host reached
// whose check failed differs. Two hosts that disagree both differ.
func TestCompareDoctorErrorsAndTies(t *testing.T) {
	all := Compare([]Host{doctorHost("a", nil), doctorHost("b", nil)}, doctorMods)
	if all.Differs || len(all.Problems()) != 0 {
		t.Errorf("equal hosts differ: %q", all.Problems())
	}
	away := Host{Host: "c", Error: "not reached: connection refused", Unreachable: true}
	r := Compare([]Host{doctorHost("a", nil), doctorHost("b", nil), away}, doctorMods)
	if r.Differs || len(r.Hosts[2].Differs) != 0 {
		t.Errorf("a host not reached made the report differ: %q", r.Problems())
	}
	failed := Host{Host: "c", Error: "setup failed: source venv/bin/activate"}
	r = Compare([]Host{doctorHost("a", nil), doctorHost("b", nil), failed}, doctorMods)
	if want := []Problem{{"c", "check", "c: setup failed: source venv/bin/activate"}}; !r.Differs || !slices.Equal(r.Problems(), want) {
		t.Errorf("a failed check: differs %v, %q", r.Differs, r.Problems())
	}
	r = Compare([]Host{doctorHost("a", nil), doctorHost("b", func(d *Host) { d.Driver = nil })}, doctorMods)
	want := []Problem{
		{"a", "NVIDIA driver", "a: NVIDIA driver 550.54.15, and no value is on more hosts than every other"},
		{"b", "NVIDIA driver", "b: NVIDIA driver (no nvidia-smi), and no value is on more hosts than every other"},
	}
	if _, ok := r.Majority["driver"]; ok || !slices.Equal(r.Problems(), want) {
		t.Errorf("a tie: majority %v, problems %q", r.Majority["driver"], r.Problems())
	}
	// nvidia-smi there, no device: status's words, not "no nvidia-smi".
	r = Compare([]Host{doctorHost("a", nil), doctorHost("b", func(d *Host) { d.Driver, d.NoDevices = nil, true })}, doctorMods)
	if p := r.Problems(); len(p) != 2 || p[1].Text != "b: NVIDIA driver nvidia-smi found no devices, and no value is on more hosts than every other" {
		t.Errorf("no devices: %q", p)
	}
}

func TestWriteDoctor(t *testing.T) {
	hosts := []Host{
		doctorHost("gpu01", nil),
		doctorHost("gpu02", func(d *Host) {
			d.Python.Version = ptr("3.12.1")
			d.DiskFreeBytes = ptr(int64(9<<30 + 512<<20))
		}),
		doctorHost("gpu03", nil),
		{Host: "gpu04", Driver: ptr("550.54.15"), Error: "setup failed: source ~/venv/bin/activate"},
		{Host: "gpu05", Error: "not reached: connect timed out after 10s", Unreachable: true},
	}
	r := Compare(hosts, doctorMods)
	var txt, js bytes.Buffer
	if err := Write(&txt, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, filepath.Join(doctorGoldenDir, "report.txt"), txt.Bytes())
	testkit.Golden(t, filepath.Join(doctorGoldenDir, "report.json"), js.Bytes())

	// No framework with CUDA anywhere, no code synced: those columns go.
	plain := func(d *Host) {
		d.CUDA, d.CuDNN, d.NCCL = map[string]*string{}, map[string]*string{}, map[string]*string{}
	}
	txt.Reset()
	Write(&txt, Compare([]Host{doctorHost("a", plain), doctorHost("b", plain)}, doctorMods))
	testkit.Golden(t, filepath.Join(doctorGoldenDir, "plain.txt"), txt.Bytes())

	// The code hash: compared whole, shown short in the table and the
	// messages, whole in the JSON.
	code := func(h string) func(*Host) {
		return func(d *Host) { plain(d); d.Code = ptr(strings.Repeat(h, 32)) }
	}
	r = Compare([]Host{doctorHost("a", code("ab")), doctorHost("b", code("ab")), doctorHost("c", code("cd"))}, doctorMods)
	txt.Reset()
	Write(&txt, r)
	testkit.Golden(t, filepath.Join(doctorGoldenDir, "code.txt"), txt.Bytes())
	want := []Problem{{Host: "c", Item: "code hash", Text: "c: code hash cdcdcdcdcdcd, where 2 of 3 hosts have abababababab"}}
	if !slices.Equal(r.Problems(), want) || *r.Majority["code"] != strings.Repeat("ab", 32) {
		t.Errorf("problems %q, majority %q", r.Problems(), *r.Majority["code"])
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 1023: "1023B", 1024: "1.0K", 9<<30 + 512<<20: "9.5G", 120 << 30: "120G", 3 << 40: "3.0T"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
