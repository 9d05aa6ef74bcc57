package view

import (
	"fmt"
	"strings"
	"time"
)

// How quantities read in tfhive's tables and lines: one spelling of each,
// whichever command shows it.

// Size writes a byte count for a person: 512 B, 3.4 KiB, 1.2 GiB.
func Size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// ShortDuration: "3m" from a minute on, "1.2s" below.
func ShortDuration(d time.Duration) string {
	if d >= time.Minute {
		return strings.TrimSuffix(d.Truncate(time.Minute).String(), "0s")
	}
	return d.Round(100 * time.Millisecond).String()
}
