package launcher

import (
	"slices"
	"testing"

	"github.com/tfhive/tfhive/schedule"
)

// A MIG instance is not sampled: its index is tfhive's, which nvidia-smi
// -i would refuse (failing the whole query), and nvidia-smi reports no
// utilisation for it.
func TestSampledGPUs(t *testing.T) {
	for _, tt := range []struct {
		task schedule.Task
		want []int
	}{
		{schedule.Task{GPUs: []int{0, 1}, GPUUUIDs: []string{"GPU-a", "GPU-b"}}, []int{0, 1}},
		{schedule.Task{GPUs: []int{4}, GPUUUIDs: []string{"MIG-0b0d5f6e-2c1a-5b7e-9f43-6a8d21c0e571"}}, nil},
		// A plan without UUIDs (an old one, rerun) samples what it names.
		{schedule.Task{GPUs: []int{2}}, []int{2}},
	} {
		if got := sampledGPUs(tt.task); !slices.Equal(got, tt.want) {
			t.Errorf("sampledGPUs(%v %v) = %v, want %v", tt.task.GPUs, tt.task.GPUUUIDs, got, tt.want)
		}
	}
}
