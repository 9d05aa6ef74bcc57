package lifecycle

import (
	"testing"

	"github.com/tfhive/tfhive/schedule"
)

// A GPU UUID becomes a lock file name on the host: one that could leave
// the claims directory is not used.
func TestClaimsForKeepsUUIDsInTheirDirectory(t *testing.T) {
	got := Claims(schedule.Task{GPUs: []int{0, 1}, GPUUUIDs: []string{"GPU-ab-12", "GPU-../../etc/x"}})
	if len(got) != 2 || got[0].UUID != "GPU-ab-12" || got[1].UUID != "" || got[1].ID != 1 {
		t.Errorf("claims %+v", got)
	}
}
