// Package lifecycle decides a run's life: from what happens to its tasks
// (events: started, claimed, exited, lost, interrupted, timed out) to
// what the runner must do (decisions: control lines, timers, console
// lines), with restarts after a failure (Restart), a run started again
// after a lost host (Relaunch), another try after lost claims
// (NextRetry), and the end of a preempted run (Preempted) or of one
// `tfhive kill` cancelled (Cancelled). Its one job is
// these decisions, as pure functions: every rule is table-tested without
// hosts, processes or timers.
//
// It must not do what it decides. It imports no os, os/exec, net,
// syscall, SSH (golang.org/x/crypto/ssh), host protocol
// (launcher/supervisor, probe/remote, probe/transport) nor the engine
// (launcher), and reads no clock: durations come in with the events and
// go out as waits for the runner to time (imports_test.go holds it to
// this).
package lifecycle
