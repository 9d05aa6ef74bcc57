//go:build tfhive_e2e

package launcher

import (
	"os"
	"time"
)

// The end-to-end tests' tfhive is built with -tags tfhive_e2e
// (launcher/e2e/main_test.go): $TFHIVE_TEST_IDLE_AFTER shortens the idle
// warning's minute there, so that a test sees one without idling. No
// other build reads it.
func init() {
	if d, err := time.ParseDuration(os.Getenv("TFHIVE_TEST_IDLE_AFTER")); err == nil && d > 0 {
		defaultLimits.idleFor = d
	}
}
