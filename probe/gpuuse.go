package probe

import (
	"bufio"
	"bytes"

	"github.com/tfhive/tfhive/probe/gpuquery"
	"github.com/tfhive/tfhive/probe/inventory"
)

// markUtil starts runs.sh's live GPU utilisation rows, for `tfhive ps`.
const markUtil = "@@tfhive-util"

// cutUtil takes the utilisation rows off the end of runs.sh's section.
func cutUtil(runs []byte) (rest []byte, use []inventory.GPUUse) {
	i := bytes.LastIndex(runs, []byte(markUtil+"\n"))
	if i < 0 || (i > 0 && runs[i-1] != '\n') {
		return runs, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(runs[i+len(markUtil)+1:]))
	for sc.Scan() {
		if u, ok := gpuquery.Row(sc.Text()); ok {
			use = append(use, u)
		}
	}
	return runs[:i], use
}
