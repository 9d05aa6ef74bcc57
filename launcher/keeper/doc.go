// Package keeper is a detached run's keeper, as the process that starts
// it and the keeper itself see it: `tfhive run --detach` (and `tfhive
// sweep --detach`) starts a keeper: this very tfhive, run again in a
// session of its own with the same command line, its stdin empty and its
// output in the run's log dir (console.log, keeper.log). The same less
// the --notify targets: any local user reads a command line
// (/proc/PID/cmdline) for the days a keeper runs, and a webhook's URL is
// its secret; they come on a second pipe (descriptor 4, with the command
// line whole, for repro.json). The keeper is an
// ordinary `tfhive run` with --reconnect: it probes, plans, claims and
// starts, says "started" on a pipe once every task has been told to go,
// then enforces the run's lifecycle to its end and writes the summary.
// The first tfhive waits for that word only: it prints the run id and
// exits 0, or, when the keeper ended first, exits with the keeper's code
// after showing what it said. Nothing is handed over: the keeper holds
// the connections from the start.
//
// Every run, kept or not, holds an exclusive lock on keeper.lock in its
// log dir for as long as it runs: `tfhive wait`, `attach` and `logs -f`
// learn that it ended from the kernel, not from a pid in a file.
package keeper
