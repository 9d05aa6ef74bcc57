package commands

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestColorFlag(t *testing.T) {
	var b bytes.Buffer
	for mode, want := range map[string]bool{"": false, "auto": false, "never": false, "always": true} {
		if got, err := (Streams{Color: mode}).colors(&b); err != nil || got != want {
			t.Errorf("--color %q on a buffer: %v, %v; want %v", mode, got, err, want)
		}
	}
	_, err := Streams{Color: "sometimes"}.colors(&b)
	var usage *UsageError
	if !errors.As(err, &usage) || !strings.Contains(err.Error(), "want auto, always or never") {
		t.Errorf("--color sometimes: %v, want a usage error", err)
	}
}
