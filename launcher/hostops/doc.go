// Package hostops holds tfhive's operations on what kept runs leave on
// their hosts, outside any run's lifecycle: the runs holding claims
// (ps, from the probe's inventory), stopping one (kill, kill.sh),
// removing ended runs' files (gc, gc-runs.sh), and a waiting run's
// tickets and preemption requests (ticket.sh). Each is one short session
// per host over the connection the commands opened.
//
// It does not run, follow or adopt a run: that is launcher's engine,
// which must not import hostops, so that these commands can be read and
// changed without the lifecycle. It uses the supervisor's command line
// and run directory helpers (scripts.go), so that a run's files are found
// one way whoever looks; it renders nothing itself (view does: ps's row
// type is view.RunOnHost), and it must not import launcher/commands.
package hostops
