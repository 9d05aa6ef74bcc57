package commands

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// Flags without a meaning on Slurm are refused before anything is
// dialled, with the alternative where there is one; a flag run gains
// later is refused until it means something there.
func TestRunOnSlurmRefuses(t *testing.T) {
	for _, tt := range []struct {
		given []string
		msg   string
	}{
		{[]string{"sync"}, "--sync has no meaning with --on slurm"},
		{[]string{"workers", "restarts"}, "--restarts has no meaning"},
		{[]string{"some-flag-of-later"}, "--some-flag-of-later has no meaning"},
	} {
		o := RunOptions{Slurm: SlurmOptions{On: OnSlurm, Login: "nosuch", Given: tt.given}}
		err := Run(context.Background(), o)
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(ue.Msg, tt.msg) {
			t.Errorf("%v: %v, want a usage error %q", tt.given, err, tt.msg)
		}
	}
	err := Run(context.Background(), RunOptions{Slurm: SlurmOptions{On: "k8s"}})
	var ue *UsageError
	if !errors.As(err, &ue) {
		t.Errorf("--on k8s: %v, want a usage error", err)
	}
}

// status --on slurm --watch refreshes no faster than a second (an sinfo
// each time, on the cluster's slurmctld), refused before anything is
// dialled.
func TestStatusOnSlurmWatchRefuses(t *testing.T) {
	for _, w := range []time.Duration{-time.Second, 500 * time.Millisecond} {
		err := Status(context.Background(), StatusOptions{Watch: w, Slurm: SlurmOptions{On: OnSlurm, Login: "nosuch"}})
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(ue.Msg, "--watch") {
			t.Errorf("--watch %s: %v, want a usage error", w, err)
		}
	}
}
