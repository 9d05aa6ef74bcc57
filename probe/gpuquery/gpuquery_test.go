package gpuquery

import (
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
)

func TestRow(t *testing.T) {
	tests := []struct {
		line string
		want inventory.GPUUse
		ok   bool
	}{
		{"0, GPU-3f1a9c42-7d2e-5b80-c416-9e0d7a2b5f18, 97, 10240", inventory.GPUUse{Index: 0, UUID: "GPU-3f1a9c42-7d2e-5b80-c416-9e0d7a2b5f18", Util: 97, MemMiB: 10240}, true},
		// A UUID tfhive would never put in a claim is dropped, not shown.
		{"1, GPU-\x1b[2J, 5, 1", inventory.GPUUse{Index: 1, Util: 5, MemMiB: 1}, true},
		{"2, MIG-x, [N/A], 3", inventory.GPUUse{}, false},
		{"No devices were found", inventory.GPUUse{}, false},
		{"-1, GPU-a, 1, 1", inventory.GPUUse{}, false},
		{"0, GPU-a, NaN, 1", inventory.GPUUse{}, false},
		{"0, GPU-a, 1, -4", inventory.GPUUse{}, false},
	}
	for _, tt := range tests {
		got, ok := Row(tt.line)
		if ok != tt.ok || got != tt.want {
			t.Errorf("Row(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}
