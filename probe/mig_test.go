package probe

import (
	"strings"
	"testing"
	"time"
)

// The real A100 capture with its -L lines is a golden file
// (testdata/nvidia-smi/mig-a100-real.*); these are the cases around it.
func TestMIGList(t *testing.T) {
	xml := readTestdata(t, "nvidia-smi/mig-a100-real.xml")
	const gpu = "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-513536b6-7d19-9063-b049-1e69664bb298)\n"
	tests := []struct {
		name string
		list string
		// want is each instance's UUID and why it is unusable.
		want [][2]string
	}{
		{"no -L output", "", [][2]string{{"", migNoUUID}, {"", migNoUUID}, {"", migNoUUID}, {"", migNoUUID}}},
		{"pre-R470 names", gpu + "  MIG 1g.20gb Device 0: (UUID: MIG-GPU-513536b6-7d19-9063-b049-1e69664bb298/3/0)\n" +
			"  MIG 1g.20gb Device 2: (UUID: MIG-ab)\n",
			[][2]string{
				{"MIG-GPU-513536b6-7d19-9063-b049-1e69664bb298/3/0", strings.Replace(migOldUUID, "%s", "MIG-GPU-513536b6-7d19-9063-b049-1e69664bb298/3/0", 1)},
				{"", migNoUUID}, {"MIG-ab", ""}, {"", migNoUUID}}},
		{"lines under another GPU's UUID are not this GPU's", "GPU 0: X (UUID: GPU-other)\n  MIG 1g.20gb Device 0: (UUID: MIG-x)\n",
			[][2]string{{"", migNoUUID}, {"", migNoUUID}, {"", migNoUUID}, {"", migNoUUID}}},
		{"an error text instead", "Failed to initialize NVML: Unknown Error\n",
			[][2]string{{"", migNoUUID}, {"", migNoUUID}, {"", migNoUUID}, {"", migNoUUID}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := append([]byte{}, xml...)
			out = append(out, "\n"+markMIG+"\n"+tt.list...)
			smi := parseSMI(0, out, time.Second)
			if smi.DriverError != "" || len(smi.GPUs) != 5 {
				t.Fatalf("parseSMI: %q, %d GPUs; want 5 (1 GPU, 4 instances)", smi.DriverError, len(smi.GPUs))
			}
			for k, w := range tt.want {
				g := smi.GPUs[1+k]
				if g.MIGInstance == nil || g.Index != 1+k || g.MIGInstance.Parent != 0 || g.MIGInstance.Device != k {
					t.Fatalf("GPU %d = %+v, want MIG device %d of GPU 0", 1+k, g, k)
				}
				if g.UUID != w[0] || g.MIGInstance.Unusable != w[1] {
					t.Errorf("device %d: UUID %q unusable %q, want %q %q", k, g.UUID, g.MIGInstance.Unusable, w[0], w[1])
				}
			}
		})
	}
}

func TestCutMIGList(t *testing.T) {
	for _, tt := range []struct{ in, report, list string }{
		{"<x/>", "<x/>", ""},
		{"<x/>\n@@tfhive-mig\nGPU 0: a\n", "<x/>", "GPU 0: a\n"},
		{"@@tfhive-mig\nGPU 0: a", "", "GPU 0: a"},
		// A process name may say anything; the script's marker is the last.
		{"<p>\n@@tfhive-mig\n</p>\n@@tfhive-mig\nGPU 0: a", "<p>\n@@tfhive-mig\n</p>", "GPU 0: a"},
	} {
		r, l := cutMIGList([]byte(tt.in))
		if string(r) != tt.report || string(l) != tt.list {
			t.Errorf("cutMIGList(%q) = %q, %q; want %q, %q", tt.in, r, l, tt.report, tt.list)
		}
	}
}
