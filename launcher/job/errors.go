package job

import (
	"fmt"

	"github.com/tfhive/tfhive/launcher/doctor"
	"github.com/tfhive/tfhive/probe/inventory"
)

// The kinds of error a run's steps return besides those of probe,
// schedule, lifecycle and launcher; main maps each kind to an exit code
// with errors.As (launcher/commands names them too).

// UsageError is a command line that cannot work as written: a flag's value,
// an argument, --env, the log dir, a run name in use. Nothing was touched.
type UsageError struct {
	Msg string // one line, lowercase, no trailing period
	Fix string // one line saying how to fix it, or ""
}

func (e *UsageError) Error() string { return e.Msg }

// Hint says how to fix the command line.
func (e *UsageError) Hint() string { return e.Fix }

// UnreachableError is returned, after the output was printed, when some
// hosts could not be probed; by plan and run only when none could.
type UnreachableError struct {
	Bad, Total int
	// Lines say, one per host, why it could not be reached.
	Lines []string
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("%d of %d hosts could not be reached", e.Bad, e.Total)
}

// Details has one line per unreachable host.
func (e *UnreachableError) Details() []string { return e.Lines }

// Unreachable is the error for the hosts inv could not reach, or nil.
func Unreachable(inv inventory.Inventory) error {
	e := &UnreachableError{Total: len(inv.Hosts)}
	for _, h := range inv.Hosts {
		if h.Err == nil {
			continue
		}
		e.Bad++
		line := h.Name + ": " + h.Err.Message
		if h.Err.Hint != "" {
			line += " (hint: " + h.Err.Hint + ")"
		}
		e.Lines = append(e.Lines, line)
	}
	if e.Bad == 0 {
		return nil
	}
	return e
}

// CheckError is `run --check` refusing to start: the plan's hosts differ.
// Nothing was claimed or started.
type CheckError struct{ Problems []doctor.Problem }

func (e *CheckError) Error() string { return "--check: " + FirstProblem(e.Problems) }

// Details lists every problem when there are several.
func (e *CheckError) Details() []string { return MoreProblems(e.Problems) }

// Hint says how to see more, or go on anyway.
func (e *CheckError) Hint() string {
	return "tfhive doctor shows every host side by side; run without --check to start anyway"
}

// FirstProblem is the first of ps, and how many more there are.
func FirstProblem(ps []doctor.Problem) string {
	if len(ps) == 0 {
		return "no detail"
	}
	if len(ps) > 1 {
		return fmt.Sprintf("%s (and %d more)", ps[0].Text, len(ps)-1)
	}
	return ps[0].Text
}

// MoreProblems are ps as lines, when there are several.
func MoreProblems(ps []doctor.Problem) []string {
	if len(ps) < 2 {
		return nil
	}
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Text
	}
	return lines
}

// DescriptorsError is a probe that ran out of file descriptors on this
// machine: the limit, not the hosts, is what to fix. Go has already
// raised the soft limit to the hard one at start (os, since Go 1.19),
// so the limit named is the hard one unless something lowered it since.
type DescriptorsError struct {
	Limit uint64 // RLIMIT_NOFILE's soft limit; 0 when unknown
	Hosts int
}

func (e *DescriptorsError) Error() string {
	if e.Limit == 0 {
		return fmt.Sprintf("out of file descriptors reaching %d hosts", e.Hosts)
	}
	return fmt.Sprintf("out of file descriptors reaching %d hosts: the limit is %d open files (ulimit -n)", e.Hosts, e.Limit)
}

// Hint names a limit that fits: a connection per host, and as many again
// for the tasks' logs and pipes, plus tfhive's own few.
func (e *DescriptorsError) Hint() string {
	return fmt.Sprintf("raise it with ulimit -n %d (the hard limit too: ulimit -Hn, or limits.conf)", max(2*e.Hosts+256, 1024))
}
