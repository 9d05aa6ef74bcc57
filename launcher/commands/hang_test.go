package commands

import (
	"strings"
	"testing"
	"time"
)

// Bad --hang-after, --on-hang and --hang-native are one usage line.
func TestHangFlags(t *testing.T) {
	for _, c := range []struct {
		o    RunOptions
		want string // "" valid
	}{
		{RunOptions{}, ""},
		{RunOptions{HangAfter: 10 * time.Minute, OnHang: OnHangStop, HangNative: true}, ""},
		{RunOptions{HangAfter: 2 * time.Second, OnHang: OnHangWarn}, ""},
		{RunOptions{HangAfter: 500 * time.Millisecond}, "--hang-after must be 0 (never) or at least 1s"},
		{RunOptions{HangAfter: -time.Second}, "--hang-after must be 0 (never) or at least 1s"},
		{RunOptions{HangAfter: time.Minute, OnHang: "kill"}, `--on-hang "kill": want warn or stop`},
		{RunOptions{OnHang: OnHangStop}, "--on-hang stop and --hang-native are for --hang-after"},
		{RunOptions{HangNative: true}, "--on-hang stop and --hang-native are for --hang-after"},
	} {
		err := c.o.checkHangFlags()
		if c.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", c.o, err)
			}
			continue
		}
		if _, ok := err.(*UsageError); !ok || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want usage error %q", c.o, err, c.want)
		}
	}
}
