// Package gpuquery reads the one nvidia-smi CSV query tfhive makes while
// runs run: --query-gpu=index,uuid,utilization.gpu,memory.used, per
// host, for run --sample (launcher/supervisor/scripts/sample.sh) and tfhive ps
// (probe/scripts/runs.sh). It may import probe/inventory and probe/claim
// only: launcher and probe both read its rows.
package gpuquery

import (
	"math"
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/probe/claim"
	"github.com/tfhive/tfhive/probe/inventory"
)

// Row reads one line of nvidia-smi --query-gpu=index,uuid,
// utilization.gpu,memory.used --format=csv,noheader,nounits; ok is false
// for anything else (an error text, "[N/A]" for a MIG device's
// utilisation). The UUID is kept only when it is one tfhive would accept
// in a claim: it is matched against claims, never shown as it came.
func Row(line string) (inventory.GPUUse, bool) {
	f := strings.Split(line, ",")
	if len(f) != 4 {
		return inventory.GPUUse{}, false
	}
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	idx, err1 := strconv.Atoi(f[0])
	util, err2 := strconv.ParseFloat(f[2], 64)
	mem, err3 := strconv.ParseFloat(f[3], 64)
	if err1 != nil || err2 != nil || err3 != nil || idx < 0 || util < 0 || mem < 0 ||
		math.IsNaN(util) || math.IsInf(util, 0) || math.IsNaN(mem) || math.IsInf(mem, 0) {
		return inventory.GPUUse{}, false
	}
	u := inventory.GPUUse{Index: idx, Util: util, MemMiB: mem}
	if claim.ValidUUID(f[1]) {
		u.UUID = f[1]
	}
	return u, true
}
