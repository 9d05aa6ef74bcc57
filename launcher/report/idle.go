package report

import "github.com/tfhive/tfhive/launcher/record"

// The idle events' dots on the timeline: a warning in the stopped
// colour's lighter shade, the stop in its own.
func init() {
	eventColor[record.EventIdleWarning] = "#ffbe7d"
	eventColor[record.EventIdleStopped] = colStopped
}
