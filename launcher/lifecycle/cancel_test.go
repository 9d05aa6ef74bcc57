package lifecycle

import (
	"testing"

	"github.com/tfhive/tfhive/launcher/record"
)

func TestCancelled(t *testing.T) {
	result, code, reason := Cancelled("worker:0", "h1")
	if result != record.ResultCancelled || code != 143 || reason != "task worker:0 on h1 was cancelled (tfhive kill)" {
		t.Errorf("%s %d %q", result, code, reason)
	}
}
