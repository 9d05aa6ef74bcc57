package schedule

import "fmt"

// Errors carry their kind, as their type; main alone maps kinds to exit
// codes (errors.As), and prints the Hint and Details they have.

// UsageError is a request that cannot succeed as written, whatever state the
// hosts are in: a bad flag value, an unknown host or placeholder. Exit 2.
type UsageError struct {
	Msg string // one line, lowercase, no trailing period
	Fix string // one line saying how to fix it, or ""
}

func (e *UsageError) Error() string { return e.Msg }

// Hint says how to fix the request.
func (e *UsageError) Hint() string { return e.Fix }

func usageErr(hint, format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...), Fix: hint}
}

// CapacityError is a valid request the fleet cannot hold right now: not
// enough free GPUs (in total, or together on one host), no reachable host, no
// free port. Waiting or asking for less can fix it, which is why it has its
// own exit code. Exit 3.
type CapacityError struct {
	Msg string
	Fix string
	// Lines explain the shortage, one per host, so a person can see what was
	// free and why the rest was not.
	Lines []string
	// Asked and Found count GPUs; both are 0 when GPUs were not the problem.
	Asked, Found int
}

func (e *CapacityError) Error() string { return e.Msg }

// Hint says what to change or wait for.
func (e *CapacityError) Hint() string { return e.Fix }

// Details has one line per host.
func (e *CapacityError) Details() []string { return e.Lines }
