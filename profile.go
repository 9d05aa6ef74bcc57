package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
)

// profileEnv names a directory where tfhive writes its own CPU profile
// (cpu.pprof), execution trace (trace.out) and block and mutex profiles
// (block.pprof, mutex.pprof) for the whole command: how the benchmark's
// breakdown of the start path was measured (launcher/help/performance.md,
// "Profiling"). Unset, nothing is recorded and nothing costs.
const profileEnv = "TFHIVE_PROFILE"

// startProfile starts the profiles profileEnv asks for; the function it
// returns writes them. A directory it cannot write is said on stderr once
// and the command runs unprofiled: a profile is never worth a failed run.
func startProfile(stderr io.Writer) func() {
	dir := os.Getenv(profileEnv)
	if dir == "" {
		return func() {}
	}
	fail := func(err error) func() {
		fmt.Fprintf(stderr, "tfhive: warning: %s: %v; not profiled\n", profileEnv, err)
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fail(err)
	}
	// Each process its own files: a sweep's keeper and its tfhive, a
	// benchmark's many runs.
	base := filepath.Join(dir, fmt.Sprintf("%d-", os.Getpid()))
	cpu, err := os.Create(base + "cpu.pprof")
	if err != nil {
		return fail(err)
	}
	tr, err := os.Create(base + "trace.out")
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
			if f, err := os.Create(base + name + ".pprof"); err == nil {
				pprof.Lookup(name).WriteTo(f, 0)
				f.Close()
			}
		}
	}
}
