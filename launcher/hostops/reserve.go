package hostops

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/shscript"
)

var reserveSh = shscript.Load(scripts, "scripts/reserve.sh")

// Reserve makes the reservation file name in the host's claims dir, and
// first removes the files remove (ours: ended reservations, or one
// unreserved); make "" only removes (scripts/reserve.sh). Names are
// inventory.BookingName's, whose characters the script splits on
// nothing but spaces.
func Reserve(ctx context.Context, ex remote.Executor, name string, remove []string) error {
	for _, n := range append([]string{name}, remove...) {
		if strings.ContainsFunc(n, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".,_-", r))
		}) || strings.HasPrefix(n, ".") || len(n) > 255 {
			return fmt.Errorf("reservation file name %q holds a character it may not, or is over 255 bytes (fewer GPUs, a shorter note)", n)
		}
	}
	script := reserveSh.With(shscript.Set("tfhive_make", name), shscript.Set("tfhive_remove", strings.Join(remove, " ")))
	// reserve.sh says nothing on stdout; its stderr is read for its last
	// line (its own, after what the shell may say), within a bound.
	errb := &remote.Bounded{Max: maxStderr}
	rc, err := ex.Run(ctx, "sh -s", strings.NewReader(script), io.Discard, errb)
	switch {
	case err != nil:
		return err
	case rc != 0:
		msg := strings.TrimSpace(strings.TrimPrefix(lastLine(errb.String()), "tfhive: "))
		if msg == "" {
			msg = fmt.Sprintf("exit %d", rc)
		}
		return fmt.Errorf("%s", msg)
	}
	return nil
}
