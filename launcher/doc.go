// Package launcher is the engine: it runs one attempt of one plan over
// the hosts' sessions. It starts every task under a supervisor
// (launcher/supervisor) over the probe's connections, through each host's
// multiplexer for a kept run, streams and logs their output (the console,
// --capture, --sample, the run's events), carries out what
// launcher/lifecycle decides (restarts, preemption, the end), reconnects
// to and adopts kept runs, and writes the summary into the run's
// directory (launcher/rundir). What comes around an attempt (planning,
// queueing, syncing, relaunching after a lost host) is its caller's: Retry
// (claimretry.go) only paces the attempts again, as lifecycle decides.
// Rendering is launcher/view's. It may import probe, schedule and the
// launcher packages below it, never launcher/commands, launcher/cli or
// main.
package launcher
