package report

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/testkit"
)

// Numbers and memory as the report writes them, golden: the issue's
// 48200 MiB, a loss falling to 0.0004, axis ticks, the ends of float64.
func TestUnits(t *testing.T) {
	var b strings.Builder
	for _, v := range []float64{0, 1, -1, 0.5, 13, 0.0004, 0.00004, 1.5e-5, 3.14159, 100, 999.96, 1000, 1234.5, 48200,
		48213, 60000, -48200, 1e6, 9_999_999, 1.2e7, 1e21, math.MaxFloat64, math.SmallestNonzeroFloat64, math.Inf(1)} {
		fmt.Fprintf(&b, "num %v\t%s\n", v, numLabel(v))
	}
	for _, m := range []float64{0, 812, 1023.6, 1024, 48200, 81559, 143771, 1e6} {
		fmt.Fprintf(&b, "mib %v\t%s\n", m, mibLabel(m))
	}
	testkit.Golden(t, "testdata/golden/units.txt", []byte(b.String()))
}
