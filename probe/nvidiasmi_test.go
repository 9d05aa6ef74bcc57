package probe

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/probe/testkit"
)

const testdataDir = "../testdata"

// checkGolden compares got, as indented JSON, with the .json file next to
// input (`go test ./probe -run Golden -update` rewrites them). The JSON is
// reviewed by people, so it is what the other packages will see, not a Go
// dump.
func checkGolden(t *testing.T, input string, got any) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep "R&D" readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(got); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, strings.TrimSuffix(input, filepath.Ext(input))+".json", buf.Bytes())
}

func readTestdata(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdataDir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ip(n int) *int { return &n }

// smiExitCodes are the exit statuses real nvidia-smi returns with each
// captured text (documented return values: 6 = "A query to find an object
// was unsuccessful", 9 = driver not loaded, 18 = library/driver mismatch).
var smiExitCodes = map[string]int{
	"driver-failed.txt":    9,
	"no-devices.txt":       6,
	"version-mismatch.txt": 18,
}

func TestGoldenNvidiaSMI(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testdataDir, "nvidia-smi", "*"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range files {
		name := filepath.Base(path)
		code, known := smiExitCodes[name]
		switch {
		case strings.HasSuffix(name, ".xml"):
			code = 0
		case strings.HasSuffix(name, ".txt"):
			if !known {
				t.Errorf("%s: add its nvidia-smi exit status to smiExitCodes", name)
				continue
			}
		default:
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// A capture of a MIG host has `nvidia-smi -L`'s beside it, as
			// NAME.list, which the probe script prints after it.
			if list, err := os.ReadFile(strings.TrimSuffix(path, ".xml") + ".list"); err == nil {
				data = append(append(data, "\n"+markMIG+"\n"...), list...)
			}
			checkGolden(t, path, parseSMI(code, data, 20*time.Second))
		})
	}
	if n < 7 {
		t.Errorf("found %d golden inputs under testdata/nvidia-smi, want at least 7", n)
	}
}

func TestParseNvidiaSMIXMLGoldens(t *testing.T) {
	const (
		a100   = "NVIDIA A100-SXM4-40GB"
		a100u0 = "GPU-8d4f3c2a-6b1e-4f0a-9c7d-2e5b8a1f6c30"
		a100u1 = "GPU-b2e71d09-3a5c-4e86-8f14-7c9d0e6a2b45"
		rtx    = "NVIDIA GeForce RTX 3090"
		rtx60  = "NVIDIA GeForce RTX 3060"
	)
	tests := []struct {
		file   string
		driver string
		gpus   []inventory.GPU
	}{
		{
			file:   "idle-2gpu.xml",
			driver: "535.129.03",
			gpus: []inventory.GPU{
				{Index: 0, UUID: a100u0, Name: a100, MemoryUsedMiB: ip(4), MemoryTotalMiB: ip(40960), UtilizationPct: ip(0), Processes: []inventory.Process{}},
				{Index: 1, UUID: a100u1, Name: a100, MemoryUsedMiB: ip(4), MemoryTotalMiB: ip(40960), UtilizationPct: ip(0), Processes: []inventory.Process{}},
			},
		},
		{
			file:   "busy-4gpu.xml",
			driver: "550.54.14",
			gpus: []inventory.GPU{
				{Index: 0, UUID: "GPU-3f1a9c42-7d2e-5b80-c416-9e0d7a2b5f18", Name: rtx, MemoryUsedMiB: ip(1), MemoryTotalMiB: ip(24576), UtilizationPct: ip(0), Processes: []inventory.Process{}},
				{Index: 1, UUID: "GPU-c86b2e07-41f9-d35a-0b7e-2a94f6c1d803", Name: rtx, MemoryUsedMiB: ip(10925), MemoryTotalMiB: ip(24576), UtilizationPct: ip(62), Processes: []inventory.Process{
					{PID: 48213, Command: "python", UsedMemoryMiB: ip(10910)},
				}},
				{Index: 2, UUID: "GPU-5e07d4b1-92c6-8fa3-6d21-b0c9e84a7f56", Name: rtx, MemoryUsedMiB: ip(17713), MemoryTotalMiB: ip(24576), UtilizationPct: ip(48), Processes: []inventory.Process{
					{PID: 51877, Command: "/opt/conda/bin/python3.11", UsedMemoryMiB: ip(6284)},
					{PID: 51902, Command: "ray::RolloutWorker.sample(batch=512, envs=8) [R&D]", UsedMemoryMiB: ip(11414)},
				}},
				// Busy with no process listed: its owner is in another PID
				// namespace (container), which nvidia-smi does not show.
				{Index: 3, UUID: "GPU-a2947c6e-08bd-1f53-e7a9-4c6b3d10e2f9", Name: rtx, MemoryUsedMiB: ip(18433), MemoryTotalMiB: ip(24576), UtilizationPct: ip(85), Processes: []inventory.Process{}},
			},
		},
		{
			file:   "na-fields.xml",
			driver: "535.183.01",
			gpus: []inventory.GPU{
				{Index: 0, UUID: "GPU-71c0e5d8-2f4a-9b36-1d8e-6a5f0c2b9e47", Name: rtx60, MemoryUsedMiB: nil, MemoryTotalMiB: ip(12288), UtilizationPct: nil, Processes: []inventory.Process{
					{PID: 2114, Command: "/usr/lib/xorg/Xorg", UsedMemoryMiB: nil},
					{PID: 90412, Command: "/usr/bin/gnome-shell", UsedMemoryMiB: nil},
				}},
				{Index: 1, UUID: "GPU-0d93b7a1-c64e-28f5-a0b7-93e1d4c56f82", Name: rtx60, MemoryUsedMiB: nil, MemoryTotalMiB: ip(12288), UtilizationPct: nil, Processes: []inventory.Process{
					// nvidia-smi pads some names with spaces; trimmed.
					{PID: 90533, Command: "TS-526 render, pass 2 – «final»", UsedMemoryMiB: nil},
				}},
			},
		},
		{
			file:   "mig.xml",
			driver: "535.129.03",
			gpus: []inventory.GPU{
				// The process of GPU instance 1 is its MIG device's: the
				// GPU itself keeps none.
				{Index: 0, UUID: a100u0, Name: a100, MemoryUsedMiB: ip(9813), MemoryTotalMiB: ip(40960), UtilizationPct: nil, MIG: true, Processes: []inventory.Process{}},
				{Index: 1, UUID: a100u1, Name: a100, MemoryUsedMiB: ip(31221), MemoryTotalMiB: ip(40960), UtilizationPct: ip(97), Processes: []inventory.Process{
					{PID: 73544, Command: "/usr/bin/python3", UsedMemoryMiB: ip(31206)},
				}},
				// Its MIG devices follow the physical GPUs, without UUIDs
				// (-q -x has none).
				{Index: 2, Name: a100, MemoryUsedMiB: ip(9777), MemoryTotalMiB: ip(19968), Processes: []inventory.Process{
					{PID: 73310, Command: "/home/李雷/venv/bin/python3", UsedMemoryMiB: ip(9764)},
				}, MIGInstance: &inventory.MIGInstance{Parent: 0, Device: 0, GPUInstanceID: 1, Unusable: migNoUUID}},
				{Index: 3, Name: a100, MemoryUsedMiB: ip(13), MemoryTotalMiB: ip(19968), Processes: []inventory.Process{},
					MIGInstance: &inventory.MIGInstance{Parent: 0, Device: 1, GPUInstanceID: 2, Unusable: migNoUUID}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			v, gpus, err := parseNvidiaSMIXML(readTestdata(t, "nvidia-smi/"+tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if v.Driver != tt.driver {
				t.Errorf("driver = %q, want %q", v.Driver, tt.driver)
			}
			assertGPUs(t, gpus, tt.gpus)
		})
	}
}

func assertGPUs(t *testing.T, got, want []inventory.GPU) {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return
	}
	g, _ := json.MarshalIndent(got, "", "  ")
	w, _ := json.MarshalIndent(want, "", "  ")
	t.Errorf("GPUs differ:\n--- got\n%s\n--- want\n%s", g, w)
}

func TestParseSMIExitStatuses(t *testing.T) {
	idle := readTestdata(t, "nvidia-smi/idle-2gpu.xml")
	tests := []struct {
		name   string
		code   int
		output string
		want   smiFacts
	}{
		{"not installed", 127, "sh: 1: nvidia-smi: not found\n", smiFacts{NoNvidiaSMI: true}},
		{"not installed, silent", 127, "", smiFacts{NoNvidiaSMI: true}},
		{"installed but a library is missing", 127,
			"nvidia-smi: error while loading shared libraries: libnvidia-ml.so.1: cannot open shared object file: No such file or directory\n",
			smiFacts{DriverError: "nvidia-smi: error while loading shared libraries: libnvidia-ml.so.1: cannot open shared object file: No such file or directory (exit 127)"}},
		{"timeout TERM", 124, "", smiFacts{DriverError: "nvidia-smi timed out after 20s"}},
		{"timeout KILL with partial output", 137, "<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n", smiFacts{DriverError: "nvidia-smi timed out after 20s"}},
		{"driver not loaded", 9, string(readTestdata(t, "nvidia-smi/driver-failed.txt")),
			smiFacts{DriverError: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running. (exit 9)"}},
		{"version mismatch", 18, "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.120\n",
			smiFacts{DriverError: "Failed to initialize NVML: Driver/library version mismatch (exit 18)"}},
		{"blank lines before the message", 255, "\n  \n\tUnable to determine the device handle for GPU0000:41:00.0: Unknown Error\n",
			smiFacts{DriverError: "Unable to determine the device handle for GPU0000:41:00.0: Unknown Error (exit 255)"}},
		{"no output", 15, "", smiFacts{DriverError: "nvidia-smi failed without output (exit 15)"}},
		{"no devices", 6, "No devices were found\n", smiFacts{GPUs: []inventory.GPU{}}},
		{"no devices, exit 0", 0, "No devices were found\n", smiFacts{GPUs: []inventory.GPU{}}},
		{"zero GPUs in XML", 0, "<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n\t<driver_version>550.54.14</driver_version>\n\t<attached_gpus>0</attached_gpus>\n</nvidia_smi_log>\n",
			smiFacts{Driver: "550.54.14", GPUs: []inventory.GPU{}}},
		{"unparsable", 0, "Segmentation fault\n",
			smiFacts{DriverError: `cannot parse nvidia-smi output: no <nvidia_smi_log> element; output begins "Segmentation fault"`}},
		{"empty", 0, "", smiFacts{DriverError: "cannot parse nvidia-smi output: empty output"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseSMI(tt.code, []byte(tt.output), 20*time.Second)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseSMI(%d, %q) = %+v, want %+v", tt.code, tt.output, got, tt.want)
			}
		})
	}

	t.Run("success", func(t *testing.T) {
		got := parseSMI(0, idle, 20*time.Second)
		if got.Driver != "535.129.03" || len(got.GPUs) != 2 || got.DriverError != "" || got.NoNvidiaSMI {
			t.Errorf("parseSMI(0, idle-2gpu.xml) = %+v", got)
		}
	})
	t.Run("long message is cut", func(t *testing.T) {
		got := parseSMI(255, []byte(strings.Repeat("x", 5000)), time.Second)
		if n := len([]rune(got.DriverError)); n > maxDriverErrorLen+20 {
			t.Errorf("DriverError is %d runes long", n)
		}
	})
}

// minimalSMI wraps one <gpu> body in the envelope real output has.
func minimalSMI(gpuBody string) string {
	return "<?xml version=\"1.0\" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM \"nvsmi_device_v12.dtd\">\n<nvidia_smi_log>\n" +
		"\t<driver_version>550.54.14</driver_version>\n\t<gpu id=\"00000000:01:00.0\">\n" + gpuBody + "\n\t</gpu>\n\n</nvidia_smi_log>\n"
}

func procXML(name string) string {
	return "<processes><process_info><pid>42</pid><type>C</type><process_name>" + name +
		"</process_name><used_memory>100 MiB</used_memory></process_info></processes>"
}

func TestParseNvidiaSMIXMLRobustness(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []inventory.GPU // compared when wantErr is false
	}{
		{
			name: "stderr warning before the XML and a shell message after it",
			in: "WARNING: infoROM is corrupted at gpu 0000:01:00.0\n" +
				minimalSMI("<uuid>GPU-x</uuid><fb_memory_usage><used>5 MiB</used><total>8192 MiB</total></fb_memory_usage>") +
				"bash: warning: setlocale: LC_ALL: cannot change locale (en_US.UTF-8)\n",
			want: []inventory.GPU{{UUID: "GPU-x", MemoryUsedMiB: ip(5), MemoryTotalMiB: ip(8192), Processes: []inventory.Process{}}},
		},
		{
			name: "whitespace around values",
			in: minimalSMI("<product_name>\n\t\tTesla T4 \n</product_name><uuid> GPU-t4 </uuid>" +
				"<utilization><gpu_util>\n 7 %\n</gpu_util></utilization><mig_mode><current_mig> Enabled </current_mig></mig_mode>"),
			want: []inventory.GPU{{UUID: "GPU-t4", Name: "Tesla T4", UtilizationPct: ip(7), MIG: true, Processes: []inventory.Process{}}},
		},
		{
			name: "escaped ampersand, commas, unicode",
			in:   minimalSMI(procXML("/srv/R&amp;D/run.sh --a=1,2, b ünï ✓")),
			want: []inventory.GPU{{Processes: []inventory.Process{{PID: 42, Command: "/srv/R&D/run.sh --a=1,2, b ünï ✓", UsedMemoryMiB: ip(100)}}}},
		},
		{
			name: "unescaped markup characters in a process name",
			in:   minimalSMI(procXML("sh -c train.py < in.txt > out.log && curl 'http://h/?a=1&b=2'")),
			want: []inventory.GPU{{Processes: []inventory.Process{{PID: 42, Command: "sh -c train.py < in.txt > out.log && curl 'http://h/?a=1&b=2'", UsedMemoryMiB: ip(100)}}}},
		},
		{
			// Seen in the wild when nvidia-smi runs concurrently with itself.
			name: "invalid UTF-8 and control bytes in a process name",
			in:   minimalSMI(procXML("py\xff\xfethon\x01")),
			want: []inventory.GPU{{Processes: []inventory.Process{{PID: 42, Command: "py\uFFFDthon\uFFFD", UsedMemoryMiB: ip(100)}}}},
		},
		{
			// Containers: nvidia-smi cannot read the names of host pids.
			name: "empty process name",
			in:   minimalSMI(procXML("")),
			want: []inventory.GPU{{Processes: []inventory.Process{{PID: 42, Command: "", UsedMemoryMiB: ip(100)}}}},
		},
		{
			name: "declared non-UTF-8 encoding",
			in:   strings.Replace(minimalSMI("<uuid>GPU-e</uuid>"), `version="1.0" ?>`, `version="1.0" encoding="ISO-8859-1"?>`, 1),
			want: []inventory.GPU{{UUID: "GPU-e", Processes: []inventory.Process{}}},
		},
		{
			name: "self-closing processes and N/A spellings",
			in: minimalSMI("<fb_memory_usage><total>[N/A]</total><used>Unknown Error</used></fb_memory_usage>" +
				"<utilization><gpu_util>[Not Supported]</gpu_util></utilization><processes />"),
			want: []inventory.GPU{{Processes: []inventory.Process{}}},
		},
		{
			name: "processes N/A",
			in:   minimalSMI("<processes>N/A</processes>"),
			want: []inventory.GPU{{Processes: []inventory.Process{}}},
		},
		{
			name: "unreadable pid kept as 0",
			in:   minimalSMI("<processes><process_info><pid>N/A</pid><type>G</type><process_name>Xorg</process_name><used_memory>N/A</used_memory></process_info></processes>"),
			want: []inventory.GPU{{Processes: []inventory.Process{{PID: 0, Command: "Xorg"}}}},
		},
		{
			name: "graphics and MPS processes are kept",
			in: minimalSMI("<processes>" +
				"<process_info><pid>1</pid><type>G</type><process_name>Xorg</process_name><used_memory>20 MiB</used_memory></process_info>" +
				"<process_info><pid>2</pid><type>C+G</type><process_name>blender</process_name><used_memory>2 GiB</used_memory></process_info>" +
				"<process_info><pid>3</pid><type>M+C</type><process_name>mps</process_name><used_memory>30 MiB</used_memory></process_info>" +
				"</processes>"),
			want: []inventory.GPU{{Processes: []inventory.Process{
				{PID: 1, Command: "Xorg", UsedMemoryMiB: ip(20)},
				{PID: 2, Command: "blender", UsedMemoryMiB: ip(2048)},
				{PID: 3, Command: "mps", UsedMemoryMiB: ip(30)},
			}}},
		},
		{
			name: "old drivers: memory_usage and compute_processes",
			in: minimalSMI("<memory_usage><total>4095 MiB</total><used>2000 MiB</used></memory_usage>" +
				"<compute_processes><process_info><pid>7</pid><process_name>./a.out</process_name><used_memory>1990 MiB</used_memory></process_info></compute_processes>"),
			want: []inventory.GPU{{MemoryUsedMiB: ip(2000), MemoryTotalMiB: ip(4095), Processes: []inventory.Process{{PID: 7, Command: "./a.out", UsedMemoryMiB: ip(1990)}}}},
		},
		{
			name: "unknown elements and MIG disabled",
			in:   minimalSMI("<future_thing><x>1</x></future_thing><mig_mode><current_mig>Disabled</current_mig></mig_mode><uuid>GPU-f</uuid>"),
			want: []inventory.GPU{{UUID: "GPU-f", Processes: []inventory.Process{}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, gpus, err := parseNvidiaSMIXML([]byte(tt.in))
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if v.Driver != "550.54.14" {
				t.Errorf("driver = %q", v.Driver)
			}
			assertGPUs(t, gpus, tt.want)
		})
	}
}

func TestParseNvidiaSMIXMLErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":           "",
		"plain text":      "Failed to initialize NVML: Unknown Error\n",
		"truncated":       "<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n\t<gpu id=\"0\">\n\t\t<uuid>GPU-",
		"mismatched tags": "<nvidia_smi_log><gpu><uuid>x</gpu></uuid></nvidia_smi_log>",
	} {
		t.Run(name, func(t *testing.T) {
			if _, gpus, err := parseNvidiaSMIXML([]byte(in)); err == nil {
				t.Errorf("no error; gpus = %+v", gpus)
			}
		})
	}
}

func FuzzParseNvidiaSMIXML(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(testdataDir, "nvidia-smi", "*"))
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil || strings.HasSuffix(path, ".json") {
			continue
		}
		// The hundreds of clock lines add nothing to explore and make the
		// fuzzer spend its time minimising 100 KB inputs.
		var seed []byte
		for line := range bytes.Lines(b) {
			if !bytes.Contains(line, []byte("supported_graphics_clock")) {
				seed = append(seed, line...)
			}
		}
		f.Add(seed)
	}
	f.Add([]byte(minimalSMI(procXML("a < b & c"))))
	f.Add([]byte("<nvidia_smi_log><gpu><process_name>"))
	f.Add([]byte("<nvidia_smi_log><gpu><fb_memory_usage><used>-1 MiB</used></fb_memory_usage></gpu></nvidia_smi_log>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, gpus, err := parseNvidiaSMIXML(data)
		if err != nil {
			return
		}
		for i, g := range gpus {
			if g.Index != i {
				t.Fatalf("gpu %d has Index %d", i, g.Index)
			}
			if g.Processes == nil {
				t.Fatalf("gpu %d: nil Processes", i)
			}
			for _, p := range []*int{g.MemoryUsedMiB, g.MemoryTotalMiB, g.UtilizationPct} {
				if p != nil && *p < 0 {
					t.Fatalf("gpu %d: negative value %d", i, *p)
				}
			}
		}
		// parseSMI must not panic on the same bytes under any status.
		for _, code := range []int{0, 9} {
			parseSMI(code, data, time.Second)
		}
	})
}
