package commands

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/schedule"
)

func TestParseGPUPicks(t *testing.T) {
	got, err := parseGPUPicks([]string{"gpu01:1,0", "[fd00::1]:3", "gpu02:2"})
	if err != nil || !slices.Equal(got["gpu01"], []int{0, 1}) || !slices.Equal(got["[fd00::1]"], []int{3}) || !slices.Equal(got["gpu02"], []int{2}) {
		t.Errorf("parseGPUPicks = %v, %v", got, err)
	}
	for _, bad := range []string{"gpu01", "gpu01:", ":0", "gpu01:0,0", "gpu01:x", "gpu01:-1"} {
		if _, err := parseGPUPicks([]string{bad}); err == nil {
			t.Errorf("parseGPUPicks(%q) took it", bad)
		}
	}
}

// Bad flags are exit 2 before any host is reached.
func TestReserveBadFlags(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		o    ReserveOptions
		want string
	}{
		{ReserveOptions{For: "1h"}, "give --gpus N or --gpu HOST:I,J"},
		{ReserveOptions{GPUs: 1, GPU: []string{"h:0"}, For: "1h"}, "give --gpus N or --gpu HOST:I,J"},
		{ReserveOptions{GPUs: 1}, "give the reservation's length with --for"},
		{ReserveOptions{GPUs: 1, For: "soon"}, `--for "soon" is not a positive duration`},
		{ReserveOptions{GPUs: 1, For: "1h", From: "yesterday"}, `--from "yesterday" is not a time`},
		{ReserveOptions{GPUs: 1, For: "1h", Note: "a\nb"}, "--note must be one line"},
		{ReserveOptions{GPU: []string{"h"}, For: "1h"}, `--gpu "h": want HOST:I,J`},
	} {
		c.o.Now, c.o.Zone, c.o.Stdout, c.o.Stderr = now, time.UTC, io.Discard, io.Discard
		err := Reserve(t.Context(), c.o)
		var ue *UsageError
		var se *schedule.UsageError
		if (!errors.As(err, &ue) && !errors.As(err, &se)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a usage error saying %q", c.o, err, c.want)
		}
	}
}
