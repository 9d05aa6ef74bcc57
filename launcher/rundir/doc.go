// Package rundir is a run's local directory, tfhive-runs/RUN_ID (or its
// --log-dir), and a sweep's, tfhive-runs/NAME: the names of the files in
// it, making and checking it so that no other user can have put or swap
// anything there, writing its records whole or not at all, and the run's
// lock, which tells whether the run goes on.
//
// It is the only place that spells those names: the engine writes the
// files, the commands and the report read them, all through the names
// here. It imports no command, CLI or view code: what it says is plain
// errors, and the commands put them in the CLI's voice.
package rundir
