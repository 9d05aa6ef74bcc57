package view

import (
	"bytes"
	"testing"

	"github.com/tfhive/tfhive/launcher/record"
)

// A value with control bytes is shown inert in the summary's line.
func TestMetricsLineIsSanitised(t *testing.T) {
	var buf bytes.Buffer
	writeMetricsLine(&buf, &record.Summary{Captures: map[string]string{"m": "(.*)"}, Metrics: map[string]string{"m": "\x1b]52;c;x\x07\nforged"}})
	if got := buf.String(); got != "metrics: m=^[]52;c;x^G^Jforged\n" {
		t.Errorf("%q", got)
	}
}
