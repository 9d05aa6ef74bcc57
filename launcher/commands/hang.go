package commands

import (
	"fmt"

	"github.com/tfhive/tfhive/launcher"
)

// --on-hang's words.
const (
	OnHangWarn = "warn"
	OnHangStop = "stop"
)

// checkHangFlags: --hang-after 0 (never) or at least a second; --on-hang
// warn or stop; --on-hang stop and --hang-native only with --hang-after.
func (o *RunOptions) checkHangFlags() error {
	if o.HangAfter < 0 || (o.HangAfter > 0 && o.HangAfter < launcher.MinHangAfter) {
		return &UsageError{Msg: fmt.Sprintf("--hang-after must be 0 (never) or at least %s", launcher.MinHangAfter)}
	}
	switch o.OnHang {
	case "", OnHangWarn, OnHangStop:
	default:
		return &UsageError{Msg: fmt.Sprintf("--on-hang %q: want warn or stop", o.OnHang)}
	}
	if o.HangAfter == 0 && (o.OnHang == OnHangStop || o.HangNative) {
		return &UsageError{Msg: "--on-hang stop and --hang-native are for --hang-after", Fix: "add --hang-after D: how long a run may print nothing before it is called hung"}
	}
	return nil
}
