package lifecycle

import (
	"testing"

	"github.com/tfhive/tfhive/probe/claim"
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

// A torch rank with neither GPU nor MASTER_PORT holds the task claim, so
// that it has a holder on its host (ps, top and kill find it); rank 0
// holds its port alone.
func TestClaimsOfACPURank(t *testing.T) {
	rank1 := schedule.Task{Env: map[string]string{"RANK": "1", "MASTER_PORT": "29500"}}
	if got := Claims(rank1); len(got) != 1 || got[0].Kind != claim.KindTask {
		t.Errorf("rank 1 on CPUs: claims %+v, want the task claim", got)
	}
	rank0 := schedule.Task{Env: map[string]string{"RANK": "0", "MASTER_PORT": "29500"}}
	if got := Claims(rank0); len(got) != 1 || got[0].Kind != "port" || got[0].ID != 29500 {
		t.Errorf("rank 0 on CPUs: claims %+v, want port 29500", got)
	}
}
