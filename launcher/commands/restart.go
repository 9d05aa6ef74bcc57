package commands

import (
	"time"

	"github.com/tfhive/tfhive/launcher/lifecycle"
)

// restartPolicy checks --restarts, --restart-on and --restart-backoff
// before any host is contacted.
func restartPolicy(n int, on string, backoff time.Duration) (lifecycle.Restart, error) {
	rs := lifecycle.Restart{Max: n, Backoff: backoff}
	if n < 0 {
		return rs, usagef("--restarts must not be negative")
	}
	if backoff < 0 {
		return rs, usagef("--restart-backoff must not be negative")
	}
	if on != "" {
		if n == 0 {
			return rs, &UsageError{Msg: "--restart-on is for --restarts", Fix: "add --restarts N"}
		}
		var err error
		if rs.On, err = lifecycle.ParseRestartOn(on); err != nil {
			return rs, usagef("%s", err)
		}
	}
	return rs, nil
}
