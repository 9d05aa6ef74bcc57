// Package profiling records a tfhive process's own CPU profile, execution
// trace and block and mutex profiles when $TFHIVE_PROFILE names a
// directory: how the performance guide's breakdown of the start path was
// measured. Unset, nothing is recorded and nothing costs.
package profiling

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"syscall"
)

// Env names a directory where tfhive writes its own CPU profile
// (cpu.pprof), execution trace (trace.out) and block and mutex profiles
// (block.pprof, mutex.pprof) for the whole command: how the benchmark's
// breakdown of the start path was measured (launcher/help/performance.md,
// "Profiling"). Unset, nothing is recorded and nothing costs.
const Env = "TFHIVE_PROFILE"

// Start starts the profiles Env asks for; the function it returns writes
// them. A directory it cannot write is said on stderr once
// and the command runs unprofiled: a profile is never worth a failed run.
func Start(stderr io.Writer) func() {
	dir := os.Getenv(Env)
	if dir == "" {
		return func() {}
	}
	fail := func(err error) func() {
		fmt.Fprintf(stderr, "tfhive: warning: %s: %v; not profiled\n", Env, err)
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fail(err)
	}
	// Each process its own files: a sweep's keeper and its tfhive, a
	// benchmark's many runs.
	base := filepath.Join(dir, fmt.Sprintf("%d-", os.Getpid()))
	cpu, err := create(base + "cpu.pprof")
	if err != nil {
		return fail(err)
	}
	tr, err := create(base + "trace.out")
	if err != nil {
		cpu.Close()
		return fail(err)
	}
	runtime.SetBlockProfileRate(int(1e6)) // one sample per ms blocked
	runtime.SetMutexProfileFraction(1)
	pprof.StartCPUProfile(cpu)
	trace.Start(tr)
	return func() {
		trace.Stop()
		pprof.StopCPUProfile()
		tr.Close()
		cpu.Close()
		for _, name := range []string{"block", "mutex"} {
			if f, err := create(base + name + ".pprof"); err == nil {
				pprof.Lookup(name).WriteTo(f, 0)
				f.Close()
			}
		}
	}
}

// create makes a new file of the process's own, 0600, never through a name
// that is already there: a directory such as /tmp/prof could hold a link
// another user planted where this process's files go.
func create(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
}
