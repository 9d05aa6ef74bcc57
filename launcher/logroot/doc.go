// Package logroot is a log root (tfhive-runs, or --log-root) read back:
// its runs as records, newest summaries read once for a caller that
// lists again and again (top), a run dir without a summary as running or
// unknown (runs.go); a sweep's record and its table of trials
// (sweep.go). `tfhive runs`, `top`, `wait`, `attach`, `kill`, the latest
// run and a sweep read them here; what a run writes there is
// launcher/rundir's.
package logroot
